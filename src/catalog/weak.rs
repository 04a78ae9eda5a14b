//! When a human-written text says nothing: a description that only repeats the operationId,
//! the path or the parameter name ("getMovieCredits", "The movie id"), or a placeholder
//! ("TODO", "n/a").
//!
//! The loader and the enricher must agree on this. The enricher writes a generated
//! alternative beside a weak text (never over it), and the loader then shows the generated
//! one instead: a weak text adds nothing the tool name does not already say.

use crate::text::{clean, split_identifier};

/// Texts that authors leave as placeholders.
const PLACEHOLDERS: &[&str] = &[
    "todo",
    "tbd",
    "tba",
    "n/a",
    "na",
    "none",
    "null",
    "-",
    "...",
    "description",
    "no description",
    "no description available",
    "missing description",
    "undefined",
];

/// Words that carry no meaning of their own in an API description.
const FILLER: &[&str] = &[
    "a",
    "an",
    "the",
    "of",
    "for",
    "by",
    "to",
    "this",
    "that",
    "endpoint",
    "operation",
    "api",
    "parameter",
    "param",
    "method",
    "request",
    "call",
    "get",
    "gets",
    "list",
    "lists",
    "create",
    "creates",
    "update",
    "updates",
    "delete",
    "deletes",
    "post",
    "put",
    "patch",
    "retrieve",
    "retrieves",
    "fetch",
    "fetches",
    "specified",
    "given",
    "id",
    "ids",
    // The words of a parameter line as prompts show it (`name (query, string, required)`),
    // which small models echo back.
    "query",
    "path",
    "header",
    "cookie",
    "string",
    "integer",
    "number",
    "boolean",
    "array",
    "object",
    "map",
    "value",
    "required",
    "optional",
];

/// Is `text` weak with respect to the identifiers it documents (`names`: operationId, path,
/// or the parameter name)? Weak means empty, a placeholder, or nothing but the words of
/// those identifiers plus filler.
pub fn is_weak(text: &str, names: &[&str]) -> bool {
    let cleaned = clean(text);
    let lower = cleaned.trim_end_matches('.').trim().to_lowercase();
    if lower.is_empty() || PLACEHOLDERS.contains(&lower.as_str()) {
        return true;
    }
    let words = split_identifier(&cleaned);
    // A long text that happens to use only the identifier's words still explains more
    // than the identifier; only short echoes are weak.
    if words.len() > 8 {
        return false;
    }
    let known: Vec<String> = names.iter().flat_map(|n| split_identifier(n)).collect();
    words.iter().all(|w| {
        FILLER.contains(&w.as_str()) || known.iter().any(|k| k == w || singular(k) == singular(w))
    })
}

/// Crude singular, enough to see "credits" and "credit" as one word.
fn singular(w: &str) -> &str {
    w.strip_suffix('s').filter(|s| s.len() > 2).unwrap_or(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_and_placeholders_are_weak() {
        assert!(is_weak("getMovieCredits", &["getMovieCredits"]));
        assert!(is_weak("Get movie credits.", &["getMovieCredits"]));
        assert!(is_weak("  ", &[]));
        assert!(is_weak("TODO", &[]));
        assert!(is_weak("The movie id", &["movie_id"]));
        assert!(is_weak("ID of the movie", &["movie_id"]));
        assert!(is_weak(
            "GET /movie/{movie_id}/credits",
            &["/movie/{movie_id}/credits"]
        ));
        assert!(is_weak("movie region", &["region", "/discover/movie"]));
        assert!(is_weak("query, string, required", &["market"]));
    }

    #[test]
    fn real_descriptions_are_not_weak() {
        assert!(!is_weak(
            "Get the cast and crew for a movie.",
            &["getMovieCredits", "/movie/{movie_id}/credits"]
        ));
        assert!(!is_weak("Page of results to return.", &["page"]));
        assert!(!is_weak(
            "The TMDB identifier of the movie, as returned by search.",
            &["movie_id"]
        ));
    }
}
