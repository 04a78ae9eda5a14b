//! Reading JSON out of an LLM answer, tolerantly: the last resort when a server ignores
//! `response_format`, or when an answer ran out of `max_tokens`.
//!
//! Models wrap JSON in markdown fences, add a sentence before or after it, or stop in the
//! middle of a string. In that order of cost: parse as is; strip fences; parse the first
//! object in the text and ignore what follows; repair a truncated object by dropping the
//! unfinished member and closing what is open. What comes back is then validated like any
//! other answer, so a wrong repair costs a retry, not a wrong value.

use serde_json::Value;

/// How an answer was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// It was valid JSON.
    Clean,
    /// JSON was found inside other text (fences, prose).
    Extracted,
    /// The JSON was cut off and repaired; the unfinished member was dropped.
    Repaired,
}

/// The first JSON object in `text`, and how it was found.
pub fn parse(text: &str) -> Option<(Value, Parsed)> {
    let t = text.trim().trim_start_matches('\u{feff}');
    if let Ok(v) = serde_json::from_str::<Value>(t) {
        if v.is_object() {
            return Some((v, Parsed::Clean));
        }
    }
    let start = t.find('{')?;
    let body = &t[start..];
    // A streaming deserializer reads one value and stops, whatever follows it.
    let mut stream = serde_json::Deserializer::from_str(body).into_iter::<Value>();
    if let Some(Ok(v)) = stream.next() {
        if v.is_object() {
            return Some((v, Parsed::Extracted));
        }
    }
    let fixed = repair(strip_fence_tail(body))?;
    serde_json::from_str::<Value>(&fixed)
        .ok()
        .filter(Value::is_object)
        .map(|v| (v, Parsed::Repaired))
}

/// Drops a closing markdown fence and anything after it.
fn strip_fence_tail(s: &str) -> &str {
    match s.rfind("```") {
        Some(i) => &s[..i],
        None => s,
    }
}

/// One open container while scanning.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Open {
    Object,
    Array,
}

/// Closes a truncated JSON text: the member or element being written when the text
/// stopped is dropped (half a string is not a value worth keeping), then every open
/// container is closed. Returns `None` when the text is not a truncation (mismatched
/// brackets).
pub fn repair(s: &str) -> Option<String> {
    let mut stack: Vec<Open> = Vec::new();
    // Byte offset just after the last complete member/element at each depth, i.e. where
    // the text can be cut and stay valid once containers are closed.
    let mut safe: Vec<usize> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' | b'[' => {
                stack.push(if c == b'{' { Open::Object } else { Open::Array });
                safe.push(i + 1);
            }
            b'}' | b']' => {
                let want = if c == b'}' { Open::Object } else { Open::Array };
                if stack.pop() != Some(want) {
                    return None;
                }
                safe.pop();
                if stack.is_empty() {
                    // Complete already; nothing to repair.
                    return Some(s[..=i].to_string());
                }
            }
            b',' => {
                if let Some(last) = safe.last_mut() {
                    *last = i;
                }
            }
            _ => {}
        }
        i += 1;
    }
    if stack.is_empty() {
        return None;
    }
    // Stopped between tokens (`{"page": 1`): closing what is open may be all it needs.
    if !in_string {
        let mut closed = s.trim_end().trim_end_matches(',').to_string();
        for o in stack.iter().rev() {
            closed.push(if *o == Open::Object { '}' } else { ']' });
        }
        if serde_json::from_str::<Value>(&closed).is_ok() {
            return Some(closed);
        }
    }
    // Cut at the innermost point that ends on a complete member, then close everything.
    // A member is complete when a ',' followed it; the value being written is dropped.
    let cut = *safe.last()?;
    let mut out = s[..cut].trim_end().trim_end_matches(',').to_string();
    // Containers opened after `cut` are dropped with it; only those before remain open.
    let open_before_cut = count_open(&out)?;
    for o in open_before_cut.iter().rev() {
        out.push(if *o == Open::Object { '}' } else { ']' });
    }
    Some(out)
}

/// The containers still open at the end of `s` (which must not end inside a string).
fn count_open(s: &str) -> Option<Vec<Open>> {
    let mut stack = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in s.bytes() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' => stack.push(Open::Object),
            b'[' => stack.push(Open::Array),
            b'}' | b']' => {
                stack.pop()?;
            }
            _ => {}
        }
    }
    (!in_string).then_some(stack)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn clean_fenced_and_chatty() {
        assert_eq!(parse(r#"{"a": 1}"#), Some((json!({"a": 1}), Parsed::Clean)));
        assert_eq!(
            parse("```json\n{\"a\": 1}\n```"),
            Some((json!({"a": 1}), Parsed::Extracted))
        );
        assert_eq!(
            parse("Sure! Here it is: {\"a\": {\"b\": [1, 2]}} Hope this helps {"),
            Some((json!({"a": {"b": [1, 2]}}), Parsed::Extracted))
        );
    }

    #[test]
    fn truncated_answers_lose_only_the_unfinished_member() {
        let (v, how) = parse(r#"{"questions": ["What is on?", "Which movies are pla"#).unwrap();
        assert_eq!(how, Parsed::Repaired);
        assert_eq!(v, json!({"questions": ["What is on?"]}));
        let (v, _) = parse(r#"{"parameters": {"page": "Page number.", "query": "Text to"#).unwrap();
        assert_eq!(v, json!({"parameters": {"page": "Page number."}}));
        let (v, _) = parse(r#"{"examples": {"page": 1, "lang": "#).unwrap();
        assert_eq!(v, json!({"examples": {"page": 1}}));
        let (v, _) = parse(r#"{"examples": {"page": 1"#).unwrap();
        assert_eq!(v, json!({"examples": {"page": 1}}));
        let (v, _) = parse(r#"{"description": "Gets the"#).unwrap();
        assert_eq!(v, json!({}));
    }

    #[test]
    fn garbage_is_none() {
        assert_eq!(parse("I cannot help with that."), None);
        assert_eq!(parse("{]"), None);
        assert_eq!(parse(""), None);
        assert_eq!(parse("[1, 2]"), None);
    }
}
