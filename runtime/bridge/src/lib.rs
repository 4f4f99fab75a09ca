//! The codex-tg bridge: a deterministic reference of ADR-012 "Turn Lifecycle Normalization" (seed 003).
//!
//! codex-tg drives codex app-server from Telegram. Its `thread/read` answers can contradict
//! themselves (a final answer under an `inProgress` status, a stale `activeTurnId`, a transient
//! `interrupted`), and ADR-012 says how the bridge normalizes them. This module replays that
//! behaviour step by step, with no IO and no clock: time is each step's `at_ms`.
//!
//! # Brief overview
//!
//! - [`snapshot`]: `thread/read` to a normalized [`Snapshot`](snapshot::Snapshot); final answers are terminal evidence.
//! - [`merge`]: the stored [`ThreadRow`](merge::ThreadRow) and `mergeThreadMetadata`.
//! - [`steer`]: operator input to steer, fall back to `turn/start`, or block; `/stop`.
//! - [`interrupted`]: the deferred `interrupted` terminal gate.
//! - [`poll`]: normalize, merge, gate, store: the observer's pipeline.
//! - [`live`]: live notifications to turn lifecycle events.
//! - [`generation`]: generation-aware live and poll sessions and the RPC client.
//! - [`render`]: the nil-safe helpers behind every Telegram-visible text.
//! - [`panel`]: thread panels, synced from Telegram input and from the global observer.
//! - [`status`] and [`fingerprint`]: the status vocabulary and SHA-1 fingerprints.
//!
//! # Format
//!
//! [`Config`], [`Step`] and [`Record`] are the adapter protocol (docs/adapters.md): another
//! implementation reads the config, then one [`Step`] per line, and writes one [`Record`] per line.
//! A step is `{"at_ms": 0, "do": {"<action>": {...}}}`; every record is a flat object with `step`,
//! `at_ms`, `record` (what it is) and its fields. Arbitrary app-server payloads are JSON values;
//! where a scenario file (TOML, which has no null) needs a null, the `*_json` twin of the field
//! takes the same value as JSON text. Given both, or JSON text that does not parse, is an error.
//!
//! docs/adapters.md ("Bridge steps and records") lists every action with its arguments and
//! the records it produces, and every config key.
//!
//! Records: `snapshot` ([`SnapshotRecord`]), `thread` ([`ThreadRecord`]), `gate`
//! ([`GateDecision`]), `event` ([`DiffEvent`]), `stored` ([`Stored`]), `decision`
//! ([`Decision`]), `log` ([`Log`]), `session` ([`Sessions`]), `live_event`
//! ([`LiveEventOutcome`]), `client` ([`ClientState`]), `delivery` ([`Delivery`]), `request`
//! ([`RequestOutcome`]), `rendered` ([`render::Rendered`]), `message` ([`panel::Message`]), `panel`
//! ([`panel::Panel`]); each type's fields are its keys.

pub mod fingerprint;
pub mod generation;
pub mod interrupted;
pub mod live;
pub mod merge;
pub mod panel;
pub mod poll;
pub mod render;
pub mod snapshot;
pub mod status;
pub mod steer;

use std::collections::VecDeque;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use generation::{ClientState, Delivery, PayloadKind, RequestOutcome, Sessions};
use interrupted::{GateDecision, GateReason, Markers, TurnRef};
use merge::ThreadRow;
use snapshot::{DiffEvent, Snapshot, SnapshotState};
use steer::Decision;

/// The scenario's settings: the stored state before the first step and the app-server stub.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// `ObserverPollInterval` in milliseconds (upstream default 5 s; its test services use 0).
    pub observer_poll_ms: u64,
    /// The stored thread row; `None` means the bridge knows no thread.
    pub thread: Option<ThreadRow>,
    /// The stored snapshot state of that thread; `None` (the key left out) when none is stored yet.
    pub snapshot: Option<SnapshotState>,
    /// Turns marked as started from Telegram (`turn_origin.telegram.<thread>.<turn>`).
    pub telegram_origin: Vec<TurnRef>,
    /// Turns the operator stopped (`turn_terminal.explicit_interrupt.<thread>.<turn>`).
    pub explicit_interrupt: Vec<TurnRef>,
    /// A turn armed for steering by an earlier card action, or `""`.
    pub armed_steer_turn_id: String,
    /// How the stubbed app server answers.
    pub app_server: AppServer,
    /// The live and poll sessions.
    pub sessions: Sessions,
    /// The RPC client of one session.
    pub client: ClientState,
    /// The thread panels.
    pub panels: Vec<panel::Panel>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            observer_poll_ms: 5_000,
            thread: None,
            snapshot: None,
            telegram_origin: Vec::new(),
            explicit_interrupt: Vec::new(),
            armed_steer_turn_id: String::new(),
            app_server: AppServer::default(),
            sessions: Sessions::default(),
            client: ClientState::default(),
            panels: Vec::new(),
        }
    }
}

/// The stubbed app server (upstream `stubSession`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(try_from = "AppServerForm", into = "AppServerForm")]
pub struct AppServer {
    /// What `thread/read` returns for any thread; `null` is a nil result.
    pub thread_read: Value,
    /// `turn/steer` errors consumed in order, one per call.
    pub steer_errors: Vec<String>,
    /// The error of every later `turn/steer`; `""` means success.
    pub steer_error: String,
    /// The turn id `turn/start` answers.
    pub started_turn_id: String,
}

impl Default for AppServer {
    fn default() -> AppServer {
        AppServer {
            thread_read: Value::Null,
            steer_errors: Vec::new(),
            steer_error: String::new(),
            started_turn_id: "started-turn".to_owned(),
        }
    }
}

#[derive(Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
struct AppServerForm {
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    thread_read: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thread_read_json: Option<String>,
    steer_errors: Vec<String>,
    steer_error: String,
    started_turn_id: String,
}

impl Default for AppServerForm {
    fn default() -> AppServerForm {
        let stub = AppServer::default();
        AppServerForm {
            thread_read: None,
            thread_read_json: None,
            steer_errors: stub.steer_errors,
            steer_error: stub.steer_error,
            started_turn_id: stub.started_turn_id,
        }
    }
}

impl TryFrom<AppServerForm> for AppServer {
    type Error = JsonTwinError;

    fn try_from(form: AppServerForm) -> Result<AppServer, JsonTwinError> {
        Ok(AppServer {
            thread_read: one_of("thread_read", form.thread_read, form.thread_read_json)?,
            steer_errors: form.steer_errors,
            steer_error: form.steer_error,
            started_turn_id: form.started_turn_id,
        })
    }
}

impl From<AppServer> for AppServerForm {
    fn from(stub: AppServer) -> AppServerForm {
        AppServerForm {
            thread_read: Some(stub.thread_read),
            thread_read_json: None,
            steer_errors: stub.steer_errors,
            steer_error: stub.steer_error,
            started_turn_id: stub.started_turn_id,
        }
    }
}

/// Keeps a present `null` as `Some(Null)`, so JSON input can say nil without the `*_json` twin.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// A JSON value given as `name` (a TOML or JSON value) or `name_json` (JSON text); neither is `null`.
fn one_of(name: &'static str, value: Option<Value>, json: Option<String>) -> Result<Value, JsonTwinError> {
    match (value, json) {
        (Some(_), Some(_)) => Err(JsonTwinError::Both { name }),
        (Some(value), None) => Ok(value),
        (None, Some(text)) => serde_json::from_str(&text).map_err(|source| JsonTwinError::NotJson { name, source }),
        (None, None) => Ok(Value::Null),
    }
}

/// A field that takes a JSON value as `name` or as JSON text in its `name_json` twin, given wrong.
#[derive(Debug)]
pub enum JsonTwinError {
    /// Both `name` and `name_json` were given.
    Both {
        /// The field, e.g. `params`.
        name: &'static str,
    },
    /// `name_json` is not JSON text.
    NotJson {
        /// The field, e.g. `params`.
        name: &'static str,
        /// Why it does not parse.
        source: serde_json::Error,
    },
}

impl std::fmt::Display for JsonTwinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonTwinError::Both { name } => write!(f, "give `{name}` or `{name}_json`, not both"),
            JsonTwinError::NotJson { name, source } => write!(f, "`{name}_json` is not JSON: {source}"),
        }
    }
}

impl std::error::Error for JsonTwinError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JsonTwinError::Both { .. } => None,
            JsonTwinError::NotJson { source, .. } => Some(source),
        }
    }
}

/// One `thread/read` result: `result` (a table) or `result_json` (JSON text); absent or `null` is nil.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(try_from = "ThreadReadForm", into = "ThreadReadForm")]
pub struct ThreadRead {
    /// The raw result.
    pub result: Value,
}

#[derive(Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
struct ThreadReadForm {
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_json: Option<String>,
}

impl TryFrom<ThreadReadForm> for ThreadRead {
    type Error = JsonTwinError;

    fn try_from(form: ThreadReadForm) -> Result<ThreadRead, JsonTwinError> {
        Ok(ThreadRead { result: one_of("result", form.result, form.result_json)? })
    }
}

impl From<ThreadRead> for ThreadReadForm {
    fn from(read: ThreadRead) -> ThreadReadForm {
        ThreadReadForm { result: Some(read.result), result_json: None }
    }
}

/// One live app-server notification: `method` and `params` (or `params_json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(try_from = "NotificationForm", into = "NotificationForm")]
pub struct Notification {
    /// `turn/started`, `turn/completed`, `item/completed`, ...
    pub method: String,
    /// The params; `null` when neither form is given.
    pub params: Value,
}

#[derive(Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
struct NotificationForm {
    method: String,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    params: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    params_json: Option<String>,
}

impl TryFrom<NotificationForm> for Notification {
    type Error = JsonTwinError;

    fn try_from(form: NotificationForm) -> Result<Notification, JsonTwinError> {
        Ok(Notification { method: form.method, params: one_of("params", form.params, form.params_json)? })
    }
}

impl From<Notification> for NotificationForm {
    fn from(notification: Notification) -> NotificationForm {
        NotificationForm { method: notification.method, params: Some(notification.params), params_json: None }
    }
}

/// A snapshot given directly, in the vocabulary of the `snapshot` record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GivenSnapshot {
    /// The snapshot.
    pub snapshot: Snapshot,
}

/// Operator text sent to a thread from Telegram.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The message.
    pub text: String,
    /// The turn of the card the message replies to, or `""` for a plain message.
    #[serde(default)]
    pub route_turn_id: String,
    /// The target thread; `""` means the stored thread.
    #[serde(default)]
    pub thread_id: String,
}

/// `/stop` for a thread.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct Stop {
    /// The target thread; `""` means the stored thread.
    pub thread_id: String,
}

/// No arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Nothing {}

/// A live event loop of one generation ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LoopExit {
    /// The generation the loop was started for.
    pub generation: u64,
    /// The daemon context was cancelled (shutdown): no repair is requested.
    #[serde(default)]
    pub cancelled: bool,
}

/// A live event delivered to the loop of one generation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LiveEvent {
    /// The generation of the loop that received it.
    pub generation: u64,
}

/// `Client.Start`; `initialize_error` makes the app server answer `initialize` with that error.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct ClientStart {
    /// The `initialize` error message, or `""` for success.
    pub initialize_error: String,
}

/// One payload read from the app server by the reader of one generation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ClientPayload {
    /// What the payload is.
    pub kind: PayloadKind,
    /// The generation of the process that sent it.
    pub generation: u64,
    /// The JSON-RPC id (responses, server requests, resolutions); `""` for notifications.
    #[serde(default)]
    pub id: String,
}

/// `Client.Request(method)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ClientRequest {
    /// The method.
    pub method: String,
}

/// A nil-safe helper and its arguments; `value` or `value_json` (JSON text, for nulls) is the input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(try_from = "RenderForm", into = "RenderForm")]
pub struct Render {
    /// Which helper.
    pub helper: render::Helper,
    /// Its main argument; `null` when neither form is given.
    pub value: Value,
    /// `string_value`'s fallback.
    pub fallback: String,
    /// `map_string`'s key.
    pub key: String,
    /// `user_input_response`'s answer.
    pub answer: String,
    /// `event_msg`'s timestamp.
    pub ts: String,
}

#[derive(Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
struct RenderForm {
    helper: render::Helper,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    value: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value_json: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    fallback: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    answer: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    ts: String,
}

impl TryFrom<RenderForm> for Render {
    type Error = JsonTwinError;

    fn try_from(form: RenderForm) -> Result<Render, JsonTwinError> {
        Ok(Render {
            helper: form.helper,
            value: one_of("value", form.value, form.value_json)?,
            fallback: form.fallback,
            key: form.key,
            answer: form.answer,
            ts: form.ts,
        })
    }
}

impl From<Render> for RenderForm {
    fn from(render: Render) -> RenderForm {
        RenderForm {
            helper: render.helper,
            value: Some(render.value),
            value_json: None,
            fallback: render.fallback,
            key: render.key,
            answer: render.answer,
            ts: render.ts,
        }
    }
}

/// One action of a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// `SnapshotFromThreadRead`: records one `snapshot`; changes nothing.
    Read(ThreadRead),
    /// Normalize, then `mergeThreadMetadata` with the stored row: records one `thread`; changes nothing.
    Merge(ThreadRead),
    /// The observer pipeline (`pollTracked`, `refreshThreadForOperation`): records `gate`, `log`s, `event`s, `thread`, `stored`.
    Poll(ThreadRead),
    /// `decideTelegramOriginEmptyInterruptedTerminal` on a given snapshot: records one `gate`.
    Gate(GivenSnapshot),
    /// `NormalizeAppServerLiveEvent`: records `event`s (none for anything but the turn lifecycle).
    Notification(Notification),
    /// `maybeLogTelegramOriginTerminal`: a `log` when the snapshot is a terminal Telegram-origin turn.
    TerminalLog(GivenSnapshot),
    /// Operator input (`sendInputToThreadTurn`): records `decision`, `stored`.
    Input(Input),
    /// `/stop` (`interruptTurn`): records `decision`, `stored`.
    Stop(Stop),
    /// `ensureSessions`: records `session`.
    EnsureSessions(Nothing),
    /// A live event loop exits: records `log`s, `session`.
    LiveLoopExit(LoopExit),
    /// A live event reaches a loop: records `live_event`.
    LiveEvent(LiveEvent),
    /// `repairSessions`: records `session`.
    Repair(Nothing),
    /// `Client.Start`: records `client`.
    ClientStart(ClientStart),
    /// `Client.handlePayload`: records `delivery`, `client`.
    ClientPayload(ClientPayload),
    /// `Client.Request`: records `request`.
    ClientRequest(ClientRequest),
    /// A nil-safe helper: records `rendered`.
    Render(Render),
    /// `syncThreadPanelToTarget`: records a `message` per card sent or edited, then `panel`.
    PanelSync(panel::PanelSync),
}

/// One timed step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Milliseconds since the scenario started (codex-tg's test base 2026-04-29T12:00:00Z is 0).
    pub at_ms: u64,
    /// What happens.
    #[serde(rename = "do")]
    pub action: Action,
}

/// One output line: the step, its time, and a [`Body`] flattened beside them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Record {
    /// The step index.
    pub step: usize,
    /// The step's time.
    pub at_ms: u64,
    /// The payload, tagged by `record`.
    #[serde(flatten)]
    pub body: Body,
}

/// A record's payload; `record` names the variant.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Body {
    /// A normalized `thread/read`.
    Snapshot(Box<SnapshotRecord>),
    /// A thread row after merge (or as returned by the pipeline).
    Thread(ThreadRecord),
    /// A terminal gate decision.
    Gate(GateDecision),
    /// A turn lifecycle event of `DiffSnapshot`.
    Event(DiffEvent),
    /// The stored row and snapshot state after a step.
    Stored(Box<Stored>),
    /// What operator input or `/stop` did.
    Decision(Decision),
    /// A structured lifecycle diagnostic.
    Log(Log),
    /// The live and poll sessions after a step.
    Session(Sessions),
    /// Whether a live event was processed.
    LiveEvent(LiveEventOutcome),
    /// The RPC client after a step.
    Client(ClientState),
    /// Whether a payload was delivered.
    Delivery(Delivery),
    /// What a client request did.
    Request(RequestOutcome),
    /// A helper's output.
    Rendered(render::Rendered),
    /// A Telegram message a panel sync sent or edited.
    Message(panel::Message),
    /// The thread's panel after a sync.
    Panel(panel::Panel),
}

/// A normalized snapshot and the phases of its entries, newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SnapshotRecord {
    /// The snapshot.
    #[serde(flatten)]
    pub snapshot: Snapshot,
    /// `entries[].phase`, so a check can name the phases without the texts.
    pub entry_phases: Vec<String>,
}

impl SnapshotRecord {
    fn of(snapshot: Snapshot) -> SnapshotRecord {
        SnapshotRecord { entry_phases: snapshot.entries.iter().map(|entry| entry.phase.clone()).collect(), snapshot }
    }
}

/// A thread row and whether it looks active for input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadRecord {
    /// The row.
    #[serde(flatten)]
    pub thread: ThreadRow,
    /// `threadLooksActiveForInput`.
    pub looks_active_for_input: bool,
}

impl ThreadRecord {
    fn of(thread: &ThreadRow) -> ThreadRecord {
        ThreadRecord { looks_active_for_input: thread.looks_active(), thread: thread.clone() }
    }
}

/// The bridge's stored state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stored {
    /// The stored thread row, if any.
    pub thread: Option<ThreadRow>,
    /// The stored snapshot state; `null` while none is stored.
    pub snapshot: Option<SnapshotState>,
    /// `threadNeedsCatchupPolling`: the row looks active or an unexpired defer marker exists.
    pub needs_catchup_polling: bool,
    /// Whether the latest stored turn carries the Telegram-origin marker.
    pub telegram_origin: bool,
}

/// The lifecycle diagnostics the bridge logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogEvent {
    /// The gate deferred an interrupted Telegram-origin turn.
    TelegramOriginTerminalDeferred,
    /// A deferred turn recovered.
    TelegramOriginTerminalRecovered,
    /// A deferred turn's grace expired and it was accepted.
    TelegramOriginTerminalDeferExpired,
    /// A Telegram-origin turn reached a terminal state.
    TelegramOriginTurnTerminal,
    /// The current live event loop closed.
    AppserverLiveEventLoopClosed,
    /// An old generation's loop ended; nothing changed.
    AppserverLiveEventLoopStale,
    /// A session repair was requested.
    RepairRequested,
}

/// One diagnostic line: ids, reasons and generations only, never prompt text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Log {
    /// What happened.
    pub event: LogEvent,
    /// The gate reason or repair reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// The turn status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The loop's generation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
    /// The current generation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_generation: Option<u64>,
}

impl Log {
    fn new(event: LogEvent) -> Log {
        Log {
            event,
            reason: None,
            thread_id: None,
            turn_id: None,
            status: None,
            generation: None,
            current_generation: None,
        }
    }

    fn for_turn(event: LogEvent, turn: &TurnRef) -> Log {
        Log { thread_id: Some(turn.thread_id.clone()), turn_id: Some(turn.turn_id.clone()), ..Log::new(event) }
    }
}

fn reason_text(reason: GateReason) -> String {
    serde_json::to_value(reason).ok().and_then(|value| value.as_str().map(str::to_owned)).unwrap_or_default()
}

/// Whether a live event was processed by its loop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LiveEventOutcome {
    /// The loop's generation.
    pub generation: u64,
    /// Processed only by the current, connected generation.
    pub processed: bool,
}

/// The reference bridge: the stored state carried across steps.
#[derive(Clone, Debug)]
pub struct Bridge {
    observer_poll_ms: u64,
    thread: Option<ThreadRow>,
    snapshot_state: Option<SnapshotState>,
    markers: Markers,
    armed_steer_turn_id: String,
    thread_read: Value,
    steer_errors: VecDeque<String>,
    steer_error: String,
    started_turn_id: String,
    sessions: Sessions,
    client: ClientState,
    panels: panel::Panels,
}

impl Bridge {
    /// A bridge in the state `config` describes.
    pub fn new(config: Config) -> Bridge {
        let mut markers = Markers::default();
        markers.telegram_origin.extend(config.telegram_origin);
        markers.explicit_interrupt.extend(config.explicit_interrupt);
        Bridge {
            observer_poll_ms: config.observer_poll_ms,
            thread: config.thread,
            snapshot_state: config.snapshot,
            markers,
            armed_steer_turn_id: config.armed_steer_turn_id,
            thread_read: config.app_server.thread_read,
            steer_errors: config.app_server.steer_errors.into(),
            steer_error: config.app_server.steer_error,
            started_turn_id: config.app_server.started_turn_id,
            sessions: config.sessions,
            client: config.client,
            panels: panel::Panels::new(config.panels),
        }
    }

    /// The records step `step_idx` produces, in order.
    pub fn apply(&mut self, step_idx: usize, step: &Step) -> Vec<Record> {
        let now_ms = step.at_ms;
        let bodies = match &step.action {
            Action::Read(read) => {
                vec![Body::Snapshot(Box::new(SnapshotRecord::of(snapshot::from_thread_read(&read.result))))]
            }
            Action::Merge(read) => {
                let merged = self.merged(&snapshot::from_thread_read(&read.result));
                vec![Body::Thread(ThreadRecord::of(&merged))]
            }
            Action::Poll(read) => self.poll(&read.result, now_ms),
            Action::Gate(given) => {
                vec![Body::Gate(interrupted::decide(&mut self.markers, &given.snapshot, now_ms, self.observer_poll_ms))]
            }
            Action::Notification(notification) => {
                live::events(&notification.method, &notification.params).into_iter().map(Body::Event).collect()
            }
            Action::TerminalLog(given) => self.terminal_log(&given.snapshot).map(Body::Log).into_iter().collect(),
            Action::Input(input) => self.input(input, now_ms),
            Action::Stop(stop) => self.stop(stop, now_ms),
            Action::EnsureSessions(_) => vec![Body::Session(self.sessions.ensure())],
            Action::LiveLoopExit(exit) => self.sessions.loop_exit(exit.generation, exit.cancelled),
            Action::LiveEvent(event) => vec![Body::LiveEvent(LiveEventOutcome {
                generation: event.generation,
                processed: self.sessions.is_current(event.generation),
            })],
            Action::Repair(_) => vec![Body::Session(self.sessions.repair())],
            Action::ClientStart(start) => vec![Body::Client(self.client.start(&start.initialize_error))],
            Action::ClientPayload(payload) => {
                let delivery = self.client.handle(payload.kind, payload.generation, &payload.id);
                vec![Body::Delivery(delivery), Body::Client(self.client.clone())]
            }
            Action::ClientRequest(request) => vec![Body::Request(self.client.request(&request.method))],
            Action::Render(call) => vec![Body::Rendered(render::call(call))],
            Action::PanelSync(sync) => {
                let (messages, panel) = self.panels.sync(sync, &self.markers);
                messages.into_iter().map(Body::Message).chain([Body::Panel(panel)]).collect()
            }
        };
        bodies.into_iter().map(|body| Record { step: step_idx, at_ms: now_ms, body }).collect()
    }

    /// The stored state as a record.
    fn stored(&self, now_ms: u64) -> Stored {
        let turn = TurnRef {
            thread_id: self.thread.as_ref().map(|thread| thread.id.clone()).unwrap_or_default(),
            turn_id: self.snapshot_state.as_ref().map(|state| state.last_seen_turn_id.clone()).unwrap_or_default(),
        };
        let deferred = self.markers.deferred.values().any(|state| now_ms < state.expires_at_ms);
        Stored {
            thread: self.thread.clone(),
            snapshot: self.snapshot_state.clone(),
            needs_catchup_polling: self.thread.as_ref().is_some_and(ThreadRow::looks_active) || deferred,
            telegram_origin: self.markers.telegram_origin.contains(&turn),
        }
    }

    /// The snapshot's row merged with the stored row when both name the same thread.
    fn merged(&self, snapshot: &Snapshot) -> ThreadRow {
        let current = ThreadRow::from_snapshot(snapshot);
        match &self.thread {
            Some(stored) if current.id.is_empty() || current.id == stored.id => merge::merge(&current, stored),
            _ => current,
        }
    }

    fn terminal_log(&self, snapshot: &Snapshot) -> Option<Log> {
        let turn = TurnRef { thread_id: snapshot.thread_id.clone(), turn_id: snapshot.latest_turn_id.clone() };
        if !status::is_terminal(&snapshot.latest_turn_status) || !self.markers.telegram_origin.contains(&turn) {
            return None;
        }
        let mut log = Log::for_turn(LogEvent::TelegramOriginTurnTerminal, &turn);
        log.status = Some(snapshot.latest_turn_status.clone());
        Some(log)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_and_its_json_twin_are_one_or_the_other() {
        let read = |text: &str| serde_json::from_str::<Notification>(text);
        let given = read(r#"{"method": "m", "params_json": "null"}"#).unwrap();
        assert_eq!(given.params, Value::Null);
        let both = read(r#"{"method": "m", "params": {}, "params_json": "{}"}"#).unwrap_err();
        assert!(both.to_string().starts_with("give `params` or `params_json`, not both"), "{both}");
        let garbage = read(r#"{"method": "m", "params_json": "{"}"#).unwrap_err();
        assert!(garbage.to_string().starts_with("`params_json` is not JSON: EOF while parsing"), "{garbage}");
        assert!(matches!(
            one_of("value", None, Some("[".to_owned())),
            Err(JsonTwinError::NotJson { name: "value", .. })
        ));
    }
}
