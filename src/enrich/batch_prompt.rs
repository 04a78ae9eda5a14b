//! The request of one batch: the API shown once, each endpoint under an id (`e1`, `e2`,
//! ...) with the fields it lacks, and the JSON schema of the one answer expected, every
//! string bounded so a small model constrained to it cannot run on.

use super::answers::{self, Ask, MAX_QUESTIONS};
use super::generate::Generation;
use super::llm::Message;
use super::plan::EndpointPlan;
use super::Task;
use serde_json::{json, Map, Value};

/// Rough characters per token of prompt text (JSON, paths and English), for estimates.
const CHARS_PER_TOKEN: f64 = 3.5;

/// One endpoint's share of a request.
#[derive(Debug, Clone)]
pub struct Item {
    /// Index of the plan in the batch's plan list.
    pub plan: usize,
    /// The tasks still wanted, each with what it asks about.
    pub tasks: Vec<(Task, Ask)>,
    /// Problems of an earlier answer, shown in the second request.
    pub problems: Vec<String>,
    /// Per task of `tasks`, for a second request: the first request's whole ask (the cache
    /// key) and the values it already accepted.
    pub earlier: Vec<Option<(Ask, Map<String, Value>)>>,
}

/// A request ready to send (or to print with `--dry-run`).
#[derive(Debug, Clone)]
pub struct Request {
    pub messages: Vec<Message>,
    pub schema: Value,
    pub max_tokens: u32,
    /// The id shown to the model for each item, in order.
    pub ids: Vec<String>,
}

impl Request {
    /// Estimated prompt tokens.
    pub fn prompt_tokens(&self) -> usize {
        let chars: usize = self.messages.iter().map(|m| m.content.len() + 8).sum();
        (chars as f64 / CHARS_PER_TOKEN).ceil() as usize
    }
}

/// The longest string the schema lets a batched answer write per field (characters). A
/// small model, constrained to JSON, otherwise runs on until `max_tokens` within one
/// string; the grammar stops it at the bound instead.
pub(super) const MAX_CHARS_DESCRIPTION: usize = 300;
const MAX_CHARS_SUMMARY: usize = 160;
pub(super) const MAX_CHARS_QUESTION: usize = 120;
const MAX_CHARS_PARAM: usize = 120;
const MAX_CHARS_EXAMPLE: usize = 40;
/// Questions asked per endpoint in a batch.
const BATCH_QUESTIONS: usize = 3;

/// The answer budget of one item, in tokens: what the schema's bounds allow (about three
/// characters a token, plus the JSON around), scaled by `base / 256` (`--max-tokens`).
pub fn item_budget(tasks: &[(Task, Ask)], base: u32) -> u32 {
    let tokens = |chars: usize| (chars / 3 + 10) as u32;
    let per = |t: Task, n: usize| match t {
        Task::Description => tokens(MAX_CHARS_DESCRIPTION),
        Task::Summary => tokens(MAX_CHARS_SUMMARY),
        Task::Questions => BATCH_QUESTIONS as u32 * tokens(MAX_CHARS_QUESTION),
        Task::ParamDescriptions => tokens(MAX_CHARS_PARAM) * n as u32,
        Task::ParamExamples => tokens(MAX_CHARS_EXAMPLE) * n as u32,
    };
    let sum = 16
        + tasks
            .iter()
            .map(|(t, a)| per(*t, a.targets.len()))
            .sum::<u32>();
    (u64::from(sum) * u64::from(base.max(16)) / 256) as u32
}

/// The request for a group of items (all of one API).
pub fn request(items: &[Item], plans: &[&EndpointPlan], g: &Generation<'_>) -> Request {
    let ids: Vec<String> = (1..=items.len()).map(|i| format!("e{i}")).collect();
    let mut blocks = Vec::new();
    let mut wanted: Vec<Task> = Vec::new();
    let mut props = Map::new();
    let mut budget = 0;
    for (id, item) in ids.iter().zip(items) {
        let plan = plans[item.plan];
        blocks.push(block(id, plan, item));
        for (t, _) in &item.tasks {
            if !wanted.contains(t) {
                wanted.push(*t);
            }
        }
        props.insert(id.clone(), item_schema(item));
        budget += item_budget(&item.tasks, g.max_tokens);
    }
    wanted.sort_by_key(|t| Task::ALL.iter().position(|x| x == t));
    let api = plans
        .get(items.first().map_or(0, |i| i.plan))
        .map(|p| p.context.api_title.clone())
        .unwrap_or_default();
    let fields: Vec<String> = wanted.iter().map(|t| field_line(*t)).collect();
    let shape = shape(&ids, items);
    let rendered = g.prompts.batch.render(&[
        ("api_title", &api),
        ("endpoints", &blocks.join("\n\n")),
        ("fields", &fields.join("\n")),
        ("shape", &shape),
    ]);
    Request {
        messages: vec![
            Message::system(rendered.system),
            Message::user(rendered.user),
        ],
        schema: json!({
            "type": "object",
            "properties": props,
            "required": ids,
            "additionalProperties": false
        }),
        max_tokens: budget.min(4096),
        ids,
    }
}

/// What each field means, as the prompt says it.
fn field_line(t: Task) -> String {
    match t {
        Task::Description => {
            "- description: one or two sentences: what the endpoint does and what it returns."
        }
        Task::Summary => "- summary: one sentence: what a user can do with it.",
        Task::Questions => {
            "- questions: three short requests a user of an app built on this API might type \
             that this endpoint answers, in the user's own words about the things it deals \
             with (never the words API or endpoint)."
        }
        Task::ParamDescriptions => {
            "- parameters: for each parameter named, one short sentence: what it means and \
             what values it takes."
        }
        Task::ParamExamples => {
            "- examples: for each parameter named, one realistic value that respects its \
             type, enum, format, pattern and bounds."
        }
    }
    .to_string()
}

/// One endpoint's block of the prompt.
fn block(id: &str, plan: &EndpointPlan, item: &Item) -> String {
    let c = &plan.context;
    let mut s = format!("[{id}] {} {}", c.method, c.path);
    if let Some(op) = &c.operation_id {
        s.push_str(&format!(" (operationId {op})"));
    }
    for (label, v) in [("summary", &c.summary), ("description", &c.description)] {
        if let Some(v) = v {
            s.push_str(&format!("\n{label}: {v}"));
        }
    }
    if !c.tags.is_empty() {
        s.push_str(&format!("\ntags: {}", c.tags.join(", ")));
    }
    if !c.parameters.is_empty() {
        s.push_str("\nparameters:\n");
        s.push_str(&c.parameters_text());
    }
    if let Some(b) = &c.request_body {
        s.push_str(&format!("\nrequest body: {b}"));
    }
    if !c.response_fields.is_empty() {
        s.push_str(&format!("\nreturns: {}", c.response_fields.join(", ")));
    }
    let want: Vec<String> = item
        .tasks
        .iter()
        .map(|(t, a)| match t {
            Task::ParamDescriptions | Task::ParamExamples => {
                format!("{} ({})", t.answer_key(), a.names().join(", "))
            }
            _ => t.answer_key().to_string(),
        })
        .collect();
    s.push_str(&format!("\nwrite: {}", want.join(", ")));
    let tasks: Vec<Task> = item.tasks.iter().map(|(t, _)| *t).collect();
    if let Some(line) = c.rejected_text(&tasks) {
        s.push('\n');
        s.push_str(&line);
    }
    if !item.problems.is_empty() {
        s.push_str(&format!(
            "\nyour earlier answer could not be used: {}",
            item.problems.join("; ")
        ));
    }
    s
}

/// The JSON shape of the answer, as the prompt shows it.
fn shape(ids: &[String], items: &[Item]) -> String {
    let parts: Vec<String> = ids
        .iter()
        .zip(items)
        .take(2)
        .map(|(id, item)| {
            let fields: Vec<String> = item
                .tasks
                .iter()
                .map(|(t, a)| match t {
                    Task::Questions => "\"questions\": [\"...\", \"...\", \"...\"]".to_string(),
                    Task::ParamDescriptions | Task::ParamExamples => {
                        let inner: Vec<String> = a
                            .names()
                            .iter()
                            .take(2)
                            .map(|n| format!("\"{n}\": ..."))
                            .collect();
                        format!("\"{}\": {{{}}}", t.answer_key(), inner.join(", "))
                    }
                    _ => format!("\"{}\": \"...\"", t.answer_key()),
                })
                .collect();
            format!("\"{id}\": {{{}}}", fields.join(", "))
        })
        .collect();
    let more = if ids.len() > 2 { ", ..." } else { "" };
    format!("{{{}{more}}}", parts.join(", "))
}

/// The schema of one item's part: the fields it wants, each as its single task's schema
/// says, with every string bounded (see [`MAX_CHARS_DESCRIPTION`]).
fn item_schema(item: &Item) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    for (t, a) in &item.tasks {
        let s = answers::response_schema(*t, a);
        let Some(inner) = s.pointer(&format!("/properties/{}", t.answer_key())) else {
            continue;
        };
        let mut inner = inner.clone();
        match t {
            Task::Description => inner["maxLength"] = json!(MAX_CHARS_DESCRIPTION),
            Task::Summary => inner["maxLength"] = json!(MAX_CHARS_SUMMARY),
            Task::Questions => {
                inner["maxItems"] = json!(MAX_QUESTIONS.min(BATCH_QUESTIONS));
                inner["items"]["maxLength"] = json!(MAX_CHARS_QUESTION);
            }
            Task::ParamDescriptions | Task::ParamExamples => {
                if let Some(ps) = inner.get_mut("properties").and_then(Value::as_object_mut) {
                    for p in ps.values_mut() {
                        let free_string =
                            p.get("type") == Some(&json!("string")) && p.get("enum").is_none();
                        if *t == Task::ParamDescriptions {
                            p["maxLength"] = json!(MAX_CHARS_PARAM);
                        } else if free_string {
                            p["maxLength"] = json!(MAX_CHARS_EXAMPLE);
                        }
                    }
                }
            }
        }
        props.insert(t.answer_key().to_string(), inner);
        required.push(t.answer_key());
    }
    json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false
    })
}
