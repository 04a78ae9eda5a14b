//! The catalog's APIs as `find_tools` sees them: the `api` filter matched against ids and
//! titles, and the listing a client gets by calling `find_tools` without a query.
//!
//! The API ids used to be an enum in `find_tools`' input schema. That made the filter
//! exact, but a client pays for its tool definitions on every turn, and at a few hundred
//! APIs the enum cost more than everything else the server says; at ten thousand it would
//! not fit a context window. A free-text filter costs the same at any catalog size, and the
//! listing is there for a model that wants to see what exists before it filters.

use serde_json::{json, Value};

/// Most APIs one listing shows; a longer catalog is narrowed with the `api` argument.
pub const MAX_LISTED: usize = 50;

/// One API of the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiEntry {
    pub id: String,
    pub title: String,
    /// Endpoints it has in the index.
    pub endpoints: usize,
}

/// Every API of the index, sorted by id.
#[derive(Debug, Clone, Default)]
pub struct ApiDirectory {
    apis: Vec<ApiEntry>,
    /// `fold(id)` and `fold(title)` of each entry, in the same order.
    folded: Vec<(String, String)>,
}

/// Lower case, letters and digits only: `Spotify Web-API`, `spotify_web_api` and
/// `SpotifyWebAPI` are one name to a model typing it from memory.
pub fn fold(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Shortest filter matched inside names: one or two letters would match most catalogs.
const MIN_PART: usize = 3;

impl ApiDirectory {
    /// The directory of `(api id, api title)` pairs, one per endpoint (in any order).
    pub fn new<'a>(endpoints: impl Iterator<Item = (&'a str, &'a str)>) -> ApiDirectory {
        let mut by_id: std::collections::BTreeMap<&str, ApiEntry> = Default::default();
        for (id, title) in endpoints {
            by_id
                .entry(id)
                .or_insert_with(|| ApiEntry {
                    id: id.to_string(),
                    title: title.to_string(),
                    endpoints: 0,
                })
                .endpoints += 1;
        }
        let apis: Vec<ApiEntry> = by_id.into_values().collect();
        let folded = apis.iter().map(|a| (fold(&a.id), fold(&a.title))).collect();
        ApiDirectory { apis, folded }
    }

    /// The same directory without the APIs in `hidden`.
    pub fn without(&self, hidden: &std::collections::HashSet<String>) -> ApiDirectory {
        let (apis, folded) = self
            .apis
            .iter()
            .zip(&self.folded)
            .filter(|(a, _)| !hidden.contains(&a.id))
            .map(|(a, f)| (a.clone(), f.clone()))
            .unzip();
        ApiDirectory { apis, folded }
    }

    /// Every API id, sorted.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.apis.iter().map(|a| a.id.as_str())
    }

    /// Number of APIs.
    pub fn len(&self) -> usize {
        self.apis.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.apis.is_empty()
    }

    /// The API ids `filter` names, for the ranking's filter: the API whose id is `filter`
    /// (any case, any separators), else those whose title is, else those whose id or title
    /// contains it. An error names the closest APIs when nothing matches.
    pub fn resolve(&self, filter: &str) -> Result<Vec<String>, String> {
        let f = fold(filter);
        let pick = |test: &dyn Fn(&(String, String)) -> bool| -> Vec<String> {
            self.folded
                .iter()
                .zip(&self.apis)
                .filter(|(folded, _)| test(folded))
                .map(|(_, a)| a.id.clone())
                .collect()
        };
        if !f.is_empty() {
            for found in [
                pick(&|(id, _)| *id == f),
                pick(&|(_, title)| *title == f),
                if f.chars().count() >= MIN_PART {
                    pick(&|(id, title)| id.contains(&f) || title.contains(&f))
                } else {
                    Vec::new()
                },
            ] {
                if !found.is_empty() {
                    return Ok(found);
                }
            }
        }
        let shown = crate::text::clip_chars(filter, 80);
        let near = self.closest(&f, 5);
        if near.is_empty() {
            return Err(format!(
                "no API matches api='{shown}'; call find_tools without a query to list the APIs"
            ));
        }
        let near: Vec<String> = near.iter().map(|a| label(a)).collect();
        Err(format!(
            "no API matches api='{shown}'; closest: {}. Pass one of these ids, or call \
             find_tools without a query to list the APIs",
            near.join(", ")
        ))
    }

    /// Up to `n` APIs nearest to the folded name `f` (edit distance to the id or title).
    fn closest(&self, f: &str, n: usize) -> Vec<&ApiEntry> {
        let mut scored: Vec<(usize, &ApiEntry)> = self
            .folded
            .iter()
            .zip(&self.apis)
            .map(|((id, title), a)| {
                let d = crate::invoke::near::distance(f, id)
                    .min(crate::invoke::near::distance(f, title));
                (d, a)
            })
            .collect();
        scored.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.id.cmp(&b.1.id)));
        let limit = (f.chars().count() / 2).max(2);
        scored
            .into_iter()
            .filter(|(d, _)| *d <= limit)
            .take(n)
            .map(|(_, a)| a)
            .collect()
    }

    /// The answer of `find_tools` without a query: the APIs (those `filter` names, when
    /// given), at most [`MAX_LISTED`], with how many were left out.
    pub fn listing(&self, filter: Option<&str>) -> Result<Value, String> {
        let chosen: Vec<&ApiEntry> = match filter {
            Some(f) => {
                let ids = self.resolve(f)?;
                self.apis.iter().filter(|a| ids.contains(&a.id)).collect()
            }
            None => self.apis.iter().collect(),
        };
        let listed: Vec<Value> = chosen
            .iter()
            .take(MAX_LISTED)
            .map(|a| json!({"api": a.id, "title": a.title, "endpoints": a.endpoints}))
            .collect();
        let more = chosen.len().saturating_sub(listed.len());
        let note = if more > 0 {
            format!(
                "{more} more APIs not shown: pass api=<part of a name> to narrow the list. \
                 Use an api value as find_tools' api argument."
            )
        } else {
            "Pass an api id (or title) as find_tools' api argument to search one API.".into()
        };
        Ok(json!({"apis": listed, "total": chosen.len(), "note": note}))
    }
}

/// `id (title)`, or the id alone when the title says the same.
fn label(a: &ApiEntry) -> String {
    if fold(&a.title) == fold(&a.id) {
        a.id.clone()
    } else {
        format!("{} ({})", a.id, crate::text::clip_chars(&a.title, 60))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> ApiDirectory {
        let eps = [
            ("spotify", "Spotify Web API"),
            ("spotify", "Spotify Web API"),
            ("tmdb", "The Movie Database"),
            ("github_v3", "GitHub REST API"),
            ("gitlab", "GitLab API"),
            ("stripe", "Stripe"),
        ];
        ApiDirectory::new(eps.into_iter())
    }

    #[test]
    fn ids_and_titles_match_in_any_case_and_spelling() {
        let d = dir();
        assert_eq!(d.len(), 5);
        assert_eq!(d.resolve("Spotify").unwrap(), ["spotify"]);
        assert_eq!(d.resolve("GITHUB-V3").unwrap(), ["github_v3"]);
        assert_eq!(d.resolve("the movie database").unwrap(), ["tmdb"]);
        assert_eq!(d.resolve("TheMovieDatabase").unwrap(), ["tmdb"]);
        // An exact id wins over names that contain it.
        assert_eq!(d.resolve("stripe").unwrap(), ["stripe"]);
        // Part of a name: every API it is part of.
        assert_eq!(d.resolve("git").unwrap(), ["github_v3", "gitlab"]);
        assert_eq!(d.resolve("movie").unwrap(), ["tmdb"]);
    }

    #[test]
    fn no_match_names_the_closest_apis() {
        let d = dir();
        let e = d.resolve("spotifi").unwrap_err();
        assert!(
            e.contains("api='spotifi'") && e.contains("spotify (Spotify Web API)"),
            "{e}"
        );
        assert!(!e.contains("stripe"), "{e}");
        let e = d.resolve("gitlub").unwrap_err();
        assert!(e.contains("gitlab (GitLab API)"), "{e}");
        // Nothing close: the way to the listing.
        let e = d.resolve("weather forecast").unwrap_err();
        assert!(e.contains("without a query"), "{e}");
        assert!(!e.contains("closest"), "{e}");
        // Too short to be part of a name, and no id that short.
        assert!(d.resolve("gi").is_err());
        assert!(d.resolve("-").is_err());
    }

    #[test]
    fn listing_is_bounded_and_narrowed_by_the_filter() {
        let d = dir();
        let all = d.listing(None).unwrap();
        assert_eq!(all["total"], 5);
        assert_eq!(
            all["apis"][0],
            json!({"api": "github_v3", "title": "GitHub REST API", "endpoints": 1})
        );
        assert_eq!(all["apis"][2]["endpoints"], 2);
        let git = d.listing(Some("git")).unwrap();
        assert_eq!(git["total"], 2);
        assert!(d.listing(Some("nothing like it")).is_err());

        let many: Vec<(String, String)> = (0..120)
            .map(|i| (format!("api{i:03}"), format!("Service {i}")))
            .collect();
        let big = ApiDirectory::new(many.iter().map(|(a, b)| (a.as_str(), b.as_str())));
        let l = big.listing(None).unwrap();
        assert_eq!(l["apis"].as_array().map(Vec::len), Some(MAX_LISTED));
        assert_eq!(l["total"], 120);
        assert!(l["note"].as_str().unwrap().starts_with("70 more"), "{l}");
        let l = big.listing(Some("api11")).unwrap();
        assert_eq!(l["total"], 10);
    }
}
