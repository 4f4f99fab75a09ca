//! The reference runtime as an Agent Client Protocol agent: JSON-RPC 2.0, one JSON object per
//! line, over any `AsyncRead` / `AsyncWrite` (stdio in `gauntlet-agent`, an in-memory duplex in
//! the harness: the same code path).
//!
//! Methods: `initialize`, `session/new`, `session/load`, `session/prompt`, `session/cancel`,
//! and `session/set_config_option` for the `model`.
//! Protocol errors are answered to the peer and the connection goes on: a malformed line gets
//! a parse error with `id: null`, an unknown method -32601, bad params or a second prompt on a
//! busy Session -32602 (ACP-JSONRPC-ERRORS). Only a broken pipe ends the connection. A Turn runs
//! in its own task so `session/cancel` is read while it streams.

#![allow(clippy::result_large_err, reason = "ACP's Error is the answer we send, not a hot path")]

pub mod lines;
pub mod message;
pub mod projection;
pub mod stop_reason;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::rpc::{JsonRpcMessage, Notification};
use agent_client_protocol_schema::v1::{
    AgentCapabilities, CancelNotification, ContentBlock, Error, Implementation, InitializeRequest, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest,
    PromptResponse, RequestId, Response, SessionConfigOption, SessionConfigSelectOption, SessionNotification,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::canonical;
use crate::control::{CancelHandle, CancelSignal};
use crate::delegation::Delegation;
use crate::event::Event;
use crate::ids::{self, Clock, IdSource};
use crate::log::LogError;
use crate::provider::{Provider, ProviderConfig, Transport};
use crate::recovery;
use crate::resource::Image;
use crate::session::{Session, SessionConfig};
use crate::tools::Toolbox;
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
    /// At most this many Subagents of a Session run at once.
    pub max_subagents: usize,
    /// Offer the `plan` tool, whose lists are shown as ACP `plan` updates.
    pub plans: bool,
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
    let mut agent = Agent { config, outbox, sessions: HashMap::new(), done: done_tx, initialized: false };
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
        if let Slot::Busy(cancel) = slot {
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
}

/// A Session is idle (owned here) or busy (owned by its Turn task, cancellable from here).
enum Slot {
    Idle(Box<Open>),
    Busy(CancelHandle),
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
        if method == "session/cancel" {
            if let Ok(request) = parse::<CancelNotification>(params)
                && let Some(Slot::Busy(cancel)) = self.sessions.get(&*request.session_id.0)
            {
                cancel.cancel();
            }
            return;
        }
        let Some(id) = id else { return }; // unknown notifications are ignored, as JSON-RPC asks
        match method.as_str() {
            "initialize" => {
                let result = parse::<InitializeRequest>(params).map(|_| {
                    self.initialized = true;
                    InitializeResponse::new(ProtocolVersion::V1)
                        // Image prompts are accepted (LOG-NO-RESOURCE-BYTES); audio and embedded
                        // resources are not.
                        .agent_capabilities(
                            AgentCapabilities::new()
                                .load_session(true)
                                .prompt_capabilities(PromptCapabilities::new().image(true)),
                        )
                        .agent_info(Implementation::new("gauntlet-agent", env!("CARGO_PKG_VERSION")))
                });
                self.outbox.respond(id, result);
            }
            "session/new" => {
                let result = parse::<NewSessionRequest>(params).and_then(|request| {
                    let session_id = self.config.ids.session_id();
                    let open = self.open(&session_id, request.cwd)?;
                    self.sessions.insert(session_id.clone(), Slot::Idle(Box::new(open)));
                    Ok(NewSessionResponse::new(session_id))
                });
                self.outbox.respond(id, result);
            }
            "session/load" => {
                let result = parse::<LoadSessionRequest>(params).and_then(|request| self.load(request));
                self.outbox.respond(id, result);
            }
            "session/set_config_option" => {
                let result = parse::<SetSessionConfigOptionRequest>(params).and_then(|request| self.configure(request));
                self.outbox.respond(id, result);
            }
            "session/prompt" => {
                if let Err(error) = parse::<PromptRequest>(params).and_then(|request| self.prompt(id.clone(), request))
                {
                    self.outbox.respond::<Value>(id, Err(error));
                }
            }
            _ => self.outbox.respond::<Value>(id, Err(Error::method_not_found().data(json!({"method": method})))),
        }
    }

    /// Opens a Session with its tools: a Turn the last process left open is closed first
    /// (TURN-RESTART-RECOVERY), then the workspace tools, and delegation and the `plan` tool
    /// when configured.
    fn open(&self, session_id: &str, cwd: PathBuf) -> Result<Open, Error> {
        check_cwd(&cwd)?;
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
            tools = tools.with(Delegation::open(&mut session, self.config.max_subagents).map_err(log_error)?);
        }
        if self.config.plans {
            tools = tools.with(Plan);
        }
        Ok(Open { session, tools })
    }

    /// Replays the Session's transcript from its Log, then answers (ACP-LOAD-CLEAN).
    fn load(&mut self, request: LoadSessionRequest) -> Result<LoadSessionResponse, Error> {
        let session_id = request.session_id.0.to_string();
        // Only ids of the shape this agent hands out, before any path is built or file
        // touched: `../x`, `/abs`, separators and NUL never reach the file system
        // (ACP-SESSION-ID-CONFINED).
        ids::check_session_id(&session_id)
            .map_err(|error| Error::invalid_params().data(json!({"reason": error.to_string()})))?;
        if self.sessions.contains_key(&session_id) {
            return Err(Error::invalid_params().data(json!({"reason": "the session is already open"})));
        }
        check_cwd(&request.cwd)?;
        let log_path = SessionConfig::new(&session_id, &request.cwd).log_path().map_err(log_error)?;
        if !log_path.is_file() {
            return Err(Error::resource_not_found(Some(log_path.display().to_string())));
        }
        let open = self.open(&session_id, request.cwd)?;
        let session = &open.session;
        let projector = Projector { workspace: session.workspace(), context_window: self.config.context_window };
        for update in projector.replay(session.history()) {
            self.outbox.update(&session_id, update);
        }
        let mut response = LoadSessionResponse::new();
        if let Some(torn) = session.torn_tail() {
            // The Log's torn tail is reported, not hidden (LOG-TORN-TAIL).
            let mut meta = serde_json::Map::new();
            meta.insert("gauntlet".into(), json!({"tornTail": {"offset": torn.offset, "length": torn.bytes.len()}}));
            response = response.meta(meta);
        }
        self.sessions.insert(session_id, Slot::Idle(Box::new(open)));
        Ok(response)
    }

    /// `session/set_config_option` for `model`, the one option this agent has.
    fn configure(&mut self, request: SetSessionConfigOptionRequest) -> Result<SetSessionConfigOptionResponse, Error> {
        let session_id = request.session_id.0.to_string();
        let Some(Slot::Idle(open)) = self.sessions.get_mut(&session_id) else {
            return Err(Error::invalid_params().data(json!({"reason": "no idle session with this id"})));
        };
        let model = match (&*request.config_id.0, request.value.as_value_id()) {
            ("model", Some(model)) => model.0.to_string(),
            _ => return Err(Error::invalid_params().data(json!({"reason": "the only option is `model`"}))),
        };
        open.session.set_model(&model);
        let choice = SessionConfigSelectOption::new(model.clone(), model.clone());
        Ok(SetSessionConfigOptionResponse::new(vec![SessionConfigOption::select(
            "model",
            "Model",
            model,
            vec![choice],
        )]))
    }

    fn prompt(&mut self, id: RequestId, request: PromptRequest) -> Result<(), Error> {
        let session_id = request.session_id.0.to_string();
        let slot = self.sessions.get_mut(&session_id).ok_or_else(|| Error::session_not_found(session_id.clone()))?;
        if matches!(slot, Slot::Busy(_)) {
            return Err(Error::invalid_params().data(json!({"reason": "a turn is already running in this session"})));
        }
        let text: Vec<&str> = request
            .prompt
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect();
        let text = text.join("\n");
        // Every image block, decoded before the Turn starts, so a bad one is refused with
        // nothing recorded.
        let images = request
            .prompt
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Image(image) => Some(Image::from_base64(&image.mime_type, &image.data)),
                _ => None,
            })
            .collect::<Result<Vec<Image>, _>>()
            .map_err(|error| Error::invalid_params().data(json!({"reason": error.to_string()})))?;
        let (cancel, signal) = CancelSignal::pair();
        let Slot::Idle(open) = std::mem::replace(slot, Slot::Busy(cancel)) else { return Ok(()) };
        let outbox = self.outbox.clone();
        let done = self.done.clone();
        let context_window = self.config.context_window;
        let turn = tokio::spawn(run_turn(*open, Prompt { text, images }, signal, id.clone(), outbox, context_window));
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
    fn finished(&mut self, finished: Finished) {
        let Finished { session_id, open, id, answer } = finished;
        match open {
            Some(open) => self.sessions.insert(session_id, Slot::Idle(Box::new(open))),
            None => self.sessions.remove(&session_id),
        };
        self.outbox.respond(id, answer);
    }
}

/// What a `session/prompt` asks: its text blocks joined, and its images.
struct Prompt {
    text: String,
    images: Vec<Image>,
}

/// Runs a Turn, forwarding its Events as updates in order; the answer goes back with the Session.
async fn run_turn(
    mut open: Open,
    prompt: Prompt,
    mut cancel: CancelSignal,
    id: RequestId,
    outbox: Outbox,
    context_window: Option<u64>,
) -> Finished {
    let (events_tx, mut events) = mpsc::unbounded_channel::<Event>();
    open.session.subscribe(events_tx);
    let session_id = open.session.config().session_id.clone();
    let workspace = open.session.workspace().to_owned();
    let projector = Projector { workspace: &workspace, context_window };
    let forward = |event: Event| {
        if let Some(update) = projector.live(&event) {
            outbox.update(&session_id, update);
        }
    };
    let result = {
        let turn = open.session.prompt_with(&mut open.tools, &prompt.text, &prompt.images, &mut cancel);
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
    serde_json::from_value(params).map_err(|error| Error::invalid_params().data(json!({"reason": error.to_string()})))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Sequential;
    use crate::provider::HttpTransport;

    fn agent_config() -> AgentConfig {
        AgentConfig {
            provider: ProviderConfig::default(),
            transport: Arc::new(HttpTransport::default()),
            model: "gpt-5.5".into(),
            turn_timeout: Duration::from_secs(60),
            context_window: None,
            compact_at_tokens: None,
            ids: Arc::new(Sequential::default()),
            clock: Clock::System,
            delegation: false,
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
}
