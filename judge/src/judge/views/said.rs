//! What the scenario's model said: every text it was scripted to say, so any other text an
//! agent puts in the model's mouth (REPLAY-MODEL-WORDS, REPLAY-NO-DIAGNOSTIC) or shows as its
//! own notice (ACP-NOTICE-MATCHES-OUTCOME) is known as the agent's.

use gauntlet_agent::EventType;
use serde_json::Value;

use crate::scenario::Scenario;

/// Text the model never said, shorter than this (after whitespace is collapsed), is a
/// separator or a placeholder ("(no content)"), not words of the agent's own.
const INVENTED_MIN: usize = 12;

/// Every text the scenario's model says, on every route (answers, refusals, reasoning
/// summaries), and every answer of a Log it preloads (said in an earlier life of the Session),
/// whitespace collapsed, longest first.
pub(crate) fn said(scenario: &Scenario) -> Vec<String> {
    let scripted = scenario.script().routes.into_values().flatten().flat_map(|response| {
        let reasoning = response.reasoning.iter().map(|reasoning| reasoning.summary.concat()).collect::<Vec<_>>();
        [response.visible_text(), response.refusal.concat()].into_iter().chain(reasoning)
    });
    let preloaded = scenario.log.iter().flat_map(|log| log.ndjson.lines()).filter_map(|line| {
        let event: Value = serde_json::from_str(line).ok()?;
        let answer = event.get("type")? == EventType::AssistantMessage.as_str();
        answer.then(|| event.pointer("/data/text")?.as_str().map(str::to_owned))?
    });
    let mut said: Vec<String> =
        scripted.chain(preloaded).map(|text| collapsed(&text)).filter(|text| !text.is_empty()).collect();
    said.sort_by_key(|text| std::cmp::Reverse(text.len()));
    said.dedup();
    said
}

/// The first stretch of `text` the model never said ([`unsaid_all`]).
pub(crate) fn unsaid(text: &str, said: &[String]) -> Option<String> {
    unsaid_all(text, said).into_iter().next()
}

/// The stretches of `text` the model never said, once every text it said is taken out: words,
/// not a separator, and not part of anything it said (a cut stream's prefix).
pub(crate) fn unsaid_all(text: &str, said: &[String]) -> Vec<String> {
    let mut rest = collapsed(text);
    for words in said {
        rest = rest.replace(words.as_str(), "\u{0}");
    }
    rest.split('\u{0}')
        .map(str::trim)
        .filter(|piece| {
            piece.chars().count() >= INVENTED_MIN
                && piece.chars().any(char::is_alphabetic)
                && !said.iter().any(|words| words.contains(piece))
        })
        .map(str::to_owned)
        .collect()
}

fn collapsed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
