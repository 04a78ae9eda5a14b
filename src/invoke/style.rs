//! Serializing parameter values the way OpenAPI's `style` / `explode` say, and
//! percent-encoding them so a value can only ever be data.
//!
//! Encoding is deliberately strict: in paths and queries every byte outside RFC 3986's
//! unreserved set (`A-Z a-z 0-9 - . _ ~`) is percent-encoded. A path value therefore can
//! never contain a `/`, `?`, `#`, `@` or `%` that the URL parser would act on: `../admin`
//! becomes `..%2Fadmin`, `https://evil.example/` becomes `https%3A%2F%2Fevil.example%2F`
//! and `%2e%2e` becomes `%252e%252e`. The one thing encoding cannot neutralize is a whole
//! segment of `.` or `..`, which URL parsers resolve even when written `%2E%2E`; those
//! values are rejected by the request builder.
//!
//! Delimiters this module adds itself (`,` `|` `[` `]` `=` `;` `.`) stay literal, as in
//! the OpenAPI examples, and are unambiguous because the same characters inside values
//! are encoded.
//!
//! Nested values inside a delimited value (an object inside an array) are sent as JSON
//! text: OpenAPI does not define them, and JSON is the one reading a server might parse.

use crate::catalog::{ParamLocation, Parameter};
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS, NON_ALPHANUMERIC};
use serde_json::Value;

/// Everything but RFC 3986 unreserved characters.
pub const STRICT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// What a cookie value cannot hold unencoded (RFC 6265 `cookie-octet`), plus `%` so
/// encoding stays reversible.
const COOKIE: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b',')
    .add(b';')
    .add(b'\\')
    .add(b'%');

/// Percent-encodes everything outside the unreserved set.
pub fn enc(s: &str) -> String {
    utf8_percent_encode(s, STRICT).to_string()
}

/// A scalar as the text that goes on the wire; nested structures as JSON.
pub fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn style_of(p: &Parameter) -> &str {
    p.style.as_deref().unwrap_or(match p.location {
        ParamLocation::Query | ParamLocation::Cookie => "form",
        ParamLocation::Path | ParamLocation::Header | ParamLocation::Argument => "simple",
    })
}

fn explode_of(p: &Parameter) -> bool {
    p.explode.unwrap_or(style_of(p) == "form")
}

/// Key/value pairs of an object, or `None` when `v` is not one.
fn entries(v: &Value) -> Option<Vec<(String, String)>> {
    v.as_object()
        .map(|o| o.iter().map(|(k, v)| (k.clone(), scalar_text(v))).collect())
}

fn items(v: &Value) -> Option<Vec<String>> {
    v.as_array().map(|a| a.iter().map(scalar_text).collect())
}

/// The encoded text that replaces `{name}` in the path (`simple`, `label` or `matrix`).
pub fn path_value(p: &Parameter, v: &Value) -> String {
    let explode = explode_of(p);
    let name = enc(&p.name);
    let (prefix, item_sep, pair_sep, kv) = match style_of(p) {
        "label" => (
            ".".to_string(),
            if explode { "." } else { "," },
            if explode { "." } else { "," },
            if explode { "=" } else { "," },
        ),
        "matrix" => {
            if let Some(list) = items(v) {
                return if explode {
                    list.iter().map(|i| format!(";{name}={}", enc(i))).collect()
                } else {
                    format!(";{name}={}", join_enc(&list, ","))
                };
            }
            if let Some(pairs) = entries(v) {
                return if explode {
                    pairs
                        .iter()
                        .map(|(k, x)| format!(";{}={}", enc(k), enc(x)))
                        .collect()
                } else {
                    format!(";{name}={}", flat_pairs(&pairs, ","))
                };
            }
            return format!(";{name}={}", enc(&scalar_text(v)));
        }
        _ => (String::new(), ",", ",", if explode { "=" } else { "," }),
    };
    let body = if let Some(list) = items(v) {
        join_enc(&list, item_sep)
    } else if let Some(pairs) = entries(v) {
        pairs
            .iter()
            .map(|(k, x)| format!("{}{kv}{}", enc(k), enc(x)))
            .collect::<Vec<_>>()
            .join(pair_sep)
    } else {
        enc(&scalar_text(v))
    };
    format!("{prefix}{body}")
}

/// The encoded `key=value` items a query parameter contributes (joined with `&` by the
/// caller); empty for an empty exploded array.
pub fn query_pairs(p: &Parameter, v: &Value) -> Vec<String> {
    let name = enc(&p.name);
    let style = style_of(p);
    let explode = explode_of(p);
    if style == "deepObject" {
        if let Some(o) = v.as_object() {
            let mut out = Vec::new();
            deep_object(&format!("{name}[{{}}]"), o, &mut out, 0);
            return out;
        }
    }
    if let Some(list) = items(v) {
        if explode {
            return list.iter().map(|i| format!("{name}={}", enc(i))).collect();
        }
        if list.is_empty() {
            return Vec::new();
        }
        let sep = match style {
            "spaceDelimited" => "%20",
            "pipeDelimited" => "|",
            "tabDelimited" => "%09",
            _ => ",",
        };
        return vec![format!("{name}={}", join_enc(&list, sep))];
    }
    if let Some(pairs) = entries(v) {
        if explode {
            return pairs
                .iter()
                .map(|(k, x)| format!("{}={}", enc(k), enc(x)))
                .collect();
        }
        let sep = match style {
            "spaceDelimited" => "%20",
            "pipeDelimited" => "|",
            _ => ",",
        };
        return vec![format!("{name}={}", flat_pairs(&pairs, sep))];
    }
    vec![format!("{name}={}", enc(&scalar_text(v)))]
}

/// `name[k]=v` for each entry; nested objects nest (`name[a][b]=v`), arrays repeat the key.
fn deep_object(
    template: &str,
    o: &serde_json::Map<String, Value>,
    out: &mut Vec<String>,
    depth: usize,
) {
    for (k, v) in o {
        let key = template.replace("{}", &enc(k));
        match v {
            Value::Object(inner) if depth < 8 => {
                deep_object(&format!("{key}[{{}}]"), inner, out, depth + 1)
            }
            Value::Array(list) => out.extend(
                list.iter()
                    .map(|i| format!("{key}={}", enc(&scalar_text(i)))),
            ),
            other => out.push(format!("{key}={}", enc(&scalar_text(other)))),
        }
    }
}

/// The raw (unencoded) value of a header parameter (`simple` style).
pub fn header_value(p: &Parameter, v: &Value) -> String {
    let kv = if explode_of(p) { "=" } else { "," };
    if let Some(list) = items(v) {
        list.join(",")
    } else if let Some(pairs) = entries(v) {
        pairs
            .iter()
            .map(|(k, x)| format!("{k}{kv}{x}"))
            .collect::<Vec<_>>()
            .join(",")
    } else {
        scalar_text(v)
    }
}

/// The `name=value` crumbs of a cookie parameter (`form` style), joined with `; ` by the
/// caller.
pub fn cookie_pairs(p: &Parameter, v: &Value) -> Vec<String> {
    let c = |s: &str| utf8_percent_encode(s, COOKIE).to_string();
    let name = c(&p.name);
    let explode = explode_of(p);
    if let Some(list) = items(v) {
        return if explode {
            list.iter().map(|i| format!("{name}={}", c(i))).collect()
        } else {
            vec![format!(
                "{name}={}",
                list.iter().map(|i| c(i)).collect::<Vec<_>>().join(",")
            )]
        };
    }
    if let Some(pairs) = entries(v) {
        return if explode {
            pairs
                .iter()
                .map(|(k, x)| format!("{}={}", c(k), c(x)))
                .collect()
        } else {
            let flat: Vec<String> = pairs.iter().flat_map(|(k, x)| [c(k), c(x)]).collect();
            vec![format!("{name}={}", flat.join(","))]
        };
    }
    vec![format!("{name}={}", c(&scalar_text(v)))]
}

fn join_enc(list: &[String], sep: &str) -> String {
    list.iter().map(|i| enc(i)).collect::<Vec<_>>().join(sep)
}

/// `k1,v1,k2,v2` (non-exploded object).
fn flat_pairs(pairs: &[(String, String)], sep: &str) -> String {
    pairs
        .iter()
        .flat_map(|(k, x)| [enc(k), enc(x)])
        .collect::<Vec<_>>()
        .join(sep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invoke::args::tests::param;
    use serde_json::json;

    fn p(loc: ParamLocation, style: Option<&str>, explode: Option<bool>) -> Parameter {
        let mut p = param("id", loc, json!({}));
        p.style = style.map(str::to_string);
        p.explode = explode;
        p
    }

    #[test]
    fn path_values_cannot_escape_their_segment() {
        let s = p(ParamLocation::Path, None, None);
        assert_eq!(path_value(&s, &json!("../admin")), "..%2Fadmin");
        assert_eq!(path_value(&s, &json!("@evil.example")), "%40evil.example");
        assert_eq!(path_value(&s, &json!("%2e%2e")), "%252e%252e");
        assert_eq!(
            path_value(&s, &json!("https://evil.example/x?y#z")),
            "https%3A%2F%2Fevil.example%2Fx%3Fy%23z"
        );
        assert_eq!(path_value(&s, &json!("a b\r\n")), "a%20b%0D%0A");
    }

    #[test]
    fn path_styles() {
        let arr = json!([3, 4, 5]);
        let obj = json!({"role": "admin", "first": "Alex"});
        assert_eq!(
            path_value(&p(ParamLocation::Path, None, None), &arr),
            "3,4,5"
        );
        assert_eq!(
            path_value(&p(ParamLocation::Path, None, Some(true)), &obj),
            "role=admin,first=Alex"
        );
        assert_eq!(
            path_value(&p(ParamLocation::Path, Some("label"), None), &arr),
            ".3,4,5"
        );
        assert_eq!(
            path_value(&p(ParamLocation::Path, Some("label"), Some(true)), &arr),
            ".3.4.5"
        );
        assert_eq!(
            path_value(&p(ParamLocation::Path, Some("matrix"), None), &arr),
            ";id=3,4,5"
        );
        assert_eq!(
            path_value(&p(ParamLocation::Path, Some("matrix"), Some(true)), &arr),
            ";id=3;id=4;id=5"
        );
    }

    #[test]
    fn query_styles() {
        let arr = json!(["a b", "c,d"]);
        let obj = json!({"R": 100, "G": 200});
        let q = |style, explode, v: &Value| {
            query_pairs(&p(ParamLocation::Query, style, explode), v).join("&")
        };
        assert_eq!(q(None, None, &arr), "id=a%20b&id=c%2Cd");
        assert_eq!(q(None, Some(false), &arr), "id=a%20b,c%2Cd");
        assert_eq!(
            q(Some("spaceDelimited"), Some(false), &arr),
            "id=a%20b%20c%2Cd"
        );
        assert_eq!(
            q(Some("pipeDelimited"), Some(false), &arr),
            "id=a%20b|c%2Cd"
        );
        assert_eq!(q(None, None, &obj), "R=100&G=200");
        assert_eq!(q(None, Some(false), &obj), "id=R,100,G,200");
        assert_eq!(
            q(
                Some("deepObject"),
                Some(true),
                &json!({"R": 1, "sub": {"x": "&"}})
            ),
            "id[R]=1&id[sub][x]=%26"
        );
        assert_eq!(q(None, None, &json!(true)), "id=true");
        assert_eq!(q(None, None, &json!([])), "");
    }

    #[test]
    fn header_and_cookie_styles() {
        assert_eq!(
            header_value(&p(ParamLocation::Header, None, None), &json!([1, 2])),
            "1,2"
        );
        assert_eq!(
            header_value(
                &p(ParamLocation::Header, None, Some(true)),
                &json!({"a": 1})
            ),
            "a=1"
        );
        assert_eq!(
            cookie_pairs(&p(ParamLocation::Cookie, None, None), &json!("x; y")),
            ["id=x%3B%20y"]
        );
        assert_eq!(
            cookie_pairs(&p(ParamLocation::Cookie, None, Some(false)), &json!([1, 2])),
            ["id=1,2"]
        );
    }
}
