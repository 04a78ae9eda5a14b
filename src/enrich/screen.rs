//! Screening one answer of the model: parsed and checked, values a reviewer rejected before
//! and echoes of the prompt dropped, a correction turn's additions merged into the first
//! answer, and the correction turn itself.

use super::answers::{self, Ask, Verdict};
use super::context::EndpointContext;
use super::llm_json;
use super::Task;
use serde_json::{Map, Value};

/// Drops accepted values that a reviewer rejected before for this endpoint
/// (`ctx.rejected`), saying so: the prompt showed them, and the model is asked once more
/// for something different.
pub(super) fn drop_rejected(task: Task, verdict: &mut Verdict, ctx: &EndpointContext) {
    let key = task.answer_key();
    let same = |a: &Value, b: &Value| match (a, b) {
        (Value::String(x), Value::String(y)) => x.trim() == y.trim(),
        _ => a == b,
    };
    for r in ctx.rejected_for(&[task]) {
        match (&r.param, verdict.accepted.get_mut(key)) {
            (None, Some(v)) if same(v, &r.value) => {
                verdict.accepted.remove(key);
                verdict.problems.push(format!(
                    "the {key} repeats one a reviewer rejected; write a different one"
                ));
            }
            (Some(name), Some(Value::Object(values)))
                if values.get(name).is_some_and(|v| same(v, &r.value)) =>
            {
                values.remove(name);
                verdict.pending.push(name.clone());
                verdict.problems.push(format!(
                    "{name}: the value repeats one a reviewer rejected; give a different one"
                ));
            }
            _ => {}
        }
    }
    if verdict
        .accepted
        .get(key)
        .is_some_and(|v| v.as_object().is_some_and(Map::is_empty))
    {
        verdict.accepted.remove(key);
    }
}

/// Drops generated texts copied from the prompt itself (a small model parrots the
/// instructions or their examples): they describe the template, not the endpoint.
pub(super) fn drop_echoes(task: Task, verdict: &mut Verdict, prompt: &str) {
    let prompt = prompt.to_lowercase();
    let echo = |t: &str| {
        let t = t.trim().trim_end_matches(['.', '?', '!']).to_lowercase();
        t.split_whitespace().count() >= 3 && prompt.contains(&t)
    };
    let key = task.answer_key();
    let echoed = match verdict.accepted.get_mut(key) {
        Some(Value::String(t)) => echo(t),
        Some(Value::Array(items)) => {
            items.retain(|q| !q.as_str().is_some_and(echo));
            items.is_empty()
        }
        _ => false,
    };
    if echoed {
        verdict.accepted.remove(key);
        verdict.problems.push(format!(
            "the {key} repeats the instructions; write your own"
        ));
    }
}

/// Parses and checks one answer.
pub(super) fn judge(task: Task, content: &str, truncated: bool, ask: &Ask) -> Verdict {
    match llm_json::parse(content) {
        Some((v, _)) => {
            let mut verdict = answers::check(task, &v, ask);
            if truncated && !verdict.complete(task) {
                verdict
                    .problems
                    .push("the answer was cut off at the token limit; answer shorter".into());
            }
            verdict
        }
        None => Verdict {
            problems: vec![if truncated {
                "the answer was cut off before any JSON was complete; answer shorter".to_string()
            } else {
                "the answer is not a JSON object".to_string()
            }],
            pending: ask.names(),
            ..Verdict::default()
        },
    }
}

/// The first verdict's accepted values plus what the correction added.
pub(super) fn merge(task: Task, mut first: Verdict, second: Verdict) -> Verdict {
    let key = task.answer_key();
    match (first.accepted.get_mut(key), second.accepted.get(key)) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            for (k, v) in b {
                a.insert(k.clone(), v.clone());
            }
        }
        (None, Some(v)) => {
            first.accepted.insert(key.to_string(), v.clone());
        }
        _ => {}
    }
    first.problems = second.problems;
    first.pending = second.pending;
    first
}

/// The correction turn: each problem of the answer named, and what to answer again.
pub(super) fn correction(v: &Verdict, retry: &Ask, task: Task) -> String {
    let mut s = String::from("Your answer could not be used:\n");
    for p in &v.problems {
        s.push_str(&format!("- {p}\n"));
    }
    s.push_str("Answer again with JSON only, in the format asked");
    if matches!(task, Task::ParamDescriptions | Task::ParamExamples) {
        s.push_str(&format!(", for: {}", retry.names().join(", ")));
    }
    s.push('.');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn corrections_name_problems_and_targets() {
        let v = Verdict {
            problems: vec!["page: 0 is invalid: 0 is below the minimum 1".into()],
            pending: vec!["page".into()],
            ..Verdict::default()
        };
        let ask = Ask {
            targets: vec![("page".into(), json!({"type": "integer"}))],
            ..Ask::default()
        };
        let c = correction(&v, &ask, Task::ParamExamples);
        assert!(c.contains("- page: 0 is invalid"), "{c}");
        assert!(c.ends_with("for: page."), "{c}");
    }

    #[test]
    fn echoes_of_the_prompt_are_dropped() {
        let mut v = Verdict {
            accepted:
                json!({"questions": ["Who played the lead in Alien?", "Which shows air tonight?"]})
                    .as_object()
                    .unwrap()
                    .clone(),
            ..Verdict::default()
        };
        drop_echoes(
            Task::Questions,
            &mut v,
            "... (for example \"Who played the lead in Alien?\") ...",
        );
        assert_eq!(v.accepted["questions"], json!(["Which shows air tonight?"]));
        let mut d = Verdict {
            accepted: json!({"description": "Answer as JSON."})
                .as_object()
                .unwrap()
                .clone(),
            ..Verdict::default()
        };
        drop_echoes(Task::Description, &mut d, "Write it. Answer as JSON: {}");
        assert!(d.accepted.is_empty() && d.problems[0].contains("repeats the instructions"));
    }

    #[test]
    fn values_a_reviewer_rejected_are_dropped_and_asked_again() {
        let ctx = EndpointContext::rejecting();
        let verdict = |v: Value| Verdict {
            accepted: v.as_object().unwrap().clone(),
            ..Verdict::default()
        };
        let mut d = verdict(json!({"description": " Lists the orders. "}));
        drop_rejected(Task::Description, &mut d, &ctx);
        assert!(d.accepted.is_empty(), "{:?}", d.accepted);
        assert!(
            d.problems[0].contains("a reviewer rejected"),
            "{:?}",
            d.problems
        );
        let mut other = verdict(json!({"description": "Lists every order of a shop."}));
        drop_rejected(Task::Description, &mut other, &ctx);
        assert!(other.problems.is_empty() && !other.accepted.is_empty());

        let mut ex = verdict(json!({"examples": {"status": "open", "page": 2}}));
        drop_rejected(Task::ParamExamples, &mut ex, &ctx);
        assert_eq!(ex.accepted["examples"], json!({"page": 2}));
        assert_eq!(ex.pending, ["status"]);
        let mut only = verdict(json!({"examples": {"status": "open"}}));
        drop_rejected(Task::ParamExamples, &mut only, &ctx);
        assert!(only.accepted.is_empty(), "nothing left is nothing accepted");
        // A summary was never rejected here: the description's rejection does not touch it.
        let mut sum = verdict(json!({"summary": "Lists the orders."}));
        drop_rejected(Task::Summary, &mut sum, &ctx);
        assert!(sum.problems.is_empty());
    }

    #[test]
    fn merge_keeps_first_answers() {
        let key = |m: Value| m.as_object().unwrap().clone();
        let a = Verdict {
            accepted: key(json!({"examples": {"sort": "asc"}})),
            problems: vec!["page: bad".into()],
            pending: vec!["page".into()],
        };
        let b = Verdict {
            accepted: key(json!({"examples": {"page": 2}})),
            ..Verdict::default()
        };
        let m = merge(Task::ParamExamples, a, b);
        assert_eq!(
            m.accepted,
            key(json!({"examples": {"sort": "asc", "page": 2}}))
        );
        assert!(m.pending.is_empty() && m.problems.is_empty());
    }
}
