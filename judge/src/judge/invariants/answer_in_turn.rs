//! ACP-ANSWER-IN-TURN: the answer belongs to its turn. The `agent_message_chunk` text the client
//! is shown during prompt N never holds another turn's answer (an agent that shows a stale
//! answer lies about which question it answers). Judged from the script, the requests and the
//! transcript alone, so an agent without a Log or `session/load` that shows a stale answer is
//! caught all the same.
//!
//! Also ACP-ANSWER-SHOWN (a SHOULD), from the same reading of each turn: what the client is shown during prompt N is made
//! of what the script streamed for turn N, in order (each response's text whole or a prefix
//! of it), with at most notices of the agent's own before and after it; a completed turn's answer, the text of
//! its last clean response, is shown whole; and the answer to a prompt sent while the turn ran
//! is not shown before the turn is answered. ACP says updates during a prompt report its turn,
//! not that every word of the model is shown.

use std::collections::BTreeSet;

use gauntlet_agent::TerminalStatus;
use serde_json::Value;

use crate::judge::evidence::{Evidence, LastAnswer};
use crate::judge::transcript::{chunk_text, shown_chunks, shown_text};
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::{Streamed, streamed_per_turn};
use crate::scenario::Scenario;

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-ANSWER-IN-TURN", also: &[SHOWN], name: "answer_in_turn", applies: Scope::Run, check };

/// What a turn's shown text breaks when it is only less, more or out of place.
const SHOWN: &str = "ACP-ANSWER-SHOWN";

/// Each turn whose shown text is not made of its own streamed text: a violation of
/// ACP-ANSWER-IN-TURN when it showed another turn's answer, else of ACP-ANSWER-SHOWN.
fn check(evidence: &Evidence) -> Vec<Violation> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    let live: Vec<_> = evidence.exchanges().iter().filter(|exchange| !exchange.busy).collect();
    // The scenario's turns are the last ones of the transcript (a preloaded Log adds none).
    let first = live.len().saturating_sub(scenario.turns.len());
    let streamed = streamed_per_turn(evidence);
    let driven = evidence.driven_turns(scenario.turns.len());
    // Every scripted text, read once: a turn's check may look through all of them.
    let scripted = scripted_texts(scenario);
    let mut problems = Vec::new();
    for (idx, pieces) in streamed.iter().enumerate() {
        // A prompt never sent or never answered is the run's fault, not this rule's.
        let Some(exchange) = live.get(first + idx).filter(|exchange| exchange.answer.is_some()) else { continue };
        let shown = shown_text(exchange);
        let turn = driven.get(idx);
        if turn.is_some_and(|turn| turn.answer == LastAnswer::Invented) {
            continue;
        }
        let completed = turn.and_then(|turn| turn.status) == Some(TerminalStatus::Completed);
        // A refusal need not be shown whole when the answer says it: an agent may keep it to
        // the `refusal` stop reason or an error (ACP-REFUSAL-STOP-REASON judges which); one that
        // answers the turn as a plain completion owes it the words the model gave.
        let said = exchange.answer.is_some_and(|answer| {
            answer.get("error").is_some()
                || answer.pointer("/result/stopReason").and_then(Value::as_str) == Some("refusal")
        });
        let refused = said && pieces.last().is_some_and(|piece| piece.clean && piece.refused);
        let answer = if completed && !refused { pieces.iter().rposition(|piece| piece.clean) } else { None };
        let chunks = shown_chunks(exchange);
        // A turn that did not complete, whose answer was empty or a refusal, may show only notices.
        let unanswered = !completed || refused || turn.is_some_and(|turn| turn.answer == LastAnswer::Empty);
        if made_of(&shown, pieces, answer) || around_own_notices(&chunks, pieces, answer, &scripted, unanswered) {
            continue;
        }
        let n = idx + 1;
        let other = other_turns_answer(scenario, idx, &shown, pieces);
        let busy = busy_answer(scenario, &shown, pieces);
        let streamed_text: Vec<&str> = pieces.iter().map(|piece| piece.text.as_str()).collect();
        if let Some((other, text)) = other {
            let message = format!(
                "turn {n} was shown turn {other}'s answer {text:?}: the client saw {shown:?}{}",
                replayed_late(exchange)
            );
            problems.push(Violation::in_turn(n, message));
            continue;
        }
        let problem = match (busy, answer.map(|idx| &pieces[idx].text)) {
            (Some(text), _) => format!(
                "turn {n} was shown {text:?}, the answer to the prompt sent while it ran, before turn {n} was answered: the client saw {shown:?}"
            ),
            (None, Some(answer)) if shown.is_empty() => format!(
                "turn {n} completed ({}) but its answer {answer:?} was never shown: no agent_message_chunk during the prompt",
                turn.map_or("", |turn| turn.source)
            ),
            (None, Some(answer)) => format!(
                "turn {n} completed ({}) but the client saw {shown:?}, not its answer {answer:?} whole after what the script streamed before it ({streamed_text:?})",
                turn.map_or("", |turn| turn.source)
            ),
            (None, None) => format!(
                "turn {n}: the client saw {shown:?}, which is not made of what the script streamed for the turn ({streamed_text:?})"
            ),
        };
        problems.push(Violation::in_turn(n, problem).of(SHOWN));
    }
    problems
}

/// The visible text of every response the scenario scripts, the empty ones left out.
fn scripted_texts(scenario: &Scenario) -> Vec<String> {
    scenario
        .turns
        .iter()
        .flat_map(|turn| turn.respond.iter().chain(&turn.busy_respond).chain(&turn.continue_respond))
        .map(|response| response.visible_text())
        .filter(|text| !text.is_empty())
        .collect()
}

/// Whether `text` is in what the script streamed for the turn itself.
fn own(pieces: &[Streamed], text: &str) -> bool {
    pieces.iter().any(|piece| piece.text.contains(text))
}

/// The first answer scripted for a turn other than turn `idx` (0-based) that `shown` holds and
/// the turn's own streamed text does not, with that turn's number (from 1).
fn other_turns_answer(scenario: &Scenario, idx: usize, shown: &str, pieces: &[Streamed]) -> Option<(usize, String)> {
    scenario.turns.iter().enumerate().filter(|(other, _)| *other != idx).find_map(|(other, turn)| {
        turn.respond
            .iter()
            .map(|response| response.visible_text())
            .find(|text| !text.is_empty() && shown.contains(text.as_str()) && !own(pieces, text))
            .map(|text| (other + 1, text))
    })
}

/// The answer to a prompt the client sent while a turn ran, when `shown` holds it before that
/// turn was answered (an agent that queued the prompt and ran it first).
fn busy_answer(scenario: &Scenario, shown: &str, pieces: &[Streamed]) -> Option<String> {
    scenario
        .turns
        .iter()
        .flat_map(|turn| turn.busy_respond.iter())
        .map(|response| response.visible_text())
        .find(|text| !text.is_empty() && shown.contains(text.as_str()) && !own(pieces, text))
}

/// Why an earlier answer shows during a prompt, when the updates say: a `user_message_chunk`
/// during a live prompt is a replay of the conversation, which ACP has an agent stream before
/// it answers `session/load` (gemini-cli streams it after, into the next prompt).
fn replayed_late(exchange: &crate::judge::transcript::Exchange) -> &'static str {
    let replay = exchange.updates.iter().any(|update| chunk_text(update, "user_message_chunk").is_some());
    if replay {
        " (a replay of the conversation, user_message_chunk and all, arrived during the prompt: \
         ACP has session/load answered only once the replay is streamed)"
    } else {
        ""
    }
}

/// True when `shown` is the texts of `pieces` in order, each whole or a prefix of it (a response
/// cut short, or an agent that showed less), and the piece at `whole` shown whole.
fn made_of(shown: &str, pieces: &[Streamed], whole: Option<usize>) -> bool {
    let mut reachable = BTreeSet::from([0usize]);
    for (idx, piece) in pieces.iter().enumerate() {
        let mut next = BTreeSet::new();
        for &at in &reachable {
            let common = common_prefix(&shown[at..], &piece.text);
            if whole == Some(idx) {
                if common == piece.text.len() {
                    next.insert(at + common);
                }
            } else {
                next.extend(
                    piece
                        .text
                        .char_indices()
                        .map(|(len, _)| len)
                        .chain([piece.text.len()])
                        .filter(|len| *len <= common)
                        .map(|len| at + len),
                );
            }
        }
        reachable = next;
    }
    reachable.contains(&shown.len())
}

/// True when the chunks shown open or close with notices of the agent's own, whole chunks
/// (codex's "Context compacted" before the answer of a turn it compacted in; an "Error: ..."
/// after a failed turn's partial text, or alone), and the chunks between are [`made_of`]
/// `pieces`. ACP lets an agent show its own messages during a prompt; a notice chunk holds no
/// scripted text and is no start of one (a cut piece of another turn's answer is not the
/// agent's own words), and the text between is judged as if it stood alone. Only a turn that
/// did not complete (`unanswered`) may show notices and nothing else: a completed turn that
/// shows only words of the agent's own shows an answer the model never gave (unless the model's
/// answer was empty: then a notice says so).
fn around_own_notices(
    chunks: &[&str],
    pieces: &[Streamed],
    whole: Option<usize>,
    scripted: &[String],
    unanswered: bool,
) -> bool {
    let own = |chunk: &str| !scripted.iter().any(|text| chunk.contains(text.as_str()) || text.starts_with(chunk));
    let leading = chunks.iter().take_while(|chunk| own(chunk)).count();
    let trailing = chunks.iter().rev().take_while(|chunk| own(chunk)).count();
    (0..=leading).any(|start| {
        (0..=trailing.min(chunks.len() - start)).any(|end| {
            let between = &chunks[start..chunks.len() - end];
            (unanswered || !between.is_empty()) && made_of(&between.concat(), pieces, whole)
        })
    })
}

/// The length in bytes of the longest common prefix of two strings, on a character boundary.
fn common_prefix(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .take_while(|((_, x), y)| x == y)
        .map(|((at, x), _)| at + x.len_utf8())
        .last()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{Capture, Request};
    use crate::judge::fixture::{assistant, body, check_played_as, chunk, entry, prompt, requests, scenario, user};
    use serde_json::json;

    const FAILED_SECOND: &str = "title = \"t\"\n[[turn]]\nprompt = \"Name a prime.\"\nrespond = [{ text = [\"Seven.\"] }]\n[[turn]]\nprompt = \"Another one?\"\nexpect = \"failed\"\nrespond = [{ status = 500 }]\n";

    const TWO_TURNS: &str = "title = \"t\"\n[[turn]]\nprompt = \"Name a prime.\"\nrespond = [{ text = [\"Seven.\"] }]\n[[turn]]\nprompt = \"Another one?\"\nrespond = [{ text = [\"Eleven.\"] }]\n";

    /// Two prompts, each answered `end_turn`, showing `first` and `second`.
    fn shown(first: &[&str], second: &[&str]) -> Capture {
        let mut acp = vec![entry("client", prompt(1, "Name a prime."))];
        acp.extend(first.iter().map(|text| entry("agent", chunk("agent_message_chunk", text))));
        acp.push(entry("agent", json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}})));
        acp.push(entry("client", prompt(2, "Another one?")));
        acp.extend(second.iter().map(|text| entry("agent", chunk("agent_message_chunk", text))));
        acp.push(entry("agent", json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})));
        let bodies = vec![
            body(vec![user("Name a prime.")]),
            body(vec![user("Name a prime."), assistant("Seven."), user("Another one?")]),
        ];
        Capture { acp, requests: requests(bodies), ..Capture::default() }
    }

    #[test]
    fn each_answer_in_its_own_turn_passes() {
        assert!(
            check_played_as(INVARIANT, INVARIANT.id, &shown(&["Sev", "en."], &["Eleven."]), &scenario(TWO_TURNS))
                .is_empty()
        );
    }

    #[test]
    fn an_answer_one_turn_late_is_caught() {
        let late = shown(&[], &["Seven."]);
        assert_eq!(
            check_played_as(INVARIANT, INVARIANT.id, &late, &scenario(TWO_TURNS)),
            ["turn 2 was shown turn 1's answer \"Seven.\": the client saw \"Seven.\""]
        );
        assert_eq!(
            check_played_as(INVARIANT, SHOWN, &late, &scenario(TWO_TURNS)),
            [
                "turn 1 completed (the script forces) but its answer \"Seven.\" was never shown: no agent_message_chunk during the prompt"
            ]
        );
    }

    /// A replay streamed after session/load was answered lands in the next prompt: the
    /// finding says so.
    #[test]
    fn a_late_replay_is_named() {
        let mut capture = shown(&["Seven."], &["Seven.", "Eleven."]);
        let at = capture.acp.len() - 3;
        capture.acp.insert(at, entry("agent", chunk("user_message_chunk", "Name a prime.")));
        let found = check_played_as(INVARIANT, INVARIANT.id, &capture, &scenario(TWO_TURNS));
        assert_eq!(found.len(), 1);
        assert!(
            found[0].starts_with("turn 2 was shown turn 1's answer \"Seven.\"")
                && found[0].contains("a replay of the conversation"),
            "{found:?}"
        );
    }

    #[test]
    fn a_partial_answer_of_a_completed_turn_is_caught() {
        assert_eq!(
            check_played_as(INVARIANT, SHOWN, &shown(&["Seven."], &["Elev"]), &scenario(TWO_TURNS)),
            [
                "turn 2 completed (the script forces) but the client saw \"Elev\", not its answer \"Eleven.\" whole after what the script streamed before it ([\"Eleven.\"])"
            ]
        );
    }

    #[test]
    fn a_failed_turn_may_show_a_prefix_and_a_retry_before_text_streams_nothing() {
        let text = "title = \"t\"\n[[turn]]\nprompt = \"a\"\nexpect = \"partial_failed\"\nrespond = [{ status = 500 }, { text = [\"Useful \", \"partial\"], then = \"eof\" }]\n";
        let mut acp = vec![entry("client", prompt(1, "a")), entry("agent", chunk("agent_message_chunk", "Useful "))];
        acp.push(entry("agent", json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "m"}})));
        let capture = Capture {
            acp,
            requests: requests(vec![body(vec![user("a")]), body(vec![user("a")])]),
            ..Capture::default()
        };
        assert!(check_played_as(INVARIANT, INVARIANT.id, &capture, &scenario(text)).is_empty());
    }

    #[test]
    fn text_the_script_never_streamed_is_caught() {
        let mut capture = shown(&["All done."], &["Eleven."]);
        // Only the second request was sent (answered by the script's second response).
        let second = body(vec![user("Name a prime."), assistant("Seven."), user("Another one?")]);
        capture.requests = Request::chained([("root".to_owned(), Some(1), second)]);
        assert_eq!(
            check_played_as(INVARIANT, SHOWN, &capture, &scenario(TWO_TURNS)),
            ["turn 1: the client saw \"All done.\", which is not made of what the script streamed for the turn ([])"]
        );
    }

    #[test]
    fn a_notice_of_the_agents_own_before_the_answer_passes_but_never_another_turns_text() {
        let notice = shown(&["Context compacted.\n", "Seven."], &["Eleven."]);
        assert!(check_played_as(INVARIANT, INVARIANT.id, &notice, &scenario(TWO_TURNS)).is_empty());
        assert!(check_played_as(INVARIANT, SHOWN, &notice, &scenario(TWO_TURNS)).is_empty());
        // A notice may close the turn too, and a turn may show only notices (issue 31: a final
        // "Error: ..." could never pass, since only leading notices were tried).
        let closing = shown(&["Seven.", "\n(saved to notes)"], &["Error: the model did not answer."]);
        assert!(check_played_as(INVARIANT, SHOWN, &closing, &scenario(FAILED_SECOND)).is_empty());
        let cut = shown(&["Seven."], &["Sev", "Eleven."]);
        assert_eq!(
            check_played_as(INVARIANT, SHOWN, &cut, &scenario(TWO_TURNS)),
            [
                "turn 2 completed (the script forces) but the client saw \"SevEleven.\", not its answer \"Eleven.\" whole after what the script streamed before it ([\"Eleven.\"])"
            ]
        );
        let stale = shown(&["Eleven.", "Seven."], &["Eleven."]);
        assert_eq!(
            check_played_as(INVARIANT, INVARIANT.id, &stale, &scenario(TWO_TURNS)),
            ["turn 1 was shown turn 2's answer \"Eleven.\": the client saw \"Eleven.Seven.\""]
        );
    }

    /// A refusal may be shown whole, or not at all when the answer says `refusal`, but not
    /// twice; answered `end_turn`, its words are the answer the client is owed (codex-acp's
    /// shape: nothing shown, `end_turn`).
    #[test]
    fn a_refusal_may_be_shown_or_kept_to_the_stop_reason() {
        let refusing = TWO_TURNS.replace("{ text = [\"Eleven.\"] }", "{ refusal = [\"No.\"] }");
        let answered = |capture: Capture, reason: &str| {
            let mut capture = capture;
            let last = capture.acp.len() - 1;
            capture.acp[last] = entry("agent", json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": reason}}));
            capture
        };
        for second in [&[][..], &["No."][..]] {
            let capture = answered(shown(&["Seven."], second), "refusal");
            let found = check_played_as(INVARIANT, SHOWN, &capture, &scenario(&refusing));
            assert!(found.is_empty(), "{second:?}: {found:?}");
        }
        let twice = answered(shown(&["Seven."], &["No.", "No."]), "refusal");
        assert_eq!(check_played_as(INVARIANT, SHOWN, &twice, &scenario(&refusing)).len(), 1);
        let hidden = check_played_as(INVARIANT, SHOWN, &shown(&["Seven."], &[]), &scenario(&refusing));
        assert_eq!(hidden.len(), 1, "{hidden:?}");
        assert!(hidden[0].contains("\"No.\" was never shown"), "{hidden:?}");
    }

    #[test]
    fn pieces_are_matched_in_order_with_prefixes() {
        let piece = |text: &str, clean| Streamed { text: text.to_owned(), clean, refused: false };
        let pieces = [piece("aa", false), piece("ab", true)];
        assert!(made_of("aab", &pieces, Some(1)));
        assert!(made_of("ab", &pieces, Some(1)));
        assert!(!made_of("aa", &pieces, Some(1)));
        assert!(!made_of("abaa", &pieces, None));
        assert!(made_of("", &pieces, None));
    }
}
