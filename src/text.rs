//! Text cleaning shared by the doc-text builder, tool descriptions and the CLI.
//!
//! Real specs carry HTML, markdown, embedded base64 images and long URLs in their
//! descriptions. None of that helps a reader or an embedding model, and all of it eats the
//! model's 256-token window, so it is stripped before any text leaves the catalog.

use once_cell::sync::Lazy;
use regex::Regex;

static HTML_TAG: Lazy<Regex> = Lazy::new(|| Regex::new(r"(?s)<[a-zA-Z/!][^<>]{0,400}>").unwrap());
static DATA_URI: Lazy<Regex> =
    Lazy::new(|| Regex::new(r"data:[a-zA-Z0-9/+.-]+;base64,[A-Za-z0-9+/=]+").unwrap());
static BASE64_BLOB: Lazy<Regex> = Lazy::new(|| Regex::new(r"[A-Za-z0-9+/]{64,}={0,2}").unwrap());
static MD_LINK: Lazy<Regex> =
    Lazy::new(|| Regex::new(r"!?\[([^\]]{0,200})\]\([^)]{0,500}\)").unwrap());
static URL: Lazy<Regex> = Lazy::new(|| Regex::new(r"https?://[^\s)<>\]]+").unwrap());
static MD_MARKUP: Lazy<Regex> =
    Lazy::new(|| Regex::new(r"(?m)^\s{0,3}(#{1,6}|>|[-*+]|\d+\.)\s+|[*_`~]{1,3}|\|").unwrap());
static ENTITY: Lazy<Regex> =
    Lazy::new(|| Regex::new(r"&(amp|lt|gt|quot|apos|nbsp|#\d{1,6});").unwrap());
static SPACE: Lazy<Regex> = Lazy::new(|| Regex::new(r"\s+").unwrap());

/// URLs up to this many characters are short enough to carry meaning (`/v1/users`); longer
/// ones are mostly noise for retrieval.
const LONG_URL: usize = 40;

/// Strips HTML, markdown markup, base64 blobs and long URLs and collapses whitespace.
pub fn clean(s: &str) -> String {
    // Bound the work on pathological inputs (a 5 MB description): nothing past the first
    // 64 KB can reach a 256-token window or a one-line summary anyway.
    let s = clip_bytes(s, 64 * 1024);
    let s = DATA_URI.replace_all(s, " ");
    let s = HTML_TAG.replace_all(&s, " ");
    let s = MD_LINK.replace_all(&s, "$1");
    let s = URL.replace_all(&s, |c: &regex::Captures| {
        let u = &c[0];
        if u.len() > LONG_URL {
            " ".to_string()
        } else {
            u.to_string()
        }
    });
    let s = BASE64_BLOB.replace_all(&s, " ");
    let s = MD_MARKUP.replace_all(&s, " ");
    let s = ENTITY.replace_all(&s, |c: &regex::Captures| match &c[1] {
        "amp" => "&".to_string(),
        "lt" => "<".to_string(),
        "gt" => ">".to_string(),
        "quot" => "\"".to_string(),
        "apos" => "'".to_string(),
        _ => " ".to_string(),
    });
    SPACE.replace_all(s.trim(), " ").trim().to_string()
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub fn clip_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// At most `max` characters, cut at a word boundary where possible, with an ellipsis when cut.
pub fn clip_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max.saturating_sub(1)).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > max / 2 => cut[..i].to_string(),
        _ => cut,
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', ' ']))
}

/// The first sentence of a cleaned text (up to the first `. `, newline or 200 chars).
pub fn first_sentence(s: &str) -> String {
    let first_para = s.split("\n\n").find(|p| !p.trim().is_empty()).unwrap_or("");
    let c = clean(first_para);
    let end = c
        .char_indices()
        .find(|&(i, ch)| {
            ch == '.'
                && c[i + 1..].starts_with(' ')
                && !c[..i].ends_with("e.g")
                && !c[..i].ends_with("i.e")
        })
        .map(|(i, _)| i + 1)
        .unwrap_or(c.len());
    clip_chars(&c[..end], 200)
}

/// Splits an identifier into lower-case words: `getMovieCredits` -> `get movie credits`,
/// `user_id` -> `user id`, `HTTPStatus2xx` -> `http status 2xx`.
pub fn split_identifier(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        let prev = if i > 0 { Some(chars[i - 1]) } else { None };
        let next = chars.get(i + 1).copied();
        let boundary = match prev {
            Some(p) if p.is_alphanumeric() => {
                (c.is_uppercase() && p.is_lowercase())
                    || (c.is_uppercase()
                        && p.is_uppercase()
                        && next.is_some_and(|n| n.is_lowercase()))
                    || (c.is_alphabetic() && p.is_ascii_digit() && !matches!(c, 'x' | 'X'))
                    || (c.is_ascii_digit() && p.is_alphabetic())
            }
            _ => false,
        };
        if boundary && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Sentence-case words joined by spaces: `["get", "movie"]` -> `Get movie`.
pub fn sentence_case(words: &[String]) -> String {
    let joined = words.join(" ");
    let mut cs = joined.chars();
    match cs.next() {
        Some(f) => f.to_uppercase().chain(cs).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_html_markdown_base64_and_long_urls() {
        let s = "<p>Get the **album** [docs](https://example.com/a) see https://developer.example.com/documentation/web-api/reference/get-album and data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==</p>";
        assert_eq!(clean(s), "Get the album docs see and");
    }

    #[test]
    fn splits_identifiers() {
        assert_eq!(
            split_identifier("getMovieCredits"),
            ["get", "movie", "credits"]
        );
        assert_eq!(split_identifier("user_id"), ["user", "id"]);
        assert_eq!(split_identifier("HTTPStatus"), ["http", "status"]);
        assert_eq!(split_identifier("v1Users"), ["v", "1", "users"]);
    }

    #[test]
    fn clips_on_char_boundaries() {
        let s = "é".repeat(10);
        assert_eq!(clip_bytes(&s, 3), "é");
        assert!(clip_chars("one two three four five", 10).ends_with('…'));
    }

    #[test]
    fn first_sentence_stops_at_period() {
        assert_eq!(
            first_sentence("Get a movie. More text here."),
            "Get a movie."
        );
        assert_eq!(first_sentence("Use e.g. this. Then"), "Use e.g. this.");
    }
}
