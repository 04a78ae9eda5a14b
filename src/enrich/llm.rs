//! A client for any OpenAI-compatible chat completions endpoint (OpenAI, Ollama, vLLM,
//! llama.cpp's server).
//!
//! Servers differ in how they can be made to answer JSON, so the client asks for the best
//! it knows and steps down when a server refuses: `json_schema` (the answer is constrained
//! to the schema), then `json_object`, then the prompt alone (the answer is then read by
//! `llm_json`'s tolerant parser). A refusal is remembered for the rest of the run.
//!
//! Rate limits (429), server errors (5xx), timeouts and dropped connections are retried
//! with exponential backoff (honouring `Retry-After`). A refused key (401/403) or a wrong URL
//! (404) fails the whole run at once: every other request would fail the same way.
//!
//! The API key never appears in errors or logs: it travels only in the `Authorization`
//! header, URLs are stripped from transport errors, and echoed bodies are redacted.

use crate::text::clip_chars;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::Duration;

/// Longest `Retry-After` honoured; a server asking for more is treated as down.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);
/// Longest backoff between attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// An API key. Its `Debug` never shows it.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: String) -> ApiKey {
        ApiKey(key)
    }

    /// The key in the environment variable `var`; `None` when unset or empty.
    pub fn from_env(var: &str) -> Option<ApiKey> {
        std::env::var(var)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(|k| ApiKey(k.trim().to_string()))
    }

    /// Replaces the key wherever it appears in `text`.
    fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_string();
        }
        text.replace(&self.0, "***")
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// How JSON answers are requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum JsonMode {
    /// `json_schema`, stepping down to `json_object`, then to the prompt alone, as the
    /// server refuses.
    #[default]
    Auto,
    /// Always `response_format: json_schema`.
    JsonSchema,
    /// Always `response_format: json_object`.
    JsonObject,
    /// No `response_format`: the prompt asks for JSON and the answer is parsed tolerantly.
    Prompt,
}

/// Where and how to ask.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    /// Base URL (`http://host:port/v1`) or the full `.../chat/completions` URL.
    pub url: String,
    pub model: String,
    pub api_key: Option<ApiKey>,
    /// Per request.
    pub timeout: Duration,
    /// Retries after the first attempt, for 429/5xx/timeouts/network errors.
    pub retries: u32,
    /// First backoff; doubled on each retry.
    pub backoff: Duration,
    pub temperature: f32,
    pub json_mode: JsonMode,
}

impl LlmConfig {
    /// Defaults for a model at `url`.
    pub fn new(url: &str, model: &str) -> LlmConfig {
        LlmConfig {
            url: url.to_string(),
            model: model.to_string(),
            api_key: None,
            timeout: Duration::from_secs(120),
            retries: 4,
            backoff: Duration::from_millis(500),
            temperature: 0.0,
            json_mode: JsonMode::Auto,
        }
    }
}

/// One chat message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: &'static str,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Message {
        Message {
            role: "system",
            content: content.into(),
        }
    }
    pub fn user(content: impl Into<String>) -> Message {
        Message {
            role: "user",
            content: content.into(),
        }
    }
    pub fn assistant(content: impl Into<String>) -> Message {
        Message {
            role: "assistant",
            content: content.into(),
        }
    }
}

/// An answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub content: String,
    /// The answer stopped at `max_tokens` (`finish_reason: length`).
    pub truncated: bool,
    /// Tokens as the server counted them (0 when it does not say).
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// Why a request failed, after retries.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error("the LLM server refused the credentials (HTTP {status}); check the API key variable")]
    Unauthorized { status: u16 },
    #[error("the LLM URL answered 404; is it the base URL ending in /v1? ({message})")]
    NotFound { message: String },
    #[error("HTTP {status} from the LLM server: {message}")]
    Status { status: u16, message: String },
    #[error("the LLM server did not answer within {0:?}")]
    Timeout(Duration),
    #[error("cannot reach the LLM server: {0}")]
    Network(String),
    #[error("unusable response from the LLM server: {0}")]
    BadResponse(String),
}

impl LlmError {
    /// Errors that every further request would hit as well: the run should stop.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            LlmError::Unauthorized { .. } | LlmError::NotFound { .. }
        )
    }
}

/// One attempt's outcome, before the retry decision.
enum Attempt {
    /// Worth trying again (after `Option` delay, from `Retry-After`).
    Retry(LlmError, Option<Duration>),
    /// The server refused the request itself (400/422); `String` is its message.
    Rejected(u16, String),
    Fail(LlmError),
}

/// Counters over a run, readable while it goes on.
#[derive(Debug, Default)]
pub struct Usage {
    pub requests: AtomicU64,
    pub retries: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub completion_tokens: AtomicU64,
}

/// A chat completions client.
pub struct LlmClient {
    http: reqwest::Client,
    cfg: LlmConfig,
    endpoint: String,
    /// 0 json_schema, 1 json_object, 2 prompt only.
    level: AtomicU8,
    pub usage: Usage,
}

impl LlmClient {
    pub fn new(cfg: LlmConfig) -> Result<LlmClient, LlmError> {
        let http = reqwest::Client::builder()
            .timeout(cfg.timeout)
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("shortlist/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Network(e.without_url().to_string()))?;
        let base = cfg.url.trim_end_matches('/');
        let endpoint = if base.ends_with("/chat/completions") {
            base.to_string()
        } else {
            format!("{base}/chat/completions")
        };
        let level = match cfg.json_mode {
            JsonMode::Auto | JsonMode::JsonSchema => 0,
            JsonMode::JsonObject => 1,
            JsonMode::Prompt => 2,
        };
        Ok(LlmClient {
            http,
            cfg,
            endpoint,
            level: AtomicU8::new(level),
            usage: Usage::default(),
        })
    }

    pub fn model(&self) -> &str {
        &self.cfg.model
    }

    /// Asks for an answer in JSON matching `schema` (named `name` for `json_schema`).
    pub async fn chat(
        &self,
        messages: &[Message],
        name: &str,
        schema: &Value,
        max_tokens: u32,
    ) -> Result<Reply, LlmError> {
        let mut retries = 0;
        loop {
            let level = self.level.load(Ordering::Relaxed);
            let body = self.body(messages, name, schema, max_tokens, level);
            self.usage.requests.fetch_add(1, Ordering::Relaxed);
            match self.attempt(&body).await {
                Ok(reply) => return Ok(reply),
                Err(Attempt::Rejected(status, msg)) => {
                    if self.cfg.json_mode == JsonMode::Auto && level < 2 && about_format(&msg) {
                        // Only one request steps the level down; the others see the new one.
                        let _ = self.level.compare_exchange(
                            level,
                            level + 1,
                            Ordering::Relaxed,
                            Ordering::Relaxed,
                        );
                        tracing::info!(
                            "the LLM server refused response_format level {level}; stepping down"
                        );
                        continue;
                    }
                    return Err(LlmError::Status {
                        status,
                        message: msg,
                    });
                }
                Err(Attempt::Retry(e, after)) if retries < self.cfg.retries => {
                    let wait = after.unwrap_or_else(|| backoff(self.cfg.backoff, retries));
                    tracing::debug!("LLM request failed ({e}); retrying in {wait:?}");
                    self.usage.retries.fetch_add(1, Ordering::Relaxed);
                    retries += 1;
                    tokio::time::sleep(wait).await;
                }
                Err(Attempt::Retry(e, _)) | Err(Attempt::Fail(e)) => return Err(e),
            }
        }
    }

    fn body(
        &self,
        messages: &[Message],
        name: &str,
        schema: &Value,
        max_tokens: u32,
        level: u8,
    ) -> Value {
        let msgs: Vec<Value> = messages
            .iter()
            .map(|m| json!({"role": m.role, "content": m.content}))
            .collect();
        let mut body = json!({
            "model": self.cfg.model,
            "messages": msgs,
            "temperature": self.cfg.temperature,
            "max_tokens": max_tokens,
            "stream": false,
        });
        let format = match level {
            0 => Some(json!({
                "type": "json_schema",
                "json_schema": {"name": name, "strict": true, "schema": schema}
            })),
            1 => Some(json!({"type": "json_object"})),
            _ => None,
        };
        if let (Some(f), Some(obj)) = (format, body.as_object_mut()) {
            obj.insert("response_format".into(), f);
        }
        body
    }

    async fn attempt(&self, body: &Value) -> Result<Reply, Attempt> {
        let mut req = self.http.post(&self.endpoint).json(body);
        if let Some(k) = &self.cfg.api_key {
            req = req.bearer_auth(&k.0);
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => return Err(Attempt::Retry(self.transport(e), None)),
        };
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let text = match resp.text().await {
            Ok(t) => t,
            Err(e) => return Err(Attempt::Retry(self.transport(e), None)),
        };
        let message = self.redact(&error_message(&text));
        match status {
            200..=299 => self.reply(&text).map_err(Attempt::Fail),
            401 | 403 => Err(Attempt::Fail(LlmError::Unauthorized { status })),
            404 => Err(Attempt::Fail(LlmError::NotFound { message })),
            400 | 422 => Err(Attempt::Rejected(status, message)),
            408 | 429 | 500..=599 => {
                let after = match retry_after {
                    Some(d) if d > MAX_RETRY_AFTER => None,
                    other => other,
                };
                Err(Attempt::Retry(LlmError::Status { status, message }, after))
            }
            _ => Err(Attempt::Fail(LlmError::Status { status, message })),
        }
    }

    fn transport(&self, e: reqwest::Error) -> LlmError {
        if e.is_timeout() {
            LlmError::Timeout(self.cfg.timeout)
        } else {
            LlmError::Network(self.redact(&e.without_url().to_string()))
        }
    }

    fn redact(&self, text: &str) -> String {
        match &self.cfg.api_key {
            Some(k) => k.redact(text),
            None => text.to_string(),
        }
    }

    fn reply(&self, text: &str) -> Result<Reply, LlmError> {
        let v: Value = serde_json::from_str(text).map_err(|e| {
            LlmError::BadResponse(format!("not JSON ({e}): {}", clip_chars(text, 120)))
        })?;
        let n = |k: &str| {
            v.get("usage")
                .and_then(|u| u.get(k))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let (prompt_tokens, completion_tokens) = (n("prompt_tokens"), n("completion_tokens"));
        self.usage
            .prompt_tokens
            .fetch_add(prompt_tokens, Ordering::Relaxed);
        self.usage
            .completion_tokens
            .fetch_add(completion_tokens, Ordering::Relaxed);
        let choice = v
            .get("choices")
            .and_then(|c| c.get(0))
            .ok_or_else(|| LlmError::BadResponse("no choices in the response".into()))?;
        let content = choice
            .pointer("/message/content")
            .and_then(Value::as_str)
            .ok_or_else(|| LlmError::BadResponse("the answer has no message content".into()))?;
        Ok(Reply {
            content: content.to_string(),
            truncated: choice.get("finish_reason").and_then(Value::as_str) == Some("length"),
            prompt_tokens,
            completion_tokens,
        })
    }
}

/// Does a 400's message say the server cannot do the requested `response_format`?
fn about_format(msg: &str) -> bool {
    let m = msg.to_ascii_lowercase();
    [
        "response_format",
        "json_schema",
        "json_object",
        "schema",
        "grammar",
    ]
    .iter()
    .any(|w| m.contains(w))
}

/// The error text of a failed response: `error.message` when the body is OpenAI-shaped,
/// the start of the body otherwise.
fn error_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("message"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    clip_chars(from_json.as_deref().unwrap_or(body).trim(), 200)
}

/// `base * 2^n`, capped, with up to 25% jitter so that concurrent retries spread out.
fn backoff(base: Duration, n: u32) -> Duration {
    let exp = base.saturating_mul(1u32 << n.min(16)).min(MAX_BACKOFF);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let jitter = exp.mul_f64(f64::from(nanos % 1000) / 4000.0);
    exp + jitter
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_show() {
        let k = ApiKey::new("sk-secret-123".into());
        assert_eq!(format!("{k:?}"), "ApiKey(***)");
        assert_eq!(k.redact("bad key sk-secret-123!"), "bad key ***!");
    }

    #[test]
    fn messages_and_backoff() {
        assert_eq!(
            error_message(r#"{"error": {"message": "response_format not supported"}}"#),
            "response_format not supported"
        );
        assert!(about_format("Invalid response_format"));
        assert!(!about_format(
            "the request exceeds the available context size"
        ));
        let b = backoff(Duration::from_millis(100), 3);
        assert!(
            b >= Duration::from_millis(800) && b <= Duration::from_millis(1000),
            "{b:?}"
        );
        assert!(backoff(Duration::from_secs(1), 30) <= MAX_BACKOFF.mul_f64(1.25));
    }
}
