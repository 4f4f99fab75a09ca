//! A Session: one Log, its History, and one Turn at a time (pixir.md 2).
//!
//! Every canonical Event goes through [`Session::record`]: stamp, append to the Log, then
//! publish. History is exactly what the Log holds, so replay after a restart sees the same
//! thing a live Session saw (LOG-ROUND-TRIP).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;

use crate::control::LONGEST_WAIT;
use crate::event::{Event, EventType, Payload};
use crate::ids::{self, Clock, IdSource};
use crate::log::{self, Entry, Log, LogError, TornTail};
use crate::provider::{Call, Provider, Transcript, WireRequest};
use crate::replay::Replay;
use crate::resource::{self, Image};

/// Folder inside the workspace that holds gauntlet's own files (Logs); hidden from the tools.
pub const STATE_DIR: &str = ".gauntlet";

/// What a Session needs besides its Provider.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The Session id, also the Log's file stem.
    pub session_id: String,
    /// The folder tools work in; the Log lives under it.
    pub workspace: PathBuf,
    /// The model for the next Turn.
    pub model: String,
    /// The system instructions sent with every request.
    pub instructions: String,
    /// The whole-turn time budget (TURN-TIMEOUT-EVIDENCE).
    pub turn_timeout: Duration,
    /// Compact History before a Provider call when the last call reported at least this many
    /// input tokens (`crate::compaction`); `None` never compacts.
    pub compact_at_tokens: Option<u64>,
}

impl SessionConfig {
    /// Defaults for `session_id` working in `workspace`.
    pub fn new(session_id: &str, workspace: &Path) -> SessionConfig {
        SessionConfig {
            session_id: session_id.to_owned(),
            workspace: workspace.to_owned(),
            model: "gpt-5.5".to_owned(),
            instructions: "You are a helpful coding assistant.".to_owned(),
            turn_timeout: Duration::from_millis(600_000),
            compact_at_tokens: None,
        }
    }

    /// Where this Session's Log lives: `<workspace>/.gauntlet/sessions/<id>.ndjson`, built only
    /// from a checked id and only when neither folder nor the Log is a symlink or anything but
    /// what it must be (ACP-SESSION-ID-CONFINED). Nothing is created or read here.
    pub fn log_path(&self) -> Result<PathBuf, LogError> {
        ids::check_session_id(&self.session_id)
            .map_err(|source| LogError::InvalidSessionId { id: self.session_id.clone(), source })?;
        let state = self.workspace.join(STATE_DIR);
        let sessions = state.join("sessions");
        log::refuse_link(&state, Entry::Directory)?;
        log::refuse_link(&sessions, Entry::Directory)?;
        let path = sessions.join(format!("{}.ndjson", self.session_id));
        log::refuse_link(&path, Entry::File)?;
        Ok(path)
    }

    /// Where prompts' images are kept, content-addressed: `<workspace>/.gauntlet/resources`,
    /// when neither folder is a symlink (resource.rs).
    pub fn resource_dir(&self) -> Result<PathBuf, LogError> {
        let state = self.workspace.join(STATE_DIR);
        let resources = state.join("resources");
        log::refuse_link(&state, Entry::Directory)?;
        log::refuse_link(&resources, Entry::Directory)?;
        Ok(resources)
    }
}

/// A conversation with a durable Log.
pub struct Session {
    pub(crate) config: SessionConfig,
    pub(crate) provider: Provider,
    log: Log,
    history: Vec<Event>,
    pub(crate) ids: Arc<dyn IdSource>,
    pub(crate) clock: Clock,
    listeners: Vec<UnboundedSender<Event>>,
    torn: Option<TornTail>,
    /// The replay fold and the conversation in the Provider's dialect, kept between requests
    /// so each request costs only what History gained since the last one.
    replay: Replay,
    transcript: Transcript,
    /// Tool calls of History without a result yet, in order: `(call_id, tool)`.
    open_calls: Vec<(String, String)>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("config", &self.config)
            .field("n_events", &self.history.len())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Opens a Session over its Log, creating the Log or resuming it at `last seq + 1`; a last
    /// Turn a crash left without terminal evidence is closed first (TURN-RESTART-RECOVERY).
    ///
    /// Requests name the Session in their `session_id` header. What its tools restore from
    /// the Log (a delegating Session's children) is theirs to do once it is open.
    pub fn open(
        config: SessionConfig,
        provider: Provider,
        ids: Arc<dyn IdSource>,
        clock: Clock,
    ) -> Result<Session, LogError> {
        let mut config = config;
        // A budget from input may be anything up to u64::MAX milliseconds; a deadline past
        // what the clock can represent would overflow, so longer budgets mean "a century".
        config.turn_timeout = config.turn_timeout.min(LONGEST_WAIT);
        let (log, folded) = Log::open(&config.log_path()?)?;
        for event in &folded.events {
            ids.taken(event.id());
        }
        let provider = provider.for_session(&config.session_id);
        let mut open_calls = Vec::new();
        for event in &folded.events {
            track_call(&mut open_calls, event);
        }
        // The images History's prompts carried, from the store: requests carry them again.
        let mut replay = Replay::new(&config.model);
        if let Ok(dir) = config.resource_dir() {
            let prompts = folded.events.iter().filter(|event| event.kind() == EventType::UserMessage);
            let resources = prompts.filter_map(|event| event.data().get("resources")?.as_array()).flatten();
            for image in resources.filter_map(|descriptor| resource::restore(&dir, descriptor)) {
                replay.attach(image);
            }
        }
        Ok(Session {
            replay,
            transcript: Transcript::new(provider.config().dialect),
            config,
            provider,
            log,
            history: folded.events,
            ids,
            clock,
            listeners: Vec::new(),
            torn: folded.torn,
            open_calls,
        })
    }

    /// The torn Log tail found on open, if any.
    pub fn torn_tail(&self) -> Option<&TornTail> {
        self.torn.as_ref()
    }

    /// The configuration.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// Switches the model used from the next Provider call on. Reasoning replays only to the
    /// model that produced it, so the conversation is folded again for the new one.
    pub fn set_model(&mut self, model: &str) {
        model.clone_into(&mut self.config.model);
        if self.replay.model() != model {
            self.replay = self.replay.for_model(model);
            self.transcript = Transcript::new(self.provider.config().dialect);
        }
    }

    /// The Log file.
    pub fn log_path(&self) -> &Path {
        self.log.path()
    }

    /// History: every canonical Event, in seq order.
    pub fn history(&self) -> &[Event] {
        &self.history
    }

    /// Receives every Event as it happens, canonical and ephemeral.
    pub fn subscribe(&mut self, listener: UnboundedSender<Event>) {
        self.listeners.push(listener);
    }

    fn stamp(&self, payload: Payload, seq: Option<u64>) -> Event {
        Event::stamp(payload, &self.config.session_id, self.ids.event_id(), self.clock.timestamp(), seq)
    }

    /// Records a canonical Event: stamp, append to the Log, then publish.
    pub fn record(&mut self, payload: Payload) -> Result<(), LogError> {
        let event = self.stamp(payload, Some(self.log.next_seq()));
        self.log.append(&event)?;
        self.publish_event(&event);
        track_call(&mut self.open_calls, &event);
        self.history.push(event);
        Ok(())
    }

    /// The request of `call` with the conversation as History now stands, in the Provider's
    /// dialect: folds and converts only the Events recorded since the last request.
    pub(crate) fn wire_request(&mut self, call: &Call) -> WireRequest {
        self.wire_request_with(call, &[])
    }

    /// [`Session::wire_request`] with `extra` items after the conversation, for this request
    /// only. A compaction or a refused answer recorded since the last request starts the fold
    /// again: it changes what the earlier items of the conversation are.
    pub(crate) fn wire_request_with(&mut self, call: &Call, extra: &[Value]) -> WireRequest {
        let Session { replay, transcript, history, provider, .. } = self;
        if replay.rewritten_since(history) {
            // A fresh fold, keeping the images this process holds.
            *replay = replay.for_model(replay.model());
            *transcript = Transcript::new(provider.config().dialect);
        }
        replay.advance(history, &mut |item| transcript.push(&item));
        let mut tail = replay.tail();
        tail.extend_from_slice(extra);
        transcript.request(call, &tail)
    }

    /// Keeps the bytes of a prompt's images for the Provider requests, which carry each image
    /// where its `user_message` names it; the Log holds only descriptors.
    pub(crate) fn attach(&mut self, images: &[Image]) {
        let dir = self.config.resource_dir().ok();
        for image in images {
            // The store is for a later process: one it cannot keep costs only that process
            // the image (it then replays the prompt's text), never this Turn.
            if let Some(dir) = &dir {
                let _ = resource::store(dir, image);
            }
            self.replay.attach(image.clone());
        }
    }

    /// Publishes an ephemeral Event to listeners; it never reaches the Log.
    pub fn publish(&mut self, payload: Payload) {
        let event = self.stamp(payload, None);
        self.publish_event(&event);
    }

    fn publish_event(&mut self, event: &Event) {
        self.listeners.retain(|listener| listener.send(event.clone()).is_ok());
    }

    /// Closes every tool call that has no result with a durable orphan result, sorted by
    /// call id (TURN-ORPHAN-REPAIR). `reason` says why: `before_start_turn`, `interrupt`.
    pub fn repair_orphans(&mut self, reason: &str) -> Result<(), LogError> {
        let mut open = self.open_calls.clone();
        open.sort();
        for (call_id, tool) in open {
            let result = json!({
                "ok": false,
                "error": {
                    "kind": "orphan_tool_call",
                    "message": "the runtime closed a tool_call that had no persisted tool_result",
                    "details": {"call_id": call_id, "tool": tool, "reason": reason},
                },
            });
            let Value::Object(result) = result else { continue };
            self.record(Payload::tool_result(&call_id, result))?;
        }
        Ok(())
    }

    /// The tools' workspace.
    pub fn workspace(&self) -> &Path {
        &self.config.workspace
    }
}

/// Keeps `open` the tool calls without a result, as History grows by `event`.
fn track_call(open: &mut Vec<(String, String)>, event: &Event) {
    let call_id = event.str_field("call_id").unwrap_or_default();
    match event.kind() {
        EventType::ToolCall => open.push((call_id.to_owned(), event.str_field("name").unwrap_or_default().to_owned())),
        EventType::ToolResult => open.retain(|(id, _)| id != call_id),
        _ => {}
    }
}
