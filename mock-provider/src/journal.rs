//! The record of every request the provider saw, when its response ended, and why unmatched
//! ones were refused.

use std::fmt;
use std::time::Duration;

use serde::{Serialize, Serializer};

use crate::dialect::Dialect;
use crate::increment::Increment;

/// One request as received, with what answered it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JournalEntry {
    /// Route the request addressed (empty when the path names no route).
    pub route: String,
    /// Index of the scripted response served, `None` when unmatched.
    pub response_index: Option<usize>,
    /// HTTP method.
    pub method: String,
    /// Request path.
    pub path: String,
    /// `content-type` header.
    pub content_type: Option<String>,
    /// `accept` header.
    pub accept: Option<String>,
    /// The body as JSON, or a JSON string of the raw text when it is not JSON, as an increment
    /// to the previous body of the same route (see [`crate::increment`]).
    pub body: Increment,
    /// When it arrived and when its response body ended.
    pub timing: Timing,
    /// The HTTP status it was answered with: what the agent met on the wire (a failing response
    /// asked for whole, not streamed, is an HTTP error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The turn (from 0) the client had begun when it arrived, if it said
    /// (`MockProvider::begin_turn`).
    pub turn: Option<usize>,
    /// For a request past its turn's responses that the script could not place, what it came
    /// after (and so how it was answered); `None` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unplaced: Option<After>,
}

/// When a request arrived and when its response body ended, as time since the provider started
/// on tokio's clock (virtual on a paused runtime), so a client on the same runtime can compare
/// its own moments with them (ACP-CANCEL-CLOSES-REQUEST).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Timing {
    /// When the request arrived.
    #[serde(rename = "received_ms", serialize_with = "millis")]
    pub received: Duration,
    /// When and how the response body ended; `None` while it is still open.
    pub ended: Option<Ended>,
}

/// The end of a response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Ended {
    /// When, as time since the provider started.
    #[serde(rename = "at_ms", serialize_with = "millis")]
    pub at: Duration,
    /// Who ended it.
    pub how: StreamEnd,
}

/// Who ended a response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamEnd {
    /// The provider sent all of it: a clean end of body.
    Finished,
    /// The provider dropped the connection, as its script says.
    Disconnected,
    /// The client closed the connection (dropped the body) before the provider was done.
    ClientClosed,
}

impl fmt::Display for StreamEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Finished => "finished by the provider",
            Self::Disconnected => "disconnected by the provider's script",
            Self::ClientClosed => "closed by the client",
        })
    }
}

/// A duration as fractional milliseconds, for readable JSON.
fn millis<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64() * 1000.0)
}

/// A request no script answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    /// HTTP method.
    pub method: String,
    /// Request path.
    pub path: String,
    /// Why it was not matched.
    pub reason: MismatchReason,
}

/// Why a request was not matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MismatchReason {
    /// The path is not a responses endpoint, or names a route the script lacks.
    NoRoute {
        /// Route named by the path, if any.
        route: Option<String>,
        /// Routes the script has.
        scripted: Vec<String>,
        /// The dialect the provider speaks.
        dialect: Dialect,
    },
    /// The path is another dialect's endpoint: the agent speaks a wire format the provider
    /// was not told to speak.
    WrongDialect {
        /// The dialect whose endpoint was called.
        called: Dialect,
        /// The dialect the provider speaks (what the profile or scenario says).
        expected: Dialect,
    },
    /// Only `POST` is answered.
    WrongMethod,
    /// The body did not parse as JSON.
    BodyNotJson {
        /// Parser message.
        error: String,
    },
    /// Every response of the route was already served.
    Exhausted {
        /// The route.
        route: String,
        /// Responses it had (all consumed).
        served: usize,
    },
    /// Every response of the current turn was already served: a request of the agent's own
    /// after the turn's answer, or a retry the mock no longer repeats.
    TurnExhausted {
        /// The turn, from 0.
        turn: usize,
        /// Responses it had (all consumed).
        served: usize,
        /// What the turn's last request was answered with.
        after: After,
    },
}

/// What answered the last request of a turn before one its script could not place: what the
/// unplaced request is, as far as the provider can tell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum After {
    /// A clean answer: the request is the agent's own (a side request, a queued prompt's).
    Answer,
    /// Tool calls: the request carries their results, a step of the tool loop the script ends
    /// before (it expects the turn to end first, on a budget or a cancel).
    ToolCalls,
    /// A clean answer the provider cut short for this reason: likely a continuation.
    Truncated(String),
    /// A fault, and this request is no retry of it: its conversation differs from the faulted
    /// request's (a resume from the text delivered, a "continue", a rewrite). It gets the rest of
    /// the faulted response's text, if a cut kept some back, and a clean end.
    Continuation {
        /// The faulted response's index in the root route.
        of: usize,
        /// The client gave up on it during its stall, so it saw only the text before it.
        given_up: bool,
    },
    /// A fault, already met again this many times in a row: the retries went past
    /// [`crate::script::RETRY_CAP`].
    Fault {
        /// Times the fault was repeated.
        repeats: usize,
    },
    /// Nothing: the turn has no scripted response, or none was asked before.
    Nothing,
    /// Whatever it was: the script refuses every request past its turn's responses with
    /// HTTP 500 (`exhausted = "unscripted"`).
    Refused,
}

impl After {
    /// Whether the unplaced request gets an empty clean response rather than an HTTP error:
    /// anything but a retry past the cap, which no agent should still be making.
    pub fn answers_empty(&self) -> bool {
        !matches!(self, After::Fault { .. } | After::Refused)
    }
}

impl MismatchReason {
    /// The HTTP status the refusal is answered with.
    pub fn status(&self) -> u16 {
        match self {
            Self::NoRoute { .. } | Self::Exhausted { .. } | Self::WrongDialect { .. } => 404,
            Self::WrongMethod => 405,
            Self::BodyNotJson { .. } => 400,
            Self::TurnExhausted { after, .. } if after.answers_empty() => 200,
            Self::TurnExhausted { .. } => 500,
        }
    }
}

impl fmt::Display for MismatchReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoRoute { route: None, scripted, dialect } => write!(
                f,
                "expected {} (route `root`), or the same under /routes/<name>; scripted routes: [{}]",
                dialect.endpoints(),
                scripted.join(", ")
            ),
            Self::WrongDialect { called, expected } => {
                write!(f, "the agent called {} ({}); its profile says {expected}", called.endpoints(), called.human())
            }
            Self::NoRoute { route: Some(route), scripted, .. } => {
                write!(f, "route `{route}` is not in the script; scripted routes: [{}]", scripted.join(", "))
            }
            Self::WrongMethod => write!(f, "expected method POST"),
            Self::BodyNotJson { error } => write!(f, "expected a JSON request body, but it did not parse: {error}"),
            Self::TurnExhausted { turn, served, after } => {
                write!(f, "turn {} is exhausted: its {served} scripted response(s) were already served; ", turn + 1)?;
                match after {
                    After::Answer => write!(
                        f,
                        "this request came after the turn's answer (the agent's own: a side request or a queued prompt's) and got an empty clean response"
                    ),
                    After::ToolCalls => write!(
                        f,
                        "this request came after the turn's tool calls, a step of the tool loop the script ends before, and got an empty clean response"
                    ),
                    After::Truncated(reason) => write!(
                        f,
                        "this request came after an answer cut short (`{reason}`), a continuation, and got an empty clean response"
                    ),
                    After::Continuation { of, .. } => write!(
                        f,
                        "this request came after a fault (response {}) with another conversation than the faulted request's, a continuation and no retry, and got the rest of the faulted response's text and a clean end",
                        of + 1
                    ),
                    After::Fault { repeats } => write!(
                        f,
                        "this request retried a fault already met again {repeats} times in a row, the most the mock repeats; it got HTTP 500"
                    ),
                    After::Nothing => write!(f, "this request is unscripted and got an empty clean response"),
                    After::Refused => write!(f, "this request is unscripted and got HTTP 500"),
                }
            }
            Self::Exhausted { route, served } => {
                write!(f, "route `{route}` is exhausted: {served} of {served} scripted responses were already consumed")
            }
        }
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            MismatchReason::WrongDialect { called, expected } => write!(
                f,
                "the agent called {} {} ({}); its profile says {expected}",
                self.method,
                self.path,
                called.human()
            ),
            reason => write!(f, "{} {}: {reason}", self.method, self.path),
        }
    }
}
