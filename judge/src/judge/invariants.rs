//! Invariants: contract rules checked on every scenario's capture, whatever it is about.
//!
//! One rule per file, named for the rule, its requirement id first in its `//!` line, tests
//! inside. [`ALL`] lists them; docs/contract.md names them in its "checked by" column.
//!
//! A rule's [`Scope`] says what it reads. Rules that read a Log, alone or with the requests
//! of its Session, judge every Log of a run: the root's and each child Session's (Subagents,
//! workflow steps), so a child's Turn is held to the same evidence, id, seq and replay rules.

mod answer_in_turn;
mod audit_only_not_replayed;
mod busy_prompt_refused;
mod cancel_closes_request;
mod carries_conversation;
mod checkpoint_bundle_complete;
mod client_text_once;
mod compaction_keeps_prompt;
mod compaction_no_partial;
mod compaction_recorded;
mod completed_needs_terminal_event;
mod delegation_acp_truthful;
mod diagnostic_not_answer;
mod error_data_complete;
mod failure_evidence_complete;
mod failure_not_end_turn;
mod image_reaches_provider;
mod jsonrpc_errors_standard;
mod load_matches_live;
mod load_replays_clean_transcript;
mod log_canonical_only;
mod log_ids_unique;
mod log_no_resource_bytes;
mod log_seq_gapless;
mod log_seq_monotonic;
mod no_duplicate_assistant;
mod no_partial_text_replayed;
mod no_retry_after_text;
mod orphan_calls_repaired;
mod partial_keeps_streamed_text;
mod plan_whole_list;
mod prompts_answered;
mod provider_script_strict;
mod reasoning_same_model;
mod retries_bounded;
mod stop_reason_matches_log;
mod subagent_completed_evidence;
mod subagent_elapsed_time;
mod subagent_event_fields;
mod subagent_replay_terminal_only;
mod subagent_terminal_evidence;
mod terminal_evidence;
mod tool_calls_paired;
mod tool_calls_projected;
mod truncation_stop_reason;
mod turns_terminated;
mod unplaced_requests;
mod usage_recorded;
mod wait_outcome_truthful;
mod workflow_ok_only_when_complete;
mod workflow_outcome_details;
mod workflow_result_agrees;
mod workflow_schedule_safe;
mod workflow_step_outcomes;
mod workflow_timeout_evidence;
mod workflow_waves;

use std::collections::{BTreeMap, HashMap};

use gauntlet_agent::EventType;
use gauntlet_agent::event::SubagentStatus;
use gauntlet_mock_provider::{Message, Response};
use serde_json::Value;

use crate::audit::Line;
use crate::capture::Request;
use crate::judge::Evidence;
use crate::judge::conversations::Conversation;
use crate::verdict::{Finding, Layer};

/// What a rule reads, and so which Logs it can judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// One Log alone: judged on the root's and on every child's.
    Log,
    /// One Log and the Provider requests of its Session: judged on the root and every child.
    Replay,
    /// The whole run (the ACP transcript, the answers, the script): judged on the root.
    Run,
}

/// One contract rule.
#[derive(Debug, Clone, Copy)]
pub struct Invariant {
    /// The requirement id in docs/contract.md that its findings carry.
    pub id: &'static str,
    /// Further requirement ids this rule also checks in part.
    pub also: &'static [&'static str],
    /// The file (and rule) name.
    pub name: &'static str,
    /// What it reads.
    pub scope: Scope,
    /// Returns one message per violation, with evidence.
    pub check: fn(&Evidence) -> Vec<String>,
}

/// Every invariant, checked on every capture.
pub const ALL: &[Invariant] = &[
    log_canonical_only::INVARIANT,
    log_seq_monotonic::INVARIANT,
    log_seq_gapless::INVARIANT,
    log_ids_unique::INVARIANT,
    terminal_evidence::INVARIANT,
    turns_terminated::INVARIANT,
    failure_evidence_complete::INVARIANT,
    partial_keeps_streamed_text::INVARIANT,
    no_partial_text_replayed::INVARIANT,
    diagnostic_not_answer::INVARIANT,
    carries_conversation::INVARIANT,
    compaction_recorded::INVARIANT,
    compaction_keeps_prompt::INVARIANT,
    compaction_no_partial::INVARIANT,
    audit_only_not_replayed::INVARIANT,
    tool_calls_paired::INVARIANT,
    orphan_calls_repaired::INVARIANT,
    provider_script_strict::INVARIANT,
    unplaced_requests::INVARIANT,
    stop_reason_matches_log::INVARIANT,
    truncation_stop_reason::INVARIANT,
    completed_needs_terminal_event::INVARIANT,
    load_replays_clean_transcript::INVARIANT,
    prompts_answered::INVARIANT,
    prompts_answered::AFTER_RUNNING,
    busy_prompt_refused::INVARIANT,
    jsonrpc_errors_standard::INVARIANT,
    no_retry_after_text::INVARIANT,
    client_text_once::INVARIANT,
    retries_bounded::INVARIANT,
    no_duplicate_assistant::INVARIANT,
    error_data_complete::INVARIANT,
    failure_not_end_turn::INVARIANT,
    cancel_closes_request::INVARIANT,
    subagent_terminal_evidence::INVARIANT,
    subagent_event_fields::INVARIANT,
    subagent_completed_evidence::INVARIANT,
    subagent_elapsed_time::INVARIANT,
    subagent_replay_terminal_only::INVARIANT,
    wait_outcome_truthful::INVARIANT,
    workflow_ok_only_when_complete::INVARIANT,
    workflow_result_agrees::INVARIANT,
    workflow_step_outcomes::INVARIANT,
    workflow_outcome_details::INVARIANT,
    workflow_timeout_evidence::INVARIANT,
    checkpoint_bundle_complete::INVARIANT,
    workflow_schedule_safe::INVARIANT,
    workflow_waves::INVARIANT,
    delegation_acp_truthful::INVARIANT,
    tool_calls_projected::INVARIANT,
    tool_calls_projected::SHOWN,
    answer_in_turn::INVARIANT,
    answer_in_turn::SHOWN,
    load_matches_live::INVARIANT,
    load_matches_live::AS_SHOWN,
    usage_recorded::INVARIANT,
    reasoning_same_model::INVARIANT,
    plan_whole_list::INVARIANT,
    log_no_resource_bytes::INVARIANT,
    image_reaches_provider::INVARIANT,
];

/// The invariants that need nothing but a Log ([`Scope::Log`]): `gauntlet audit` runs exactly
/// these over any Log; `log_only_is_exactly_the_rules_that_read_only_logs` keeps the scopes honest.
pub fn log_only() -> impl Iterator<Item = &'static Invariant> {
    ALL.iter().filter(|invariant| invariant.scope == Scope::Log)
}

/// Runs every invariant on the run, then the Log and replay rules on each child Session's Log;
/// a child's findings name it.
pub fn check_all(evidence: &Evidence) -> Vec<Finding> {
    let mut findings = check(evidence, ALL.iter(), "");
    let detached = detached_children(evidence);
    for session_id in evidence.capture.children.keys() {
        let capture = evidence.capture.child(session_id);
        let child = Evidence::of_child(&capture, detached.contains(&session_id.as_str()));
        let per_log = ALL.iter().filter(|invariant| invariant.scope != Scope::Run);
        findings.extend(check(&child, per_log, &format!("child Session `{session_id}`: ")));
    }
    findings
}

fn check<'a>(evidence: &Evidence, invariants: impl Iterator<Item = &'a Invariant>, prefix: &str) -> Vec<Finding> {
    invariants
        .flat_map(|invariant| invariant.run(evidence))
        .map(|finding| Finding { message: format!("{prefix}{}", finding.message), ..finding })
        .collect()
}

impl Invariant {
    /// Its findings on `evidence`, each carrying its requirement id.
    pub fn run(&self, evidence: &Evidence) -> Vec<Finding> {
        (self.check)(evidence)
            .into_iter()
            .map(|message| Finding::new(Layer::Invariant, Some(self.id), message))
            .collect()
    }
}

/// The child Sessions the root Log records as `detached`.
fn detached_children<'a>(evidence: &'a Evidence) -> Vec<&'a str> {
    evidence
        .lines
        .iter()
        .filter(|line| {
            line.kind == EventType::SubagentEvent && line.subagent_status() == Some(SubagentStatus::Detached)
        })
        .filter_map(|line| line.str_field("child_session_id"))
        .collect()
}

/// One `run_workflow` result of a Log (a `tool_result` whose `workflow` has `steps`), with
/// what the Log said before it: each Subagent's last `subagent_event`, and its workflow's
/// `workflow_started` graph and `workflow_finished`. The workflow rules judge the result
/// against this evidence, not against each other's claims.
struct WorkflowRun<'e> {
    /// The result's seq, for messages.
    seq: u64,
    /// The workflow's id.
    id: &'e str,
    /// The tool result's `output` line.
    output: &'e str,
    /// The `workflow` object.
    workflow: &'e Value,
    /// Each Subagent's last `subagent_event` data before the result, by id.
    subagents: HashMap<&'e str, &'e Value>,
    /// The `workflow_started` graph's steps.
    graph: &'e [Value],
    /// The `workflow_finished` data, if recorded.
    finished: Option<&'e Value>,
}

impl<'e> WorkflowRun<'e> {
    /// The Step Outcomes.
    fn steps(&self) -> &'e [Value] {
        self.workflow.get("steps").and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }

    /// How findings name it: `workflow <id> (seq <seq>)`.
    fn name(&self) -> String {
        format!("workflow {} (seq {})", self.id, self.seq)
    }

    /// The Subagent a step ran as, by the step's `agent_id`.
    fn subagent_of(&self, step: &Value) -> Option<&'e Value> {
        step.get("agent_id").and_then(Value::as_str).and_then(|id| self.subagents.get(id).copied())
    }

    /// The steps of each list a result gives (WF-RESULT), keyed as the result and its summary
    /// key them, read from the Step Outcomes.
    fn lists(&self) -> [(&'static str, Vec<&'e str>); 6] {
        let ids = |pick: &dyn Fn(&Value) -> bool| -> Vec<&'e str> {
            self.steps().iter().filter(|step| pick(step)).map(|step| text(step, "step_id")).collect()
        };
        let checkpoint = |status: &'static str| move |step: &Value| text(step, "checkpoint_status") == status;
        [
            ("held_steps", ids(&checkpoint("held"))),
            ("failed_steps", ids(&checkpoint("failed"))),
            ("partial_steps", ids(&checkpoint("partial"))),
            ("needs_orchestrator_steps", ids(&checkpoint("needs_orchestrator"))),
            ("timeout_steps", ids(&|step| text(step, "status") == "timed_out")),
            ("checkpoint_ready_steps", ids(&checkpoint("checkpoint_ready"))),
        ]
    }

    /// The status ADR 0026 gives a workflow whose steps ended as its Step Outcomes say.
    fn derived_status(&self) -> &'static str {
        let steps = self.steps();
        let any = |pick: &dyn Fn(&Value) -> bool| steps.iter().any(pick);
        let checkpoint = |status: &'static str| move |step: &Value| text(step, "checkpoint_status") == status;
        if !steps.is_empty() && steps.iter().all(checkpoint("checkpoint_ready")) {
            "completed"
        } else if any(&|step| text(step, "status") == "timed_out" || text(step, "held_reason") == "workflow_timeout") {
            "timed_out"
        } else if any(&checkpoint("needs_orchestrator")) {
            "needs_orchestrator"
        } else if any(&checkpoint("checkpoint_ready")) || any(&checkpoint("partial")) {
            "partial"
        } else {
            "failed"
        }
    }
}

/// A string field of a JSON object, `""` when absent.
fn text<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The strings of an array field of a JSON object, none when absent.
fn strings<'v>(value: &'v Value, key: &str) -> Vec<&'v str> {
    value.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

/// Every `run_workflow` result of the Log, in order.
fn workflow_runs<'e>(evidence: &'e Evidence) -> Vec<WorkflowRun<'e>> {
    let mut runs = Vec::new();
    let mut subagents: HashMap<&str, &Value> = HashMap::new();
    let mut graphs: HashMap<&str, &[Value]> = HashMap::new();
    let mut finished: HashMap<&str, &Value> = HashMap::new();
    for line in &evidence.lines {
        match line.kind.known() {
            Some(EventType::SubagentEvent) => {
                if let Some(id) = line.str_field("subagent_id") {
                    subagents.insert(id, &line.data);
                }
            }
            Some(EventType::WorkflowEvent) => {
                let Some(id) = line.str_field("workflow_id") else { continue };
                match line.str_field("kind") {
                    Some("workflow_started") => {
                        let steps = line.data.pointer("/graph/steps").and_then(Value::as_array);
                        graphs.insert(id, steps.map_or(&[], Vec::as_slice));
                        finished.remove(id);
                    }
                    Some("workflow_finished") => {
                        finished.insert(id, &line.data);
                    }
                    _ => {}
                }
            }
            Some(EventType::ToolResult) => {
                let Some(workflow) = line.data.get("workflow").filter(|workflow| workflow["steps"].is_array()) else {
                    continue;
                };
                let id = text(workflow, "workflow_id");
                runs.push(WorkflowRun {
                    seq: line.seq.unwrap_or_default(),
                    id,
                    output: line.str_field("output").unwrap_or_default(),
                    workflow,
                    subagents: subagents.clone(),
                    graph: graphs.get(id).copied().unwrap_or_default(),
                    finished: finished.get(id).copied(),
                });
            }
            _ => {}
        }
    }
    runs
}

/// Each request with its dialect-neutral reading, in order.
fn read_requests<'e>(evidence: &'e Evidence) -> impl Iterator<Item = (&'e Request, Conversation<'e>)> {
    evidence.capture.requests.iter().zip(evidence.conversations.iter())
}

/// Each request with its reading and the messages in it that no earlier request of its run
/// carried. A run's requests grow, each carrying the messages of the one before it
/// ([`Conversation::run`]), so a rule that reads only these reads a long Session's messages
/// once, not once per request.
fn read_new_messages<'e>(
    evidence: &'e Evidence,
) -> impl Iterator<Item = (&'e Request, Conversation<'e>, &'e [Message])> {
    let mut read: BTreeMap<usize, usize> = BTreeMap::new();
    read_requests(evidence).map(move |(request, conversation)| {
        let seen = read.entry(conversation.run).or_default();
        let new = conversation.messages.get(*seen..).unwrap_or_default();
        *seen = (*seen).max(conversation.messages.len());
        (request, conversation, new)
    })
}

/// Whether each request rewrote its route's conversation, as a compaction does: its messages
/// (reasoning left out, which a model switch may drop) no longer start with those of the
/// previous request of its route (REPLAY-COMPACTION-KEEPS-PROMPT, REPLAY-COMPACTION-NO-PARTIAL).
/// A request that extends its run did not; only a request that starts a run is compared.
fn rewrites(evidence: &Evidence) -> Vec<bool> {
    let mut last: HashMap<&str, (usize, &[Message])> = HashMap::new();
    read_requests(evidence)
        .map(|(request, conversation)| {
            let rewritten = match last.get(request.route.as_str()) {
                Some((run, previous)) if *run != conversation.run => !starts_with(conversation.messages, previous),
                _ => false,
            };
            last.insert(&request.route, (conversation.run, conversation.messages));
            rewritten
        })
        .collect()
}

/// `messages` start with `prefix`, reasoning left out of both.
fn starts_with(messages: &[Message], prefix: &[Message]) -> bool {
    let spoken = |message: &&Message| !matches!(message, Message::Reasoning { .. });
    let mut messages = messages.iter().filter(spoken);
    prefix.iter().filter(spoken).all(|wanted| messages.next() == Some(wanted))
}

/// The Log's prompts (its `user_message` lines), to place a request in its turn: the turn of
/// the last prompt whose text the request carries. A run's requests grow, so a rule keeps the
/// latest prompt its run carries as it reads the run's new messages ([`Prompts::carried_by`]).
struct Prompts<'a> {
    /// Each prompt's index among the Log's lines, in order.
    lines: Vec<usize>,
    /// For each prompt text, the last prompt with it.
    last: HashMap<&'a str, usize>,
}

impl<'a> Prompts<'a> {
    fn of(lines: &'a [Line]) -> Prompts<'a> {
        let lines_at: Vec<usize> = (0..lines.len()).filter(|&at| lines[at].kind == EventType::UserMessage).collect();
        let last = lines_at
            .iter()
            .enumerate()
            .map(|(prompt, &at)| (lines[at].str_field("text").unwrap_or_default(), prompt))
            .collect();
        Prompts { lines: lines_at, last }
    }

    /// The last prompt whose text `message` carries, when it is a user message.
    fn carried_by(&self, message: &Message) -> Option<usize> {
        match message {
            Message::User { text } => self.last.get(text.as_str()).copied(),
            _ => None,
        }
    }
}

/// The findings of a rule that judges each carried message by itself (`judge` adds what it
/// finds in one message, after `request N `): a message's findings hold for every request that
/// carries it, so each is reported once, at the first request that carried it, naming the
/// later requests of its run that carried it again and how many copies a request held at most
/// (an agent that re-sends a failed attempt's text each retry piles copies up).
fn judge_messages<'e>(
    evidence: &'e Evidence,
    mut judge: impl FnMut(&'e Request, &'e Message, &mut Vec<String>),
) -> Vec<String> {
    let mut found: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    // Each finding of each run: the requests (1-based) that carried it, and its most copies.
    let mut reported: Vec<((usize, String), Vec<usize>, usize)> = Vec::new();
    for (idx, (request, conversation, new)) in read_new_messages(evidence).enumerate() {
        let found = found.entry(conversation.run).or_default();
        for message in new {
            judge(request, message, found);
        }
        let mut counted: Vec<(&String, usize)> = Vec::new();
        for what in found.iter() {
            match counted.iter_mut().find(|(known, _)| *known == what) {
                Some((_, copies)) => *copies += 1,
                None => counted.push((what, 1)),
            }
        }
        for (what, copies) in counted {
            let key = (conversation.run, what.clone());
            match reported.iter_mut().find(|(known, _, _)| *known == key) {
                Some((_, requests, most)) => {
                    requests.push(idx + 1);
                    *most = (*most).max(copies);
                }
                None => reported.push((key, vec![idx + 1], copies)),
            }
        }
    }
    reported
        .into_iter()
        .map(|((_, what), requests, most)| {
            let copies = if most > 1 { format!(", up to {most} copies in one request") } else { String::new() };
            match requests.as_slice() {
                [first] if most == 1 => format!("request {first} {what}"),
                [first] => format!("request {first} {what} ({most} copies)"),
                [first, later @ ..] => {
                    format!("request {first} {what} (carried again by {}{copies})", request_list(later))
                }
                [] => String::new(),
            }
        })
        .collect()
}

/// Request numbers as `request 3`, `requests 3 to 9` or `requests 3, 5 and 9`.
fn request_list(numbers: &[usize]) -> String {
    let consecutive = numbers.windows(2).all(|pair| pair[1] == pair[0] + 1);
    match numbers {
        [one] => format!("request {one}"),
        [first, _, .., last] if consecutive => format!("requests {first} to {last}"),
        [rest @ .., last] => {
            let rest: Vec<String> = rest.iter().map(ToString::to_string).collect();
            format!("requests {} and {last}", rest.join(", "))
        }
        [] => String::new(),
    }
}

/// Which scenario turn each Provider request belongs to: the turn the client had begun when it
/// arrived, as the driver told the mock; for a capture without that, the latest turn whose
/// prompt the request carries as user text (a request carries every earlier prompt too).
/// `None` without a scenario, for a request that carries no prompt of it, or for one of a
/// queued busy prompt's own turn.
fn request_turns(evidence: &Evidence) -> Vec<Option<usize>> {
    let Some(scenario) = evidence.scenario else { return vec![None; evidence.capture.requests.len()] };
    evidence
        .capture
        .requests
        .iter()
        .zip(evidence.conversations.iter())
        .map(|(request, conversation)| {
            // A child Session's request is not a turn's: only the root's are bound to turns.
            let root = request.route == gauntlet_mock_provider::ROOT;
            // A queued busy prompt's own turn comes after every scenario turn: no turn's.
            if root && request.turn.is_some_and(|turn| turn >= scenario.turns.len()) {
                return None;
            }
            request.turn.filter(|_| root).or_else(|| {
                let texts: Vec<&str> = conversation.user_texts().collect();
                scenario.turns.iter().rposition(|turn| texts.iter().any(|text| text.contains(turn.prompt.as_str())))
            })
        })
        .collect()
}

/// The scripted response that answered a request, if the script answered it.
fn served<'a>(evidence: &Evidence<'a>, request: &Request) -> Option<&'a Response> {
    if request.route != gauntlet_mock_provider::ROOT {
        return None;
    }
    evidence.root_response(request.response_index?)
}

/// One response the script streamed to the agent.
#[derive(Debug, Clone, PartialEq)]
struct Streamed {
    /// The text deltas the agent received from it (all of them for a clean response).
    text: String,
    /// It ended cleanly (`response.completed` or `response.incomplete`), read to its end.
    clean: bool,
}

/// What the script streamed for each scenario turn, in request order: the responses served to
/// the requests that belong to the turn (by the prompt they carry last, [`request_turns`]),
/// whichever turn of the script they were written for. Empty without a scenario.
fn streamed_per_turn(evidence: &Evidence) -> Vec<Vec<Streamed>> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    let mut turns = vec![Vec::new(); scenario.turns.len()];
    for (index, (request, turn)) in evidence.capture.requests.iter().zip(request_turns(evidence)).enumerate() {
        if let (Some(turn), Some(response)) = (turn, served(evidence, request)) {
            // Clean only if the agent read it to its end: one it closed (a cancel, its own
            // timeout) streamed only part of it, never a finished answer.
            let ended = evidence.capture.timings.get(index).and_then(|timing| timing.ended);
            let cut = ended.is_some_and(|ended| ended.how != gauntlet_mock_provider::StreamEnd::Finished);
            turns[turn].push(Streamed { text: response.visible_text(), clean: !response.fails() && !cut });
        }
    }
    turns
}

/// The text of every `agent_message_chunk` the client was shown during a prompt.
fn shown_text(exchange: &Exchange) -> String {
    shown_chunks(exchange).concat()
}

/// The text of each `agent_message_chunk` shown during a prompt, in order.
fn shown_chunks<'a>(exchange: &Exchange<'a>) -> Vec<&'a str> {
    exchange.updates.iter().filter_map(|update| chunk_text(update, "agent_message_chunk")).collect()
}

/// One `session/prompt` in a transcript: the request, its answer and the updates between.
#[derive(Debug)]
pub(crate) struct Exchange<'a> {
    /// The prompt's text.
    text: String,
    /// Sent while another prompt of the same Session was still unanswered.
    busy: bool,
    /// The answer, if one came.
    answer: Option<&'a Value>,
    /// Where in the transcript the answer came.
    answered_at: Option<usize>,
    /// `session/update` payloads that arrived while it was the running prompt.
    updates: Vec<&'a Value>,
}

/// The prompts of a transcript, in order.
pub(crate) fn exchanges(transcript: &[Value]) -> Vec<Exchange<'_>> {
    let mut exchanges: Vec<Exchange> = Vec::new();
    // Each prompt's request id (its JSON text), first use kept: a long Session has many.
    let mut ids: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    // The prompt the client waits on, and the one whose updates these are: after the running
    // prompt's answer, a prompt the agent queued while it ran (still unanswered) streams its own.
    let mut running: Option<usize> = None;
    let mut streaming: Option<usize> = None;
    let mut connection_start = 0;
    for (at, entry) in transcript.iter().enumerate() {
        let Some(message) = entry.get("message") else { continue };
        let from_client = entry.get("from").and_then(Value::as_str) == Some("client");
        if from_client && message.get("method").and_then(Value::as_str) == Some("initialize") {
            // A new connection: request ids start over.
            ids.clear();
            (running, streaming, connection_start) = (None, None, exchanges.len());
        }
        if from_client && message.get("method").and_then(Value::as_str) == Some("session/prompt") {
            let text = message.pointer("/params/prompt/0/text").and_then(Value::as_str).unwrap_or_default();
            let busy = running.is_some();
            exchanges.push(Exchange {
                text: text.to_owned(),
                busy,
                answer: None,
                answered_at: None,
                updates: Vec::new(),
            });
            let id = message.get("id").unwrap_or(&Value::Null).to_string();
            ids.entry(id).or_insert(exchanges.len() - 1);
            if !busy {
                running = Some(exchanges.len() - 1);
                streaming = running;
            }
        } else if !from_client && let Some(update) = message.pointer("/params/update") {
            if let Some(idx) = streaming {
                exchanges[idx].updates.push(update);
            }
        } else if !from_client
            && message.get("method").is_none()
            && let Some(&idx) = message.get("id").and_then(|id| ids.get(&id.to_string()))
        {
            // An answer: JSON-RPC ids are per direction, so an agent's own request
            // (`session/request_permission` with `id: 3`) never answers the client's prompt 3.
            exchanges[idx].answer = Some(message);
            exchanges[idx].answered_at = Some(at);
            if running == Some(idx) {
                running = None;
                let queued = (idx + 1..exchanges.len()).find(|&later| exchanges[later].answer.is_none());
                streaming = queued.filter(|&later| later >= connection_start);
            } else if streaming == Some(idx) {
                streaming = None;
            }
        }
    }
    exchanges
}

/// The text of a content-chunk update of the given kind.
fn chunk_text<'a>(update: &'a Value, kind: &str) -> Option<&'a str> {
    (update.get("sessionUpdate").and_then(Value::as_str) == Some(kind))
        .then(|| update.pointer("/content/text").and_then(Value::as_str))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What only a run has, beyond a Log: requests, transcripts, answers, the script, the clock.
    const RUN_EVIDENCE: [&str; 15] = [
        "capture.requests",
        "read_requests(",
        "read_new_messages(",
        "judge_messages(",
        "capture.acp",
        "capture.reported",
        "capture.timings",
        "capture.cancels",
        "capture.unmatched",
        "capture.unconsumed",
        "evidence.scenario",
        "served(",
        "request_turns(",
        "driven_turns(",
        "exchanges(",
    ];

    /// A rule that names run evidence but needs only a Log all the same, and why.
    const EXCEPTIONS: [(&str, &str); 1] =
        [("terminal_evidence", "reads `reported` only to count the turns this run drove; a bare Log drove none")];

    /// After the running prompt's answer, a prompt the agent queued while it ran streams its
    /// own updates; a queued prompt never answered does not make the next prompt busy.
    #[test]
    fn a_queued_prompt_gets_the_updates_after_the_running_answer() {
        use super::fixture::{chunk, entry, prompt};
        let answer = |id: i64| serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": "end_turn"}});
        let queued = [
            entry("client", prompt(1, "one")),
            entry("agent", chunk("agent_message_chunk", "a")),
            entry("client", prompt(2, "two")),
            entry("agent", answer(1)),
            entry("agent", chunk("agent_message_chunk", "b")),
            entry("agent", answer(2)),
        ];
        let found = exchanges(&queued);
        assert_eq!(
            (shown_text(&found[0]), shown_text(&found[1]), found[1].busy),
            ("a".to_owned(), "b".to_owned(), true)
        );
        let folded = [
            entry("client", prompt(1, "one")),
            entry("client", prompt(2, "two")),
            entry("agent", answer(1)),
            entry("client", prompt(3, "three")),
            entry("agent", chunk("agent_message_chunk", "c")),
            entry("agent", answer(3)),
        ];
        let found = exchanges(&folded);
        assert!(!found[2].busy);
        assert_eq!((shown_text(&found[1]), shown_text(&found[2])), (String::new(), "c".to_owned()));
    }
    /// JSON-RPC ids are per direction: the agent's `session/request_permission` with the id of
    /// the running prompt is a request of its own, not the prompt's answer (issue 31: a false
    /// ACP-ANSWER-SHOWN when the fourth permission of a turn took id 3).
    #[test]
    fn an_agent_request_with_a_prompt_id_does_not_answer_the_prompt() {
        use super::fixture::{chunk, entry, prompt};
        let permission = serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "session/request_permission",
            "params": {"sessionId": "s", "toolCall": {"toolCallId": "c"}, "options": []}});
        let answer = serde_json::json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}});
        let transcript = [
            entry("client", prompt(3, "one")),
            entry("agent", permission),
            entry("agent", chunk("agent_message_chunk", "done")),
            entry("agent", answer),
        ];
        let found = exchanges(&transcript);
        assert_eq!(found[0].answered_at, Some(3));
        assert_eq!(shown_text(&found[0]), "done");
    }

    #[test]
    fn log_only_is_exactly_the_rules_that_read_only_logs() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/judge/invariants");
        for invariant in ALL {
            let text = std::fs::read_to_string(dir.join(format!("{}.rs", invariant.name))).unwrap();
            let rule = text.split("#[cfg(test)]").next().unwrap();
            let reads_run = RUN_EVIDENCE.iter().any(|needle| rule.contains(needle))
                && !EXCEPTIONS.iter().any(|(name, _)| *name == invariant.name);
            let listed = invariant.scope == Scope::Log;
            assert_eq!(
                listed, !reads_run,
                "{}: of Scope::Log = {listed}, reads run evidence = {reads_run}",
                invariant.name
            );
        }
    }
}

#[cfg(test)]
pub(crate) mod fixture {
    //! Hand-made captures for invariant tests.

    use serde_json::{Value, json};

    use crate::capture::{Capture, Request};
    use crate::judge::Evidence;

    /// A Log of one Turn whose clean answer the Provider cut short for `reason`.
    pub fn truncated_answer(reason: &str) -> Capture {
        let truncation = json!({"reason": reason});
        capture(
            &[
                ("user_message", json!({"text": "q"})),
                ("assistant_message", json!({"text": "a", "metadata": {"output_truncation": truncation}})),
            ],
            &[],
        )
    }

    /// A Log of one honest `failed` workflow `wf_1` (seq 3 its result): step `a` ran as
    /// Subagent `sub_1`, which failed (`provider_error`, 7 ms), and step `b`, which depends on
    /// it, is held. `edit` changes the `tool_result`'s data (`output`, `workflow`) before it is
    /// logged; `workflow_finished` records the status it leaves.
    pub fn failed_workflow(edit: impl FnOnce(&mut Value)) -> Capture {
        let step_a = json!({"step_id": "a", "agent_id": "sub_1", "child_session_id": "wf_1-a", "wave": 1,
            "status": "failed", "subagent_status": "failed", "checkpoint_status": "failed", "summary": "boom",
            "elapsed_ms": 7, "error": {"kind": "provider_error", "details": "boom"},
            "safe_next_actions": ["inspect_step_failure", "retry_failed_step"]});
        let step_b = json!({"step_id": "b", "status": "held", "checkpoint_status": "held",
            "held_reason": "dependency_not_checkpoint_ready", "safe_next_actions": ["rerun_after_dependencies_checkpoint_ready"]});
        let summary = json!({"steps": 2, "waves": 1, "checkpoint_ready_steps": 0, "held_steps": 1, "failed_steps": 1,
            "timeout_steps": 0, "partial_steps": 0, "needs_orchestrator_steps": 0});
        let workflow = json!({"workflow_id": "wf_1", "status": "failed", "ok": false, "steps": [step_a, step_b],
            "waves": [["a"]], "held_steps": ["b"], "failed_steps": ["a"], "partial_steps": [],
            "needs_orchestrator_steps": [], "timeout_steps": [], "summary": summary,
            "safe_next_actions": ["retry_failed_steps", "rerun_after_dependencies_checkpoint_ready"],
            "proof_states": ["summaries_collected"],
            "unresolved_seam_obligations": [{"step_id": "b", "depends_on": "a", "dependency_checkpoint_status": "failed"}]});
        let output = "Workflow wf_1 failed: 0 checkpoint-ready, 1 failed, 0 timed out, 1 held, 0 partial, 0 needing orchestrator.";
        let mut result = json!({"call_id": "c", "output": output, "workflow": workflow});
        edit(&mut result);
        let graph = json!({"steps": [{"id": "a", "depends_on": []}, {"id": "b", "depends_on": ["a"]}]});
        let finished = json!({"kind": "workflow_finished", "workflow_id": "wf_1", "status": result["workflow"]["status"], "ok": false});
        capture(
            &[
                (
                    "subagent_event",
                    json!({"subagent_id": "sub_1", "status": "failed", "reason": "provider_error",
                        "child_session_id": "wf_1-a", "summary": "boom", "elapsed_ms": 7}),
                ),
                ("workflow_event", json!({"kind": "workflow_started", "workflow_id": "wf_1", "graph": graph})),
                ("workflow_event", finished),
                ("tool_result", result),
            ],
            &[],
        )
    }

    /// A capture whose Log holds `events` as `(type, data)` with seqs from 0.
    pub fn capture(events: &[(&str, Value)], bodies: &[Value]) -> Capture {
        let log = events
            .iter()
            .enumerate()
            .map(|(seq, (kind, data))| {
                json!({"data": data, "id": format!("{seq:016x}"), "seq": seq, "session_id": "s", "ts": "t", "type": kind})
                    .to_string()
            })
            .collect();
        Capture { log, requests: requests(bodies.to_vec()), ..Capture::default() }
    }

    /// Runs one invariant on a capture.
    pub fn check(invariant: super::Invariant, capture: &Capture) -> Vec<String> {
        (invariant.check)(&Evidence::new(capture))
    }

    /// A user input item.
    pub fn user(text: &str) -> Value {
        json!({"role": "user", "content": [{"type": "input_text", "text": text}]})
    }

    /// An assistant input item.
    pub fn assistant(text: &str) -> Value {
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
    }

    /// A transcript entry.
    pub fn entry(from: &str, message: Value) -> Value {
        json!({"from": from, "message": message})
    }

    /// A `session/update` notification with an agent text chunk.
    pub fn chunk(kind: &str, text: &str) -> Value {
        json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}}}})
    }

    /// A `session/prompt` request.
    pub fn prompt(id: i64, text: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": text}]}})
    }

    /// A request body with these input items.
    pub fn body(input: Vec<Value>) -> Value {
        json!({"model": "m", "input": input, "store": false, "stream": true})
    }

    /// A scenario from TOML text.
    pub fn scenario(text: &str) -> crate::scenario::Scenario {
        crate::scenario::parse(text, std::path::Path::new("fixture.toml")).unwrap()
    }

    /// Runs one invariant on a capture of `scenario`.
    pub fn check_played(
        invariant: super::Invariant,
        capture: &Capture,
        scenario: &crate::scenario::Scenario,
    ) -> Vec<String> {
        (invariant.check)(&Evidence::of_scenario(capture, scenario))
    }

    /// An agent without a Log, its `read` mapped to `exec_command`: the scripted calls and
    /// their results as its requests carry them, and a scenario holding the mapping.
    pub fn mapped(outputs: &[&str], acp: Vec<Value>) -> (crate::capture::Capture, crate::scenario::Scenario) {
        use crate::tool_map::{AbstractTool, MappedCall, ToolMapping};
        let mut scenario = scenario(
            "title = \"t\"\n[workspace]\n\"a.txt\" = \"alpha\"\n[[turn]]\nprompt = \"q\"\nrespond = [{ calls = [{ name = \"read\", args = { path = \"a.txt\" } }] }, { text = [\"x\"] }]\n",
        );
        let read: ToolMapping = toml::from_str(
            "name = \"exec_command\"\nargs = { cmd = \"cat {path}\" }\nok = \"code 0\"\ncontent_after = \"Output:\\n\"\n",
        )
        .unwrap();
        scenario.tools.insert(AbstractTool::Read, read);
        let rendered = json!({"cmd": "cat a.txt"});
        let mut input = vec![user("q")];
        for (n, output) in outputs.iter().enumerate() {
            let id = format!("c{}", n + 1);
            input.push(json!({"type": "function_call", "call_id": id, "name": "exec_command", "arguments": rendered.to_string()}));
            input.push(json!({"type": "function_call_output", "call_id": id, "output": output}));
        }
        let mut capture = capture(&[], &[body(vec![user("q")]), body(input)]);
        capture.log.clear();
        capture.acp = acp;
        capture.reported.push(crate::capture::Reported { stop_reason: Some("end_turn".into()), error: None });
        capture.mapped_calls = vec![MappedCall {
            tool: AbstractTool::Read,
            args: json!({"path": "a.txt"}),
            name: "exec_command".into(),
            rendered,
        }];
        (capture, scenario)
    }

    /// Requests of the root answered by script responses 0, 1, 2... in order.
    pub fn requests(bodies: Vec<Value>) -> Vec<Request> {
        Request::chained(bodies.into_iter().enumerate().map(|(idx, body)| ("root".to_owned(), Some(idx), body)))
    }
}

/// Rules judged on every Log of a run.
#[cfg(test)]
mod per_log {
    use serde_json::json;

    use super::fixture::capture;
    use super::*;

    /// A child Log, as lines, from `(type, data)` events.
    fn child_log(events: &[(&str, Value)]) -> Vec<String> {
        capture(events, &[]).log
    }

    fn messages(findings: &[Finding]) -> Vec<String> {
        findings
            .iter()
            .map(|finding| format!("{}: {}", finding.requirement.as_deref().unwrap_or("-"), finding.message))
            .collect()
    }

    #[test]
    fn child_logs_are_held_to_the_log_rules_and_named() {
        let failed = json!({"terminal_status": "failed", "error_kind": "network", "message": "m"});
        let mut run = capture(&[], &[]);
        run.children.insert(
            "sub_1".into(),
            child_log(&[
                ("user_message", json!({"text": "t"})),
                ("turn_failed", failed.clone()),
                ("turn_failed", failed),
            ]),
        );
        run.children.insert("sub_2".into(), child_log(&[("user_message", json!({"text": "t"}))]));
        let found = messages(&check_all(&Evidence::new(&run)));
        assert!(
            found.contains(
                &"TURN-TERMINAL-EVIDENCE: child Session `sub_1`: turn at seq 0 has 2 turn_failed events".into()
            ),
            "{found:#?}"
        );
        assert!(
            found.contains(
                &"TURN-TERMINAL-EVIDENCE: child Session `sub_2`: turn at seq 0 has no terminal evidence in the Log"
                    .into()
            ),
            "{found:#?}"
        );
    }

    #[test]
    fn a_detached_child_may_end_without_evidence() {
        let detached =
            json!({"event": "detached", "status": "detached", "subagent_id": "sub_1", "child_session_id": "sub_1"});
        let mut run = capture(&[("subagent_event", detached)], &[]);
        run.children.insert("sub_1".into(), child_log(&[("user_message", json!({"text": "t"}))]));
        let found = messages(&check_all(&Evidence::new(&run)));
        assert!(!found.iter().any(|message| message.contains("child Session `sub_1`")), "{found:#?}");
    }
}
