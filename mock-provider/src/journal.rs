//! The record of every request the provider saw, and why unmatched ones were refused.

use std::fmt;

use serde::Serialize;

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
    /// The body as JSON, or a JSON string of the raw text when it is not JSON.
    pub body: serde_json::Value,
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
}

impl MismatchReason {
    /// The HTTP status the refusal is answered with.
    pub fn status(&self) -> u16 {
        match self {
            Self::NoRoute { .. } | Self::Exhausted { .. } => 404,
            Self::WrongMethod => 405,
            Self::BodyNotJson { .. } => 400,
        }
    }
}

impl fmt::Display for MismatchReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoRoute { route: None, scripted } => write!(
                f,
                "expected POST /v1/responses (route `root`) or POST /routes/<name>/v1/responses; \
                 scripted routes: [{}]",
                scripted.join(", ")
            ),
            Self::NoRoute { route: Some(route), scripted } => {
                write!(f, "route `{route}` is not in the script; scripted routes: [{}]", scripted.join(", "))
            }
            Self::WrongMethod => write!(f, "expected method POST"),
            Self::BodyNotJson { error } => write!(f, "expected a JSON request body, but it did not parse: {error}"),
            Self::Exhausted { route, served } => {
                write!(f, "route `{route}` is exhausted: {served} of {served} scripted responses were already consumed")
            }
        }
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.method, self.path, self.reason)
    }
}
