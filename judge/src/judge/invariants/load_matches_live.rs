//! ACP-LOAD-MATCHES-LIVE: `session/load` replays the conversation (ACP: "the Agent MUST replay
//! the entire conversation to the Client"). Every live turn's prompt is replayed, in order, as
//! user text that holds it; a completed turn replays its answer: the assistant text the client
//! saw during its prompt, or the model's answer that ended it (where the live view showed it
//! wrong, that is ACP-ANSWER-IN-TURN's). A turn that did not complete is ACP-LOAD-CLEAN's. The
//! tool calls the client was shown live are not all dropped, nor the links a prompt was sent
//! with.
//!
//! Also ACP-LOAD-AS-SHOWN (a SHOULD), from the same reading of the replay: the replay is the live view again, nothing
//! more: each prompt's user text exactly, no user text that was never a prompt (an agent's
//! internal records), and a completed turn's assistant text exactly as shown live or the
//! answer alone. ACP asks for the conversation, not for its words to the byte.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::capture::Capture;
use crate::judge::evidence::Evidence;
use crate::judge::transcript::shown_text;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::load_replay::{Turn, read};

pub const INVARIANT: Invariant =
    Invariant { id: "ACP-LOAD-MATCHES-LIVE", also: &[AS_SHOWN], name: "load_matches_live", applies: Scope::Run, check };

/// What a replay breaks when it holds the conversation but is not the live view again.
const AS_SHOWN: &str = "ACP-LOAD-AS-SHOWN";

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
    problems.extend(tool_calls_dropped(evidence.capture));
    problems.extend(links_dropped(evidence.raw_acp_load, &turns));
    let mut violations: Vec<Violation> = problems.into_iter().map(Violation::in_load).collect();
    violations.extend(as_shown(&turns, &extra).into_iter().map(|problem| Violation::in_load(problem).of(AS_SHOWN)));
    violations
}

/// When the client was shown tool calls end live in the Session it loads and the replay shows
/// none of them: the conversation's calls are part of what ACP asks replayed. A call shown
/// live but never ended (a half-streamed call that never ran) need not be; that it was left
/// open is ACP-TOOL-SHOWN's. Read from the loaded Session's updates, each id once (a replay
/// may give a call an id of its own).
fn tool_calls_dropped(capture: &Capture) -> Option<String> {
    let loaded = capture.acp_load.iter().find_map(|entry| {
        (entry.pointer("/message/method").and_then(Value::as_str) == Some("session/load"))
            .then(|| entry.pointer("/message/params/sessionId"))
            .flatten()
    })?;
    let ended: BTreeSet<&str> = tool_updates(&capture.acp, loaded)
        .filter(|update| matches!(update.get("status").and_then(Value::as_str), Some("completed" | "failed")))
        .filter_map(|update| update.get("toolCallId").and_then(Value::as_str))
        .collect();
    (!ended.is_empty() && tool_updates(&capture.acp_load, loaded).next().is_none())
        .then(|| format!("load replayed none of the tool calls the client was shown end live: {ended:?}"))
}

/// The links a replayed prompt was sent with that the replay holds nowhere: in no replayed
/// user content, neither a block that points at one nor a text that names it. A prompt's links
/// are part of the conversation ACP asks replayed; how an agent keeps one is its own (the
/// reference's `resource_link` block, codex's Markdown in the prompt's text, opencode's and
/// claude's user text of its own, gemini's `@uri`), so any of these holds it. Read from the
/// transcript as the agent sent it: the v1 reading of a v2 user message of several blocks
/// keeps its text alone.
fn links_dropped(load: &[Value], turns: &[Turn]) -> Vec<String> {
    let user_content: Vec<&Value> = load
        .iter()
        .filter_map(|entry| entry.pointer("/message/params/update"))
        .filter(|update| {
            let kind = update.get("sessionUpdate").and_then(Value::as_str);
            matches!(kind, Some("user_message_chunk" | "user_message")) // ACP v1 and v2 kinds, not a Log type
        })
        .filter_map(|update| update.get("content"))
        .flat_map(|content| content.as_array().map_or_else(|| vec![content], |blocks| blocks.iter().collect()))
        .collect();
    let held = |uri: &str| {
        user_content.iter().any(|block| {
            ["/text", "/uri", "/resource/uri"]
                .iter()
                .any(|key| block.pointer(key).and_then(Value::as_str).is_some_and(|text| text.contains(uri)))
        })
    };
    turns
        .iter()
        .filter(|turn| turn.replayed.is_some())
        .filter_map(|turn| {
            let dropped: Vec<&str> =
                turn.exchange.links.iter().map(|(uri, _)| uri.as_str()).filter(|uri| !held(uri)).collect();
            (!dropped.is_empty()).then(|| {
                format!("turn {}: load replayed its prompt without the links it was sent with: {dropped:?}", turn.n)
            })
        })
        .collect()
}

/// The tool item updates (`tool_call`, `tool_call_update`) of Session `session` in a transcript.
fn tool_updates<'a>(transcript: &'a [Value], session: &'a Value) -> impl Iterator<Item = &'a Value> {
    let of_session = transcript.iter().filter(move |entry| entry.pointer("/message/params/sessionId") == Some(session));
    of_session.filter_map(|entry| entry.pointer("/message/params/update")).filter(|update| {
        let kind = update.get("sessionUpdate").and_then(Value::as_str);
        matches!(kind, Some("tool_call" | "tool_call_update")) // ACP's update kinds, not a Log type
    })
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
    use crate::judge::fixture::{check_as, chunk, entry, prompt};
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
        let mut capture = crate::judge::fixture::capture(
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

    /// A replay that shows none of the tool calls the client saw live drops part of the
    /// conversation; one that shows them (under ids of its own) keeps it.
    #[test]
    fn a_replay_without_the_tool_calls_shown_live_is_caught() {
        let call = |id: &str| {
            let update =
                json!({"sessionUpdate": "tool_call", "toolCallId": id, "title": "read", "status": "completed"});
            entry(
                "agent",
                json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}}),
            )
        };
        let load =
            entry("client", json!({"jsonrpc": "2.0", "id": 1, "method": "session/load", "params": {"sessionId": "s"}}));
        let mut capture = two_turns(&[("Name a prime.", &["Seven."]), ("Another one?", &["Eleven."])]);
        for entry in capture.acp.iter_mut().chain(capture.acp_load.iter_mut()) {
            if let Some(params) = entry.pointer_mut("/message/params").and_then(Value::as_object_mut) {
                params.insert("sessionId".into(), json!("s"));
            }
        }
        capture.acp.insert(1, call("c1"));
        capture.acp_load.insert(0, load);
        assert_eq!(
            check_as(INVARIANT, INVARIANT.id, &capture),
            ["load replayed none of the tool calls the client was shown end live: {\"c1\"}"]
        );
        capture.acp_load.insert(2, call("other"));
        assert!(check_as(INVARIANT, INVARIANT.id, &capture).is_empty());
    }

    /// A prompt's link is kept in the replay however the agent keeps it (a block of its own, or
    /// text that names it); a replay that holds it nowhere dropped part of the conversation.
    #[test]
    fn a_replay_that_drops_a_prompts_link_is_caught() {
        let uri = "https://example.com/docs/retry-policy.md";
        let linked = |replay: &[(&str, &[&str])]| {
            let mut capture = two_turns(replay);
            let link = json!({"type": "resource_link", "uri": uri, "name": "retry-policy.md"});
            if let Some(blocks) = capture.acp[0]["message"]["params"]["prompt"].as_array_mut() {
                blocks.push(link);
            }
            capture
        };
        let dropped = linked(&[("Name a prime.", &["Seven."]), ("Another one?", &["Eleven."])]);
        assert_eq!(
            check_as(INVARIANT, INVARIANT.id, &dropped),
            [format!("turn 1: load replayed its prompt without the links it was sent with: [{uri:?}]")]
        );
        let as_text = format!("Name a prime.[@retry-policy.md]({uri})");
        let kept = linked(&[(&as_text, &["Seven."]), ("Another one?", &["Eleven."])]);
        assert!(check_as(INVARIANT, INVARIANT.id, &kept).is_empty());
        let mut as_block = linked(&[("Name a prime.", &["Seven."]), ("Another one?", &["Eleven."])]);
        let block = json!({"type": "resource_link", "uri": uri, "name": "retry-policy.md"});
        let mut link = entry("agent", chunk("user_message_chunk", ""));
        link["message"]["params"]["update"]["content"] = block;
        as_block.acp_load.insert(1, link);
        assert!(check_as(INVARIANT, INVARIANT.id, &as_block).is_empty());
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

    /// A prompt sent while another ran, answered `end_turn` but never told to the model, is no
    /// turn of the Session: that it was answered so is ACP-BUSY-AFTER-RUNNING's, and a replay
    /// without it is no second finding. Told to the model, it is a turn the replay must hold.
    #[test]
    fn a_busy_prompt_answered_unrun_is_no_turn_to_replay() {
        let answer =
            |id: i64| entry("agent", json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": "end_turn"}}));
        let played = |told: bool| {
            let mut users = vec![crate::judge::fixture::user("Name a prime.")];
            if told {
                users.push(crate::judge::fixture::user("Another one?"));
            }
            let mut capture = crate::judge::fixture::capture(
                &[("user_message", json!({"text": "Name a prime."})), ("assistant_message", json!({"text": "Seven."}))],
                &[crate::judge::fixture::body(users)],
            );
            capture.acp = vec![
                entry("client", prompt(1, "Name a prime.")),
                entry("client", prompt(2, "Another one?")),
                answer(2),
                entry("agent", chunk("agent_message_chunk", "Seven.")),
                answer(1),
            ];
            capture.acp_load = vec![
                entry("agent", chunk("user_message_chunk", "Name a prime.")),
                entry("agent", chunk("agent_message_chunk", "Seven.")),
            ];
            check_as(INVARIANT, INVARIANT.id, &capture)
        };
        assert_eq!(played(false), Vec::<String>::new());
        assert_eq!(played(true), ["turn 2: load never replayed its prompt \"Another one?\""]);
    }
}
