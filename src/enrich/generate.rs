//! Filling one endpoint's gaps: each task asked of the LLM (or answered from the cache),
//! checked, corrected once, and whatever is still missing filled by the heuristic enricher.
//!
//! Per task: render the template, ask for JSON, parse tolerantly, check (`answers`). If the
//! answer is not fully usable, the model gets one correction turn that names each problem
//! (for parameters, only the ones still missing). Examples still invalid after that are
//! dropped and reported. Accepted answers are cached at once, so finished work survives an
//! interruption. A transport failure (after the client's retries) or an unusable answer
//! fails that task only: it is reported, and the heuristic fills in where it can.

use super::answers::{self, Ask};
use super::cache::{self, Cache, Entry};
use super::heuristic::{endpoint_description, param_description};
use super::heuristic_examples;
use super::llm::{LlmClient, LlmError, Message};
use super::plan::EndpointPlan;
use super::prompts::Prompts;
use super::screen::{correction, judge, merge};
pub(super) use super::screen::{drop_echoes, drop_rejected};
use super::{Task, HEURISTIC};
use crate::catalog::Provenance;
use serde_json::{Map, Value};

/// The longest earlier answer quoted back in a correction turn.
const QUOTE_CHARS: usize = 1500;

/// A generated value and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Gen<T> {
    pub value: T,
    pub provenance: Provenance,
}

/// Everything generated for one endpoint, and what went wrong.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub description: Option<Gen<String>>,
    /// (index into the endpoint's parameters, description).
    pub param_descriptions: Vec<(usize, Gen<String>)>,
    pub param_examples: Vec<(usize, Gen<Value>)>,
    pub summary: Option<Gen<String>>,
    pub questions: Option<Gen<Vec<String>>>,
    /// Tasks the LLM failed, with the reason.
    pub failures: Vec<String>,
    /// Generated examples dropped after failing their schema twice, with the reason.
    pub dropped: Vec<String>,
    /// Values the heuristic filled because the LLM failed on them.
    pub fallbacks: usize,
    pub cache_hits: usize,
    pub llm_answers: usize,
}

/// What generation needs beside the plan.
pub struct Generation<'a> {
    pub client: Option<&'a LlmClient>,
    pub prompts: &'a Prompts,
    pub cache: Option<&'a Cache>,
    /// `max_tokens` of single-text tasks; parameter tasks scale it with their targets.
    pub max_tokens: u32,
    /// Ask again where the cache remembers an unusable answer.
    pub retry_failed: bool,
    pub today: String,
}

/// A task's accepted answer.
pub(super) struct TaskAnswer {
    pub(super) value: Map<String, Value>,
    pub(super) provenance: Provenance,
    pub(super) dropped: Vec<String>,
}

/// Generates what the plan asks for. `Err` only for errors that doom the whole run.
pub async fn generate(plan: &EndpointPlan, g: &Generation<'_>) -> Result<Outcome, LlmError> {
    let mut out = Outcome::default();
    let Some(client) = g.client else {
        heuristic_fill(plan, &plan.tasks(), &g.today, &mut out, false);
        return Ok(out);
    };
    for task in plan.tasks() {
        let ask = ask_for(plan, task);
        match ask_llm(client, g, plan, task, &ask, &mut out).await {
            Ok(answer) => {
                out.dropped.extend(answer.dropped.iter().cloned());
                take(plan, task, answer, &mut out);
            }
            Err(TaskError::Fatal(e)) => return Err(e),
            Err(TaskError::Failed(why)) => out
                .failures
                .push(format!("{}: {why}", task.template_name())),
        }
        // Whatever the LLM left unfilled (failed task, parameters it never answered
        // usably, dropped examples) gets the heuristic's value.
        heuristic_fill(plan, &[task], &g.today, &mut out, true);
    }
    Ok(out)
}

enum TaskError {
    Fatal(LlmError),
    Failed(String),
}

impl From<LlmError> for TaskError {
    fn from(e: LlmError) -> Self {
        if e.is_fatal() {
            TaskError::Fatal(e)
        } else {
            TaskError::Failed(e.to_string())
        }
    }
}

/// The parameter names and schemas a task asks about.
pub(super) fn ask_for(plan: &EndpointPlan, task: Task) -> Ask {
    let ep = &plan.endpoint;
    let indexes: Vec<usize> = match task {
        Task::ParamDescriptions => plan.param_descriptions.iter().map(|(i, _)| *i).collect(),
        Task::ParamExamples => plan.param_examples.clone(),
        _ => Vec::new(),
    };
    Ask {
        operation_id: ep.operation_id.clone().unwrap_or_default(),
        path: ep.path.clone(),
        targets: indexes
            .iter()
            .filter_map(|&i| ep.parameters.get(i))
            .map(|p| (p.name.clone(), p.schema.clone()))
            .collect(),
    }
}

fn max_tokens(task: Task, base: u32, targets: usize) -> u32 {
    match task {
        Task::ParamDescriptions | Task::ParamExamples => {
            ((base / 4).max(24) * targets as u32 + base / 2).min(2048)
        }
        _ => base,
    }
}

async fn ask_llm(
    client: &LlmClient,
    g: &Generation<'_>,
    plan: &EndpointPlan,
    task: Task,
    ask: &Ask,
    out: &mut Outcome,
) -> Result<TaskAnswer, TaskError> {
    let template = g.prompts.get(task);
    let ctx_text = plan.context.cache_text(task);
    let names = ask.names();
    let key = cache::key(task, &template.sha256, client.model(), &ctx_text, &names);
    if let Some(hit) = g.cache.and_then(|c| c.get(&key)) {
        if let Some(why) = &hit.failed {
            if !g.retry_failed {
                out.cache_hits += 1;
                return Err(TaskError::Failed(format!(
                    "{why} (remembered from {}; --retry-failed asks again)",
                    hit.date
                )));
            }
        } else {
            // Checked again, so that answers stored under laxer checks of an earlier
            // version cannot slip through; what no longer passes is asked anew.
            let verdict = answers::check(task, &hit.value, ask);
            if !verdict.accepted.is_empty() {
                out.cache_hits += 1;
                return Ok(TaskAnswer {
                    value: verdict.accepted,
                    provenance: Provenance {
                        replaced: None,
                        generator: hit.model.clone(),
                        template: hit.template.clone(),
                        date: hit.date.clone(),
                    },
                    dropped: hit.dropped.clone(),
                });
            }
        }
    }
    let mut prompt = template.render(&plan.context, &names);
    if let Some(line) = plan.context.rejected_text(&[task]) {
        prompt.user.push('\n');
        prompt.user.push_str(&line);
    }
    let mut messages = vec![
        Message::system(prompt.system.clone()),
        Message::user(prompt.user.clone()),
    ];
    let schema = answers::response_schema(task, ask);
    let budget = max_tokens(task, g.max_tokens, ask.targets.len());
    let reply = client
        .chat(&messages, task.answer_key(), &schema, budget)
        .await?;
    let mut tokens = (reply.prompt_tokens, reply.completion_tokens);
    tracing::debug!(
        "{} {}: answer {:?}",
        plan.label(),
        task.template_name(),
        crate::text::clip_chars(&reply.content, 400)
    );
    let mut verdict = judge(task, &reply.content, reply.truncated, ask);
    drop_rejected(task, &mut verdict, &plan.context);
    drop_echoes(task, &mut verdict, &prompt.user);
    if !verdict.complete(task) {
        // One correction turn, naming every problem; for parameters only the pending ones.
        let retry_ask = Ask {
            targets: ask
                .targets
                .iter()
                .filter(|(n, _)| verdict.pending.contains(n) || verdict.pending.is_empty())
                .cloned()
                .collect(),
            ..ask.clone()
        };
        messages.push(Message::assistant(crate::text::clip_chars(
            &reply.content,
            QUOTE_CHARS,
        )));
        messages.push(Message::user(correction(&verdict, &retry_ask, task)));
        let schema = answers::response_schema(task, &retry_ask);
        let budget = max_tokens(task, g.max_tokens, retry_ask.targets.len());
        let second = client
            .chat(&messages, task.answer_key(), &schema, budget)
            .await?;
        tokens.0 += second.prompt_tokens;
        tokens.1 += second.completion_tokens;
        tracing::debug!(
            "{} {}: corrected answer {:?}",
            plan.label(),
            task.template_name(),
            crate::text::clip_chars(&second.content, 400)
        );
        let mut again = judge(task, &second.content, second.truncated, &retry_ask);
        drop_rejected(task, &mut again, &plan.context);
        drop_echoes(task, &mut again, &prompt.user);
        verdict = merge(task, verdict, again);
    }
    let provenance = Provenance {
        replaced: None,
        generator: client.model().to_string(),
        template: template.label(),
        date: g.today.clone(),
    };
    let store = |value: &Map<String, Value>, dropped: &[String], failed: Option<String>| {
        let Some(c) = g.cache else { return };
        let entry = Entry {
            key: key.clone(),
            task,
            model: client.model().to_string(),
            template: template.label(),
            date: g.today.clone(),
            value: Value::Object(value.clone()),
            dropped: dropped.to_vec(),
            failed,
            prompt_tokens: tokens.0,
            completion_tokens: tokens.1,
        };
        c.put_or_warn(entry);
    };
    if verdict.accepted.is_empty() {
        let why = format!(
            "no usable answer after a correction: {}",
            verdict.problems.join("; ")
        );
        store(&Map::new(), &[], Some(why.clone()));
        return Err(TaskError::Failed(why));
    }
    out.llm_answers += 1;
    let dropped: Vec<String> = if task == Task::ParamExamples {
        verdict
            .problems
            .iter()
            .map(|p| format!("{}: {p}", plan.label()))
            .collect()
    } else {
        Vec::new()
    };
    store(&verdict.accepted, &dropped, None);
    Ok(TaskAnswer {
        value: verdict.accepted,
        provenance,
        dropped,
    })
}

/// Moves an accepted answer into the outcome.
pub(super) fn take(plan: &EndpointPlan, task: Task, a: TaskAnswer, out: &mut Outcome) {
    let p = a.provenance;
    let text = |v: &Value| v.as_str().map(str::to_string);
    let v = a.value.get(task.answer_key());
    match task {
        Task::Description => {
            out.description = v.and_then(text).map(|value| Gen {
                value,
                provenance: p,
            });
        }
        Task::Summary => {
            out.summary = v.and_then(text).map(|value| Gen {
                value,
                provenance: p,
            })
        }
        Task::Questions => {
            out.questions = v.and_then(Value::as_array).map(|qs| Gen {
                value: qs.iter().filter_map(text).collect(),
                provenance: p,
            });
        }
        Task::ParamDescriptions | Task::ParamExamples => {
            let Some(map) = v.and_then(Value::as_object) else {
                return;
            };
            let params = &plan.endpoint.parameters;
            for (name, value) in map {
                let Some(i) = params.iter().position(|q| &q.name == name) else {
                    continue;
                };
                if task == Task::ParamExamples {
                    out.param_examples.push((
                        i,
                        Gen {
                            value: value.clone(),
                            provenance: p.clone(),
                        },
                    ));
                } else if let Some(t) = text(value) {
                    out.param_descriptions.push((
                        i,
                        Gen {
                            value: t,
                            provenance: p.clone(),
                        },
                    ));
                }
            }
        }
    }
}

/// Fills, with the heuristic enricher, what `tasks` still lack in `out`. `fallback` counts
/// the values as fallbacks (the LLM was asked first).
pub(super) fn heuristic_fill(
    plan: &EndpointPlan,
    tasks: &[Task],
    today: &str,
    out: &mut Outcome,
    fallback: bool,
) {
    let prov = Provenance {
        replaced: None,
        generator: HEURISTIC.to_string(),
        template: String::new(),
        date: today.to_string(),
    };
    let gen = |value| Gen {
        value,
        provenance: prov.clone(),
    };
    let ep = &plan.endpoint;
    let mut filled = 0;
    for task in tasks {
        match task {
            Task::Description if out.description.is_none() => {
                out.description = Some(gen(endpoint_description(ep)));
                filled += 1;
            }
            Task::ParamDescriptions => {
                for (i, _) in &plan.param_descriptions {
                    if !out.param_descriptions.iter().any(|(j, _)| j == i) {
                        if let Some(p) = ep.parameters.get(*i) {
                            out.param_descriptions.push((*i, gen(param_description(p))));
                            filled += 1;
                        }
                    }
                }
            }
            Task::ParamExamples => {
                for i in &plan.param_examples {
                    if !out.param_examples.iter().any(|(j, _)| j == i) {
                        if let Some(ex) =
                            ep.parameters.get(*i).and_then(heuristic_examples::example)
                        {
                            out.param_examples.push((
                                *i,
                                Gen {
                                    value: ex,
                                    provenance: prov.clone(),
                                },
                            ));
                            filled += 1;
                        }
                    }
                }
            }
            // The heuristic has nothing to say beyond what the doc text already holds.
            _ => {}
        }
    }
    if fallback {
        out.fallbacks += filled;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_tasks_get_room_for_every_target() {
        assert_eq!(max_tokens(Task::Description, 256, 0), 256);
        assert_eq!(max_tokens(Task::ParamExamples, 256, 3), 64 * 3 + 128);
    }
}
