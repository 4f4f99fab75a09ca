//! Partial texts: what each response that did not complete streamed, with where it came from
//! (a Log's partial `assistant_message`, or for an implementation without a Log the script's
//! served responses), beside the clean answers. The rules that keep partial text out of what
//! is carried back to the model read it (REPLAY-NO-PARTIAL, REPLAY-COMPACTION-NO-PARTIAL,
//! REPLAY-NO-DUPLICATE).

use std::collections::HashSet;

use gauntlet_mock_provider::StreamEnd;

use crate::judge::evidence::Evidence;
use crate::judge::views::requests::{request_turns, served};
use crate::log_line::Line;

/// A partial text: what a response that did not complete streamed.
pub(crate) struct Partial {
    /// Where it comes from: its Log seq, or the request whose response streamed it.
    pub origin: String,
    /// The text.
    pub text: String,
    /// The turn (1-based) it was streamed in, when known.
    pub turn: Option<usize>,
}

/// The clean answers, and each partial text once with its first origin (from the Log, or from
/// the script for an implementation without one); a partial text that is also a clean answer
/// is not one.
pub(crate) fn partial_texts(evidence: &Evidence) -> (HashSet<String>, Vec<Partial>) {
    let (clean, partials) = if evidence.capture.log.is_empty() { from_script(evidence) } else { from_log(evidence) };
    // A set: a long Session has many clean answers, and every carried text is looked up.
    let clean: HashSet<String> = clean.into_iter().collect();
    // Each partial text once, named by its first origin: a failing provider retried streams the
    // same text again, and one carried copy is one finding, not one per failed attempt.
    let mut seen = HashSet::new();
    let partials = partials
        .into_iter()
        .filter(|partial| {
            !partial.text.is_empty() && !clean.contains(&partial.text) && seen.insert(partial.text.clone())
        })
        .collect();
    (clean, partials)
}

/// Clean answers and partial texts (with where they come from) as the Log records them.
fn from_log(evidence: &Evidence) -> (Vec<String>, Vec<Partial>) {
    let clean = evidence
        .lines
        .iter()
        .filter_map(Line::assistant_message)
        .filter(|message| !message.partial)
        .filter_map(|message| message.text.map(str::to_owned))
        .collect();
    let turn_of = |seq: u64| evidence.audit.turns.iter().filter(|turn| turn.user_seq <= seq).count();
    let partials = evidence
        .lines
        .iter()
        .filter(|line| line.is_partial_assistant())
        .filter_map(|line| {
            let seq = line.seq?;
            let text = line.assistant_message()?.text?.to_owned();
            Some(Partial { origin: format!("seq {seq}"), text, turn: Some(turn_of(seq)).filter(|n| *n > 0) })
        })
        .collect();
    (clean, partials)
}

/// For an implementation without a Log: the text each served response streamed, clean when
/// the response completed, partial when it failed or the client closed it during its stall
/// (then what came before the stall is all it streamed).
fn from_script(evidence: &Evidence) -> (Vec<String>, Vec<Partial>) {
    let (mut clean, mut partials) = (Vec::new(), Vec::new());
    let turns = request_turns(evidence);
    for (idx, request) in evidence.capture.requests.iter().enumerate() {
        let Some(response) = served(evidence, request) else { continue };
        let closed_in_stall = !response.pause.is_empty()
            && evidence
                .capture
                .timings
                .get(idx)
                .and_then(|timing| timing.ended)
                .is_some_and(|ended| ended.how == StreamEnd::ClientClosed);
        let turn = turns[idx].map(|turn| turn + 1);
        if response.fails() {
            let origin = format!("the failed response to request {}", idx + 1);
            partials.push(Partial { origin, text: response.visible_text(), turn });
        } else if closed_in_stall {
            let origin = format!("the response to request {} the client closed mid-stream", idx + 1);
            partials.push(Partial { origin, text: response.text_before_pause(), turn });
        } else {
            clean.push(response.visible_text());
        }
    }
    (clean, partials)
}
