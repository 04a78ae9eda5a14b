//! Batched generation: several endpoints of one API per request, every task of an endpoint
//! in one answer.
//!
//! Asking each task of each endpoint on its own repeats the API and the endpoint in five
//! prompts per endpoint (about six requests and 1,600 prompt tokens an endpoint on
//! RestBench). A batch shows the API once, then each endpoint under an id (`e1`, `e2`, ...)
//! with the fields it lacks, and asks for one JSON object keyed by those ids, constrained by
//! a JSON schema where the server supports it. Each endpoint's part is checked exactly as a
//! single-task answer is (`answers::check`, prompt echoes dropped).
//!
//! What goes wrong costs only what it touches: an answer that is not JSON (or is cut off)
//! is asked again in halves, down to one endpoint; an endpoint whose part is missing or
//! fails a check is asked once more, with only its missing fields and the problems named.
//! Accepted values are cached per endpoint and task, so a later run with other batch sizes
//! or other neighbours in the batch still finds them.

use super::answers::{self, Ask, Verdict};
pub use super::batch_prompt::{item_budget, request, Item, Request};
use super::cache::{self, Entry};
use super::generate::{
    ask_for, drop_echoes, drop_rejected, heuristic_fill, take, Generation, Outcome, TaskAnswer,
};
use super::llm::{LlmClient, LlmError};
use super::llm_json;
use super::plan::EndpointPlan;
use super::Task;
use crate::catalog::Provenance;
use serde_json::{Map, Value};

/// How batches are formed.
#[derive(Debug, Clone, Copy)]
pub struct BatchLimits {
    /// Endpoints per request at most.
    pub endpoints: usize,
    /// Estimated prompt plus answer tokens per request at most (a small model's context).
    pub tokens: usize,
}

/// The items of `plans` that the cache does not answer, after taking cached answers into
/// the outcomes.
pub fn pending(
    plans: &[&EndpointPlan],
    g: &Generation<'_>,
    client: &LlmClient,
    outcomes: &mut [Outcome],
) -> Vec<Item> {
    let mut items = Vec::new();
    for (i, plan) in plans.iter().enumerate() {
        let mut tasks = Vec::new();
        for task in plan.tasks() {
            let ask = ask_for(plan, task);
            match cached(g, client, plan, task, &ask) {
                Some(Ok(answer)) => {
                    outcomes[i].cache_hits += 1;
                    outcomes[i].dropped.extend(answer.dropped.iter().cloned());
                    take(plan, task, answer, &mut outcomes[i]);
                }
                Some(Err(why)) => {
                    outcomes[i].cache_hits += 1;
                    outcomes[i]
                        .failures
                        .push(format!("{}: {why}", task.template_name()));
                }
                None => tasks.push((task, ask)),
            }
        }
        if !tasks.is_empty() {
            items.push(Item {
                plan: i,
                earlier: vec![None; tasks.len()],
                tasks,
                problems: Vec::new(),
            });
        }
    }
    items
}

/// The cache key of a task answered by the batch template.
fn key(
    g: &Generation<'_>,
    client: &LlmClient,
    plan: &EndpointPlan,
    task: Task,
    ask: &Ask,
) -> String {
    cache::key(
        task,
        &g.prompts.batch.sha256,
        client.model(),
        &plan.context.cache_text(task),
        &ask.names(),
    )
}

/// A cached answer: accepted (checked again), or a remembered failure.
fn cached(
    g: &Generation<'_>,
    client: &LlmClient,
    plan: &EndpointPlan,
    task: Task,
    ask: &Ask,
) -> Option<Result<TaskAnswer, String>> {
    let hit = g.cache?.get(&key(g, client, plan, task, ask))?;
    if let Some(why) = &hit.failed {
        return (!g.retry_failed).then(|| {
            Err(format!(
                "{why} (remembered from {}; --retry-failed asks again)",
                hit.date
            ))
        });
    }
    // Checked again, so that answers stored under laxer checks of an earlier version
    // cannot slip through; what no longer passes is asked anew.
    let verdict = answers::check(task, &hit.value, ask);
    (!verdict.accepted.is_empty()).then(|| {
        Ok(TaskAnswer {
            value: verdict.accepted,
            provenance: Provenance {
                replaced: None,
                generator: hit.model.clone(),
                template: hit.template.clone(),
                date: hit.date.clone(),
            },
            dropped: hit.dropped.clone(),
        })
    })
}

/// Splits items into requests within `limits` (at least one item each), in order.
pub fn group(
    items: Vec<Item>,
    plans: &[&EndpointPlan],
    g: &Generation<'_>,
    limits: BatchLimits,
) -> Vec<Vec<Item>> {
    let mut groups: Vec<Vec<Item>> = Vec::new();
    let mut cur: Vec<Item> = Vec::new();
    for item in items {
        cur.push(item);
        let over = cur.len() > limits.endpoints.max(1) || {
            let r = request(&cur, plans, g);
            r.prompt_tokens() + r.max_tokens as usize > limits.tokens
        };
        if over && cur.len() > 1 {
            let last = cur.pop();
            groups.push(std::mem::take(&mut cur));
            cur.extend(last);
        }
    }
    if !cur.is_empty() {
        groups.push(cur);
    }
    groups
}

/// Generates what `plans` (endpoints of one API) lack, in batched requests; one outcome per
/// plan, in order. `Err` only for errors that doom the whole run.
pub async fn generate(
    plans: &[&EndpointPlan],
    g: &Generation<'_>,
    limits: BatchLimits,
) -> Result<Vec<Outcome>, LlmError> {
    let mut outcomes: Vec<Outcome> = vec![Outcome::default(); plans.len()];
    let Some(client) = g.client else {
        for (plan, out) in plans.iter().zip(outcomes.iter_mut()) {
            heuristic_fill(plan, &plan.tasks(), &g.today, out, false);
        }
        return Ok(outcomes);
    };
    let items = pending(plans, g, client, &mut outcomes);
    let mut retry: Vec<Item> = Vec::new();
    for group in group(items, plans, g, limits) {
        ask_group(client, g, plans, group, &mut outcomes, &mut retry).await?;
    }
    // The second round: only what is still missing, each with its problems named.
    let mut failed: Vec<Item> = Vec::new();
    for group in group(retry, plans, g, limits) {
        ask_group(client, g, plans, group, &mut outcomes, &mut failed).await?;
    }
    for item in failed {
        let plan = plans[item.plan];
        for ((task, ask), earlier) in item.tasks.iter().zip(&item.earlier) {
            if earlier.as_ref().is_some_and(|(_, done)| !done.is_empty()) {
                // Answered in part: the accepted part is stored and taken already.
                continue;
            }
            let why = format!(
                "no usable answer after a correction: {}",
                if item.problems.is_empty() {
                    "no answer".to_string()
                } else {
                    item.problems.join("; ")
                }
            );
            store(
                g,
                client,
                plan,
                *task,
                ask,
                &Map::new(),
                &[],
                Some(why.clone()),
                (0, 0),
            );
            outcomes[item.plan]
                .failures
                .push(format!("{}: {why}", task.template_name()));
        }
    }
    for (plan, out) in plans.iter().zip(outcomes.iter_mut()) {
        // Whatever the model left unfilled gets the heuristic's value.
        heuristic_fill(plan, &plan.tasks(), &g.today, out, true);
    }
    Ok(outcomes)
}

/// Asks one group; items (or their tasks) not fully answered go to `left`, with their
/// problems. An answer that is not JSON is asked again in halves.
async fn ask_group(
    client: &LlmClient,
    g: &Generation<'_>,
    plans: &[&EndpointPlan],
    group: Vec<Item>,
    outcomes: &mut [Outcome],
    left: &mut Vec<Item>,
) -> Result<(), LlmError> {
    let mut queue: Vec<Vec<Item>> = vec![group];
    while let Some(items) = queue.pop() {
        let req = request(&items, plans, g);
        let reply = match client
            .chat(&req.messages, "endpoints", &req.schema, req.max_tokens)
            .await
        {
            Ok(r) => r,
            Err(e) if e.is_fatal() => return Err(e),
            Err(e) => {
                // The server failed after its retries: this group's items fail for now.
                for mut item in items {
                    item.problems = vec![e.to_string()];
                    left.push(item);
                }
                continue;
            }
        };
        tracing::debug!(
            "batch of {}: answer {:?}",
            items.len(),
            crate::text::clip_chars(&reply.content, 600)
        );
        let parsed = llm_json::parse(&reply.content).map(|(v, _)| v);
        let share = |n: u64| n / items.len().max(1) as u64;
        let tokens = (share(reply.prompt_tokens), share(reply.completion_tokens));
        let Some(answer) = parsed.filter(|v| req.ids.iter().any(|id| v.get(id).is_some())) else {
            if items.len() > 1 {
                let mut items = items;
                let second = items.split_off(items.len() / 2);
                queue.push(second);
                queue.push(items);
            } else {
                let why = if reply.truncated {
                    "the answer was cut off before any JSON was complete; answer shorter"
                } else {
                    "the answer is not a JSON object keyed by the endpoint ids"
                };
                for mut item in items {
                    item.problems = vec![why.to_string()];
                    left.push(item);
                }
            }
            continue;
        };
        let user_prompt = &req.messages[1].content;
        for (id, item) in req.ids.iter().zip(items) {
            let plan = plans[item.plan];
            let part = answer.get(id).cloned().unwrap_or(Value::Null);
            let mut rest = Item {
                plan: item.plan,
                tasks: Vec::new(),
                problems: Vec::new(),
                earlier: Vec::new(),
            };
            let second_round = !item.problems.is_empty();
            for ((task, ask), earlier) in item.tasks.into_iter().zip(item.earlier) {
                let mut verdict = if part.is_object() {
                    answers::check(task, &part, &ask)
                } else {
                    Verdict {
                        problems: vec![format!("{id}: no answer given")],
                        pending: ask.names(),
                        ..Verdict::default()
                    }
                };
                if reply.truncated && !verdict.complete(task) {
                    verdict
                        .problems
                        .push("the answer was cut off at the token limit; answer shorter".into());
                }
                drop_rejected(task, &mut verdict, &plan.context);
                drop_echoes(task, &mut verdict, user_prompt);
                // The whole ask (the cache key) and everything accepted for it so far.
                let (full, mut done) = earlier.unwrap_or_else(|| (ask.clone(), Map::new()));
                merge_into(task, &mut done, &verdict.accepted);
                let complete = verdict.complete(task);
                if complete || second_round {
                    if done.is_empty() {
                        rest.problems.extend(verdict.problems.iter().cloned());
                        rest.tasks.push((task, ask));
                        rest.earlier.push(Some((full, done)));
                        continue;
                    }
                    // Examples still invalid after the second request are dropped.
                    let dropped: Vec<String> = if task == Task::ParamExamples && !complete {
                        verdict
                            .problems
                            .iter()
                            .map(|p| format!("{}: {p}", plan.label()))
                            .collect()
                    } else {
                        Vec::new()
                    };
                    store(g, client, plan, task, &full, &done, &dropped, None, tokens);
                    outcomes[item.plan].llm_answers += 1;
                    outcomes[item.plan].dropped.extend(dropped);
                    take(
                        plan,
                        task,
                        TaskAnswer {
                            value: done,
                            provenance: Provenance {
                                replaced: None,
                                generator: client.model().to_string(),
                                template: g.prompts.batch.label(),
                                date: g.today.clone(),
                            },
                            dropped: Vec::new(),
                        },
                        &mut outcomes[item.plan],
                    );
                } else {
                    // Asked again, for what is missing only.
                    let targets: Vec<(String, Value)> = if verdict.pending.is_empty() {
                        ask.targets.clone()
                    } else {
                        ask.targets
                            .iter()
                            .filter(|(n, _)| verdict.pending.contains(n))
                            .cloned()
                            .collect()
                    };
                    rest.problems.extend(verdict.problems.iter().cloned());
                    rest.tasks.push((task, Ask { targets, ..ask }));
                    rest.earlier.push(Some((full, done)));
                }
            }
            if !rest.tasks.is_empty() {
                left.push(rest);
            }
        }
    }
    Ok(())
}

/// Adds the values of `add` to `done` (one task's canonical answer; parameter maps merge).
fn merge_into(task: Task, done: &mut Map<String, Value>, add: &Map<String, Value>) {
    let key = task.answer_key();
    match (done.get_mut(key), add.get(key)) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            for (k, v) in b {
                a.insert(k.clone(), v.clone());
            }
        }
        (_, Some(v)) => {
            done.insert(key.to_string(), v.clone());
        }
        _ => {}
    }
}

/// Stores one task's answer (or failure) for one endpoint in the cache.
#[allow(clippy::too_many_arguments)]
fn store(
    g: &Generation<'_>,
    client: &LlmClient,
    plan: &EndpointPlan,
    task: Task,
    ask: &Ask,
    value: &Map<String, Value>,
    dropped: &[String],
    failed: Option<String>,
    tokens: (u64, u64),
) {
    let Some(c) = g.cache else { return };
    let entry = Entry {
        key: key(g, client, plan, task, ask),
        task,
        model: client.model().to_string(),
        template: g.prompts.batch.label(),
        date: g.today.clone(),
        value: Value::Object(value.clone()),
        dropped: dropped.to_vec(),
        failed,
        prompt_tokens: tokens.0,
        completion_tokens: tokens.1,
    };
    c.put_or_warn(entry);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::enrich::batch_prompt::{MAX_CHARS_DESCRIPTION, MAX_CHARS_QUESTION};
    use crate::enrich::prompts::Prompts;
    use crate::enrich::Only;
    use serde_json::json;

    /// A made-up bakery API: three endpoints lacking everything.
    fn plans() -> Vec<EndpointPlan> {
        let doc = json!({
            "openapi": "3.0.0",
            "info": {"title": "Bakery", "version": "1"},
            "paths": {
                "/loaves": {"get": {"operationId": "listLoaves", "parameters": [
                    {"name": "grain", "in": "query", "schema": {"type": "string"}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 50}}
                ], "responses": {"200": {"description": ""}}}},
                "/orders": {"post": {"operationId": "placeOrder", "responses": {"201": {"description": ""}}}},
                "/hours": {"get": {"operationId": "openingHours", "responses": {"200": {"description": ""}}}}
            }
        });
        let n = crate::catalog::normalize::normalize(
            std::path::Path::new("bakery.json"),
            "bakery",
            doc.clone(),
            false,
        )
        .unwrap();
        n.endpoints
            .into_iter()
            .map(|ep| EndpointPlan::new(0, ep, &doc, Only::Weak, &Task::ALL))
            .collect()
    }

    fn items(plans: &[&EndpointPlan]) -> Vec<Item> {
        plans
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let tasks: Vec<(Task, Ask)> =
                    p.tasks().into_iter().map(|t| (t, ask_for(p, t))).collect();
                Item {
                    plan: i,
                    earlier: vec![None; tasks.len()],
                    tasks,
                    problems: Vec::new(),
                }
            })
            .collect()
    }

    fn generation(prompts: &Prompts) -> Generation<'_> {
        Generation {
            client: None,
            prompts,
            cache: None,
            max_tokens: 256,
            retry_failed: false,
            today: "2026-01-01".into(),
        }
    }

    #[test]
    fn one_request_shows_the_api_once_and_every_endpoint_under_its_id() {
        let owned = plans();
        let plans: Vec<&EndpointPlan> = owned.iter().collect();
        let prompts = Prompts::builtin();
        let g = generation(&prompts);
        let r = request(&items(&plans), &plans, &g);
        let user = &r.messages[1].content;
        assert_eq!(user.matches("Bakery").count(), 1, "{user}");
        for (id, path) in [("e1", "/loaves"), ("e2", "/orders"), ("e3", "/hours")] {
            assert!(user.contains(&format!("[{id}] ")), "{user}");
            assert!(user.contains(path), "{user}");
        }
        assert!(user.contains("parameters (grain, limit)"), "{user}");
        assert_eq!(r.ids, ["e1", "e2", "e3"]);
        // The schema requires every id, bounds every string and keeps the example's bounds.
        assert_eq!(r.schema["required"], json!(["e1", "e2", "e3"]));
        let e1 = &r.schema["properties"]["e1"]["properties"];
        assert_eq!(e1["description"]["maxLength"], MAX_CHARS_DESCRIPTION);
        assert_eq!(e1["questions"]["items"]["maxLength"], MAX_CHARS_QUESTION);
        assert_eq!(
            e1["examples"]["properties"]["limit"],
            json!({"type": "integer", "maximum": 50})
        );
        assert!(r.prompt_tokens() > 50);
    }

    #[test]
    fn groups_respect_the_endpoint_and_token_limits() {
        let owned = plans();
        let plans: Vec<&EndpointPlan> = owned.iter().collect();
        let prompts = Prompts::builtin();
        let g = generation(&prompts);
        let wide = BatchLimits {
            endpoints: 8,
            tokens: 100_000,
        };
        assert_eq!(group(items(&plans), &plans, &g, wide).len(), 1);
        let two = BatchLimits {
            endpoints: 2,
            tokens: 100_000,
        };
        let sizes: Vec<usize> = group(items(&plans), &plans, &g, two)
            .iter()
            .map(Vec::len)
            .collect();
        assert_eq!(sizes, [2, 1]);
        // A token limit below one endpoint's request still sends each endpoint alone.
        let tight = BatchLimits {
            endpoints: 8,
            tokens: 10,
        };
        assert_eq!(group(items(&plans), &plans, &g, tight).len(), 3);
    }

    #[test]
    fn partial_parameter_answers_merge() {
        let mut done = json!({"examples": {"grain": "rye"}})
            .as_object()
            .unwrap()
            .clone();
        let add = json!({"examples": {"limit": 10}})
            .as_object()
            .unwrap()
            .clone();
        merge_into(Task::ParamExamples, &mut done, &add);
        assert_eq!(
            Value::Object(done),
            json!({"examples": {"grain": "rye", "limit": 10}})
        );
    }
}
