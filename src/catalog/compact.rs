//! Parsed documents held at their own size.
//!
//! A spec is mostly small collections: an operation of one path parameter and one response
//! is six maps of one to five keys. Built key by key, an ordered map keeps room for as many
//! entries as its hash table could index (three for one key, seven for four), each entry
//! over a hundred bytes, and a vector grows to four before it holds two. On a spec of
//! 64,000 such operations that spare room was most of the peak memory of loading it (a
//! 22 MB YAML file peaked at 29 times its size), so both readers build every collection at
//! its final length: the YAML reader (`yaml`) through [`exact_map`], the JSON reader
//! through [`from_json_str`].

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// `map` rebuilt with room for its entries and no more (order and values unchanged).
pub fn exact_map(map: Map<String, Value>) -> Map<String, Value> {
    // `Map::from_iter` sizes the new map from the iterator's exact length.
    map.into_iter().collect()
}

/// Parses JSON text as `serde_json::from_str::<Value>` does (same errors, same recursion
/// limit, a repeated key keeps its first place and last value), with every collection at
/// its own length.
pub fn from_json_str(text: &str) -> Result<Value, serde_json::Error> {
    from_json_str_with(text, false)
}

/// [`from_json_str`], with the path items packed when `pack` ([`pack`]).
pub fn from_json_str_with(text: &str, pack: bool) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = if pack { Exact::Root } else { Exact::Any };
    let value = seed.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// A path item as the string of its compact JSON text.
///
/// Loading a catalog (`Catalog::load`) reads the paths of a spec packed: every value of the
/// root's `paths` is held as its JSON text, one allocation instead of dozens, and parsed
/// again only while its endpoints are built ([`unpack`]). A parsed operation of one
/// parameter and one response takes about 2 KB in memory against under 300 bytes of
/// text, and a spec of 64,000 of them is almost nothing but path items.
pub fn pack(item: &Value) -> Value {
    Value::String(item.to_string())
}

/// A path item packed by [`pack`], parsed again.
pub fn unpack(packed: &Value) -> Value {
    match packed {
        Value::String(text) => from_json_str(text).unwrap_or(Value::Null),
        other => other.clone(),
    }
}

/// Whether a packed path item's `$ref`s all plainly point outside `#/paths` (the test of
/// `resolve::paths_are_unreferenced`, on the text: compact JSON writes each as
/// `"$ref":"..."`).
pub fn packed_refs_stay_out_of_paths(packed: &Value) -> bool {
    let Value::String(text) = packed else {
        return true;
    };
    text.match_indices("\"$ref\":").all(|(i, m)| {
        let rest = &text[i + m.len()..];
        match rest.strip_prefix('"') {
            Some(r) => {
                let r = &r[..r.find('"').unwrap_or(r.len())];
                r.starts_with("#/") && !r.contains("paths") && !r.contains(['%', '\\'])
            }
            // Not a string: never followed as a reference.
            None => true,
        }
    })
}

/// What is being read: any value, the root (whose `paths` is packed), or the `paths` map
/// (whose values are packed).
#[derive(Clone, Copy, PartialEq)]
enum Exact {
    Any,
    Root,
    Paths,
}

impl<'de> DeserializeSeed<'de> for Exact {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Exact {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(Exact::Any)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(Exact::Any)? {
            items.push(v);
        }
        items.shrink_to_fit();
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        // Entries first, then the map at their number: a map grown key by key keeps room
        // for its hash table's capacity.
        let mut entries: Vec<(String, Value)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = match self {
                Exact::Root if key == "paths" => map.next_value_seed(Exact::Paths)?,
                Exact::Paths => pack(&map.next_value_seed(Exact::Any)?),
                _ => map.next_value_seed(Exact::Any)?,
            };
            entries.push((key, value));
        }
        Ok(Value::Object(entries.into_iter().collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_reads_as_serde_json_reads_it() {
        for text in [
            r#"{"openapi":"3.0.0","paths":{"/a/{id}":{"get":{"parameters":[{"name":"id","in":"path","required":true}],"responses":{"200":{"description":"ok"}}}}}}"#,
            r#"[1, -2, 3.5, 18446744073709551615, "x\u00e9", null, true, [], {}]"#,
            r#"{"b": 1, "a": 2, "b": 3}"#,
        ] {
            let ours = from_json_str(text);
            let packed = from_json_str_with(text, true);
            let theirs = serde_json::from_str::<Value>(text);
            match (ours, theirs) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "{text}");
                    assert_eq!(unpacked(packed.unwrap()), b, "{text}");
                    // Same order of keys too (preserve_order), not just equal maps.
                    assert_eq!(a.to_string(), b.to_string(), "{text}");
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{text}"),
                (a, b) => panic!("{text}: {a:?} vs {b:?}"),
            }
        }
    }

    /// A document read packed, with its path items parsed again.
    fn unpacked(mut v: Value) -> Value {
        if let Some(Value::Object(paths)) = v.get_mut("paths") {
            for item in paths.values_mut() {
                *item = unpack(item);
            }
        }
        v
    }

    #[test]
    fn yaml_and_json_read_packed_unpack_to_the_same_document() {
        let yaml = "openapi: 3.0.0\npaths:\n  /a/{id}:\n    get:\n      parameters:\n        - $ref: '#/components/parameters/id'\n  /b: nonsense\ncomponents:\n  parameters:\n    id: {name: id, in: path}\n";
        let plain = super::super::yaml::parse(yaml).unwrap();
        let packed = super::super::yaml::parse_with(yaml, true).unwrap();
        assert!(packed["paths"]["/a/{id}"].is_string());
        assert_eq!(packed["components"], plain["components"]);
        assert_eq!(unpacked(packed.clone()), plain);
        let json = plain.to_string();
        assert_eq!(unpacked(from_json_str_with(&json, true).unwrap()), plain);
        assert!(packed_refs_stay_out_of_paths(&packed["paths"]["/a/{id}"]));
        for into_paths in [
            r##"{"$ref":"#/paths/~1b/get"}"##,
            r##"{"$ref":"other.yaml#/x"}"##,
            r##"{"$ref":"#/components/%70aths"}"##,
        ] {
            let item: Value = serde_json::from_str(into_paths).unwrap();
            assert!(!packed_refs_stay_out_of_paths(&pack(&item)), "{into_paths}");
        }
    }

    #[test]
    fn json_errors_are_serde_json_errors() {
        let deep = "[".repeat(200) + &"]".repeat(200);
        for text in ["{\"a\": }", "{} x", &deep, "{\"a\": 1", "[1e400]"] {
            let ours = from_json_str(text).unwrap_err();
            let theirs = serde_json::from_str::<Value>(text).unwrap_err();
            assert_eq!(ours.to_string(), theirs.to_string(), "{text}");
            assert_eq!(
                (ours.line(), ours.column()),
                (theirs.line(), theirs.column())
            );
        }
    }

    #[test]
    fn exact_maps_keep_order_and_values() {
        let mut m = Map::new();
        for k in ["z", "a", "m"] {
            m.insert(k.to_string(), Value::from(k));
        }
        let e = exact_map(m.clone());
        assert_eq!(Value::Object(e).to_string(), Value::Object(m).to_string());
    }
}
