//! Implementation profiles: how to start another ACP agent against the mock Provider, what it
//! can do, and which output fields legitimately differ (docs/implementations.md).
//!
//! A profile is strict TOML like a scenario: an unknown key, or a `{placeholder}` gauntlet does
//! not fill, is an error naming the file, line, column and key, before anything is started.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use gauntlet_mock_provider::tool_names::{McpCalls, TOOLS};
use gauntlet_mock_provider::{Dialect, SideRequest};
use serde::Deserialize;

use crate::driver::acp_client::Permission;
use crate::driver::containment::Containment;
use crate::driver::external::{External, Tail, gauntlet_program};
use crate::driver::shipped;
use gauntlet_judge::capture;
use gauntlet_judge::locate::{self, LoadError, Step};
use gauntlet_judge::scenario::{AcpVersion, Capability, FaultKind, Knobs, RetryBudget, Scenario};
use gauntlet_judge::tool_map::{self, AbstractTool, ToolMap};

/// How long a profile's `version` command may take.
const VERSION_DEADLINE: Duration = Duration::from_secs(30);

/// What a profile's `version` command said, and what it left running.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionProbe {
    /// Its first line of output, trimmed; `None` without one (no command, no output, a hang).
    pub version: Option<String>,
    /// The command lines of the processes it left running, which gauntlet killed.
    pub leftovers: Vec<String>,
}

/// The placeholders gauntlet fills in a profile's command, arguments, environment and files.
pub const PLACEHOLDERS: &[&str] = &[
    "provider_url",
    "home",
    "workspace",
    "tmp",
    "model",
    "max_retries",
    "stream_idle_timeout_ms",
    "turn_timeout_ms",
    "compact_at_tokens",
    "profile_dir",
    "dialect",
    "now",
    "now_ms",
];

/// A profile's `command` for the reference agent that ships with gauntlet: `gauntlet-agent`
/// beside the running `gauntlet`, where cargo built or installed both, so the profile names
/// no target folder.
pub const GAUNTLET_AGENT: &str = "{gauntlet_agent}";

/// One implementation under test, as its profile file describes it.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// A short name for reports, e.g. `codex-acp`.
    pub name: String,
    /// A command (program, then arguments; `{command}` and `{profile_dir}` are filled) whose
    /// first line of output names the version, for reports.
    #[serde(default)]
    pub version: Vec<String>,
    /// The program; a relative path is taken from the profile's folder, a bare name from `PATH`,
    /// and `{gauntlet_agent}` is the reference agent beside the running `gauntlet`.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables set for the agent (on top of the scratch `HOME`, `TMPDIR`, XDG).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Files written before the agent starts (config files in the scratch home).
    #[serde(default)]
    pub files: Vec<ProfileFile>,
    /// The Provider wire format the agent speaks: the mock speaks it, and a request to another
    /// dialect's endpoint ends the scenario as `error` naming both.
    #[serde(default)]
    pub dialect: Dialect,
    /// The ACP protocol version the client asks the agent for in `initialize`: 1 (the
    /// default) or 2 (Preview). An agent that speaks both is checked in each by a profile each,
    /// as one that speaks two wire formats is.
    #[serde(default)]
    pub acp_version: AcpVersionNumber,
    /// What it can do; a scenario needing anything else is `skipped`.
    #[serde(default)]
    pub capabilities: BTreeSet<Capability>,
    /// Scenario timeouts and scripted pauses are multiplied by this (real time is slow).
    #[serde(default = "one")]
    pub time_scale: f64,
    /// Where the agent's gauntlet Log lands, relative to the workspace, with `{session_id}`;
    /// absent for an agent that keeps none (judged on the wire and ACP layers only).
    #[serde(default)]
    pub log: Option<String>,
    /// Which network the agent may reach.
    #[serde(default)]
    pub network: Network,
    /// Milliseconds to wait for any one ACP message.
    #[serde(default = "patience_ms")]
    pub patience_ms: u64,
    /// Milliseconds one whole scenario may take.
    #[serde(default = "deadline_ms")]
    pub deadline_ms: u64,
    /// Milliseconds the agent may take to exit after its input closed, and after SIGTERM.
    #[serde(default = "grace_ms")]
    pub grace_ms: u64,
    /// Provider calls besides the conversation, answered with a canned reply and left out.
    #[serde(default)]
    pub side_requests: Vec<SideRequest>,
    /// Golden file name to JSON pointers whose values legitimately differ (`*` matches any
    /// key or index); they are compared as `"$MASKED"`.
    #[serde(default)]
    pub masks: BTreeMap<String, Vec<String>>,
    /// The agent's own tools for the corpus's abstract ones (`read`, `write`, `list`, `wait`):
    /// a scenario calling only mapped tools runs without the `tools` capability, its calls
    /// rendered as the agent's (docs/implementations.md "Tools").
    #[serde(default)]
    pub tools: ToolMap,
    /// Whether the agent is given gauntlet's MCP server in every `session/new`, `load` and
    /// `resume` (ACP: every agent must run stdio MCP servers): the corpus's tools the
    /// `[tools]` map does not map are called through it (docs/implementations.md "Tools").
    /// On by default; `false` for an agent that cannot run it.
    #[serde(default = "yes")]
    pub mcp: bool,
    /// How the client answers the agent's permission requests: `allow_once` (the default),
    /// `allow_always`, `reject_once` or `reject_always`.
    #[serde(default)]
    pub permission: Permission,
    /// How many times the agent retries a request that met a fault, when the profile does not
    /// pass it the scenario's (`{max_retries}`): a number, or `"unbounded"`. Absent and not
    /// passed, only the mock's cap bounds it (WIRE-RETRY-BOUNDED).
    #[serde(default)]
    pub retries: Option<Retries>,
    /// When the agent compacts its conversation by its own measure, for the profile's model;
    /// an agent told the scenario's budget passes `{compact_at_tokens}` instead.
    #[serde(default)]
    pub compaction: Option<Compaction>,
    /// The kinds of fault (`http`, `stream`) that retry budget governs; absent, every kind.
    /// An agent whose knob governs only HTTP errors, with a fixed budget of its own for broken
    /// streams, says `["http"]`: its retries of broken streams are then held to no budget but
    /// the mock's cap.
    #[serde(default)]
    pub retries_cover: Vec<FaultKind>,
    /// The agent's own sentence documenting the retry budget the profile passes
    /// (`{max_retries}`) or states (`retries`), quoted from its documentation: going past that
    /// budget is then WIRE-RETRY-DOCUMENTED (a SHOULD) for this agent, the sentence quoted.
    #[serde(default)]
    pub retries_documented: Option<String>,
    /// The folder of the profile file (not a key: set when loading).
    #[serde(skip)]
    pub dir: PathBuf,
    /// The profile file's text (not a key: set when loading), which a report fingerprints so
    /// only shards checked with the same profile merge.
    #[serde(skip)]
    pub source: String,
}

fn yes() -> bool {
    true
}

/// The profile's `acp_version`: `1` or `2`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "u8")]
pub struct AcpVersionNumber(#[schemars(with = "u8")] pub AcpVersion);

impl TryFrom<u8> for AcpVersionNumber {
    type Error = String;

    fn try_from(number: u8) -> Result<Self, String> {
        match number {
            1 => Ok(AcpVersionNumber(AcpVersion::V1)),
            2 => Ok(AcpVersionNumber(AcpVersion::V2)),
            other => Err(format!("ACP protocol version {other} is not one gauntlet speaks (1 or 2)")),
        }
    }
}

/// The profile's `[compaction]`: when an agent that fixes its own threshold compacts (issue
/// 42). The corpus's compaction scenarios then cross it instead of their budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Compaction {
    /// The tokens a Provider response reports at or above which the agent compacts (Claude
    /// Code: its 200,000-token window less its reserves).
    pub at_tokens: u64,
    /// When it then asks for its summary.
    #[serde(default)]
    pub when: CompactsWhen,
}

/// When an agent asks for its summary once a response crossed its threshold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompactsWhen {
    /// Before its next request to the model: the next step of the turn's tool loop, or the
    /// next prompt's first request (Claude Code, Codex, the reference).
    #[default]
    NextRequest,
    /// At once, before the turn ends even when the crossing response was its answer
    /// (opencode).
    AtOnce,
}

/// The profile's `retries`: the agent's own fixed number of retries, or none at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Retries {
    /// At most this many retries of one request.
    Fixed(u32),
    /// `"unbounded"`: it retries until the request succeeds.
    Word(Unbounded),
}

/// The word `unbounded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unbounded {
    /// Retries until the request succeeds.
    Unbounded,
}

/// A file written before the agent starts.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileFile {
    /// Its path, usually under `{home}`.
    pub path: String,
    /// Its content.
    pub content: String,
}

/// The network an agent runs in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// A network namespace with nothing but loopback, where the kernel allows one (agents that
    /// phone home cannot).
    #[default]
    Loopback,
    /// The host's network (only for agents known not to phone home).
    Host,
}

fn one() -> f64 {
    1.0
}

fn patience_ms() -> u64 {
    30_000
}

fn deadline_ms() -> u64 {
    300_000
}

fn grace_ms() -> u64 {
    3_000
}

/// Reads and validates a profile file.
pub fn load(path: &Path) -> Result<Profile, LoadError> {
    parse(&locate::read_text(path)?, path)
}

/// Parses and validates profile text; `path` labels errors and its folder is the profile's.
pub fn parse(text: &str, path: &Path) -> Result<Profile, LoadError> {
    let mut profile: Profile = locate::parse_toml(text, path)?;
    if let Some((offset, name)) = unknown_placeholder(text) {
        let (line, column) = locate::position(text, offset);
        let known = PLACEHOLDERS.iter().map(|name| format!("{{{name}}}")).collect::<Vec<_>>().join(", ");
        return Err(LoadError::Invalid {
            path: path.to_owned(),
            line,
            column,
            key: locate::key_at(text, offset),
            message: format!("unknown placeholder `{{{name}}}`; gauntlet fills {known}"),
        });
    }
    if !(profile.time_scale > 0.0 && profile.time_scale <= 1000.0) {
        let message = format!("time_scale must be above 0 (and sane), not {}", profile.time_scale);
        return Err(locate::invalid_at(text, path, &[Step::Key("time_scale")], "time_scale", message));
    }
    check_masks(text, path, &profile.masks)?;
    check_tools(text, path, &profile.tools)?;
    let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // Absolute, because agents start in their scratch workspace.
    profile.dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    profile.source = text.to_owned();
    Ok(profile)
}

/// The first `{name}` in a string value of the profile that is a placeholder gauntlet does not
/// fill: its byte offset in the text and its name. Only string values are searched, so braces
/// in a comment are not placeholders. `{session_id}` (the `log` pattern), `{command}` (in
/// `version`) and `{gauntlet_agent}` (a whole `command`) are allowed too.
///
/// The strings of `[tools]` are argument templates with placeholders of their own, checked by
/// [`check_tools`].
fn unknown_placeholder(text: &str) -> Option<(usize, String)> {
    let templates: Vec<std::ops::Range<usize>> =
        locate::strings_at(text, &[Step::Key("tools")]).into_iter().map(|(span, _)| span).collect();
    for (span, value) in locate::strings(text) {
        if templates.contains(&span) {
            continue;
        }
        let mut rest = 0;
        while let Some(open) = value[rest..].find('{').map(|idx| rest + idx) {
            rest = open + 1;
            let Some(close) = value[open + 1..].find('}').map(|idx| open + 1 + idx) else { break };
            let name = &value[open + 1..close];
            let is_placeholder = !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_');
            if is_placeholder
                && !PLACEHOLDERS.contains(&name)
                && !["session_id", "command", "gauntlet_agent"].contains(&name)
            {
                // Where it is in the raw string (escapes aside), else where the string starts.
                let raw = &text[span.clone()];
                let offset = raw.find(&format!("{{{name}}}")).map_or(span.start, |at| span.start + at);
                return Some((offset, name.to_owned()));
            }
        }
    }
    None
}

/// Masks name golden files gauntlet writes and hold JSON pointers (RFC 6901: empty segments
/// aside, each starts with `/`, `~` only as `~0` or `~1`; `*` matches any key or index). A
/// malformed one would silently mask nothing, so it is an error at its line.
fn check_masks(text: &str, path: &Path, masks: &BTreeMap<String, Vec<String>>) -> Result<(), LoadError> {
    for (file, pointers) in masks {
        if !capture::GOLDEN_FILES.contains(&file.as_str()) {
            let message = format!("masks name golden files ({}), not `{file}`", capture::GOLDEN_FILES.join(", "));
            return Err(locate::invalid_at(text, path, &[Step::Key("masks"), Step::Key(file)], "masks", message));
        }
        for (index, pointer) in pointers.iter().enumerate() {
            let problem = if pointer.is_empty() {
                Some("an empty pointer would mask the whole file".to_owned())
            } else if !pointer.starts_with('/') {
                Some("a JSON pointer starts with `/`".to_owned())
            } else if pointer.split('~').skip(1).any(|after| !after.starts_with(['0', '1'])) {
                Some("`~` in a JSON pointer is only `~0` (for `~`) or `~1` (for `/`)".to_owned())
            } else {
                None
            };
            if let Some(problem) = problem {
                let at = [Step::Key("masks"), Step::Key(file), Step::Index(index)];
                let message = format!("mask `{pointer}` for {file}: {problem}");
                return Err(locate::invalid_at(text, path, &at, "masks", message));
            }
        }
    }
    Ok(())
}

/// Each tool mapping's template uses only placeholders its tool fills, and says how to tell
/// a failed result (an `ok` text, `failed` texts, or both): without either every result would
/// pass for a success, and ACP-TOOL-STATUS would judge nothing.
fn check_tools(text: &str, path: &Path, tools: &ToolMap) -> Result<(), LoadError> {
    for (tool, mapping) in tools {
        let name = tool.as_str();
        if let Err(tool_map::UnknownPlaceholder(unknown)) = mapping.check(*tool) {
            let known: Vec<String> =
                tool.placeholders().iter().chain(tool_map::LOCATIONS).map(|name| format!("{{{name}}}")).collect();
            let message =
                format!("unknown placeholder `{{{unknown}}}` for the `{name}` tool; it fills {}", known.join(", "));
            // At the string that holds it.
            let offset = locate::strings_at(text, &[Step::Key("tools"), Step::Key(name)])
                .into_iter()
                .find(|(_, value)| tool_map::placeholders(value).contains(&unknown.as_str()))
                .map(|(span, _)| span.start);
            let (line, column) = locate::position(text, offset.unwrap_or(0));
            let key = offset.and_then(|offset| locate::key_at(text, offset)).unwrap_or_else(|| "args".to_owned());
            return Err(LoadError::Invalid { path: path.to_owned(), line, column, key: Some(key), message });
        }
        if mapping.ok.is_none() && mapping.failed.is_empty() {
            let message = format!(
                "the `{name}` tool needs `ok` (a text every successful result holds) or `failed` (texts a failed one holds)"
            );
            return Err(locate::invalid_at(text, path, &[Step::Key("tools"), Step::Key(name)], "tools", message));
        }
    }
    Ok(())
}

/// `gauntlet-agent` beside the running executable; the bare name, for `PATH`, where there is none.
fn shipped_agent() -> PathBuf {
    let name = format!("gauntlet-agent{}", std::env::consts::EXE_SUFFIX);
    shipped(&name).unwrap_or_else(|| PathBuf::from(name))
}

/// Why a profile's agent command cannot be started ([`Profile::startable`]).
#[derive(Debug, thiserror::Error)]
pub enum NotStartable {
    /// A command with a path that is not an executable file.
    #[error("the agent command {} of profile `{profile}` is not an executable file", program.display())]
    NotExecutable {
        /// The program, resolved from the profile's folder.
        program: PathBuf,
        /// The profile's name.
        profile: String,
    },
    /// A bare command found in no folder of `PATH`.
    #[error("the agent command `{command}` of profile `{profile}` is not on PATH")]
    NotOnPath {
        /// The command.
        command: String,
        /// The profile's name.
        profile: String,
    },
}

impl Profile {
    /// The program to start: a relative command is taken from the profile's folder, a bare
    /// name from `PATH`, [`GAUNTLET_AGENT`] beside the running executable.
    pub fn program(&self) -> PathBuf {
        if self.command == GAUNTLET_AGENT {
            return shipped_agent();
        }
        let command = Path::new(&self.command);
        if command.is_absolute() || !self.command.contains('/') { command.to_owned() } else { self.dir.join(command) }
    }

    /// Whether the agent's program can be started at all: an executable file at its path, or a
    /// bare name found on `PATH`. `Err` says what is missing, once, before any scenario runs.
    pub fn startable(&self) -> Result<(), NotStartable> {
        use std::os::unix::fs::PermissionsExt;
        let executable = |path: &Path| {
            std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        };
        let program = self.program();
        if self.command.contains('/') || program.is_absolute() {
            return if executable(&program) {
                Ok(())
            } else {
                Err(NotStartable::NotExecutable { program, profile: self.name.clone() })
            };
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        if std::env::split_paths(&path).any(|dir| executable(&dir.join(&program))) {
            Ok(())
        } else {
            Err(NotStartable::NotOnPath { command: self.command.clone(), profile: self.name.clone() })
        }
    }

    /// What `scenario` needs that this implementation lacks, for a `skipped` verdict: each
    /// missing capability by name. A scenario whose tool calls the profile's `[tools]` maps
    /// all needs no `tools` capability; one calling a tool it does not map names the tool.
    pub fn missing(&self, scenario: &Scenario) -> Vec<String> {
        let needs = scenario.needs();
        // A to-do tool is the `plans` capability, not `tools`.
        let mut unmapped = scenario.unmapped_tools(&self.tools);
        unmapped.retain(|name| name != AbstractTool::Plan.as_str());
        // What the map leaves, gauntlet's MCP server serves.
        if self.mcp {
            unmapped.retain(|name| !TOOLS.contains(&name.as_str()));
        }
        let mut missing: Vec<String> = needs
            .difference(&self.capabilities)
            .filter_map(|capability| match capability {
                Capability::Tools if unmapped.is_empty() => None,
                Capability::Plans if self.tools.contains_key(&AbstractTool::Plan) => None,
                // The agent's own synchronous delegation tool plays a scenario that only delegates.
                Capability::Subagents
                    if self.tools.contains_key(&AbstractTool::Delegate) && scenario.delegates_synchronously_only() =>
                {
                    None
                }
                Capability::Compaction if self.passes("{compact_at_tokens}") || self.compaction.is_some() => None,
                Capability::Compaction => Some(
                    "compaction (its profile neither passes `{compact_at_tokens}` nor has a `[compaction]`, so when the agent compacts is not known and the script's summary call has no place)"
                        .to_owned(),
                ),
                Capability::Plans if !self.tools.is_empty() => {
                    Some("plans (a to-do tool shown as ACP `plan` updates: its `[tools]` maps no `plan`)".to_owned())
                }
                Capability::Tools if !self.tools.is_empty() || self.mcp => {
                    let names: Vec<String> = unmapped.iter().map(|name| format!("`{name}`")).collect();
                    Some(format!("tools (its `[tools]` maps no {})", names.join(", ")))
                }
                other => Some(other.as_str().to_owned()),
            })
            .collect();
        if let Err(why) = self.compacting(scenario) {
            missing.push(why);
        }
        if scenario.serves_mcp() && !self.mcp {
            missing.push(
                "mcp (the scenario scripts what a tool answers, which only gauntlet's MCP server plays, and the profile says `mcp = false`)".to_owned(),
            );
        }
        missing
    }

    /// What `scenario` needs of what an agent declares at `initialize` (`session/load`,
    /// `resume`, `close`, `list`) that this profile does not list: a skip the report then says
    /// is the agent's limit or the profile's omission.
    pub fn undeclared(&self, scenario: &Scenario) -> Vec<Capability> {
        let declarable = [Capability::Load, Capability::Resume, Capability::Close, Capability::List];
        scenario
            .needs()
            .into_iter()
            .filter(|capability| declarable.contains(capability) && !self.capabilities.contains(capability))
            .collect()
    }

    /// Whether the profile hands `text` (a `{placeholder}`) to the agent: in its command, its
    /// arguments, its environment or a file it writes.
    /// Whether the agent is told which model to call (`{model}`): then a request naming another
    /// is the agent's own choice, worth a warning.
    pub fn passes_model(&self) -> bool {
        self.passes("{model}")
    }

    fn passes(&self, text: &str) -> bool {
        self.command.contains(text)
            || self.args.iter().any(|arg| arg.contains(text))
            || self.env.values().any(|value| value.contains(text))
            || self.files.iter().any(|file| file.content.contains(text) || file.path.contains(text))
    }

    /// `scenario` crossing the agent's own compaction threshold instead of its budget, where
    /// the profile gives one (`[compaction]`).
    fn compacting(&self, scenario: &Scenario) -> Result<Scenario, String> {
        match self.compaction {
            Some(Compaction { at_tokens, when }) => scenario.compacting_at(at_tokens, when == CompactsWhen::AtOnce),
            None => Ok(scenario.clone()),
        }
    }

    /// `scenario` as this implementation plays it: on its clock, with its tools, crossing its
    /// own compaction threshold. A scenario [`Profile::missing`] finds nothing missing in.
    pub fn adapt(&self, scenario: &Scenario) -> Scenario {
        let compacting = self.compacting(scenario).unwrap_or_else(|_| scenario.clone());
        let mut scenario = compacting.scaled(self.time_scale);
        scenario.tools = self.tools.clone();
        scenario.knobs = Some(self.knobs());
        scenario
    }

    /// What the agent is told of a scenario's knobs: what its profile passes it, and its own
    /// retry budget.
    pub fn knobs(&self) -> Knobs {
        Knobs {
            retries: self.retry_budget(),
            retries_documented: self.retries_documented.clone(),
            retries_only: match self.retries_cover.as_slice() {
                [only] => Some(*only),
                _ => None,
            },
            idle_timeout: self.passes("{stream_idle_timeout_ms}"),
            turn_budget: self.passes("{turn_timeout_ms}"),
        }
    }

    /// What the agent's retries are held to: its declared `retries`, else the scenario's
    /// `max_retries` when the profile passes it (`{max_retries}` anywhere it is filled), else
    /// nothing gauntlet knows.
    pub fn retry_budget(&self) -> RetryBudget {
        let passed = self.passes("{max_retries}");
        match self.retries {
            Some(Retries::Fixed(n)) => RetryBudget::Fixed(n),
            Some(Retries::Word(Unbounded::Unbounded)) => RetryBudget::Unbounded,
            None if passed => RetryBudget::Scenario,
            None => RetryBudget::Unknown,
        }
    }

    /// The driver for this implementation.
    pub fn external(&self) -> External {
        External {
            name: self.name.clone(),
            program: self.program(),
            args: self.args.clone(),
            env: self.env.clone(),
            files: self.files.iter().map(|file| (file.path.clone(), file.content.clone())).collect(),
            log: self.log.clone(),
            load: self.capabilities.contains(&Capability::Load),
            side_requests: self.side_requests.clone(),
            profile_dir: self.dir.clone(),
            patience: Duration::from_millis(self.patience_ms),
            deadline: Duration::from_millis(self.deadline_ms),
            grace: Duration::from_millis(self.grace_ms),
            dialect: Some(self.dialect),
            permission: self.permission,
            mcp: if self.mcp { gauntlet_program() } else { None },
            mcp_calls: if self.capabilities.contains(&Capability::Tools) { McpCalls::Scripted } else { McpCalls::All },
        }
    }

    /// The profile's `version` command run, contained like the agent, with a deadline: its
    /// first line of output, and what it left running (killed, and named for the report).
    pub fn probe_version(&self) -> VersionProbe {
        let Some((program, args)) = self.version.split_first() else { return VersionProbe::default() };
        let program = if program == "{command}" { self.program() } else { PathBuf::from(program) };
        let dir = self.dir.display().to_string();
        let containment = Containment::new();
        let mut command = tokio::process::Command::from(containment.command(&program));
        command
            .args(args.iter().map(|arg| arg.replace("{profile_dir}", &dir)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return VersionProbe::default();
        };
        let (text, leftovers) = runtime.block_on(version_output(command, &containment));
        let version = text.lines().find(|line| !line.trim().is_empty()).map(|line| line.trim().to_owned());
        VersionProbe { version, leftovers }
    }
}

/// What a version command printed, and what it left running: its output is read until it
/// exits (a deadline at most), then whatever it left is ended, so a daemon holding its stdout
/// cannot hold the check.
async fn version_output(mut command: tokio::process::Command, containment: &Containment) -> (String, Vec<String>) {
    let Ok(mut child) = command.spawn() else { return (String::new(), containment.end()) };
    let out = Tail::default();
    if let Some(stdout) = child.stdout.take() {
        out.keep(stdout);
    }
    tokio::select! {
        _ = tokio::time::timeout(VERSION_DEADLINE, child.wait()) => {}
        _ = crate::interrupt::stopped() => {}
    }
    drop(child);
    let leftovers = containment.end();
    (out.collect().await, leftovers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_judge::tool_map::AbstractTool;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn a_short_profile_gets_defaults() {
        let (_dir, path) = write("name = \"a\"\ncommand = \"bin/agent\"\nargs = [\"--url={provider_url}\"]\n");
        let profile = load(&path).unwrap();
        assert_eq!(profile.network, Network::Loopback);
        assert_eq!(profile.program(), std::path::absolute(path.parent().unwrap()).unwrap().join("bin/agent"));
        assert!(profile.capabilities.is_empty());
        assert_eq!(profile.permission, Permission::AllowOnce);
        let cancels = fixture_scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"p\"\ncancel = \"sent\"\nrespond = [{ text = [\"x\"] }]\n",
        );
        assert_eq!(profile.missing(&cancels), ["cancel"]);
    }

    fn fixture_scenario(text: &str) -> gauntlet_judge::scenario::Scenario {
        gauntlet_judge::scenario::parse(text, Path::new("fixture.toml")).unwrap()
    }

    const TOOL_SCENARIO: &str = "title = \"t\"\n[[turn]]\nprompt = \"p\"\nrespond = [{ calls = [{ name = \"read\", args = { path = \"a.txt\" } }, { name = \"wait\", args = { ms = 1000 } }] }, { text = [\"x\"] }]\n";

    /// The retry budget an agent is judged by: what it was told, else what its profile says.
    #[test]
    fn the_retry_budget_is_the_passed_max_retries_else_the_declared_retries() {
        let budget = |text: &str| parse(text, Path::new("agent.toml")).unwrap().retry_budget();
        let head = "name = \"a\"\ncommand = \"agent\"\n";
        assert_eq!(budget(head), RetryBudget::Unknown);
        assert_eq!(budget(&format!("{head}args = [\"--retries={{max_retries}}\"]\n")), RetryBudget::Scenario);
        assert_eq!(budget(&format!("{head}[env]\nMAX_RETRIES = \"{{max_retries}}\"\n")), RetryBudget::Scenario);
        assert_eq!(budget(&format!("{head}retries = 3\n")), RetryBudget::Fixed(3));
        assert_eq!(budget(&format!("{head}retries = \"unbounded\"\n")), RetryBudget::Unbounded);
        let error = parse(&format!("{head}retries = \"often\"\n"), Path::new("agent.toml")).unwrap_err().to_string();
        assert!(error.contains("agent.toml:3"), "{error}");
    }

    /// What an agent is told comes from what its profile passes it.
    #[test]
    fn the_knobs_are_what_the_profile_passes() {
        let knobs = |text: &str| parse(text, Path::new("agent.toml")).unwrap().knobs();
        let head = "name = \"a\"\ncommand = \"agent\"\n";
        assert_eq!(knobs(head), Knobs::default());
        let told =
            knobs(&format!("{head}args = [\"--idle={{stream_idle_timeout_ms}}\", \"--budget={{turn_timeout_ms}}\"]\n"));
        assert!(told.idle_timeout && told.turn_budget);
    }

    #[test]
    fn gauntlets_mcp_server_or_a_tool_mapping_stands_in_for_the_tools_capability() {
        let scenario = fixture_scenario(TOOL_SCENARIO);
        // By default the agent is given gauntlet's MCP server, which serves every corpus tool.
        let (_dir, path) = write("name = \"a\"\ncommand = \"agent\"\n");
        assert!(load(&path).unwrap().missing(&scenario).is_empty());
        let head = "name = \"a\"\ncommand = \"agent\"\npermission = \"reject_once\"\nmcp = false\n";
        let (_dir, path) = write(head);
        assert_eq!(load(&path).unwrap().missing(&scenario), ["tools"]);
        let read = "[tools.read]\nname = \"exec_command\"\nargs = { cmd = \"cat {path:sh}\" }\nok = \"exit code 0\"\n";
        let (_dir, path) = write(&format!("{head}{read}"));
        let profile = load(&path).unwrap();
        assert_eq!(profile.permission, Permission::RejectOnce);
        assert_eq!(profile.missing(&scenario), ["tools (its `[tools]` maps no `wait`)"]);
        let wait =
            "[tools.wait]\nname = \"exec_command\"\nargs = { cmd = \"sleep {seconds}\" }\nfailed = [\"aborted\"]\n";
        let (_dir, path) = write(&format!("{head}{read}{wait}"));
        let profile = load(&path).unwrap();
        assert!(profile.missing(&scenario).is_empty());
        let adapted = profile.adapt(&scenario);
        assert_eq!(adapted.tools[&AbstractTool::Wait].name, "exec_command");
    }

    #[test]
    fn tool_mapping_errors_name_file_line_column_and_key() {
        let head = "name = \"a\"\ncommand = \"agent\"\n[tools.read]\nname = \"read\"\n";
        for (rest, expected) in [
            (
                "args = { filePath = \"{workspace}/{content}\" }\nok = \"x\"\n",
                "agent.toml:5:21: key `filePath`: unknown placeholder `{content}` for the `read` tool; it fills {path}, {workspace}, {home}, {tmp}",
            ),
            ("args = { filePath = \"{path}\" }\n", "agent.toml:3:1: key `tools`: the `read` tool needs `ok`"),
            (
                "ok = \"x\"\nfailed = \"y\"\n",
                "agent.toml:6:10: key `failed`: invalid type: string \"y\", expected a sequence",
            ),
            ("ok = \"x\"\n[tools.reed]\nname = \"r\"\n", "agent.toml:6:8: key `reed`: unknown variant `reed`"),
            ("ok = \"x\"\nargz = {}\n", "agent.toml:6:1: key `argz`: unknown field `argz`"),
        ] {
            let (_dir, path) = write(&format!("{head}{rest}"));
            let message = load(&path).unwrap_err().to_string();
            assert!(message.contains(expected), "{message}");
        }
        // Tool placeholders are the tool's own: not allowed elsewhere, not refused in `[tools]`.
        let (_dir, path) = write("name = \"a\"\ncommand = \"agent\"\nargs = [\"{path}\"]\n");
        let message = load(&path).unwrap_err().to_string();
        assert!(message.contains("agent.toml:3:10: key `args`: unknown placeholder `{path}`"), "{message}");
        let (_dir, path) = write(&format!("{head}args = {{ filePath = \"{{workspace}}/{{path}}\" }}\nok = \"x\"\n"));
        assert!(load(&path).is_ok(), "{:?}", load(&path).err());
    }

    #[test]
    fn braces_in_a_comment_are_not_placeholders_in_a_value_they_are() {
        let ok = "# run it as {agent} --url {provider_url}\nname = \"a\" # {neither}\ncommand = \"agent\"\n";
        let (_dir, path) = write(ok);
        assert!(load(&path).is_ok(), "{:?}", load(&path).err());
        let (_dir, path) = write("# {fine}\nname = \"a\"\ncommand = \"agent\"\nargs = [\"--x\", \"--home={hme}\"]\n");
        let message = load(&path).unwrap_err().to_string();
        assert!(message.contains("agent.toml:4:24: key `args`: unknown placeholder `{hme}`"), "{message}");
    }

    #[test]
    fn malformed_masks_are_refused_at_their_line() {
        let head = "name = \"a\"\ncommand = \"agent\"\n[masks]\n";
        for (masks, expected) in [
            (
                "\"log.ndjson\" = [\"/id\", \"ts\"]\n",
                "agent.toml:4:24: key `masks`: mask `ts` for log.ndjson: a JSON pointer starts with `/`",
            ),
            ("\"log.ndjson\" = [\"\"]\n", "agent.toml:4:17: key `masks`: mask `` for log.ndjson: an empty pointer"),
            ("\"log.ndjson\" = [\"/a~2b\"]\n", "agent.toml:4:17: key `masks`: mask `/a~2b` for log.ndjson: `~`"),
            ("\"log.json\" = [\"/id\"]\n", "agent.toml:4:14: key `masks`: masks name golden files (log.ndjson,"),
        ] {
            let (_dir, path) = write(&format!("{head}{masks}"));
            let message = load(&path).unwrap_err().to_string();
            assert!(message.contains(expected), "{message}");
        }
        let (_dir, path) = write(&format!("{head}\"log.ndjson\" = [\"/id\", \"/data/*/a~1b~0\"]\n"));
        assert!(load(&path).is_ok());
    }

    #[test]
    fn a_misspelt_key_names_file_line_and_key() {
        let (_dir, path) = write("name = \"a\"\ncommand = \"agent\"\ncapabilites = [\"load\"]\n");
        let message = load(&path).unwrap_err().to_string();
        assert!(message.contains("agent.toml:3:1: key `capabilites`: unknown field `capabilites`"), "{message}");
    }

    #[test]
    fn an_unknown_capability_names_its_key() {
        let (_dir, path) = write("name = \"a\"\ncommand = \"agent\"\ncapabilities = [\"teleport\"]\n");
        let message = load(&path).unwrap_err().to_string();
        assert!(message.contains("agent.toml:3:17: key `capabilities`: unknown variant `teleport`"), "{message}");
    }

    #[test]
    fn an_unknown_placeholder_names_file_line_and_key() {
        let (_dir, path) = write("name = \"a\"\ncommand = \"agent\"\n[env]\nAPI_URL = \"{provider_ulr}/v1\"\n");
        let message = load(&path).unwrap_err().to_string();
        assert!(message.contains("agent.toml:4:12: key `API_URL`: unknown placeholder `{provider_ulr}`"), "{message}");
    }

    #[test]
    fn a_command_that_cannot_start_is_named_once() {
        let (_dir, path) = write("name = \"a\"\ncommand = \"bin/no-such-agent\"\n");
        let error = load(&path).unwrap().startable().unwrap_err();
        assert!(
            matches!(&error, NotStartable::NotExecutable { program, .. } if program.ends_with("bin/no-such-agent"))
        );
        let message = error.to_string();
        assert!(message.contains("bin/no-such-agent of profile `a` is not an executable file"), "{message}");
        let (_dir, path) = write("name = \"b\"\ncommand = \"no-such-agent-on-path\"\n");
        let message = load(&path).unwrap().startable().unwrap_err().to_string();
        assert_eq!(message, "the agent command `no-such-agent-on-path` of profile `b` is not on PATH");
        let (_dir, path) = write("name = \"c\"\ncommand = \"sh\"\n");
        assert!(load(&path).unwrap().startable().is_ok());
    }

    /// The reference agent's profile names no target folder: `{gauntlet_agent}` is the binary
    /// beside the running executable, whatever `CARGO_TARGET_DIR` says.
    #[test]
    fn the_shipped_agent_is_found_beside_the_running_executable() {
        let (_dir, path) = write("name = \"a\"\ncommand = \"{gauntlet_agent}\"\nversion = [\"{command}\"]\n");
        let profile = load(&path).unwrap();
        // This test runs from `target/<profile>/deps/`; cargo built the agent one folder up.
        let exe = std::env::current_exe().unwrap();
        let program = profile.program();
        assert_eq!(program.file_name().unwrap(), "gauntlet-agent");
        assert!(exe.ancestors().skip(1).take(2).any(|dir| program.parent() == Some(dir)), "{program:?}");
    }

    #[test]
    fn now_placeholders_are_known() {
        let text = "name = \"a\"\ncommand = \"agent\"\n[env]\nSTARTED = \"{now}\"\nSTARTED_MS = \"{now_ms}\"\n";
        let (_dir, path) = write(text);
        assert!(load(&path).is_ok());
    }

    #[test]
    fn toml_inline_tables_in_file_contents_are_not_placeholders() {
        let text =
            "name = \"a\"\ncommand = \"agent\"\n[[files]]\npath = \"{home}/c.toml\"\ncontent = \"p = { a = 1 }\"\n";
        let (_dir, path) = write(text);
        assert!(load(&path).is_ok());
    }
}
