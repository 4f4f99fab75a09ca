//! Wire dialects: how a scripted [`Response`](crate::Response) becomes bytes and timing on the wire.

use std::time::Duration;

use bytes::Bytes;

pub mod anthropic_messages;
pub mod beat;
pub mod gemini;
pub mod responses;

/// One step of a reply body, shared by the HTTP server and the in-process channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Bytes to send as they are.
    Bytes(Bytes),
    /// Hold the stream open for this long, sending nothing.
    Pause(Duration),
    /// Drop the connection mid-body.
    Abort,
}

/// Identity of one encoded response, chosen by the provider so ids are unique and deterministic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeContext {
    /// Response id, `resp_<n>`.
    pub response_id: String,
    /// Model name, copied from the request body's `model` (or `unknown`).
    pub model: String,
    /// First item number: items are `rs_<n>`, `msg_<n>`, `fc_<n>` (call ids `call_<n>`) from here on.
    pub item_base: usize,
}
