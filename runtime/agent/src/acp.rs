//! The reference runtime as an Agent Client Protocol agent: JSON-RPC 2.0, one JSON object per
//! line, over any `AsyncRead` / `AsyncWrite` (stdio in `gauntlet-agent`, an in-memory duplex in
//! the harness: the same code path).
//!
//! Methods: `initialize`, `session/new`, `session/load`, `session/resume` (no replay),
//! `session/list`, `session/prompt`, `session/cancel`, `session/close`, the protocol-level
//! `$/cancel_request` (a running `session/prompt` is cancelled as by `session/cancel`), and
//! `session/set_config_option` for the `model`. Protocol version 2 beside 1, as the client
//! asks in `initialize` ([`v2`]): there the prompt's answer acknowledges it and the `idle`
//! state update tells how the Turn ended; `session/load` is v1's, and v2's `session/resume`
//! with `replayFrom` replays instead, then marks the replay's end (`replay_complete`), and a v2
//! prompt retried with its `idempotencyKey` is answered with the message it first inserted.
//! Protocol errors are answered to the peer and the connection goes on: a malformed line gets
//! a parse error with `id: null`, an unknown method -32601, bad params or a second prompt on a
//! busy Session -32602 (ACP-JSONRPC-ERRORS). Only a broken pipe ends the connection. A Turn runs
//! in its own task so `session/cancel` is read while it streams.

#![allow(clippy::result_large_err, reason = "ACP's Error is the answer we send, not a hot path")]

pub mod lines;
pub mod listing;
pub mod message;
pub mod projection;
pub mod stop_reason;
pub mod v2;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::rpc::{JsonRpcMessage, Notification};
use agent_client_protocol_schema::v1::{
    AGENT_METHOD_NAMES, AgentCapabilities, CancelNotification, CancelRequestNotification, CloseSessionRequest,
    CloseSessionResponse, ContentBlock, Error, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PROTOCOL_LEVEL_METHOD_NAMES, PromptCapabilities, PromptRequest, PromptResponse, RequestId,
    Response, ResumeSessionRequest, ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities,
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption, SessionInfo, SessionListCapabilities,
    SessionNotification, SessionResumeCapabilities, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::canonical;
use crate::control::{CancelHandle, CancelSignal};
use crate::delegation::Delegation;
use crate::event::Prompt;
use crate::event::{Event, EventType};
use crate::ids::{self, Clock, IdSource};
use crate::log::LogError;
use crate::provider::{Provider, ProviderConfig, Transport};
use crate::recovery;
use crate::resource::{Image, Link};
use crate::session::{Session, SessionConfig};
use crate::tools::Toolbox;
use crate::tools::mcp::{McpConnector, McpServer, McpTools};
use crate::tools::plan::Plan;
use lines::{Line, Lines};
use message::{Incoming, decode};
use projection::Projector;

/// Everything an agent needs to open Sessions.
#[derive(Clone)]
pub struct AgentConfig {
    /// How to reach the Provider.
    pub provider: ProviderConfig,
    /// The transport to it.
    pub transport: Arc<dyn Transport>,
    /// The model of new Sessions.
    pub model: String,
    /// Other models a client may choose, listed beside `model` in each Session's
    /// `configOptions` (`session/set_config_option` takes any).
    pub models: Vec<String>,
    /// The whole-turn budget.
    pub turn_timeout: Duration,
    /// The model's context window, reported in `usage_update`.
    pub context_window: Option<u64>,
    /// Compact a Session's History when a call reports this many input tokens (crate::compaction).
    pub compact_at_tokens: Option<u64>,
    /// Event and Session ids.
    pub ids: Arc<dyn IdSource>,
    /// Event timestamps.
    pub clock: Clock,
    /// Offer delegation (subagents and workflows) in new and loaded Sessions.
    pub delegation: bool,
    /// Offer the synchronous `delegate` tool beside them.
    pub delegate: bool,
    /// At most this many Subagents of a Session run at once.
    pub max_subagents: usize,
    /// Offer the `plan` tool, whose lists are shown as ACP `plan` updates.
    pub plans: bool,
    /// How the MCP servers a client names are reached (started as processes by default).
    pub mcp: Arc<dyn McpConnector>,
}

impl std::fmt::Debug for AgentConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentConfig")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

/// Why the connection itself ended (not a protocol error, which is answered instead).
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// Reading from the client failed.
    #[error("reading from the client: {0}")]
    Read(std::io::Error),
    /// Writing to the client failed.
    #[error("writing to the client: {0}")]
    Write(std::io::Error),
}

/// Serves one client until its input ends; running Turns are cancelled then, and their
/// evidence is written before this returns.
pub async fn serve<R, W>(input: R, output: W, config: AgentConfig) -> Result<(), ConnectionError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (outbox, writer) = Outbox::start(output);
    let (lines_tx, mut lines) = mpsc::channel::<std::io::Result<Line>>(16);
    let reader = tokio::spawn(read_lines(input, lines_tx));
    let (done_tx, mut done) = mpsc::unbounded_channel::<Finished>();
    let mut agent = Agent {
        config,
        outbox,
        sessions: HashMap::new(),
        done: done_tx,
        initialized: false,
        closing: HashMap::new(),
        workspaces: BTreeSet::new(),
        version: ProtocolVersion::V1,
        keys: HashMap::new(),
    };
    let mut read_error = None;
    loop {
        tokio::select! {
            // A finished Turn is settled before the next line is read: its Session is idle
            // again before its prompt is answered, so the client's next prompt finds it free.
            biased;
            Some(finished) = done.recv() => agent.finished(finished),
            line = lines.recv() => match line {
                Some(Ok(line)) => agent.handle(&line),
                Some(Err(error)) => {
                    read_error = Some(error);
                    break;
                }
                None => break,
            },
        }
    }
    reader.abort();
    // The client went away: cancel what runs and wait for its evidence to be written.
    let mut running = 0;
    for slot in agent.sessions.values() {
        if let Slot::Busy { cancel, .. } = slot {
            cancel.cancel();
            running += 1;
        }
    }
    for _ in 0..running {
        if let Some(finished) = done.recv().await {
            agent.finished(finished);
        }
    }
    drop(agent);
    let written = writer.await.unwrap_or(Ok(()));
    match read_error {
        Some(error) => Err(ConnectionError::Read(error)),
        None => written.map_err(ConnectionError::Write),
    }
}

async fn read_lines<R: AsyncRead + Unpin>(input: R, lines: mpsc::Sender<std::io::Result<Line>>) {
    let mut reader = Lines::new(input, lines::MAX_LINE);
    loop {
        match reader.next().await {
            Ok(None) => return,
            Ok(Some(line)) => {
                if lines.send(Ok(line)).await.is_err() {
                    return;
                }
            }
            Err(error) => {
                let _ = lines.send(Err(error)).await;
                return;
            }
        }
    }
}

/// The methods a v2 connection reads with v2's own types, or refuses (`session/load`).
const V2_OWN_METHODS: [&str; 4] = ["session/new", "session/load", "session/resume", "session/set_config_option"];

/// Serialized JSON-RPC messages on their way out, one line each, in order.
#[derive(Clone)]
struct Outbox(mpsc::UnboundedSender<String>);

impl Outbox {
    fn start<W: AsyncWrite + Unpin + Send + 'static>(
        mut output: W,
    ) -> (Outbox, tokio::task::JoinHandle<std::io::Result<()>>) {
        let (sender, mut receiver) = mpsc::unbounded_channel::<String>();
        let writer = tokio::spawn(async move {
            while let Some(mut line) = receiver.recv().await {
                line.push('\n');
                output.write_all(line.as_bytes()).await?;
                output.flush().await?;
            }
            output.shutdown().await
        });
        (Outbox(sender), writer)
    }

    fn send(&self, message: &impl Serialize) {
        let _ = self.0.send(canonical::to_string(message));
    }

    fn respond<T: Serialize>(&self, id: RequestId, result: Result<T, Error>) {
        self.send(&JsonRpcMessage::wrap(Response::new(id, result)));
    }

    fn update(&self, session_id: &str, update: agent_client_protocol_schema::v1::SessionUpdate) {
        let params = SessionNotification::new(session_id.to_owned(), update);
        self.send(&JsonRpcMessage::wrap(Notification { method: "session/update".into(), params: Some(params) }));
    }

    fn update_v2(&self, session_id: &str, update: agent_client_protocol_schema::v2::SessionUpdate) {
        let params = agent_client_protocol_schema::v2::UpdateSessionNotification::new(session_id.to_owned(), update);
        self.send(&JsonRpcMessage::wrap(Notification { method: "session/update".into(), params: Some(params) }));
    }

    /// Shows one update of `session_id` in the connection's version.
    fn show(&self, session_id: &str, update: agent_client_protocol_schema::v1::SessionUpdate, words: &mut Words) {
        match words {
            Words::V1 => self.update(session_id, update),
            Words::V2(upserts) => {
                for update in upserts.update(update) {
                    self.update_v2(session_id, update);
                }
            }
        }
    }
}

/// How a connection tells a Session's updates: v1's, or v2's upserts by id.
#[derive(Debug)]
enum Words {
    V1,
    V2(v2::Upserts),
}

impl Words {
    /// The words for a Session's updates on a connection that speaks `version`, after its
    /// first `users()` user messages (all of them for a running Turn, none for a replay),
    /// counted only in v2, which names messages: a v1 prompt pays no scan of History.
    fn of(version: ProtocolVersion, session_id: &str, users: impl FnOnce() -> usize) -> Words {
        if version == ProtocolVersion::V2 { Words::V2(v2::Upserts::new(session_id, users())) } else { Words::V1 }
    }
}

/// A Session is idle (owned here) or busy (owned by its Turn task, cancellable from here by
/// `session/cancel`, `session/close`, or `$/cancel_request` naming its prompt).
enum Slot {
    Idle(Box<Open>),
    Busy {
        /// Stops the running Turn.
        cancel: CancelHandle,
        /// The id of the `session/prompt` the Turn answers.
        prompt: RequestId,
    },
}

/// An open Session and the tools its Turns run with.
struct Open {
    session: Session,
    tools: Toolbox,
}

struct Agent {
    config: AgentConfig,
    outbox: Outbox,
    sessions: HashMap<String, Slot>,
    done: mpsc::UnboundedSender<Finished>,
    /// `initialize` was answered: only then are other requests served, and only once.
    initialized: bool,
    /// `session/close` requests waiting for their Session's running Turn to end: the Session is
    /// freed then, and the close answered after its prompt.
    closing: HashMap<String, Vec<RequestId>>,
    /// Every workspace a Session was opened in on this connection: `session/list` without a
    /// `cwd` lists the Sessions logged in each.
    workspaces: BTreeSet<PathBuf>,
    /// The protocol version `initialize` agreed on.
    version: ProtocolVersion,
    /// Per Session, the `idempotencyKey`s of the prompts it holds, each with the id of the user
    /// message it inserted.
    keys: HashMap<String, HashMap<String, String>>,
}

/// A Turn that ended: its Session (none when the Turn panicked and took it along), and the
/// answer owed to its prompt.
struct Finished {
    session_id: String,
    open: Option<Open>,
    id: RequestId,
    answer: Result<PromptResponse, Error>,
}

impl Agent {
    fn handle(&mut self, line: &Line) {
        let line = match line {
            Line::Text(line) => line,
            Line::TooLong(length) => {
                let reason = format!("a line of {length} bytes is over the {}-byte limit", lines::MAX_LINE);
                return self
                    .outbox
                    .respond::<Value>(RequestId::Null, Err(Error::parse_error().data(json!({"reason": reason}))));
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let incoming = match decode(line) {
            Ok(Some(incoming)) => incoming,
            Ok(None) => return, // a response from the client: this agent sends no requests
            Err((id, error)) => return self.outbox.respond::<Value>(id, Err(error)),
        };
        let Incoming { id, method, params } = incoming;
        // `initialize` first and once (ACP-INITIALIZE-FIRST); notifications before it are ignored.
        let order = match (self.initialized, method.as_str()) {
            (false, "initialize") => None,
            (true, "initialize") => Some("the connection is already initialized"),
            (false, _) => Some("`initialize` must come first"),
            (true, _) => None,
        };
        if let Some(reason) = order {
            if let Some(id) = id {
                self.outbox.respond::<Value>(id, Err(Error::invalid_request().data(json!({"reason": reason}))));
            }
            return;
        }
        if method == AGENT_METHOD_NAMES.session_cancel {
            if let Ok(request) = parse::<CancelNotification>(params)
                && let Some(Slot::Busy { cancel, .. }) = self.sessions.get(&*request.session_id.0)
            {
                cancel.cancel();
            }
            return;
        }
        if method == PROTOCOL_LEVEL_METHOD_NAMES.cancel_request {
            // A running prompt is cancelled as by `session/cancel` and answered `cancelled`, the
            // prompt's own cancellation marker (ACP "Cancellation": a valid response with a
            // cancellation marker, or -32800). Any other request is answered at once, so there
            // is nothing left to cancel.
            // In v2 the prompt was answered when it was inserted: nothing is left to cancel.
            if self.version == ProtocolVersion::V1
                && let Ok(request) = parse::<CancelRequestNotification>(params)
            {
                for slot in self.sessions.values() {
                    if let Slot::Busy { cancel, prompt } = slot
                        && *prompt == request.request_id
                    {
                        cancel.cancel();
                    }
                }
            }
            return;
        }
        let Some(id) = id else { return }; // unknown notifications are ignored, as JSON-RPC asks
        if self.version == ProtocolVersion::V2 && V2_OWN_METHODS.contains(&method.as_str()) {
            return self.request_v2(id, &method, params);
        }
        self.request(id, &method, params);
    }

    /// A request, in v1's words or in those v1 and v2 share.
    fn request(&mut self, id: RequestId, method: &str, params: Value) {
        match method {
            "initialize" => self.initialize(id, params),
            "session/new" => {
                let result = parse::<NewSessionRequest>(params)
                    .and_then(|request| self.new_session(request.cwd, stdio_servers(&request.mcp_servers)))
                    .map(|session_id| {
                        NewSessionResponse::new(session_id).config_options(self.config_options(&self.config.model))
                    });
                self.outbox.respond(id, result);
            }
            "session/load" => {
                let result = parse::<LoadSessionRequest>(params).and_then(|request| self.load(request));
                self.outbox.respond(id, result);
            }
            "session/resume" => {
                let result = parse::<ResumeSessionRequest>(params).and_then(|request| {
                    let servers = stdio_servers(&request.mcp_servers);
                    self.resume(request.session_id.0.to_string(), request.cwd, servers, None)
                });
                self.outbox.respond(id, result);
            }
            "session/list" => {
                let result = parse::<ListSessionsRequest>(params).and_then(|request| self.list(&request));
                self.outbox.respond(id, result);
            }
            "session/close" => {
                match parse::<CloseSessionRequest>(params).and_then(|request| self.close(id.clone(), &request)) {
                    Ok(Some(answer)) => self.outbox.respond(id, Ok(answer)),
                    Ok(None) => {} // answered once the running Turn ended
                    Err(error) => self.outbox.respond::<Value>(id, Err(error)),
                }
            }
            "session/set_config_option" => {
                let model = parse::<SetSessionConfigOptionRequest>(params).and_then(|request| self.configure(request));
                let answer = model.map(|model| SetSessionConfigOptionResponse::new(self.config_options(&model)));
                self.outbox.respond(id, answer);
            }
            "session/prompt" => {
                let request = match self.version {
                    ProtocolVersion::V2 => v2::prompt_request(params).map_err(invalid_params),
                    _ => parse::<PromptRequest>(params).map(|request| (request, None)),
                };
                if let Err(error) = request.and_then(|(request, key)| self.prompt(id.clone(), request, key)) {
                    self.outbox.respond::<Value>(id, Err(error));
                }
            }
            _ => self.outbox.respond::<Value>(id, Err(Error::method_not_found().data(json!({"method": method})))),
        }
    }

    /// A request v2 words its own way: each read with v2's own type (v2's `session/new` asks
    /// only `cwd`), and `session/load`, which v2 has not (its `session/resume` replays when
    /// asked).
    fn request_v2(&mut self, id: RequestId, method: &str, params: Value) {
        use agent_client_protocol_schema::v2 as schema;
        match method {
            "session/new" => {
                let result = parse::<schema::NewSessionRequest>(params)
                    .and_then(|request| self.new_session(request.cwd.0, v2::stdio_servers(&request.mcp_servers)))
                    .map(|session_id| {
                        let model = &self.config.model;
                        v2::new_session_response(&session_id, v2::model_option(model, &self.models(model)))
                    });
                self.outbox.respond(id, result);
            }
            "session/resume" => {
                let result = parse::<schema::ResumeSessionRequest>(params).and_then(|request| {
                    let replay = v2::replays(&request)
                        .map_err(|reason| Error::invalid_params().data(json!({"reason": reason})))?;
                    let servers = v2::stdio_servers(&request.mcp_servers);
                    self.resume(request.session_id.0.to_string(), request.cwd.0, servers, Some(replay))
                });
                self.outbox.respond(id, result);
            }
            "session/set_config_option" => {
                let model = parse::<SetSessionConfigOptionRequest>(params).and_then(|request| self.configure(request));
                let answer = model.map(|model| {
                    schema::SetSessionConfigOptionResponse::new(vec![v2::model_option(&model, &self.models(&model))])
                });
                self.outbox.respond(id, answer);
            }
            _ => self.outbox.respond::<Value>(id, Err(Error::method_not_found().data(json!({"method": method})))),
        }
    }

    /// `initialize`: the version asked for, if this agent speaks it (v2), else v1.
    fn initialize(&mut self, id: RequestId, params: Value) {
        let asked = params.get("protocolVersion").and_then(Value::as_u64);
        if v2::negotiate(asked) == ProtocolVersion::V2 {
            self.initialized = true;
            self.version = ProtocolVersion::V2;
            return self.outbox.respond(id, Ok::<_, Error>(v2::initialize_response()));
        }
        let result = parse::<InitializeRequest>(params).map(|_| {
            self.initialized = true;
            InitializeResponse::new(ProtocolVersion::V1)
                // Image prompts are accepted (LOG-NO-RESOURCE-BYTES); audio and embedded
                // resources are not.
                .agent_capabilities(
                    AgentCapabilities::new()
                        .load_session(true)
                        .prompt_capabilities(PromptCapabilities::new().image(true))
                        .session_capabilities(
                            SessionCapabilities::new()
                                .list(SessionListCapabilities::new())
                                .resume(SessionResumeCapabilities::new())
                                .close(SessionCloseCapabilities::new()),
                        ),
                )
                .agent_info(Implementation::new("gauntlet-agent", env!("CARGO_PKG_VERSION")))
        });
        self.outbox.respond(id, result);
    }

    /// Opens a Session with its tools: a Turn the last process left open is closed first
    /// (TURN-RESTART-RECOVERY), then the workspace tools, and delegation and the `plan` tool
    /// when configured.
    fn open(&mut self, session_id: &str, cwd: PathBuf, servers: Vec<McpServer>) -> Result<Open, Error> {
        check_cwd(&cwd)?;
        self.workspaces.insert(cwd.clone());
        let mut config = SessionConfig::new(session_id, &cwd);
        config.model.clone_from(&self.config.model);
        config.turn_timeout = self.config.turn_timeout;
        config.compact_at_tokens = self.config.compact_at_tokens;
        let provider = Provider::new(self.config.transport.clone(), self.config.provider.clone());
        let mut session =
            Session::open(config, provider, self.config.ids.clone(), self.config.clock.clone()).map_err(log_error)?;
        recovery::close_dangling_turn(&mut session).map_err(log_error)?;
        let mut tools = Toolbox::workspace();
        if self.config.delegation {
            let delegation = Delegation::open(&mut session, self.config.max_subagents).map_err(log_error)?;
            tools = tools.with(delegation.with_delegate(self.config.delegate));
        }
        if self.config.plans {
            tools = tools.with(Plan);
        }
        if !servers.is_empty() {
            tools = tools.with(McpTools::new(servers, cwd, self.config.mcp.clone()));
        }
        Ok(Open { session, tools })
    }

    /// A new Session in `cwd`, idle: its id.
    fn new_session(&mut self, cwd: PathBuf, servers: Vec<McpServer>) -> Result<String, Error> {
        let session_id = self.config.ids.session_id();
        let open = self.open(&session_id, cwd, servers)?;
        self.sessions.insert(session_id.clone(), Slot::Idle(Box::new(open)));
        Ok(session_id)
    }

    /// Replays the Session's transcript from its Log, then answers (ACP-LOAD-CLEAN).
    fn load(&mut self, request: LoadSessionRequest) -> Result<LoadSessionResponse, Error> {
        let session_id = request.session_id.0.to_string();
        let open = self.reopen(&session_id, request.cwd, stdio_servers(&request.mcp_servers))?;
        self.replay(&open.session);
        let response = LoadSessionResponse::new().meta(torn_tail_meta(&open.session));
        self.sessions.insert(session_id, Slot::Idle(Box::new(open)));
        Ok(response)
    }

    /// Reopens the Session from its Log without replaying it: the conversation goes on with
    /// its History (ACP-RESUME-NO-REPLAY). In v2 (`replay` is `Some`), asked with
    /// `replayFrom`, it replays as `session/load` does and marks the replay's end
    /// (`replay_complete`); either way it then says the Session is idle ("Resume MUST send a
    /// current-state snapshot after any replay and before its response").
    fn resume(
        &mut self,
        session_id: String,
        cwd: PathBuf,
        servers: Vec<McpServer>,
        replay: Option<bool>,
    ) -> Result<ResumeSessionResponse, Error> {
        let open = self.reopen(&session_id, cwd, servers)?;
        if replay == Some(true) {
            self.replay(&open.session);
            self.outbox.update_v2(&session_id, v2::replay_complete());
        }
        if replay.is_some() {
            self.outbox.update_v2(&session_id, v2::settled());
        }
        let response = ResumeSessionResponse::new().meta(torn_tail_meta(&open.session));
        self.sessions.insert(session_id, Slot::Idle(Box::new(open)));
        Ok(response)
    }

    /// Replays the Session's transcript from its Log (ACP-LOAD-CLEAN), in the connection's
    /// version.
    fn replay(&self, session: &Session) {
        let projector = Projector { workspace: session.workspace(), context_window: self.config.context_window };
        let mut words = Words::of(self.version, &session.config().session_id, || 0);
        for update in projector.replay(session.history()) {
            self.outbox.show(&session.config().session_id, update, &mut words);
        }
    }

    /// Opens a Session for `session/load` and `session/resume`: one open and idle on this
    /// connection as it is (ACP sets no rule against loading a Session the connection holds,
    /// and the ACP test kit loads one so), or else one this agent served before, from its Log.
    /// A Session whose Turn runs is refused: its History is still growing. The keys its
    /// prompts were submitted with are known again either way.
    fn reopen(&mut self, session_id: &str, cwd: PathBuf, servers: Vec<McpServer>) -> Result<Open, Error> {
        // Only ids of the shape this agent hands out, before any path is built or file
        // touched: `../x`, `/abs`, separators and NUL never reach the file system
        // (ACP-SESSION-ID-CONFINED).
        ids::check_session_id(session_id)
            .map_err(|error| Error::invalid_params().data(json!({"reason": error.to_string()})))?;
        let open = match self.sessions.remove(session_id) {
            Some(Slot::Idle(open)) if open.session.workspace() == cwd => *open,
            Some(slot) => {
                let reason = match &slot {
                    Slot::Idle(_) => "the session is open in another cwd",
                    Slot::Busy { .. } => "a turn is running in the session",
                };
                self.sessions.insert(session_id.to_owned(), slot);
                return Err(Error::invalid_params().data(json!({"reason": reason})));
            }
            None => self.open_logged(session_id, cwd, servers)?,
        };
        self.keys.insert(session_id.to_owned(), v2::submitted_keys(session_id, open.session.history()));
        Ok(open)
    }

    /// Opens a Session this agent served before, from its Log.
    fn open_logged(&mut self, session_id: &str, cwd: PathBuf, servers: Vec<McpServer>) -> Result<Open, Error> {
        check_cwd(&cwd)?;
        let log_path = SessionConfig::new(session_id, &cwd).log_path().map_err(log_error)?;
        if !log_path.is_file() {
            return Err(Error::resource_not_found(Some(log_path.display().to_string())));
        }
        self.open(session_id, cwd, servers)
    }

    /// The Sessions logged in the `cwd` asked for, or in every workspace of this connection,
    /// with the Sessions open in them, sorted by id (ACP "Session List"). This agent hands out
    /// no cursor, so any cursor is refused.
    fn list(&self, request: &ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
        if let Some(cursor) = &request.cursor {
            return Err(Error::invalid_params().data(json!({"reason": format!("unknown cursor `{cursor}`")})));
        }
        let workspaces: Vec<PathBuf> = match &request.cwd {
            Some(cwd) if !cwd.is_absolute() => {
                return Err(Error::invalid_params().data(json!({"reason": "cwd must be an absolute path"})));
            }
            Some(cwd) => vec![cwd.clone()],
            None => self.workspaces.iter().cloned().collect(),
        };
        let mut found: BTreeSet<(String, PathBuf)> = BTreeSet::new();
        for cwd in workspaces {
            found.extend(listing::logged_sessions(&cwd).into_iter().map(|session_id| (session_id, cwd.clone())));
        }
        for (session_id, slot) in &self.sessions {
            if let Slot::Idle(open) = slot {
                let cwd = open.session.workspace().to_owned();
                if request.cwd.as_ref().is_none_or(|wanted| *wanted == cwd) {
                    found.insert((session_id.clone(), cwd));
                }
            }
        }
        Ok(ListSessionsResponse::new(found.into_iter().map(|(id, cwd)| SessionInfo::new(id, cwd)).collect()))
    }

    /// `session/close`: an idle Session is freed and answered at once; a running Turn is
    /// cancelled as by `session/cancel`, and the Session freed and the close answered once it
    /// ended (`None`). A later prompt to it finds no Session (-32002).
    fn close(&mut self, id: RequestId, request: &CloseSessionRequest) -> Result<Option<CloseSessionResponse>, Error> {
        let session_id = request.session_id.0.to_string();
        match self.sessions.get(&session_id) {
            None => Err(Error::session_not_found(session_id)),
            Some(Slot::Idle(_)) => {
                self.sessions.remove(&session_id);
                Ok(Some(CloseSessionResponse::new()))
            }
            Some(Slot::Busy { cancel, .. }) => {
                cancel.cancel();
                self.closing.entry(session_id).or_default().push(id);
                Ok(None)
            }
        }
    }

    /// `session/set_config_option` for `model`, the one option this agent has.
    fn configure(&mut self, request: SetSessionConfigOptionRequest) -> Result<String, Error> {
        let session_id = request.session_id.0.to_string();
        let Some(Slot::Idle(open)) = self.sessions.get_mut(&session_id) else {
            return Err(Error::invalid_params().data(json!({"reason": "no idle session with this id"})));
        };
        let model = match (&*request.config_id.0, request.value.as_value_id()) {
            ("model", Some(model)) => model.0.to_string(),
            _ => return Err(Error::invalid_params().data(json!({"reason": "the only option is `model`"}))),
        };
        open.session.set_model(&model);
        Ok(model)
    }

    /// The models a Session lists: `current` first, then those this agent was told of, so a
    /// client can discover the choice `session/set_config_option` takes (it takes any model
    /// name: the Provider decides which it serves).
    fn models(&self, current: &str) -> Vec<String> {
        let mut models = vec![current.to_owned()];
        for model in self.config.models.iter().chain([&self.config.model]) {
            if !models.contains(model) {
                models.push(model.clone());
            }
        }
        models
    }

    /// A Session's config options in v1: the model, as [`Agent::models`] lists it.
    fn config_options(&self, current: &str) -> Vec<SessionConfigOption> {
        let choices: Vec<SessionConfigSelectOption> = self
            .models(current)
            .into_iter()
            .map(|model| SessionConfigSelectOption::new(model.clone(), model))
            .collect();
        vec![
            SessionConfigOption::select("model", "Model", current.to_owned(), choices)
                .category(SessionConfigOptionCategory::Model),
        ]
    }

    /// Starts a Turn for a prompt, or answers a v2 retry of one already inserted with the
    /// original message id, inserting nothing (v2 `PromptRequest.idempotencyKey`: "A retry of
    /// a recorded insertion returns the original `messageId` without inserting another
    /// message"), even while that Turn runs.
    fn prompt(&mut self, id: RequestId, request: PromptRequest, key: Option<String>) -> Result<(), Error> {
        let session_id = request.session_id.0.to_string();
        let slot = self.sessions.get_mut(&session_id).ok_or_else(|| Error::session_not_found(session_id.clone()))?;
        if let Some(message_id) = key.as_ref().and_then(|key| self.keys.get(&session_id)?.get(key)) {
            self.outbox.respond(id, Ok::<_, Error>(v2::prompt_response(message_id)));
            return Ok(());
        }
        if matches!(slot, Slot::Busy { .. }) {
            return Err(Error::invalid_params().data(json!({"reason": "a turn is already running in this session"})));
        }
        let prompt = prompt_of(&request.prompt, key)?;
        let (cancel, signal) = CancelSignal::pair();
        let Slot::Idle(open) = std::mem::replace(slot, Slot::Busy { cancel, prompt: id.clone() }) else {
            return Ok(());
        };
        let history = open.session.history();
        let users = || history.iter().filter(|event| event.kind() == EventType::UserMessage).count();
        let mut words = Words::of(self.version, &session_id, users);
        if let Words::V2(upserts) = &mut words {
            // Inserted: echoed, running, and acknowledged before any of the Turn's updates.
            let message_id = upserts.next_user();
            if let Some(key) = &prompt.idempotency_key {
                self.keys.entry(session_id.clone()).or_default().insert(key.clone(), message_id.clone());
            }
            if let Some(echo) = v2::user_message(&message_id, &prompt) {
                self.outbox.update_v2(&session_id, echo);
            }
            self.outbox.update_v2(&session_id, v2::running());
            self.outbox.respond(id.clone(), Ok::<_, Error>(v2::prompt_response(&message_id)));
        }
        let outbox = self.outbox.clone();
        let done = self.done.clone();
        let context_window = self.config.context_window;
        let turn = tokio::spawn(run_turn(*open, prompt, signal, id.clone(), (outbox, words), context_window));
        tokio::spawn(async move {
            let finished = match turn.await {
                Ok(finished) => finished,
                // A bug in the Turn must not leave its prompt unanswered: the client is told at
                // once, and the Session is gone until loaded again, which closes the Turn the
                // panic left open in its Log (TURN-RESTART-RECOVERY).
                Err(error) => {
                    let reason = format!(
                        "the turn stopped on an internal error ({}); load the session again to resume it",
                        panic_text(error)
                    );
                    let answer = Err(Error::internal_error().data(json!({"reason": reason})));
                    Finished { session_id, open: None, id, answer }
                }
            };
            let _ = done.send(finished);
        });
        Ok(())
    }

    /// Makes the Session idle (or forgets one a panic took), then answers its prompt (in that
    /// order; see `serve`).
    /// A Session being closed is freed instead, and its close answered after the prompt.
    fn finished(&mut self, finished: Finished) {
        let Finished { session_id, open, id, answer } = finished;
        let closes = self.closing.remove(&session_id).unwrap_or_default();
        match open {
            Some(open) if closes.is_empty() => self.sessions.insert(session_id.clone(), Slot::Idle(Box::new(open))),
            _ => self.sessions.remove(&session_id),
        };
        if self.version == ProtocolVersion::V2 {
            // The prompt was acknowledged when it came: the Turn's end is the idle state.
            self.outbox.update_v2(&session_id, v2::idle(&answer));
        } else {
            self.outbox.respond(id, answer);
        }
        for close in closes {
            self.outbox.respond(close, Ok(CloseSessionResponse::new()));
        }
    }
}

/// What a `session/prompt` asks: its text blocks joined; the resources its `resource_link`
/// blocks point at, which the Log keeps and the model reads (ACP: "As a baseline, the Agent
/// MUST support `text` and `resource_link` content blocks"; ACP-PROMPT-LINK-CARRIED); and its
/// images, decoded before the Turn starts, so a bad one is refused with nothing recorded.
fn prompt_of(blocks: &[ContentBlock], idempotency_key: Option<String>) -> Result<Prompt, Error> {
    let mut text = Vec::new();
    let mut links = Vec::new();
    let mut images = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(block) => text.push(block.text.as_str()),
            ContentBlock::ResourceLink(link) => links.push(Link { uri: link.uri.clone(), name: link.name.clone() }),
            ContentBlock::Image(image) => images.push(
                Image::from_base64(&image.mime_type, &image.data)
                    .map_err(|error| Error::invalid_params().data(json!({"reason": error.to_string()})))?,
            ),
            _ => {}
        }
    }
    Ok(Prompt { text: text.join("\n"), images, links, idempotency_key })
}

/// Runs a Turn, forwarding its Events as updates in order; the answer goes back with the Session.
/// The stdio servers of a request's `mcpServers`; HTTP and SSE servers, which this agent does
/// not declare (`mcpCapabilities`), are not started.
fn stdio_servers(servers: &[agent_client_protocol_schema::v1::McpServer]) -> Vec<McpServer> {
    use agent_client_protocol_schema::v1::McpServer as Named;
    let stdio = servers.iter().filter_map(|server| match server {
        Named::Stdio(stdio) => Some(stdio),
        _ => None,
    });
    stdio
        .map(|stdio| McpServer {
            name: stdio.name.clone(),
            command: stdio.command.clone(),
            args: stdio.args.clone(),
            env: stdio.env.iter().map(|variable| (variable.name.clone(), variable.value.clone())).collect(),
        })
        .collect()
}

async fn run_turn(
    mut open: Open,
    prompt: Prompt,
    mut cancel: CancelSignal,
    id: RequestId,
    (outbox, mut words): (Outbox, Words),
    context_window: Option<u64>,
) -> Finished {
    let (events_tx, mut events) = mpsc::unbounded_channel::<Event>();
    open.session.subscribe(events_tx);
    let session_id = open.session.config().session_id.clone();
    let workspace = open.session.workspace().to_owned();
    let projector = Projector { workspace: &workspace, context_window };
    let mut forward = |event: Event| {
        if let Some(update) = projector.live(&event) {
            outbox.show(&session_id, update, &mut words);
        }
    };
    let result = {
        let turn = open.session.prompt_with(&mut open.tools, &prompt, &mut cancel);
        tokio::pin!(turn);
        loop {
            tokio::select! {
                biased;
                Some(event) = events.recv() => forward(event),
                result = &mut turn => break result,
            }
        }
    };
    while let Ok(event) = events.try_recv() {
        forward(event);
    }
    let answer = match result {
        Ok(outcome) => stop_reason::prompt_result(&outcome).map(PromptResponse::new),
        Err(error) => Err(Error::internal_error().data(json!({"reason": error.to_string()}))),
    };
    Finished { session_id, open: Some(open), id, answer }
}

/// What a task that did not finish says: its panic message, or that it was cancelled.
fn panic_text(error: tokio::task::JoinError) -> String {
    if !error.is_panic() {
        return "cancelled".to_owned();
    }
    let payload = error.into_panic();
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(text), _) => format!("panic: {text}"),
        (_, Some(text)) => format!("panic: {text}"),
        _ => "panic".to_owned(),
    }
}

/// The Log's torn tail, reported in a load's or resume's `_meta`, not hidden (LOG-TORN-TAIL).
fn torn_tail_meta(session: &Session) -> Option<serde_json::Map<String, Value>> {
    let torn = session.torn_tail()?;
    let mut meta = serde_json::Map::new();
    meta.insert("gauntlet".into(), json!({"tornTail": {"offset": torn.offset, "length": torn.bytes.len()}}));
    Some(meta)
}

/// A Session's `cwd` is an absolute path to an existing folder: the agent creates only its own
/// `.gauntlet/sessions/` inside it, never the folder itself.
fn check_cwd(cwd: &std::path::Path) -> Result<(), Error> {
    if !cwd.is_absolute() {
        return Err(Error::invalid_params().data(json!({"reason": "cwd must be an absolute path"})));
    }
    if !cwd.is_dir() {
        let reason = format!("cwd {} is not an existing folder", cwd.display());
        return Err(Error::invalid_params().data(json!({"reason": reason})));
    }
    Ok(())
}

/// A Log that cannot be opened: a bad id is the client's (-32602), anything else ours (-32603).
fn log_error(error: LogError) -> Error {
    let reason = json!({"reason": error.to_string()});
    match error {
        LogError::InvalidSessionId { .. } => Error::invalid_params().data(reason),
        _ => Error::internal_error().data(reason),
    }
}

fn parse<T: DeserializeOwned>(params: Value) -> Result<T, Error> {
    serde_json::from_value(params).map_err(invalid_params)
}

/// Params that do not read as the method's request: -32602 with the reason.
fn invalid_params(error: serde_json::Error) -> Error {
    Error::invalid_params().data(json!({"reason": error.to_string()}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Sequential;
    use crate::provider::HttpTransport;

    fn agent_config() -> AgentConfig {
        AgentConfig {
            mcp: Arc::new(crate::tools::mcp::Processes),
            provider: ProviderConfig::default(),
            transport: Arc::new(HttpTransport::default()),
            model: "gpt-5.5".into(),
            models: Vec::new(),
            turn_timeout: Duration::from_secs(60),
            context_window: None,
            compact_at_tokens: None,
            ids: Arc::new(Sequential::default()),
            clock: Clock::System,
            delegation: false,
            delegate: false,
            max_subagents: 1,
            plans: false,
        }
    }

    /// Sends `lines` (plus a newline each) to a fresh agent, closes its input, and returns
    /// every message it wrote.
    async fn exchange(lines: &[String]) -> Vec<Value> {
        let (client, agent) = tokio::io::duplex(1 << 20);
        let (agent_reader, agent_writer) = tokio::io::split(agent);
        let server = tokio::spawn(serve(agent_reader, agent_writer, agent_config()));
        let (client_reader, mut client_writer) = tokio::io::split(client);
        for line in lines {
            client_writer.write_all(line.as_bytes()).await.unwrap();
            client_writer.write_all(b"\n").await.unwrap();
        }
        client_writer.shutdown().await.unwrap();
        drop(client_writer);
        let mut out = Vec::new();
        let mut reader = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(client_reader));
        while let Some(line) = reader.next_line().await.unwrap() {
            out.push(serde_json::from_str(&line).unwrap());
        }
        server.await.unwrap().unwrap();
        out
    }

    fn request(id: u64, method: &str, params: Value) -> String {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
    }

    fn initialize() -> String {
        request(0, "initialize", json!({"protocolVersion": 1}))
    }

    fn error_code(message: &Value) -> Option<i64> {
        message["error"]["code"].as_i64()
    }

    /// Every byte under `dir`, by relative path, to prove nothing was touched.
    fn snapshot(dir: &std::path::Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_owned()];
        while let Some(at) = stack.pop() {
            for entry in std::fs::read_dir(&at).unwrap() {
                let path = entry.unwrap().path();
                let meta = std::fs::symlink_metadata(&path).unwrap();
                if meta.is_dir() {
                    stack.push(path.clone());
                    out.push((path.strip_prefix(dir).unwrap().to_owned(), Vec::new()));
                } else if meta.is_file() {
                    out.push((path.strip_prefix(dir).unwrap().to_owned(), std::fs::read(&path).unwrap()));
                } else {
                    out.push((path.strip_prefix(dir).unwrap().to_owned(), b"link".to_vec()));
                }
            }
        }
        out.sort();
        out
    }

    #[tokio::test]
    async fn session_load_refuses_ids_that_leave_the_sessions_folder_before_touching_a_file() {
        let root = tempfile::tempdir().unwrap();
        let workspace = root.path().join("workspace");
        std::fs::create_dir_all(workspace.join(".gauntlet/sessions")).unwrap();
        // The attack: a torn foreign NDJSON file reachable with `..`.
        std::fs::create_dir_all(root.path().join("outside")).unwrap();
        std::fs::write(root.path().join("outside/evil.ndjson"), "{\"torn").unwrap();
        let before = snapshot(root.path());
        let ids = [
            "../../../outside/evil".to_owned(),
            "../../outside/evil".to_owned(),
            "..".to_owned(),
            root.path().join("outside/evil").display().to_string(),
            "/etc/passwd".to_owned(),
            "a/b".to_owned(),
            "a\\b".to_owned(),
            "a\0b".to_owned(),
            "root\n".to_owned(),
            "x".repeat(10_000),
            String::new(),
        ];
        let mut lines = vec![initialize()];
        for (n, id) in ids.iter().enumerate() {
            lines.push(request(
                n as u64 + 1,
                "session/load",
                json!({"sessionId": id, "cwd": workspace, "mcpServers": []}),
            ));
        }
        let out = exchange(&lines).await;
        for (n, id) in ids.iter().enumerate() {
            let answer = out.iter().find(|m| m["id"] == json!(n + 1)).unwrap();
            assert_eq!(error_code(answer), Some(-32602), "{id:?}: {answer}");
        }
        assert_eq!(snapshot(root.path()), before, "a refused load touched a file");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_symlinked_sessions_folder_or_log_is_never_followed() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = root.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("root.ndjson"), "{\"torn").unwrap();
        // The sessions folder is a link to another folder.
        let linked_folder = root.path().join("linked-folder");
        std::fs::create_dir_all(linked_folder.join(".gauntlet")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, linked_folder.join(".gauntlet/sessions")).unwrap();
        // The state folder is a link.
        let linked_state = root.path().join("linked-state");
        std::fs::create_dir_all(&linked_state).unwrap();
        std::os::unix::fs::symlink(&elsewhere, linked_state.join(".gauntlet")).unwrap();
        // The Log itself is a link to a file elsewhere.
        let linked_log = root.path().join("linked-log");
        std::fs::create_dir_all(linked_log.join(".gauntlet/sessions")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("root.ndjson"), linked_log.join(".gauntlet/sessions/root.ndjson"))
            .unwrap();
        let before = snapshot(root.path());
        let mut lines = vec![initialize()];
        for (n, workspace) in [&linked_folder, &linked_state, &linked_log].into_iter().enumerate() {
            let params = json!({"sessionId": "root", "cwd": workspace, "mcpServers": []});
            lines.push(request(n as u64 + 1, "session/load", params));
        }
        for (n, workspace) in [&linked_folder, &linked_state].into_iter().enumerate() {
            lines.push(request(n as u64 + 11, "session/new", json!({"cwd": workspace, "mcpServers": []})));
        }
        let out = exchange(&lines).await;
        for id in [1, 2, 3, 11, 12] {
            let answer = out.iter().find(|m| m["id"] == json!(id)).unwrap();
            assert_eq!(error_code(answer), Some(-32603), "{answer}");
            let reason = answer["error"]["data"]["reason"].as_str().unwrap();
            assert!(reason.contains("symbolic link"), "{reason}");
        }
        assert_eq!(snapshot(root.path()), before, "a link was followed");
    }

    #[tokio::test]
    async fn an_id_that_is_not_string_number_or_null_is_refused_and_not_executed() {
        let workspace = tempfile::tempdir().unwrap();
        let mut lines = vec![initialize()];
        for id in [json!({"a": 1}), json!([1]), json!(true), json!(1.5), json!(u64::MAX)] {
            let params = json!({"cwd": workspace.path(), "mcpServers": []});
            lines.push(json!({"jsonrpc": "2.0", "id": id, "method": "session/new", "params": params}).to_string());
        }
        let out = exchange(&lines).await;
        assert_eq!(out.len(), 6, "{out:?}");
        for answer in &out[1..] {
            assert_eq!((error_code(answer), &answer["id"]), (Some(-32600), &Value::Null), "{answer}");
        }
        assert!(!workspace.path().join(".gauntlet").exists(), "a refused request was executed");
    }

    #[tokio::test]
    async fn requests_before_initialize_and_a_second_initialize_are_refused() {
        let workspace = tempfile::tempdir().unwrap();
        let new = request(1, "session/new", json!({"cwd": workspace.path(), "mcpServers": []}));
        let cancel = json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "root"}}).to_string();
        let out =
            exchange(&[cancel, new.clone(), initialize(), initialize(), new.replace("\"id\":1", "\"id\":2")]).await;
        let ids: Vec<_> = out.iter().map(|m| (m["id"].clone(), error_code(m))).collect();
        assert_eq!(
            ids,
            vec![(json!(1), Some(-32600)), (json!(0), None), (json!(0), Some(-32600)), (json!(2), None)],
            "{out:?}"
        );
        assert_eq!(out[0]["error"]["data"]["reason"], "`initialize` must come first");
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_a_parse_error_and_the_connection_goes_on() {
        let huge = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"{}\"}}", "x".repeat(lines::MAX_LINE));
        let out = exchange(&[initialize(), huge, request(2, "nothing", json!({}))]).await;
        assert_eq!(out.len(), 3, "{out:?}");
        assert_eq!((error_code(&out[1]), &out[1]["id"]), (Some(-32700), &Value::Null));
        assert!(out[1]["error"]["data"]["reason"].as_str().unwrap().contains("8388608-byte limit"));
        assert_eq!((error_code(&out[2]), &out[2]["id"]), (Some(-32601), &json!(2)));
    }

    #[tokio::test]
    async fn images_are_declared_and_a_bad_one_is_refused_before_the_turn() {
        let workspace = tempfile::tempdir().unwrap();
        let new = request(1, "session/new", json!({"cwd": workspace.path(), "mcpServers": []}));
        let prompt = json!({"sessionId": "root", "prompt": [
            {"type": "text", "text": "look"},
            {"type": "image", "mimeType": "image/png", "data": "not base64!"},
        ]});
        let out = exchange(&[initialize(), new, request(2, "session/prompt", prompt)]).await;
        assert_eq!(out[0]["result"]["agentCapabilities"]["promptCapabilities"]["image"], true);
        assert_eq!(error_code(&out[2]), Some(-32602), "{out:?}");
        assert!(out[2]["error"]["data"]["reason"].as_str().unwrap().contains("not base64"), "{}", out[2]);
        let log = std::fs::read_to_string(workspace.path().join(".gauntlet/sessions/root.ndjson")).unwrap_or_default();
        assert!(!log.contains("user_message"), "a refused prompt was recorded: {log}");
    }

    #[tokio::test]
    async fn a_cwd_that_does_not_exist_is_an_error_and_is_not_created() {
        let root = tempfile::tempdir().unwrap();
        let missing = root.path().join("no/such/folder");
        let params = json!({"cwd": missing, "mcpServers": []});
        let load = json!({"sessionId": "root", "cwd": missing, "mcpServers": []});
        let out = exchange(&[initialize(), request(1, "session/new", params), request(2, "session/load", load)]).await;
        for answer in &out[1..] {
            assert_eq!(error_code(answer), Some(-32602), "{answer}");
        }
        assert!(!root.path().join("no").exists());
    }

    /// A transport whose every request panics: a bug inside a Turn.
    struct Panicking;

    impl Transport for Panicking {
        fn send(&self, _request: crate::provider::HttpRequest) -> crate::provider::transport::SendFuture<'_> {
            Box::pin(async { panic!("the transport broke") })
        }
    }

    #[tokio::test]
    async fn a_turn_that_panics_answers_its_prompt_at_once_and_a_load_closes_it() {
        let workspace = tempfile::tempdir().unwrap();
        let (client, agent) = tokio::io::duplex(1 << 20);
        let (agent_reader, agent_writer) = tokio::io::split(agent);
        let config = AgentConfig { transport: Arc::new(Panicking), ..agent_config() };
        let server = tokio::spawn(serve(agent_reader, agent_writer, config));
        let (client_reader, mut client_writer) = tokio::io::split(client);
        let prompt = json!({"sessionId": "root", "prompt": [{"type": "text", "text": "hi"}]});
        for line in [
            initialize(),
            request(1, "session/new", json!({"cwd": workspace.path(), "mcpServers": []})),
            request(2, "session/prompt", prompt.clone()),
        ] {
            client_writer.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        }
        let mut reader = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(client_reader));
        let answer = loop {
            let message: Value = serde_json::from_str(&reader.next_line().await.unwrap().unwrap()).unwrap();
            if message["id"] == json!(2) {
                break message;
            }
        };
        assert_eq!(error_code(&answer), Some(-32603), "{answer}");
        let reason = answer["error"]["data"]["reason"].as_str().unwrap();
        assert!(reason.contains("panic: the transport broke") && reason.contains("load the session again"), "{reason}");
        // The Session went with the Turn: a prompt to it finds none.
        client_writer.write_all(format!("{}\n", request(3, "session/prompt", prompt)).as_bytes()).await.unwrap();
        let gone: Value = serde_json::from_str(&reader.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!((gone["id"].clone(), error_code(&gone)), (json!(3), Some(-32002)), "{gone}");
        client_writer.shutdown().await.unwrap();
        server.await.unwrap().unwrap();
        // Loading it again closes the Turn the panic left open (TURN-RESTART-RECOVERY).
        let load = json!({"sessionId": "root", "cwd": workspace.path(), "mcpServers": []});
        let out = exchange(&[initialize(), request(1, "session/load", load)]).await;
        assert_eq!(error_code(&out[1]), None, "{out:?}");
        let log = std::fs::read_to_string(workspace.path().join(".gauntlet/sessions/root.ndjson")).unwrap();
        let last: Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
        assert_eq!(
            (last["type"].as_str(), last["data"]["terminal_status"].as_str()),
            (Some("turn_failed"), Some("interrupted"))
        );
    }

    /// A transport whose every request waits forever: a Turn that runs until it is cancelled.
    struct Hanging;

    impl Transport for Hanging {
        fn send(&self, _request: crate::provider::HttpRequest) -> crate::provider::transport::SendFuture<'_> {
            Box::pin(std::future::pending())
        }
    }

    /// The agent's output, line by line, as a client reads it.
    type Output = tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>;

    /// A fresh agent on in-memory pipes: its task, and the client's writer and reader.
    fn start(
        config: AgentConfig,
    ) -> (tokio::task::JoinHandle<Result<(), ConnectionError>>, tokio::io::WriteHalf<tokio::io::DuplexStream>, Output)
    {
        let (client, agent) = tokio::io::duplex(1 << 20);
        let (agent_reader, agent_writer) = tokio::io::split(agent);
        let server = tokio::spawn(serve(agent_reader, agent_writer, config));
        let (client_reader, writer) = tokio::io::split(client);
        (server, writer, tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(client_reader)))
    }

    /// Writes `line` to the agent and reads until the answer to request `id`, returning every
    /// message read.
    async fn until_answer<R: tokio::io::AsyncBufRead + Unpin>(
        writer: &mut (impl AsyncWrite + Unpin),
        reader: &mut tokio::io::Lines<R>,
        line: Option<String>,
        id: u64,
    ) -> Vec<Value> {
        if let Some(line) = line {
            writer.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        }
        let mut read = Vec::new();
        loop {
            let message: Value = serde_json::from_str(&reader.next_line().await.unwrap().unwrap()).unwrap();
            let done = message["id"] == json!(id) && message.get("method").is_none();
            read.push(message);
            if done {
                return read;
            }
        }
    }

    #[tokio::test]
    async fn the_session_methods_are_declared() {
        let out = exchange(&[initialize()]).await;
        let capabilities = &out[0]["result"]["agentCapabilities"]["sessionCapabilities"];
        assert_eq!(capabilities, &json!({"close": {}, "list": {}, "resume": {}}), "{out:?}");
    }

    #[tokio::test]
    async fn a_closed_session_refuses_prompts_and_is_listed_from_its_log() {
        let workspace = tempfile::tempdir().unwrap();
        let cwd = workspace.path();
        let prompt = json!({"sessionId": "root", "prompt": [{"type": "text", "text": "hi"}]});
        let out = exchange(&[
            initialize(),
            request(1, "session/new", json!({"cwd": cwd, "mcpServers": []})),
            request(2, "session/list", json!({"cwd": cwd})),
            request(3, "session/close", json!({"sessionId": "root"})),
            request(4, "session/prompt", prompt),
            request(5, "session/list", json!({})),
            request(6, "session/close", json!({"sessionId": "root"})),
            request(7, "session/list", json!({"cursor": "x"})),
        ])
        .await;
        let answer = |id: u64| out.iter().find(|m| m["id"] == json!(id)).unwrap();
        let listed = json!({"sessions": [{"cwd": cwd, "sessionId": "root"}]});
        assert_eq!(answer(2)["result"], listed, "{out:?}");
        assert_eq!(answer(3)["result"], json!({}), "{out:?}");
        assert_eq!(error_code(answer(4)), Some(-32002), "{out:?}");
        // Closed, not forgotten: its Log is still a Session of the workspace.
        assert_eq!(answer(5)["result"], listed, "{out:?}");
        assert_eq!(error_code(answer(6)), Some(-32002), "{out:?}");
        assert_eq!(error_code(answer(7)), Some(-32602), "{out:?}");
    }

    #[tokio::test]
    async fn resume_reopens_a_session_without_replaying_it() {
        let workspace = tempfile::tempdir().unwrap();
        let cwd = workspace.path();
        exchange(&[initialize(), request(1, "session/new", json!({"cwd": cwd, "mcpServers": []}))]).await;
        let resume = json!({"sessionId": "root", "cwd": cwd, "mcpServers": []});
        let missing = json!({"sessionId": "nobody", "cwd": cwd, "mcpServers": []});
        let out = exchange(&[
            initialize(),
            request(1, "session/resume", resume.clone()),
            request(2, "session/resume", resume),
            request(3, "session/resume", missing),
            request(4, "session/list", json!({})),
        ])
        .await;
        assert!(out.iter().all(|m| m.get("method").is_none()), "a resume replayed: {out:?}");
        assert_eq!(out[1]["result"], json!({}), "{out:?}");
        assert_eq!(out[2]["result"], json!({}), "open and idle, resumed as it is: {out:?}");
        assert_eq!(error_code(&out[3]), Some(-32002), "{out:?}");
        assert_eq!(out[4]["result"]["sessions"][0]["sessionId"], "root", "{out:?}");
    }

    #[tokio::test]
    async fn cancel_request_and_close_stop_a_running_turn_as_session_cancel_does() {
        let workspace = tempfile::tempdir().unwrap();
        let (server, mut writer, mut reader) = start(AgentConfig { transport: Arc::new(Hanging), ..agent_config() });
        let prompt = json!({"sessionId": "root", "prompt": [{"type": "text", "text": "hi"}]});
        until_answer(&mut writer, &mut reader, Some(initialize()), 0).await;
        let new = request(1, "session/new", json!({"cwd": workspace.path(), "mcpServers": []}));
        until_answer(&mut writer, &mut reader, Some(new), 1).await;
        // A `$/cancel_request` naming another request changes nothing; the prompt's own ends it.
        writer.write_all(format!("{}\n", request(2, "session/prompt", prompt.clone())).as_bytes()).await.unwrap();
        for request_id in [99, 2] {
            let cancel = json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request_id}});
            writer.write_all(format!("{cancel}\n").as_bytes()).await.unwrap();
        }
        let answered = until_answer(&mut writer, &mut reader, None, 2).await;
        assert_eq!(answered.last().unwrap()["result"], json!({"stopReason": "cancelled"}), "{answered:?}");
        // `session/close` of a running Turn cancels it, then frees the Session.
        writer.write_all(format!("{}\n", request(4, "session/prompt", prompt.clone())).as_bytes()).await.unwrap();
        writer
            .write_all(format!("{}\n", request(5, "session/close", json!({"sessionId": "root"}))).as_bytes())
            .await
            .unwrap();
        let closed = until_answer(&mut writer, &mut reader, None, 5).await;
        let prompt_answer = closed.iter().find(|m| m["id"] == json!(4)).unwrap();
        assert_eq!(prompt_answer["result"], json!({"stopReason": "cancelled"}), "{closed:?}");
        assert_eq!(closed.last().unwrap()["result"], json!({}), "{closed:?}");
        let gone = until_answer(&mut writer, &mut reader, Some(request(6, "session/prompt", prompt)), 6).await;
        assert_eq!(error_code(gone.last().unwrap()), Some(-32002), "{gone:?}");
        writer.shutdown().await.unwrap();
        server.await.unwrap().unwrap();
        let log = std::fs::read_to_string(workspace.path().join(".gauntlet/sessions/root.ndjson")).unwrap();
        let interrupted = log.lines().filter(|line| line.contains("\"terminal_status\":\"interrupted\"")).count();
        assert_eq!(interrupted, 2, "{log}");
    }

    /// Asked for version 2, the agent speaks it: the prompt is echoed, running, acknowledged
    /// with its message id, and its end is the idle state with the stop reason; a resume with
    /// `replayFrom` replays the user message with the same id, then says idle, then answers.
    /// `session/load` is not a v2 method.
    #[tokio::test]
    async fn version_two_acknowledges_prompts_and_ends_turns_with_the_idle_state() {
        let workspace = tempfile::tempdir().unwrap();
        let (server, mut writer, mut reader) = start(AgentConfig { transport: Arc::new(Hanging), ..agent_config() });
        let initialize = request(0, "initialize", json!({"protocolVersion": 2, "info": {"name": "t", "version": "1"}}));
        let answered = until_answer(&mut writer, &mut reader, Some(initialize), 0).await;
        let response = &answered[0]["result"];
        assert_eq!(response["protocolVersion"], 2, "{answered:?}");
        serde_json::from_value::<agent_client_protocol_schema::v2::InitializeResponse>(response.clone()).unwrap();
        let new = request(1, "session/new", json!({"cwd": workspace.path(), "mcpServers": []}));
        until_answer(&mut writer, &mut reader, Some(new), 1).await;
        let prompt = json!({"sessionId": "root", "prompt": [{"type": "text", "text": "hi"}]});
        let acked = until_answer(&mut writer, &mut reader, Some(request(2, "session/prompt", prompt)), 2).await;
        let kinds: Vec<&Value> = acked.iter().map(|m| &m["params"]["update"]["sessionUpdate"]).collect();
        assert_eq!(kinds[..2], [&json!("user_message"), &json!("state_update")], "{acked:?}");
        assert_eq!(acked[0]["params"]["update"]["messageId"], "root:user:1", "{acked:?}");
        assert_eq!(acked[2]["result"], json!({"messageId": "root:user:1"}), "{acked:?}");
        let cancel = json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "root"}});
        writer.write_all(format!("{cancel}\n").as_bytes()).await.unwrap();
        let idle: Value = serde_json::from_str(&reader.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(
            idle["params"]["update"],
            json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"})
        );
        let load = request(3, "session/load", json!({"sessionId": "root", "cwd": workspace.path(), "mcpServers": []}));
        let refused = until_answer(&mut writer, &mut reader, Some(load), 3).await;
        assert_eq!(error_code(refused.last().unwrap()), Some(-32601), "{refused:?}");
        writer.shutdown().await.unwrap();
        server.await.unwrap().unwrap();

        let (server, mut writer, mut reader) = start(agent_config());
        let initialize = request(0, "initialize", json!({"protocolVersion": 2, "info": {"name": "t", "version": "1"}}));
        until_answer(&mut writer, &mut reader, Some(initialize), 0).await;
        let resume = json!({"sessionId": "root", "cwd": workspace.path(), "replayFrom": {"type": "start"}});
        let replayed = until_answer(&mut writer, &mut reader, Some(request(1, "session/resume", resume)), 1).await;
        let updates: Vec<&Value> = replayed.iter().filter_map(|m| m.pointer("/params/update")).collect();
        assert_eq!(updates[0]["messageId"], "root:user:1", "{replayed:?}");
        assert_eq!(
            updates[updates.len() - 2..],
            [&json!({"sessionUpdate": "replay_complete"}), &json!({"sessionUpdate": "state_update", "state": "idle"})],
            "{replayed:?}"
        );
        writer.shutdown().await.unwrap();
        server.await.unwrap().unwrap();
    }

    /// v2's `session/new` asks only `cwd`, and lists the model option; a prompt retried with
    /// its `idempotencyKey` is answered with the first one's message id and runs nothing, while
    /// the first runs and in a later process, which reads the key from the Log; an invalid key
    /// is refused -32602. A resume without `replayFrom` replays nothing and marks no replay's
    /// end, one with it marks it once, empty or not; an unknown cursor is refused.
    #[tokio::test]
    async fn version_two_runs_a_prompt_once_per_key_and_marks_each_replays_end() {
        let workspace = tempfile::tempdir().unwrap();
        let v2_initialize =
            || request(0, "initialize", json!({"protocolVersion": 2, "info": {"name": "t", "version": "1"}}));
        let (server, mut writer, mut reader) = start(AgentConfig { transport: Arc::new(Hanging), ..agent_config() });
        until_answer(&mut writer, &mut reader, Some(v2_initialize()), 0).await;
        let new = request(1, "session/new", json!({"cwd": workspace.path()}));
        let created = until_answer(&mut writer, &mut reader, Some(new), 1).await;
        assert_eq!(created[0]["result"]["sessionId"], "root", "{created:?}");
        assert_eq!(created[0]["result"]["configOptions"][0]["configId"], "model", "{created:?}");
        let resume = |id: u64, from: Value| {
            request(id, "session/resume", json!({"sessionId": "root", "cwd": workspace.path(), "replayFrom": from}))
        };
        let empty = until_answer(&mut writer, &mut reader, Some(resume(2, json!({"type": "start"}))), 2).await;
        let kinds = |read: &[Value]| -> Vec<String> {
            read.iter().filter_map(|m| m.pointer("/params/update/sessionUpdate")?.as_str().map(str::to_owned)).collect()
        };
        assert_eq!(kinds(&empty), ["replay_complete", "state_update"], "{empty:?}");
        let keyed = |id: u64, key: &str| {
            let prompt =
                json!({"sessionId": "root", "prompt": [{"type": "text", "text": "hi"}], "idempotencyKey": key});
            request(id, "session/prompt", prompt)
        };
        let first = until_answer(&mut writer, &mut reader, Some(keyed(3, "k")), 3).await;
        assert_eq!(first.last().unwrap()["result"]["messageId"], "root:user:1", "{first:?}");
        let retried = until_answer(&mut writer, &mut reader, Some(keyed(4, "k")), 4).await;
        assert_eq!(retried, [json!({"jsonrpc": "2.0", "id": 4, "result": {"messageId": "root:user:1"}})]);
        let invalid = until_answer(&mut writer, &mut reader, Some(keyed(5, "")), 5).await;
        assert_eq!(error_code(&invalid[0]), Some(-32602), "{invalid:?}");
        let cancel = json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "root"}});
        writer.write_all(format!("{cancel}\n").as_bytes()).await.unwrap();
        reader.next_line().await.unwrap();
        let plain = json!({"sessionId": "root", "cwd": workspace.path()});
        let reattached = until_answer(&mut writer, &mut reader, Some(request(6, "session/resume", plain)), 6).await;
        assert_eq!(kinds(&reattached), ["state_update"], "{reattached:?}");
        let unknown = until_answer(&mut writer, &mut reader, Some(resume(7, json!({"type": "nowhere"}))), 7).await;
        assert_eq!(error_code(&unknown[0]), Some(-32602), "{unknown:?}");
        writer.shutdown().await.unwrap();
        server.await.unwrap().unwrap();

        let (server, mut writer, mut reader) = start(AgentConfig { transport: Arc::new(Hanging), ..agent_config() });
        until_answer(&mut writer, &mut reader, Some(v2_initialize()), 0).await;
        let replayed = until_answer(&mut writer, &mut reader, Some(resume(1, json!({"type": "start"}))), 1).await;
        let replay_ends = kinds(&replayed).iter().filter(|kind| *kind == "replay_complete").count();
        assert_eq!(replay_ends, 1, "{replayed:?}");
        let again = until_answer(&mut writer, &mut reader, Some(keyed(2, "k")), 2).await;
        assert_eq!(again, [json!({"jsonrpc": "2.0", "id": 2, "result": {"messageId": "root:user:1"}})]);
        writer.shutdown().await.unwrap();
        server.await.unwrap().unwrap();
        let log = std::fs::read_to_string(workspace.path().join(".gauntlet/sessions/root.ndjson")).unwrap();
        assert_eq!(log.matches("\"user_message\"").count(), 1, "{log}");
        assert!(log.contains("\"idempotency_key\":\"k\""), "{log}");
    }

    /// A `resource_link` block reaches the Log's user message as the link it was sent as; the
    /// model option is listed, the model chosen among it.
    #[tokio::test]
    async fn a_prompts_link_is_written_into_its_text_and_the_model_is_an_option() {
        let workspace = tempfile::tempdir().unwrap();
        let config = AgentConfig { transport: Arc::new(Panicking), models: vec!["gpt-5.4".into()], ..agent_config() };
        let (server, mut writer, mut reader) = start(config);
        until_answer(&mut writer, &mut reader, Some(initialize()), 0).await;
        let new = request(1, "session/new", json!({"cwd": workspace.path(), "mcpServers": []}));
        let created = until_answer(&mut writer, &mut reader, Some(new), 1).await;
        let option = &created[0]["result"]["configOptions"][0];
        assert_eq!((&option["currentValue"], &option["category"]), (&json!("gpt-5.5"), &json!("model")), "{option}");
        let values: Vec<&Value> = option["options"].as_array().unwrap().iter().map(|choice| &choice["value"]).collect();
        assert_eq!(values, [&json!("gpt-5.5"), &json!("gpt-5.4")]);
        let blocks = json!([
            {"type": "text", "text": "Summarise"},
            {"type": "resource_link", "uri": "https://example.com/a.md", "name": "a.md"},
        ]);
        let prompt = request(2, "session/prompt", json!({"sessionId": "root", "prompt": blocks}));
        until_answer(&mut writer, &mut reader, Some(prompt), 2).await;
        writer.shutdown().await.unwrap();
        server.await.unwrap().unwrap();
        let log = std::fs::read_to_string(workspace.path().join(".gauntlet/sessions/root.ndjson")).unwrap();
        assert!(log.contains("\"links\":[{\"name\":\"a.md\",\"uri\":\"https://example.com/a.md\"}]"), "{log}");
    }

    /// A Session open and idle on the connection is loaded as it is, replayed; one whose Turn
    /// runs is refused.
    #[tokio::test]
    async fn an_open_idle_session_is_loaded_and_a_busy_one_refused() {
        let workspace = tempfile::tempdir().unwrap();
        let (server, mut writer, mut reader) = start(AgentConfig { transport: Arc::new(Hanging), ..agent_config() });
        until_answer(&mut writer, &mut reader, Some(initialize()), 0).await;
        let new = request(1, "session/new", json!({"cwd": workspace.path(), "mcpServers": []}));
        until_answer(&mut writer, &mut reader, Some(new), 1).await;
        let prompt = json!({"sessionId": "root", "prompt": [{"type": "text", "text": "hi"}]});
        writer.write_all(format!("{}\n", request(2, "session/prompt", prompt)).as_bytes()).await.unwrap();
        let load =
            |id| request(id, "session/load", json!({"sessionId": "root", "cwd": workspace.path(), "mcpServers": []}));
        let busy = until_answer(&mut writer, &mut reader, Some(load(3)), 3).await;
        assert_eq!(error_code(busy.last().unwrap()), Some(-32602), "{busy:?}");
        let cancel = json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "root"}});
        writer.write_all(format!("{cancel}\n").as_bytes()).await.unwrap();
        until_answer(&mut writer, &mut reader, None, 2).await;
        let loaded = until_answer(&mut writer, &mut reader, Some(load(4)), 4).await;
        assert_eq!(loaded[0]["params"]["update"]["sessionUpdate"], "user_message_chunk", "{loaded:?}");
        assert_eq!(loaded.last().unwrap()["result"], json!({}), "{loaded:?}");
        writer.shutdown().await.unwrap();
        server.await.unwrap().unwrap();
    }
}
