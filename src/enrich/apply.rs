//! Writing generated values into a spec document, each marked with its provenance.
//!
//! Human text is never overwritten: an empty field is filled in place, anything else goes
//! beside it (see `plan`). Every value gets a marker on its operation or parameter,
//! `x-shortlist-generated: {description: {generator, template, date}, ...}`, which the
//! loader turns into `Provenance` and a reviewer can read, or delete to adopt the value.
//!
//! Parameters are written where the operation sees them. A parameter declared by `$ref`
//! (Spotify's `#/components/parameters/QueryMarket`) or at path level is first copied into
//! the operation's own list (an operation-level declaration overrides both in every OpenAPI
//! version), so a value generated for one endpoint never leaks into another. A path
//! parameter the spec forgot to declare is declared.

use super::{MARKER, X_EXAMPLE};
use crate::catalog::family::Family;
use crate::catalog::{Method, ParamLocation, Provenance};
use serde_json::{json, Map, Value};

/// How many `$ref` hops are followed to find a parameter.
const MAX_HOPS: usize = 16;

/// A field of an operation or parameter to set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Description,
    DescriptionBeside,
    Summary,
    Questions,
    Example,
}

impl Field {
    /// The key written for this field in a document of `family`.
    pub fn key(self, family: Family) -> &'static str {
        match self {
            Field::Description => "description",
            Field::DescriptionBeside => super::DESCRIPTION_BESIDE,
            Field::Summary => super::SUMMARY,
            Field::Questions => super::QUESTIONS,
            Field::Example if family == Family::Swagger2 => X_EXAMPLE,
            Field::Example => "example",
        }
    }

    /// The marker entry that covers this field.
    pub fn marker(self) -> &'static str {
        match self {
            Field::Description | Field::DescriptionBeside => "description",
            Field::Summary => "summary",
            Field::Questions => "questions",
            Field::Example => "example",
        }
    }
}

/// The operation object at `paths[route][method]`.
pub fn op_mut<'a>(
    doc: &'a mut Value,
    route: &str,
    method: Method,
) -> Option<&'a mut Map<String, Value>> {
    doc.get_mut("paths")?
        .get_mut(route)?
        .get_mut(method.key())?
        .as_object_mut()
}

/// Sets a field of an operation; `None` provenance means a human value (carried over).
pub fn set_op_field(
    doc: &mut Value,
    family: Family,
    route: &str,
    method: Method,
    field: Field,
    value: Value,
    prov: Option<&Provenance>,
) -> Result<(), String> {
    let op = op_mut(doc, route, method).ok_or_else(|| {
        format!(
            "{} {route}: the operation is not an inline object; not enriched",
            method.as_str()
        )
    })?;
    set(op, family, field, value, prov);
    Ok(())
}

/// Sets a field of an operation with its retrieval check's record in the marker entry
/// (`{"passed": true}`; `None`: not checked).
#[allow(clippy::too_many_arguments)]
pub fn set_op_field_checked(
    doc: &mut Value,
    family: Family,
    route: &str,
    method: Method,
    field: Field,
    value: Value,
    prov: Option<&Provenance>,
    check: Option<Value>,
) -> Result<(), String> {
    set_op_field(doc, family, route, method, field, value, prov)?;
    if let (Some(check), Some(op)) = (check, op_mut(doc, route, method)) {
        if let Some(entry) = op
            .get_mut(MARKER)
            .and_then(|m| m.get_mut(field.marker()))
            .and_then(Value::as_object_mut)
        {
            entry.insert("check".into(), check);
        }
    }
    Ok(())
}

/// Records a generated value that failed its retrieval check: the field is not written (so
/// the index never reads it), and the marker entry holds the provenance and the check with
/// its reason and the refused value, for the reviewer. To adopt the value anyway, write it
/// into the field and delete the marker entry.
pub fn reject_op_field(
    doc: &mut Value,
    route: &str,
    method: Method,
    field: Field,
    value: Value,
    prov: &Provenance,
    check: Option<Value>,
) -> Result<(), String> {
    let op = op_mut(doc, route, method).ok_or_else(|| {
        format!(
            "{} {route}: the operation is not an inline object; not enriched",
            method.as_str()
        )
    })?;
    let mut check = check.unwrap_or_else(|| json!({"passed": false}));
    if let Some(c) = check.as_object_mut() {
        c.insert("value".into(), value);
    }
    let marker = op.entry(MARKER).or_insert_with(|| json!({}));
    if !marker.is_object() {
        *marker = json!({});
    }
    if let Some(m) = marker.as_object_mut() {
        m.insert(
            field.marker().to_string(),
            json!({"generator": prov.generator, "template": prov.template, "date": prov.date,
                   "check": check}),
        );
    }
    Ok(())
}

/// Sets a field of a parameter, making the operation hold its own declaration first.
#[allow(clippy::too_many_arguments)]
pub fn set_param_field(
    doc: &mut Value,
    family: Family,
    route: &str,
    method: Method,
    name: &str,
    location: ParamLocation,
    field: Field,
    value: Value,
    prov: Option<&Provenance>,
) -> Result<(), String> {
    let slot = param_slot(doc, family, route, method, name, location)?;
    set(slot, family, field, value, prov);
    Ok(())
}

fn set(
    obj: &mut Map<String, Value>,
    family: Family,
    field: Field,
    value: Value,
    prov: Option<&Provenance>,
) {
    let key = field.key(family);
    if field == Field::Description && !obj.contains_key(key) {
        // Where a reader expects it: after the summary (or name), not after `responses`.
        let at = ["summary", "operationId", "in", "name"]
            .iter()
            .filter_map(|k| obj.keys().position(|x| x == k))
            .max()
            .map(|i| i + 1)
            .unwrap_or(0);
        obj.shift_insert(at.min(obj.len()), key.to_string(), value);
    } else {
        obj.insert(key.to_string(), value);
    }
    if let Some(p) = prov {
        let marker = obj.entry(MARKER).or_insert_with(|| json!({}));
        if !marker.is_object() {
            *marker = json!({});
        }
        if let Some(m) = marker.as_object_mut() {
            m.insert(
                field.marker().to_string(),
                json!({"generator": p.generator, "template": p.template, "date": p.date}),
            );
        }
    }
}

/// The parameter as the operation sees it (resolved, read-only), if declared.
pub fn find_param(
    doc: &Value,
    route: &str,
    method: Method,
    name: &str,
    location: ParamLocation,
) -> Option<Value> {
    let item = doc.get("paths")?.get(route)?;
    let lists = [
        item.get(method.key()).and_then(|op| op.get("parameters")),
        item.get("parameters"),
    ];
    lists
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|entry| resolve_local(doc, entry))
        .find(|p| is_param(p, name, location))
}

fn is_param(p: &Value, name: &str, location: ParamLocation) -> bool {
    p.get("name").and_then(Value::as_str) == Some(name)
        && p.get("in").and_then(Value::as_str) == Some(location.as_str())
}

/// Follows local `$ref`s (`#/...`) to the object they name; `None` for refs into other
/// files or that lead nowhere.
pub fn resolve_local(doc: &Value, v: &Value) -> Option<Value> {
    let mut cur = v;
    for _ in 0..MAX_HOPS {
        match cur.get("$ref").and_then(Value::as_str) {
            None => return Some(cur.clone()),
            Some(r) => {
                let frag = r.strip_prefix('#')?;
                let decoded = percent_encoding::percent_decode_str(frag)
                    .decode_utf8()
                    .ok()?;
                cur = doc.pointer(&decoded)?;
            }
        }
    }
    None
}

/// What to do to give the operation its own declaration of a parameter.
enum Slot {
    /// `parameters[i]` of the operation, to be inlined when it is a `$ref`.
    Op(usize, Option<Value>),
    /// A copy (path-level or new declaration) to append to the operation's list.
    Append(Value),
}

/// The operation's own declaration of a parameter, created as needed.
pub(crate) fn param_slot<'a>(
    doc: &'a mut Value,
    family: Family,
    route: &str,
    method: Method,
    name: &str,
    location: ParamLocation,
) -> Result<&'a mut Map<String, Value>, String> {
    let where_ = || format!("{} {route}: parameter '{name}'", method.as_str());
    let item = doc
        .get("paths")
        .and_then(|p| p.get(route))
        .ok_or_else(|| format!("{}: no such path", where_()))?;
    let op_list = item
        .get(method.key())
        .and_then(|op| op.get("parameters"))
        .and_then(Value::as_array);
    let mut slot = None;
    for (i, entry) in op_list.into_iter().flatten().enumerate() {
        if let Some(p) = resolve_local(doc, entry).filter(|p| is_param(p, name, location)) {
            let inline = entry.get("$ref").is_some().then_some(p);
            slot = Some(Slot::Op(i, inline));
            break;
        }
    }
    if slot.is_none() {
        let path_list = item.get("parameters").and_then(Value::as_array);
        slot = path_list
            .into_iter()
            .flatten()
            .filter_map(|e| resolve_local(doc, e))
            .find(|p| is_param(p, name, location))
            .map(Slot::Append);
    }
    if slot.is_none() && location == ParamLocation::Path {
        let decl = match family {
            Family::OpenApi3 => {
                json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}})
            }
            Family::Swagger2 => {
                json!({"name": name, "in": "path", "required": true, "type": "string"})
            }
        };
        slot = Some(Slot::Append(decl));
    }
    let slot =
        slot.ok_or_else(|| format!("{}: not found, or declared in another file", where_()))?;
    let op = op_mut(doc, route, method)
        .ok_or_else(|| format!("{}: the operation is not an inline object", where_()))?;
    let list = op.entry("parameters").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    let list = list
        .as_array_mut()
        .ok_or_else(|| format!("{}: parameters is not a list", where_()))?;
    let index = match slot {
        Slot::Op(i, inline) => {
            if let Some(p) = inline {
                list[i] = p;
            }
            i
        }
        Slot::Append(p) => {
            list.push(p);
            list.len() - 1
        }
    };
    list[index]
        .as_object_mut()
        .ok_or_else(|| format!("{}: not an object", where_()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prov() -> Provenance {
        Provenance {
            replaced: None,
            generator: "m".into(),
            template: "t@1".into(),
            date: "2026-01-01".into(),
        }
    }

    #[test]
    fn ref_and_path_level_parameters_become_operation_level() {
        let mut doc = json!({
            "openapi": "3.0.0",
            "paths": {"/a/{id}": {
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
                "get": {"parameters": [{"$ref": "#/components/parameters/Q"}], "responses": {}},
                "put": {"responses": {}}
            }},
            "components": {"parameters": {"Q": {"name": "q", "in": "query", "schema": {"type": "string"}}}}
        });
        let f = Family::OpenApi3;
        set_param_field(
            &mut doc,
            f,
            "/a/{id}",
            Method::Get,
            "q",
            ParamLocation::Query,
            Field::Example,
            json!("x"),
            Some(&prov()),
        )
        .unwrap();
        set_param_field(
            &mut doc,
            f,
            "/a/{id}",
            Method::Get,
            "id",
            ParamLocation::Path,
            Field::Description,
            json!("The id."),
            Some(&prov()),
        )
        .unwrap();
        let get = &doc["paths"]["/a/{id}"]["get"];
        assert_eq!(get["parameters"][0]["example"], "x");
        assert_eq!(
            get["parameters"][0]["x-shortlist-generated"]["example"]["generator"],
            "m"
        );
        assert_eq!(get["parameters"][1]["description"], "The id.");
        assert_eq!(get["parameters"][1]["schema"]["type"], "integer");
        // The shared declarations are untouched.
        assert!(doc["components"]["parameters"]["Q"]
            .get("example")
            .is_none());
        assert!(doc["paths"]["/a/{id}"]["parameters"][0]
            .get("description")
            .is_none());
        assert!(doc["paths"]["/a/{id}"]["put"].get("parameters").is_none());
    }

    #[test]
    fn undeclared_path_parameters_are_declared_and_descriptions_sit_after_the_summary() {
        let mut doc = json!({"swagger": "2.0", "paths": {"/b/{x}": {"get": {"operationId": "g", "summary": "S", "responses": {}}}}});
        let f = Family::Swagger2;
        set_param_field(
            &mut doc,
            f,
            "/b/{x}",
            Method::Get,
            "x",
            ParamLocation::Path,
            Field::Example,
            json!("v"),
            None,
        )
        .unwrap();
        set_op_field(
            &mut doc,
            f,
            "/b/{x}",
            Method::Get,
            Field::Description,
            json!("D."),
            Some(&prov()),
        )
        .unwrap();
        let get = &doc["paths"]["/b/{x}"]["get"];
        assert_eq!(
            get["parameters"][0],
            json!({"name": "x", "in": "path", "required": true, "type": "string", "x-example": "v"})
        );
        let keys: Vec<&String> = get.as_object().unwrap().keys().collect();
        assert_eq!(keys[..3], ["operationId", "summary", "description"]);
        assert!(set_param_field(
            &mut doc,
            f,
            "/b/{x}",
            Method::Get,
            "nope",
            ParamLocation::Query,
            Field::Example,
            json!(1),
            None
        )
        .is_err());
    }
}
