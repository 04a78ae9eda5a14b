//! Calls of 2026-07-28 clients that wait for the person's answer to an upstream's question.
//!
//! An upstream MCP server may ask its client for input during a call (`elicitation/create`).
//! A session-era client is asked on its session while the call waits. A 2026-07-28 client
//! has no session: it is asked through the call's own result (`input_required`, the
//! revision's multi-round-trip requests) and sends the call again with its answer. So the
//! upstream call goes on in a task of its own and, at its first question, is parked here
//! under a fresh random `requestState`; the retry that names that state, from the same
//! person and for the same tool, hands the answer to the waiting question and waits for what
//! comes next (the result, or another question).
//!
//! A parked call belongs to the replica that holds it: a retry that reaches another one,
//! or comes after [`WAIT`], finds nothing and is told to call again; its question is
//! declined upstream. A state is used once, and only by whoever it was made for.

use crate::upstream::elicit::Asker;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, ElicitRequest, ElicitRequestParams,
    ElicitResult, InputRequest, InputRequiredResult, InputResponses,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// How long a question waits for the person's retry.
pub const WAIT: Duration = Duration::from_secs(600);
/// The most calls parked at once; beyond it the oldest question is declined.
const MAX: usize = 1_000;
/// The key of the upstream's question in an `input_required` result.
pub const INPUT_KEY: &str = "upstream";

type Reply = oneshot::Sender<Result<ElicitResult, String>>;
/// A question from the upstream, and where its answer goes.
pub type Question = (ElicitRequestParams, Reply);

/// A call going on in its own task, ending in a `T`, and the questions it asks.
pub struct Running<T> {
    pub call: tokio::task::JoinHandle<T>,
    pub questions: mpsc::Receiver<Question>,
}

struct Waiting<T> {
    owner: String,
    tool: String,
    running: Running<T>,
    reply: Reply,
    since: Instant,
}

/// What driving a call came to.
pub enum Step<T> {
    /// The call ended (`Err`: its task failed, said).
    Done(Result<T, String>),
    /// It asks the person: the answer for the client.
    Asked(Box<CallToolResponse>),
}

/// The calls parked on this replica (see the module documentation).
pub struct Parked<T> {
    calls: Mutex<HashMap<String, Waiting<T>>>,
}

impl<T> Default for Parked<T> {
    fn default() -> Self {
        Parked {
            calls: Mutex::default(),
        }
    }
}

/// An asker that hands each question of a call to [`Parked::drive`], for a client that
/// takes forms (`form`) and URLs (`url`); with it, where the questions arrive.
pub fn asker(form: bool, url: bool) -> (Asker, mpsc::Receiver<Question>) {
    let (tx, rx) = mpsc::channel::<Question>(1);
    let ask: Asker = Arc::new(move |params| {
        let tx = tx.clone();
        let allowed = match &params {
            ElicitRequestParams::FormElicitationParams { .. } => form,
            ElicitRequestParams::UrlElicitationParams { .. } => url,
            _ => false,
        };
        Box::pin(async move {
            if !allowed {
                return Err("the client does not take this kind of elicitation".to_string());
            }
            let (reply, answer) = oneshot::channel();
            tx.send((params, reply))
                .await
                .map_err(|_| "the call is no longer waited for".to_string())?;
            answer
                .await
                .map_err(|_| "the person did not answer in time".to_string())?
        })
    });
    (ask, rx)
}

impl<T> Parked<T> {
    /// Waits for `running`: its end, or its next question, upon which it is parked for
    /// `owner` and `tool` and the person is asked.
    pub async fn drive(&self, mut running: Running<T>, owner: &str, tool: &str) -> Step<T> {
        tokio::select! {
            ended = &mut running.call => Step::Done(ended.map_err(|e| format!("the call failed: {e}"))),
            Some((question, reply)) = running.questions.recv() => {
                let state = uuid::Uuid::new_v4().simple().to_string();
                self.park(state.clone(), Waiting {
                    owner: owner.to_string(),
                    tool: tool.to_string(),
                    running,
                    reply,
                    since: Instant::now(),
                });
                let requests = [(
                    INPUT_KEY.to_string(),
                    InputRequest::Elicitation(ElicitRequest::new(question)),
                )];
                Step::Asked(Box::new(
                    InputRequiredResult::new(Some(requests.into()), Some(state)).into(),
                ))
            }
        }
    }

    /// The call parked under `state` for `owner` and `tool`, its question answered with
    /// what `answered` holds (declined when it holds nothing usable); `None` when there is
    /// no such call here.
    pub fn resume(
        &self,
        state: &str,
        owner: &str,
        tool: &str,
        answered: Option<&InputResponses>,
    ) -> Option<Running<T>> {
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        let fits = calls
            .get(state)
            .is_some_and(|w| w.owner == owner && w.tool == tool && w.since.elapsed() < WAIT);
        if !fits {
            return None;
        }
        let w = calls.remove(state)?;
        let answer = answered
            .and_then(|a| a.get(INPUT_KEY))
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok())
            .unwrap_or_else(crate::upstream::elicit::declined);
        let _ = w.reply.send(Ok(answer));
        Some(w.running)
    }

    fn park(&self, state: String, waiting: Waiting<T>) {
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        // Dropped, a question's reply declines it upstream and its call ends unheard.
        calls.retain(|_, w| w.since.elapsed() < WAIT);
        if calls.len() >= MAX {
            if let Some(oldest) = calls
                .iter()
                .min_by_key(|(_, w)| w.since)
                .map(|(k, _)| k.clone())
            {
                calls.remove(&oldest);
            }
        }
        calls.insert(state, waiting);
    }

    /// How many calls wait for an answer.
    pub fn len(&self) -> usize {
        self.calls.lock().map(|c| c.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The answer to a retry whose call is not here.
pub fn gone() -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(
        "the call that asked this question is no longer waiting (it ended, timed out, or ran \
         on another replica of this server): call the tool again",
    )])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ElicitationAction;

    fn form() -> ElicitRequestParams {
        serde_json::from_value(serde_json::json!({
            "mode": "form",
            "message": "Which colour?",
            "requestedSchema": {"type": "object", "properties": {"c": {"type": "string"}}}
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn a_question_parks_the_call_for_its_owner_only() {
        let parked = Parked::<CallToolResult>::default();
        let (ask, questions) = asker(true, false);
        let call = tokio::spawn(async move {
            let answer = ask(form()).await;
            let said = match answer {
                Ok(a) => format!("{:?} {}", a.action, a.content.unwrap_or_default()),
                Err(e) => e,
            };
            CallToolResult::success(vec![ContentBlock::text(said)])
        });
        let step = parked
            .drive(Running { call, questions }, "alice", "t")
            .await;
        let Step::Asked(asked) = step else {
            panic!("the call asked")
        };
        let CallToolResponse::InputRequired(asked) = *asked else {
            panic!("input_required")
        };
        let v = serde_json::to_value(&asked).unwrap();
        let state = v["requestState"].as_str().unwrap().to_string();
        assert_eq!(
            v["inputRequests"][INPUT_KEY]["params"]["message"],
            "Which colour?"
        );
        assert_eq!(parked.len(), 1);
        // Not bob's, not another tool's.
        assert!(parked.resume(&state, "bob", "t", None).is_none());
        assert!(parked.resume(&state, "alice", "u", None).is_none());
        let answered: InputResponses = [(
            INPUT_KEY.to_string(),
            serde_json::json!({"action": "accept", "content": {"c": "teal"}}),
        )]
        .into();
        let running = parked
            .resume(&state, "alice", "t", Some(&answered))
            .unwrap();
        assert!(
            parked.resume(&state, "alice", "t", None).is_none(),
            "used once"
        );
        let Step::Done(Ok(r)) = parked.drive(running, "alice", "t").await else {
            panic!("the call ended")
        };
        let text = serde_json::to_value(&r).unwrap()["content"][0]["text"].clone();
        assert_eq!(
            text,
            format!("{:?} {}", ElicitationAction::Accept, r#"{"c":"teal"}"#)
        );
    }

    #[tokio::test]
    async fn a_kind_the_client_does_not_take_is_declined_at_once() {
        let (ask, _questions) = asker(false, true);
        assert!(ask(form()).await.is_err());
    }
}
