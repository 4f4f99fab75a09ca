//! The Provider client: one dialect-neutral [`Call`] sent in the configured wire format
//! ([`Dialect`]), the streamed reply, and the retry policy (pixir.md 3.1, 4; design.md
//! "Contract decisions").
//!
//! Each dialect is one module under [`dialect`] that builds the request from [`body`]'s pieces
//! and decodes the stream into the same [`Delta`]s, [`OutputItem`]s, [`Reply`] and
//! [`ProviderFailure`]: what reaches the Log is the same whatever the wire (docs/contract.md
//! "Dialect-neutral evidence").
//!
//! Failures are data: every way a call can go wrong ends as a [`ProviderFailure`] carrying an
//! [`ErrorKind`], which the Turn writes into `turn_failed`. HTTP 429 and 5xx are retried, with
//! a bound and honouring `retry-after`, and only before any text was streamed (WIRE-RETRY-BOUNDED).

pub mod body;
pub mod call;
pub mod decode;
pub mod dialect;
pub mod reasoning;
pub mod sse;
pub mod transcript;
pub mod transport;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::event::{Data, ErrorKind};
pub use body::WireRequest;
pub use call::Call;
pub use decode::Decode;
pub use dialect::{Dialect, UnknownDialect};
pub use transcript::Transcript;
pub use transport::{Body, HttpRequest, HttpResponse, HttpTransport, Transport, TransportError};

/// How to reach and talk to the Provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// Base URL; requests go to `{base_url}` + the dialect's path (`/v1/responses`, ...).
    pub base_url: String,
    /// The wire format.
    pub dialect: Dialect,
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
            dialect: Dialect::default(),
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
    /// A reasoning item in the runtime's own form, replayed verbatim to the same model:
    /// `{"type": "reasoning", "summary": [{"type": "summary_text", "text"}],
    /// "encrypted_content"?}` (the summary or thinking text, and the opaque payload: encrypted
    /// content, signature), whatever the wire.
    Reasoning(Value),
    /// A function call with decoded arguments.
    Call {
        /// The provider's call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The decoded argument object, or the model's text when it is not one ([`OutputItem::call`]).
        args: Value,
    },
}

impl OutputItem {
    /// A function call from the model's argument text: the decoded object, or the text itself
    /// as a JSON string when it is not a JSON object (cut off, garbage), a call the model made
    /// that the Toolbox answers as invalid arguments and never runs (ACP-INVALID-ARGUMENTS).
    /// Such text is the model's answer, not a malformed stream, so the reply stands.
    pub fn call(call_id: &str, name: &str, arguments: &str) -> OutputItem {
        let args = match serde_json::from_str::<Value>(arguments) {
            Ok(args) if args.is_object() => args,
            _ => Value::String(arguments.to_owned()),
        };
        OutputItem::Call { call_id: call_id.to_owned(), name: name.to_owned(), args }
    }
}

/// How a successful stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// A clean end (`response.completed`, `finish_reason` `stop` / `tool_calls`, ...).
    Completed,
    /// A clean but early end, with a reason in the Responses vocabulary whatever the wire:
    /// `max_output_tokens` (Chat `length`, ...) or `content_filter` (Chat `content_filter`, ...).
    Incomplete(String),
}

/// Token usage in the runtime's own form, whatever the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Input (prompt) tokens.
    pub input: u64,
    /// Cached input tokens.
    pub cached: u64,
    /// Output (completion) tokens.
    pub output: u64,
    /// Reasoning tokens, part of the output.
    pub reasoning: u64,
    /// Total tokens, as reported, else input + output.
    pub total: u64,
}

impl Usage {
    /// The `usage` object of `provider_usage` (docs/contract.md "Dialect-neutral evidence").
    pub fn record(&self) -> Value {
        json!({
            "input_tokens": self.input,
            "input_tokens_details": {"cached_tokens": self.cached},
            "output_tokens": self.output,
            "output_tokens_details": {"reasoning_tokens": self.reasoning},
            "total_tokens": self.total,
        })
    }
}

/// A call that reached a terminal success event.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// All assistant text of the call.
    pub text: String,
    /// Reasoning items and function calls, in arrival order.
    pub items: Vec<OutputItem>,
    /// The usage the Provider reported, if any.
    pub usage: Option<Usage>,
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

/// The failures a decoder reports, each with the same details whatever the wire, so the Log
/// of a failed Turn is the same in every dialect (docs/contract.md "Dialect-neutral evidence").
impl ProviderFailure {
    fn new(kind: ErrorKind, message: impl Into<String>, details: Value) -> ProviderFailure {
        let details = match details {
            Value::Object(map) => map,
            _ => Data::new(),
        };
        ProviderFailure { kind, message: message.into(), details }
    }

    /// The Provider reported an error in the stream, with its code in the OpenAI vocabulary
    /// (`server_error`, `rate_limit_exceeded`, ...).
    pub fn reported(code: &str, message: &str) -> ProviderFailure {
        ProviderFailure::new(
            ErrorKind::ProviderHttpError,
            format!("the provider reported `{code}` in the stream: {message}"),
            json!({"code": code}),
        )
    }

    /// A frame the decoder cannot read: why, and the frame's data (its first 200 chars).
    pub fn invalid(reason: &str, evidence: &str) -> ProviderFailure {
        let excerpt: String = evidence.chars().take(200).collect();
        ProviderFailure::new(
            ErrorKind::InvalidResponse,
            format!("the provider sent an invalid frame: {reason}"),
            json!({"reason": reason, "evidence": excerpt}),
        )
    }

    /// The body ended before the dialect's terminal marker; `unterminated_frame` when bytes
    /// of an unfinished frame were left.
    pub fn unterminated(unterminated_frame: bool) -> ProviderFailure {
        ProviderFailure::new(
            ErrorKind::IncompleteStream,
            "the provider stream ended without a terminal event",
            json!({"unterminated_frame": unterminated_frame}),
        )
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

    /// Streams one call, built in the configured dialect: POSTs it, feeds deltas to
    /// `on_delta`, retries what may be retried.
    ///
    /// A retry happens only for HTTP 429 / 5xx, at most `max_retries` times, and never once
    /// text reached `on_delta` (WIRE-NO-RETRY-AFTER-TEXT); each attempt is a real request.
    pub async fn stream(
        &self,
        wire: &WireRequest,
        on_delta: &mut (dyn FnMut(Delta) + Send),
    ) -> Result<Reply, ProviderFailure> {
        let mut attempts = 1;
        let mut streamed_text = false;
        loop {
            let mut forward = |delta: Delta| {
                streamed_text |= matches!(delta, Delta::Text(_));
                on_delta(delta);
            };
            match self.attempt(wire, &mut forward).await {
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

    async fn attempt(
        &self,
        wire: &WireRequest,
        on_delta: &mut (dyn FnMut(Delta) + Send),
    ) -> Result<Reply, AttemptFailure> {
        let mut headers = wire.headers.clone();
        if let Some(session) = &self.session {
            headers.push(("session_id".into(), session.clone()));
        }
        let url = format!("{}{}", self.config.base_url.trim_end_matches('/'), wire.path);
        let request = HttpRequest { url, headers, body: wire.body.clone() };
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
            return Err(http_failure(self.config.dialect, &mut response).await);
        }
        let mut reader = self.config.dialect.decoder();
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

/// Turns a non-2xx answer into a failure; 429 and 5xx may be retried after `retry-after`. The
/// details are the status, the error code the dialect's body names (in the OpenAI vocabulary)
/// and `retry_after_s`: the same whatever the wire.
async fn http_failure(dialect: Dialect, response: &mut HttpResponse) -> AttemptFailure {
    let status = response.status;
    let retry_header = response.header("retry-after").and_then(|value| value.trim().parse::<u64>().ok());
    let body = response.body.read_to_limit(4096).await;
    let body_json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let kind = if status == 429 { ErrorKind::RateLimited } else { ErrorKind::ProviderHttpError };
    let message = body_json
        .pointer("/error/message")
        .and_then(Value::as_str)
        .map_or_else(|| format!("the provider answered HTTP {status}"), |message| format!("HTTP {status}: {message}"));
    let mut details = json!({"status": status});
    if let Some(code) = dialect.error_code(&body_json) {
        details["code"] = json!(code);
    }
    if let Some(seconds) = retry_header {
        details["retry_after_s"] = json!(seconds);
    }
    let retryable = status == 429 || (500..600).contains(&status);
    AttemptFailure {
        failure: ProviderFailure::new(kind, message, details),
        retry: retryable.then(|| RetryHint { retry_after: retry_header.map(Duration::from_secs) }),
    }
}
