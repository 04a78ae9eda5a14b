//! What a usable answer looks like, per task: the JSON schema sent as `response_format`,
//! and the checks applied to whatever comes back (servers that ignore the schema, models
//! that echo the operationId, examples that break their parameter's schema).
//!
//! Accepted values are normalized into one canonical shape per task, which is also what the
//! cache stores: `{"description": s}`, `{"summary": s}`, `{"questions": [s]}`,
//! `{"parameters": {name: s}}`, `{"examples": {name: value}}`.

use super::schema_check;
use super::Task;
use crate::catalog::weak::is_weak;
use crate::text::{clean, clip_chars};
use serde_json::{json, Map, Value};

/// Length bounds of generated texts (characters).
const DESCRIPTION_CHARS: usize = 600;
const SUMMARY_CHARS: usize = 300;
const QUESTION_CHARS: usize = 200;
const PARAM_CHARS: usize = 300;
/// Questions kept per endpoint.
pub const MAX_QUESTIONS: usize = 5;

/// What one task asks about: the endpoint's names (for the weakness check) and, for the
/// parameter tasks, each target's name and schema.
#[derive(Debug, Clone, Default)]
pub struct Ask {
    pub operation_id: String,
    pub path: String,
    pub targets: Vec<(String, Value)>,
}

impl Ask {
    pub fn names(&self) -> Vec<String> {
        self.targets.iter().map(|(n, _)| n.clone()).collect()
    }
}

/// The outcome of checking one answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Verdict {
    /// Accepted values, in the canonical shape (possibly partial for parameter tasks).
    pub accepted: Map<String, Value>,
    /// What was wrong, one line each, naming the parameter where there is one.
    pub problems: Vec<String>,
    /// Parameter targets still without an accepted value.
    pub pending: Vec<String>,
}

impl Verdict {
    /// Everything asked for was accepted.
    pub fn complete(&self, task: Task) -> bool {
        match task {
            Task::ParamDescriptions | Task::ParamExamples => self.pending.is_empty(),
            _ => !self.accepted.is_empty(),
        }
    }
}

/// The `response_format` schema of a task.
pub fn response_schema(task: Task, ask: &Ask) -> Value {
    let per_param = |value_schema: &dyn Fn(&Value) -> Value| {
        let props: Map<String, Value> = ask
            .targets
            .iter()
            .map(|(n, s)| (n.clone(), value_schema(s)))
            .collect();
        json!({
            "type": "object",
            "properties": props,
            "required": ask.names(),
            "additionalProperties": false
        })
    };
    let inner = match task {
        Task::Description | Task::Summary => json!({"type": "string"}),
        Task::Questions => json!({
            "type": "array", "items": {"type": "string"},
            "minItems": 1, "maxItems": MAX_QUESTIONS
        }),
        Task::ParamDescriptions => per_param(&|_| json!({"type": "string"})),
        Task::ParamExamples => per_param(&grammar_schema),
    };
    json!({
        "type": "object",
        "properties": {task.answer_key(): inner},
        "required": [task.answer_key()],
        "additionalProperties": false
    })
}

/// A parameter schema reduced to what servers can turn into a grammar: type, enum, bounds
/// and items. `pattern` and `format` are left to the check afterwards, because grammar
/// converters support them unevenly and a refused schema costs a whole request.
fn grammar_schema(s: &Value) -> Value {
    let mut out = Map::new();
    let ty = match s.get("type") {
        Some(Value::String(t)) => Some(t.clone()),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .map(str::to_string),
        _ => None,
    };
    if let Some(t) = &ty {
        out.insert("type".into(), json!(t));
    }
    if let Some(Value::Array(e)) = s.get("enum") {
        let scalars: Vec<Value> = e
            .iter()
            .filter(|v| !v.is_object() && !v.is_array() && !v.is_null())
            .cloned()
            .collect();
        if !scalars.is_empty() {
            out.insert("enum".into(), Value::Array(scalars));
        }
    }
    for k in ["minimum", "maximum", "minItems", "maxItems"] {
        if let Some(v) = s.get(k).filter(|v| v.is_number()) {
            out.insert(k.into(), v.clone());
        }
    }
    if ty.as_deref() == Some("array") {
        out.insert(
            "items".into(),
            s.get("items")
                .map(grammar_schema)
                .unwrap_or_else(|| json!({})),
        );
    }
    Value::Object(out)
}

/// Checks an answer (already parsed as JSON) for a task.
pub fn check(task: Task, answer: &Value, ask: &Ask) -> Verdict {
    let mut v = Verdict::default();
    let key = task.answer_key();
    match task {
        Task::Description | Task::Summary => {
            let max = if task == Task::Description {
                DESCRIPTION_CHARS
            } else {
                SUMMARY_CHARS
            };
            match answer.get(key).and_then(Value::as_str) {
                None => v.problems.push(format!("expected {{\"{key}\": \"...\"}}")),
                Some(s) => match text(s, max, 3) {
                    None => v.problems.push(format!("the {key} is empty or too short")),
                    Some(t) if is_weak(&t, &[&ask.operation_id, &ask.path]) => v.problems.push(
                        format!("the {key} only repeats the endpoint's name; say what it does"),
                    ),
                    Some(t) => {
                        v.accepted.insert(key.into(), json!(t));
                    }
                },
            }
        }
        Task::Questions => {
            let items: Vec<&str> = match answer.get(key) {
                Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
                Some(Value::String(s)) => s.lines().collect(),
                _ => Vec::new(),
            };
            let mut qs: Vec<String> = Vec::new();
            let mut meta = 0;
            for q in items {
                if let Some(t) = text(q, QUESTION_CHARS, 2) {
                    if is_meta_question(&t) {
                        meta += 1;
                    } else if !qs.iter().any(|x| x.eq_ignore_ascii_case(&t))
                        && qs.len() < MAX_QUESTIONS
                    {
                        qs.push(t);
                    }
                }
            }
            if qs.is_empty() && meta > 0 {
                v.problems.push(
                    "ask what a user of the application would ask (about movies, playlists, \
                     orders...), not about the API or the endpoint"
                        .to_string(),
                );
            } else if qs.is_empty() {
                v.problems.push(format!(
                    "expected {{\"{key}\": [\"...\", \"...\"]}} with questions"
                ));
            } else {
                v.accepted.insert(key.into(), json!(qs));
            }
        }
        Task::ParamDescriptions | Task::ParamExamples => {
            let map = per_param_map(answer, key, ask);
            let mut accepted = Map::new();
            for (name, schema) in &ask.targets {
                let Some(given) = map.get(name) else {
                    v.problems.push(format!("{name}: no value given"));
                    v.pending.push(name.clone());
                    continue;
                };
                if task == Task::ParamDescriptions {
                    match given.as_str().and_then(|s| text(s, PARAM_CHARS, 2)) {
                        Some(t) if !is_weak(&t, &[name, &ask.path, &ask.operation_id]) => {
                            accepted.insert(name.clone(), json!(t));
                        }
                        Some(_) => {
                            v.problems.push(format!(
                                "{name}: the description only repeats the name; say what it means"
                            ));
                            v.pending.push(name.clone());
                        }
                        None => {
                            v.problems
                                .push(format!("{name}: expected a sentence describing it"));
                            v.pending.push(name.clone());
                        }
                    }
                } else {
                    let errors = schema_check::check(schema, given);
                    if errors.is_empty() {
                        accepted.insert(name.clone(), given.clone());
                    } else {
                        v.problems.push(format!(
                            "{name}: {} is invalid: {}",
                            clip_chars(&given.to_string(), 60),
                            errors.join("; ")
                        ));
                        v.pending.push(name.clone());
                    }
                }
            }
            if !accepted.is_empty() {
                v.accepted.insert(key.into(), Value::Object(accepted));
            }
        }
    }
    v
}

/// The per-parameter map of an answer, in whichever shape the model chose:
/// `{"examples": {name: v}}`, `{name: v}`, or `{"examples": [{"name": n, "value": v}]}`.
fn per_param_map(answer: &Value, key: &str, ask: &Ask) -> Map<String, Value> {
    match answer.get(key) {
        Some(Value::Object(m)) => m.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|it| {
                let name = it.get("name")?.as_str()?;
                let val = ["value", "example", "description"]
                    .iter()
                    .find_map(|k| it.get(*k))?;
                Some((name.to_string(), val.clone()))
            })
            .collect(),
        _ => answer
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| ask.targets.iter().any(|(n, _)| n == *k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// A question about the API itself ("What is the API endpoint?") rather than one a user
/// would ask: as document expansion it only adds words every endpoint shares. Measured on
/// RestBench, three in four questions of a small model were of this kind.
fn is_meta_question(q: &str) -> bool {
    crate::text::split_identifier(q)
        .iter()
        .any(|w| matches!(w.as_str(), "endpoint" | "endpoints" | "api" | "apis"))
}

/// A cleaned, bounded text of at least `min_words` words, that reads like prose: small
/// models sometimes fill a string with code or JSON fragments (`');}} # JSON with`), which
/// have words but are mostly punctuation.
fn text(s: &str, max: usize, min_words: usize) -> Option<String> {
    let t = clean(s);
    let words = t
        .split_whitespace()
        .filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 2)
        .count();
    let visible = t.chars().filter(|c| !c.is_whitespace()).count().max(1);
    let letters = t.chars().filter(|c| c.is_alphanumeric()).count();
    let starts_well = t
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || matches!(c, '"' | '(' | '`' | '/'));
    let code_like = ["}}", "{\"", "');", "\");", "```"]
        .iter()
        .any(|frag| t.contains(frag));
    (words >= min_words && letters * 10 >= visible * 7 && starts_well && !code_like)
        .then(|| clip_chars(&t, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(targets: &[(&str, Value)]) -> Ask {
        Ask {
            operation_id: "getMovieCredits".into(),
            path: "/movie/{movie_id}/credits".into(),
            targets: targets
                .iter()
                .map(|(n, s)| (n.to_string(), s.clone()))
                .collect(),
        }
    }

    #[test]
    fn descriptions_must_say_something() {
        let a = ask(&[]);
        let ok = check(
            Task::Description,
            &json!({"description": "Lists the cast and crew of a movie."}),
            &a,
        );
        assert!(ok.complete(Task::Description), "{ok:?}");
        let echo = check(
            Task::Description,
            &json!({"description": "Get movie credits"}),
            &a,
        );
        assert!(!echo.complete(Task::Description));
        assert!(echo.problems[0].contains("repeats"), "{echo:?}");
        let wrong = check(Task::Description, &json!({"text": "x"}), &a);
        assert!(!wrong.complete(Task::Description));
        let code = check(
            Task::Description,
            &json!({"description": "');}} # JSON with one key per parameter name: {"}),
            &a,
        );
        assert!(!code.complete(Task::Description), "{code:?}");
        let ok = check(
            Task::Description,
            &json!({"description": "Lists the cast (actors, roles) of a movie, e.g. \"Alien\"."}),
            &a,
        );
        assert!(ok.complete(Task::Description), "{ok:?}");
    }

    #[test]
    fn examples_are_checked_one_by_one() {
        let a = ask(&[
            ("page", json!({"type": "integer", "minimum": 1})),
            ("sort", json!({"type": "string", "enum": ["asc", "desc"]})),
        ]);
        let v = check(
            Task::ParamExamples,
            &json!({"examples": {"page": 0, "sort": "asc"}}),
            &a,
        );
        assert_eq!(
            v.accepted,
            json!({"examples": {"sort": "asc"}})
                .as_object()
                .unwrap()
                .clone()
        );
        assert_eq!(v.pending, vec!["page"]);
        assert!(v.problems[0].starts_with("page: 0 is invalid"), "{v:?}");
        // The bare shape is accepted too.
        let v = check(Task::ParamExamples, &json!({"page": 2, "sort": "desc"}), &a);
        assert!(v.complete(Task::ParamExamples), "{v:?}");
    }

    #[test]
    fn schemas_for_the_server() {
        let a = ask(&[(
            "page",
            json!({"type": "integer", "minimum": 1, "pattern": "x", "description": "d"}),
        )]);
        let s = response_schema(Task::ParamExamples, &a);
        assert_eq!(
            s["properties"]["examples"]["properties"]["page"],
            json!({"type": "integer", "minimum": 1})
        );
        assert_eq!(s["required"], json!(["examples"]));
        let q = check(
            Task::Questions,
            &json!({"questions": ["Who played in Alien?", "x", "Who played in Alien?"]}),
            &a,
        );
        assert_eq!(q.accepted["questions"], json!(["Who played in Alien?"]));
        let meta = check(
            Task::Questions,
            &json!({"questions": ["What is the API endpoint?"]}),
            &a,
        );
        assert!(
            meta.accepted.is_empty() && meta.problems[0].contains("not about the API"),
            "{meta:?}"
        );
    }
}
