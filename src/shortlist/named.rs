//! People and kinds in a request: whether it names a person or a thing of a said kind,
//! and whether it asks for a person.
//!
//! "Movies directed by Sofia Coppola" is about a person: the agent has to look the person
//! up and read their credits, yet every word but the name points at movies, and a
//! sentence embedding cannot tell that "Sofia Coppola" is a person rather than a title
//! (a probe of 18 RestBench names against the six TMDB search endpoints typed 6
//! correctly). A name that starts with a common given name is a person with high
//! precision; when the request names one, the endpoints about people (those that take a
//! person's identifier, and lookups that find people) are what the task runs through.
//!
//!
//! A name right after a noun of the catalog has its kind said: "the collection Harry
//! Potter", "the album Mojito". The endpoints that work on that kind are the task's steps,
//! while the other words ("a movie cover of a movie from the collection ...") pull
//! towards other kinds.
//!
//! "Who directed the top-rated movie?" asks for a person, and of the movie endpoints only
//! the credits return people; but "movie" is what the words match, so `/movie/{id}/similar`
//! and `/movie/{id}/reviews` outrank the credits. Responses that carry a person's own
//! fields (`gender`, `birthday`) are what such a request reads.
//!
//! The given names are the 1,000 most frequent male and 1,000 most frequent female first
//! names of the 1990 US Census name files (public domain), lower-cased, in
//! `given_names.txt`.

use crate::index::lexical::tokenize;
use once_cell::sync::Lazy;
use std::collections::HashSet;

static GIVEN_NAMES: Lazy<HashSet<&'static str>> = Lazy::new(|| {
    include_str!("given_names.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
});

/// Nouns for people in API paths and fields (stemmed when used).
const PERSON_NOUNS: &[&str] = &[
    "person",
    "people",
    "user",
    "artist",
    "author",
    "actor",
    "member",
    "employee",
    "customer",
    "contact",
    "creator",
    "owner",
    "writer",
    "singer",
    "musician",
    "performer",
    "speaker",
    "student",
    "teacher",
    "patient",
    "candidate",
    "applicant",
    "staff",
];

static PERSON_STEMS: Lazy<HashSet<String>> =
    Lazy::new(|| PERSON_NOUNS.iter().flat_map(|n| tokenize(n)).collect());

/// Whether a stemmed noun (as [`tokenize`] makes it) names a kind of person.
pub fn is_person_noun(stem: &str) -> bool {
    PERSON_STEMS.contains(stem)
}

/// Whether `query` names a person: a run of capitalised words, the first a common given
/// name, of at least two words ("Sofia Coppola", "Christopher Nolan's"). A run that follows
/// a noun of the catalog is typed by that noun instead ("the collection Harry Potter" is a
/// collection), so `is_catalog_noun` is asked about the stemmed word before the run.
pub fn names_person(query: &str, is_catalog_noun: impl Fn(&str) -> bool) -> bool {
    let words: Vec<&str> = query.split_whitespace().collect();
    let bare = |w: &str| -> String {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric());
        // A possessive ("Nolan's") is still the name.
        w.strip_suffix("'s")
            .or_else(|| w.strip_suffix("’s"))
            .unwrap_or(w)
            .to_string()
    };
    let capitalised = |w: &str| bare(w).chars().next().is_some_and(char::is_uppercase);
    let ends_clause = |w: &str| w.ends_with(['.', '?', '!', ',', ':', ';']);
    // The first word of a sentence is capitalised by grammar, not as part of a name.
    let sentence_start = |i: usize| i == 0 || words[i - 1].ends_with(['.', '?', '!']);
    for i in 0..words.len().saturating_sub(1) {
        let first = bare(words[i]);
        let run_starts = i == 0
            || !capitalised(words[i - 1])
            || sentence_start(i - 1)
            || ends_clause(words[i - 1]);
        if !run_starts
            || !capitalised(words[i])
            || ends_clause(words[i])
            || !capitalised(words[i + 1])
            || !GIVEN_NAMES.contains(first.to_lowercase().as_str())
        {
            continue;
        }
        let typed = i > 0
            && tokenize(&bare(words[i - 1]))
                .last()
                .is_some_and(|s| is_catalog_noun(s));
        if !typed {
            return true;
        }
    }
    false
}

/// Words that make a named thing the caller's own.
const OWNERS: &[&str] = &["my", "our", "your"];

/// The kind a name in `query` is typed with: the stemmed catalog noun right before a
/// quoted phrase or a capitalised word that does not start a sentence ("the collection
/// Harry Potter" -> `collection`), unless the thing is the caller's own ("my album 'Rock'").
pub fn typed_name(query: &str, is_catalog_noun: impl Fn(&str) -> bool) -> Option<String> {
    let words: Vec<&str> = query.split_whitespace().collect();
    for (i, pair) in words.windows(2).enumerate() {
        let (before, name) = (pair[0], pair[1]);
        // "my playlist 'My Rock'" is the caller's own, found among theirs, not by name.
        let owned = i > 0 && OWNERS.contains(&words[i - 1].to_lowercase().as_str());
        if owned || before.ends_with(['.', '?', '!', ',', ':', ';']) {
            continue;
        }
        let quoted = name.starts_with(['"', '“', '\'', '‘']);
        let capitalised = name
            .trim_matches(|c: char| !c.is_alphanumeric())
            .chars()
            .next()
            .is_some_and(char::is_uppercase);
        if !(quoted || capitalised) {
            continue;
        }
        let noun = tokenize(before.trim_matches(|c: char| !c.is_alphanumeric()));
        if let [noun] = noun.as_slice() {
            if is_catalog_noun(noun) {
                return Some(noun.clone());
            }
        }
    }
    None
}

/// Response fields only a person has: an endpoint whose response carries one returns
/// people (TMDB's credits carry `gender`).
const PERSON_FIELDS: &[&str] = &[
    "gender",
    "birthday",
    "birthdate",
    "birth_date",
    "date_of_birth",
    "deathday",
    "first_name",
    "last_name",
    "given_name",
    "family_name",
];

/// Words with which a request asks for a person: the question word and the roles people
/// play.
const ASKS_FOR_PERSON: &[&str] = &[
    "who",
    "whom",
    "whose",
    "actor",
    "actress",
    "actors",
    "director",
    "directors",
    "cast",
    "crew",
    "writer",
    "author",
    "producer",
    "composer",
    "singer",
    "creator",
    "founder",
];

/// Whether endpoint `e` returns people ([`PERSON_FIELDS`]).
pub fn returns_people(e: &crate::catalog::Endpoint) -> bool {
    e.response_fields.iter().any(|f| {
        let snake = crate::text::split_identifier(f).join("_");
        PERSON_FIELDS.contains(&snake.as_str())
    })
}

/// Whether `query` asks for a person ("Who directed ...", "the lead actor of ...").
pub fn asks_for_person(query: &str) -> bool {
    query
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| ASKS_FOR_PERSON.contains(&w.to_lowercase().as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(q: &str) -> bool {
        names_person(q, |s| s == "collection" || s == "album")
    }

    #[test]
    fn people_are_named() {
        assert!(names(
            "give me the number of movies directed by Sofia Coppola"
        ));
        assert!(names("When is Clint Eastwood's latest movie scheduled?"));
        assert!(names("Christopher Nolan's best film"));
        assert!(names("Follow Taylor Swift"));
    }

    #[test]
    fn titles_and_typed_names_are_not_people() {
        assert!(!names("give me a movie of the collection Harry Potter"));
        assert!(!names("How many seasons of Sword Art Online are there?"));
        assert!(!names("Who directed The Dark Knight?"));
        assert!(!names("Play the album Mark Twain"));
        assert!(!names("Will it rain? Yes"));
        assert!(!names("Mark. Then Go"));
        assert!(!names("Follow Mark, Then"));
        assert!(!names("Follow The Beatles"));
        assert!(!names("what does sofia coppola direct"));
        assert!(!names(""));
    }

    #[test]
    fn typed_names() {
        let typed = |q: &str| typed_name(q, |s| s == "collection" || s == "album");
        assert_eq!(
            typed("a movie from the collection Harry Potter").as_deref(),
            Some("collection")
        );
        assert_eq!(typed("Save the album 'Mojito'").as_deref(), Some("album"));
        assert_eq!(typed("Follow the artist Mojito"), None);
        assert_eq!(typed("my album. Then play"), None);
        assert_eq!(typed("the album of the year"), None);
        assert_eq!(typed("Play my album 'My Rock'"), None);
    }

    #[test]
    fn asking_for_people() {
        assert!(asks_for_person("Who directed the top-1 rated movie?"));
        assert!(asks_for_person("the lead actor of Titanic"));
        assert!(asks_for_person(
            "Where was the director of Mulholland Drive born?"
        ));
        assert!(!asks_for_person("movies similar to Heat"));
        assert!(
            !asks_for_person("wholesale prices"),
            "a word, not a substring"
        );
    }

    #[test]
    fn people_returned() {
        let ep = |fields: &[&str]| -> crate::catalog::Endpoint {
            serde_json::from_value(serde_json::json!({
                "api": "a", "api_title": "A", "tool_name": "t", "method": "GET",
                "path": "/x", "operation_id": null, "summary": null, "description": null,
                "tags": [], "deprecated": false, "parameters": [], "request_body": null,
                "response_fields": fields, "security": [], "servers": [],
                "generated_summary": null, "generated_questions": [],
                "description_provenance": null
            }))
            .unwrap()
        };
        assert!(returns_people(&ep(&["cast", "character", "gender", "id"])));
        assert!(returns_people(&ep(&["id", "firstName"])));
        assert!(returns_people(&ep(&["DateOfBirth"])));
        assert!(!returns_people(&ep(&["id", "title", "genres"])));
    }

    #[test]
    fn person_nouns() {
        for n in ["person", "people", "users", "artists"] {
            let stem = tokenize(n).pop().unwrap();
            assert!(is_person_noun(&stem), "{n}");
        }
        for n in ["movie", "album", "player", "track"] {
            let stem = tokenize(n).pop().unwrap();
            assert!(!is_person_noun(&stem), "{n}");
        }
    }
}
