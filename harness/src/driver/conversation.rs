//! A scenario played as an ACP client: the same steps for every agent, in process or not.
//!
//! Live: `initialize`, `session/new` (or `session/load` of a preloaded Log), then each turn's
//! raw lines, model switch and prompt, with `session/cancel` (or `$/cancel_request`) and a
//! refused second prompt at their triggers; a turn may first move the Session to a fresh agent
//! by `session/load` or `session/resume`, or load it again where it is open. After the last turn, `session/list` and
//! `session/close` followed by one more prompt, when the scenario asks. Then a fresh agent
//! loads the Session and its replay is recorded apart.

use std::error::Error;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::Duration;

use agent_client_protocol_schema::v1::AGENT_METHOD_NAMES;
use agent_client_protocol_schema::v2;
use gauntlet_mock_provider::provider::MockProvider;
use gauntlet_mock_provider::tool_names::SERVER_NAME;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::driver::acp_client::{AcpClient, ClientError, Settings, is_response, session_update};
use gauntlet_judge::capture::{CANCEL_CLOSE_BOUND, QUICK_ANSWER, Reported, TornTail};
use gauntlet_judge::judge::v1_reading;
use gauntlet_judge::scenario::{AcpVersion, ClientConfig, Scenario, Trigger, Turn};

/// The Session id preloaded Logs use.
pub const PRELOADED_SESSION_ID: &str = "root";

/// ACP's `sessionUpdate` that reports a tool call.
const TOOL_CALL_UPDATE: &str = "tool_call"; // ACP's name, not a Log type

/// Pipes to one running agent, and a future that resolves when it has stopped.
pub struct Connection<S> {
    /// The agent's output.
    pub reader: Box<dyn AsyncRead + Unpin + Send>,
    /// The agent's input.
    pub writer: Box<dyn AsyncWrite + Unpin + Send>,
    /// Resolves once the agent stopped after its input closed.
    pub ended: Ended<S>,
}

/// Resolves once an agent stopped after its input closed; `Err`, in the driver's type `S`,
/// says how it did not stop cleanly (a bad exit, a kill, a survivor).
pub type Ended<S> = Pin<Box<dyn Future<Output = Result<(), S>> + Send>>;

/// Starts a fresh agent; `Err`, in the driver's type `L`, says why it could not.
pub type Launch<'a, L, S> = dyn FnMut() -> Result<Connection<S>, L> + 'a;

/// Why the conversation with an agent stopped short: a fault of the Capture, whose text is its
/// Display. `L` and `S` are the driver's reasons an agent did not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
enum ConversationError<L: Error + 'static, S: Error + 'static> {
    /// An agent could not be started.
    #[error(transparent)]
    Launch(L),
    /// The conversation broke: closed, garbage, flooding, silence.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// `initialize` failed; `stopped` when the agent then did not stop cleanly either.
    #[error("{problem}{}", .stopped.as_ref().map_or_else(String::new, |stopped| format!("; then {stopped}")))]
    Initialize {
        /// What went wrong.
        problem: InitializeError,
        /// How the agent then failed to stop cleanly, if it did.
        stopped: Option<FinishError<S>>,
    },
    /// `session/new` answered without a Session id.
    #[error("session/new gave no sessionId: {answer}")]
    NoSessionId {
        /// The whole answer.
        answer: Value,
    },
    /// `session/load` or `session/resume` failed.
    #[error(transparent)]
    Load(#[from] SessionLoadError),
    /// The agent did not stop cleanly.
    #[error(transparent)]
    Finish(#[from] FinishError<S>),
}

/// Why `initialize` did not succeed.
#[derive(Debug, thiserror::Error)]
enum InitializeError {
    /// The agent answered with an error.
    #[error("initialize failed: {error}")]
    Refused {
        /// The answer's `error`.
        error: Value,
    },
    /// The conversation broke.
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// Why `session/load` (or `session/resume`) did not reopen the Session.
#[derive(Debug, thiserror::Error)]
enum SessionLoadError {
    /// The agent answered with an error.
    #[error("{method} failed: {error}")]
    Refused {
        /// `session/load` or `session/resume`.
        method: &'static str,
        /// The answer's `error`.
        error: Value,
    },
    /// The conversation broke.
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// Why an agent did not stop cleanly once its input was to close.
#[derive(Debug, thiserror::Error)]
enum FinishError<S: Error + 'static> {
    /// Its input would not close.
    #[error(transparent)]
    Close(#[from] ClientError),
    /// The driver's account of how it stopped.
    #[error(transparent)]
    Ended(S),
}

/// What the client saw.
#[derive(Debug, Default)]
pub struct Conversation {
    /// The Session the scenario used.
    pub session_id: Option<String>,
    /// The live transcript, both directions.
    pub live: Vec<Value>,
    /// The `session/load` replay into a fresh agent.
    pub load: Vec<Value>,
    /// Each scenario turn's `session/prompt` answer.
    pub reported: Vec<Reported>,
    /// A torn Log tail the agent reported when loading.
    pub torn_tail: Option<TornTail>,
    /// What went wrong talking to the agent.
    pub faults: Vec<String>,
    /// Each `session/cancel` the client sent.
    pub cancels: Vec<SentCancel>,
    /// A prompt's images were not sent: the agent does not declare `promptCapabilities.image`.
    pub images_withheld: bool,
}

/// One `session/cancel` (or `$/cancel_request`) the client sent.
#[derive(Debug, Clone, Copy)]
pub struct SentCancel {
    /// The scenario turn it cancelled, from 0.
    pub turn: usize,
    /// When, on tokio's clock.
    pub sent: tokio::time::Instant,
    /// Sent because the client's patience ran out while the agent still asked its Provider.
    pub impatient: bool,
    /// Sent as `$/cancel_request` naming the turn's prompt, not `session/cancel`.
    pub by_request: bool,
}

/// A cancel `play_turn` sent: when, whether its patience sent it, and whether as
/// `$/cancel_request`.
type TurnCancel = (tokio::time::Instant, bool, bool);

/// Plays `scenario` against agents started by `launch`, in `workspace`; then, with
/// `replay_load`, loads the Session into a fresh agent.
pub async fn converse<L: Error + 'static, S: Error + 'static>(
    scenario: &Scenario,
    workspace: &Path,
    launch: &mut Launch<'_, L, S>,
    settings: &Settings,
    replay_load: bool,
    mock: &MockProvider,
) -> Conversation {
    let mut conversation = Conversation::default();
    if let Err(fault) = live(scenario, workspace, launch, settings, mock, &mut conversation).await {
        conversation.faults.push(fault.to_string());
    }
    if let Some(session_id) = conversation.session_id.clone().filter(|_| replay_load) {
        let mut transcript = Vec::new();
        match load_only(&session_id, workspace, launch, settings, scenario.config.acp, &mut transcript).await {
            // A refused load is the agent's answer, in the transcript: a finding of its own
            // (ACP-LOAD-MATCHES-LIVE), while the rest of the run is still judged.
            Ok(()) | Err(ConversationError::Load(SessionLoadError::Refused { .. })) => {}
            Err(fault) => conversation.faults.push(format!("load replay: {fault}")),
        }
        conversation.load = transcript;
    }
    let workspace = workspace.display().to_string();
    for message in conversation.live.iter_mut().chain(conversation.load.iter_mut()) {
        mask(message, &workspace);
        mask_mcp_servers(message);
    }
    conversation
}

/// gauntlet's MCP server as transcripts show it, the same on every machine and port: the
/// in-process driver sends it so (its command is never run), and a process driver's real
/// command and tool server URL are recorded so.
pub fn shown_mcp_servers() -> Value {
    json!([{"name": SERVER_NAME, "command": SHOWN_COMMAND, "args": ["mcp"], "env": []}])
}

/// The command transcripts show for gauntlet's MCP server.
const SHOWN_COMMAND: &str = "/gauntlet";

/// Records gauntlet's MCP server in a message the client sent as [`shown_mcp_servers`] has it,
/// in whichever version's shape the message carries it.
fn mask_mcp_servers(message: &mut Value) {
    let Some(Value::Array(servers)) = message.pointer_mut("/message/params/mcpServers") else { return };
    for server in servers.iter_mut().filter(|server| server["name"] == SERVER_NAME) {
        server["command"] = json!(SHOWN_COMMAND);
        server["args"] = json!(["mcp"]);
    }
}

type Client = AcpClient<Box<dyn AsyncRead + Unpin + Send>, Box<dyn AsyncWrite + Unpin + Send>>;

/// A client on a fresh agent, initialized. An agent that fails `initialize` is stopped the
/// orderly way, so how it exits is evidence too; what it said goes to `transcript`.
async fn connect<L: Error + 'static, S: Error + 'static>(
    launch: &mut Launch<'_, L, S>,
    settings: &Settings,
    (version, declared): (AcpVersion, ClientConfig),
    transcript: &mut Vec<Value>,
) -> Result<(Client, Ended<S>), ConversationError<L, S>> {
    let connection = launch().map_err(ConversationError::Launch)?;
    let mut client = AcpClient::new(connection.reader, connection.writer, settings.clone());
    let problem = match client.request("initialize", initialize_params(version, declared)).await {
        Ok(answer) if answer.get("error").is_none() => {
            client.accepts_images = match version {
                AcpVersion::V1 => {
                    answer.pointer("/result/agentCapabilities/promptCapabilities/image") == Some(&json!(true))
                }
                // v2 declares a capability by its object being present.
                AcpVersion::V2 => {
                    answer.pointer("/result/capabilities/session/prompt/image").is_some_and(Value::is_object)
                }
            };
            return Ok((client, connection.ended));
        }
        Ok(answer) => InitializeError::Refused { error: answer["error"].clone() },
        Err(error) => InitializeError::Client(error),
    };
    let stopped = finish(client, connection.ended, transcript).await.err();
    Err(ConversationError::Initialize { problem, stopped })
}

/// What the client asks in `initialize` in `version`: no client file system or terminal (v2
/// has neither), in v1 `plan` when the scenario's client declares it (v2 has no such
/// capability), and in v2 who it is (v1's `clientInfo` is optional; v2's `info` is not).
pub fn initialize_params(version: AcpVersion, declared: ClientConfig) -> Value {
    match version {
        AcpVersion::V1 if declared.plan => json!({"protocolVersion": 1, "clientCapabilities": {"plan": {}}}),
        AcpVersion::V1 => json!({"protocolVersion": 1, "clientCapabilities": {}}),
        AcpVersion::V2 => json!({
            "protocolVersion": 2,
            "info": {"name": "gauntlet", "version": env!("CARGO_PKG_VERSION")},
            "capabilities": {},
        }),
    }
}

/// Closes the agent's input and waits for it to stop, keeping what it still wrote.
async fn finish<S: Error + 'static>(
    mut client: Client,
    ended: Ended<S>,
    transcript: &mut Vec<Value>,
) -> Result<(), FinishError<S>> {
    let closed = client.close().await;
    // What the agent still writes while it stops is kept; stopping it (bounded by the driver)
    // closes its output, which ends the drain.
    let ((), stopped) = tokio::join!(client.drain(), ended);
    transcript.append(&mut client.transcript);
    closed?;
    stopped.map_err(FinishError::Ended)
}

async fn live<L: Error + 'static, S: Error + 'static>(
    scenario: &Scenario,
    workspace: &Path,
    launch: &mut Launch<'_, L, S>,
    settings: &Settings,
    mock: &MockProvider,
    conversation: &mut Conversation,
) -> Result<(), ConversationError<L, S>> {
    let version = scenario.config.acp;
    let speaks = (version, scenario.client);
    let (mut client, mut ended) = connect(launch, settings, speaks, &mut conversation.live).await?;
    let session_id = if scenario.log.is_some() {
        conversation.torn_tail = load_or_resume(&mut client, PRELOADED_SESSION_ID, workspace, version, true).await?;
        PRELOADED_SESSION_ID.to_owned()
    } else {
        let answer = client.request("session/new", new_session_params(&client, workspace, version)).await?;
        match answer.pointer("/result/sessionId").and_then(Value::as_str) {
            Some(session_id) => session_id.to_owned(),
            None => return Err(ConversationError::NoSessionId { answer }),
        }
    };
    conversation.session_id = Some(session_id.clone());
    let mut outcome = Ok(());
    let mut reopened = true;
    for (turn_idx, turn) in scenario.turns.iter().enumerate() {
        let (fresh_agent, reopens) = opening(scenario, turn_idx, turn);
        if fresh_agent {
            settle_after_cancels(mock, &conversation.cancels).await;
            finish(client, ended, &mut conversation.live).await?;
            (client, ended) = connect(launch, settings, speaks, &mut conversation.live).await?;
        }
        if reopens {
            match reopen(&mut client, turn, &session_id, workspace, version).await {
                Ok(_) => {}
                // A refused reload or resume is the agent's answer, in the live transcript: the
                // conversation cannot go on, and what was observed is still judged
                // (ACP-LOAD-MATCHES-LIVE and ACP-RESUME-NO-REPLAY name the refusal).
                Err(SessionLoadError::Refused { .. }) => {
                    reopened = false;
                    break;
                }
                Err(other) => return Err(other.into()),
            }
        }
        let mut cancels = Vec::new();
        if !turn.images.is_empty() && !client.accepts_images {
            conversation.images_withheld = true;
        }
        // The mock answers this turn's requests from this turn's responses only.
        mock.begin_turn(turn_idx);
        let played = Played {
            session_id: &session_id,
            turn,
            index: turn_idx,
            queued: scenario.busy_turn(turn_idx),
            mock,
            version,
        };
        outcome =
            play_turn(&mut client, played, &mut cancels).await.map(|reported| conversation.reported.push(reported));
        conversation.cancels.extend(cancels.into_iter().map(|(sent, impatient, by_request)| SentCancel {
            turn: turn_idx,
            sent,
            impatient,
            by_request,
        }));
        if outcome.is_err() {
            break;
        }
    }
    settle_after_cancels(mock, &conversation.cancels).await;
    if outcome.is_ok() && reopened {
        outcome = after_turns(&mut client, scenario, &session_id, workspace).await;
    }
    let finished = finish(client, ended, &mut conversation.live).await;
    outcome?;
    Ok(finished?)
}

/// How turn `index` begins: in a fresh agent (a reload or a resume), and whether the Session is
/// reopened first (those, and a reload on the same connection). A v1 resume of a Session nothing
/// was said in yet has nothing to carry or replay (v1's resume never replays; only v2's
/// `replayFrom` marks even an empty replay complete), and an agent that stores a Session from
/// its first prompt on knows none yet (codex-acp: "Resource not found"): that first turn is
/// played where the Session was made.
fn opening(scenario: &Scenario, index: usize, turn: &Turn) -> (bool, bool) {
    let empty_v1_resume =
        turn.resume && !turn.reload && index == 0 && scenario.log.is_none() && scenario.config.acp == AcpVersion::V1;
    let fresh_agent = (turn.reload || turn.resume) && !empty_v1_resume;
    (fresh_agent, fresh_agent || (turn.reload_open && !empty_v1_resume))
}

/// What the client does with the Session once its turns are played: `session/list` filtered by
/// the workspace, then `session/close` and one more prompt to the closed Session, each as the
/// scenario asks. Their answers are read from the transcript (ACP-LIST-SERVED,
/// ACP-CLOSE-REFUSES-PROMPT); a prompt that is never answered is waited for as long as the
/// client's patience, then judged, not a fault.
async fn after_turns(
    client: &mut Client,
    scenario: &Scenario,
    session_id: &str,
    workspace: &Path,
) -> Result<(), ClientError> {
    if scenario.list_sessions {
        client.request(AGENT_METHOD_NAMES.session_list, json!({"cwd": workspace})).await?;
    }
    if scenario.close {
        client.request(AGENT_METHOD_NAMES.session_close, json!({"sessionId": session_id})).await?;
        let params = json!({"sessionId": session_id, "prompt": [{"type": "text", "text": CLOSED_PROMPT}]});
        let id = client.send_request(AGENT_METHOD_NAMES.session_prompt, params).await?;
        let answers = |message: &Value| is_response(message) && message.get("id") == Some(&id);
        let patience = client.patience;
        answer_within(client, patience, answers, "the answer to session/prompt (to the closed Session)").await?;
    }
    Ok(())
}

/// The text of the prompt a client sends to a Session it closed (`close`).
pub const CLOSED_PROMPT: &str = "(a prompt to the closed session)";

/// Keeps the agent running, while a Provider request is still open, until
/// [`CANCEL_CLOSE_BOUND`] has passed since the last cancel: stopping the agent closes every
/// request it left open, and ACP-CANCEL-CLOSES-REQUEST must see when the agent itself closed
/// it, not when the scenario ended.
async fn settle_after_cancels(mock: &MockProvider, cancels: &[SentCancel]) {
    let Some(last) = cancels.iter().map(|cancel| cancel.sent).max() else { return };
    // A little past the bound, so a request left open ends past it.
    let until = last + CANCEL_CLOSE_BOUND + POLL;
    while tokio::time::Instant::now() < until && mock.idle_for().is_none() {
        tokio::time::sleep(POLL).await;
    }
}

/// A fresh agent that only loads the Session, for the replay transcript.
async fn load_only<L: Error + 'static, S: Error + 'static>(
    session_id: &str,
    workspace: &Path,
    launch: &mut Launch<'_, L, S>,
    settings: &Settings,
    version: AcpVersion,
    transcript: &mut Vec<Value>,
) -> Result<(), ConversationError<L, S>> {
    let (mut client, ended) = connect(launch, settings, (version, ClientConfig::default()), transcript).await?;
    let loaded = load_or_resume(&mut client, session_id, workspace, version, true).await;
    let finished = finish(client, ended, transcript).await;
    loaded?;
    Ok(finished?)
}

/// Reopens the Session as the turn asks, in a fresh agent or (`reload_open`) on the same
/// connection: `session/resume`, or as a load for a reload and for a resume with a replay
/// (v2's `session/resume` with `replayFrom`, and v1's `session/load`, since a v1 resume never
/// replays).
async fn reopen(
    client: &mut Client,
    turn: &Turn,
    session_id: &str,
    workspace: &Path,
    version: AcpVersion,
) -> Result<Option<TornTail>, SessionLoadError> {
    let replay = !turn.resume || turn.replay_from.is_some();
    load_or_resume(client, session_id, workspace, version, replay).await
}

/// `session/new`'s params: v2 reads its own request, which needs only `cwd` (an empty
/// `mcpServers` is left out, as the schema type writes it).
fn new_session_params(client: &Client, workspace: &Path, version: AcpVersion) -> Value {
    match version {
        AcpVersion::V1 => json!({"cwd": workspace, "mcpServers": client.mcp_servers()}),
        AcpVersion::V2 => serde_json::to_value(v2::NewSessionRequest::new(workspace).mcp_servers(v2_servers(client)))
            .unwrap_or(Value::Null),
    }
}

/// The MCP servers the client passes, as v2's type: v1's shape, each tagged `stdio`, which
/// v2 asks and v1 leaves implicit.
fn v2_servers(client: &Client) -> Vec<v2::McpServer> {
    let mut servers = client.mcp_servers();
    for server in servers.as_array_mut().into_iter().flatten() {
        server["type"] = json!("stdio");
    }
    serde_json::from_value(servers).unwrap_or_default()
}

/// Reopens the Session in a fresh agent, with a replay (`session/load`; in v2, which has none,
/// `session/resume` replaying from the start) or without (`session/resume`); returns the torn
/// Log tail the agent reported, if any.
async fn load_or_resume(
    client: &mut Client,
    session_id: &str,
    workspace: &Path,
    version: AcpVersion,
    replay: bool,
) -> Result<Option<TornTail>, SessionLoadError> {
    let (method, params) = reopen_params(client, session_id, workspace, version, replay);
    let answer = client.request(method, params).await?;
    if let Some(error) = answer.get("error") {
        return Err(SessionLoadError::Refused { method, error: error.clone() });
    }
    let torn = answer.pointer("/result/_meta/gauntlet/tornTail");
    Ok(torn.and_then(|torn| {
        Some(TornTail {
            offset: torn.get("offset")?.as_u64()?,
            length: usize::try_from(torn.get("length")?.as_u64()?).ok()?,
        })
    }))
}

/// The method and params that reopen a Session: v1's own, and v2's `session/resume` as its
/// type writes it (an empty `mcpServers` left out).
fn reopen_params(
    client: &Client,
    session_id: &str,
    workspace: &Path,
    version: AcpVersion,
    replay: bool,
) -> (&'static str, Value) {
    match version {
        AcpVersion::V1 => {
            let method = if replay { AGENT_METHOD_NAMES.session_load } else { AGENT_METHOD_NAMES.session_resume };
            (method, json!({"sessionId": session_id, "cwd": workspace, "mcpServers": client.mcp_servers()}))
        }
        AcpVersion::V2 => {
            let mut request =
                v2::ResumeSessionRequest::new(session_id.to_owned(), workspace).mcp_servers(v2_servers(client));
            if replay {
                request = request.replay_from(v2::ReplayFrom::Start(v2::ReplayFromStart::new()));
            }
            (AGENT_METHOD_NAMES.session_resume, serde_json::to_value(request).unwrap_or(Value::Null))
        }
    }
}

/// The turn being played: its Session, the scenario's turn and its index, and the mock that
/// answers it.
#[derive(Clone, Copy)]
struct Played<'a> {
    session_id: &'a str,
    turn: &'a Turn,
    index: usize,
    /// The mock's turn for the busy prompt this turn sends, if it sends one.
    queued: Option<usize>,
    mock: &'a MockProvider,
    /// The protocol version the client speaks: where the turn's end is read.
    version: AcpVersion,
}

/// Plays one turn; notes in `cancels` when it sent `session/cancel` (or `$/cancel_request`)
/// and whether its patience sent it.
///
/// A small state machine: the prompt is sent, then the client waits in one of the [`Waiting`]
/// states until the turn ends, firing the scenario's triggers at the moments the agent's
/// messages (or its Provider's silence) mark; after the end, the `answered` triggers and the
/// busy prompt's own answer.
async fn play_turn(
    client: &mut Client,
    played: Played<'_>,
    cancels: &mut Vec<TurnCancel>,
) -> Result<Reported, ClientError> {
    let id = send_prompt(client, played).await?;
    let mut play = TurnPlay { client, played, id, cancels, fired: Vec::new(), busy: None };
    play.fire(Trigger::Sent).await?;
    let mut waiting =
        if played.turn.cancel == Some(Trigger::RetryWait) { Waiting::ForRetryWait } else { Waiting::ForEnd };
    let reported = loop {
        match play.step(waiting).await? {
            Step::RetryWait => {
                play.fire(Trigger::RetryWait).await?;
                waiting = Waiting::ForEnd;
            }
            Step::OutOfPatience => {
                let cancelled = play.client.cancel(played.session_id).await?;
                play.cancels.push((cancelled, true, false));
                waiting = Waiting::AfterGivingUp;
            }
            Step::Message(message) => {
                if let Some(reported) = turn_end(&message, &play.id, played) {
                    break reported;
                }
                if let Some(moment) = moment_of(&message, played.version) {
                    play.fire(moment).await?;
                }
            }
        }
    };
    play.fire(Trigger::Answered).await?;
    play.await_busy_answer().await?;
    play.retry().await?;
    Ok(reported)
}

/// What the client waits for while its turn runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiting {
    /// The turn's end.
    ForEnd,
    /// A retry's wait to cancel in (`cancel = "retry_wait"`), which shows on the Provider and
    /// in no update, or else the turn's end.
    ForRetryWait,
    /// The turn's end after the client, out of patience, cancelled it: an agent that still
    /// never ends it is hung.
    AfterGivingUp,
}

impl Waiting {
    fn what(self) -> &'static str {
        match self {
            Waiting::ForEnd | Waiting::ForRetryWait => "the answer to session/prompt",
            Waiting::AfterGivingUp => {
                "the answer to session/prompt after the client cancelled it (its patience had run out while the agent worked on the turn)"
            }
        }
    }
}

/// What one wait brought.
enum Step {
    /// A message from the agent.
    Message(Value),
    /// The agent's Provider is in a retry's wait.
    RetryWait,
    /// The agent worked on the turn (it asked its Provider) but stayed silent past the client's
    /// patience: the client stops waiting as a user would, by cancelling the turn once.
    OutOfPatience,
}

/// A turn in play: its prompt's id, the triggers fired so far, and the busy prompt sent.
struct TurnPlay<'c, 'p> {
    client: &'c mut Client,
    played: Played<'p>,
    id: Value,
    cancels: &'c mut Vec<TurnCancel>,
    fired: Vec<Trigger>,
    /// The busy prompt's id, and how many requests the Provider had seen when it was sent.
    busy: Option<(Value, usize)>,
}

impl TurnPlay<'_, '_> {
    /// Fires what the scenario asks at `moment`, once per moment: a cancel, a
    /// `$/cancel_request`, a second prompt while the turn runs (never after its end).
    async fn fire(&mut self, moment: Trigger) -> Result<(), ClientError> {
        if self.fired.contains(&moment) {
            return Ok(());
        }
        self.fired.push(moment);
        let Played { session_id, turn, .. } = self.played;
        if turn.cancel == Some(moment) {
            self.cancels.push((self.client.cancel(session_id).await?, false, false));
        }
        if turn.cancel_request == Some(moment) {
            self.cancels.push((self.client.cancel_request(&self.id).await?, false, true));
        }
        if turn.busy_prompt == Some(moment) && moment != Trigger::Answered {
            let id = self.client.send_request("session/prompt", text_prompt(session_id, BUSY_PROMPT)).await?;
            if let Some(queued) = self.played.queued {
                self.played.mock.queue_turn(queued, BUSY_PROMPT);
            }
            self.busy = Some((id, self.played.mock.request_count()));
        }
        Ok(())
    }

    /// Waits once, as `waiting` says.
    async fn step(&mut self, waiting: Waiting) -> Result<Step, ClientError> {
        let Played { mock, index, .. } = self.played;
        let next = match waiting {
            Waiting::ForRetryWait => match retry_gap(self.client, mock, index, waiting.what()).await {
                Ok(None) => return Ok(Step::RetryWait),
                Ok(Some(message)) => Ok(message),
                Err(error) => Err(error),
            },
            Waiting::ForEnd | Waiting::AfterGivingUp => self.client.next(waiting.what()).await,
        };
        match next {
            Err(ClientError::Timeout { .. }) if waiting != Waiting::AfterGivingUp && mock.asked_in_turn(index) => {
                Ok(between_requests(self.client, mock, waiting.what())
                    .await?
                    .map_or(Step::OutOfPatience, Step::Message))
            }
            other => other.map(Step::Message),
        }
    }

    /// The turn's prompt sent again with its key, as a client retries a submission it is
    /// unsure of (`retry`), and its answer read. An agent that answers it with another message
    /// id inserted it again (ACP-PROMPT-IDEMPOTENT judges that): the client then waits for
    /// that turn's end too, so it is not taken for the next turn's.
    async fn retry(&mut self) -> Result<(), ClientError> {
        let Played { session_id, turn, .. } = self.played;
        if !turn.retry {
            return Ok(());
        }
        let first = self.client.transcript.iter().rev().find_map(|entry| {
            let message = entry.get("message").filter(|message| entry["from"] == "agent" && is_response(message))?;
            (message.get("id") == Some(&self.id)).then(|| message.pointer("/result/messageId").cloned()).flatten()
        });
        let params = prompt_params(session_id, turn, self.client.accepts_images, self.played.version);
        let id = self.client.send_request(AGENT_METHOD_NAMES.session_prompt, params).await?;
        let answer = self.client.answer_to(&id, AGENT_METHOD_NAMES.session_prompt).await?;
        let inserted = answer.pointer("/result/messageId");
        if inserted.is_some() && inserted != first.as_ref() {
            let patience = self.client.patience;
            let ends = |message: &Value| is_idle(message, session_id);
            answer_within(self.client, patience, ends, "the end of the retried prompt's turn").await?;
        }
        Ok(())
    }

    /// The busy prompt's answer, when it has none yet. A refusal is immediate; an agent that
    /// queued the second prompt instead runs it as a turn of its own, so once it has asked its
    /// Provider again since the prompt came, the client waits for that turn as for any other.
    /// One that does neither never answers, which ACP-ONE-TURN judges: the scenario goes on
    /// after a short wait.
    async fn await_busy_answer(&mut self) -> Result<(), ClientError> {
        let Some((busy, asked_before)) = self.busy.take() else { return Ok(()) };
        let client = &mut *self.client;
        if client.transcript.iter().any(|entry| entry.pointer("/message/id") == Some(&busy) && entry["from"] == "agent")
        {
            return Ok(());
        }
        let answers_busy = |message: &Value| is_response(message) && message.get("id") == Some(&busy);
        let quick = client.patience.min(QUICK_ANSWER);
        let waiting_for = "the answer to session/prompt (the second one)";
        if !answer_within(client, quick, answers_busy, waiting_for).await?
            && self.played.mock.request_count() > asked_before
        {
            answer_within(client, client.patience, answers_busy, waiting_for).await?;
        }
        Ok(())
    }
}

/// Sends what comes before a turn's prompt (its raw lines, its model switch), then the prompt
/// itself; returns the prompt's id.
async fn send_prompt(client: &mut Client, played: Played<'_>) -> Result<Value, ClientError> {
    let Played { session_id, turn, .. } = played;
    for line in &turn.raw {
        client.send_raw(line).await?;
        // An answer to a raw line comes at once or never: after a short wait the turn goes on,
        // and ACP-JSONRPC-ERRORS judges the silence from the transcript.
        let wait = client.patience.min(QUICK_ANSWER);
        answer_within(client, wait, is_response, "the answer to a raw line").await?;
    }
    if let Some(model) = &turn.model {
        let params = json!({"sessionId": session_id, "configId": "model", "value": model});
        client.request("session/set_config_option", params).await?;
    }
    let prompt = prompt_params(session_id, turn, client.accepts_images, played.version);
    client.send_request("session/prompt", prompt).await
}

/// A turn's `session/prompt` params: its text, then its links as `resource_link` blocks, which
/// every agent takes, then its images, to an agent that declared it takes them (another gets
/// none, and the play is `skipped`: `Capture::images_withheld`); and in v2 its
/// `idempotencyKey` (a v1 prompt has none).
fn prompt_params(session_id: &str, turn: &Turn, accepts_images: bool, version: AcpVersion) -> Value {
    let mut prompt = text_prompt(session_id, &turn.prompt);
    if let Some(blocks) = prompt.get_mut("prompt").and_then(Value::as_array_mut) {
        blocks
            .extend(turn.links.iter().map(|link| json!({"type": "resource_link", "uri": link.uri, "name": link.name})));
        let images = turn.images.iter().filter(|_| accepts_images);
        blocks.extend(images.map(|image| json!({"type": "image", "mimeType": image.mime_type, "data": image.data})));
    }
    if let Some(key) = turn.idempotency_key.as_ref().filter(|_| version == AcpVersion::V2) {
        prompt["idempotencyKey"] = json!(key);
    }
    prompt
}

/// A `session/prompt`'s params for a text prompt.
fn text_prompt(session_id: &str, text: &str) -> Value {
    json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
}

/// The moment an agent's message marks for the scenario's triggers: its first text, or a tool
/// call.
fn moment_of(message: &Value, version: AcpVersion) -> Option<Trigger> {
    match session_update(message)?.get("sessionUpdate")?.as_str()? {
        "agent_message_chunk" => Some(Trigger::FirstDelta),
        TOOL_CALL_UPDATE => Some(Trigger::ToolCall),
        V2_TOOL_CALL_UPDATE if version == AcpVersion::V2 => Some(Trigger::ToolCall),
        _ => None,
    }
}

/// The text of the second prompt a client sends while a turn runs (`busy_prompt`).
const BUSY_PROMPT: &str = "(a second prompt while the first runs)";

/// v2's one update kind for a tool call, its first one creating it.
const V2_TOOL_CALL_UPDATE: &str = "tool_call_update";

/// How the turn whose prompt is `id` ended, if `message` says: in v1 the prompt's answer; in
/// v2 an error answer (a prompt refused before it was inserted) or the `idle` state update of
/// the Session after the prompt's acknowledgement (ACP v2 "Session States").
fn turn_end(message: &Value, id: &Value, played: Played<'_>) -> Option<Reported> {
    let answers = is_response(message) && message.get("id") == Some(id);
    match played.version {
        AcpVersion::V1 => answers.then(|| Reported::from_answer(message)),
        AcpVersion::V2 if answers => message.get("error").map(|_| Reported::from_answer(message)),
        AcpVersion::V2 => {
            let update = session_update(message)?;
            is_idle(message, played.session_id)
                .then(|| Reported::from_answer(&v1_reading::idle_answer(update, id.clone())))
        }
    }
}

/// Whether `message` says Session `session_id` is idle: a v2 `state_update`.
fn is_idle(message: &Value, session_id: &str) -> bool {
    session_update(message).is_some_and(|update| {
        update.get("sessionUpdate").and_then(Value::as_str) == Some("state_update")
            && update.get("state").and_then(Value::as_str) == Some("idle")
            && message.pointer("/params/sessionId").and_then(Value::as_str) == Some(session_id)
    })
}

/// How long after the end of one of the agent's requests an impatient client cancels, when no
/// other request started meanwhile: the cancel then falls between the agent's requests (in a
/// retry's wait, say), never in a race with the start or the end of one, so the verdict on what
/// the agent did with the cancel does not depend on the machine's speed.
const IDLE_BEFORE_CANCEL: Duration = Duration::from_millis(500);

/// How late past [`IDLE_BEFORE_CANCEL`] a gap is still fresh. A gap older than that may be about
/// to end (a retry's wait running out), so the client waits for the next request to end instead.
const FRESH_GAP: Duration = Duration::from_millis(300);

/// How long an impatient client waits for a fresh gap before it cancels anyway (a stream that
/// stalls stays open; an agent that stopped asking never opens another gap).
const GAP_WAIT: Duration = Duration::from_secs(5);

/// Waits, once the client's patience ran out, for a fresh gap between the agent's requests
/// ([`IDLE_BEFORE_CANCEL`] after one ended, [`FRESH_GAP`] at most later), at most [`GAP_WAIT`]:
/// `None` when the client should cancel now, or the message the agent sent meanwhile (its
/// patience starts again).
async fn between_requests(
    client: &mut Client,
    mock: &MockProvider,
    waiting_for: &str,
) -> Result<Option<Value>, ClientError> {
    let deadline = tokio::time::Instant::now() + GAP_WAIT;
    while tokio::time::Instant::now() < deadline && !in_fresh_gap(mock) {
        match client.next_within(POLL, waiting_for).await {
            Ok(message) => return Ok(Some(message)),
            Err(ClientError::Timeout { .. }) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(None)
}

/// How often a client that watches the Provider looks at it.
const POLL: Duration = Duration::from_millis(50);

/// Whether the agent's Provider is in a fresh gap between requests: [`IDLE_BEFORE_CANCEL`] after
/// one ended, at most [`FRESH_GAP`] later.
fn in_fresh_gap(mock: &MockProvider) -> bool {
    mock.idle_for().is_some_and(|idle| idle >= IDLE_BEFORE_CANCEL && idle < IDLE_BEFORE_CANCEL + FRESH_GAP)
}

/// Waits, within the client's patience, for turn `turn`'s agent to wait for a retry: a request
/// of the turn answered with an HTTP error, then a fresh gap (`cancel = "retry_wait"`). `None`
/// when the client should cancel now, or the message the agent sent meanwhile.
async fn retry_gap(
    client: &mut Client,
    mock: &MockProvider,
    turn: usize,
    waiting_for: &str,
) -> Result<Option<Value>, ClientError> {
    let deadline = tokio::time::Instant::now() + client.patience;
    loop {
        if mock.http_failed_in_turn(turn) && in_fresh_gap(mock) {
            return Ok(None);
        }
        match client.next_within(POLL, waiting_for).await {
            Ok(message) => return Ok(Some(message)),
            Err(ClientError::Timeout { .. }) if tokio::time::Instant::now() < deadline => {}
            Err(ClientError::Timeout { waiting_for, .. }) => {
                let timeout_ms = u64::try_from(client.patience.as_millis()).unwrap_or(u64::MAX);
                return Err(ClientError::Timeout { waiting_for, timeout_ms });
            }
            Err(error) => return Err(error),
        }
    }
}

/// Reads messages until one satisfies `wanted`, for at most `wait` in all; `Ok(false)` when the
/// wait ended first. Only a broken conversation (closed, garbage, flooding) is an `Err`.
async fn answer_within(
    client: &mut Client,
    wait: Duration,
    wanted: impl Fn(&Value) -> bool,
    waiting_for: &str,
) -> Result<bool, ClientError> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match client.next_within(left, waiting_for).await {
            Ok(message) if wanted(&message) => return Ok(true),
            Ok(_) => {}
            Err(ClientError::Timeout { .. }) => return Ok(false),
            Err(error) => return Err(error),
        }
    }
}

/// Replaces the workspace path, which differs run to run, with `$WORKSPACE`.
fn mask(value: &mut Value, workspace: &str) {
    match value {
        Value::String(text) if text.contains(workspace) => *text = text.replace(workspace, "$WORKSPACE"),
        Value::Array(items) => items.iter_mut().for_each(|item| mask(item, workspace)),
        Value::Object(map) => map.values_mut().for_each(|item| mask(item, workspace)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use super::*;

    /// A driver's account of a bad stop, for the test.
    #[derive(Debug, thiserror::Error)]
    #[error("the agent exited with exit status: 1")]
    struct Exited;

    #[test]
    fn a_failed_initialize_and_a_bad_stop_after_it_read_as_one_fault() {
        let refused = || InitializeError::Refused { error: json!({"code": -32603, "message": "no"}) };
        let alone = ConversationError::<Infallible, Exited>::Initialize { problem: refused(), stopped: None };
        assert_eq!(alone.to_string(), r#"initialize failed: {"code":-32603,"message":"no"}"#);
        let stopped = Some(FinishError::Ended(Exited));
        let then = ConversationError::<Infallible, Exited>::Initialize { problem: refused(), stopped };
        assert_eq!(
            then.to_string(),
            r#"initialize failed: {"code":-32603,"message":"no"}; then the agent exited with exit status: 1"#
        );
    }
}
