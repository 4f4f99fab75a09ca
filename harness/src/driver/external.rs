//! The external driver: any ACP agent as a subprocess, on real time.
//!
//! Per scenario: a scratch `HOME`, `TMPDIR`, XDG folders and workspace; the mock Provider on
//! 127.0.0.1; the agent in its own process group with its stdin and stdout as the ACP pipes.
//! When the conversation ends: stdin closed, then SIGTERM, then SIGKILL to the whole group
//! (some agents ignore EOF, and npm wrappers do not forward signals), so nothing of the run
//! survives it. The agent's stderr is kept, bounded, as evidence.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gauntlet_mock_provider::provider::MockProvider;
use gauntlet_mock_provider::server;
use gauntlet_mock_provider::{Dialect, Script, SideRequest};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

use crate::driver::acp_client::{Permission, Settings};
use crate::driver::containment::{self, Containment};
use crate::driver::conversation::{self, Connection, Conversation, PRELOADED_SESSION_ID};
use crate::driver::{Driver, assemble, prepare_workspace, shipped};
use crate::interrupt;
use gauntlet_judge::capture::Capture;
use gauntlet_judge::scenario::Scenario;
use gauntlet_judge::tool_map::{self, MappedCall};
use gauntlet_mock_provider::tool_names::{McpCalls, SERVER_NAME};
use gauntlet_mock_provider::tool_server::ToolServer;
use serde_json::{Value, json};

/// How much of an agent's stderr is kept (the end of it).
const STDERR_LIMIT: usize = 64 * 1024;

/// An agent started as a command.
#[derive(Debug, Clone)]
pub struct External {
    /// A short name for reports.
    pub name: String,
    /// The program to run.
    pub program: PathBuf,
    /// Its arguments; placeholders are replaced (see [`External::expand`]).
    pub args: Vec<String>,
    /// Extra environment variables; placeholders are replaced.
    pub env: BTreeMap<String, String>,
    /// Files written before each start, `(path, content)`; placeholders are replaced.
    pub files: Vec<(String, String)>,
    /// Where the agent's gauntlet Log lands, relative to the workspace, with `{session_id}`;
    /// `None` for an agent that keeps no gauntlet Log (judged on the wire and ACP only).
    pub log: Option<String>,
    /// Whether the agent supports `session/load` (the load replay is recorded only then).
    pub load: bool,
    /// Provider calls answered outside the script.
    pub side_requests: Vec<SideRequest>,
    /// The folder of its profile (the `{profile_dir}` placeholder).
    pub profile_dir: PathBuf,
    /// How long to wait for any one ACP message.
    pub patience: Duration,
    /// How long the whole scenario may take.
    pub deadline: Duration,
    /// How long the agent may take to exit after its input closed, and after SIGTERM.
    pub grace: Duration,
    /// The Provider wire format the agent speaks (its profile's); `None` when it follows the
    /// scenario's (the reference agent, told by `--dialect={dialect}`). The mock speaks it.
    pub dialect: Option<Dialect>,
    /// How the client answers the agent's permission requests.
    pub permission: Permission,
    /// gauntlet's own program, which the agent is given as its MCP server (`gauntlet mcp`,
    /// in every `session/new`, `load` and `resume`); `None` when it is given none.
    pub mcp: Option<PathBuf>,
    /// Which scripted tool calls go to that server: all of them, or, for an agent with the
    /// corpus's tools of its own (its profile's `tools` capability), those whose outcome is
    /// scripted.
    pub mcp_calls: McpCalls,
}

impl External {
    /// The reference runtime's own agent binary at `program`, with deterministic ids.
    pub fn reference_agent(program: &Path) -> External {
        let args = [
            "--provider-url={provider_url}",
            "--model={model}",
            "--max-retries={max_retries}",
            "--stream-idle-timeout-ms={stream_idle_timeout_ms}",
            "--turn-timeout-ms={turn_timeout_ms}",
            "--compact-at-tokens={compact_at_tokens}",
            "--dialect={dialect}",
            "--deterministic-ids",
        ];
        External {
            name: "gauntlet-agent".to_owned(),
            program: program.to_owned(),
            args: args.map(str::to_owned).to_vec(),
            env: BTreeMap::new(),
            files: Vec::new(),
            log: Some(".gauntlet/sessions/{session_id}.ndjson".to_owned()),
            load: true,
            side_requests: Vec::new(),
            profile_dir: PathBuf::from("."),
            patience: Duration::from_secs(30),
            deadline: Duration::from_secs(120),
            grace: Duration::from_secs(3),
            dialect: None,
            permission: Permission::default(),
            mcp: None,
            mcp_calls: McpCalls::Scripted,
        }
    }

    /// Replaces `{name}` placeholders with their values.
    pub fn expand(text: &str, values: &BTreeMap<&str, String>) -> String {
        values.iter().fold(text.to_owned(), |text, (name, value)| text.replace(&format!("{{{name}}}"), value))
    }
}

impl Driver for External {
    fn name(&self) -> &str {
        &self.name
    }

    fn drive(&self, scenario: &Scenario) -> Capture {
        match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime.block_on(drive(self, scenario)),
            Err(error) => {
                Capture { faults: vec![format!("cannot start a tokio runtime: {error}")], ..Capture::default() }
            }
        }
    }
}

async fn drive(external: &External, scenario: &Scenario) -> Capture {
    let fault = |message: String| Capture { faults: vec![message], ..Capture::default() };
    let scratch = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => return fault(format!("cannot create a scratch folder: {error}")),
    };
    let (home, workspace) = match scratch_folders(scratch.path()) {
        Ok(folders) => folders,
        Err(message) => return fault(message),
    };
    let log_path = |session_id: &str| {
        external.log.as_ref().map(|pattern| workspace.join(pattern.replace("{session_id}", session_id)))
    };
    if let Err(error) = prepare_workspace(scenario, &workspace, log_path(PRELOADED_SESSION_ID).as_deref()) {
        return fault(error.to_string());
    }
    let dialect = external.dialect.unwrap_or(scenario.config.dialect);
    let (script, mut mapped_calls) = rendered_script(scenario, &home, &workspace);
    // An agent with tools of its own is given the server only where the scenario scripts a
    // tool's answer, as the reference in process is.
    let served = external.mcp.is_some() && (external.mcp_calls == McpCalls::All || scenario.serves_mcp());
    let tools = served.then(|| Arc::new(ToolServer::new(&script, &workspace, scenario.time_scale)));
    let mut mock = MockProvider::new(script).with_dialect(dialect).with_side_requests(external.side_requests.clone());
    if tools.is_some() {
        mock = mock.with_mcp_tool_names(external.mcp_calls);
    }
    let mock = Arc::new(mock);
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let server = match server::serve(mock.clone(), loopback).await {
        Ok(server) => server,
        Err(error) => return fault(format!("cannot start the mock provider: {error}")),
    };
    let tool_server = match &tools {
        Some(tools) => match server::serve(tools.clone(), loopback).await {
            Ok(server) => Some(server),
            Err(error) => return fault(format!("cannot start the tool server: {error}")),
        },
        None => None,
    };
    let mcp_servers = match (&external.mcp, &tool_server) {
        (Some(program), Some(tool_server)) => mcp_servers(program, &tool_server.base_url()),
        _ => json!([]),
    };
    let provider_url = format!("http://{}", server.local_addr());
    let values = placeholder_values(external, scenario, provider_url, &home, &workspace, dialect);
    if let Err(message) = write_profile_files(external, &values) {
        return fault(message);
    }
    let stderr = Tail::default();
    let containment = Containment::new();
    let mut launch = || spawn(external, &values, &home, &workspace, &stderr, &containment);
    let settings = Settings { patience: external.patience, permission: external.permission, mcp_servers };
    let converse = conversation::converse(scenario, &workspace, &mut launch, &settings, external.load, &mock);
    let conversation = within_deadline(external.deadline, converse).await;
    let log_path = conversation.session_id.as_deref().and_then(log_path);
    let mut capture = assemble(conversation, log_path.as_deref(), &mock);
    capture.acp_version = scenario.config.acp;
    if let Some(tools) = &tools {
        mapped_calls.extend(mock.report().renamed.into_iter().filter_map(MappedCall::served));
        capture.tool_calls = tools.journal();
    }
    capture.mapped_calls = mapped_calls;
    // Every agent of the play is stopped: whatever it started and left running goes now.
    capture.leftovers = containment.end();
    capture.stderr_tail = stderr.collect().await;
    if !capture.faults.is_empty() {
        capture.faults.extend(stderr_evidence("agent", &capture.stderr_tail));
    }
    capture
}

/// The scenario's script with its abstract tool calls made calls of the agent's own tools
/// (its profile's `[tools]`), the scratch locations filled in; and the calls so mapped.
fn rendered_script(scenario: &Scenario, home: &Path, workspace: &Path) -> (Script, Vec<MappedCall>) {
    let mut script = scenario.script();
    let locations = BTreeMap::from([
        ("workspace", workspace.display().to_string()),
        ("home", home.display().to_string()),
        ("tmp", home.join("tmp").display().to_string()),
    ]);
    let mapped_calls = tool_map::render_script(&scenario.tools, &mut script, &locations, scenario.time_scale);
    (script, mapped_calls)
}

/// Plays `converse` until the scenario's deadline or until gauntlet is stopped, whichever
/// comes first. Dropping the conversation then drops every agent it started, and with it
/// their groups.
async fn within_deadline(deadline: Duration, converse: impl Future<Output = Conversation>) -> Conversation {
    let fault = |fault: String| Conversation { faults: vec![fault], ..Conversation::default() };
    tokio::select! {
        played = tokio::time::timeout(deadline, converse) => played.unwrap_or_else(|_| {
            fault(format!("the scenario did not finish within its deadline of {} ms", deadline.as_millis()))
        }),
        stop = interrupt::stopped() => fault(format!("gauntlet was stopped by {stop} before the scenario finished")),
    }
}

/// The scratch `HOME` (with its `tmp`, `.config` and `.cache`) and workspace under `scratch`.
fn scratch_folders(scratch: &Path) -> Result<(PathBuf, PathBuf), String> {
    let (home, workspace) = (scratch.join("home"), scratch.join("workspace"));
    for folder in [&home, &workspace, &home.join("tmp"), &home.join(".config"), &home.join(".cache")] {
        if let Err(error) = std::fs::create_dir_all(folder) {
            return Err(format!("cannot create {}: {error}", folder.display()));
        }
    }
    Ok((home, workspace))
}

/// The values of the placeholders of the profile's arguments, environment and files.
fn placeholder_values(
    external: &External,
    scenario: &Scenario,
    provider_url: String,
    home: &Path,
    workspace: &Path,
    dialect: Dialect,
) -> BTreeMap<&'static str, String> {
    let config = &scenario.config;
    BTreeMap::from([
        ("provider_url", provider_url),
        ("home", home.display().to_string()),
        ("workspace", workspace.display().to_string()),
        ("model", config.model.clone()),
        ("max_retries", config.max_retries.to_string()),
        ("stream_idle_timeout_ms", config.stream_idle_timeout_ms.to_string()),
        ("turn_timeout_ms", config.turn_timeout_ms.to_string()),
        ("compact_at_tokens", config.compact_at_tokens.to_string()),
        ("tmp", home.join("tmp").display().to_string()),
        ("profile_dir", external.profile_dir.display().to_string()),
        ("dialect", dialect.key().to_owned()),
        // When the scenario starts, on the system clock: for agents that want a fresh timestamp
        // in a config file (RFC 3339, and milliseconds since the Unix epoch).
        ("now", gauntlet_agent::ids::Clock::System.timestamp()),
        ("now_ms", now_ms().to_string()),
    ])
}

/// Writes the profile's files, their paths and contents expanded.
fn write_profile_files(external: &External, values: &BTreeMap<&str, String>) -> Result<(), String> {
    for (path, content) in &external.files {
        let path = PathBuf::from(External::expand(path, values));
        let written = path.parent().map_or(Ok(()), std::fs::create_dir_all);
        if let Err(error) = written.and_then(|()| std::fs::write(&path, External::expand(content, values))) {
            return Err(format!("cannot write the profile's file {}: {error}", path.display()));
        }
    }
    Ok(())
}

/// The `gauntlet` program, which serves `gauntlet mcp`: this process when it is `gauntlet`,
/// else the one cargo built beside it; `None` when there is none.
pub fn gauntlet_program() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let name = format!("gauntlet{}", std::env::consts::EXE_SUFFIX);
    if exe.file_name().is_some_and(|file| file == name.as_str()) {
        return Some(exe);
    }
    shipped(&name)
}

/// ACP's `mcpServers` with gauntlet's MCP server: `program mcp --url URL`, relaying each call
/// to the scenario's tool server at `url`. `args` and `env` are given even when empty (an
/// agent may iterate them unchecked).
fn mcp_servers(program: &Path, url: &str) -> Value {
    json!([{"name": SERVER_NAME, "command": program, "args": ["mcp", "--url", url], "env": []}])
}

/// Milliseconds since the Unix epoch, on the system clock (0 before it).
fn now_ms() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_millis())
}

/// The end of a failed process's stderr as one more fault, when it wrote any; `who` names it
/// (`agent`, `adapter`).
pub(crate) fn stderr_evidence(who: &str, stderr_tail: &str) -> Option<String> {
    let tail = stderr_tail.trim_end();
    (!tail.trim().is_empty()).then(|| format!("the {who}'s stderr (last {} bytes):\n{tail}", tail.len()))
}

/// Why an agent's process could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The program would not run.
    #[error("cannot start {}: {source}", program.display())]
    Start {
        /// The program.
        program: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It ran, but without the pipes the client needs.
    #[error("the agent's pipes were not set up")]
    Pipes,
}

/// Starts the agent in its own process group, with scratch home folders.
fn spawn(
    external: &External,
    values: &BTreeMap<&str, String>,
    home: &Path,
    workspace: &Path,
    stderr: &Tail,
    containment: &Containment,
) -> Result<Connection<StopError>, SpawnError> {
    let mut command = Command::from(containment.command(&external.program));
    command
        .args(external.args.iter().map(|arg| External::expand(arg, values)))
        .env("HOME", home)
        .env("TMPDIR", home.join("tmp"))
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .envs(external.env.iter().map(|(key, value)| (key, External::expand(value, values))))
        .current_dir(workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child =
        command.spawn().map_err(|source| SpawnError::Start { program: external.program.clone(), source })?;
    let group = Group::of(&child);
    let (Some(stdin), Some(stdout), Some(err)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
        return Err(SpawnError::Pipes);
    };
    stderr.keep(err);
    Ok(Connection {
        reader: Box::new(stdout),
        writer: Box::new(stdin),
        ended: Box::pin(stop(child, group, external.grace, "agent")),
    })
}

/// The end of what processes wrote to their pipes (the stderr of every agent a scenario
/// started, a version probe's stdout), read as it comes.
#[derive(Default)]
pub(crate) struct Tail {
    kept: Arc<Mutex<Vec<u8>>>,
    readers: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Tail {
    /// Reads `pipe` to its end in the background, keeping the last [`STDERR_LIMIT`] bytes.
    pub(crate) fn keep(&self, mut pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static) {
        let kept = self.kept.clone();
        let reader = tokio::spawn(async move {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buffer).await {
                if n == 0 {
                    break;
                }
                if let Ok(mut kept) = kept.lock() {
                    kept.extend_from_slice(&buffer[..n]);
                    let excess = kept.len().saturating_sub(STDERR_LIMIT);
                    kept.drain(..excess);
                }
            }
        });
        if let Ok(mut readers) = self.readers.lock() {
            readers.push(reader);
        }
    }

    /// Everything kept, once the agents' pipes closed (they are dead by now; a second at most).
    pub(crate) async fn collect(&self) -> String {
        let readers = self.readers.lock().map(|mut readers| std::mem::take(&mut *readers)).unwrap_or_default();
        for reader in readers {
            let _ = tokio::time::timeout(Duration::from_secs(1), reader).await;
        }
        self.kept.lock().map(|bytes| String::from_utf8_lossy(&bytes).into_owned()).unwrap_or_default()
    }
}

/// The agent's process group. Dropped (a deadline passed, a conversation was abandoned), it
/// kills the whole group, so no process of a run outlives it.
pub(crate) struct Group(Option<Pid>);

impl Group {
    /// The group `child` leads (it was spawned with `process_group(0)`).
    pub(crate) fn of(child: &Child) -> Group {
        Group(child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw))
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(group) = self.0 {
            let _ = killpg(group, Signal::SIGKILL);
        }
    }
}

/// The processes of `group` that are still alive (not zombies), from `/proc`.
pub fn survivors(group: i32) -> Vec<i32> {
    containment::processes()
        .filter(|process| process.group() == Some(group) && process.is_live())
        .map(|process| process.pid)
        .collect()
}

/// Why a process (the agent, an adapter) did not stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum StopError {
    /// It outlasted its input closing and SIGTERM, and was killed.
    #[error("the {who} ignored its input closing and SIGTERM for {} ms each, and was killed", grace.as_millis())]
    Killed {
        /// `agent` or `adapter`.
        who: &'static str,
        /// How long it had after each.
        grace: Duration,
    },
    /// Processes of its group were still alive after SIGKILL.
    #[error("processes {pids:?} of the {who}'s group survived SIGKILL")]
    Survived {
        /// `agent` or `adapter`.
        who: &'static str,
        /// The survivors.
        pids: Vec<i32>,
    },
    /// It exited on its own, unsuccessfully.
    #[error("the {who} exited with {status}")]
    Exited {
        /// `agent` or `adapter`.
        who: &'static str,
        /// How.
        status: ExitStatus,
    },
    /// Its exit could not be waited for.
    #[error("cannot wait for the agent: {source}")]
    Wait {
        /// Why.
        source: std::io::Error,
    },
}

/// Waits for the process (`who`: `agent`, `adapter`) to exit after its input closed; then SIGTERM, then SIGKILL, to the group;
/// then checks that no process of the group survived.
pub(crate) async fn stop(mut child: Child, guard: Group, grace: Duration, who: &'static str) -> Result<(), StopError> {
    let group = guard.0;
    let signal = |signal| {
        if let Some(group) = group {
            let _ = killpg(group, signal);
        }
    };
    // Exiting on EOF or on SIGTERM are both orderly stops (many agents ignore EOF); an agent
    // that also ignores SIGTERM is killed, and that is evidence.
    let mut verdict = Ok(());
    let status = match tokio::time::timeout(grace, child.wait()).await {
        Ok(status) => status.map(|status| (status, false)),
        Err(_) => {
            signal(Signal::SIGTERM);
            match tokio::time::timeout(grace, child.wait()).await {
                Ok(status) => status.map(|status| (status, true)),
                Err(_) => {
                    verdict = Err(StopError::Killed { who, grace });
                    signal(Signal::SIGKILL);
                    child.wait().await.map(|status| (status, true))
                }
            }
        }
    };
    // Whatever the agent left in its group (a wrapper's child) goes too.
    drop(guard);
    if let Some(group) = group {
        let mut left = survivors(group.as_raw());
        for _ in 0..50 {
            if left.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            left = survivors(group.as_raw());
        }
        if !left.is_empty() {
            verdict = verdict.and(Err(StopError::Survived { who, pids: left }));
        }
    }
    match status {
        Ok((status, signalled)) if status.success() || signalled => verdict,
        Ok((status, _)) => verdict.and(Err(StopError::Exited { who, status })),
        Err(source) => Err(StopError::Wait { source }),
    }
}
