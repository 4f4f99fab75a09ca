//! The Capture: everything a Driver observed in one scenario run, and its golden format.
//!
//! This is the only home of the golden file formats (a Boundary: any language reads them):
//!
//! | file | content |
//! | --- | --- |
//! | `log.ndjson` | the root Session's Log, one canonical JSON Event per line |
//! | `children/<id>.ndjson` | each child Session's Log, the same way |
//! | `requests.jsonl` | every Provider request in order: `{route, response_index, model?}` and its body as an increment to the previous request of its route (`body` whole for the first, then `appended`, `changed`, `removed`: [`gauntlet_mock_provider::increment`]) (`model` when the body does not name it: Gemini's path does); `requests.<dialect>.jsonl` for a dialect other than `responses` |
//! | `acp.jsonl` | the live ACP transcript, both directions: `{from, message}` (or `raw` for a non-JSON line) |
//! | `acp-load.jsonl` | what `session/load` replays into a fresh agent, and its answer |
//! | `outcome.json` | terminal states derived from the Log, what the agent answered, what each `run_workflow` returned, diagnostics |
//! | `tools.jsonl` | every call gauntlet's MCP server received, what it answered and how the call ended (a scenario that scripts a tool's `outcome`) |
//!
//! JSON is canonical: sorted keys, compact lines (`outcome.json` is pretty-printed for review).

use std::collections::BTreeMap;
use std::time::Duration;

use gauntlet_mock_provider::tool_server::ToolCall;
use gauntlet_mock_provider::{After, Dialect, Increment, Timing};
use serde::Serialize;
use serde_json::{Value, json};

use gauntlet_agent::{TerminalStatus, canonical};

use crate::audit::{self, Audit};
use crate::log_line;
use crate::scenario::AcpVersion;
use crate::tool_map::MappedCall;

/// The folder of a scenario's golden that holds its child Sessions' Logs, `<id>.ndjson` each.
pub const CHILDREN_DIR: &str = "children/";

/// How long a driver's client waits for an answer that an agent gives at once or not at all (to
/// a malformed line, to a prompt it must refuse), before the scenario goes on without it. A hang
/// of the agent as a whole still ends at the next wait, after the full patience. The judge reads
/// silence past it as no answer.
pub const QUICK_ANSWER: Duration = Duration::from_millis(1000);

/// What one scenario run produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Capture {
    /// The ACP protocol version the client spoke: its transcripts are `acp.jsonl` and
    /// `acp-load.jsonl` in v1, `acp.v2.jsonl` and `acp-load.v2.jsonl` in v2.
    pub acp_version: AcpVersion,
    /// The Provider wire format of the run: its requests are read in it, and its requests
    /// golden is `requests.jsonl` for `responses`, `requests.<dialect>.jsonl` for the others.
    pub dialect: Dialect,
    /// The root Session's Log, line by line, without newlines.
    pub log: Vec<String>,
    /// Each child Session's Log (subagents, workflow steps), by child Session id.
    pub children: BTreeMap<String, Vec<String>>,
    /// Every Provider request, in arrival order.
    pub requests: Vec<Request>,
    /// The live ACP transcript, workspace path masked as `$WORKSPACE`.
    pub acp: Vec<Value>,
    /// The `session/load` transcript of a fresh agent.
    pub acp_load: Vec<Value>,
    /// What the agent answered to each scenario turn's prompt.
    pub reported: Vec<Reported>,
    /// A torn Log tail the runtime reported on resume.
    pub torn_tail: Option<TornTail>,
    /// Script responses nobody asked for: `(route, index)`.
    pub unconsumed: Vec<(String, usize)>,
    /// Requests no script answered, with the mock's explanation.
    pub unmatched: Vec<String>,
    /// Things that went wrong in the driver or the implementation itself (crash, hang, IO).
    pub faults: Vec<String>,
    /// The end of the agent's stderr, for a process (evidence only: not golden).
    pub stderr_tail: String,
    /// Side requests the mock answered outside the script (evidence only: not golden).
    pub side_requests: Vec<String>,
    /// Each `session/cancel` the client sent (evidence only: not golden, real time differs run
    /// to run).
    pub cancels: Vec<Cancel>,
    /// For each of `requests`, in order: when it arrived and when and how its response body
    /// ended, on the same clock (evidence only: not golden).
    pub timings: Vec<Timing>,
    /// The script's abstract tool calls as the driver rendered them for the agent's own tools
    /// (its profile's `[tools]`); empty when nothing was mapped (evidence only: not golden).
    pub mapped_calls: Vec<MappedCall>,
    /// Every call gauntlet's MCP server received, what it was told to answer and how the call
    /// ended: what each tool really returned (`tools.jsonl`).
    pub tool_calls: Vec<ToolCall>,
    /// A prompt's images were not sent, because the agent does not declare
    /// `promptCapabilities.image`: the play is `skipped` (evidence only: not golden).
    pub images_withheld: bool,
    /// Processes the agent started and left running after it was stopped (a daemon that left
    /// its process group), each's command line; the driver killed them (evidence only: not
    /// golden).
    pub leftovers: Vec<String>,
}

/// The requests golden of a dialect: the raw bodies differ by wire, everything else is shared.
pub fn requests_file(dialect: Dialect) -> String {
    match dialect {
        Dialect::Responses => "requests.jsonl".to_owned(),
        other => format!("requests.{}.jsonl", other.key()),
    }
}

/// An ACP transcript golden: `acp.jsonl` in v1, `acp.v2.jsonl` in v2 (the Log, requests and
/// outcome goldens are the same files in both: the protocol changes how a turn is told, not
/// what the agent did).
pub fn acp_file(stem: &str, version: AcpVersion) -> String {
    match version {
        AcpVersion::V1 => format!("{stem}.jsonl"),
        AcpVersion::V2 => format!("{stem}.v2.jsonl"),
    }
}

/// One Provider request as the mock saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request {
    /// The script route that answered (or was asked).
    pub route: String,
    /// The index of the script response that answered; `None` when nothing matched.
    pub response_index: Option<usize>,
    /// The model the request names outside its body (Gemini's is in the path); absent when
    /// the body names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The JSON body (a string if it was not JSON), as an increment to the previous request of
    /// the same route: the first whole, then what changed (see [`gauntlet_mock_provider::increment`]).
    #[serde(flatten)]
    pub body: Increment,
    /// The scenario turn (from 0) the client had begun when it arrived, as the mock was told
    /// (evidence only: not golden).
    #[serde(skip)]
    pub turn: Option<usize>,
    /// For a request past its turn's responses, what the mock saw it come after and so how it
    /// was answered (evidence only: not golden).
    #[serde(skip)]
    pub unplaced: Option<After>,
    /// The HTTP status the mock answered it with (evidence only: not golden).
    #[serde(skip)]
    pub status: Option<u16>,
}

impl Request {
    /// Requests from whole bodies `(route, response_index, body)` in arrival order, each made an
    /// increment to the previous body of its route (for captures made by hand).
    pub fn chained(bodies: impl IntoIterator<Item = (String, Option<usize>, Value)>) -> Vec<Request> {
        let mut chain = gauntlet_mock_provider::increment::Chain::default();
        bodies
            .into_iter()
            .map(|(route, response_index, body)| {
                let body = chain.push(&route, gauntlet_mock_provider::Body::from(body));
                Request { route, response_index, model: None, body, turn: None, unplaced: None, status: None }
            })
            .collect()
    }
}

/// How soon after `session/cancel` a Provider request still streaming must end
/// (ACP-CANCEL-CLOSES-REQUEST). A second is far longer than closing a socket takes, and far
/// shorter than the scenarios' held streams (an hour of scenario time, over half a minute at the
/// external profiles' time scale of 0.01). It is the same on every clock: a profile's time scale
/// shrinks scripted pauses and timeouts, not the real work of reacting to a cancel (reading it,
/// closing a socket, the mock hearing of it). The driver keeps the agent running this long after
/// a cancel while such a request is open, so stopping the agent never closes it in time for it.
pub const CANCEL_CLOSE_BOUND: Duration = Duration::from_millis(1000);

/// A `session/cancel` (or `$/cancel_request`) the client sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancel {
    /// The scenario turn it cancelled, from 0.
    pub turn: usize,
    /// When it was sent, as time since the mock started, on the mock's clock.
    pub sent: Duration,
    /// Sent by the client's patience, not the script: the agent had asked its Provider for the
    /// turn, then went silent (its own backoff between retries, a stalled stream it has no
    /// timeout for), and the client stopped waiting, as a user would.
    pub impatient: bool,
    /// Sent as `$/cancel_request` naming the turn's prompt, which an agent MAY act on (ACP
    /// "Cancellation"), not as `session/cancel`.
    pub by_request: bool,
}

/// A turn's outcome as the agent answered `session/prompt` (not as the Log shows it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reported {
    /// `result.stopReason`, when the answer is a result.
    pub stop_reason: Option<String>,
    /// The JSON-RPC `error` object, when the answer is an error.
    pub error: Option<Value>,
}

impl Reported {
    /// Reads a `session/prompt` answer.
    pub fn from_answer(answer: &Value) -> Reported {
        Reported {
            stop_reason: answer.pointer("/result/stopReason").and_then(Value::as_str).map(str::to_owned),
            error: answer.get("error").cloned(),
        }
    }

    /// The terminal state the answer claims: a stop reason's meaning, the error's
    /// `data.terminalStatus`, or `interrupted` for error -32800, ACP's "Request Cancelled"
    /// (ACP-STOP-REASON, ACP-CANCEL-REQUEST-ANSWER).
    pub fn claimed_status(&self) -> Option<TerminalStatus> {
        match (self.stop_reason.as_deref(), &self.error) {
            (Some("end_turn" | "max_tokens" | "refusal"), None) => Some(TerminalStatus::Completed),
            (Some("cancelled"), None) => Some(TerminalStatus::Interrupted),
            (None, Some(error)) if error.get("code").and_then(Value::as_i64) == Some(REQUEST_CANCELLED) => {
                Some(TerminalStatus::Interrupted)
            }
            (None, Some(error)) => {
                error.pointer("/data/terminalStatus").and_then(Value::as_str).and_then(TerminalStatus::parse)
            }
            _ => None,
        }
    }
}

/// ACP's error code for a request its receiver cancelled (`ErrorCode::RequestCancelled`).
pub const REQUEST_CANCELLED: i64 = -32800;

/// A torn Log tail, as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TornTail {
    /// Byte offset of the torn line.
    pub offset: u64,
    /// Its length in bytes.
    pub length: usize,
}

/// Two runs of one scenario that do not carry the same conversation
/// ([`Capture::same_conversation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the {part} differ")]
pub struct ConversationMismatch {
    /// The first part that differs, e.g. `provider requests`, `Logs`.
    pub part: &'static str,
}

impl Capture {
    /// What this run shows of one child Session: its Log as `log`, and the requests of its
    /// route. The same Log and replay rules then judge it as they judge the root.
    pub fn child(&self, session_id: &str) -> Capture {
        Capture {
            log: self.children.get(session_id).cloned().unwrap_or_default(),
            requests: self.requests.iter().filter(|request| request.route == session_id).cloned().collect(),
            dialect: self.dialect,
            ..Capture::default()
        }
    }

    /// Terminal states derived from the Logs alone.
    pub fn audit(&self) -> Audit {
        audit::audit_with_children(&self.log, &self.children)
    }

    /// What each `run_workflow` call returned, as the runtime reported it in the Log (beside
    /// what the auditor derives from the spine): its status, `ok`, the step lists and safe
    /// next actions, or the tool error of an invalid spec.
    pub fn workflow_results(&self) -> Vec<Value> {
        let lines: Vec<log_line::Line> = self.log.iter().filter_map(|text| log_line::Line::parse(text).ok()).collect();
        let calls: Vec<&str> = lines
            .iter()
            .filter_map(log_line::Line::tool_call)
            .filter(|call| call.name == Some("run_workflow"))
            .filter_map(|call| call.call_id)
            .collect();
        lines
            .iter()
            .filter_map(log_line::Line::tool_result)
            .filter(|result| result.call_id.is_some_and(|id| calls.contains(&id)))
            .map(|result| match result.workflow {
                Some(workflow) => {
                    let keys = [
                        "workflow_id",
                        "status",
                        "ok",
                        "waves",
                        "held_steps",
                        "failed_steps",
                        "timeout_steps",
                        "partial_steps",
                        "needs_orchestrator_steps",
                        "safe_next_actions",
                    ];
                    let mut fields: serde_json::Map<String, Value> = keys
                        .iter()
                        .map(|key| ((*key).to_owned(), workflow.get(*key).cloned().unwrap_or(Value::Null)))
                        .collect();
                    let usable: Vec<Value> = workflow
                        .get("usable_checkpoints")
                        .and_then(Value::as_array)
                        .map(|bundles| bundles.iter().filter_map(|bundle| bundle.get("step_id").cloned()).collect())
                        .unwrap_or_default();
                    fields.insert("usable_checkpoints".into(), Value::Array(usable));
                    fields.insert("output".into(), result.output_value.cloned().unwrap_or(Value::Null));
                    Value::Object(fields)
                }
                None => json!({"error": result.error}),
            })
            .collect()
    }

    /// Every line of every child Log, parsed.
    pub fn child_lines(&self) -> Vec<(String, log_line::Line)> {
        self.children
            .iter()
            .flat_map(|(id, lines)| {
                lines.iter().filter_map(|text| log_line::Line::parse(text).ok()).map(|l| (id.clone(), l))
            })
            .collect()
    }

    /// The Log without what follows the clock on real time: `ts`, and `elapsed_ms` and the
    /// transport's wording of an error in `turn_failed` details. For comparing a run on real
    /// time with one on the paused clock.
    pub fn timeless_log(&self) -> Vec<Value> {
        timeless(&self.log)
    }

    /// Each child Log, [`Capture::timeless_log`]'s way.
    fn timeless_children(&self) -> Vec<(&String, Vec<Value>)> {
        self.children.iter().map(|(id, log)| (id, timeless(log))).collect()
    }

    /// Everything two runs of one scenario must agree on, whatever clock they ran on; `Err`
    /// names the first part that differs.
    pub fn same_conversation(&self, other: &Capture) -> Result<(), ConversationMismatch> {
        let parts = [
            ("faults", self.faults == other.faults),
            ("provider requests", self.requests == other.requests),
            ("prompt answers", self.reported == other.reported),
            ("live ACP transcripts", self.acp == other.acp),
            ("load replays", self.acp_load == other.acp_load),
            ("Logs", self.timeless_log() == other.timeless_log()),
            ("child Logs", self.timeless_children() == other.timeless_children()),
        ];
        match parts.iter().find(|(_, same)| !same) {
            None => Ok(()),
            Some(&(part, _)) => Err(ConversationMismatch { part }),
        }
    }

    /// The golden files of this capture: `(file name, content)`.
    pub fn golden_files(&self) -> Vec<(String, String)> {
        let log: String = self.log.iter().map(|line| format!("{}\n", canonical_line(line))).collect();
        let requests: String =
            self.requests.iter().map(|request| format!("{}\n", canonical::to_string(request))).collect();
        let mut outcome = json!({
            "audit": self.audit(),
            "reported": self.reported,
            "diagnostics": {
                "torn_tail": self.torn_tail,
                "unconsumed_responses": self.unconsumed,
                "unmatched_requests": self.unmatched,
                "faults": self.faults,
            },
        });
        let workflows = self.workflow_results();
        if !workflows.is_empty() {
            outcome["workflow_results"] = Value::Array(workflows);
        }
        let outcome = format!("{}\n", canonical::to_string_pretty(&outcome));
        let lines =
            |values: &[Value]| values.iter().map(|value| format!("{}\n", canonical::to_string(value))).collect();
        let mut files = vec![
            ("log.ndjson".to_owned(), log),
            (requests_file(self.dialect), requests),
            (acp_file("acp", self.acp_version), lines(&self.acp)),
            (acp_file("acp-load", self.acp_version), lines(&self.acp_load)),
            ("outcome.json".to_owned(), outcome),
        ];
        for (id, child) in &self.children {
            let text: String = child.iter().map(|line| format!("{}\n", canonical_line(line))).collect();
            files.push((format!("{}{id}.ndjson", CHILDREN_DIR), text));
        }
        if !self.tool_calls.is_empty() {
            let calls: Vec<Value> = self.tool_calls.iter().map(ToolCall::golden).collect();
            files.push((TOOLS_FILE.to_owned(), lines(&calls)));
        }
        files
    }
}

/// The golden of the calls gauntlet's MCP server received, for a scenario that scripts what a
/// tool answers.
pub const TOOLS_FILE: &str = "tools.jsonl";

/// The golden files of every Turn scenario, by name (child Logs, `children/<id>.ndjson`, are
/// compared and masked as `log.ndjson`).
pub const GOLDEN_FILES: [&str; 5] = ["log.ndjson", "requests.jsonl", "acp.jsonl", "acp-load.jsonl", "outcome.json"];

/// A Log line re-serialized with sorted keys; a line that is not JSON stays as it is.
fn canonical_line(line: &str) -> String {
    serde_json::from_str::<Value>(line).map_or_else(|_| line.to_owned(), |value| canonical::to_string(&value))
}

/// Log lines without their clock readings (see [`Capture::timeless_log`]).
fn timeless(log: &[String]) -> Vec<Value> {
    log.iter()
        .map(|line| {
            let mut event: Value = serde_json::from_str(line).unwrap_or(Value::Null);
            if let Some(event) = event.as_object_mut() {
                event.remove("ts");
            }
            if let Some(details) = event.pointer_mut("/data/details").and_then(Value::as_object_mut) {
                details.remove("elapsed_ms");
                details.remove("transport_error");
            }
            event
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_part_that_differs_is_named() {
        let quiet = Capture::default();
        assert_eq!(quiet.same_conversation(&Capture::default()), Ok(()));
        let log = Capture { log: vec!["{}".to_owned()], ..Capture::default() };
        let faulty = Capture { faults: vec!["boom".to_owned()], ..log.clone() };
        let mismatch = faulty.same_conversation(&quiet).unwrap_err();
        assert_eq!((mismatch.part, mismatch.to_string().as_str()), ("faults", "the faults differ"));
        assert_eq!(log.same_conversation(&quiet), Err(ConversationMismatch { part: "Logs" }));
    }
}
