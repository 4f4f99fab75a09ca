//! The Provider client: the OpenAI Responses API request body, the streamed reply, and the
//! retry policy (pixir.md 3.1, 4; design.md "Contract decisions").
//!
//! Failures are data: every way a call can go wrong ends as a [`ProviderFailure`] carrying an
//! [`ErrorKind`], which the Turn writes into `turn_failed`. HTTP 429 and 5xx are retried, with
//! a bound and honouring `retry-after`, and only before any text was streamed (WIRE-RETRY-BOUNDED).

pub mod anthropic_messages;
pub mod gemini;
pub mod reasoning;
pub mod sse;
pub mod transport;
pub mod usage;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};

use crate::event::{Data, ErrorKind};
pub use transport::{Body, HttpRequest, HttpResponse, HttpTransport, Transport, TransportError};

/// How to reach and talk to the Provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// Base URL; requests go to `{base_url}/v1/responses`.
    pub base_url: String,
    /// Attempts after the first for HTTP 429 / 5xx before any text (default 2).
    pub max_retries: u32,
    /// Longest wait for the next chunk before the call fails with `stream_idle_timeout`.
    pub stream_idle_timeout: Duration,
    /// Backoff before retry `n` (0-based) when no `retry-after` is given: `base * 2^n`.
    pub retry_backoff: Duration,
}

impl Default for ProviderConfig {
    fn default() -> Self {
        ProviderConfig {
            base_url: "http://127.0.0.1:0".to_owned(),
            max_retries: 2,
            stream_idle_timeout: Duration::from_millis(180_000),
            retry_backoff: Duration::from_millis(500),
        }
    }
}

/// Something the stream produced that the Turn shows live.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    /// Assistant text.
    Text(String),
    /// Reasoning summary or reasoning text.
    Reasoning(String),
}

/// An output item to record, in arrival order.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputItem {
    /// An opaque reasoning item, replayed verbatim to the same model.
    Reasoning(Value),
    /// A function call with decoded arguments.
    Call {
        /// The provider's call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The decoded argument object.
        args: Value,
    },
}

/// How a successful stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// `response.completed`.
    Completed,
    /// `response.incomplete` with its `incomplete_details.reason`.
    Incomplete(String),
}

/// A call that reached a terminal success event.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// All assistant text of the call.
    pub text: String,
    /// Reasoning items and function calls, in arrival order.
    pub items: Vec<OutputItem>,
    /// The raw `usage` object of the terminal event, if any.
    pub usage: Option<Value>,
    /// How it ended.
    pub finish: Finish,
    /// HTTP requests made for this call, retries included.
    pub attempts: u32,
}

/// Why a call failed: the `error_kind`, a human message and details for `turn_failed`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderFailure {
    /// The cause.
    pub kind: ErrorKind,
    /// A human-readable message.
    pub message: String,
    /// Evidence: status, body excerpt, codes, attempts, timeout.
    pub details: Data,
}

impl ProviderFailure {
    fn new(kind: ErrorKind, message: impl Into<String>, details: Value) -> ProviderFailure {
        let details = match details {
            Value::Object(map) => map,
            _ => Data::new(),
        };
        ProviderFailure { kind, message: message.into(), details }
    }
}

/// A Responses API client over a [`Transport`].
#[derive(Clone)]
pub struct Provider {
    transport: Arc<dyn Transport>,
    config: ProviderConfig,
    session: Option<String>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider").field("config", &self.config).finish_non_exhaustive()
    }
}

/// A failed attempt, and whether (and when) it may be retried.
struct AttemptFailure {
    failure: ProviderFailure,
    retry: Option<RetryHint>,
}

/// A retryable failure: wait `retry-after` when the Provider said so, else back off.
struct RetryHint {
    retry_after: Option<Duration>,
}

impl From<ProviderFailure> for AttemptFailure {
    fn from(failure: ProviderFailure) -> Self {
        AttemptFailure { failure, retry: None }
    }
}

impl Provider {
    /// A client that sends through `transport`.
    pub fn new(transport: Arc<dyn Transport>, config: ProviderConfig) -> Provider {
        Provider { transport, config, session: None }
    }

    /// The same client, naming `session_id` in the `session_id` header of every request (as
    /// Codex does), so a Provider or a proxy can tell a child Session's calls from its parent's.
    #[must_use]
    pub fn for_session(&self, session_id: &str) -> Provider {
        Provider { session: Some(session_id.to_owned()), ..self.clone() }
    }

    /// The configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// Streams one call: POSTs `body`, feeds deltas to `on_delta`, retries what may be retried.
    ///
    /// A retry happens only for HTTP 429 / 5xx, at most `max_retries` times, and never once
    /// text reached `on_delta` (WIRE-NO-RETRY-AFTER-TEXT); each attempt is a real request.
    pub async fn stream(
        &self,
        body: &Value,
        on_delta: &mut (dyn FnMut(Delta) + Send),
    ) -> Result<Reply, ProviderFailure> {
        let bytes = Bytes::from(crate::canonical::to_string(body));
        let mut attempts = 1;
        let mut streamed_text = false;
        loop {
            let mut forward = |delta: Delta| {
                streamed_text |= matches!(delta, Delta::Text(_));
                on_delta(delta);
            };
            match self.attempt(bytes.clone(), &mut forward).await {
                Ok(mut reply) => {
                    reply.attempts = attempts;
                    return Ok(reply);
                }
                Err(AttemptFailure { retry: Some(hint), .. })
                    if attempts <= self.config.max_retries && !streamed_text =>
                {
                    tokio::time::sleep(hint.retry_after.unwrap_or_else(|| self.backoff(attempts))).await;
                    attempts += 1;
                }
                Err(AttemptFailure { mut failure, .. }) => {
                    failure.details.insert("attempts".into(), json!(attempts));
                    return Err(failure);
                }
            }
        }
    }

    fn backoff(&self, attempts: u32) -> Duration {
        self.config.retry_backoff.saturating_mul(1 << (attempts - 1).min(16))
    }

    async fn attempt(&self, body: Bytes, on_delta: &mut (dyn FnMut(Delta) + Send)) -> Result<Reply, AttemptFailure> {
        let mut headers =
            vec![("content-type".into(), "application/json".into()), ("accept".into(), "text/event-stream".into())];
        if let Some(session) = &self.session {
            headers.push(("session_id".into(), session.clone()));
        }
        let request =
            HttpRequest { url: format!("{}/v1/responses", self.config.base_url.trim_end_matches('/')), headers, body };
        let idle = self.config.stream_idle_timeout;
        let mut response = match tokio::time::timeout(idle, self.transport.send(request)).await {
            Err(_) => return Err(idle_timeout(idle).into()),
            Ok(Err(error)) => {
                let failure = ProviderFailure::new(
                    ErrorKind::Network,
                    "the provider could not be reached",
                    json!({"transport_error": error.0}),
                );
                return Err(failure.into());
            }
            Ok(Ok(response)) => response,
        };
        if !(200..300).contains(&response.status) {
            return Err(http_failure(&mut response).await);
        }
        let mut reader = StreamReader::default();
        loop {
            let chunk = match tokio::time::timeout(idle, response.body.next()).await {
                Err(_) => return Err(idle_timeout(idle).into()),
                Ok(None) => return Err(reader.eof().into()),
                Ok(Some(Err(error))) => {
                    let failure = ProviderFailure::new(
                        ErrorKind::Network,
                        "the provider stream failed before a terminal event",
                        json!({"transport_error": error.0}),
                    );
                    return Err(failure.into());
                }
                Ok(Some(Ok(chunk))) => chunk,
            };
            if let Some(reply) = reader.push(&chunk, on_delta)? {
                return Ok(reply);
            }
        }
    }
}

fn idle_timeout(idle: Duration) -> ProviderFailure {
    ProviderFailure::new(
        ErrorKind::StreamIdleTimeout,
        "the provider stream stalled waiting for the next chunk",
        json!({
            "timeout_ms": idle.as_millis() as u64,
            "next_actions": ["retry_turn", "check_network_or_provider_status"],
        }),
    )
}

/// Turns a non-2xx answer into a failure; 429 and 5xx may be retried after `retry-after`.
async fn http_failure(response: &mut HttpResponse) -> AttemptFailure {
    let status = response.status;
    let retry_header = response.header("retry-after").and_then(|value| value.trim().parse::<u64>().ok());
    let body = response.body.read_to_limit(4096).await;
    let body_json: Value =
        serde_json::from_slice(&body).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let kind = if status == 429 { ErrorKind::RateLimited } else { ErrorKind::ProviderHttpError };
    let message = body_json
        .pointer("/error/message")
        .and_then(Value::as_str)
        .map_or_else(|| format!("the provider answered HTTP {status}"), |message| format!("HTTP {status}: {message}"));
    let mut details = json!({"status": status, "body": body_json});
    if let Some(seconds) = retry_header {
        details["retry_after_s"] = json!(seconds);
    }
    let retryable = status == 429 || (500..600).contains(&status);
    AttemptFailure {
        failure: ProviderFailure::new(kind, message, details),
        retry: retryable.then(|| RetryHint { retry_after: retry_header.map(Duration::from_secs) }),
    }
}

/// Reads Responses API events out of SSE frames until a terminal event.
#[derive(Default)]
struct StreamReader {
    decoder: sse::Decoder,
    text: String,
    items: Vec<OutputItem>,
    n_frames: usize,
}

impl StreamReader {
    fn push(
        &mut self,
        chunk: &[u8],
        on_delta: &mut (dyn FnMut(Delta) + Send),
    ) -> Result<Option<Reply>, ProviderFailure> {
        for frame in self.decoder.push(chunk) {
            self.n_frames += 1;
            if let Some(reply) = self.frame(frame, on_delta)? {
                return Ok(Some(reply));
            }
        }
        Ok(None)
    }

    fn invalid(&self, reason: &str, evidence: &str) -> ProviderFailure {
        let excerpt: String = evidence.chars().take(200).collect();
        ProviderFailure::new(
            ErrorKind::InvalidResponse,
            format!("the provider sent an invalid frame: {reason}"),
            json!({"frame_index": self.n_frames, "reason": reason, "evidence": excerpt}),
        )
    }

    fn frame(
        &mut self,
        frame: sse::Frame,
        on_delta: &mut (dyn FnMut(Delta) + Send),
    ) -> Result<Option<Reply>, ProviderFailure> {
        if frame.data == "[DONE]" {
            return Ok(None);
        }
        let event: Value = serde_json::from_str(&frame.data)
            .map_err(|error| self.invalid(&format!("data is not JSON ({error})"), &frame.data))?;
        let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
        if let Some(name) = &frame.event
            && name != kind
        {
            return Err(self.invalid(&format!("event name `{name}` differs from type `{kind}`"), &frame.data));
        }
        match kind {
            "response.output_text.delta" => {
                let delta = event.get("delta").and_then(Value::as_str).unwrap_or_default();
                self.text.push_str(delta);
                on_delta(Delta::Text(delta.to_owned()));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let delta = event.get("delta").and_then(Value::as_str).unwrap_or_default();
                on_delta(Delta::Reasoning(delta.to_owned()));
            }
            "response.output_item.done" => {
                let item = event.get("item").cloned().unwrap_or(Value::Null);
                match item.get("type").and_then(Value::as_str) {
                    Some("reasoning") => self.items.push(OutputItem::Reasoning(item)),
                    Some("function_call") => {
                        let call = self
                            .function_call(&item)
                            .ok_or_else(|| self.invalid("malformed function_call item", &frame.data))?;
                        self.items.push(call);
                    }
                    _ => {}
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = event.get("response");
                let finish =
                    match response.and_then(|r| r.pointer("/incomplete_details/reason")).and_then(Value::as_str) {
                        Some(reason) if kind == "response.incomplete" => Finish::Incomplete(reason.to_owned()),
                        _ if kind == "response.incomplete" => Finish::Incomplete("unknown".to_owned()),
                        _ => Finish::Completed,
                    };
                return Ok(Some(Reply {
                    text: std::mem::take(&mut self.text),
                    items: std::mem::take(&mut self.items),
                    usage: response.and_then(|r| r.get("usage")).filter(|u| !u.is_null()).cloned(),
                    finish,
                    attempts: 1,
                }));
            }
            "response.failed" | "error" => {
                let error = if kind == "error" { Some(&event) } else { event.pointer("/response/error") };
                let code = error.and_then(|e| e.get("code")).and_then(Value::as_str).unwrap_or("unknown");
                let message = error.and_then(|e| e.get("message")).and_then(Value::as_str).unwrap_or("no message");
                return Err(ProviderFailure::new(
                    ErrorKind::ProviderHttpError,
                    format!("the provider reported `{code}` in the stream: {message}"),
                    json!({"event_type": kind, "code": code, "frame_index": self.n_frames}),
                ));
            }
            _ => {}
        }
        Ok(None)
    }

    fn function_call(&self, item: &Value) -> Option<OutputItem> {
        let call_id = item.get("call_id")?.as_str()?;
        let name = item.get("name")?.as_str()?;
        let args: Value = serde_json::from_str(item.get("arguments")?.as_str()?).ok()?;
        (!call_id.is_empty() && !name.is_empty() && args.is_object()).then(|| OutputItem::Call {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            args,
        })
    }

    fn eof(&self) -> ProviderFailure {
        ProviderFailure::new(
            ErrorKind::IncompleteStream,
            "the provider stream ended without a terminal event",
            json!({"frames": self.n_frames, "unterminated_frame": self.decoder.has_pending()}),
        )
    }
}

/// The Responses API request body for one call (pixir.md 3.1): keys sort on serialization.
pub fn request_body(model: &str, instructions: &str, input: Vec<Value>, tools: Value, cache_key: &str) -> Value {
    json!({
        "model": model,
        "instructions": instructions,
        "input": input,
        "tools": tools,
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "store": false,
        "stream": true,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": cache_key,
    })
}
