//! WIRE-RETRY-BOUNDED, on the wire: an agent retries a request that met a fault (an HTTP error,
//! a stream that failed, or one it gave up on) at most as many times in a row, per kind of
//! fault, as its budget:
//! the scenario's `max_retries` for the reference and for an agent its profile passes it to,
//! the profile's own `retries` otherwise. The mock answers a retry with the same fault (the
//! provider is still failing), up to [`RETRY_CAP`] times in a row; an agent that goes past the cap
//! never stops by itself and is named whatever its budget.
//!
//! Also WIRE-RETRY-DOCUMENTED (a SHOULD, [`DOCUMENTED`]): where the profile quotes the agent's
//! own sentence documenting the budget it passes or states, going past that budget breaks the
//! agent's own word, quoted in the finding.

use gauntlet_mock_provider::{After, RETRY_CAP, ROOT, StreamEnd};

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::{request_turns, served};
use crate::scenario::{FaultKind, RetryBudget};

pub const INVARIANT: Invariant =
    Invariant { id: "WIRE-RETRY-BOUNDED", also: &[DOCUMENTED], name: "retries_bounded", applies: Scope::Run, check };

/// What going past a budget the agent documents breaks.
const DOCUMENTED: &str = "WIRE-RETRY-DOCUMENTED";

/// Each turn's retries past the budget; past a budget the agent documents, its own sentence.
fn check(evidence: &Evidence) -> Vec<Violation> {
    let documented = evidence.scenario.and_then(|scenario| scenario.knobs.as_ref()?.retries_documented.as_deref());
    let mut violations = Vec::new();
    for (problem, over_budget) in over(evidence) {
        if let Some(sentence) = documented.filter(|_| over_budget) {
            let own = format!("{problem}, past the budget the agent documents: {sentence:?}");
            violations.push(Violation::new(own).of(DOCUMENTED));
        }
        violations.push(Violation::new(problem));
    }
    violations
}

/// Each turn whose retries went past the budget or the mock's cap, and whether past the budget.
fn over(evidence: &Evidence) -> Vec<(String, bool)> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    let max_retries = scenario.config.max_retries;
    let (limit, whose) = match scenario.knobs.as_ref().map(|knobs| knobs.retries) {
        None => (Some(max_retries), "the scenario's `max_retries`".to_owned()),
        Some(RetryBudget::Scenario) => {
            (Some(max_retries), "the scenario's `max_retries`, which the profile passes to the agent".to_owned())
        }
        Some(RetryBudget::Fixed(n)) => (Some(n), "the profile's `retries`".to_owned()),
        Some(RetryBudget::Unbounded | RetryBudget::Unknown) => (None, String::new()),
    };
    let turns = request_turns(evidence);
    let mut problems = Vec::new();
    for (idx, (longest, kind)) in longest_runs(evidence, &turns, scenario.turns.len()).into_iter().enumerate() {
        // A kind of fault the profile says its budget does not govern has a budget unknown here.
        let governed = scenario.knobs.as_ref().is_none_or(|knobs| kind.is_none_or(|kind| knobs.governs(kind)));
        let over_budget = governed && limit.is_some_and(|limit| longest > limit as usize);
        // A cancel the client sent stopped the agent: it says nothing of whether the agent
        // would have stopped by itself (issue 45).
        let cancelled = evidence.capture.cancels.iter().any(|cancel| cancel.turn == idx);
        if longest > RETRY_CAP {
            let stopped = if cancelled { "until the client cancelled the turn" } else { "and never stopped by itself" };
            problems.push((
                format!(
                    "turn {}: the agent retried a fault {longest} times in a row {stopped} (the mock stops repeating a fault after {RETRY_CAP})",
                    idx + 1
                ),
                over_budget,
            ));
        } else if over_budget {
            problems.push((
                format!(
                    "turn {}: the agent retried a fault {longest} times in a row; its budget is {} ({whose})",
                    idx + 1,
                    limit.unwrap_or_default()
                ),
                true,
            ));
        }
    }
    problems
}

/// Where one turn's requests stand while they are read in order.
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    /// The retries in a row so far, and of which kind of fault (the wire's: agents keep a
    /// budget per kind, codex-acp's request and stream retries say, so a failed stream after a
    /// retried 503 starts a count of its own; a retry after streamed text is
    /// WIRE-NO-RETRY-AFTER-TEXT's to judge).
    length: usize,
    of: Option<FaultKind>,
    /// The fault the turn's latest request met, and that request.
    previous: Option<FaultKind>,
    last: Option<usize>,
    /// The longest run, and its kind.
    longest: (usize, Option<FaultKind>),
}

/// Per turn of the scenario, the longest run of retries of one kind of fault: requests with the
/// conversation of the request before them in the same turn, which met a fault of the kind the
/// run began with (its scripted
/// response is one, the client gave up on its body, or the mock answered it with an error past
/// its cap or by the script's `unscripted` policy). One pass over the requests, whatever the
/// number of turns.
fn longest_runs(evidence: &Evidence, turns: &[Option<usize>], n_turns: usize) -> Vec<(usize, Option<FaultKind>)> {
    let capture = evidence.capture;
    let mut runs = vec![Run::default(); n_turns];
    for (index, request) in capture.requests.iter().enumerate() {
        let Some(run) = turns.get(index).copied().flatten().and_then(|turn| runs.get_mut(turn)) else { continue };
        if request.route != ROOT {
            continue;
        }
        // A request that asks with another conversation than the faulted one (a resume, a
        // "continue", a rewrite) is a continuation, no retry: it starts no run and ends one.
        let conversation = |at: usize| evidence.conversations.get(at).map(|conversation| conversation.messages);
        let continues = run.last.is_some_and(|last| conversation(last) != conversation(index));
        run.last = Some(index);
        match run.previous {
            _ if continues => (run.length, run.of) = (0, None),
            Some(fault) if run.of == Some(fault) => run.length += 1,
            Some(fault) => (run.length, run.of) = (1, Some(fault)),
            None => (run.length, run.of) = (0, None),
        }
        if run.length > run.longest.0 {
            run.longest = (run.length, run.of);
        }
        let given_up = capture
            .timings
            .get(index)
            .and_then(|timing| timing.ended)
            .is_some_and(|ended| ended.how == StreamEnd::ClientClosed);
        // What the agent met on the wire: a failing response it asked for whole (not streamed)
        // came as an HTTP error, whatever the script's ending.
        let http_error = request.status.is_some_and(|status| status >= 400);
        run.previous = match served(evidence, request) {
            Some(response) if response.status.is_some() || http_error => Some(FaultKind::Http),
            Some(response) if response.fails() || given_up => Some(FaultKind::Stream),
            Some(_) => None,
            // Past the script, the mock repeats the fault it met, or refuses with an error.
            None if matches!(request.unplaced, Some(After::Fault { .. } | After::Refused)) => {
                run.previous.or(Some(FaultKind::Http))
            }
            None => None,
        };
    }
    runs.into_iter().map(|run| run.longest).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{Capture, Request};
    use crate::judge::fixture::{body, check_played, scenario, user};
    use crate::scenario::Knobs;

    const FAULT_THEN_ANSWER: &str = "title = \"t\"\nconfig = { max_retries = 2 }\n[[turn]]\nprompt = \"a\"\n\
                                     respond = [{ status = 503 }, { text = [\"x\"] }]\n";

    /// `n` requests of turn 1: the fault (response 0) repeated `n - 1` times, then the answer.
    fn retried(n: usize) -> Capture {
        let mut served: Vec<(String, Option<usize>, serde_json::Value)> =
            (0..n - 1).map(|_| ("root".to_owned(), Some(0), body(vec![user("a")]))).collect();
        served.push(("root".to_owned(), Some(1), body(vec![user("a")])));
        Capture { requests: Request::chained(served), ..Capture::default() }
    }

    /// `n` requests of turn 1: the fault repeated to the cap, then refused past it.
    fn never_stopping(n: usize) -> Capture {
        let mut capture = retried(n);
        let last = capture.requests.len() - 1;
        capture.requests[last].response_index = None;
        capture.requests[last].unplaced = Some(After::Fault { repeats: RETRY_CAP });
        capture
    }

    /// A stream that failed, then the agent's non-streaming fallback retried twice: the mock
    /// answers a whole request for a failing response with an HTTP error, so the two retries
    /// are of an HTTP error, within a budget of 2, not a third retry of the stream.
    #[test]
    fn a_fault_is_of_the_kind_the_wire_showed() {
        let text = "title = \"t\"\nconfig = { max_retries = 2 }\n[[turn]]\nprompt = \"a\"\n\
                    respond = [{ text = [\"x\"], then = { failed = \"server_error\" } }]\n";
        let served: Vec<_> = (0..4).map(|_| ("root".to_owned(), Some(0), body(vec![user("a")]))).collect();
        let mut capture = Capture { requests: Request::chained(served), ..Capture::default() };
        assert_eq!(check_played(INVARIANT, &capture, &scenario(text)).len(), 1, "four streams: three retries");
        for request in &mut capture.requests[1..] {
            request.status = Some(500);
        }
        assert!(check_played(INVARIANT, &capture, &scenario(text)).is_empty());
    }

    /// A 503 retried once, then a stream that fails after text, retried twice: two kinds of
    /// fault, each within a budget of 2 (the retries after text are another rule's).
    #[test]
    fn each_kind_of_fault_has_its_own_count() {
        let text = "title = \"t\"\nconfig = { max_retries = 2 }\n[[turn]]\nprompt = \"a\"\n\
                    respond = [{ status = 503 }, { text = [\"x\"], then = { failed = \"server_error\" } }]\n";
        let indices: [usize; 4] = [0, 1, 1, 1];
        let served: Vec<_> =
            indices.iter().map(|index| ("root".to_owned(), Some(*index), body(vec![user("a")]))).collect();
        let capture = Capture { requests: Request::chained(served), ..Capture::default() };
        assert!(check_played(INVARIANT, &capture, &scenario(text)).is_empty());
        let more: [usize; 5] = [0, 1, 1, 1, 1];
        let served: Vec<_> =
            more.iter().map(|index| ("root".to_owned(), Some(*index), body(vec![user("a")]))).collect();
        let capture = Capture { requests: Request::chained(served), ..Capture::default() };
        assert_eq!(
            check_played(INVARIANT, &capture, &scenario(text)),
            ["turn 1: the agent retried a fault 3 times in a row; its budget is 2 (the scenario's `max_retries`)"]
        );
    }

    /// An agent that resumes after each dropped stream ("The connection dropped mid-response.
    /// Resume directly ...") asks with another conversation each time: continuations, no
    /// retries, however many; asking the same conversation again is a retry.
    #[test]
    fn continuations_after_a_fault_are_no_retries() {
        let text = "title = \"t\"\nconfig = { max_retries = 1 }\n[[turn]]\nprompt = \"a\"\n\
                    respond = [{ text = [\"x\"], then = \"disconnect\" }]\n";
        let resumed = |n: usize| {
            let mut messages = vec![user("a")];
            messages.extend((0..n).map(|_| user("Resume directly")));
            ("root".to_owned(), Some(0), body(messages))
        };
        let served: Vec<_> = (0..4).map(resumed).collect();
        let capture = Capture { requests: Request::chained(served), ..Capture::default() };
        assert!(check_played(INVARIANT, &capture, &scenario(text)).is_empty());
        let served: Vec<_> = [0, 1, 1, 1].into_iter().map(resumed).collect();
        let capture = Capture { requests: Request::chained(served), ..Capture::default() };
        assert_eq!(
            check_played(INVARIANT, &capture, &scenario(text)),
            ["turn 1: the agent retried a fault 2 times in a row; its budget is 1 (the scenario's `max_retries`)"]
        );
    }

    #[test]
    fn retries_within_the_budget_pass_and_past_it_are_named_with_whose_budget() {
        let reference = scenario(FAULT_THEN_ANSWER);
        assert!(check_played(INVARIANT, &retried(3), &reference).is_empty());
        assert_eq!(
            check_played(INVARIANT, &retried(4), &reference),
            ["turn 1: the agent retried a fault 3 times in a row; its budget is 2 (the scenario's `max_retries`)"]
        );
        // An agent with its own budget of 3 (claude-agent-acp's, say) is held to it, not to 2.
        let mut own = reference.clone();
        own.knobs = Some(Knobs { retries: RetryBudget::Fixed(3), ..Knobs::default() });
        assert!(check_played(INVARIANT, &retried(4), &own).is_empty());
        assert_eq!(check_played(INVARIANT, &retried(5), &own).len(), 1);
    }

    /// Past a budget the agent documents (the profile quotes its sentence), the finding is
    /// WIRE-RETRY-DOCUMENTED's too, with the sentence; within it, nothing.
    #[test]
    fn past_a_documented_budget_the_agents_own_sentence_is_quoted() {
        let mut documented = scenario(FAULT_THEN_ANSWER);
        let sentence = "Maximum number of retries for failed requests";
        documented.knobs = Some(Knobs {
            retries: RetryBudget::Scenario,
            retries_documented: Some(sentence.to_owned()),
            ..Knobs::default()
        });
        assert!(crate::judge::fixture::check_played_as(INVARIANT, DOCUMENTED, &retried(3), &documented).is_empty());
        assert_eq!(
            crate::judge::fixture::check_played_as(INVARIANT, DOCUMENTED, &retried(4), &documented),
            [format!(
                "turn 1: the agent retried a fault 3 times in a row; its budget is 2 (the scenario's `max_retries`, which the profile passes to the agent), past the budget the agent documents: {sentence:?}"
            )]
        );
        assert_eq!(check_played(INVARIANT, &retried(4), &documented).len(), 2, "the MAY finding stays beside it");
    }

    /// A budget the profile says governs only HTTP errors (`retries_cover = ["http"]`) is not
    /// applied to retries of a broken stream, which the agent budgets apart.
    #[test]
    fn a_budget_applies_only_to_the_kinds_of_fault_it_governs() {
        let text = "title = \"t\"\nconfig = { max_retries = 1 }\n[[turn]]\nprompt = \"a\"\n\
                    respond = [{ text = [\"x\"], then = \"eof\" }]\n";
        let served: Vec<_> = (0..4).map(|_| ("root".to_owned(), Some(0), body(vec![user("a")]))).collect();
        let capture = Capture { requests: Request::chained(served), ..Capture::default() };
        let mut played = scenario(text);
        played.knobs = Some(Knobs { retries: RetryBudget::Scenario, ..Knobs::default() });
        assert_eq!(check_played(INVARIANT, &capture, &played).len(), 1, "three stream retries, a budget of 1");
        played.knobs =
            Some(Knobs { retries: RetryBudget::Scenario, retries_only: Some(FaultKind::Http), ..Knobs::default() });
        assert!(check_played(INVARIANT, &capture, &played).is_empty());
        played.knobs =
            Some(Knobs { retries: RetryBudget::Scenario, retries_only: Some(FaultKind::Stream), ..Knobs::default() });
        assert_eq!(check_played(INVARIANT, &capture, &played).len(), 1);
    }

    #[test]
    fn an_agent_that_never_stops_is_named_whatever_its_budget() {
        let mut unbounded = scenario(FAULT_THEN_ANSWER);
        unbounded.knobs = Some(Knobs { retries: RetryBudget::Unbounded, ..Knobs::default() });
        assert!(check_played(INVARIANT, &retried(RETRY_CAP + 1), &unbounded).is_empty());
        let problems = check_played(INVARIANT, &never_stopping(RETRY_CAP + 2), &unbounded);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("never stopped by itself"), "{problems:?}");
        // The client's cancel stopped it: whether it would have stopped is not known.
        let mut cancelled = never_stopping(RETRY_CAP + 2);
        cancelled.cancels = vec![crate::capture::Cancel {
            turn: 0,
            sent: std::time::Duration::ZERO,
            impatient: true,
            by_request: false,
        }];
        let problems = check_played(INVARIANT, &cancelled, &unbounded);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("until the client cancelled the turn"), "{problems:?}");
        assert!(!problems[0].contains("by itself"), "{problems:?}");
    }
}
