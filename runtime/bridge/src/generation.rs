//! Generation-aware sessions (ADR-012 "Session Lifecycle Contract", part B.2.8).
//!
//! Every live loop and every client reader carries the generation it was started for; only the
//! current generation may clear state or request a repair, so an old session's close or error
//! never invalidates a newer one.

use serde::{Deserialize, Serialize};

use crate::{Body, Log, LogEvent};

/// `Client.Request`'s error while no process runs.
pub const NOT_RUNNING: &str = "app-server is not running";

/// The repair reason a closed current live loop records.
pub const LIVE_LOOP_CLOSED: &str = "live_event_loop_closed";

/// The daemon's live and poll sessions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct Sessions {
    /// The live session is connected and its event loop is current.
    pub live_connected: bool,
    /// The live generation.
    pub live_generation: u64,
    /// The poll session is connected.
    pub poll_connected: bool,
    /// The poll generation.
    pub poll_generation: u64,
    /// How many times a live session was started.
    pub live_starts: u32,
    /// How many times a poll session was started.
    pub poll_starts: u32,
    /// The pending `control.repair_request`, or `""`.
    pub repair_request: String,
    /// `repair.last_reason`.
    pub repair_last_reason: String,
}

impl Default for Sessions {
    fn default() -> Sessions {
        Sessions {
            live_connected: true,
            live_generation: 0,
            poll_connected: true,
            poll_generation: 0,
            live_starts: 0,
            poll_starts: 0,
            repair_request: String::new(),
            repair_last_reason: String::new(),
        }
    }
}

impl Sessions {
    /// `ensureSessions`: start what is not connected, each start a new generation; a connected session is left alone.
    pub fn ensure(&mut self) -> Sessions {
        if !self.live_connected {
            self.live_starts = self.live_starts.saturating_add(1);
            self.live_generation = self.live_generation.saturating_add(1);
            self.live_connected = true;
        }
        if !self.poll_connected {
            self.poll_starts = self.poll_starts.saturating_add(1);
            self.poll_generation = self.poll_generation.saturating_add(1);
            self.poll_connected = true;
        }
        self.clone()
    }

    /// Whether a loop of `generation` is the current, connected live loop.
    pub fn is_current(&self, generation: u64) -> bool {
        self.live_connected && generation == self.live_generation
    }

    /// `liveEventLoop` exits: the current loop disconnects and asks for repair; a stale loop only logs.
    pub fn loop_exit(&mut self, generation: u64, cancelled: bool) -> Vec<Body> {
        let mut bodies = Vec::new();
        if self.is_current(generation) {
            self.live_connected = false;
            bodies.push(Body::Log(Log {
                generation: Some(generation),
                ..Log::new(LogEvent::AppserverLiveEventLoopClosed)
            }));
            if !cancelled {
                LIVE_LOOP_CLOSED.clone_into(&mut self.repair_request);
                LIVE_LOOP_CLOSED.clone_into(&mut self.repair_last_reason);
                bodies.push(Body::Log(Log {
                    reason: Some(LIVE_LOOP_CLOSED.to_owned()),
                    ..Log::new(LogEvent::RepairRequested)
                }));
            }
        } else {
            bodies.push(Body::Log(Log {
                generation: Some(generation),
                current_generation: Some(self.live_generation),
                ..Log::new(LogEvent::AppserverLiveEventLoopStale)
            }));
        }
        bodies.push(Body::Session(self.clone()));
        bodies
    }

    /// `repairSessions`: fresh clients under new generations, the pending request taken, then `ensure`.
    pub fn repair(&mut self) -> Sessions {
        self.live_connected = false;
        self.poll_connected = false;
        self.live_generation = self.live_generation.saturating_add(1);
        self.poll_generation = self.poll_generation.saturating_add(1);
        self.repair_request.clear();
        self.ensure()
    }
}

/// What the app server sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PayloadKind {
    /// A response to a pending request.
    Response,
    /// A request from the server (an approval, a question).
    ServerRequest,
    /// `serverRequest/resolved`.
    Resolved,
    /// A notification.
    Notification,
}

/// One app-server RPC client.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct ClientState {
    /// Initialized and running.
    pub started: bool,
    /// The generation of the running process.
    pub generation: u64,
    /// Ids of requests waiting for a response.
    pub pending: Vec<String>,
    /// Ids of server requests stored for an answer.
    pub server_requests: Vec<String>,
    /// How many `initialize` requests were sent.
    pub initialize_count: u32,
    /// How many events were broadcast to subscribers (server requests and notifications).
    pub broadcasts: u32,
    /// The error of the latest `Start`, or `""`.
    pub start_error: String,
}

/// Whether a payload reached the client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Delivery {
    /// What it was.
    pub kind: PayloadKind,
    /// Its generation.
    pub generation: u64,
    /// Its id.
    pub id: String,
    /// Only the started, current generation is handled.
    pub accepted: bool,
}

/// What a request did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RequestOutcome {
    /// The method.
    pub method: String,
    /// Whether it was sent.
    pub sent: bool,
    /// [`NOT_RUNNING`] when the client is not started.
    pub error: String,
}

impl ClientState {
    /// `Start`: a started client is shared; a failed `initialize` leaves it unstarted with nothing pending.
    ///
    /// As codex-tg's `Client.Start`: spawning the process starts a generation, and the
    /// `closeRunning` after a failed `initialize` ends it with another, so a late payload of the
    /// failed process is stale; the error is the `initialize` error as it came.
    pub fn start(&mut self, initialize_error: &str) -> ClientState {
        if !self.started {
            self.generation = self.generation.saturating_add(1);
            self.initialize_count = self.initialize_count.saturating_add(1);
            if initialize_error.is_empty() {
                self.started = true;
                self.start_error.clear();
            } else {
                self.pending.clear();
                self.generation = self.generation.saturating_add(1);
                initialize_error.clone_into(&mut self.start_error);
            }
        }
        self.clone()
    }

    /// `handlePayload(payload, generation)`: another generation's payload resolves, stores and
    /// broadcasts nothing. As upstream, a server request (with an id) and every notification,
    /// `serverRequest/resolved` included, are broadcast to subscribers.
    pub fn handle(&mut self, kind: PayloadKind, generation: u64, id: &str) -> Delivery {
        let accepted =
            self.started && generation == self.generation && !(kind == PayloadKind::ServerRequest && id.is_empty());
        if accepted {
            match kind {
                PayloadKind::Response => self.pending.retain(|pending| pending != id),
                PayloadKind::ServerRequest => self.server_requests.push(id.to_owned()),
                PayloadKind::Resolved => self.server_requests.retain(|stored| stored != id),
                PayloadKind::Notification => {}
            }
            if kind != PayloadKind::Response {
                self.broadcasts = self.broadcasts.saturating_add(1);
            }
        }
        Delivery { kind, generation, id: id.to_owned(), accepted }
    }

    /// `Request`: refused unless started, with codex-tg's error.
    pub fn request(&mut self, method: &str) -> RequestOutcome {
        if self.started {
            RequestOutcome { method: method.to_owned(), sent: true, error: String::new() }
        } else {
            RequestOutcome { method: method.to_owned(), sent: false, error: NOT_RUNNING.to_owned() }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_loop_exit_changes_nothing() {
        let mut sessions = Sessions { live_generation: 2, ..Sessions::default() };
        sessions.loop_exit(1, false);
        assert!(sessions.live_connected);
        assert_eq!((sessions.live_generation, sessions.repair_request.as_str()), (2, ""));
        sessions.loop_exit(2, false);
        assert!(!sessions.live_connected);
        assert_eq!(sessions.repair_request, LIVE_LOOP_CLOSED);
    }

    #[test]
    fn stale_payloads_are_ignored() {
        let mut client =
            ClientState { started: true, generation: 2, pending: vec!["1".into()], ..ClientState::default() };
        assert!(!client.handle(PayloadKind::Response, 1, "1").accepted);
        assert!(!client.handle(PayloadKind::ServerRequest, 1, "req-stale").accepted);
        assert!(!client.handle(PayloadKind::Notification, 1, "").accepted);
        assert_eq!((client.pending.len(), client.server_requests.len(), client.broadcasts), (1, 0, 0));
        assert!(client.handle(PayloadKind::Response, 2, "1").accepted);
        assert!(client.pending.is_empty());
    }
}
