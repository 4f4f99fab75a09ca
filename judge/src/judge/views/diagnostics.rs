//! Diagnostics: every failure text of a run, each with where it came from (the Provider's error
//! messages of the failed responses it served, the agent's error notices and the notices it
//! showed in its own words) and the turn it was the failure of. A diagnostic is never an answer
//! (REPLAY-NO-DIAGNOSTIC), nor the text of a turn answered `end_turn` (ACP-FAILURE-IS-ERROR).

use gauntlet_mock_provider::dialect::failure_message;
use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::transcript::shown_chunks;
use crate::judge::views::requests::{request_turns, served};

/// An agent's error message shorter than this is a generic word ("Internal error"), too
/// common to be evidence when it turns up in text.
const NOTICE_MIN: usize = 24;

/// A failure's text, where it came from, and the turn (1-based) it was the failure of, when
/// known: carrying it back is that turn's failure passed off as an answer.
pub(crate) struct Diagnostic {
    pub origin: String,
    pub text: String,
    pub turn: Option<usize>,
}

/// Every failure text of the run, each with where it came from: the Provider's error messages
/// of the failed responses it served, and the agent's error notices.
pub(crate) fn diagnostics(evidence: &Evidence) -> Vec<Diagnostic> {
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
