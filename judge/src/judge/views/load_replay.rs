//! The `session/load` replay read against the live turns: each live prompt with the user text
//! that replays it and the assistant text replayed after it ([`Turn`], [`read`]), or the one
//! finding of a refused load. ACP-LOAD-MATCHES-LIVE and ACP-LOAD-CLEAN judge the same reading.

use gauntlet_agent::TerminalStatus;
use serde_json::Value;

use crate::capture::Capture;
use crate::judge::evidence::{Evidence, LastAnswer};
use crate::judge::transcript::{Exchange, chunk_text, shown_text};
use crate::judge::views::requests::{Streamed, read_requests, streamed_per_turn};

/// One live turn and what the load replayed for it (ACP-LOAD-CLEAN reads the same).
pub(crate) struct Turn<'a> {
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
    pub(crate) fn holds_answer(&self) -> bool {
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
pub(crate) fn read<'e>(evidence: &'e Evidence) -> Result<(Vec<Turn<'e>>, Vec<String>), String> {
    let capture = evidence.capture;
    // A reload mid-conversation is in the live transcript, the final replay in its own.
    if let Some(finding) = refused_load(capture) {
        return Err(finding);
    }
    // A busy prompt the agent ran as a turn of its own is a turn of the Session; one it refused,
    // or answered without ever telling its model, is not (answering it so is
    // ACP-BUSY-AFTER-RUNNING's: one behaviour, one finding).
    let told = |text: &str| {
        read_requests(evidence).any(|(_, conversation)| conversation.user_texts().any(|user| user.contains(text)))
    };
    let ran = |exchange: &&Exchange| {
        !exchange.busy
            || (exchange.answer.is_some_and(|answer| answer.get("result").is_some()) && told(exchange.text.trim()))
    };
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
