//! ACP-LOAD-CLEAN: `session/load` replays the clean transcript: for a turn of this run that did
//! not complete, nothing beyond the text of its responses that completed cleanly (commentary
//! before a tool call, say), so no partial or failure text is ever shown as transcript on load
//! (seed 000: "session replay must not project partial assistant evidence as a clean
//! transcript"). Turns are read as ACP-LOAD-MATCHES-LIVE reads them, by their prompts; what a
//! completed turn replays is that rule's.
//!
//! What the sentence forbids is partial assistant evidence: text the Provider streamed for the
//! turn. A replay that holds none of it beyond the clean text, only the agent's own words
//! ("Error: Failed to get response from the AI model"), shows the failure, as seed 000 asks
//! of a presenter, and is no finding here (issue 31).

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::load_replay::read;

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-LOAD-CLEAN", also: &[], name: "load_replays_clean_transcript", applies: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<Violation> {
    let capture = evidence.capture;
    if capture.acp.is_empty() || capture.acp_load.is_empty() {
        // Nothing was loaded: the implementation cannot, or the run ended early.
        return Vec::new();
    }
    // A refused load, or a prompt never replayed: ACP-LOAD-MATCHES-LIVE says so.
    let Ok((turns, _)) = read(evidence) else { return Vec::new() };
    let mut problems = Vec::new();
    // A busy prompt's turn has no scripted outcome of its own to hold its replay to.
    // How a turn ended on an answer the mock invented is not known, so neither is its replay's.
    for turn in turns.iter().filter(|turn| !turn.completed && !turn.invented && !turn.exchange.busy) {
        let Some((_, agent)) = &turn.replayed else { continue };
        let mut beyond = agent.clone();
        for clean in &turn.clean {
            if let Some(at) = beyond.find(clean.as_str()) {
                beyond.replace_range(at..at + clean.len(), "");
            }
        }
        // With the script known, only the Provider's partial text is partial evidence; without
        // it, any text beyond the clean text may be.
        let own_words =
            evidence.scenario.is_some() && !turn.partial.iter().any(|partial| holds_part_of(&beyond, partial));
        if beyond.trim().is_empty() || own_words {
            continue;
        }
        let status = turn.status.map_or("no terminal state", |status| status.as_str());
        let message = if turn.clean.is_empty() {
            format!("turn {} ({status}): load replayed assistant text {agent:?}, expected none", turn.n)
        } else {
            format!(
                "turn {} ({status}): load replayed assistant text {agent:?}; beyond its clean text {:?}, {beyond:?} is partial text",
                turn.n, turn.clean
            )
        };
        problems.push(Violation::in_turn(turn.n, message));
    }
    problems
}

/// Whether `text` holds `partial`, or a start of it long enough to be its words and not a
/// coincidence (a response cut short is replayed as far as it streamed).
fn holds_part_of(text: &str, partial: &str) -> bool {
    let partial = partial.trim();
    let start: String = partial.chars().take(PART_MIN_CHARS).collect();
    text.contains(partial) || text.contains(start.as_str())
}

/// The characters of a partial response's start that count as its text when replayed.
const PART_MIN_CHARS: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{Capture, Reported};
    use crate::judge::fixture::{capture, check, chunk, entry, prompt};
    use serde_json::json;

    fn partial_failed(load_chunks: &[&str]) -> Capture {
        let mut capture = capture(
            &[
                ("user_message", json!({"text": "Summarise"})),
                ("assistant_message", json!({"text": "Useful", "metadata": {"partial": true}})),
                ("turn_failed", json!({"terminal_status": "partial_failed"})),
            ],
            &[],
        );
        capture.reported.push(Reported { stop_reason: None, error: Some(json!({})) });
        capture.acp = vec![
            entry("client", prompt(1, "Summarise")),
            entry("agent", chunk("agent_message_chunk", "Useful")),
            entry("agent", json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "m"}})),
        ];
        capture.acp_load = std::iter::once(entry("agent", chunk("user_message_chunk", "Summarise")))
            .chain(load_chunks.iter().map(|text| entry("agent", chunk("agent_message_chunk", text))))
            .collect();
        capture
    }

    #[test]
    fn partial_text_replayed_on_load_is_caught() {
        assert_eq!(
            check(INVARIANT, &partial_failed(&["Useful"])),
            ["turn 1 (partial_failed): load replayed assistant text \"Useful\", expected none"]
        );
    }

    #[test]
    fn a_clean_load_passes() {
        assert!(check(INVARIANT, &partial_failed(&[])).is_empty());
    }

    /// A turn that said something cleanly before it failed (commentary before a tool call) may
    /// replay that text: it is no partial evidence. Its failed response's text is.
    #[test]
    fn a_failed_turns_clean_commentary_may_be_replayed_but_not_its_partial() {
        use crate::judge::fixture::{body, check_played, requests, scenario, user};
        let played = scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"Summarise\"\nexpect = \"partial_failed\"\n\
             respond = [{ text = [\"Reading it.\"], calls = [{ name = \"read\", args = {} }] }, { text = [\"Useful\"], then = \"eof\" }]\n",
        );
        let asked = |load: &[&str]| {
            let mut capture = partial_failed(load);
            capture.requests = requests(vec![body(vec![user("Summarise")]), body(vec![user("Summarise")])]);
            capture
        };
        assert!(check_played(INVARIANT, &asked(&["Reading it."]), &played).is_empty());
        let capture = asked(&["Reading it.", "Useful"]);
        assert_eq!(
            check_played(INVARIANT, &capture, &played),
            [
                "turn 1 (partial_failed): load replayed assistant text \"Reading it.Useful\"; beyond its clean text [\"Reading it.\"], \"Useful\" is partial text"
            ]
        );
        // The agent's own labelled diagnostic, replayed for the failed turn, shows the failure:
        // no partial evidence (issue 31: 14 such lines on one agent).
        let notice = "Error: Failed to get response from the AI model; retried 5 times";
        assert!(check_played(INVARIANT, &asked(&["Reading it.", notice]), &played).is_empty());
    }
}
