//! Scenario files: strict TOML, one file per scenario (docs/scenario-format.md).
//!
//! Unknown keys are errors, and every error names the file, line, column and key, so a typo
//! never silently turns a scenario into a weaker one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use gauntlet_agent::event::SubagentStatus;
use gauntlet_agent::workflows::checkpoint::CheckpointStatus;
use gauntlet_mock_provider::Dialect;
use gauntlet_mock_provider::script::{Exhausted, ROOT, Response, Script, ScriptError};

use crate::audit::WorkflowTerminal;
use crate::locate::{LoadError, Step, invalid_at, parse_toml, read_text};
use crate::tool_map::{AbstractTool, ToolMap};
use gauntlet_agent::{ErrorKind, TerminalStatus};
use serde::Deserialize;

/// One scenario, as written in its file.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A one-line description.
    pub title: String,
    /// Requirement ids from docs/contract.md this scenario exercises.
    #[serde(default)]
    pub covers: Vec<String>,
    /// Runtime settings; every field has a default.
    #[serde(default)]
    pub config: Config,
    /// Files written into the workspace before the first turn: path to content.
    #[serde(default)]
    pub workspace: BTreeMap<String, String>,
    /// A Log left by an earlier run, which the Session resumes.
    #[serde(default)]
    pub log: Option<Preload>,
    /// Expectations on the Session as a whole.
    #[serde(default)]
    pub expect: SessionExpect,
    /// After the last turn, the client asks `session/list` with the workspace as `cwd`
    /// (ACP-LIST-SERVED).
    #[serde(default)]
    pub list_sessions: bool,
    /// What the client declares of itself in `initialize`.
    #[serde(default)]
    pub client: ClientConfig,
    /// After the last turn (and the list), the client closes the Session with `session/close`,
    /// then sends it one more prompt, which must be refused (ACP-CLOSE-REFUSES-PROMPT). That
    /// prompt is no turn: it has no script, and no Log holds it.
    #[serde(default)]
    pub close: bool,
    /// The prompts, in order.
    #[serde(rename = "turn", default)]
    pub turns: Vec<Turn>,
    /// How its clock compares with the one it was written for: 1 as loaded, the factor given
    /// to [`Scenario::scaled`] after; the judge scales its own time bounds by it. Not a key.
    #[serde(skip, default = "unscaled")]
    pub time_scale: f64,
    /// Child Sessions' scripts, by route: the child Session id (`sub_1` for the first
    /// `spawn_agent`, `<workflow id>-<step id>` for a workflow step).
    #[serde(default)]
    pub children: BTreeMap<String, ChildScript>,
    /// The checked agent's own tools for the abstract ones the script calls (its profile's
    /// `[tools]`, set by `gauntlet check`; empty for the reference): the driver renders the
    /// calls with it, the judge reads their results through it. Not a key.
    #[serde(skip)]
    pub tools: ToolMap,
    /// What the checked agent was told of the scenario's knobs (set by `gauntlet check` from
    /// its profile); `None` for the reference, which is told every one. The judge holds an
    /// agent only to what it could know. Not a key.
    #[serde(skip)]
    pub knobs: Option<Knobs>,
}

/// What an agent under check knows of a scenario's knobs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Knobs {
    /// How many times it retries a request that met a fault.
    pub retries: RetryBudget,
    /// The agent's own sentence documenting that budget, as its profile quotes it
    /// (`retries_documented`): exceeding a budget the agent documents is WIRE-RETRY-DOCUMENTED's.
    pub retries_documented: Option<String>,
    /// The one kind of fault that budget governs, when it governs only one (a profile's
    /// `retries_cover`); `None`, every kind. An agent may keep another, fixed budget for a
    /// kind its knob does not govern, which gauntlet then does not know.
    pub retries_only: Option<FaultKind>,
    /// Whether it is told the scenario's `stream_idle_timeout_ms`.
    pub idle_timeout: bool,
    /// Whether it is told the scenario's `turn_timeout_ms`.
    pub turn_budget: bool,
}

impl Knobs {
    /// Whether the retry budget governs faults of `kind`.
    pub fn governs(&self, kind: FaultKind) -> bool {
        self.retries_only.is_none_or(|only| only == kind)
    }

    /// Why the outcome `turn` forces rests on a knob this agent is not told, if it does: a
    /// turn that must time out on the idle timeout or the turn budget it does not have, or
    /// must recover from more faults than its retry budget is known to take. The judge then
    /// reads that turn's outcome from the wire, not from the script.
    pub fn untold(&self, turn: &Turn, max_retries: u32) -> Option<&'static str> {
        match turn.error_kind {
            Some(ErrorKind::StreamIdleTimeout) if !self.idle_timeout => {
                return Some("the wire shows (the agent is not told the scenario's `stream_idle_timeout_ms`)");
            }
            Some(ErrorKind::TurnTimeout) if !self.turn_budget => {
                return Some("the wire shows (the agent is not told the scenario's `turn_timeout_ms`)");
            }
            _ => {}
        }
        let faults = turn.respond.iter().take_while(|response| response.fails()).count();
        let kind = |response: &Response| if response.status.is_some() { FaultKind::Http } else { FaultKind::Stream };
        let governed = turn.respond.iter().take(faults).all(|response| self.governs(kind(response)));
        let recovers = match self.retries {
            _ if faults == 0 || turn.expect != TerminalStatus::Completed => true,
            _ if !governed => false,
            RetryBudget::Scenario => max_retries as usize >= faults,
            RetryBudget::Unbounded => true,
            RetryBudget::Fixed(n) => n as usize >= faults,
            RetryBudget::Unknown => false,
        };
        (!recovers).then_some(
            "the wire shows (the agent's retry budget is not known to reach the faults the script answers first)",
        )
    }
}

/// A kind of fault an agent keeps a retry budget for (a profile's `retries_cover`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// An HTTP error (429, 5xx), or an error answer past the script.
    Http,
    /// A stream that failed, dropped, ended without its terminal event, or that the client
    /// gave up on in a stall.
    Stream,
}

/// How many times an agent retries a request that met a fault, as its profile says
/// (WIRE-RETRY-BOUNDED judges each run of retries against it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RetryBudget {
    /// The scenario's `max_retries`, which the profile passes to the agent (`{max_retries}`).
    Scenario,
    /// The agent's own fixed number (the profile's `retries = N`).
    Fixed(u32),
    /// The agent retries until it succeeds, by design (`retries = "unbounded"`).
    Unbounded,
    /// The profile says nothing: only the mock's cap bounds it.
    #[default]
    Unknown,
}

fn unscaled() -> f64 {
    1.0
}

/// The Provider's answers to one child Session, and how the child must end.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChildScript {
    /// The Subagent status the parent's Log must end with for this child.
    #[serde(default)]
    pub expect: Option<SubagentStatus>,
    /// The `reason` of the child's terminal `subagent_event`, when given.
    #[serde(default)]
    pub reason: Option<String>,
    /// The answers to this child's requests, in order.
    #[serde(default)]
    pub respond: Vec<Response>,
    /// The text the child's first user message holds: the prompt its parent delegated. Given,
    /// the child's requests are known by it, whatever Session they name (an agent's own
    /// delegation tool, `delegate`); without it, by the child's Session id (the route).
    #[serde(default)]
    pub prompt: Option<String>,
}

/// Runtime settings for a scenario.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The model of the first turn.
    pub model: String,
    /// Retries for HTTP 429 / 5xx before any text.
    pub max_retries: u32,
    /// Virtual milliseconds without a chunk before `stream_idle_timeout`.
    pub stream_idle_timeout_ms: u64,
    /// Virtual milliseconds for a whole turn before `turn_timeout`.
    pub turn_timeout_ms: u64,
    /// At most this many Subagents run at once; more wait `queued`.
    pub max_subagents: usize,
    /// Input tokens a Provider call reports at or above which the agent compacts History
    /// before its next call (0: never); the default is 90% of the reference's 400,000-token
    /// context window.
    pub compact_at_tokens: u64,
    /// The Provider wire format of a plain run (`gauntlet run`, `mock-provider serve`); the
    /// corpus also plays the scenario in every other dialect.
    pub dialect: Dialect,
    /// Dialects that cannot express the scenario, each with the reason (a feature the wire
    /// format lacks): the scenario is `skipped` there.
    pub skip_dialects: BTreeMap<Dialect, String>,
    /// What answers a request of a turn whose scripted responses are used up: `retry` (the
    /// default: a retry of a fault meets the same fault, anything else after the turn's answer
    /// an empty clean response and a MOCK-STRICT mismatch), `unscripted` (HTTP 500, a mismatch)
    /// or `repeat_last` (the turn's last response again, so "fail every retry" can be scripted).
    pub exhausted: Exhausted,
    /// The ACP protocol version the client speaks: not a file key; the corpus plays each Turn
    /// scenario in v1 in every dialect and in v2 in the file's dialect ([`Scenario::in_acp`]).
    #[serde(skip)]
    #[schemars(skip)]
    pub acp: AcpVersion,
}

/// The ACP protocol version a client negotiates with the agent (issue 32).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AcpVersion {
    /// Version 1: a prompt's answer says how its turn ended.
    #[default]
    V1,
    /// Version 2 (Preview): a prompt's answer acknowledges it; the `idle` state says how the
    /// turn ended.
    V2,
}

impl AcpVersion {
    /// Its number, as `initialize` carries it.
    pub fn number(self) -> u64 {
        match self {
            AcpVersion::V1 => 1,
            AcpVersion::V2 => 2,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            model: "gpt-5.5".to_owned(),
            max_retries: 2,
            stream_idle_timeout_ms: 180_000,
            turn_timeout_ms: 600_000,
            max_subagents: 6,
            compact_at_tokens: 360_000,
            dialect: Dialect::default(),
            skip_dialects: BTreeMap::new(),
            exhausted: Exhausted::default(),
            acp: AcpVersion::default(),
        }
    }
}

/// What gauntlet's client declares in `initialize`; by default nothing (no file system, no
/// terminal).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientConfig {
    /// Declare `clientCapabilities.plan` (ACP v1): the client takes `plan_update` and
    /// `plan_removed` (v2 declares no such capability).
    #[serde(default)]
    pub plan: bool,
}

/// An existing Log to resume from.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Preload {
    /// Raw NDJSON bytes; the last line may be torn.
    pub ndjson: String,
}

/// Expectations about the Session rather than one turn.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionExpect {
    /// The byte offset of a torn Log tail the runtime must report on resume.
    pub torn_tail_offset: Option<u64>,
    /// Each `run_workflow` call's outcome, in call order.
    #[serde(default, rename = "workflow")]
    pub workflows: Vec<WorkflowExpect>,
    /// The to-do list the client shows at the end: the entries of the last ACP `plan` update,
    /// in order.
    #[serde(default)]
    pub plan: Option<Vec<PlanEntryExpect>>,
}

/// One entry of the to-do list the client must show.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanEntryExpect {
    /// Its text.
    pub content: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
    /// `high`, `medium` or `low`; unchecked when absent (an agent whose to-do tool has no
    /// priority picks its own).
    #[serde(default)]
    pub priority: Option<String>,
}

/// An image of a prompt, inline: small enough for a scenario file (a pixel does).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptImage {
    /// Its MIME type (`image/png`).
    pub mime_type: String,
    /// The image bytes, standard base64.
    pub data: String,
}

/// A `resource_link` block of a prompt: a resource the client points the agent at, by URI.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptLink {
    /// Its URI, with a scheme (`https://example.com/notes.md`, `file:///etc/hosts`).
    pub uri: String,
    /// Its name, as the client shows it (`notes.md`).
    pub name: String,
}

/// Where a `session/resume` replays the conversation from (ACP v2 `replayFrom`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReplayFrom {
    /// From its first message: the whole conversation.
    Start,
}

/// What one `run_workflow` call must come to.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowExpect {
    /// The terminal state derived from the spine: `completed`, `partial`, `failed`,
    /// `timed_out`, `needs_orchestrator`.
    #[serde(default)]
    pub status: Option<WorkflowTerminal>,
    /// Each step's checkpoint status (`checkpoint_ready`, `partial`, `failed`, `held`,
    /// `needs_orchestrator`).
    #[serde(default)]
    pub steps: BTreeMap<String, CheckpointStatus>,
    /// The step ids of each wave.
    #[serde(default)]
    pub waves: Option<Vec<Vec<String>>>,
    /// The call is a tool error of this kind instead (an invalid spec: `invalid_args`).
    #[serde(default)]
    pub error: Option<String>,
}

/// One prompt, the Provider's scripted answers to it, and what must come of it.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// The user's text.
    pub prompt: String,
    /// Images the prompt carries after its text, as ACP `image` content blocks; sent only to
    /// an agent that declares `promptCapabilities.image` (else the play is `skipped`).
    #[serde(default)]
    pub images: Vec<PromptImage>,
    /// Links the prompt carries after its text, as ACP `resource_link` blocks, which every
    /// agent takes (ACP-PROMPT-LINK-CARRIED).
    #[serde(default)]
    pub links: Vec<PromptLink>,
    /// The prompt's `idempotencyKey` (ACP v2; a v1 client has none, so a v1 play of a
    /// scenario that names one is `skipped`).
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// After the turn's end, the client sends its prompt again with the same key, as a client
    /// retries a submission it is unsure of: the agent answers it with the first one's message
    /// id and runs nothing (ACP-PROMPT-IDEMPOTENT). Needs `idempotency_key`.
    #[serde(default)]
    pub retry: bool,
    /// The terminal state the Log must show for this turn.
    #[serde(default = "completed")]
    pub expect: TerminalStatus,
    /// The `turn_failed.error_kind` the Log must show, if any.
    #[serde(default)]
    pub error_kind: Option<ErrorKind>,
    /// The ACP stop reason the prompt must answer with, when the turn is not a failure.
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// Switch to this model before the turn.
    #[serde(default)]
    pub model: Option<String>,
    /// When to send `session/cancel` for this turn.
    #[serde(default)]
    pub cancel: Option<Trigger>,
    /// When to send `$/cancel_request` naming this turn's `session/prompt` (ACP's
    /// protocol-level cancellation), instead of `session/cancel`.
    #[serde(default)]
    pub cancel_request: Option<Trigger>,
    /// When to send a second `session/prompt` to the same Session while this one runs.
    #[serde(default)]
    pub busy_prompt: Option<Trigger>,
    /// What the Provider answers the busy prompt's own turn, for an agent that queues it
    /// instead of refusing it: asked only then, so never unconsumed (ACP-ONE-TURN).
    #[serde(default)]
    pub busy_respond: Vec<Response>,
    /// Raw lines the client sends before the prompt, each answered by the agent (for
    /// malformed JSON-RPC on purpose).
    #[serde(default)]
    pub raw: Vec<String>,
    /// Before this turn, stop the agent and continue in a fresh one through `session/load`.
    #[serde(default)]
    pub reload: bool,
    /// Before this turn, stop the agent and continue in a fresh one through `session/resume`,
    /// which reattaches without replaying the conversation (ACP-RESUME-NO-REPLAY).
    #[serde(default)]
    pub resume: bool,
    /// Before this turn, the client loads the Session again on the same connection, where it
    /// is open and idle (`session/load`; in v2 `session/resume` with `replayFrom`), as the ACP
    /// test kit does: the agent replays it, and the conversation goes on.
    #[serde(default)]
    pub reload_open: bool,
    /// With `resume`: the fresh agent replays the conversation from here before its answer
    /// (ACP v2 `replayFrom`), then marks the replay's end once (ACP-REPLAY-COMPLETE); a v1
    /// client, whose resume never replays, loads the Session with `session/load` instead.
    #[serde(default)]
    pub replay_from: Option<ReplayFrom>,
    /// The Provider's answers to this turn's requests, in order (retries and tool loops included).
    #[serde(default)]
    pub respond: Vec<Response>,
    /// What the Provider answers a continuation of this turn: a request after a fault whose
    /// conversation differs from the faulted request's (a resume from the text delivered, a
    /// "continue"), every time, as a retry meets the fault again. Absent: the rest of the
    /// faulted response's text (what a cut kept back, often nothing) and a clean end.
    #[serde(default)]
    pub continue_respond: Option<Response>,
}

impl Scenario {
    /// The Provider script: every turn's responses, in order, on the root route, and each
    /// child's on its own route.
    pub fn script(&self) -> Script {
        let mut script = Script::root(self.root_responses().cloned().collect());
        // Each turn is answered from its own responses (MOCK-STRICT, per turn), and a queued
        // busy prompt's turn from its own, after every scenario turn's and optional.
        script.turns = self.turns.iter().map(|turn| turn.respond.len()).collect();
        script.optional_from = Some(script.turns.len());
        script
            .turns
            .extend(self.turns.iter().filter(|turn| turn.busy_prompt.is_some()).map(|turn| turn.busy_respond.len()));
        script.exhausted = self.config.exhausted;
        // Each turn's continuation response comes after every turn's and busy prompt's.
        let mut next = script.turns.iter().sum::<usize>();
        if self.turns.iter().any(|turn| turn.continue_respond.is_some()) {
            script.continuations = self
                .turns
                .iter()
                .map(|turn| {
                    turn.continue_respond.as_ref().map(|_| {
                        next += 1;
                        next - 1
                    })
                })
                .collect();
        }
        for (route, child) in &self.children {
            script.routes.insert(route.clone(), child.respond.clone());
            if let Some(prompt) = &child.prompt {
                script.prompted.insert(route.clone(), prompt.clone());
            }
        }
        script
    }

    /// The root's scripted responses in the script's order: every turn's, then each busy
    /// prompt's own, then each turn's continuation response (a response index of a root
    /// request counts in this order).
    pub fn root_responses(&self) -> impl Iterator<Item = &Response> {
        let busy = self.turns.iter().filter(|turn| turn.busy_prompt.is_some()).flat_map(|turn| &turn.busy_respond);
        let continued = self.turns.iter().filter_map(|turn| turn.continue_respond.as_ref());
        self.turns.iter().flat_map(|turn| &turn.respond).chain(busy).chain(continued)
    }

    /// The mock's turn index of the busy prompt sent during scenario turn `turn`, if it sends
    /// one: after every scenario turn, in order.
    pub fn busy_turn(&self, turn: usize) -> Option<usize> {
        self.turns.get(turn)?.busy_prompt?;
        Some(self.turns.len() + self.turns[..turn].iter().filter(|turn| turn.busy_prompt.is_some()).count())
    }

    /// True when the scenario needs the delegation tools (subagents or workflows).
    pub fn delegates(&self) -> bool {
        let needs = self.needs();
        needs.contains(&Capability::Subagents) || needs.contains(&Capability::Workflows)
    }

    /// True when the scenario's model keeps a to-do list (calls the `plan` tool), so the
    /// reference offers it.
    pub fn plans(&self) -> bool {
        self.needs().contains(&Capability::Plans)
    }

    /// True when the scenario scripts what a tool answers (a call's `outcome`), which only
    /// gauntlet's MCP server can play.
    pub fn serves_mcp(&self) -> bool {
        self.scripted_calls().any(|call| call.outcome.is_some())
    }

    /// True when the scenario's model calls `tool`.
    pub fn calls(&self, tool: &str) -> bool {
        self.scripted_calls().any(|call| call.name == tool)
    }

    /// True when the scenario delegates through `delegate` alone (a synchronous delegation,
    /// which an agent's own tool can play), no other delegation tool.
    pub fn delegates_synchronously_only(&self) -> bool {
        self.calls("delegate") && !DELEGATION_TOOLS.iter().any(|tool| *tool != "delegate" && self.calls(tool))
    }

    /// True when a call of `tool` with `args` has its answer scripted (`outcome`).
    pub fn scripts_outcome(&self, tool: &str, args: &serde_json::Value) -> bool {
        self.scripted_calls().any(|call| call.outcome.is_some() && call.name == tool && call.args == *args)
    }

    fn scripted_calls(&self) -> impl Iterator<Item = &gauntlet_mock_provider::Call> {
        self.turns.iter().flat_map(|turn| &turn.respond).flat_map(|response| &response.calls)
    }

    /// What an implementation must be able to do to play this scenario; one lacking any of
    /// these gets `skipped`, not a failure.
    pub fn needs(&self) -> BTreeSet<Capability> {
        let mut needs = BTreeSet::new();
        if self.log.is_some() {
            needs.insert(Capability::GauntletLog);
        }
        if self.list_sessions {
            needs.insert(Capability::List);
        }
        if self.close {
            needs.insert(Capability::Close);
        }
        for turn in &self.turns {
            if turn.cancel.is_some() {
                needs.insert(Capability::Cancel);
            }
            if turn.cancel_request.is_some() {
                needs.insert(Capability::CancelRequest);
            }
            if turn.reload {
                needs.insert(Capability::Load);
            }
            if turn.resume {
                needs.insert(Capability::Resume);
            }
            // A v1 client loads what a v2 client resumes with a replay.
            if turn.replay_from.is_some() || turn.reload_open {
                needs.insert(Capability::Load);
            }
            if turn.model.is_some() {
                needs.insert(Capability::ModelSwitch);
            }
            if turn.respond.iter().any(|response| !response.calls.is_empty()) {
                needs.insert(Capability::Tools);
            }
            for call in turn.respond.iter().flat_map(|response| response.calls.iter()) {
                match call.name.as_str() {
                    "spawn_agent" | "wait_agent" | "close_agent" | "delegate" => {
                        needs.insert(Capability::Subagents);
                    }
                    "run_workflow" => {
                        needs.insert(Capability::Workflows);
                    }
                    "plan" => {
                        needs.insert(Capability::Plans);
                    }
                    _ => {}
                }
            }
        }
        if !self.children.is_empty() && !needs.contains(&Capability::Workflows) {
            needs.insert(Capability::Subagents);
        }
        let budget = self.config.compact_at_tokens;
        if budget > 0 && self.root_responses().any(|response| response.usage.is_some_and(|usage| usage.input >= budget))
        {
            needs.insert(Capability::Compaction);
        }
        needs
    }

    /// The tools the prompted turns' scripts call that `tools` does not map, each once, in
    /// first-call order; the delegation tools are left out (they are the `subagents` and
    /// `workflows` capabilities, not `tools`), and so is a name that is no abstract tool: a
    /// call to a tool no agent offers, on purpose (a model's made-up tool), sent as written.
    pub fn unmapped_tools(&self, tools: &ToolMap) -> Vec<String> {
        let mut unmapped: Vec<String> = Vec::new();
        for call in self.root_responses().flat_map(|response| response.calls.iter()) {
            let delegation = DELEGATION_TOOLS.contains(&call.name.as_str());
            let mapped = delegation || AbstractTool::named(&call.name).is_none_or(|tool| tools.contains_key(&tool));
            if !mapped && !unmapped.contains(&call.name) {
                unmapped.push(call.name.clone());
            }
        }
        unmapped
    }

    /// The same scenario played in `dialect`; `Err` with the reason when the file says the
    /// dialect cannot express it.
    pub fn in_dialect(&self, dialect: Dialect) -> Result<Scenario, Inexpressible> {
        if let Some(reason) = self.config.skip_dialects.get(&dialect) {
            return Err(Inexpressible { dialect, reason: reason.clone() });
        }
        let mut scenario = self.clone();
        scenario.config.dialect = dialect;
        Ok(scenario)
    }

    /// The same scenario played by a client that speaks ACP `version`; `Err` with the reason
    /// when the version cannot express it: v2 answers a prompt as soon as it is inserted, so a
    /// `$/cancel_request` of a running prompt (`cancel_request`) has no request left to cancel.
    pub fn in_acp(&self, version: AcpVersion) -> Result<Scenario, String> {
        if version == AcpVersion::V2 && self.turns.iter().any(|turn| turn.cancel_request.is_some()) {
            return Err(
                "ACP v2 answers a prompt when it is inserted: no request is left for `$/cancel_request` to cancel"
                    .to_owned(),
            );
        }
        if version == AcpVersion::V1 && self.turns.iter().any(|turn| turn.idempotency_key.is_some()) {
            return Err("an ACP v1 prompt has no `idempotencyKey`".to_owned());
        }
        let mut scenario = self.clone();
        scenario.config.acp = version;
        Ok(scenario)
    }

    /// The scenario on a clock `scale` times as fast: timeouts and scripted pauses shrink
    /// together, so an implementation on real time plays a ten-minute stall in a moment. A
    /// duration in milliseconds never shrinks below 1 ms, and the pause a busy prompt comes in
    /// keeps up to [`CLIENT_WINDOW_MS`] of real time (never more than it was, nor more than half
    /// the scaled idle timeout).
    pub fn scaled(&self, scale: f64) -> Scenario {
        let shrink = |ms: u64| {
            // Durations in scenarios are far below 2^52 ms, where f64 stays exact.
            #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let scaled = (ms as f64 * scale).ceil() as u64;
            scaled.max(1)
        };
        let mut scenario = self.clone();
        scenario.time_scale = self.time_scale * scale;
        scenario.config.stream_idle_timeout_ms = shrink(scenario.config.stream_idle_timeout_ms);
        scenario.config.turn_timeout_ms = shrink(scenario.config.turn_timeout_ms);
        // The pause of a turn whose client sends a busy prompt during it is the client's window
        // to act in: a time scale shrinks scripted waits, not how long an agent takes to read a
        // second prompt, so the window keeps up to half a second of real time (under the idle
        // timeout, which a pause must not reach).
        let window = CLIENT_WINDOW_MS.min(scenario.config.stream_idle_timeout_ms / 2);
        for (response, busy) in scenario.responses_mut() {
            for pause in &mut response.pause {
                pause.ms = if busy { shrink(pause.ms).max(pause.ms.min(window)) } else { shrink(pause.ms) };
            }
            // `retry-after` is whole seconds on the wire: it rounds, to 0 on a fast clock.
            if let Some(seconds) = &mut response.retry_after {
                #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let scaled = (*seconds as f64 * scale).round() as u64;
                *seconds = scaled;
            }
        }
        scenario
    }

    /// The same scenario for an agent that compacts at `threshold` tokens by its own measure
    /// (a profile's `[compaction]`): the budget becomes `threshold`, and each usage the script
    /// reports at or above the old budget crosses the new one by as much. An agent that
    /// compacts `at_once` asks for its summary before the crossing turn ends, so a summary
    /// scripted first in the next turn moves to the end of the crossing one. `Err` when the
    /// agent would compact where the script has no summary for it.
    pub fn compacting_at(&self, threshold: u64, at_once: bool) -> Result<Scenario, String> {
        let budget = self.config.compact_at_tokens;
        let mut scenario = self.clone();
        scenario.config.compact_at_tokens = threshold;
        for (response, _) in scenario.responses_mut() {
            let Some(usage) = &mut response.usage else { continue };
            if budget > 0 && usage.input >= budget {
                usage.input = usage.input - budget + threshold;
            } else if usage.input >= threshold {
                return Err(format!(
                    "compaction (a response reports {} input tokens, under the scenario's budget of {budget} but at or above the {threshold} at which the agent compacts)",
                    usage.input
                ));
            }
        }
        if at_once {
            scenario.summaries_at_once()?;
        }
        Ok(scenario)
    }

    /// Moves the summary scripted first in the turn after a turn whose answer crossed the
    /// budget to the end of the crossing turn, where an agent that compacts at once asks for
    /// it; `Err` when that next turn is the summary alone or is to end otherwise than
    /// `completed` (a failed summary call, a turn of its own).
    fn summaries_at_once(&mut self) -> Result<(), String> {
        let budget = self.config.compact_at_tokens;
        for at in 0..self.turns.len().saturating_sub(1) {
            let crosses =
                self.turns[at].respond.last().and_then(|last| last.usage).is_some_and(|usage| usage.input >= budget);
            if !crosses {
                continue;
            }
            let next = &mut self.turns[at + 1];
            if next.respond.len() < 2 || next.expect != TerminalStatus::Completed {
                return Err(format!(
                    "compaction (the agent compacts at once, at the end of turn {}, while the script asks for its summary in turn {}, a turn of its own)",
                    at + 1,
                    at + 2
                ));
            }
            let summary = next.respond.remove(0);
            self.turns[at].respond.push(summary);
        }
        Ok(())
    }

    /// Every scripted response, the root's and the children's, each with whether its turn
    /// sends a busy prompt during it.
    fn responses_mut(&mut self) -> impl Iterator<Item = (&mut Response, bool)> {
        let children = self.children.values_mut().flat_map(|child| child.respond.iter_mut().map(|r| (r, false)));
        let root = self.turns.iter_mut().flat_map(|turn| {
            let busy = turn.busy_prompt.is_some();
            let own = turn.busy_respond.iter_mut().chain(turn.continue_respond.as_mut());
            turn.respond.iter_mut().map(move |r| (r, busy)).chain(own.map(|r| (r, false)))
        });
        root.chain(children)
    }
}

/// How much real time a scaled scenario leaves a client to act in a pause (a busy prompt at
/// the first delta): enough for an agent to read the second prompt while the first turn's
/// stream still waits, whatever the machine's speed.
pub const CLIENT_WINDOW_MS: u64 = 500;

/// A scenario its file says a dialect cannot express (`skip_dialects`): the reason of a
/// `skipped` verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} cannot express this scenario: {reason}", dialect.human())]
pub struct Inexpressible {
    /// The dialect.
    pub dialect: Dialect,
    /// The file's reason.
    pub reason: String,
}

/// The delegation tools of the reference (docs/scenario-format.md "Child Sessions").
pub const DELEGATION_TOOLS: &[&str] = &["spawn_agent", "wait_agent", "close_agent", "delegate", "run_workflow"];

/// Something a scenario needs of an implementation (declared in its profile).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// Reads and writes the gauntlet NDJSON Log (a scenario that preloads a Log needs it).
    GauntletLog,
    /// `session/cancel`.
    Cancel,
    /// `session/load` in a fresh process.
    Load,
    /// `session/resume` in a fresh process (ACP `sessionCapabilities.resume`).
    Resume,
    /// `session/close` (ACP `sessionCapabilities.close`).
    Close,
    /// `session/list` (ACP `sessionCapabilities.list`).
    List,
    /// `$/cancel_request` of a running `session/prompt` (ACP "Cancellation": optional, and
    /// declared nowhere in `initialize`).
    CancelRequest,
    /// Tools the scripted model can call (`read`, `write`, `list`, `wait`).
    Tools,
    /// Switching the model between turns (`session/set_config_option`).
    ModelSwitch,
    /// Permission requests to the client.
    Permissions,
    /// Subagents.
    Subagents,
    /// Workflows.
    Workflows,
    /// A to-do tool the scripted model calls as `plan`, its list shown as ACP `plan` updates;
    /// a profile has it when its `[tools]` maps `plan`.
    Plans,
    /// Compacting the conversation when a Provider call reports input tokens at or over the
    /// scenario's `compact_at_tokens`; a profile has it when it passes `{compact_at_tokens}` to
    /// the agent. A scenario that reports such usage scripts the summary call the compaction
    /// makes, which an agent compacting at another point would take for an answer.
    Compaction,
}

impl Capability {
    /// The name used in profiles and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::GauntletLog => "gauntlet_log",
            Capability::Cancel => "cancel",
            Capability::Load => "load",
            Capability::Resume => "resume",
            Capability::Close => "close",
            Capability::List => "list",
            Capability::CancelRequest => "cancel_request",
            Capability::Tools => "tools",
            Capability::ModelSwitch => "model_switch",
            Capability::Permissions => "permissions",
            Capability::Subagents => "subagents",
            Capability::Workflows => "workflows",
            Capability::Plans => "plans",
            Capability::Compaction => "compaction",
        }
    }
}

/// A moment in a prompt's life at which the client acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// Right after the prompt is sent, before any update.
    Sent,
    /// After the first `agent_message_chunk`.
    FirstDelta,
    /// While the agent waits to retry: once a Provider request of the turn was answered with an
    /// HTTP error, in the gap before the agent asks again (as the client's patience does, half
    /// a second after the request ended).
    RetryWait,
    /// After the first `tool_call` update.
    ToolCall,
    /// After the prompt was answered (a cancel then must change nothing).
    Answered,
}

impl Trigger {
    /// The name a scenario file gives the moment, e.g. `first_delta`.
    pub fn name(self) -> &'static str {
        match self {
            Trigger::Sent => "sent",
            Trigger::FirstDelta => "first_delta",
            Trigger::RetryWait => "retry_wait",
            Trigger::ToolCall => "tool_call", // named for ACP's update, not a Log type
            Trigger::Answered => "answered",
        }
    }
}

fn completed() -> TerminalStatus {
    TerminalStatus::Completed
}

/// Reads and validates a scenario file.
pub fn load(path: &Path) -> Result<Scenario, LoadError> {
    parse(&read_text(path)?, path)
}

/// Parses scenario text; `path` only labels errors.
pub fn parse(text: &str, path: &Path) -> Result<Scenario, LoadError> {
    let scenario: Scenario = parse_toml(text, path)?;
    let invalid =
        |message: String| LoadError::Invalid { path: path.to_owned(), line: 1, column: 1, key: None, message };
    if scenario.turns.is_empty() {
        return Err(invalid("a scenario needs at least one [[turn]]".to_owned()));
    }
    check_covers(text, path, &scenario.covers)?;
    check_images(text, path, &scenario)?;
    check_links(text, path, &scenario)?;
    // The client watches the Provider for a retry's wait only to cancel in it.
    if let Some(turn_idx) = scenario.turns.iter().position(|turn| turn.busy_prompt == Some(Trigger::RetryWait)) {
        let steps = [Step::Key("turn"), Step::Index(turn_idx), Step::Key("busy_prompt")];
        let message = "`retry_wait` is a moment for `cancel` only".to_owned();
        return Err(invalid_at(text, path, &steps, "busy_prompt", message));
    }
    check_session_steps(text, path, &scenario)?;
    scenario.script().validate().map_err(|error| script_error(text, path, &scenario, error))?;
    Ok(scenario)
}

/// A turn reopens its Session one way, and is cancelled one way: `reload` or `resume`,
/// `cancel` or `cancel_request`.
fn check_session_steps(text: &str, path: &Path, scenario: &Scenario) -> Result<(), LoadError> {
    for (turn_idx, turn) in scenario.turns.iter().enumerate() {
        let clash = match () {
            () if turn.reload && turn.resume => {
                Some(("resume", "a turn reopens its Session by `reload` or `resume`, not both"))
            }
            () if turn.cancel.is_some() && turn.cancel_request.is_some() => {
                Some(("cancel_request", "a turn is cancelled by `cancel` or `cancel_request`, not both"))
            }
            () if turn.cancel_request == Some(Trigger::RetryWait) => {
                Some(("cancel_request", "`retry_wait` is a moment for `cancel` only"))
            }
            () if turn.reload_open && (turn.reload || turn.resume) => {
                Some(("reload_open", "a turn reopens its Session one way: `reload`, `resume` or `reload_open`"))
            }
            () if turn.replay_from.is_some() && !turn.resume => Some((
                "replay_from",
                "`replay_from` says where a `resume` replays from: the turn needs `resume = true`",
            )),
            () if turn.retry && turn.idempotency_key.is_none() => {
                Some(("retry", "a prompt is retried with its key: the turn needs an `idempotency_key`"))
            }
            () if turn.idempotency_key.as_deref().is_some_and(|key| key.is_empty() || key.chars().count() > 255) => {
                Some(("idempotency_key", "an `idempotencyKey` is 1 to 255 characters"))
            }
            () => None,
        };
        if let Some((key, message)) = clash {
            let steps = [Step::Key("turn"), Step::Index(turn_idx), Step::Key(key)];
            return Err(invalid_at(text, path, &steps, key, message.to_owned()));
        }
    }
    Ok(())
}

/// Every prompt link has a URI with a scheme and a name, as a `resource_link` block needs.
fn check_links(text: &str, path: &Path, scenario: &Scenario) -> Result<(), LoadError> {
    for (turn_idx, turn) in scenario.turns.iter().enumerate() {
        for (link_idx, link) in turn.links.iter().enumerate() {
            let problem = if !has_scheme(&link.uri) {
                Some(("uri", format!("`{}` is no URI: it needs a scheme, as in `https://example.com/a.md`", link.uri)))
            } else if link.name.trim().is_empty() {
                Some(("name", "a link needs a name".to_owned()))
            } else {
                None
            };
            if let Some((key, message)) = problem {
                let steps = [
                    Step::Key("turn"),
                    Step::Index(turn_idx),
                    Step::Key("links"),
                    Step::Index(link_idx),
                    Step::Key(key),
                ];
                return Err(invalid_at(text, path, &steps, key, message));
            }
        }
    }
    Ok(())
}

/// Whether `uri` starts with a scheme (RFC 3986: a letter, then letters, digits, `+`, `-`,
/// `.`, then `:`).
fn has_scheme(uri: &str) -> bool {
    let Some((scheme, _)) = uri.split_once(':') else { return false };
    scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Every prompt image must be an image MIME type and base64, as the reference decodes it; a
/// bad one is an error at its own line, not a refused prompt at run time.
fn check_images(text: &str, path: &Path, scenario: &Scenario) -> Result<(), LoadError> {
    for (turn_idx, turn) in scenario.turns.iter().enumerate() {
        for (image_idx, image) in turn.images.iter().enumerate() {
            if let Err(error) = gauntlet_agent::resource::Image::from_base64(&image.mime_type, &image.data) {
                let steps = [Step::Key("turn"), Step::Index(turn_idx), Step::Key("images"), Step::Index(image_idx)];
                return Err(invalid_at(text, path, &steps, "images", error.to_string()));
            }
        }
    }
    Ok(())
}

/// Every `covers` id must be a requirement of the registry (docs/contract.md); an unknown one
/// (a typo) is an error at its own line, so a scenario never claims to check nothing.
pub fn check_covers(text: &str, path: &Path, covers: &[String]) -> Result<(), LoadError> {
    let Some((index, id)) = covers.iter().enumerate().find(|(_, id)| !crate::contract::defines(id)) else {
        return Ok(());
    };
    Err(invalid_at(
        text,
        path,
        &[Step::Key("covers"), Step::Index(index)],
        "covers",
        format!("`{id}` is not a requirement id of docs/contract.md"),
    ))
}

/// A script error at the line of the key it is about (`status = 700`, a stray `retry_after`).
fn script_error(text: &str, path: &Path, scenario: &Scenario, error: ScriptError) -> LoadError {
    let message = format!("respond: {error}");
    let ScriptError::Invalid { route, index, key, .. } = &error else {
        return LoadError::Invalid { path: path.to_owned(), line: 1, column: 1, key: None, message };
    };
    let (turn, within) = if route == ROOT {
        // The root route is every turn's responses in order: find the turn holding `index`.
        let mut before = 0;
        let mut found = (0, *index);
        for (turn_idx, turn) in scenario.turns.iter().enumerate() {
            if *index < before + turn.respond.len() {
                found = (turn_idx, index - before);
                break;
            }
            before += turn.respond.len();
        }
        found
    } else {
        (0, *index)
    };
    let path_in_file = if route == ROOT {
        vec![Step::Key("turn"), Step::Index(turn), Step::Key("respond"), Step::Index(within), Step::Key(key)]
    } else {
        vec![Step::Key("children"), Step::Key(route), Step::Key("respond"), Step::Index(within), Step::Key(key)]
    };
    invalid_at(text, path, &path_in_file, key, message)
}

/// The `covers` list of any scenario file, whatever its family (other keys are not checked here).
pub fn covers(path: &Path) -> Result<Vec<String>, LoadError> {
    #[derive(Deserialize)]
    struct Header {
        #[serde(default)]
        covers: Vec<String>,
    }
    Ok(parse_toml::<Header>(&read_text(path)?, path)?.covers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        parse(text, Path::new("scenarios/turn/x.toml")).map(|_| ()).unwrap_err().to_string()
    }

    #[test]
    fn a_trigger_is_named_as_a_scenario_file_names_it() {
        let all = [Trigger::Sent, Trigger::FirstDelta, Trigger::RetryWait, Trigger::ToolCall, Trigger::Answered];
        for trigger in all {
            let read: Trigger = serde_json::from_value(serde_json::Value::from(trigger.name())).unwrap();
            assert_eq!(read, trigger);
        }
    }

    #[test]
    fn an_unknown_covers_id_is_refused_at_its_line() {
        let message = error(
            "title = \"t\"\ncovers = [\n  \"TURN-TERMINAL-EVIDENCE\",\n  \"TURN-TERMINAL-EVIDENSE\",\n]\n[[turn]]\nprompt = \"p\"\n",
        );
        assert!(
            message.contains("x.toml:4:3: key `covers`: `TURN-TERMINAL-EVIDENSE` is not a requirement id"),
            "{message}"
        );
    }

    #[test]
    fn a_bad_status_is_reported_at_its_own_line() {
        let text = "title = \"t\"\n\n[[turn]]\nprompt = \"a\"\nrespond = [{ text = [\"x\"] }]\n\n[[turn]]\nprompt = \"b\"\nrespond = [\n  { text = [\"y\"] },\n  { status = 700 },\n]\n";
        let message = error(text);
        assert!(
            message.contains("x.toml:11:14: key `status`: respond: route `root` response 2: status 700"),
            "{message}"
        );
        let child = "title = \"t\"\n[[turn]]\nprompt = \"a\"\n[children.sub_1]\nrespond = [{ retry_after = 3 }]\n";
        let message = error(child);
        assert!(message.contains("x.toml:5:28: key `retry_after`: respond: route `sub_1` response 0"), "{message}");
    }

    #[test]
    fn invalid_utf8_names_its_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.toml");
        std::fs::write(&path, b"title = \"t\"\n[[turn]]\nprompt = \"ab\xff\"\n").unwrap();
        let message = load(&path).unwrap_err().to_string();
        assert!(
            message.ends_with("x.toml:3:13: invalid UTF-8 (byte 0xff at byte offset 33); a corpus file is UTF-8 text"),
            "{message}"
        );
    }

    #[test]
    fn a_short_scenario_gets_defaults() {
        let scenario =
            parse("title = \"t\"\n[[turn]]\nprompt = \"hi\"\nrespond = [{ text = [\"Hello\"] }]\n", Path::new("x"))
                .unwrap();
        assert_eq!(scenario.turns[0].expect, TerminalStatus::Completed);
        assert_eq!(scenario.config.max_retries, 2);
    }

    #[test]
    fn needs_and_scaling() {
        let text = "title = \"t\"\n[config]\nstream_idle_timeout_ms = 30000\n[[turn]]\nprompt = \"hi\"\ncancel = \"first_delta\"\nrespond = [{ text = [\"a\"], pause = { after = 1, ms = 600000 } }]\n";
        let scenario = parse(text, Path::new("x")).unwrap();
        assert_eq!(scenario.needs(), BTreeSet::from([Capability::Cancel]));
        let fast = scenario.scaled(0.01);
        assert_eq!(fast.config.stream_idle_timeout_ms, 300);
        assert_eq!(fast.turns[0].respond[0].pause[0].ms, 6000);
        assert_eq!((scenario.time_scale, fast.time_scale, fast.scaled(0.5).time_scale), (1.0, 0.01, 0.005));
        assert_eq!(scenario.scaled(0.0).config.turn_timeout_ms, 1);
    }

    /// An agent's own threshold replaces the budget: the crossing usage crosses it by as
    /// much; an agent that compacts at once gets the next turn's summary before its turn ends.
    #[test]
    fn an_agents_own_compaction_threshold_moves_the_crossing_and_the_summary() {
        let text = "title = \"t\"\n[[turn]]\nprompt = \"a\"\nrespond = [{ text = [\"A\"], usage = { input = 390000 } }]\n\
                    [[turn]]\nprompt = \"b\"\nrespond = [{ text = [\"summary\"] }, { text = [\"B\"] }]\n";
        let scenario = parse(text, Path::new("x")).unwrap();
        let usage = |scenario: &Scenario| scenario.turns[0].respond[0].usage.map(|usage| usage.input);
        let texts = |turn: &Turn| turn.respond.iter().map(Response::visible_text).collect::<Vec<_>>();
        let next = scenario.compacting_at(167_000, false).unwrap();
        assert_eq!((usage(&next), next.config.compact_at_tokens), (Some(197_000), 167_000));
        assert_eq!(
            (texts(&next.turns[0]), texts(&next.turns[1])),
            (vec!["A".to_owned()], vec!["summary".to_owned(), "B".to_owned()])
        );
        let at_once = scenario.compacting_at(167_000, true).unwrap();
        assert_eq!(
            (texts(&at_once.turns[0]), texts(&at_once.turns[1])),
            (vec!["A".to_owned(), "summary".to_owned()], vec!["B".to_owned()])
        );
        let near = parse(&text.replace("[\"B\"] }", "[\"B\"], usage = { input = 200000 } }"), Path::new("x")).unwrap();
        let err = near.compacting_at(167_000, false).unwrap_err();
        assert!(err.contains("reports 200000 input tokens, under the scenario's budget of 360000"), "{err}");
        let alone = parse(&text.replace("{ text = [\"summary\"] }, ", ""), Path::new("x")).unwrap();
        let err = alone.compacting_at(167_000, true).unwrap_err();
        assert!(err.contains("at the end of turn 1, while the script asks for its summary in turn 2"), "{err}");
    }

    #[test]
    fn a_busy_prompts_pause_keeps_the_clients_window_under_the_idle_timeout() {
        let busy = |idle: u64, ms: u64| {
            format!(
                "title = \"t\"\n[config]\nstream_idle_timeout_ms = {idle}\n[[turn]]\nprompt = \"hi\"\nbusy_prompt = \"first_delta\"\nrespond = [{{ text = [\"a\"], pause = {{ after = 5, ms = {ms} }} }}]\n"
            )
        };
        let pause = |text: String| parse(&text, Path::new("x")).unwrap().scaled(0.01).turns[0].respond[0].pause[0].ms;
        assert_eq!(pause(busy(180_000, 1000)), 500, "half a second of real time, not 10 ms");
        assert_eq!(pause(busy(180_000, 200)), 200, "never longer than scripted");
        assert_eq!(pause(busy(1000, 500)), 5, "never reaching half the scaled idle timeout");
    }

    #[test]
    fn the_session_methods_are_capabilities_and_a_turn_uses_one_of_each_pair() {
        let text = "title = \"t\"\nlist_sessions = true\nclose = true\n[[turn]]\nprompt = \"a\"\ncancel_request = \"first_delta\"\n[[turn]]\nprompt = \"b\"\nresume = true\n";
        let needs = parse(text, Path::new("x")).unwrap().needs();
        let expected = [Capability::Resume, Capability::Close, Capability::List, Capability::CancelRequest];
        assert_eq!(needs, BTreeSet::from(expected));
        let both = error("title = \"t\"\n[[turn]]\nprompt = \"a\"\nreload = true\nresume = true\n");
        assert!(
            both.contains("x.toml:5:10: key `resume`: a turn reopens its Session by `reload` or `resume`"),
            "{both}"
        );
        let cancels = error("title = \"t\"\n[[turn]]\nprompt = \"a\"\ncancel = \"sent\"\ncancel_request = \"sent\"\n");
        assert!(
            cancels.contains("key `cancel_request`: a turn is cancelled by `cancel` or `cancel_request`"),
            "{cancels}"
        );
    }

    /// A link needs a URI with a scheme and a name; a retry needs a key of 1 to 255
    /// characters; `replay_from` needs a resume; each refused at its key.
    #[test]
    fn links_keys_and_replays_are_checked_at_their_keys() {
        let turn = |keys: &str| error(&format!("title = \"t\"\n[[turn]]\nprompt = \"a\"\n{keys}\n"));
        let no_scheme = turn("links = [{ uri = \"notes.md\", name = \"notes\" }]");
        assert!(no_scheme.contains("x.toml:4:18: key `uri`: `notes.md` is no URI: it needs a scheme"), "{no_scheme}");
        let no_name = turn("links = [{ uri = \"https://e.com/a\", name = \" \" }]");
        assert!(no_name.contains("key `name`: a link needs a name"), "{no_name}");
        let retry = turn("retry = true");
        assert!(retry.contains("x.toml:4:9: key `retry`: a prompt is retried with its key"), "{retry}");
        let empty = turn("idempotency_key = \"\"");
        assert!(empty.contains("key `idempotency_key`: an `idempotencyKey` is 1 to 255 characters"), "{empty}");
        let replay = turn("replay_from = \"start\"");
        assert!(replay.contains("key `replay_from`: `replay_from` says where a `resume` replays from"), "{replay}");
        let twice = turn("reload = true\nreload_open = true");
        assert!(twice.contains("key `reload_open`: a turn reopens its Session one way"), "{twice}");
        let unknown = turn("resume = true\nreplay_from = \"message\"");
        assert!(unknown.contains("key `replay_from`: unknown variant `message`"), "{unknown}");
        let keyed = "title = \"t\"\n[client]\nplan = true\n[[turn]]\nprompt = \"a\"\nidempotency_key = \"k\"\nretry = true\nresume = true\nreplay_from = \"start\"\n";
        let scenario = parse(keyed, Path::new("x")).unwrap();
        assert!(scenario.client.plan);
        assert_eq!(scenario.needs(), BTreeSet::from([Capability::Resume, Capability::Load]));
        assert!(scenario.in_acp(AcpVersion::V1).unwrap_err().contains("no `idempotencyKey`"));
        assert!(scenario.in_acp(AcpVersion::V2).is_ok());
    }

    #[test]
    fn retry_wait_is_a_moment_for_cancel_only() {
        let text =
            "title = \"t\"\n[[turn]]\nprompt = \"hi\"\nbusy_prompt = \"retry_wait\"\nrespond = [{ text = [\"a\"] }]\n";
        let error = parse(text, Path::new("x")).unwrap_err().to_string();
        assert!(error.contains("x:4:15: key `busy_prompt`: `retry_wait` is a moment for `cancel` only"), "{error}");
    }

    #[test]
    fn a_misspelt_key_names_file_line_column_and_key() {
        let message = error("title = \"t\"\n[[turn]]\nprompt = \"hi\"\nexpct = \"completed\"\n");
        assert!(message.starts_with("scenarios/turn/x.toml:4:1: key `expct`: unknown field `expct`"), "{message}");
    }

    #[test]
    fn a_misspelt_key_inside_a_response_is_found_too() {
        let message = error("title = \"t\"\n[[turn]]\nprompt = \"hi\"\nrespond = [{ txt = [\"a\"] }]\n");
        assert!(message.starts_with("scenarios/turn/x.toml:4:14: key `txt`"), "{message}");
    }

    #[test]
    fn a_wrong_value_names_its_key() {
        let message = error("title = \"t\"\n[[turn]]\nprompt = \"hi\"\nexpect = \"done\"\n");
        assert!(message.starts_with("scenarios/turn/x.toml:4:10: key `expect`: unknown variant `done`"), "{message}");
    }
}
