//! Asking a person to consent to an API (the authorization code grant), the way their
//! client can show a link:
//!
//! - a 2026-07-28 request from a client that handles URL elicitation gets an
//!   `input_required` result carrying the elicitation; the client retries the same call
//!   with the person's answer, which by then finds their token;
//! - a 2025-11-25 session whose client handles URL elicitation is sent
//!   `elicitation/create` (mode `url`) and the call goes on once the person accepts;
//! - any other client gets a tool error that carries the link, for the model to show.

use super::exposure::Era;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, ElicitRequest, ElicitRequestParams,
    ElicitationAction, InputRequest, InputRequiredResult, InputResponses,
};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use std::time::Duration;

/// How long a session waits for the person to come back from the link.
const WAIT: Duration = Duration::from_secs(600);

/// The key of the consent request in an `input_required` result.
const INPUT_KEY: &str = "consent";

/// What asking came to.
pub enum Asked {
    /// The person says they consented: run the call again.
    Retry,
    /// The answer for the client as it stands (boxed: a result is large, retrying is
    /// nothing).
    Answer(Box<CallToolResponse>),
}

/// Asks for consent to `api` at `link`; `answered` is what a 2026-07-28 retry carries.
pub async fn ask(
    ctx: &RequestContext<RoleServer>,
    era: Era,
    api: &str,
    link: &str,
    state: &str,
    answered: Option<&InputResponses>,
) -> Asked {
    let url_mode = ctx
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.url.is_some());
    if !url_mode {
        return Asked::Answer(Box::new(with_link(api, link).into()));
    }
    let message = format!(
        "shortlist needs your permission to call the API '{api}' as you. Open the link, sign in \
         and allow access; the call goes on when you are done."
    );
    match era {
        Era::Stateless => {
            if let Some(responses) = answered {
                // The person answered, and still no token: declined, or not finished.
                let answer = match declined(responses) {
                    true => declined_result(api),
                    false => unfinished(api, link),
                };
                return Asked::Answer(Box::new(answer.into()));
            }
            let request = ElicitRequest::new(ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message,
                url: link.to_string(),
                elicitation_id: String::new(),
            });
            let requests = [(INPUT_KEY.to_string(), InputRequest::Elicitation(request))];
            Asked::Answer(Box::new(
                InputRequiredResult::from_input_requests(requests.into()).into(),
            ))
        }
        Era::Sessions => {
            let Ok(url) = url::Url::parse(link) else {
                return Asked::Answer(Box::new(with_link(api, link).into()));
            };
            match ctx
                .peer
                .elicit_url_with_timeout(message, url, state, Some(WAIT))
                .await
            {
                Ok(ElicitationAction::Accept) => Asked::Retry,
                Ok(_) => Asked::Answer(Box::new(declined_result(api).into())),
                Err(e) => {
                    tracing::info!(api, error = %e, "URL elicitation failed; answering with the link");
                    Asked::Answer(Box::new(with_link(api, link).into()))
                }
            }
        }
    }
}

/// The answer when the person says they consented and the call still finds no token.
pub fn unfinished(api: &str, link: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!(
        "consent for API '{api}' is not complete yet. Ask the user to open this link, sign in \
         and allow access, then call the tool again: {link}"
    ))])
}

/// A tool error carrying the link, for clients that cannot show one themselves.
fn with_link(api: &str, link: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!(
        "API '{api}' is called with the user's own account, and they have not allowed it yet. \
         Ask the user to open this link, sign in and allow access, then call the tool again: \
         {link}"
    ))])
}

fn declined_result(api: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!(
        "the user declined access to API '{api}', so it was not called"
    ))])
}

fn declined(responses: &InputResponses) -> bool {
    responses.get(INPUT_KEY).is_some_and(|r| {
        matches!(
            r.get("action").and_then(|a| a.as_str()),
            Some("decline" | "cancel")
        )
    })
}
