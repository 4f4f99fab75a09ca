//! The space of generated scenarios: seeded, shrinkable Turn scenarios (one to four turns of
//! HTTP errors with and without `retry-after`, reasoning, a tool call, text, and every ending
//! of the fault table, cancels while text streams, while a tool runs and while the agent waits
//! to retry, busy prompts and reloads, and the model's own misbehaviour: an empty answer, a
//! call to a tool nobody offered, a call the output limit cuts, a call whose arguments do not
//! parse, two calls with one id, a refusal), and the tool side's faults where gauntlet's MCP
//! server answers (a tool that errors, a JSON-RPC error, a slow answer, a scripted result, a
//! call that hangs until the cancel), each with the terminal states the contract gives it and
//! the requirements it exercises, written as a scenario file.
//!
//! A [`Space`] says what an implementation can meet: an agent without `cancel` never sees a
//! cancel, one not told the scenario's idle timeout never sees a stall past it, a Chat
//! Completions agent never sees reasoning. Everything else is the same for every agent, so a
//! campaign finds combinations the hand-written corpus lacks wherever they are.

use std::fmt::Write as _;

use gauntlet_agent::{ErrorKind, TerminalStatus};
use gauntlet_judge::scenario::Trigger;
use gauntlet_mock_provider::{Ending as Then, ToolOutcome};
use proptest::prelude::*;

/// The idle timeout of every generated scenario, and the stall that exceeds it (virtual ms).
const IDLE_TIMEOUT_MS: u64 = 1_000;
const STALL_MS: u64 = 5_000;
/// A cancel waits on a stream held open this long (virtual ms).
const HOLD_MS: u64 = 3_600_000;
/// A cancel during a tool waits on a `wait` call this long (virtual ms).
const TOOL_MS: u64 = 600_000;
/// A slow tool answers after this long (virtual ms), well within any agent's tool timeout.
const SLOW_MS: u64 = 2_000;
/// A cancel during a retry's wait comes while the agent waits this long (the `retry-after` of
/// the HTTP error before it, in seconds).
const RETRY_AFTER_S: u64 = 90;
/// A busy prompt comes while the answer pauses this long after its first delta (virtual ms),
/// within the idle timeout.
const BUSY_MS: u64 = 500;
/// The `max_retries` of every generated scenario.
pub const MAX_RETRIES: usize = 2;
/// Frames of a response before its first text delta: created, in_progress, the message's item
/// and its part added (docs/scenario-format.md).
const FIRST_DELTA: usize = 4;

/// What an implementation can meet, so that no scenario is generated that it would skip or
/// could not know the outcome of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    /// Its wire carries reasoning items (all but Chat Completions).
    pub reasoning: bool,
    /// It runs the scenario's `read` tool (the reference, or a profile mapping it).
    pub tools: bool,
    /// It runs the scenario's `wait` tool (the reference, or a profile mapping it).
    pub wait: bool,
    /// It honours `session/cancel`.
    pub cancel: bool,
    /// It can `session/load` a Session in a fresh process.
    pub load: bool,
    /// It is told the scenario's stream idle timeout, so a stall past it has a known outcome.
    pub stalls: bool,
    /// Its wire carries call arguments that do not parse (all but Gemini, whose `args` is an object).
    pub raw_arguments: bool,
    /// It runs gauntlet's MCP server, whose answers a scenario may script (`outcome`).
    pub tool_outcomes: bool,
}

impl Space {
    /// Everything: what the reference meets.
    pub const ALL: Space = Space {
        reasoning: true,
        tools: true,
        wait: true,
        cancel: true,
        load: true,
        stalls: true,
        raw_arguments: true,
        tool_outcomes: true,
    };
}

/// How the last response of a turn ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// `completed`, optionally after a reasoning item.
    Completed {
        /// A reasoning item comes first.
        reasoning: bool,
    },
    /// `incomplete` (`max_output_tokens`): still a clean, truncated answer.
    Truncated,
    /// `incomplete` (`max_output_tokens`) in the middle of a `read` call's arguments: the call
    /// never runs, and the answer is a clean, truncated one.
    CutCall,
    /// The model refuses in so many words (`refusal`), a clean end: answered `refusal`.
    Refused,
    /// A stream that ends in this fault after its text: one of [`stream_faults`].
    Broken(Then),
    /// The stream holds after `shown` deltas past the idle timeout.
    Stall {
        /// Deltas shown before the stall.
        shown: usize,
    },
    /// The client cancels the turn.
    Cancel(CancelAt),
}

/// Where in a turn the client cancels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelAt {
    /// After the first delta of a held stream.
    Text,
    /// While a long `wait` tool call runs (the turn's response is that call).
    Tool,
    /// While a `wait` call hangs at gauntlet's MCP server, which never answers it.
    ToolHang,
    /// While the agent waits out an HTTP 429's `retry-after` (the turn's only response).
    RetryWait,
}

/// One HTTP error answered before the real response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http {
    /// 429, 500 or 503.
    pub status: u16,
    /// With a `retry-after: 1` header.
    pub retry_after: bool,
}

/// One turn: HTTP failures first, then an optional tool call, then the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// Statuses answered before the real response (each retried while retries last).
    pub http: Vec<Http>,
    /// The model first reads `notes.txt`, then answers.
    pub tool: bool,
    /// What gauntlet's MCP server answers that read with, when the scenario scripts it.
    pub tool_outcome: Option<ToolOutcome>,
    /// The model first calls a tool nobody offered (`deploy_to_production`), which fails.
    pub unknown_tool: bool,
    /// The model first calls `read` with arguments that do not parse, which fails unrun.
    pub invalid_args: bool,
    /// The model first calls `read` twice with one call id: the second fails unrun.
    pub repeated_id: bool,
    /// The answer's text chunks (may be empty).
    pub chunks: usize,
    /// How the answer ends.
    pub ending: Ending,
    /// A second prompt comes while the answer runs (only on a clean answer with text).
    pub busy: bool,
    /// A fresh agent process loads the Session before this turn (never the first).
    pub reload: bool,
}

/// A generated scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// One to four turns.
    pub turns: Vec<Turn>,
}

fn ending(space: Space) -> BoxedStrategy<Ending> {
    let reasoning =
        any::<bool>().prop_map(move |reasoning| Ending::Completed { reasoning: reasoning && space.reasoning });
    let broken = prop::sample::select(stream_faults()).prop_map(Ending::Broken);
    let mut choices: Vec<(u32, BoxedStrategy<Ending>)> =
        vec![(3, reasoning.boxed()), (1, Just(Ending::Truncated).boxed()), (3, broken.boxed())];
    choices.push((1, Just(Ending::Refused).boxed()));
    if space.tools {
        choices.push((1, Just(Ending::CutCall).boxed()));
    }
    if space.stalls {
        choices.push((1, (0usize..3).prop_map(|shown| Ending::Stall { shown }).boxed()));
    }
    if space.cancel {
        let mut at = vec![CancelAt::Text, CancelAt::RetryWait];
        if space.wait {
            at.push(CancelAt::Tool);
        }
        if space.wait && space.tool_outcomes {
            at.push(CancelAt::ToolHang);
        }
        choices.push((2, prop::sample::select(at).prop_map(Ending::Cancel).boxed()));
    }
    proptest::strategy::Union::new_weighted(choices).boxed()
}

/// The mock's stream faults a generated answer may end in: every ending of the mock but the
/// clean and the truncated one, which [`Ending::Completed`] and [`Ending::Truncated`] draw. A new
/// ending is a compile error in [`fault_kind`], which says what the reference makes of it; draw
/// it here.
fn stream_faults() -> Vec<Then> {
    let code = || "server_error".to_owned();
    vec![Then::Error(code()), Then::Failed(code()), Then::Disconnect, Then::Eof, Then::Malformed]
}

/// The error kind the reference gives a turn whose stream ends in `then` (the fault table of
/// docs/scenario-format.md); `None` for the ends that are no fault.
fn fault_kind(then: &Then) -> Option<ErrorKind> {
    match then {
        Then::Completed | Then::Incomplete(_) => None,
        Then::Error(_) | Then::Failed(_) => Some(ErrorKind::ProviderHttpError),
        Then::Disconnect => Some(ErrorKind::Network),
        Then::Eof => Some(ErrorKind::IncompleteStream),
        Then::Malformed => Some(ErrorKind::InvalidResponse),
    }
}

/// What the MCP server answers a generated read with: mostly the tool run as it is; a crash is
/// the corpus's alone (a server gone has no tools for the turns after it, which agents may
/// start again or not).
fn tool_outcome(space: Space) -> BoxedStrategy<Option<ToolOutcome>> {
    if !space.tool_outcomes {
        return Just(None).boxed();
    }
    let faults = prop::sample::select(vec![
        ToolOutcome::Error("permission denied: notes.txt".to_owned()),
        ToolOutcome::RpcError("internal error: the index is unavailable".to_owned()),
        ToolOutcome::Result("Buy bread.".to_owned()),
        ToolOutcome::SlowMs(SLOW_MS),
    ]);
    proptest::option::weighted(0.3, faults).boxed()
}

fn turn(space: Space) -> impl Strategy<Value = Turn> {
    let http = (prop::sample::select(vec![429u16, 500, 503]), any::<bool>())
        .prop_map(|(status, retry_after)| Http { status, retry_after });
    let http = prop::collection::vec(http, 0..=MAX_RETRIES + 1);
    let flags = (any::<bool>(), prop::bool::weighted(0.15), prop::bool::weighted(0.2), prop::bool::weighted(0.1));
    let misbehaviour = (prop::bool::weighted(0.1), prop::bool::weighted(0.1));
    (http, 0usize..4, ending(space), flags, misbehaviour, tool_outcome(space)).prop_map(
        move |(mut http, chunks, ending, (tool, busy, reload, unknown), (invalid, repeated), tool_outcome)| {
            // A cancel needs text to cancel after; a stall shows at most the text it has.
            let chunks = match ending {
                Ending::Cancel(CancelAt::Text) => chunks.max(2),
                Ending::Cancel(_) | Ending::CutCall | Ending::Refused => 0,
                Ending::Stall { shown } => chunks.max(shown),
                _ => chunks,
            };
            // A cancel in a retry's wait comes after the turn's one response, an HTTP 429 with a long
            // `retry-after`; nothing is scripted after it, so a retry past the cancel meets it again.
            if ending == Ending::Cancel(CancelAt::RetryWait) {
                // Only that failure: the client cancels in the first gap after an HTTP error.
                http.clear();
            }
            let calls_only =
                matches!(ending, Ending::Cancel(CancelAt::Tool | CancelAt::ToolHang | CancelAt::RetryWait));
            let tool = tool && !calls_only;
            let calls_first = !calls_only;
            let unknown_tool = unknown && calls_first;
            let invalid_args = invalid && calls_first && space.tools && space.raw_arguments;
            let repeated_id = repeated && calls_first && space.tools;
            let busy = busy && chunks > 0 && matches!(ending, Ending::Completed { .. }) && http.len() <= MAX_RETRIES;
            // Reasoning frames would move the busy prompt's pause before the first delta.
            let ending = if busy { Ending::Completed { reasoning: false } } else { ending };
            let tool = tool && space.tools;
            let tool_outcome = tool_outcome.filter(|_| tool);
            let reload = reload && space.load;
            Turn { http, tool, tool_outcome, unknown_tool, invalid_args, repeated_id, chunks, ending, busy, reload }
        },
    )
}

/// Scenarios of one to four turns within `space`.
pub fn generated(space: Space) -> impl Strategy<Value = Generated> {
    prop::collection::vec(turn(space), 1..=4).prop_map(|mut turns| {
        if let Some(first) = turns.first_mut() {
            first.reload = false;
        }
        Generated { turns }
    })
}

impl Turn {
    /// True when the HTTP failures outlast the retries: the turn fails before any response.
    fn exhausted(&self) -> bool {
        self.http.len() > MAX_RETRIES
    }

    /// The terminal state and error kind the contract (and the reference's choices of kind)
    /// give this turn.
    pub fn expected(&self) -> (TerminalStatus, Option<ErrorKind>) {
        if self.exhausted() {
            let last = self.http.get(MAX_RETRIES).map(|http| http.status);
            let kind = if last == Some(429) { ErrorKind::RateLimited } else { ErrorKind::ProviderHttpError };
            return (TerminalStatus::Failed, Some(kind));
        }
        let failed = if self.chunks > 0 { TerminalStatus::PartialFailed } else { TerminalStatus::Failed };
        match &self.ending {
            Ending::Completed { .. } | Ending::Truncated | Ending::CutCall | Ending::Refused => {
                (TerminalStatus::Completed, None)
            }
            Ending::Broken(then) => match fault_kind(then) {
                Some(kind) => (failed, Some(kind)),
                None => (TerminalStatus::Completed, None), // a clean end, never drawn as one
            },
            Ending::Stall { .. } => (TerminalStatus::TimedOut, Some(ErrorKind::StreamIdleTimeout)),
            Ending::Cancel(_) => (TerminalStatus::Interrupted, Some(ErrorKind::Cancelled)),
        }
    }

    /// The requirements this turn exercises (the scenario's `covers`), beside the ones every
    /// scenario does.
    fn covers(&self, covers: &mut Vec<&'static str>) {
        let (state, _) = self.expected();
        if !self.http.is_empty() {
            covers.extend(["WIRE-RETRY-BOUNDED", "WIRE-NO-RETRY-AFTER-TEXT"]);
        }
        match state {
            TerminalStatus::PartialFailed => {
                covers.extend(["REPLAY-NO-PARTIAL", "TURN-PARTIAL-EVIDENCE", "WIRE-TEXT-ONCE"]);
            }
            TerminalStatus::Failed | TerminalStatus::TimedOut => {
                covers.extend(["ACP-FAILURE-IS-ERROR", "WIRE-TERMINAL-EVENT-REQUIRED"]);
            }
            TerminalStatus::Interrupted => covers.push("ACP-STOP-REASON"),
            TerminalStatus::Completed => {}
        }
        let cancels_a_tool = matches!(self.ending, Ending::Cancel(CancelAt::Tool | CancelAt::ToolHang));
        if self.tool || self.unknown_tool || self.invalid_args || cancels_a_tool {
            covers.push("ACP-TOOL-STATUS");
        }
        if self.invalid_args {
            covers.push("ACP-INVALID-ARGUMENTS");
        }
        if self.repeated_id {
            covers.push("REPLAY-CALL-ID-UNIQUE");
        }
        if self.ending == Ending::Refused {
            covers.push("ACP-REFUSAL-STOP-REASON");
        }
        if self.unknown_tool {
            covers.push("ACP-UNKNOWN-TOOL");
        }
        if matches!(self.ending, Ending::Truncated | Ending::CutCall) {
            covers.push("ACP-TRUNCATION-STOP-REASON");
        }
        if cancels_a_tool {
            covers.push("TURN-ORPHAN-REPAIR");
        }
        if self.busy {
            covers.push("ACP-ONE-TURN");
        }
        if self.reload {
            covers.push("ACP-LOAD-CLEAN");
        }
    }
}

impl Generated {
    /// The scenario file, titled `title`.
    pub fn toml(&self, title: &str) -> String {
        let mut covers = vec!["REPLAY-CLEAN-ANSWER", "ACP-STOP-REASON", "ACP-ANSWER-IN-TURN"];
        for turn in &self.turns {
            turn.covers(&mut covers);
        }
        covers.sort_unstable();
        covers.dedup();
        let covers: Vec<String> = covers.iter().map(|id| format!("\"{id}\"")).collect();
        let mut text = format!("title = \"{title}\"\ncovers = [{}]\n\n[config]\n", covers.join(", "));
        let _ = writeln!(text, "max_retries = {MAX_RETRIES}\nstream_idle_timeout_ms = {IDLE_TIMEOUT_MS}");
        if self.turns.iter().any(|turn| turn.tool || turn.repeated_id) {
            text.push_str("\n[workspace]\n\"notes.txt\" = \"Buy milk.\\n\"\n");
        }
        for (n, turn) in self.turns.iter().enumerate() {
            let (expect, kind) = turn.expected();
            let _ = write!(text, "\n[[turn]]\nprompt = \"Question number {n} please\"\nexpect = \"{expect}\"\n");
            if let Some(kind) = kind {
                let _ = writeln!(text, "error_kind = \"{kind}\"");
            }
            if turn.reload {
                text.push_str("reload = true\n");
            }
            let cancel = match turn.ending {
                _ if turn.exhausted() => None,
                Ending::Cancel(CancelAt::Text) => Some(Trigger::FirstDelta),
                Ending::Cancel(CancelAt::Tool | CancelAt::ToolHang) => Some(Trigger::ToolCall),
                Ending::Cancel(CancelAt::RetryWait) => Some(Trigger::RetryWait),
                _ => None,
            };
            if let Some(cancel) = cancel {
                let _ = writeln!(text, "cancel = \"{}\"", cancel.name());
            }
            if turn.busy {
                text.push_str("busy_prompt = \"first_delta\"\n");
                let _ = writeln!(text, "busy_respond = [{{ text = [\"Second answer {n}.\"] }}]");
            }
            text.push_str("respond = [\n");
            for http in turn.http.iter().take(MAX_RETRIES + 1) {
                let retry_after = if http.retry_after { ", retry_after = 1" } else { "" };
                let _ = writeln!(text, "  {{ status = {}{retry_after} }},", http.status);
            }
            if !turn.exhausted() {
                if turn.unknown_tool {
                    let call = format!(
                        "{{ name = \"deploy_to_production\", args = {{ target = \"prod\" }}, call_id = \"call_u{n}\" }}"
                    );
                    let _ = writeln!(text, "  {{ calls = [{call}] }},");
                }
                if turn.invalid_args {
                    let call = format!(
                        "{{ name = \"read\", raw_args = '{{\"path\": \"notes.txt\"', call_id = \"call_i{n}\" }}"
                    );
                    let _ = writeln!(text, "  {{ calls = [{call}] }},");
                }
                if turn.repeated_id {
                    let call =
                        format!("{{ name = \"read\", args = {{ path = \"notes.txt\" }}, call_id = \"call_r{n}\" }}");
                    let _ = writeln!(text, "  {{ calls = [{call}, {call}] }},");
                }
                if turn.tool {
                    let outcome = turn
                        .tool_outcome
                        .as_ref()
                        .map(|outcome| format!(", outcome = {}", outcome.toml()))
                        .unwrap_or_default();
                    let call = format!(
                        "{{ name = \"read\", args = {{ path = \"notes.txt\" }}, call_id = \"call_t{n}\"{outcome} }}"
                    );
                    let _ = writeln!(text, "  {{ calls = [{call}] }},");
                }
                let _ = writeln!(text, "  {},", answer(n, turn));
            }
            text.push_str("]\n");
        }
        text
    }
}

/// The answer of turn `n`: unique text per turn and chunk, and its ending.
fn answer(n: usize, turn: &Turn) -> String {
    let chunks: Vec<String> = (0..turn.chunks).map(|i| format!("\"t{n}c{i} \"")).collect();
    let text = format!("text = [{}]", chunks.join(", "));
    match &turn.ending {
        Ending::Completed { reasoning } => {
            let reasoning = if *reasoning {
                format!("reasoning = [{{ summary = [\"Thinking {n}.\"], encrypted = \"enc{n}\" }}], ")
            } else {
                String::new()
            };
            // A busy prompt comes at the first delta, while the rest of the answer waits.
            let pause = if turn.busy {
                format!(", pause = {{ after = {}, ms = {BUSY_MS} }}", FIRST_DELTA + 1)
            } else {
                String::new()
            };
            format!("{{ {reasoning}{text}{pause} }}")
        }
        Ending::Truncated => format!("{{ {text}, then = {{ incomplete = \"max_output_tokens\" }} }}"),
        // Created, in progress, the call added and the first half of its arguments: then the limit.
        Ending::CutCall => format!(
            "{{ calls = [{{ name = \"read\", args = {{ path = \"notes.txt\" }}, call_id = \"call_c{n}\" }}], cut_after = 4, then = {{ incomplete = \"max_output_tokens\" }} }}"
        ),
        Ending::Refused => format!("{{ refusal = [\"I can't help with question {n}.\"] }}"),
        Ending::Broken(then) => match then.toml() {
            Some(then) => format!("{{ {text}, then = {then} }}"),
            None => format!("{{ {text} }}"),
        },
        Ending::Stall { shown } => {
            let after = if *shown == 0 { 2 } else { FIRST_DELTA + shown };
            format!("{{ {text}, pause = {{ after = {after}, ms = {STALL_MS} }} }}")
        }
        Ending::Cancel(CancelAt::Text) => {
            format!("{{ {text}, pause = {{ after = {}, ms = {HOLD_MS} }} }}", FIRST_DELTA + 1)
        }
        Ending::Cancel(CancelAt::Tool) => {
            format!("{{ calls = [{{ name = \"wait\", args = {{ ms = {TOOL_MS} }}, call_id = \"call_w{n}\" }}] }}")
        }
        Ending::Cancel(CancelAt::ToolHang) => {
            format!(
                "{{ calls = [{{ name = \"wait\", args = {{ ms = {TOOL_MS} }}, call_id = \"call_h{n}\", outcome = \"hang\" }}] }}"
            )
        }
        Ending::Cancel(CancelAt::RetryWait) => format!("{{ status = 429, retry_after = {RETRY_AFTER_S} }}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each stream fault is written as the scenario format spells it, after the turn's text.
    #[test]
    fn a_broken_answer_ends_in_its_fault() {
        let turn = |then| Turn {
            http: Vec::new(),
            tool: false,
            tool_outcome: None,
            unknown_tool: false,
            invalid_args: false,
            repeated_id: false,
            chunks: 1,
            ending: Ending::Broken(then),
            busy: false,
            reload: false,
        };
        let written: Vec<String> = stream_faults().into_iter().map(|then| answer(2, &turn(then))).collect();
        assert_eq!(
            written,
            [
                r#"{ text = ["t2c0 "], then = { error = "server_error" } }"#,
                r#"{ text = ["t2c0 "], then = { failed = "server_error" } }"#,
                r#"{ text = ["t2c0 "], then = "disconnect" }"#,
                r#"{ text = ["t2c0 "], then = "eof" }"#,
                r#"{ text = ["t2c0 "], then = "malformed" }"#,
            ]
        );
        let expected: Vec<_> = stream_faults().into_iter().map(|then| turn(then).expected()).collect();
        let failed = |kind| (TerminalStatus::PartialFailed, Some(kind));
        assert_eq!(
            expected,
            [
                failed(ErrorKind::ProviderHttpError),
                failed(ErrorKind::ProviderHttpError),
                failed(ErrorKind::Network),
                failed(ErrorKind::IncompleteStream),
                failed(ErrorKind::InvalidResponse),
            ]
        );
    }
}
