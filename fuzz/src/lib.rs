//! Harnesses behind the fuzz targets in `fuzz_targets/`: each target is one line that calls
//! a function here, so the logic (and the invariants it asserts) can be read in one place.
//!
//! Every harness calls the same public functions the product calls, in the same order:
//!
//! - [`spec_load`]: bytes -> `source::read_document` -> `normalize::normalize` ->
//!   `naming::assign` -> `invoke::input_schema` -> `validate` -> `build_request`.
//! - [`ref_resolve`]: a generated (or JSON) document with components and `$ref`s, cycles,
//!   siblings, chains and refs into sibling files -> `Resolver::inline_schema` / `deref`,
//!   then `normalize`.
//! - [`invoke_args`]: a real endpoint of the example catalogs plus fuzzed arguments ->
//!   `validate` -> `build_request`.
//!
//! A harness panics (which libFuzzer reports as a crash) when the code under test panics or
//! when an invariant fails; every invariant is a promise made in the docs of the code
//! under test, quoted next to its check.

use arbitrary::{Result as AResult, Unstructured};
use regex::Regex;
use serde_json::{json, Map, Number, Value};
use shortlist::catalog::resolve::{ref_of, Resolver};
use shortlist::catalog::{naming, normalize, source, ApiConfig, Catalog, CatalogConfig, Endpoint};
use shortlist::invoke::auth::Credentials;
use shortlist::invoke::request::{build_request, PreparedRequest};
use shortlist::invoke::{arguments, input_schema, validate, ArgTarget, ValidArgs};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use url::Url;

// ---------------------------------------------------------------------------------------
// Scratch folder with sibling files, so `$ref`s into other files are exercised for real.
// ---------------------------------------------------------------------------------------

/// Sibling documents the fuzzed spec may point into (`common.yaml#/...`), including refs
/// back into the spec itself, cross-file cycles, a chain, and a file that does not parse.
const SIBLINGS: &[(&str, &str)] = &[
    (
        "common.yaml",
        "components:\n  schemas:\n    Pet:\n      type: object\n      properties:\n        id: {type: integer}\n        owner: {$ref: 'spec.json#/components/schemas/S0'}\n        self: {$ref: '#/components/schemas/Pet'}\n        chain: {$ref: 'defs.json#/definitions/A'}\n    Loop: {$ref: 'defs.json#/definitions/Loop'}\n  parameters:\n    Limit: {name: limit, in: query, schema: {type: integer, maximum: 50}}\n    Id: {name: id, in: path, required: true, schema: {$ref: '#/components/schemas/Pet/properties/id'}}\n",
    ),
    (
        "defs.json",
        r##"{"definitions": {"A": {"$ref": "#/definitions/B"}, "B": {"$ref": "common.yaml#/components/schemas/Pet"},
            "Loop": {"$ref": "common.yaml#/components/schemas/Loop"}, "Self": {"$ref": "#/definitions/Self"},
            "Str": {"type": "string", "description": "a string"}}}"##,
    ),
    ("broken.yaml", "a: [\n  - b: {\n"),
    (
        "sub/nested.json",
        r##"{"x": {"$ref": "../common.yaml#/components/schemas/Pet"}, "up": {"$ref": "../../etc/passwd#/x"}}"##,
    ),
];

/// A placeholder for the spec itself, so `spec.json#/...` from a sibling resolves (to the
/// in-memory document: the resolver maps the spec's path to document 0).
const SPEC_PLACEHOLDER: &str = r#"{"openapi": "3.1.0", "paths": {}}"#;

/// The per-process scratch folder (canonical), created once with the sibling files.
pub fn scratch_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("shortlist-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).expect("create scratch dir");
        for (name, text) in SIBLINGS {
            std::fs::write(dir.join(name), text).expect("write sibling");
        }
        std::fs::write(dir.join("spec.json"), SPEC_PLACEHOLDER).expect("write spec");
        dir.canonicalize().expect("canonical scratch dir")
    })
}

/// `SHORTLIST_FUZZ_DEBUG=1` prints what a harness generated (to turn a crash into a
/// regression test).
pub fn debug() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SHORTLIST_FUZZ_DEBUG").is_some())
}

// ---------------------------------------------------------------------------------------
// spec_load
// ---------------------------------------------------------------------------------------

/// Spec bytes through the loader, exactly as `catalog::load_one` does it (minus its
/// `catch_unwind`, which would hide the panics we are looking for), then through tool
/// naming, the tool schema, validation and request building.
pub fn spec_load(data: &[u8]) {
    let dir = scratch_dir();
    let path = dir.join("fuzzed.json");
    std::fs::write(&path, data).expect("write fuzzed spec");
    let Ok(parsed) = source::read_document(&path) else {
        return;
    };
    let Ok(mut n) = normalize::normalize(&path, "fuzz", parsed.value, false) else {
        return;
    };
    naming::assign(&mut n.endpoints, false);
    check_endpoints(&n.endpoints);
    for ep in n.endpoints.iter().take(64) {
        let args = synthetic_args(ep);
        if let Ok(valid) = validate(ep, &args) {
            check_revalidates(ep, &valid);
            if let Ok(req) = build_request(ep, None, &valid, &Credentials::default()) {
                check_request(ep, None, &req);
            }
        }
    }
}

/// `^[a-zA-Z0-9_-]{1,64}$`: what `naming` promises for tool names.
fn tool_name_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^[a-zA-Z0-9_-]{1,64}$").expect("regex"))
}

/// `^[a-zA-Z0-9_.-]{1,64}$`: what `invoke::args` promises for argument names.
fn arg_name_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^[a-zA-Z0-9_.-]{1,64}$").expect("regex"))
}

/// Tool names are valid and unique (case-insensitively); each tool's input schema is a
/// strict object schema whose property names strict clients accept.
pub fn check_endpoints(endpoints: &[Endpoint]) {
    let mut seen = std::collections::HashSet::new();
    for ep in endpoints {
        assert!(
            tool_name_re().is_match(&ep.tool_name),
            "invalid tool name {:?}",
            ep.tool_name
        );
        assert!(
            seen.insert(ep.tool_name.to_ascii_lowercase()),
            "duplicate tool name {:?}",
            ep.tool_name
        );
        let schema = input_schema(ep);
        assert_eq!(schema["type"], "object", "{schema}");
        assert_eq!(schema["additionalProperties"], false, "{schema}");
        let props = schema["properties"].as_object().expect("properties object");
        for name in props.keys() {
            assert!(
                arg_name_re().is_match(name),
                "invalid argument name {name:?}"
            );
        }
        if let Some(req) = schema.get("required") {
            for r in req.as_array().expect("required is an array") {
                let r = r.as_str().expect("required names are strings");
                assert!(props.contains_key(r), "required '{r}' is not a property");
            }
        }
    }
}

/// Plausible arguments for an endpoint: each argument's example, first enum value, or a
/// value of its type.
fn synthetic_args(ep: &Endpoint) -> Map<String, Value> {
    let schema = input_schema(ep);
    let mut out = Map::new();
    if let Some(props) = schema["properties"].as_object() {
        for (name, s) in props {
            let v = s
                .get("examples")
                .and_then(|e| e.get(0))
                .or_else(|| s.get("enum").and_then(|e| e.get(0)))
                .cloned()
                .unwrap_or_else(|| value_of_type(s));
            out.insert(name.clone(), v);
        }
    }
    out
}

fn value_of_type(s: &Value) -> Value {
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(a)) => a.iter().find_map(Value::as_str).unwrap_or("string"),
        _ => "string",
    };
    match ty {
        "integer" => json!(1),
        "number" => json!(1.5),
        "boolean" => json!(true),
        "array" => json!(["x"]),
        "object" => json!({}),
        "null" => Value::Null,
        _ => json!("x"),
    }
}

// ---------------------------------------------------------------------------------------
// ref_resolve
// ---------------------------------------------------------------------------------------

/// Inlining and dereferencing a document full of `$ref`s. The input is either a JSON
/// document (seeded from real specs) or bytes from which a document with components,
/// cycles, sibling keys, chains, odd pointers and cross-file refs is generated.
pub fn ref_resolve(data: &[u8]) {
    let dir = scratch_dir();
    let path = dir.join("spec.json");
    let (doc, budgets) = match serde_json::from_slice::<Value>(data) {
        Ok(v @ Value::Object(_)) => (v, vec![300, 1500, 7]),
        _ => {
            let mut u = Unstructured::new(data);
            match gen_ref_doc(&mut u) {
                Ok(x) => x,
                Err(_) => return,
            }
        }
    };
    // Every schema-like thing the document holds: component entries and the raw `$ref`
    // objects found anywhere (bounded).
    let mut entries = Vec::new();
    for section in [
        "/components/schemas",
        "/components/parameters",
        "/components/requestBodies",
        "/components/responses",
        "/definitions",
        "/parameters",
    ] {
        if let Some(m) = doc.pointer(section).and_then(Value::as_object) {
            entries.extend(m.values().take(4).cloned());
        }
    }
    collect_refs(&doc, &mut entries, 0);
    // Each entry is inlined with one of the budgets: enough variety, and an execution
    // stays in the milliseconds (inlining allocates a lot, and ASan makes that slow).
    entries.truncate(12);
    if debug() {
        eprintln!("document: {doc}\nbudgets: {budgets:?}");
    }

    let mut res = Resolver::new(&path, doc.clone());
    for (i, e) in entries.iter().enumerate() {
        let out = res.inline_schema(0, e, "#/fuzz", budgets[i % budgets.len()]);
        check_inlined(&out);
        if let Ok((_, v)) = res.deref(0, e) {
            // `deref` follows the chain "until a non-reference is reached".
            assert!(ref_of(&v).is_none(), "deref returned a reference: {v}");
        }
    }
    // And the whole spec through normalization, which resolves parameters, bodies and
    // response schemas of every operation.
    if let Ok(n) = normalize::normalize(&path, "fuzz", doc, false) {
        // (Tool names and schemas are spec_load's business.)
        for ep in &n.endpoints {
            for p in &ep.parameters {
                check_inlined(&p.schema);
            }
            if let Some(b) = &ep.request_body {
                check_inlined(&b.schema);
            }
        }
    }
}

/// Every `{"$ref": "..."}` object in a value, up to a bound.
fn collect_refs(v: &Value, out: &mut Vec<Value>, depth: usize) {
    if depth > 40 || out.len() >= 12 {
        return;
    }
    match v {
        Value::Object(m) => {
            if ref_of(v).is_some() {
                out.push(v.clone());
            }
            for c in m.values() {
                collect_refs(c, out, depth + 1);
            }
        }
        Value::Array(a) => a.iter().for_each(|c| collect_refs(c, out, depth + 1)),
        _ => {}
    }
}

/// The resolver module promises "a self-contained Endpoint": an inlined schema holds no
/// `$ref` left to follow (recursion and truncation leave placeholders, dangling refs are
/// dropped with a warning).
pub fn check_inlined(v: &Value) {
    fn walk(v: &Value, at: &mut String) {
        match v {
            Value::Object(m) => {
                if let Some(r) = ref_of(v) {
                    panic!("unresolved $ref '{r}' left at {at} in an inlined schema");
                }
                for (k, c) in m {
                    let len = at.len();
                    at.push('/');
                    at.push_str(k);
                    walk(c, at);
                    at.truncate(len);
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    let len = at.len();
                    at.push_str(&format!("/{i}"));
                    walk(c, at);
                    at.truncate(len);
                }
            }
            _ => {}
        }
    }
    walk(v, &mut String::from("#"));
}

/// A generated spec: `n` component schemas and parameters that point at each other (and
/// into sibling files) in every way a real spec can, plus paths using them.
fn gen_ref_doc(u: &mut Unstructured) -> AResult<(Value, Vec<usize>)> {
    let n_schemas = u.int_in_range(1..=8)?;
    let n_params = u.int_in_range(0..=4)?;
    let mut g = RefGen {
        n_schemas,
        n_params,
    };
    let mut schemas = Map::new();
    for i in 0..n_schemas {
        schemas.insert(format!("S{i}"), g.schema(u, 0)?);
    }
    let mut params = Map::new();
    for i in 0..n_params {
        params.insert(format!("P{i}"), g.param(u)?);
    }
    let mut paths = Map::new();
    let n_ops = u.int_in_range(1..=3)?;
    for i in 0..n_ops {
        let mut op_params = Vec::new();
        for _ in 0..u.int_in_range(0..=3)? {
            op_params.push(if u.arbitrary()? {
                json!({"$ref": format!("#/components/parameters/P{}", u.int_in_range(0..=g.n_params)?)})
            } else {
                g.param(u)?
            });
        }
        let body = g.schema(u, 0)?;
        let resp = g.schema(u, 0)?;
        paths.insert(
            format!("/r{i}/{{id}}"),
            json!({"post": {
                "operationId": format!("op{i}"),
                "parameters": op_params,
                "requestBody": {"content": {"application/json": {"schema": body}}},
                "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": resp}}}}
            }}),
        );
    }
    let doc = json!({
        "openapi": "3.1.0",
        "info": {"title": "fuzz", "version": "1"},
        "servers": [{"url": "https://api.example.com/v1"}],
        "paths": paths,
        "components": {"schemas": schemas, "parameters": params}
    });
    let budgets = vec![u.int_in_range(0..=64)?, 300, 1500];
    Ok((doc, budgets))
}

struct RefGen {
    n_schemas: usize,
    n_params: usize,
}

impl RefGen {
    const MAX_DEPTH: usize = 6;

    fn reference(&self, u: &mut Unstructured) -> AResult<String> {
        let s = u.int_in_range(0..=self.n_schemas)?; // one past the end: dangling
        Ok(match u.int_in_range(0..=13)? {
            0..=4 => format!("#/components/schemas/S{s}"),
            5 => format!(
                "#/components/schemas/S{s}/properties/p{}",
                u.int_in_range(0..=2)?
            ),
            6 => format!("#components/schemas/S{s}"), // missing slash, seen in the wild
            7 => format!("#/components/schemas/%53{s}"), // percent-encoded 'S'
            8 => "#".to_string(),
            9 => (*u.choose(&[
                "common.yaml#/components/schemas/Pet",
                "common.yaml#/components/schemas/Loop",
                "defs.json#/definitions/A",
                "defs.json#/definitions/Self",
                "defs.json",
                "spec.json#/components/schemas/S0",
                "sub/nested.json#/x",
                "sub/nested.json#/up",
                "broken.yaml#/a",
                "missing.yaml#/a",
                "../etc/passwd",
                "/etc/hostname#/x",
                "https://example.com/x.json#/a",
                "common.yaml#/components/parameters/Id",
            ])?)
            .to_string(),
            10 => format!(
                "#/components/parameters/P{}",
                u.int_in_range(0..=self.n_params)?
            ),
            11 => "#/paths".to_string(),
            12 => format!("#/components/schemas/S{s}/allOf/0"),
            _ => {
                let raw: String = u.arbitrary()?;
                raw.chars().take(40).collect()
            }
        })
    }

    fn schema(&mut self, u: &mut Unstructured, depth: usize) -> AResult<Value> {
        let leaf = depth >= Self::MAX_DEPTH;
        let kind = if leaf {
            u.int_in_range(0..=1)?
        } else {
            u.int_in_range(0..=7)?
        };
        Ok(match kind {
            0 => json!({"type": *u.choose(&["string", "integer", "number", "boolean", "object"])?}),
            1 => json!({"$ref": self.reference(u)?}),
            2 => {
                // A reference with sibling keys (3.1 allows them; 3.0 specs use them anyway).
                let mut m = Map::new();
                m.insert("$ref".into(), Value::String(self.reference(u)?));
                for _ in 0..u.int_in_range(1..=3)? {
                    let k = *u.choose(&[
                        "description",
                        "properties",
                        "items",
                        "nullable",
                        "allOf",
                        "type",
                        "default",
                    ])?;
                    let v = match k {
                        "description" => json!("sibling description"),
                        "nullable" => json!(true),
                        "type" => json!("object"),
                        "default" => json!({"$ref": "#/not/a/schema"}),
                        "items" => self.schema(u, depth + 1)?,
                        "allOf" => json!([self.schema(u, depth + 1)?]),
                        _ => json!({"p0": self.schema(u, depth + 1)?}),
                    };
                    m.insert(k.into(), v);
                }
                Value::Object(m)
            }
            3 => {
                let mut props = Map::new();
                for i in 0..u.int_in_range(0..=3)? {
                    props.insert(format!("p{i}"), self.schema(u, depth + 1)?);
                }
                json!({"type": "object", "properties": props, "required": ["p0"]})
            }
            4 => json!({"type": "array", "items": self.schema(u, depth + 1)?}),
            5 => {
                let key = *u.choose(&["allOf", "anyOf", "oneOf"])?;
                let mut parts = Vec::new();
                for _ in 0..u.int_in_range(1..=3)? {
                    parts.push(self.schema(u, depth + 1)?);
                }
                let mut m = Map::new();
                m.insert(key.to_string(), Value::Array(parts));
                Value::Object(m)
            }
            6 => json!({"type": "object", "additionalProperties": self.schema(u, depth + 1)?}),
            _ => json!({"not": self.schema(u, depth + 1)?, "description": "d"}),
        })
    }

    fn param(&mut self, u: &mut Unstructured) -> AResult<Value> {
        let loc = *u.choose(&["query", "path", "header", "cookie", "body", "nowhere"])?;
        let name = *u.choose(&["id", "q", "limit", "X-Key", "id", ""])?;
        Ok(json!({"name": name, "in": loc, "schema": self.schema(u, 2)?}))
    }
}

// ---------------------------------------------------------------------------------------
// invoke_args
// ---------------------------------------------------------------------------------------

/// The endpoints of the example catalog (`catalogs/catalog.toml`: TMDB, Spotify, Musixmatch,
/// Adyen), loaded once.
pub fn catalog() -> &'static Catalog {
    static CAT: OnceLock<Catalog> = OnceLock::new();
    CAT.get_or_init(|| {
        let toml = Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalogs/catalog.toml");
        let cfg = CatalogConfig::load(&toml).expect("catalogs/catalog.toml loads");
        let cat = Catalog::load(&cfg);
        assert!(
            cat.endpoints.len() > 100,
            "example catalog did not load: {:?}",
            cat.errors().collect::<Vec<_>>()
        );
        cat
    })
}

/// Base URLs a config may set: odd but legal ones (ports, user info, trailing slashes,
/// queries, IPv6, percent-encoded paths).
const BASE_URLS: &[&str] = &[
    "https://api.example.com",
    "https://api.example.com/",
    "http://127.0.0.1:8080/base/",
    "https://user:pw@api.example.com:8443/v1/x?k=1",
    "http://[::1]:9/a%2Fb",
    "https://api.example.com/v1#frag",
    "https://xn--bcher-kva.example/%7Euser",
];

/// A catalog endpoint called with fuzzed arguments, configuration and credentials.
pub fn invoke_args(data: &[u8]) {
    let cat = catalog();
    let mut u = Unstructured::new(data);
    let Ok(i) = u.int_in_range(0..=cat.endpoints.len() - 1) else {
        return;
    };
    let ep = &cat.endpoints[i];
    let Ok(cfg_pick) = u.int_in_range(0..=2u8) else {
        return;
    };
    let mut cfg: Option<ApiConfig> = match cfg_pick {
        0 => None,
        _ => cat.api_config(&ep.api).cloned(),
    };
    if cfg_pick == 2 {
        if let (Some(c), Ok(b)) = (cfg.as_mut(), u.choose(BASE_URLS)) {
            c.base_url = Some(b.to_string());
        }
    }
    let creds = match u.int_in_range(0..=2u8).unwrap_or(0) {
        0 => Credentials::default(),
        1 => Credentials {
            headers: vec![("Authorization".into(), "Bearer s3cr3t".into())],
            query: vec!["api_key=s3cr3t".into()],
        },
        _ => Credentials {
            headers: vec![("X-Api-Key".into(), "k".into())],
            query: vec![],
        },
    };
    let args = match u.arbitrary::<bool>() {
        // Raw JSON text, the way a client sends it.
        Ok(true) => match serde_json::from_slice::<Value>(u.take_rest()) {
            Ok(Value::Object(m)) => m,
            _ => return,
        },
        _ => match gen_args(&mut u, ep) {
            Ok(m) => m,
            Err(_) => return,
        },
    };
    if debug() {
        eprintln!(
            "endpoint: {} ({} {})\nbase_url: {:?}\ncredentials: {creds:?}\narguments: {}",
            ep.tool_name,
            ep.method.as_str(),
            ep.path,
            cfg.as_ref().and_then(|c| c.base_url.as_deref()),
            Value::Object(args.clone())
        );
    }
    let Ok(valid) = validate(ep, &args) else {
        return;
    };
    check_revalidates(ep, &valid);
    if let Ok(req) = build_request(ep, cfg.as_ref(), &valid, &creds) {
        check_request(ep, cfg.as_ref(), &req);
    }
}

/// Arguments named mostly like the endpoint's own, with values from [`gen_value`].
fn gen_args(u: &mut Unstructured, ep: &Endpoint) -> AResult<Map<String, Value>> {
    let names: Vec<String> = arguments(ep).into_iter().map(|a| a.name).collect();
    let mut m = Map::new();
    for _ in 0..u.int_in_range(0..=names.len() + 1)? {
        let name = if !names.is_empty() && u.ratio(7, 8)? {
            u.choose(&names)?.clone()
        } else {
            gen_string(u)?
        };
        m.insert(name, gen_value(u, 0)?);
    }
    Ok(m)
}

/// Strings that have broken URL builders somewhere.
const NASTY: &[&str] = &[
    "",
    ".",
    "..",
    "../",
    "/..",
    "..%2f",
    "%2e%2e",
    "%2E",
    "%2e",
    "./x",
    "a/b",
    "/",
    "//",
    "?",
    "#",
    "@evil.example",
    "https://evil.example/",
    "//evil.example",
    "\\",
    "\\\\evil",
    "\r\n",
    "\n",
    "\0",
    " ",
    "\t",
    "{id}",
    "}",
    "{",
    "%",
    "%zz",
    "%00",
    "é",
    "\u{202e}",
    "\u{feff}",
    "a;b=c",
    "a,b",
    ";",
    "=",
    "&x=1",
    "[",
    "]",
    "true",
    "FALSE",
    "null",
    "1e400",
    "-0",
    "42",
    " 42 ",
    "4.5",
    "9007199254740993",
    "[1,2]",
    "[\"a\"]",
    "{\"a\":1}",
    "{",
    "0x10",
    "NaN",
    "inf",
    "日本",
    "\u{1F600}",
    ":",
    "a:b@c",
    "%40",
    "~",
    "Bearer x",
];

fn gen_string(u: &mut Unstructured) -> AResult<String> {
    Ok(match u.int_in_range(0..=3)? {
        0 | 1 => u.choose(NASTY)?.to_string(),
        2 => format!("{}{}", u.choose(NASTY)?, u.choose(NASTY)?),
        _ => {
            let s: String = u.arbitrary()?;
            s.chars().take(64).collect()
        }
    })
}

/// An arbitrary JSON value, biased towards the edges: big and fractional numbers, nasty
/// strings, nesting.
pub fn gen_value(u: &mut Unstructured, depth: usize) -> AResult<Value> {
    let top = if depth >= 4 { 4 } else { 6 };
    Ok(match u.int_in_range(0..=top)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => match u.int_in_range(0..=3)? {
            0 => Value::from(*u.choose(&[0i64, 1, -1, 10, 50, 101, i64::MAX, i64::MIN])?),
            1 => Value::from(u.arbitrary::<i64>()?),
            2 => Value::from(u.arbitrary::<u64>()?),
            _ => {
                let f: f64 = u.arbitrary()?;
                Number::from_f64(f)
                    .map(Value::Number)
                    .unwrap_or(Value::Null)
            }
        },
        3 | 4 => Value::String(gen_string(u)?),
        5 => {
            let mut a = Vec::new();
            for _ in 0..u.int_in_range(0..=4)? {
                a.push(gen_value(u, depth + 1)?);
            }
            Value::Array(a)
        }
        _ => {
            let mut m = Map::new();
            for _ in 0..u.int_in_range(0..=4)? {
                m.insert(gen_string(u)?, gen_value(u, depth + 1)?);
            }
            Value::Object(m)
        }
    })
}

// ---------------------------------------------------------------------------------------
// Invariants on validation and requests
// ---------------------------------------------------------------------------------------

/// What validation returns is sent as-is, so it must itself be valid, and must not change
/// when validated again (coercion reached a fixed point).
pub fn check_revalidates(ep: &Endpoint, valid: &ValidArgs) {
    let mut again = Map::new();
    for a in arguments(ep) {
        let v = match a.target {
            ArgTarget::Param(i) => valid.param(i),
            ArgTarget::Body => valid.body(),
        };
        if let Some(v) = v {
            again.insert(a.name, v.clone());
        }
    }
    match validate(ep, &again) {
        Ok(v2) => assert_eq!(&v2, valid, "coerced arguments change when validated again"),
        Err(e) => panic!("coerced arguments {again:?} fail validation: {e}"),
    }
}

/// The request builder's module docs: "the request goes to the catalog's host and to the
/// path the endpoint names, whatever the arguments hold".
pub fn check_request(ep: &Endpoint, cfg: Option<&ApiConfig>, req: &PreparedRequest) {
    let raw = cfg
        .and_then(|c| c.base_url.as_deref())
        .or_else(|| ep.servers.first().map(String::as_str))
        .expect("a request was built, so there is a base URL");
    let base = Url::parse(raw).expect("a request was built, so the base URL parses");
    let url = &req.url;
    assert_eq!(url.scheme(), base.scheme(), "scheme changed: {url}");
    assert_eq!(url.host_str(), base.host_str(), "host changed: {url}");
    assert_eq!(
        url.port_or_known_default(),
        base.port_or_known_default(),
        "port changed: {url}"
    );
    // What goes on the wire is the URL's text; a server parsing it must see the same URL.
    let reparsed = Url::parse(url.as_str()).expect("built URL re-parses");
    assert_eq!(&reparsed, url, "URL does not survive a round trip");
    assert!(url.fragment().is_none(), "fragment in request URL: {url}");

    // The path is the base path followed by the template: its literal text as written
    // (percent-encoded where a URL needs it) and each `{parameter}` replaced by a value
    // that stays inside one segment.
    let base_path = base.path().trim_end_matches('/');
    let path = url.path();
    let rest = path
        .strip_prefix(base_path)
        .unwrap_or_else(|| panic!("path {path:?} does not start with the base path {base_path:?}"));
    let template = if ep.path.starts_with('/') {
        ep.path.clone()
    } else {
        format!("/{}", ep.path)
    };
    let re = Regex::new(&template_regex(&template)).expect("template regex");
    assert!(
        re.is_match(rest),
        "path {rest:?} does not follow the template {template:?} (regex {re})"
    );
    assert!(
        !path.split('/').any(|seg| seg == "." || seg == ".."),
        "dot segment in {path:?}"
    );
    // Messages and logs show this URL, so it carries no credential: no query (API keys
    // live there) and no user info.
    let shown = Url::parse(&req.display_url).expect("display URL parses");
    assert!(
        shown.query().is_none() && !req.display_url.contains("s3cr3t"),
        "display URL shows the query: {}",
        req.display_url
    );
    assert!(
        shown.username().is_empty() && shown.password().is_none(),
        "display URL shows user info: {}",
        req.display_url
    );
}

/// What the request builder percent-encodes in a template's literal text (its
/// `PATH_LITERAL`): controls, space, `" # < > ? ` { } \`.
const TEMPLATE_LITERAL: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'\\');

/// `^literal[^/]*literal...$` for a path template: literal text encoded as the builder
/// encodes it, each `{name}` any text without a `/`.
fn template_regex(template: &str) -> String {
    let lit = |s: &str| {
        regex::escape(&percent_encoding::utf8_percent_encode(s, TEMPLATE_LITERAL).to_string())
    };
    let mut re = String::from("^");
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        re.push_str(&lit(&rest[..open]));
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        re.push_str("[^/]*");
        rest = &after[close + 1..];
    }
    re.push_str(&lit(rest));
    re.push('$');
    re
}

// ---------------------------------------------------------------------------------------
// spec_nesting
// ---------------------------------------------------------------------------------------

/// Openers and closers of one nesting level, in the syntaxes a spec can use.
const NESTINGS: &[(&str, &str, &str)] = &[
    // (format, opener, closer)
    ("json", "{\"a\":", "}"),
    ("json", "[", "]"),
    ("yaml", "[", "]"),
    ("yaml", "{a: ", "}"),
    ("yaml", "- ", ""),
    ("yaml", "? ", ""),
    ("yaml", "[{a: ", "}]"),
];

/// Deeply nested documents, in every syntax: whatever the depth (up to 200,000 levels)
/// reading finishes (libFuzzer's timeout catches a hang), and a document nested
/// `MAX_DEPTH` levels or more is refused with the depth error, while one below the limit
/// loads. The fuzzer picks the syntax, the depth and, sometimes, a byte to corrupt.
pub fn spec_nesting(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(&(format, open, close)) = u.choose(NESTINGS) else {
        return;
    };
    let Ok(depth) = u.int_in_range(0usize..=200_000) else {
        return;
    };
    // Most inputs stay near the limit, where off-by-one errors live.
    let depth = if u.ratio(1, 2).unwrap_or(false) {
        depth % 260
    } else {
        depth
    };
    let levels_per_opener = if open == "[{a: " { 2 } else { 1 };
    let mut text = String::new();
    if format == "json" {
        text.push_str("{\"openapi\":\"3.0.0\",\"paths\":{},\"x\":");
    } else {
        text.push_str("openapi: 3.0.0\npaths: {}\nx:\n  ");
    }
    for _ in 0..depth {
        text.push_str(open);
    }
    text.push('1');
    for _ in 0..depth {
        text.push_str(close);
    }
    if format == "json" {
        text.push('}');
    }
    text.push('\n');
    let corrupt = u.ratio(1, 4).unwrap_or(false);
    let mut bytes = text.into_bytes();
    if corrupt {
        if let (Ok(at), Ok(b)) = (u.int_in_range(0..=bytes.len() - 1), u.arbitrary::<u8>()) {
            bytes[at] = b;
        }
    }
    let dir = scratch_dir();
    let path = dir.join(if format == "json" {
        "nested.json"
    } else {
        "nested.yaml"
    });
    std::fs::write(&path, &bytes).expect("write nested spec");
    let result = source::read_document(&path);
    if debug() {
        eprintln!(
            "{format} {open:?} x {depth}, corrupt: {corrupt}: {:?}",
            result.as_ref().map(|_| "ok").map_err(|e| &e.message)
        );
    }
    if corrupt {
        return;
    }
    // The root mapping is level 1; block sequences and explicit keys hang below `x:`.
    let total = 1 + depth * levels_per_opener;
    let limit = shortlist::catalog::yaml::MAX_DEPTH;
    match result {
        Ok(_) => assert!(total < limit, "{total} levels accepted (limit {limit})"),
        Err(e) => {
            assert!(
                total >= limit && e.message.contains("nested too deeply"),
                "{format} {open:?} x {depth} ({total} levels): {}",
                e.message
            );
            assert!(e.file == path, "the error names another file: {e}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// redact_secrets
// ---------------------------------------------------------------------------------------

/// One character of a secret spelled one of the ways encoders spell it.
fn spell(c: char, how: u8) -> String {
    let mut units = [0u16; 2];
    let utf16 = c.encode_utf16(&mut units);
    let mut buf = [0u8; 4];
    let utf8 = c.encode_utf8(&mut buf).as_bytes();
    match how % 8 {
        1 => utf16.iter().map(|u| format!("\\u{u:04x}")).collect(),
        2 => utf16.iter().map(|u| format!("\\u{u:04X}")).collect(),
        3 => utf8.iter().map(|b| format!("%{b:02X}")).collect(),
        4 => utf8.iter().map(|b| format!("%{b:02x}")).collect(),
        5 if c.is_ascii_punctuation() => format!("\\{c}"),
        6 if c == ' ' => "+".into(),
        7 => utf16.iter().map(|u| format!("\\\\u{u:04x}")).collect(),
        _ => c.to_string(),
    }
}

/// Whole-text encoders real servers use: JSON (serde), PHP's `json_encode` (escaped
/// slashes, `\uXXXX` for non-ASCII), JSON inside JSON, form encoding, base64.
fn encode_text(text: &str, how: u8) -> String {
    match how % 5 {
        0 => serde_json::to_string(text).unwrap_or_default(),
        1 => text
            .chars()
            .map(|c| match c {
                '/' => "\\/".to_string(),
                c if c.is_ascii() => {
                    let quoted = serde_json::to_string(&c.to_string()).unwrap_or_default();
                    quoted[1..quoted.len() - 1].to_string()
                }
                c => spell(c, 1),
            })
            .collect(),
        2 => serde_json::to_string(&serde_json::to_string(text).unwrap_or_default())
            .unwrap_or_default(),
        3 => url::form_urlencoded::byte_serialize(text.as_bytes()).collect(),
        _ => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.encode(text)
        }
    }
}

/// A secret registered with a `Redactor`, embedded in a text in a spelling the fuzzer
/// picks (per character, or by a whole-text encoder), must not survive redaction: not in
/// `redact`, not at the end of a cut text in `redact_cut`, and not in the outcome of an
/// upstream error or success response shaped from that text. And nothing panics
/// (redaction slices text at byte offsets).
pub fn redact_secrets(data: &[u8]) {
    use shortlist::invoke::redact::{Redactor, MASK};
    let mut u = Unstructured::new(data);
    let (Ok(secret), Ok(prefix), Ok(suffix)) = (
        u.arbitrary::<String>(),
        u.arbitrary::<String>(),
        u.arbitrary::<String>(),
    ) else {
        return;
    };
    let secret: String = secret
        .chars()
        .filter(|c| !c.is_control())
        .take(40)
        .collect();
    if secret.chars().count() < 6 || secret.contains(MASK) {
        return;
    }
    let mut r = Redactor::default();
    r.add(&secret);
    let per_char = u.ratio(2, 3).unwrap_or(true);
    let (text, needle) = if per_char {
        let spelled: Vec<String> = secret
            .chars()
            .map(|c| spell(c, u.arbitrary::<u8>().unwrap_or(0)))
            .collect();
        let needle = spelled.concat();
        // A cut text ends inside the secret: at least four characters of it must go.
        let keep = u.int_in_range(4..=spelled.len()).unwrap_or(spelled.len());
        let cut_part = spelled[..keep].concat();
        let cut = format!("{prefix}{cut_part}");
        // Masks are replaced by a control character (which no spelling holds) before the
        // checks, so a secret resembling the mask's own text is not mistaken for a leak.
        let out = r.redact_cut(&cut).replace(MASK, "\u{1}");
        assert!(
            !out.ends_with(&cut_part),
            "cut secret {secret:?} spelled {cut_part:?} survived: {out:?}"
        );
        (format!("{prefix}{needle}{suffix}"), needle)
    } else {
        let how = u.arbitrary::<u8>().unwrap_or(0);
        let whole = encode_text(&format!("{prefix}{secret}{suffix}"), how);
        let needle = if how % 5 == 4 {
            // What base64 of the secret looks like at its alignment in the text, minus
            // the characters shared with its neighbours.
            use base64::Engine;
            let k = prefix.len() % 3;
            let mut padded = vec![0u8; k];
            padded.extend_from_slice(secret.as_bytes());
            let b64 = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&padded);
            let (first, last) = ((8 * k).div_ceil(6), 8 * (k + secret.len()) / 6);
            if last <= first + 8 {
                return;
            }
            b64[first..last].to_string()
        } else {
            // Without the quotes the JSON encoders put around the text (two levels of
            // them for JSON inside JSON).
            let enc = encode_text(&secret, how);
            let (head, tail) = match how % 5 {
                0 => (1, 1),
                2 => (2, 3),
                _ => (0, 0),
            };
            enc[head..enc.len() - tail].to_string()
        };
        (whole, needle)
    };
    if debug() {
        eprintln!("secret: {secret:?}\ntext: {text:?}\nneedle: {needle:?}");
    }
    let out = r.redact(&text).replace(MASK, "\u{1}");
    assert!(
        !out.contains(&needle),
        "secret {secret:?} spelled {needle:?} survived: {out:?}"
    );
    // Through response shaping, as an upstream error and as a success.
    use shortlist::invoke::response::{shape, CappedBody, Limits, ResponseContext, ResponseHead};
    for status in [500u16, 200] {
        let head = ResponseHead {
            status: reqwest::StatusCode::from_u16(status).expect("status"),
            content_type: Some("application/json".into()),
            location: None,
            location_same_origin: false,
        };
        let ctx = ResponseContext {
            method: "GET",
            display_url: "https://api.example.com/x",
            limits: Limits {
                max_bytes: 1 << 20,
                excerpt_chars: 1 << 20,
                max_redirects: 5,
            },
            redactor: &r,
            auth_hint: None,
        };
        let body = CappedBody {
            bytes: text.clone().into_bytes(),
            truncated: false,
            declared_len: None,
        };
        let o = shape(&head, body, &ctx).redacted(&r);
        assert!(
            !o.text.replace(MASK, "\u{1}").contains(&needle),
            "HTTP {status}: secret {secret:?} spelled {needle:?} survived: {:?}",
            o.text
        );
    }
}

/// The process entry point of a fuzz target: libFuzzer's driver over the target's
/// `fuzz_target!`. libFuzzer ships its own `main` in a static archive, but the usearch SIMD
/// library (numkong) also carries a `main` (a CPU probe) in its archive, and the linker took
/// whichever it met first: the targets then ran the probe and exited 0 without fuzzing. A
/// `main` in the target's own object always wins over archive members.
#[macro_export]
macro_rules! libfuzzer_main {
    () => {
        extern "C" {
            fn LLVMFuzzerRunDriver(
                argc: *mut ::std::os::raw::c_int,
                argv: *mut *mut *mut ::std::os::raw::c_char,
                test_one_input: unsafe extern "C" fn(*const u8, usize) -> ::std::os::raw::c_int,
            ) -> ::std::os::raw::c_int;
            fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> ::std::os::raw::c_int;
        }

        #[no_mangle]
        pub extern "C" fn main(
            mut argc: ::std::os::raw::c_int,
            mut argv: *mut *mut ::std::os::raw::c_char,
        ) -> ::std::os::raw::c_int {
            // SAFETY: argc and argv are the process's own, as the C runtime passed them;
            // the callback is the target's libFuzzer entry point.
            unsafe { LLVMFuzzerRunDriver(&mut argc, &mut argv, LLVMFuzzerTestOneInput) }
        }
    };
}
