//! ACP-LOAD-MATCHES-LIVE: `session/load` replays the conversation (ACP: "the Agent MUST replay
//! the entire conversation to the Client"). Every live turn's prompt is replayed, in order, as
//! user text that holds it; a completed turn replays its answer: the assistant text the client
//! saw during its prompt, or the model's answer that ended it (where the live view showed it
//! wrong, that is ACP-ANSWER-IN-TURN's). A turn that did not complete is ACP-LOAD-CLEAN's.
//!
//! Also ACP-LOAD-AS-SHOWN (a SHOULD), from the same reading of the replay: the replay is the live view again, nothing
//! more: each prompt's user text exactly, no user text that was never a prompt (an agent's
//! internal records), and a completed turn's assistant text exactly as shown live or the
//! answer alone. ACP asks for the conversation, not for its words to the byte.

use gauntlet_agent::TerminalStatus;
use serde_json::Value;

use super::{Invariant, Scope, Violation};
use crate::capture::Capture;
use crate::judge::views::{Exchange, Streamed, chunk_text, shown_text, streamed_per_turn};
use crate::judge::{Evidence, LastAnswer};

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-LOAD-MATCHES-LIVE", also: &[AS_SHOWN], name: "load_matches_live", applies: Scope::Run, check };

/// What a replay breaks when it holds the conversation but is not the live view again.
const AS_SHOWN: &str = "ACP-LOAD-AS-SHOWN";

/// One live turn and what the load replayed for it (ACP-LOAD-CLEAN reads the same).
pub(super) struct Turn<'a> {
    /// Its number in the Session (from 1).
    pub n: usize,
    /// Its prompt, as the client sent it live, with what it was shown and answered.
    pub exchange: &'a Exchange<'a>,
    /// How it ended, as driven.
    pub status: Option<TerminalStatus>,
    /// Completed, as driven.
    pub completed: bool,
    /// How it ended rests on an answer the mock invented, so it is not judged.
    pub invented: bool,
    /// The model's answer that ended it, when the script gives one.
    pub answer: Option<String>,
    /// The text of each response of it that completed cleanly, as the script streamed it.
    pub clean: Vec<String>,
    /// The text of each response of it that did not complete cleanly (partial evidence), as
    /// the script streamed it.
    pub partial: Vec<String>,
    /// The replayed user text that holds its prompt, and the assistant text replayed from it
    /// to the next prompt's; `None` when no replayed user text holds the prompt.
    pub replayed: Option<(String, String)>,
}

impl Turn<'_> {
    /// Whether its replayed assistant text holds its answer: what the client was shown live,
    /// or the model's answer; trivially when there was neither, and when nothing was shown live
    /// and nothing is replayed (the load then matches the live view: that the answer was never
    /// shown is ACP-ANSWER-SHOWN's).
    fn holds_answer(&self) -> bool {
        let Some((_, agent)) = &self.replayed else { return false };
        let shown = shown_text(self.exchange);
        let holds = |text: &str| !text.is_empty() && agent.contains(text);
        holds(&shown)
            || self.answer.as_deref().is_some_and(holds)
            || (shown.is_empty() && (self.answer.is_none() || agent.is_empty()))
    }
}

/// The replay read against the live turns: `Err` with the one finding when the load was
/// refused; else each live turn, and the replayed user texts that held no prompt.
pub(super) fn read<'e>(evidence: &'e Evidence) -> Result<(Vec<Turn<'e>>, Vec<String>), String> {
    let capture = evidence.capture;
    // A reload mid-conversation is in the live transcript, the final replay in its own.
    if let Some(finding) = refused_load(capture) {
        return Err(finding);
    }
    // A busy prompt the agent ran as a turn of its own is a turn of the Session; one it refused
    // is not.
    let ran =
        |exchange: &&Exchange| !exchange.busy || exchange.answer.is_some_and(|answer| answer.get("result").is_some());
    let (live, merged): (Vec<_>, Vec<_>) = evidence.exchanges().iter().partition(ran);
    let replayed = replayed_turns(&capture.acp_load);
    // The scenario's turns are the prompts not sent while another ran (a busy prompt the agent
    // ran as a turn of its own has no scripted outcome of its own): the last of those.
    let n_plain = live.iter().filter(|exchange| !exchange.busy).count();
    let driven = evidence.driven_turns(n_plain);
    // The answers the script streamed, by scenario turn.
    let streamed = streamed_per_turn(evidence);
    let first_scenario = n_plain.saturating_sub(streamed.len());
    let first_audited = evidence.audit.turns.len().saturating_sub(n_plain);
    let starts = prompt_starts(&live, &replayed);
    let matched: Vec<usize> = starts.iter().flatten().copied().collect();
    let mut turns = Vec::new();
    let mut extra = Vec::new();
    let mut plain: usize = 0;
    for (exchange, start) in live.into_iter().zip(&starts) {
        let replayed = start.map(|start| replayed_from(&replayed, start, &matched, &merged, &mut extra));
        // A busy prompt's turn: judged only on its prompt being replayed.
        let idx = (!exchange.busy).then(|| {
            plain += 1;
            plain - 1
        });
        let pieces = idx.and_then(|idx| idx.checked_sub(first_scenario)).and_then(|turn| streamed.get(turn));
        let (clean, partial) = clean_and_partial(pieces);
        let answer = pieces.and_then(|pieces| pieces.iter().rfind(|piece| piece.clean)).map(|piece| piece.text.clone());
        let driven = idx.and_then(|idx| driven.get(idx));
        let (status, invented) =
            (driven.and_then(|turn| turn.status), driven.is_some_and(|turn| turn.answer == LastAnswer::Invented));
        let completed = status == Some(TerminalStatus::Completed);
        let answer = answer.filter(|answer| !answer.is_empty());
        let n = first_audited + turns.len() + 1;
        turns.push(Turn { n, exchange, status, completed, invented, answer, clean, partial, replayed });
    }
    // What is replayed before the first live prompt is the Session's earlier history (a
    // preloaded Log), which the live view of this run never showed.
    Ok((turns, extra))
}

/// The finding when `session/load` of the Session just served was refused, in the live
/// transcript (a reload mid-conversation) or the final replay's.
fn refused_load(capture: &Capture) -> Option<String> {
    let refusal = load_refusal(&capture.acp).or_else(|| load_refusal(&capture.acp_load))?;
    let advertised = capture.acp.iter().chain(&capture.acp_load).any(|entry| {
        entry.pointer("/message/result/agentCapabilities/loadSession").and_then(Value::as_bool) == Some(true)
    });
    let claim =
        if advertised { "an agent that advertises `loadSession`" } else { "an agent whose profile declares `load`" };
    Some(format!(
        "session/load of the Session it had just served was refused, by {claim}, so nothing of the conversation was replayed: {refusal}"
    ))
}

/// Where each live prompt's replay starts: the first replayed user text, from the last match
/// on, that holds the prompt; `None` for a prompt none holds.
fn prompt_starts(live: &[&Exchange], replayed: &[(String, String)]) -> Vec<Option<usize>> {
    let mut at = 0;
    let mut starts: Vec<Option<usize>> = Vec::new();
    for exchange in live {
        let found = replayed[at..].iter().position(|(user, _)| user.contains(exchange.text.trim()));
        starts.push(found.map(|offset| at + offset));
        at = found.map_or(at, |offset| at + offset + 1);
    }
    starts
}

/// The replayed user text at `start` and the assistant text replayed from it to the next
/// matched prompt's; the user texts between that are no prompt go to `extra`.
fn replayed_from(
    replayed: &[(String, String)],
    start: usize,
    matched: &[usize],
    merged: &[&Exchange],
    extra: &mut Vec<String>,
) -> (String, String) {
    let end = matched.iter().copied().find(|next| *next > start).unwrap_or(replayed.len());
    let mut agent = String::new();
    for (offset, (user, text)) in replayed[start..end].iter().enumerate() {
        agent.push_str(text);
        // A busy prompt the agent took into the running turn is replayed inside it.
        let merged_prompt = merged.iter().any(|busy| busy.text == *user);
        if offset > 0 && !merged_prompt {
            extra.push(user.clone());
        }
    }
    (replayed[start].0.clone(), agent)
}

/// The texts of a turn's responses that completed cleanly (non-empty), and of those that did
/// not (not blank).
fn clean_and_partial(pieces: Option<&Vec<Streamed>>) -> (Vec<String>, Vec<String>) {
    let clean: Vec<String> = pieces
        .into_iter()
        .flatten()
        .filter(|piece| piece.clean && !piece.text.is_empty())
        .map(|piece| piece.text.clone())
        .collect();
    let partial: Vec<String> = pieces
        .into_iter()
        .flatten()
        .filter(|piece| !piece.clean && !piece.text.trim().is_empty())
        .map(|piece| piece.text.clone())
        .collect();
    (clean, partial)
}

fn check(evidence: &Evidence) -> Vec<Violation> {
    if evidence.capture.acp.is_empty() || evidence.capture.acp_load.is_empty() {
        // Nothing was loaded: the implementation cannot, or the run ended early.
        return Vec::new();
    }
    let (turns, extra) = match read(evidence) {
        Ok(read) => read,
        Err(refused) => return vec![Violation::in_load(refused)],
    };
    let mut problems = Vec::new();
    for turn in &turns {
        let Some((_, agent)) = &turn.replayed else {
            problems.push(format!("turn {}: load never replayed its prompt {:?}", turn.n, turn.exchange.text));
            continue;
        };
        if !turn.completed {
            continue;
        }
        if !turn.holds_answer() {
            let shown = shown_text(turn.exchange);
            let answer = turn
                .answer
                .as_ref()
                .filter(|answer| **answer != shown)
                .map(|answer| format!(" (its answer: {answer:?})"));
            problems.push(format!(
                "turn {} (completed): load replayed assistant text {agent:?}, not what the client was shown live, {shown:?}{}",
                turn.n,
                answer.unwrap_or_default()
            ));
        }
    }
    let mut violations: Vec<Violation> = problems.into_iter().map(Violation::in_load).collect();
    violations.extend(as_shown(&turns, &extra).into_iter().map(|problem| Violation::in_load(problem).of(AS_SHOWN)));
    violations
}

/// Whether `user` is the prompt `text` with its `links` written after it as text (a link in
/// Markdown, its name and uri): the prompt replayed whole, the links as the agent keeps them.
fn links_rendered(user: &str, text: &str, links: &[(String, String)]) -> bool {
    let Some(rest) = user.strip_prefix(text).filter(|_| !links.is_empty()) else { return false };
    if !links.iter().all(|(uri, _)| rest.contains(uri.as_str())) {
        return false;
    }
    let mut left = rest.to_owned();
    for (uri, name) in links {
        left = left.replace(uri.as_str(), "");
        if !name.is_empty() {
            left = left.replace(name.as_str(), "");
        }
    }
    left.chars().all(|c| c.is_whitespace() || "[]()<>@-*:".contains(c))
}

/// Where the replay holds the conversation but is not the live view again.
fn as_shown(turns: &[Turn], extra: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    // A prompt's link replayed as a user text of its own (opencode keeps it so) was sent.
    let links: Vec<(String, String)> = turns.iter().flat_map(|turn| turn.exchange.links.iter().cloned()).collect();
    let a_link = |text: &str| links.iter().any(|link| links_rendered(text, "", std::slice::from_ref(link)));
    let extra: Vec<&String> = extra.iter().filter(|text| !(a_link(text) || links_rendered(text, "", &links))).collect();
    if !extra.is_empty() {
        problems.push(format!("load replayed user text that was never a prompt: {extra:?}"));
    }
    for turn in turns {
        let Some((user, agent)) = &turn.replayed else { continue };
        if *user != turn.exchange.text && !links_rendered(user, &turn.exchange.text, &turn.exchange.links) {
            problems.push(format!(
                "turn {}: load replayed the user text {user:?}, the prompt was {:?}",
                turn.n, turn.exchange.text
            ));
        }
        let shown = shown_text(turn.exchange);
        // Exactly, where it holds the answer at all (else the MUST has said so).
        if turn.completed && turn.holds_answer() && *agent != shown && Some(agent) != turn.answer.as_ref() {
            problems.push(format!(
                "turn {} (completed): load replayed assistant text {agent:?}, the client was shown {shown:?} live",
                turn.n
            ));
        }
    }
    problems
}

/// The replay split into user turns: `(user text, assistant text)`.
fn replayed_turns(transcript: &[Value]) -> Vec<(String, String)> {
    let mut turns: Vec<(String, String)> = Vec::new();
    for update in transcript.iter().filter_map(|entry| entry.pointer("/message/params/update")) {
        if !for_the_user(update) {
            continue;
        }
        if let Some(text) = chunk_text(update, "user_message_chunk") {
            turns.push((text.to_owned(), String::new()));
        } else if let Some(text) = chunk_text(update, "agent_message_chunk")
            && let Some((_, agent)) = turns.last_mut()
        {
            agent.push_str(text);
        }
    }
    turns
}

/// Whether an update's content is meant for the user: not annotated with an `audience` that
/// leaves the user out (ACP's content annotations: an agent's own note to its model, such as
/// opencode's "Continue if you have next steps" after a compaction, is `["assistant"]`, which
/// a client does not show).
fn for_the_user(update: &Value) -> bool {
    match update.pointer("/content/annotations/audience").and_then(Value::as_array) {
        Some(audience) => audience.iter().any(|role| role == "user"),
        None => true,
    }
}

/// The agent's error answering the client's `session/load`, if it refused it.
fn load_refusal(transcript: &[Value]) -> Option<&Value> {
    let request = transcript.iter().find(|entry| {
        entry["from"] == "client" && entry.pointer("/message/method").and_then(Value::as_str) == Some("session/load")
    })?;
    let id = request.pointer("/message/id")?;
    transcript
        .iter()
        .filter(|entry| entry["from"] == "agent")
        .find(|entry| entry.pointer("/message/id") == Some(id) && entry.pointer("/message/method").is_none())?
        .pointer("/message/error")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prompt replayed with its links written after its text is the prompt (codex keeps a
    /// link as Markdown); other added text is not.
    #[test]
    fn a_prompt_replayed_with_its_links_as_text_is_the_prompt() {
        let links = [("https://example.com/docs/retry-policy.md".to_owned(), "retry-policy.md".to_owned())];
        let text = "Summarise the note.";
        let markdown = "Summarise the note.[@retry-policy.md](https://example.com/docs/retry-policy.md)";
        assert!(links_rendered(markdown, text, &links));
        assert!(links_rendered("Summarise the note.\nhttps://example.com/docs/retry-policy.md", text, &links));
        assert!(!links_rendered("Summarise the note. Also ignore it.", text, &links));
        assert!(!links_rendered(
            "Summarise the note. Also https://example.com/docs/retry-policy.md please",
            text,
            &links
        ));
        assert!(!links_rendered(markdown, text, &[]));
        // A link replayed as a user text of its own.
        assert!(links_rendered("https://example.com/docs/retry-policy.md", "", &links));
    }
    use crate::capture::Capture;
    use crate::judge::invariants::fixture::{check_as, chunk, entry, prompt};
    use serde_json::json;

    fn two_turns(replay: &[(&str, &[&str])]) -> Capture {
        let mut acp = Vec::new();
        for (id, (text, answer)) in [(1, ("Name a prime.", "Seven.")), (2, ("Another one?", "Eleven."))] {
            acp.push(entry("client", prompt(id, text)));
            acp.push(entry("agent", chunk("agent_message_chunk", answer)));
            acp.push(entry("agent", json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": "end_turn"}})));
        }
        let mut acp_load = Vec::new();
        for (user, agent) in replay {
            acp_load.push(entry("agent", chunk("user_message_chunk", user)));
            acp_load.extend(agent.iter().map(|text| entry("agent", chunk("agent_message_chunk", text))));
        }
        let reported = vec![crate::capture::Reported { stop_reason: Some("end_turn".into()), error: None }; 2];
        // A Log of two completed turns, for the terminal states.
        let mut capture = crate::judge::invariants::fixture::capture(
            &[
                ("user_message", json!({"text": "Name a prime."})),
                ("assistant_message", json!({"text": "Seven."})),
                ("user_message", json!({"text": "Another one?"})),
                ("assistant_message", json!({"text": "Eleven."})),
            ],
            &[],
        );
        capture.acp = acp;
        capture.acp_load = acp_load;
        capture.reported = reported;
        capture
    }

    #[test]
    fn a_replay_of_what_was_shown_passes() {
        let capture = two_turns(&[("Name a prime.", &["Sev", "en."]), ("Another one?", &["Eleven."])]);
        assert!(check_as(INVARIANT, INVARIANT.id, &capture).is_empty());
    }

    /// A turn whose answer was never shown live, and is not replayed either, replays as it was
    /// shown (codex-acp's refusal: nothing shown, nothing replayed); that it was never shown is
    /// ACP-ANSWER-SHOWN's.
    #[test]
    fn an_answer_never_shown_and_never_replayed_matches_the_live_view() {
        let mut capture = two_turns(&[("Name a prime.", &[]), ("Another one?", &["Eleven."])]);
        capture.acp.remove(1);
        assert!(check_as(INVARIANT, INVARIANT.id, &capture).is_empty());
    }

    #[test]
    fn answers_replayed_one_turn_late_are_caught() {
        let capture = two_turns(&[("Name a prime.", &[]), ("Another one?", &["Seven."])]);
        assert_eq!(
            check_as(INVARIANT, INVARIANT.id, &capture),
            [
                "turn 1 (completed): load replayed assistant text \"\", not what the client was shown live, \"Seven.\"",
                "turn 2 (completed): load replayed assistant text \"Seven.\", not what the client was shown live, \"Eleven.\"",
            ]
        );
    }

    #[test]
    fn a_turn_missing_from_the_replay_is_caught() {
        let capture = two_turns(&[("Another one?", &["Eleven."])]);
        assert_eq!(
            check_as(INVARIANT, INVARIANT.id, &capture),
            ["turn 1: load never replayed its prompt \"Name a prime.\""]
        );
    }

    /// An agent that replays its own records between the turns (claude-agent-acp's
    /// `<local-command-stdout>`) or adds to a prompt (gemini-cli's image placeholder) replays
    /// the conversation: what it adds is the SHOULD ACP-LOAD-AS-SHOWN's.
    #[test]
    fn what_an_agent_adds_to_the_replay_is_the_should() {
        let capture = two_turns(&[
            ("Name a prime. [Image: image/png, 0.1 KB]", &["Seven."]),
            ("<local-command-stdout>Set model</local-command-stdout>", &[]),
            ("Another one?", &["Eleven."]),
        ]);
        assert!(check_as(INVARIANT, INVARIANT.id, &capture).is_empty());
        assert_eq!(
            check_as(INVARIANT, AS_SHOWN, &capture),
            [
                "load replayed user text that was never a prompt: [\"<local-command-stdout>Set model</local-command-stdout>\"]",
                "turn 1: load replayed the user text \"Name a prime. [Image: image/png, 0.1 KB]\", the prompt was \"Name a prime.\"",
            ]
        );
    }

    /// A user text annotated for the assistant alone (opencode's own note after a compaction)
    /// is not shown to the user, so it adds nothing to the replay the user sees.
    #[test]
    fn user_text_for_the_assistant_alone_is_not_shown() {
        let mut capture = two_turns(&[("Name a prime.", &["Seven."]), ("Go on.", &[]), ("Another one?", &["Eleven."])]);
        capture.acp_load[2]["message"]["params"]["update"]["content"]["annotations"] =
            json!({"audience": ["assistant"]});
        assert!(check_as(INVARIANT, AS_SHOWN, &capture).is_empty());
        capture.acp_load[2]["message"]["params"]["update"]["content"]["annotations"] = json!({"audience": ["user"]});
        assert_eq!(
            check_as(INVARIANT, AS_SHOWN, &capture),
            ["load replayed user text that was never a prompt: [\"Go on.\"]"]
        );
    }

    /// gemini-cli advertises `loadSession`, then refuses to load the Session it has just
    /// served: one finding quoting its answer, not an `error` verdict for the whole run.
    #[test]
    fn a_refused_load_is_one_finding_quoting_the_answer() {
        let mut capture = two_turns(&[("Name a prime.", &["Seven."]), ("Another one?", &["Eleven."])]);
        capture.acp_load = vec![
            entry("client", json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})),
            entry("agent", json!({"jsonrpc": "2.0", "id": 0, "result": {"agentCapabilities": {"loadSession": true}}})),
            entry("client", json!({"jsonrpc": "2.0", "id": 1, "method": "session/load", "params": {"sessionId": "s"}})),
            entry(
                "agent",
                json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "No previous sessions found for this project."}}),
            ),
        ];
        assert_eq!(
            check_as(INVARIANT, INVARIANT.id, &capture),
            [
                "session/load of the Session it had just served was refused, by an agent that advertises `loadSession`, so nothing of the conversation was replayed: {\"code\":-32603,\"message\":\"No previous sessions found for this project.\"}"
            ]
        );
    }
}
