//! REPLAY-NO-DIAGNOSTIC: a failure's text is a diagnostic, never an answer (seed 000: "Technical
//! strings such as `Provider stream process exited.` are diagnostics, not normal assistant
//! answers"). The Provider's error message (what a failed response said,
//! [`gauntlet_mock_provider::dialect::failure_message`]) and the agent's own error notice (the
//! message of a JSON-RPC error it answered a prompt with, or what it showed the client in its own
//! words for a turn it answered with an error or `cancelled`: "I hit an internal error while
//! calling the model: ...") never reach a later Provider request as assistant content, and no
//! clean `assistant_message` of the Log holds them. A notice shown live beside an honest error is
//! presentation; what `session/load` replays for a failed turn is ACP-LOAD-CLEAN's, and an error
//! text passed off as the answer of a turn ended `end_turn` is ACP-FAILURE-IS-ERROR's.

use gauntlet_agent::TerminalStatus;
use gauntlet_mock_provider::Message;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::diagnostics::{Diagnostic, diagnostics};
use crate::judge::views::requests::{judge_messages, request_turns};
use crate::judge::views::said::{said, unsaid};
use crate::scenario::Scenario;
use crate::verdict::At;

pub const INVARIANT: Invariant = Invariant {
    id: "REPLAY-NO-DIAGNOSTIC",
    also: &["REPLAY-MODEL-WORDS"],
    name: "diagnostic_not_answer",
    applies: Scope::Replay,
    check,
};

fn check(evidence: &Evidence) -> Vec<Violation> {
    let diagnostics = diagnostics(evidence);
    let mut problems = invented(evidence, &diagnostics);
    if diagnostics.is_empty() {
        return problems;
    }
    let mut found: Vec<Violation> = evidence
        .lines
        .iter()
        .filter(|line| !line.is_partial_assistant())
        .filter_map(|line| {
            let text = line.assistant_message()?.text?;
            let found = diagnostics.iter().find(|diagnostic| text.contains(diagnostic.text.as_str()))?;
            let message = format!(
                "the clean assistant_message at seq {} holds {}: {:?}",
                line.seq.map_or_else(|| "?".to_owned(), |seq| seq.to_string()),
                found.origin,
                found.text
            );
            Some(Violation::placed(found.turn.map(At::Turn), message))
        })
        .collect::<Vec<_>>();
    found.extend(judge_messages(evidence, |_, _, message, found| {
        let Message::Assistant { text } = message else { return };
        if let Some(diagnostic) = diagnostics.iter().find(|diagnostic| text.contains(diagnostic.text.as_str())) {
            let message =
                format!("carries {} back to the model as assistant content: {:?}", diagnostic.origin, diagnostic.text);
            found.push(Violation::placed(diagnostic.turn.map(At::Turn), message));
        }
    }));
    problems.extend(found);
    problems
}

/// Assistant content carried to the model that the model never said: gauntlet scripted every
/// word its model says, so what remains of an assistant message once every scripted text (or a
/// prefix of one, as a cut stream leaves it) is taken out is the agent's own, whether it showed
/// it or not (issue 45). In a turn the scenario does not complete it is a failure notice passed
/// off as an answer, REPLAY-NO-DIAGNOSTIC; elsewhere REPLAY-MODEL-WORDS, a MAY: no source forbids
/// an agent its own words in a conversation that went well. A text already found as a known
/// diagnostic above is not found twice.
fn invented(evidence: &Evidence, diagnostics: &[Diagnostic]) -> Vec<Violation> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    let said = said(scenario);
    let turns = request_turns(evidence);
    let ended_otherwise = turns_not_completed(evidence, scenario);
    let requests = &evidence.capture.requests;
    judge_messages(evidence, |at, request, message, found| {
        let Message::Assistant { text } = message else { return };
        if diagnostics.iter().any(|diagnostic| text.contains(diagnostic.text.as_str())) {
            return;
        }
        let Some(words) = unsaid(text, &said) else { return };
        // The message answers the request before this one on its route: that request's turn.
        let before = requests[..at].iter().rposition(|earlier| earlier.route == request.route);
        let turn = turns.get(before.unwrap_or(at)).copied().flatten();
        let failed = turn.filter(|turn| ended_otherwise.get(*turn).copied().unwrap_or(false));
        let violation = Violation::placed(
            turn.map(|turn| At::Turn(turn + 1)),
            match failed {
                Some(_) => format!(
                    "carries text the model never said back to it as assistant content, in a turn that did not complete: the agent's own failure notice passed off as an answer: {words:?}"
                ),
                None => format!("carries text the model never said back to it as assistant content: {words:?}"),
            },
        );
        found.push(if failed.is_some() { violation } else { violation.of("REPLAY-MODEL-WORDS") });
    })
}

/// Whether each scenario turn ended other than completed: as the script forces it, or, for an
/// agent without a Log, as it was driven (read from the wire where the agent is not told the
/// knob its outcome rests on). A turn whose end rests on an empty answer the mock invented
/// past the script has no outcome to judge ([`crate::judge::evidence::LastAnswer::Invented`]):
/// what the agent writes in that answer's place (qwen-code's "(empty content)") is no failure
/// notice.
fn turns_not_completed(evidence: &Evidence, scenario: &Scenario) -> Vec<bool> {
    if !evidence.capture.log.is_empty() {
        return scenario.turns.iter().map(|turn| turn.expect != TerminalStatus::Completed).collect();
    }
    let driven = evidence.driven_turns(scenario.turns.len());
    driven.iter().map(|turn| turn.status.is_some_and(|status| status != TerminalStatus::Completed)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{assistant, body, capture, check_played, entry, prompt, scenario, user};
    use crate::scenario::Scenario;
    use serde_json::json;

    const SERVER_ERROR: &str = "The server had an error while processing your request.";

    /// Turn 1's only response ends `ending`, then turn 2's request carries `carried` as turn
    /// 1's answer; `log_answer` is what the Log keeps as turn 1's clean answer.
    fn failed_then_asked(ending: &str, carried: &str, log_answer: Option<&str>) -> (Capture, Scenario) {
        let scenario = scenario(&format!(
            "title = \"t\"\n[[turn]]\nprompt = \"Summarise\"\nexpect = \"failed\"\nrespond = [{{ then = {ending} }}]\n\
             [[turn]]\nprompt = \"Again\"\nrespond = [{{ text = [\"Done.\"] }}]\n"
        ));
        let mut log = vec![("user_message", json!({"text": "Summarise"}))];
        if let Some(answer) = log_answer {
            log.push(("assistant_message", json!({"text": answer})));
        }
        log.push(("user_message", json!({"text": "Again"})));
        let mut capture = capture(
            &log,
            &[body(vec![user("Summarise")]), body(vec![user("Summarise"), assistant(carried), user("Again")])],
        );
        capture.requests[0].response_index = Some(0);
        capture.requests[1].response_index = Some(1);
        (capture, scenario)
    }

    #[test]
    fn the_providers_error_carried_back_or_kept_as_a_clean_answer_is_caught() {
        let carried = format!("API Error: 500 {SERVER_ERROR}");
        let (capture, scenario) = failed_then_asked("{ error = \"server_error\" }", &carried, Some(&carried));
        let found = check_played(INVARIANT, &capture, &scenario);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(
            found[0].contains("the clean assistant_message at seq 1 holds the Provider's error message (request 1)")
        );
        assert!(found[1].starts_with("request 2 carries the Provider's error message (request 1) back to the model"));
        // Both are turn 1's failure passed off as an answer: one behaviour with its other lies.
        let placed = (INVARIANT.check)(&Evidence::of_scenario(&capture, &scenario));
        assert!(placed.iter().all(|violation| violation.at == Some(At::Turn(1))), "{placed:#?}");
        // What the model said carried back is no diagnostic (turn 2's own answer, here).
        let (capture, scenario) = failed_then_asked("{ error = \"server_error\" }", "Done.", None);
        assert!(check_played(INVARIANT, &capture, &scenario).is_empty());
    }

    #[test]
    fn the_agents_own_long_error_notice_counts_a_generic_one_does_not() {
        let answered = |message: &str| {
            let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": message}});
            vec![entry("client", prompt(1, "Summarise")), entry("agent", error)]
        };
        let notice = "stream disconnected before completion: server_error";
        let (mut capture, scenario) = failed_then_asked("\"disconnect\"", notice, None);
        capture.acp = answered(notice);
        let found = check_played(INVARIANT, &capture, &scenario);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].contains("the agent's error notice for prompt 1"), "{found:#?}");

        // A generic notice is too common to be evidence as a match, but the model never said
        // it: carried back for the failed turn, it is still the agent's words in its mouth.
        let (mut generic, scenario) = failed_then_asked("\"disconnect\"", "Internal error", None);
        generic.acp = answered("Internal error");
        let found = check_played(INVARIANT, &generic, &scenario);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].contains("text the model never said") && found[0].contains("\"Internal error\""),
            "{found:#?}"
        );
    }

    /// Issue 45: after a dropped stream an agent sends the model, as its own assistant content,
    /// a notice it never showed the client ("I hit an internal error ..."), and answers the turn
    /// `refusal`: no known diagnostic matches, but the model never said it. In the turn that
    /// did not complete it is REPLAY-NO-DIAGNOSTIC's; a prefix of what the model did say (a cut
    /// stream's) is not invented (that is REPLAY-NO-PARTIAL's).
    #[test]
    fn words_the_model_never_said_in_a_failed_turn_are_a_diagnostic() {
        let notice = "I hit an internal error while calling the model: Connection error.";
        let (capture, scenario) = failed_then_asked("\"disconnect\"", notice, None);
        let placed = (INVARIANT.check)(&Evidence::of_scenario(&capture, &scenario));
        assert_eq!(placed.len(), 1, "{placed:#?}");
        assert_eq!(placed[0].requirement, None, "{placed:#?}");
        assert_eq!(placed[0].at, Some(At::Turn(1)));
        assert!(placed[0].message.contains("in a turn that did not complete"), "{placed:#?}");
        assert!(placed[0].message.contains(notice), "{placed:#?}");

        let (capture, scenario) = failed_then_asked("\"disconnect\"", "Do", None);
        assert!(check_played(INVARIANT, &capture, &scenario).is_empty());
    }

    /// Past the script the mock answers with empty answers of its own making, and a turn that
    /// ends on one has no outcome to judge: what the agent writes in such an answer's place
    /// (qwen-code's "(empty content)", in a turn scripted to time out on a budget it is not
    /// told) is words the model never said, a MAY, not a failure notice.
    #[test]
    fn words_in_place_of_an_answer_the_mock_invented_are_a_may() {
        use gauntlet_mock_provider::After;
        use gauntlet_mock_provider::journal::{Ended, Timing};
        let scenario = scenario(
            "title = \"t\"\n[config]\nturn_timeout_ms = 45000\n[[turn]]\nprompt = \"Read it\"\nexpect = \"timed_out\"\n\
             error_kind = \"turn_timeout\"\nrespond = [{ calls = [{ name = \"read\", args = { path = \"a.txt\" } }] }]\n",
        );
        let mut capture = capture(
            &[],
            &[
                body(vec![user("Read it")]),
                body(vec![user("Read it"), user("a.txt: alpha")]),
                body(vec![user("Read it"), user("a.txt: alpha"), assistant("(empty content)"), user("Go on.")]),
            ],
        );
        let finished = Timing {
            received: std::time::Duration::ZERO,
            ended: Some(Ended {
                at: std::time::Duration::from_secs(1),
                how: gauntlet_mock_provider::StreamEnd::Finished,
            }),
        };
        capture.timings = vec![finished; 3];
        for (request, unplaced) in capture.requests.iter_mut().zip([None, Some(After::ToolCalls), Some(After::Nothing)])
        {
            request.turn = Some(0);
            request.response_index = unplaced.is_none().then_some(0);
            request.unplaced = unplaced;
        }
        let found = (INVARIANT.check)(&Evidence::of_scenario(&capture, &scenario));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].requirement, Some("REPLAY-MODEL-WORDS"), "{found:#?}");
        assert!(found[0].message.contains("\"(empty content)\""), "{found:#?}");
    }

    /// Words the model never said in a turn that completed: REPLAY-MODEL-WORDS, a MAY; the
    /// model's own text with whitespace changed is its own.
    #[test]
    fn words_the_model_never_said_in_a_completed_turn_are_a_may() {
        let scenario = scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"Summarise\"\nrespond = [{ text = [\"The log \", \"is short.\"] }]\n\
             [[turn]]\nprompt = \"Again\"\nrespond = [{ text = [\"Done.\"] }]\n",
        );
        let asked = |answer: &str| {
            let mut capture = capture(
                &[],
                &[body(vec![user("Summarise")]), body(vec![user("Summarise"), assistant(answer), user("Again")])],
            );
            capture.requests[0].response_index = Some(0);
            capture.requests[1].response_index = Some(1);
            (INVARIANT.check)(&Evidence::of_scenario(&capture, &scenario))
        };
        assert_eq!(asked("The log\nis short."), Vec::new());
        let found = asked("The log is short. (Answer checked by the agent.)");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].requirement, Some("REPLAY-MODEL-WORDS"));
        assert!(found[0].message.contains("\"(Answer checked by the agent.)\""), "{found:#?}");
    }

    /// What the agent showed in its own words for a turn it answered with an error is a
    /// notice too, not only the error's message (issue 31: an agent sent back "I hit an
    /// internal error while calling the model: ..." as assistant content).
    #[test]
    fn the_agents_own_shown_notice_carried_back_is_caught() {
        use crate::judge::fixture::chunk;
        let notice = "I hit an internal error while calling the model: Connection error";
        let (mut capture, scenario) = failed_then_asked("\"disconnect\"", notice, None);
        let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "m"}});
        capture.acp = vec![
            entry("client", prompt(1, "Summarise")),
            entry("agent", chunk("agent_message_chunk", notice)),
            entry("agent", error),
        ];
        let found = check_played(INVARIANT, &capture, &scenario);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].contains("the agent's own notice shown for prompt 1"), "{found:#?}");
    }
}
