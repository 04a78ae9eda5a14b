//! The doc texts a retrieval model is trained on: exactly what the index embeds
//! ([`doc_text::build_in`]), plus the "masked" texts of a training corpus whose queries were
//! taken from the endpoint's own documentation.
//!
//! A query that is an operation's summary would find that operation by copying words, and a
//! model trained on such pairs learns nothing about requests. So the positive document of
//! such a pair leaves out the text the query was taken from:
//! - [`Mask::Summary`]: the query is the summary. The summary goes; where the description's
//!   first section begins with the same sentence (equal ignoring case and a final period),
//!   that sentence goes too;
//! - [`Mask::DescriptionFirstSentence`]: the query is the first sentence of the description's
//!   first section. That sentence goes, and so does the summary.
//!
//! Texts are compared after the doc-text builder's own cleaning ([`clean`]).

use super::doc_text::{build_in, first_section, Context, DocVariant};
use crate::catalog::Endpoint;
use crate::text::clean;

/// Which documentation text a query was taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mask {
    Summary,
    DescriptionFirstSentence,
}

impl Mask {
    /// Both masks, in the order the dump writes them.
    pub const ALL: [Mask; 2] = [Mask::Summary, Mask::DescriptionFirstSentence];

    /// The name a training corpus uses (`"mask": "summary"`).
    pub fn name(self) -> &'static str {
        match self {
            Mask::Summary => "summary",
            Mask::DescriptionFirstSentence => "description_first_sentence",
        }
    }
}

/// The doc text of `ep` within its catalog with the text `mask` names left out.
pub fn masked_text(ep: &Endpoint, variant: DocVariant, ctx: &Context, mask: Mask) -> String {
    build_in(&masked(ep, mask), variant, ctx)
}

/// A copy of `ep` without the text `mask` names. The description keeps only its cleaned
/// first section (all the doc text reads of it) less the masked sentence.
pub fn masked(ep: &Endpoint, mask: Mask) -> Endpoint {
    let mut out = ep.clone();
    let summary = ep.summary.as_deref().map(clean).unwrap_or_default();
    out.summary = None;
    let Some(d) = &ep.description else {
        return out;
    };
    let section = clean(first_section(d));
    let (first, rest) = first_sentence(&section);
    let drop_first = match mask {
        Mask::DescriptionFirstSentence => true,
        Mask::Summary => !summary.is_empty() && same_sentence(first, &summary),
    };
    out.description = match drop_first {
        true => Some(rest.to_string()).filter(|r| !r.is_empty()),
        false => Some(section),
    };
    out
}

/// The first sentence of a cleaned text and the rest: a sentence ends at `.`, `!` or `?`
/// followed by white space.
pub fn first_sentence(s: &str) -> (&str, &str) {
    let bytes = s.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1).is_some_and(u8::is_ascii_whitespace)
        {
            return (s[..=i].trim(), s[i + 1..].trim());
        }
    }
    (s.trim(), "")
}

/// Equal ignoring case and a final period.
fn same_sentence(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.trim().trim_end_matches('.').trim().to_lowercase();
    norm(a) == norm(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(summary: Option<&str>, description: Option<&str>) -> Endpoint {
        serde_json::from_value(serde_json::json!({
            "api": "pets", "api_title": "Pets", "tool_name": "t", "method": "GET",
            "path": "/pets/{id}", "operation_id": null, "summary": summary,
            "description": description, "tags": [], "deprecated": false, "parameters": [],
            "request_body": null, "response_fields": ["name"], "security": [], "servers": [],
            "generated_summary": null, "generated_questions": [],
            "description_provenance": null
        }))
        .unwrap()
    }

    fn text(ep: &Endpoint, mask: Mask) -> String {
        masked_text(
            ep,
            DocVariant::Full,
            &Context::of(std::slice::from_ref(ep)),
            mask,
        )
    }

    #[test]
    fn summary_mask_drops_the_summary_and_its_repeat() {
        let ep = endpoint(
            Some("Find a <b>pet</b> by id"),
            Some("Find a pet by ID. Returns one pet.\n\n## Changes\nold"),
        );
        let full = build_in(
            &ep,
            DocVariant::Full,
            &Context::of(std::slice::from_ref(&ep)),
        );
        assert!(full.starts_with("Find a pet by id."), "{full}");
        let t = text(&ep, Mask::Summary);
        assert!(!t.to_lowercase().contains("find a pet"), "{t}");
        assert!(t.contains("Returns one pet."), "{t}");
        assert!(
            t.contains("GET /pets/{id}") && t.ends_with("returns: name"),
            "{t}"
        );
        assert!(!t.contains("Changes"), "{t}");
    }

    #[test]
    fn summary_mask_keeps_a_description_that_says_something_else() {
        let ep = endpoint(Some("Find a pet"), Some("Looks a pet up. Returns it."));
        let t = text(&ep, Mask::Summary);
        assert!(t.starts_with("GET /pets/{id}"), "{t}");
        assert!(t.contains("Looks a pet up. Returns it."), "{t}");
        // The whole description goes when that sentence is all it says.
        let ep = endpoint(Some("Find a pet."), Some("find a pet"));
        assert_eq!(masked(&ep, Mask::Summary).description, None);
    }

    #[test]
    fn description_mask_drops_the_first_sentence_and_the_summary() {
        let ep = endpoint(Some("Pet"), Some("Gets a pet. Needs a key! Or not?"));
        let m = masked(&ep, Mask::DescriptionFirstSentence);
        assert_eq!(m.summary, None);
        assert_eq!(m.description.as_deref(), Some("Needs a key! Or not?"));
        // A sentence ends only at punctuation followed by white space: `v1.2` does not end one.
        assert_eq!(
            first_sentence("Uses v1.2 now. More"),
            ("Uses v1.2 now.", "More")
        );
        assert_eq!(first_sentence("No end"), ("No end", ""));
        assert_eq!(
            masked(&endpoint(None, None), Mask::Summary).description,
            None
        );
    }
}
