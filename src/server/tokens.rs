//! What the text a client receives costs in model context, counted in cl100k tokens (the
//! tokenizer of the GPT-4 family; other models' tokenizers land within a few percent on
//! JSON like this). The console shows it per tool; the MCP benchmark sums it per catalog.

use serde_json::Value;
use std::sync::OnceLock;

/// The tokenizer, built once: parsing its vocabulary takes a noticeable fraction of a second.
fn bpe() -> Option<&'static tiktoken_rs::CoreBPE> {
    static BPE: OnceLock<Option<tiktoken_rs::CoreBPE>> = OnceLock::new();
    BPE.get_or_init(|| match tiktoken_rs::cl100k_base() {
        Ok(b) => Some(b),
        Err(e) => {
            tracing::error!(error = %e, "cannot build the cl100k tokenizer");
            None
        }
    })
    .as_ref()
}

/// Tokens of `text`; `None` only if the tokenizer could not be built.
pub fn count_text(text: &str) -> Option<usize> {
    Some(bpe()?.encode_with_special_tokens(text).len())
}

/// Tokens of `value` as compact JSON, the way it travels in a protocol message.
pub fn count_json(value: &Value) -> Option<usize> {
    count_text(&serde_json::to_string(value).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_compact_json() {
        assert_eq!(count_text(""), Some(0));
        let v = serde_json::json!({"name": "getMovie", "description": "Get a movie."});
        let n = count_json(&v).expect("tokenizer");
        // Fewer tokens than characters, more than the number of words.
        assert!(n > 6 && n < serde_json::to_string(&v).unwrap().len(), "{n}");
    }
}
