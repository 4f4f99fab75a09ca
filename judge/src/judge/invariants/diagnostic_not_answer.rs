//! REPLAY-NO-DIAGNOSTIC: a failure's text is a diagnostic, never an answer (seed 000: "Technical
//! strings such as `Provider stream process exited.` are diagnostics, not normal assistant
//! answers"). The Provider's error message (what a failed response said, [`failure_message`]) and
//! the agent's own error notice (the message of a JSON-RPC error it answered a prompt with, or
//! what it showed the client in its own words for a turn it answered with an error or
//! `cancelled`: "I hit an internal error while calling the model: ...") never
//! reach a later Provider request as assistant content, and no clean `assistant_message` of the
//! Log holds them. A notice shown live beside an honest error is presentation; what `session/load`
//! replays for a failed turn is ACP-LOAD-CLEAN's, and an error text passed off as the answer of a
//! turn ended `end_turn` is ACP-FAILURE-IS-ERROR's.

use gauntlet_agent::EventType;
use gauntlet_mock_provider::Message;
use gauntlet_mock_provider::dialect::failure_message;
use serde_json::Value;

use super::{Invariant, Scope, Violation};
use crate::judge::Evidence;
use crate::judge::views::{judge_messages, request_turns, served, shown_chunks};
use crate::verdict::At;

pub const INVARIANT: Invariant =
    Invariant { id: "REPLAY-NO-DIAGNOSTIC", also: &[], name: "diagnostic_not_answer", applies: Scope::Replay, check };

/// An agent's error message shorter than this is a generic word ("Internal error"), too
/// common to be evidence when it turns up in text.
const NOTICE_MIN: usize = 24;

fn check(evidence: &Evidence) -> Vec<Violation> {
    let diagnostics = diagnostics(evidence);
    if diagnostics.is_empty() {
        return Vec::new();
    }
    let mut problems: Vec<Violation> = evidence
        .lines
        .iter()
        .filter(|line| line.kind == EventType::AssistantMessage && !line.is_partial_assistant())
        .filter_map(|line| {
            let text = line.str_field("text")?;
            let found = diagnostics.iter().find(|diagnostic| text.contains(diagnostic.text.as_str()))?;
            let message = format!(
                "the clean assistant_message at seq {} holds {}: {:?}",
                line.seq.map_or_else(|| "?".to_owned(), |seq| seq.to_string()),
                found.origin,
                found.text
            );
            Some(Violation::placed(found.turn.map(At::Turn), message))
        })
        .collect();
    problems.extend(judge_messages(evidence, |_, message, found| {
        let Message::Assistant { text } = message else { return };
        if let Some(diagnostic) = diagnostics.iter().find(|diagnostic| text.contains(diagnostic.text.as_str())) {
            let message =
                format!("carries {} back to the model as assistant content: {:?}", diagnostic.origin, diagnostic.text);
            found.push(Violation::placed(diagnostic.turn.map(At::Turn), message));
        }
    }));
    problems
}

/// A failure's text, where it came from, and the turn (1-based) it was the failure of, when
/// known: carrying it back is that turn's failure passed off as an answer.
pub(super) struct Diagnostic {
    pub origin: String,
    pub text: String,
    pub turn: Option<usize>,
}

/// Every failure text of the run, each with where it came from: the Provider's error messages
/// of the failed responses it served, and the agent's error notices.
pub(super) fn diagnostics(evidence: &Evidence) -> Vec<Diagnostic> {
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    let turns = request_turns(evidence);
    for (idx, request) in evidence.capture.requests.iter().enumerate() {
        if let Some(text) = served(evidence, request).and_then(failure_message) {
            let origin = format!("the Provider's error message (request {})", idx + 1);
            diagnostics.push(Diagnostic { origin, text, turn: turns[idx].map(|turn| turn + 1) });
        }
    }
    // A prompt's turn: the scenario's turns are the last prompts not sent while another ran.
    let exchanges = evidence.exchanges();
    let plain = exchanges.iter().filter(|exchange| !exchange.busy).count();
    let first = evidence.scenario.map_or(plain, |scenario| plain.saturating_sub(scenario.turns.len()));
    let mut ordinal: usize = 0;
    // What the script streamed: a shown chunk that holds any of it is the model's, not a notice.
    let scripted: Vec<String> = evidence.scenario.map_or_else(Vec::new, |scenario| {
        scenario.root_responses().map(|response| response.visible_text()).filter(|text| !text.is_empty()).collect()
    });
    for (idx, exchange) in exchanges.iter().enumerate() {
        let turn = (!exchange.busy).then(|| {
            ordinal += 1;
            ordinal
        });
        let turn = turn.and_then(|ordinal| ordinal.checked_sub(first)).filter(|turn| *turn > 0);
        let notice = exchange.answer.and_then(|answer| answer.pointer("/error/message")).and_then(Value::as_str);
        if let Some(notice) = notice.filter(|notice| notice.len() >= NOTICE_MIN) {
            let origin = format!("the agent's error notice for prompt {}", idx + 1);
            diagnostics.push(Diagnostic { origin, text: notice.to_owned(), turn });
        }
        let failed = exchange.answer.is_some_and(|answer| {
            answer.get("error").is_some() || answer.pointer("/result/stopReason") == Some(&"cancelled".into())
        });
        if !failed || evidence.scenario.is_none() {
            continue;
        }
        let own = shown_chunks(exchange).into_iter().map(str::trim).filter(|chunk| {
            chunk.len() >= NOTICE_MIN
                && !scripted.iter().any(|text| chunk.contains(text.trim()) || text.contains(chunk))
        });
        for notice in own {
            let origin = format!("the agent's own notice shown for prompt {}", idx + 1);
            diagnostics.push(Diagnostic { origin, text: notice.to_owned(), turn });
        }
    }
    let mut seen = std::collections::HashSet::new();
    diagnostics.retain(|diagnostic| seen.insert(diagnostic.text.clone()));
    diagnostics
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::invariants::fixture::{assistant, body, capture, check_played, entry, prompt, scenario, user};
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
        let (capture, scenario) = failed_then_asked("{ error = \"server_error\" }", "A real answer.", None);
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

        let (mut generic, scenario) = failed_then_asked("\"disconnect\"", "Internal error", None);
        generic.acp = answered("Internal error");
        assert!(check_played(INVARIANT, &generic, &scenario).is_empty());
    }

    /// What the agent showed in its own words for a turn it answered with an error is a
    /// notice too, not only the error's message (issue 31: an agent sent back "I hit an
    /// internal error while calling the model: ..." as assistant content).
    #[test]
    fn the_agents_own_shown_notice_carried_back_is_caught() {
        use crate::judge::invariants::fixture::chunk;
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
