use super::*;
use serde_json::json;

fn ep(method: &str, path: &str, params: Value, fields: &[&str]) -> Endpoint {
    serde_json::from_value(json!({
        "api": "a", "api_title": "A", "tool_name": format!("{method}{path}"),
        "method": method, "path": path, "operation_id": null, "summary": null,
        "description": null, "tags": [], "deprecated": false, "parameters": params,
        "request_body": null, "response_fields": fields, "security": [], "servers": [],
        "generated_summary": null, "generated_questions": [], "description_provenance": null
    }))
    .unwrap()
}

fn param(name: &str, location: &str, required: bool, schema: Value) -> Value {
    json!({"name": name, "location": location, "required": required, "description": null,
           "schema": schema, "style": null, "explode": null, "example": null,
           "deprecated": false, "description_provenance": null,
           "example_provenance": null})
}

fn path_id(name: &str) -> Value {
    json!([param(name, "path", true, json!({"type": "string"}))])
}

#[test]
fn needs_nouns_and_producers() {
    let eps = vec![
        ep(
            "GET",
            "/genre/movie/list",
            json!([]),
            &["genres", "id", "name"],
        ),
        ep(
            "GET",
            "/movie/{movie_id}/credits",
            path_id("movie_id"),
            &["cast", "id"],
        ),
        ep(
            "GET",
            "/movie/top_rated",
            json!([]),
            &["results", "id", "title"],
        ),
        ep(
            "GET",
            "/search/movie",
            json!([param("query", "query", true, json!({"type": "string"}))]),
            &["results", "id"],
        ),
        ep(
            "GET",
            "/trending/{media_type}",
            json!([param(
                "media_type",
                "path",
                true,
                json!({"enum": ["movie", "tv"]})
            )]),
            &["results", "id"],
        ),
        ep(
            "GET",
            "/albums/{id}/tracks",
            path_id("id"),
            &["items", "id"],
        ),
        ep(
            "GET",
            "/tv/{tv_id}",
            path_id("tv_id"),
            &["networks", "id", "show_id"],
        ),
        ep(
            "GET",
            "/network/{network_id}",
            path_id("network_id"),
            &["id", "name"],
        ),
    ];
    let g = Graph::build(&eps);
    assert!(
        g.needs(0).is_empty() && g.needs(4).is_empty(),
        "enums are known"
    );
    let credits = &g.needs(1)[0];
    assert_eq!(credits.noun.as_deref(), Some("movi"));
    assert_eq!(
        credits.producers,
        [2, 3],
        "a genre list does not produce movie ids"
    );
    assert_eq!(credits.evidence, Evidence::About);
    let tracks = &g.needs(5)[0];
    assert_eq!(tracks.noun.as_deref(), Some("album"));
    assert_eq!(
        (tracks.producers.as_slice(), tracks.evidence),
        (&[3][..], Evidence::Lookup),
        "no album producer: the lookup stands in"
    );
    assert_eq!(
        g.needs(7)[0].producers,
        [6],
        "a response listing `networks`"
    );
    assert!(g.is_lookup(3) && !g.is_lookup(2));
    assert_eq!((g.depth(0), g.depth(3)), (3, 2));
}

#[test]
fn named_and_mentioned_producers() {
    let mut create = ep(
        "POST",
        "/users/{user_id}/playlists",
        path_id("user_id"),
        &["id"],
    );
    create.description = Some("Before calling this API, call GET /me first.".into());
    let mut me = ep("GET", "/me", json!([]), &["id", "display_name"]);
    me.summary = Some("Get Current User's Profile".into());
    let mut saved = ep("GET", "/me/albums", json!([]), &["items", "id"]);
    saved.summary = Some("Get User's Saved Albums".into());
    let g = Graph::build(&[create, me, saved]);
    let needs = g.needs(0);
    assert_eq!(needs[0].evidence, Evidence::Named);
    assert_eq!(
        (needs[0].param.as_str(), needs[0].producers.as_slice()),
        ("GET /me", &[1][..])
    );
    assert_eq!(needs[1].evidence, Evidence::Mentioned);
    assert_eq!(needs[1].producers, [1, 2]);
}

#[test]
fn nouns() {
    assert_eq!(
        noun_of("movie_id", "/movie/{movie_id}", true).as_deref(),
        Some("movi")
    );
    assert_eq!(
        noun_of("id", "/artists/{id}/albums", true).as_deref(),
        Some("artist")
    );
    assert_eq!(
        noun_of("ids", "/me/albums", false).as_deref(),
        Some("album")
    );
    assert_eq!(
        noun_of("playlistId", "/x", false).as_deref(),
        Some("playlist")
    );
    assert!(is_id_name("uris") && is_id_name("user_id") && !is_id_name("width"));
    assert!(!is_id_name("season_number") && !is_id_name("idea"));
}

/// `DELETE /playlists/{playlist_id}/tracks` with a body of `[{"uri": ...}]`: the track
/// references are a need, and a removal picks them from the same collection's listing,
/// while an addition to that collection does not.
#[test]
fn removals_pick_from_their_own_collection() {
    let body = json!({"content_type": "application/json", "required": true,
        "description": null, "schema": {"type": "object", "required": ["tracks"],
        "properties": {"tracks": {"type": "array", "items": {"type": "object",
            "properties": {"uri": {"type": "string"}}}}}}});
    let with_body = |method: &str| {
        let mut e = ep(
            method,
            "/playlists/{playlist_id}/tracks",
            path_id("playlist_id"),
            &[],
        );
        e.request_body = Some(serde_json::from_value(body.clone()).unwrap());
        e
    };
    let eps = vec![
        with_body("DELETE"),
        ep(
            "GET",
            "/playlists/{playlist_id}/tracks",
            path_id("playlist_id"),
            &["items", "track", "id", "uri"],
        ),
        ep("GET", "/me/playlists", json!([]), &["items", "id", "name"]),
        ep(
            "GET",
            "/me/tracks",
            json!([]),
            &["items", "track", "tracks", "id"],
        ),
        with_body("POST"),
    ];
    let g = Graph::build(&eps);
    let tracks = |i: usize| {
        g.needs(i)
            .iter()
            .find(|n| n.param == "tracks")
            .map(|n| n.producers.clone())
    };
    assert_eq!(tracks(0), Some(vec![1]), "{:?}", g.needs(0));
    let added = tracks(4).expect("an addition needs track references too");
    assert!(!added.contains(&1), "{added:?}");
    assert!(added.contains(&3), "{added:?}");
    let playlist = g
        .needs(0)
        .iter()
        .find(|n| n.param == "playlist_id")
        .unwrap();
    assert_eq!(playlist.producers, vec![2]);
}

/// A person's identifier comes from the search that finds people by name; a user's from
/// `/me` (the caller), which is no lookup.
#[test]
fn identifiers_come_from_lookups_or_the_caller() {
    let search = ep(
        "GET",
        "/search/person",
        json!([param("query", "query", true, json!({"type": "string"}))]),
        &["results", "id", "name"],
    );
    let mut me = ep("GET", "/me", json!([]), &["id", "display_name"]);
    me.summary = Some("Get Current User's Profile".into());
    let eps = vec![
        search,
        ep(
            "GET",
            "/person/{person_id}/movie_credits",
            path_id("person_id"),
            &["cast", "id"],
        ),
        me,
        ep(
            "POST",
            "/users/{user_id}/playlists",
            path_id("user_id"),
            &["id"],
        ),
        ep(
            "GET",
            "/movie/{movie_id}/credits",
            path_id("movie_id"),
            &["cast", "id"],
        ),
    ];
    let g = Graph::build(&eps);
    assert!(g.is_lookup(0) && !g.is_lookup(2));
    let producers = |i: usize| -> Vec<usize> {
        g.needs(i)
            .iter()
            .flat_map(|n| n.producers.clone())
            .collect()
    };
    assert_eq!(producers(1), [0], "{:?}", g.needs(1));
    assert_eq!(producers(3), [2], "{:?}", g.needs(3));
}
