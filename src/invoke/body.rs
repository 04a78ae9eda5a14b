//! Encoding the `body` argument as the media type the endpoint declares.
//!
//! - JSON (`application/json`, `*+json`): the value as JSON.
//! - `application/x-www-form-urlencoded`: an object's fields; arrays repeat the field,
//!   nested objects are sent as JSON text.
//! - `multipart/form-data`: one text part per field (arrays repeat the part, objects are
//!   JSON parts); a field whose schema is `format: binary` is sent as a file part whose
//!   content is the given string. Enough for forms; there is no way to pass real bytes
//!   through a JSON tool call anyway.
//! - Anything else (`text/plain`, `application/xml`, `application/octet-stream`): a string
//!   body is sent as-is; any other value is refused with a message saying so, since
//!   guessing a JSON-to-XML mapping would send something the API did not ask for.

use super::style::scalar_text;
use serde_json::Value;

/// An encoded body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedBody {
    /// The `Content-Type` header value (with the multipart boundary).
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// Whether a media type is JSON.
pub fn is_json(content_type: &str) -> bool {
    let essence = essence(content_type);
    essence == "application/json" || essence.ends_with("+json") || essence == "*/*"
}

/// `type/subtype`, lower-cased, without parameters.
fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Encodes `value` as `content_type`; `schema` is the body's schema (for binary fields).
pub fn encode(content_type: &str, schema: &Value, value: &Value) -> Result<EncodedBody, String> {
    let kind = essence(content_type);
    if is_json(content_type) {
        let bytes = serde_json::to_vec(value)
            .map_err(|e| format!("cannot encode the body as JSON: {e}"))?;
        let ct = if kind == "*/*" {
            "application/json"
        } else {
            content_type
        };
        return Ok(EncodedBody {
            content_type: ct.to_string(),
            bytes,
        });
    }
    if kind == "application/x-www-form-urlencoded" {
        let obj = value
            .as_object()
            .ok_or("argument 'body': a form body must be an object of fields")?;
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in obj {
            match v {
                Value::Null => {}
                Value::Array(items) => {
                    for i in items {
                        form.append_pair(k, &scalar_text(i));
                    }
                }
                other => {
                    form.append_pair(k, &scalar_text(other));
                }
            }
        }
        return Ok(EncodedBody {
            content_type: kind,
            bytes: form.finish().into_bytes(),
        });
    }
    if kind == "multipart/form-data" {
        return multipart(schema, value);
    }
    match value {
        Value::String(s) => Ok(EncodedBody { content_type: content_type.to_string(), bytes: s.clone().into_bytes() }),
        _ => Err(format!(
            "argument 'body': this endpoint takes a {kind} body; pass it as a string holding the exact content"
        )),
    }
}

fn multipart(schema: &Value, value: &Value) -> Result<EncodedBody, String> {
    let obj = value
        .as_object()
        .ok_or("argument 'body': a multipart body must be an object of fields")?;
    let mut parts: Vec<(String, Option<&'static str>, String)> = Vec::new();
    for (k, v) in obj {
        let binary = schema
            .pointer(&format!(
                "/properties/{}/format",
                k.replace('~', "~0").replace('/', "~1")
            ))
            .and_then(Value::as_str)
            == Some("binary");
        let file = binary.then_some("application/octet-stream");
        match v {
            Value::Null => {}
            Value::Array(items) => {
                parts.extend(items.iter().map(|i| (k.clone(), file, scalar_text(i))))
            }
            Value::Object(_) => parts.push((k.clone(), Some("application/json"), v.to_string())),
            other => parts.push((k.clone(), file, scalar_text(other))),
        }
    }
    let boundary = boundary_for(&parts);
    let mut out = String::new();
    for (name, ct, content) in &parts {
        let name = quote(name);
        out.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\""
        ));
        if *ct == Some("application/octet-stream") {
            out.push_str(&format!("; filename=\"{name}\""));
        }
        out.push_str("\r\n");
        if let Some(ct) = ct {
            out.push_str(&format!("Content-Type: {ct}\r\n"));
        }
        out.push_str(&format!("\r\n{content}\r\n"));
    }
    out.push_str(&format!("--{boundary}--\r\n"));
    Ok(EncodedBody {
        content_type: format!("multipart/form-data; boundary={boundary}"),
        bytes: out.into_bytes(),
    })
}

/// A boundary that occurs in no part (checked, not hoped for).
fn boundary_for(parts: &[(String, Option<&'static str>, String)]) -> String {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    (0u32..)
        .map(|n| format!("shortlist-{seed:x}-{n}"))
        .find(|b| {
            !parts
                .iter()
                .any(|(k, _, c)| c.contains(b.as_str()) || k.contains(b.as_str()))
        })
        .unwrap_or_else(|| "shortlist-boundary".to_string())
}

/// A field name safe inside a quoted header parameter.
fn quote(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c == '"' || c == '\r' || c == '\n' || c == '\\' {
                '_'
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_and_form_bodies() {
        let b = encode("application/json", &json!({}), &json!({"a": [1, 2]})).unwrap();
        assert_eq!(b.bytes, br#"{"a":[1,2]}"#);
        let f = encode(
            "application/x-www-form-urlencoded",
            &json!({}),
            &json!({"name": "a b&c", "tag": ["x", "y"], "n": 3}),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(f.bytes).unwrap(),
            "name=a+b%26c&tag=x&tag=y&n=3"
        );
    }

    #[test]
    fn multipart_has_parts_and_file_fields() {
        let schema = json!({"properties": {"file": {"type": "string", "format": "binary"}}});
        let b = encode(
            "multipart/form-data",
            &schema,
            &json!({"title": "t", "file": "hello"}),
        )
        .unwrap();
        let boundary = b
            .content_type
            .split("boundary=")
            .nth(1)
            .unwrap()
            .to_string();
        let text = String::from_utf8(b.bytes).unwrap();
        assert!(text.contains("name=\"title\"\r\n\r\nt\r\n"));
        assert!(text.contains("name=\"file\"; filename=\"file\"\r\nContent-Type: application/octet-stream\r\n\r\nhello\r\n"));
        assert!(text.ends_with(&format!("--{boundary}--\r\n")));
    }

    #[test]
    fn other_media_types_need_a_string() {
        assert_eq!(
            encode("text/plain", &json!({}), &json!("hi"))
                .unwrap()
                .bytes,
            b"hi"
        );
        assert!(encode("application/xml", &json!({}), &json!({"a": 1}))
            .unwrap_err()
            .contains("pass it as a string"));
    }
}
