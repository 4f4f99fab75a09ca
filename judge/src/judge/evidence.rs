//! The Evidence every Turn rule reads: a Capture with its Log parsed and audited once, its
//! requests read in their dialect, its live prompts read once, and how each turn the client
//! drove ended ([`Evidence::driven_turns`]: from the Log, or else from the script and the wire).
//! It stands below the readings and the rules, which take it, and knows none of them.

use gauntlet_agent::EventType;
use gauntlet_agent::TerminalStatus;
use gauntlet_mock_provider::{After, ROOT, Response, StreamEnd};
use serde_json::Value;

use crate::audit::{self, Audit};
use crate::capture::Capture;
use crate::judge::conversations::Conversations;
use crate::judge::transcript;
use crate::log_line::{self, Line};
use crate::scenario::{Scenario, Trigger};

/// Whose Log a piece of evidence holds: the root Session the client drove, or a child Session
/// (a Subagent or a workflow step) whose one Turn its parent ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogRole {
    /// The root Session: its last turns are the ones the client prompted.
    Root,
    /// A child Session; `detached` when its parent recorded it `detached` (no live runtime
    /// handle after a restart), so its last Turn may never have ended (SUB-DETACHED).
    Child {
        /// The parent recorded it `detached`.
        detached: bool,
    },
}

/// A Capture with its Log parsed and audited once, for every check to share.
#[derive(Debug)]
pub struct Evidence<'a> {
    /// The capture as the rules read it: its ACP transcripts in their v1 reading
    /// ([`crate::judge::v1_reading::of_capture`]), so every ACP rule judges a v2 agent as it judges a v1 one.
    pub capture: &'a Capture,
    /// The live transcript as the agent sent it, which ACP-SCHEMA alone reads: it judges the
    /// messages themselves, each against its own version's types.
    pub raw_acp: &'a [Value],
    /// The `session/load` (v2: `session/resume` with a replay) transcript as the agent sent it.
    pub raw_acp_load: &'a [Value],
    /// The readable Log lines.
    pub lines: Vec<Line>,
    /// Terminal states derived from the Log.
    pub audit: Audit,
    /// The scenario that was played, when known: its script says which outcome each turn was
    /// forced into, so an implementation without a gauntlet Log is judged on the wire.
    pub scenario: Option<&'a Scenario>,
    /// Whose Log this is.
    pub role: LogRole,
    /// Each Provider request read in the capture's dialect, in the order of
    /// `capture.requests` (empty for a body that is not a request of the dialect): the one
    /// form every wire rule reads, whatever the dialect.
    pub conversations: Conversations,
    /// The scenario's root responses in the script's order ([`Scenario::root_responses`]),
    /// indexed by a request's `response_index`: looked up per request, never counted to.
    root_responses: Vec<&'a Response>,
    /// The live transcript's prompts, read once for every rule that reads them.
    exchanges: std::cell::OnceCell<Vec<transcript::Exchange<'a>>>,
}

/// How one turn the client drove ended, and who says so.
#[derive(Debug, Clone, PartialEq)]
pub struct DrivenTurn {
    /// Its terminal state; `None` when the Log holds no terminal evidence for it.
    pub status: Option<TerminalStatus>,
    /// The Provider's truncation reason for a truncated clean answer (`max_output_tokens`).
    pub truncation: Option<String>,
    /// `"the Log shows"` or `"the script forces"`, for messages.
    pub source: &'static str,
    /// What the answer that ended it gave the agent to show.
    pub answer: LastAnswer,
}

/// The answer that ended a driven turn, as the agent was given it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LastAnswer {
    /// Scripted, with something to show or run (or none the judge knows of: a Log's turn).
    #[default]
    Scripted,
    /// Scripted, and empty: a clean end with no text and no call. The agent may show its own
    /// notice and answer `end_turn`, or answer an error: either tells the truth.
    Empty,
    /// An empty answer gauntlet invented past the script (after a truncation, a fault or the
    /// turn's tool calls), which the agent may take as a completion or an error: no rule judges
    /// how such a turn ended (MOCK-UNPLACED names the request).
    Invented,
}

impl<'a> Evidence<'a> {
    /// Parses and audits a capture.
    pub fn new(capture: &'a Capture) -> Evidence<'a> {
        let (lines, unreadable) = log_line::parse_lines(&capture.log);
        let audit = audit::audit_parsed(&lines, unreadable, &capture.children);
        let conversations = Conversations::read(capture.dialect, &capture.requests);
        let root_responses = Vec::new();
        Evidence {
            capture,
            raw_acp: &capture.acp,
            raw_acp_load: &capture.acp_load,
            lines,
            audit,
            scenario: None,
            role: LogRole::Root,
            conversations,
            root_responses,
            exchanges: std::cell::OnceCell::new(),
        }
    }

    /// This evidence, its capture being the v1 reading of `raw` ([`crate::judge::v1_reading::of_capture`]):
    /// ACP-SCHEMA reads `raw`'s transcripts.
    pub fn with_raw(self, raw: &'a Capture) -> Evidence<'a> {
        Evidence { raw_acp: &raw.acp, raw_acp_load: &raw.acp_load, ..self }
    }

    /// Parses and audits the capture of a child Session (see [`Capture::child`]).
    pub fn of_child(capture: &'a Capture, detached: bool) -> Evidence<'a> {
        Evidence { role: LogRole::Child { detached }, ..Evidence::new(capture) }
    }

    /// The index of the first turn of the Log that this run drove to its end: every turn must
    /// end from there on. For the root, the turns the client prompted (a preloaded Log may hold
    /// a turn a crash cut short); for a child, its Turn, unless its parent lost it.
    pub fn first_driven_turn(&self) -> usize {
        let n_turns = self.audit.turns.len();
        match self.role {
            LogRole::Root => n_turns.saturating_sub(self.capture.reported.len()),
            LogRole::Child { detached: false } => 0,
            LogRole::Child { detached: true } => n_turns,
        }
    }

    /// Parses and audits a capture of `scenario`.
    pub fn of_scenario(capture: &'a Capture, scenario: &'a Scenario) -> Evidence<'a> {
        Evidence {
            scenario: Some(scenario),
            root_responses: scenario.root_responses().collect(),
            ..Evidence::new(capture)
        }
    }

    /// The prompts of the live ACP transcript, each with its answer and updates.
    pub(crate) fn exchanges(&self) -> &[transcript::Exchange<'a>] {
        self.exchanges.get_or_init(|| transcript::exchanges(&self.capture.acp))
    }

    /// The scripted root response at `index` of the script's order, if there is one.
    pub fn root_response(&self, index: usize) -> Option<&'a Response> {
        self.root_responses.get(index).copied()
    }

    /// The last `count` turns, the ones the client drove: from the Log when the implementation
    /// keeps one, else the outcome the scenario's script forces (its `expect`), unless the
    /// client cancelled the turn when its patience ran out (`interrupted`) or the outcome rests
    /// on a knob the agent is not told (read from the wire, [`crate::scenario::Knobs::untold`]).
    pub fn driven_turns(&self, count: usize) -> Vec<DrivenTurn> {
        if self.capture.log.is_empty()
            && let Some(scenario) = self.scenario
        {
            let first = scenario.turns.len().saturating_sub(count);
            return scenario.turns[first..]
                .iter()
                .enumerate()
                .map(|(offset, turn)| {
                    let impatient =
                        self.capture.cancels.iter().any(|cancel| cancel.impatient && cancel.turn == first + offset);
                    if impatient {
                        return DrivenTurn {
                            status: Some(TerminalStatus::Interrupted),
                            truncation: None,
                            source: "the client cancelled it when its patience ran out",
                            answer: LastAnswer::Scripted,
                        };
                    }
                    let cancelled = self.capture.cancels.iter().any(|cancel| cancel.turn == first + offset);
                    if let Some(given_up) = self.given_up_for_busy_prompt(first + offset).filter(|_| !cancelled) {
                        return given_up;
                    }
                    if turn.cancel == Some(Trigger::RetryWait) && !cancelled {
                        // The agent never waited to retry, so the client never cancelled.
                        return self.wire_turn(
                            first + offset,
                            TerminalStatus::Completed,
                            "the wire shows: the agent never waited to retry, so the client never cancelled",
                        );
                    }
                    if let Some(stopped) = self.stopped_at_fault(first + offset).filter(|_| !cancelled) {
                        return stopped;
                    }
                    if let Some(answered) = self.answered_past_script(first + offset).filter(|_| !cancelled) {
                        return answered;
                    }
                    let untold =
                        scenario.knobs.as_ref().and_then(|knobs| knobs.untold(turn, scenario.config.max_retries));
                    match untold {
                        Some(source) => self.wire_turn(first + offset, turn.expect, source),
                        None => DrivenTurn {
                            status: Some(turn.expect),
                            truncation: turn
                                .respond
                                .last()
                                .and_then(Response::truncation)
                                .filter(|_| turn.expect == TerminalStatus::Completed)
                                .map(str::to_owned),
                            source: "the script forces",
                            answer: match turn.respond.last() {
                                Some(last) if turn.expect == TerminalStatus::Completed && last.is_empty_answer() => {
                                    LastAnswer::Empty
                                }
                                _ => LastAnswer::Scripted,
                            },
                        },
                    }
                })
                .collect();
        }
        let turns = &self.audit.turns[self.audit.turns.len().saturating_sub(count)..];
        turns
            .iter()
            .map(|turn| DrivenTurn {
                status: turn.terminal_status,
                truncation: turn.evidence_seqs.last().and_then(|seq| self.truncation(*seq)),
                source: "the Log shows",
                answer: LastAnswer::Scripted,
            })
            .collect()
    }

    /// Turn `turn` when its agent stopped at a fault while the script had more responses for it
    /// (it gave up retrying before its budget was spent, which a budget allows): it failed, as
    /// the wire shows, whatever the script's last response would have made of it.
    fn stopped_at_fault(&self, turn: usize) -> Option<DrivenTurn> {
        let scenario = self.scenario?;
        let at = self.capture.requests[self.last_request(turn)?].response_index?;
        let end: usize = scenario.turns.iter().take(turn + 1).map(|turn| turn.respond.len()).sum();
        let response = self.root_response(at).filter(|response| response.fails() && at + 1 < end)?;
        let partial = response.status.is_none() && !response.visible_text().is_empty();
        Some(DrivenTurn {
            status: Some(if partial { TerminalStatus::PartialFailed } else { TerminalStatus::Failed }),
            truncation: None,
            source: "the wire shows: the agent stopped at a fault before the script's last response",
            answer: LastAnswer::Scripted,
        })
    }

    /// Turn `turn` when the agent asked more than the script had for it and the mock answered
    /// its last request cleanly: a continuation given the rest of a cut response completed as
    /// the wire shows; when the mock's answer was an empty one of its own making, how the turn
    /// ended rests on it and is not judged (issue 31: an agent may honestly call an empty
    /// answer an error). The extra requests are MOCK-UNPLACED's and the retry rules'.
    fn answered_past_script(&self, turn: usize) -> Option<DrivenTurn> {
        let index = self.last_request(turn)?;
        let request = &self.capture.requests[index];
        request.response_index.is_none().then_some(())?;
        let truncation = self.answered_cleanly(index)?;
        if self.invented_empty(request.unplaced.as_ref()?) {
            let source =
                "not judged: the script had run out, and the mock invented an empty answer to the agent's last request";
            return Some(DrivenTurn { status: None, truncation: None, source, answer: LastAnswer::Invented });
        }
        let source = "the wire shows: the script had run out, and the mock answered the agent's last request cleanly";
        Some(DrivenTurn { status: Some(TerminalStatus::Completed), truncation, source, answer: LastAnswer::Scripted })
    }

    /// Whether the mock answered a request it could not place with an empty answer of its own
    /// making: after the turn's answer (a request of the agent's own: a compaction's summary
    /// call, which an empty summary fails), a truncation or the turn's tool calls, or with no
    /// script at all. After a fault or a refusal the mock answers as the script did.
    fn invented_empty(&self, after: &After) -> bool {
        match after {
            After::Fault { .. } | After::Refused => false,
            After::Answer | After::ToolCalls | After::Truncated(_) | After::Nothing => true,
            After::Continuation { of, given_up } => {
                self.root_response(*of).is_none_or(|faulted| faulted.rest(*given_up).text.is_empty())
            }
        }
    }

    /// Turn `turn` when a prompt came while it ran and the agent gave the running turn up for
    /// it: answered it `cancelled` though the client never cancelled (gemini-cli does), so it
    /// was interrupted; or closed the turn's stream itself and answered an error, so it
    /// failed, as the wire shows. ACP has a client wait for a prompt to complete before it
    /// sends the next, so whatever an agent does with the running turn then is no outcome the
    /// script can force (ACP-BUSY-AFTER-RUNNING judges leaving it alone).
    fn given_up_for_busy_prompt(&self, turn: usize) -> Option<DrivenTurn> {
        let scenario = self.scenario?;
        scenario.turns.get(turn)?.busy_prompt?;
        let answered = (turn + self.capture.reported.len()).checked_sub(scenario.turns.len())?;
        let answer = self.capture.reported.get(answered)?;
        let closed = || {
            let last = self.last_request(turn);
            let ended = last.and_then(|index| self.capture.timings.get(index)).and_then(|timing| timing.ended);
            ended.is_some_and(|ended| ended.how == StreamEnd::ClientClosed)
        };
        let (status, source) = if answer.stop_reason.as_deref() == Some("cancelled") {
            (
                TerminalStatus::Interrupted,
                "the wire shows: the agent gave the running turn up for the prompt sent while it ran",
            )
        } else if answer.error.is_some() && closed() {
            (
                TerminalStatus::Failed,
                "the wire shows: the agent closed the running turn's stream for the prompt sent while it ran, and answered an error",
            )
        } else {
            return None;
        };
        Some(DrivenTurn { status: Some(status), truncation: None, source, answer: LastAnswer::Scripted })
    }

    /// The index of turn `turn`'s last request on the root route.
    fn last_request(&self, turn: usize) -> Option<usize> {
        self.capture.requests.iter().rposition(|request| request.route == ROOT && request.turn == Some(turn))
    }

    /// `Some(truncation)` when request `index` was answered cleanly and read to its end: by its
    /// scripted response, or by the empty clean one the mock gives a request it cannot place
    /// after the turn's answer.
    fn answered_cleanly(&self, index: usize) -> Option<Option<String>> {
        let request = &self.capture.requests[index];
        let ended = self.capture.timings.get(index).and_then(|timing| timing.ended);
        if !ended.is_some_and(|ended| ended.how == StreamEnd::Finished) {
            return None;
        }
        let Some(at) = request.response_index else {
            return request.unplaced.as_ref().filter(|after| after.answers_empty()).map(|_| None);
        };
        let response = self.root_response(at)?;
        (!response.fails()).then(|| response.truncation().map(str::to_owned))
    }

    /// How turn `turn` ended as the wire shows it, for a turn whose scripted outcome rests on a
    /// knob the agent is not told: `completed` when its last request was answered cleanly and
    /// read to its end (a stall that resumed, faults it outlasted), else a failure (`expected`
    /// when the script expects one, else `failed`): the agent gave up, or met a fault last.
    fn wire_turn(&self, turn: usize, expected: TerminalStatus, source: &'static str) -> DrivenTurn {
        let clean = self.last_request(turn).and_then(|index| self.answered_cleanly(index));
        match clean {
            Some(truncation) => {
                DrivenTurn { status: Some(TerminalStatus::Completed), truncation, source, answer: LastAnswer::Scripted }
            }
            None => DrivenTurn {
                status: Some(if expected == TerminalStatus::Completed { TerminalStatus::Failed } else { expected }),
                truncation: None,
                source,
                answer: LastAnswer::Scripted,
            },
        }
    }

    /// `metadata.output_truncation.reason` of the `assistant_message` at `seq`, if truncated.
    fn truncation(&self, seq: u64) -> Option<String> {
        let wanted = |line: &&Line| line.seq == Some(seq) && line.kind == EventType::AssistantMessage;
        // A Log's lines are in seq order, so the line is found by halving, called once per
        // turn; a Log out of order (a finding of its own) is searched line by line.
        let line = match self.lines.binary_search_by_key(&Some(seq), |line| line.seq) {
            Ok(at) => Some(&self.lines[at]).filter(wanted),
            Err(_) => self.lines.iter().find(wanted),
        }?;
        line.assistant_message()?.truncation.map(str::to_owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Request;
    use crate::judge::fixture::{body, scenario, user};
    use crate::judge::judge;

    /// An agent that stops retrying at a 429 its budget would have allowed it to retry failed
    /// that turn, as the wire shows; one that reached the script's answer is held to it.
    #[test]
    fn a_turn_the_agent_gave_up_at_a_fault_failed_whatever_the_script_would_have_made_of_it() {
        let played = scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"a\"\nexpect = \"interrupted\"\ncancel = \"first_delta\"\n\
             respond = [{ status = 429 }, { text = [\"x\", \"y\"], pause = { after = 5, ms = 60000 } }]\n",
        );
        let asked = |indices: &[usize]| {
            let served: Vec<_> =
                indices.iter().map(|index| ("root".to_owned(), Some(*index), body(vec![user("a")]))).collect();
            let mut capture = Capture { requests: Request::chained(served), ..Capture::default() };
            capture.requests.iter_mut().for_each(|request| request.turn = Some(0));
            capture
        };
        let gave_up = asked(&[0]);
        let turn = &Evidence::of_scenario(&gave_up, &played).driven_turns(1)[0];
        assert_eq!(
            (turn.status, turn.source),
            (
                Some(TerminalStatus::Failed),
                "the wire shows: the agent stopped at a fault before the script's last response"
            )
        );
        let went_on = asked(&[0, 1]);
        let turn = &Evidence::of_scenario(&went_on, &played).driven_turns(1)[0];
        assert_eq!((turn.status, turn.source), (Some(TerminalStatus::Interrupted), "the script forces"));
    }

    /// A continuation past the script rests on what the mock answered it: the rest of a cut
    /// response is the script's own text, so the turn completed as the wire shows; an empty
    /// answer the mock made up (nothing was kept back) leaves how the turn ended unjudged, and
    /// an agent that honestly calls it an error gets no ACP-STOP-REASON finding.
    #[test]
    fn a_turn_ended_on_an_invented_empty_answer_is_not_judged() {
        use crate::capture::Reported;
        use gauntlet_mock_provider::{Ended, Timing};
        let played = |cut: &str| {
            scenario(&format!(
                "title = \"t\"\n[[turn]]\nprompt = \"a\"\nexpect = \"partial_failed\"\n\
                 respond = [{{ text = [\"x\", \"y\"], {cut}then = \"disconnect\" }}]\n"
            ))
        };
        let continued = |given_up: bool| {
            let served = vec![
                ("root".to_owned(), Some(0), body(vec![user("a")])),
                ("root".to_owned(), None, body(vec![user("a"), user("go on")])),
            ];
            let mut capture = Capture { requests: Request::chained(served), ..Capture::default() };
            for request in &mut capture.requests {
                request.turn = Some(0);
            }
            capture.requests[1].unplaced = Some(After::Continuation { of: 0, given_up });
            let finished = Ended { at: std::time::Duration::ZERO, how: StreamEnd::Finished };
            capture.timings = vec![Timing { received: std::time::Duration::ZERO, ended: Some(finished) }; 2];
            capture.reported = vec![Reported { stop_reason: None, error: Some(serde_json::json!({"code": -32603})) }];
            capture
        };
        let capture = continued(false);
        let streamed_all = played("");
        let turn = &Evidence::of_scenario(&capture, &streamed_all).driven_turns(1)[0];
        assert!(turn.answer == LastAnswer::Invented && turn.status.is_none(), "{turn:?}");
        let verdict = judge("t", &streamed_all, &capture, Vec::new());
        assert!(verdict.findings.iter().all(|finding| finding.requirement.as_deref() != Some("ACP-STOP-REASON")));
        let kept_back = played("cut_after = 5, ");
        let turn = &Evidence::of_scenario(&capture, &kept_back).driven_turns(1)[0];
        assert_eq!((turn.status, turn.answer), (Some(TerminalStatus::Completed), LastAnswer::Scripted));
    }

    /// An agent that gives the running turn up when a second prompt comes (and answers it
    /// `cancelled`, though the client never cancelled) interrupted it, as the wire shows.
    #[test]
    fn a_turn_given_up_for_a_busy_prompt_was_interrupted_or_failed() {
        use crate::capture::Reported;
        let played = scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"a\"\nbusy_prompt = \"first_delta\"\n\
             respond = [{ text = [\"x\"] }]\nbusy_respond = [{ text = [\"y\"] }]\n",
        );
        let answered = |stop: &str| Capture {
            reported: vec![Reported { stop_reason: Some(stop.to_owned()), error: None }],
            ..Capture::default()
        };
        let given_up = answered("cancelled");
        let turn = &Evidence::of_scenario(&given_up, &played).driven_turns(1)[0];
        assert_eq!(turn.status, Some(TerminalStatus::Interrupted), "{}", turn.source);
        let finished = answered("end_turn");
        let turn = &Evidence::of_scenario(&finished, &played).driven_turns(1)[0];
        assert_eq!((turn.status, turn.source), (Some(TerminalStatus::Completed), "the script forces"));
        // It closed the running turn's stream itself and answered an error: it failed.
        use gauntlet_mock_provider::{Ended, Timing};
        let mut closed = Capture {
            reported: vec![Reported { stop_reason: None, error: Some(serde_json::json!({"code": -32603})) }],
            requests: Request::chained(vec![("root".to_owned(), Some(0), body(vec![user("a")]))]),
            ..Capture::default()
        };
        closed.requests[0].turn = Some(0);
        let ended = Ended { at: std::time::Duration::ZERO, how: StreamEnd::ClientClosed };
        closed.timings = vec![Timing { received: std::time::Duration::ZERO, ended: Some(ended) }];
        let turn = &Evidence::of_scenario(&closed, &played).driven_turns(1)[0];
        assert_eq!(turn.status, Some(TerminalStatus::Failed), "{}", turn.source);
    }

    /// A turn whose last request the mock answered cleanly past the script: after the turn's
    /// answer (the agent's own request) it completed, as the wire shows, whatever the script's
    /// `partial_failed`; with an empty answer the mock made up while the turn still waited for
    /// one, how it ended is not judged; a request refused past the cap leaves the script's.
    #[test]
    fn a_turn_the_mock_answered_cleanly_past_its_script_is_judged_on_what_it_was_told() {
        use std::time::Duration;

        use gauntlet_mock_provider::{After, Ended, Timing};
        let played = scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"a\"\nexpect = \"partial_failed\"\n\
             respond = [{ text = [\"x\"], then = \"eof\" }]\n",
        );
        let served = [0, 1].map(|index| ("root".to_owned(), (index == 0).then_some(0), body(vec![user("a")])));
        let mut capture = Capture { requests: Request::chained(served), ..Capture::default() };
        capture.requests.iter_mut().for_each(|request| request.turn = Some(0));
        let finished = Some(Ended { at: Duration::ZERO, how: StreamEnd::Finished });
        capture.timings = vec![Timing { received: Duration::ZERO, ended: finished }; 2];
        // An empty answer of the mock's making, even to a request after the turn's answer (a
        // compaction's summary call, which it fails), decides nothing.
        for after in [After::Answer, After::Nothing] {
            capture.requests[1].unplaced = Some(after);
            let turn = &Evidence::of_scenario(&capture, &played).driven_turns(1)[0];
            assert!(turn.answer == LastAnswer::Invented && turn.status.is_none(), "{}", turn.source);
        }
        capture.requests[1].unplaced = Some(After::Refused);
        let turn = &Evidence::of_scenario(&capture, &played).driven_turns(1)[0];
        assert_eq!((turn.status, turn.source), (Some(TerminalStatus::PartialFailed), "the script forces"));
    }
}
