//! ACP-TOOL-STATUS: a tool call of a driven turn in the Log that ACP shows ended never ends with
//! a status its `tool_result` contradicts: `completed` only for an `ok` result that reports
//! nothing partial, `failed` otherwise (ACP `ToolCallStatus`: `completed` "the tool call
//! completed successfully", `failed` "the tool call failed with an error").
//!
//! Also ACP-TOOL-SHOWN (a SHOULD, [`SHOWN`]): every tool call is shown to the client as an ACP
//! tool item (its `toolCallId` the call's id or naming it, else paired in order: [`Items`])
//! and closed before the prompt is answered (ACP: the Agent "SHOULD report" a tool call); what
//! `session/load` replays of a call tells the same truth (placed at the load); a
//! call left open by a turn answered `cancelled` is no finding, since ACP's cancellation
//! section has the client mark every unfinished call `cancelled` itself, "since the Agent is
//! not required to do so". Subagent items and delegation results have their own rule
//! (SUB-ACP-ITEM). A mapped to-do tool (`plan`) may be shown as the ACP plan instead of a tool
//! item.
//!
//! An agent without a gauntlet Log is judged on the results it sends back to its model: each
//! scripted call the profile's `[tools]` rendered as one of the agent's tools, its result read
//! through the mapping ([`Evidence::mapped_results`]), never through the reference's names.
//! That reading is the profile's, gauntlet's, so what it finds is ACP-TOOL-SHOWN's too; a call
//! of gauntlet's MCP server is judged by what the server answered, its journal as true as a Log.

use std::collections::{BTreeMap, BTreeSet};

use gauntlet_agent::event::subagent::reports_partial;
use gauntlet_mock_provider::Message;
use serde_json::Value;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::acp::plan_updates;
use crate::judge::views::requests::repeated_id;
use crate::judge::views::requests::{read_new_messages, served};
use crate::tool_map::AbstractTool;
use crate::verdict::At;

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-TOOL-STATUS",
    also: &[SHOWN, UNKNOWN, INVALID],
    name: "tool_calls_projected",
    applies: Scope::Run,
    check,
};

/// What a call breaks when it is never shown, left open, updated out of order, or read
/// through the profile.
const SHOWN: &str = "ACP-TOOL-SHOWN";

/// What a call to a tool nobody offered breaks when it is shown `completed`.
const UNKNOWN: &str = "ACP-UNKNOWN-TOOL";

/// What a call whose arguments do not parse breaks when it is shown `completed`.
const INVALID: &str = "ACP-INVALID-ARGUMENTS";

/// Each call shown wrong: a violation of ACP-TOOL-STATUS when its status contradicts its
/// result in the Log, else of ACP-TOOL-SHOWN (never shown, left open, updated out of order, or
/// read through the profile).
fn check(evidence: &Evidence) -> Vec<Violation> {
    if evidence.capture.acp.is_empty() {
        return Vec::new();
    }
    let repeated = repeated_ids(evidence);
    let calls = call_ids(evidence);
    let (live, mut out_of_order) = transcript_items(&evidence.capture.acp, &repeated);
    let shown = Items::pair(live, &calls);
    // What `session/load` replays shows the conversation too (ACP), so it tells the same truth
    // about a call; how its items are ordered is not judged.
    let loaded = Items::pair(transcript_items(&evidence.capture.acp_load, &repeated).0, &calls);
    out_of_order.extend(unknown_tools_completed(evidence, &shown, &loaded));
    out_of_order.extend(invalid_arguments_completed(evidence, &shown, &loaded));
    if evidence.capture.log.is_empty() {
        out_of_order.extend(from_the_wire(evidence, &shown, &loaded));
        return out_of_order;
    }
    let first_driven_seq =
        evidence.audit.turns.get(evidence.first_driven_turn()).map_or(u64::MAX, |turn| turn.user_seq);
    let mut problems = out_of_order;
    for line in &evidence.lines {
        let Some(result) = line.tool_result() else { continue };
        let (Some(seq), Some(call_id)) = (line.seq, result.call_id) else { continue };
        if seq < first_driven_seq {
            continue;
        }
        let Some(data) = line.data.as_object() else { continue };
        let ok = result.ok == Some(true) && !reports_partial(data);
        let expected = if ok { "completed" } else { "failed" };
        match shown.of(call_id) {
            None => {
                let message = format!("the tool call `{call_id}` (result at seq {seq}) is never shown to the client");
                problems.push(Violation::new(message).of(SHOWN));
            }
            Some((item, status)) if is_open(status) && left_open_by_a_cancel(evidence, item) => {}
            Some((_, status)) if status != expected => {
                let contradicted = Violation::new(format!(
                    "the tool call `{call_id}` ends `{status}` in ACP, but its tool_result at seq {seq} supports `{expected}`"
                ));
                // Left open is not shown closed; closed with the wrong status contradicts it.
                problems.push(if is_open(status) { contradicted.of(SHOWN) } else { contradicted });
            }
            Some(_) => {}
        }
        if let Some(status) = replayed_otherwise(evidence, &loaded, call_id, expected) {
            problems.push(Violation::in_load(format!(
                "session/load replays the tool call `{call_id}` as `{status}`, but its tool_result at seq {seq} supports `{expected}`"
            )));
        }
    }
    problems
}

/// For an agent without a Log: each mapped call's result, as the next request carries it. A
/// reading through the profile's mapping is gauntlet's, so all it finds is ACP-TOOL-SHOWN's; what
/// gauntlet's MCP server really answered is the call's truth, as a Log's `tool_result` is, so a
/// closed status it contradicts is ACP-TOOL-STATUS's.
fn from_the_wire(evidence: &Evidence, shown: &Items, loaded: &Items) -> Vec<Violation> {
    let mut problems = Vec::new();
    for result in evidence.mapped_results() {
        let expected = if result.outcome.ok { "completed" } else { "failed" };
        let (id, n, tool, name) = (&result.call_id, result.request, result.call.tool.as_str(), &result.call.name);
        let contradiction = |violation: Violation| if result.call.mcp { violation } else { violation.of(SHOWN) };
        match shown.of(id) {
            // A to-do tool shown as the ACP plan instead of a tool item (claude-agent-acp's
            // `TodoWrite`): the plan is its presentation (ACP-PLAN-WHOLE-LIST judges it).
            None if result.call.tool == AbstractTool::Plan && !plan_updates(evidence).is_empty() => {}
            None => problems.push(
                Violation::new(format!(
                    "the tool call `{id}` (`{tool}` as `{name}`, its result in request {n}) is never shown to the client"
                ))
                .of(SHOWN),
            ),
            Some((item, status)) if is_open(status) && left_open_by_a_cancel(evidence, item) => {}
            Some((_, status)) if status != expected => {
                let violation = Violation::new(format!(
                    "the tool call `{id}` (`{tool}` as `{name}`) ends `{status}` in ACP, but {}, so `{expected}`: {:?}",
                    result.reading(),
                    excerpt(&result.output)
                ));
                // Left open is not shown closed; closed with the wrong status contradicts it.
                problems.push(if is_open(status) { violation.of(SHOWN) } else { contradiction(violation) });
            }
            Some(_) => {}
        }
        if let Some(status) = replayed_otherwise(evidence, loaded, id, expected) {
            problems.push(contradiction(Violation::in_load(format!(
                "session/load replays the tool call `{id}` (`{tool}` as `{name}`) as `{status}`, but {}, so `{expected}`: {:?}",
                result.reading(),
                excerpt(&result.output)
            ))));
        }
    }
    problems
}

/// A status `session/load` replays call `call_id` closed with, at any point of the replay, when
/// its result supports the other one: a replay that shows a failed call `completed` and then
/// `failed` has shown it `completed` all the same, judged in order as a live status is (issue 45).
fn replayed_otherwise<'e>(evidence: &'e Evidence, loaded: &Items, call_id: &str, expected: &str) -> Option<&'e str> {
    let (item, _) = loaded.of(call_id)?;
    evidence
        .capture
        .acp_load
        .iter()
        .filter_map(|entry| entry.pointer("/message/params/update"))
        .filter(|update| update.get("toolCallId").and_then(Value::as_str) == Some(item))
        .filter_map(|update| update.get("status").and_then(Value::as_str))
        .find(|status| !is_open(status) && *status != expected)
}

/// Whether call `call_id` is shown `completed`: live, or else by the `session/load` replay
/// (placed there), with the words that say which.
fn shown_completed(shown: &Items, loaded: &Items, call_id: &str) -> Option<(Option<At>, &'static str)> {
    let completed = |items: &Items| matches!(items.of(call_id), Some((_, "completed")));
    if completed(shown) {
        Some((None, "ends `completed` in ACP"))
    } else if completed(loaded) {
        Some((Some(At::Load), "is replayed `completed` by session/load"))
    } else {
        None
    }
}

/// Calls to a tool no request offered the model (a name it made up) that ACP shows `completed`
/// (ACP-UNKNOWN-TOOL, a SHOULD): no tool of the agent's could have run it, unless the agent
/// took the name for one of its own, which gauntlet cannot see; a name an offered one matches
/// but for case and separators (`Read` for `read`) is taken for a repair, and judged no
/// further. Read from the calls the requests carry back, so with or without a Log.
fn unknown_tools_completed(evidence: &Evidence, shown: &Items, loaded: &Items) -> Vec<Violation> {
    let key = |name: &str| -> String {
        name.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
    };
    let offered: BTreeSet<String> = evidence.conversations.offered_tools().iter().map(|name| key(name)).collect();
    if offered.is_empty() {
        // Requests gauntlet cannot read tools from say nothing of what was offered.
        return Vec::new();
    }
    // Calls whose arguments did not parse, by the id the script gave them: one the agent's
    // replay names otherwise (opencode hands it to its own `invalid` tool) is ACP-INVALID-
    // ARGUMENTS's, one behaviour judged once.
    let unparsed: BTreeSet<&str> = evidence
        .scenario
        .iter()
        .flat_map(|scenario| scenario.root_responses())
        .flat_map(|response| &response.calls)
        .filter(|call| !call.args_parse())
        .filter_map(|call| call.call_id.as_deref())
        .collect();
    let mut seen = BTreeSet::new();
    let mut problems = Vec::new();
    for (_, _, new) in read_new_messages(evidence) {
        for message in new {
            let Message::ToolCall { call_id, name, .. } = message else { continue };
            if offered.contains(&key(name)) || !seen.insert(call_id.as_str()) {
                continue;
            }
            if unparsed.contains(call_id.as_str()) {
                continue;
            }
            if let Some((at, shown_so)) = shown_completed(shown, loaded, call_id) {
                let message = format!(
                    "the tool call `{call_id}` names `{name}`, a tool no request offered the model, yet {shown_so}"
                );
                problems.push(Violation::placed(at, message).of(UNKNOWN));
            }
        }
    }
    problems
}

/// Scripted calls whose arguments are not a JSON object, streamed whole in a response that
/// ended cleanly, that ACP shows `completed`: no tool could have run arguments that do not
/// parse, unless the agent repaired them ([`ran_repaired`]). Known by their scripted `call_id`
/// (a default one is the mock's to number), so with or without a Log.
fn invalid_arguments_completed(evidence: &Evidence, shown: &Items, loaded: &Items) -> Vec<Violation> {
    let mut seen = BTreeSet::new();
    let mut problems = Vec::new();
    for request in &evidence.capture.requests {
        let Some(response) = served(evidence, request) else { continue };
        if response.fails() || response.cut_after.is_some() {
            continue;
        }
        for call in response.calls.iter().filter(|call| !call.args_parse()) {
            let Some(call_id) = call.call_id.as_deref() else { continue };
            if !seen.insert(call_id) || ran_repaired(evidence, call_id, &call.name) {
                continue;
            }
            if let Some((at, shown_so)) = shown_completed(shown, loaded, call_id) {
                let message = format!(
                    "the tool call `{call_id}` has arguments that are not a JSON object ({}), yet {shown_so}",
                    call.arguments()
                );
                problems.push(Violation::placed(at, message).of(INVALID));
            }
        }
    }
    problems
}

/// Whether the agent repaired the arguments of call `call_id` and really ran it with success: a
/// request gives the call arguments that parse to an object, and gauntlet's MCP server received
/// a call of `tool` with those arguments and answered it with a success. The row lets an agent
/// repair what the model sent; what it then ran completed.
fn ran_repaired(evidence: &Evidence, call_id: &str, tool: &str) -> bool {
    let repaired = read_new_messages(evidence).flat_map(|(_, _, new)| new).filter_map(|message| match message {
        Message::ToolCall { call_id: id, args, .. } if id == call_id => match args {
            Value::String(text) => serde_json::from_str::<Value>(text).ok(),
            other => Some(other.clone()),
        },
        _ => None,
    });
    let mut repaired = repaired.filter(Value::is_object);
    repaired.any(|args| {
        evidence
            .capture
            .tool_calls
            .iter()
            .any(|served| served.tool == tool && served.args == args && served.succeeded())
    })
}

/// The tool items a transcript shows, in the order the client was first shown them,
/// each with its last status; and updates out of order: an update of an item the client was
/// never shown, a status that goes back (ACP: a `tool_call` reports the call,
/// `tool_call_update`s then update it; the statuses run pending, in_progress, then completed
/// or failed).
fn transcript_items<'e>(
    transcript: &'e [Value],
    repeated: &BTreeSet<&str>,
) -> (Vec<(&'e str, &'e str)>, Vec<Violation>) {
    let mut shown: Vec<(&str, &str)> = Vec::new();
    let mut at_of: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out_of_order = Vec::new();
    for entry in transcript {
        let Some(update) = entry.pointer("/message/params/update") else { continue };
        let Some(id) = update.get("toolCallId").and_then(Value::as_str) else { continue };
        let status = update.get("status").and_then(Value::as_str);
        let kind = update.get("sessionUpdate").and_then(Value::as_str);
        let at = *at_of.entry(id).or_insert_with(|| {
            if kind == Some("tool_call_update") {
                let message =
                    format!("the tool item `{id}` is updated before the client is shown it (no `tool_call` first)");
                out_of_order.push(Violation::new(message).of(SHOWN));
            }
            shown.push((id, "pending"));
            shown.len() - 1
        });
        let known = &mut shown[at].1;
        if let Some(status) = status {
            // Two calls the model gave one id may show as one item reopened: one behaviour,
            // REPLAY-CALL-ID-UNIQUE's.
            let reopened = repeated.iter().any(|call_id| names(id, call_id));
            if kind == Some("tool_call_update") && rank(status) > 0 && rank(status) < rank(known) && !reopened {
                let message = format!("the tool item `{id}` goes back from `{known}` to `{status}`");
                out_of_order.push(Violation::new(message).of(SHOWN));
            }
            *known = status;
        }
    }
    (shown, out_of_order)
}

/// The call ids two calls of one scripted response share.
fn repeated_ids<'e>(evidence: &'e Evidence) -> BTreeSet<&'e str> {
    let responses = evidence.scenario.iter().flat_map(|scenario| scenario.root_responses());
    responses.filter_map(repeated_id).collect()
}

/// Every call id of the run, in the order the calls were made: the Log's `tool_call`s, then
/// the calls the requests carry back that the Log does not name.
fn call_ids<'e>(evidence: &'e Evidence) -> Vec<&'e str> {
    let logged = evidence.lines.iter().filter_map(|line| line.tool_call()?.call_id);
    let sent = read_new_messages(evidence).flat_map(|(_, _, new)| new).filter_map(|message| match message {
        Message::ToolCall { call_id, .. } => Some(call_id.as_str()),
        _ => None,
    });
    let mut seen = BTreeSet::new();
    logged.chain(sent).filter(|id| seen.insert(*id)).collect()
}

/// The client's tool items, each with its last status, and the call each one shows. ACP leaves
/// an item's id to the agent ("A unique identifier for this tool call within the session"):
/// an item is a call's when its `toolCallId` is the call's id, or ends with it after a
/// separator (gemini-cli shows `call_1` as `read_file__call_1`); the calls no item names so
/// are paired in order with the items that name no call, for an agent that mints its own ids
/// (issue 31: such an agent read "never shown" for every call).
struct Items<'a> {
    status: BTreeMap<&'a str, &'a str>,
    /// Each tail of an item's id that follows a separator, with the first item (by id) that
    /// ends so: a call named after an agent's prefix is found without a scan of every item.
    tails: BTreeMap<&'a str, &'a str>,
    of_call: BTreeMap<&'a str, &'a str>,
}

impl<'a> Items<'a> {
    fn pair(shown: Vec<(&'a str, &'a str)>, calls: &[&'a str]) -> Items<'a> {
        let status: BTreeMap<&str, &str> = shown.iter().copied().collect();
        let mut tails = BTreeMap::new();
        for &item in status.keys() {
            let after_separators =
                item.char_indices().filter(|(_, c)| !c.is_alphanumeric()).map(|(at, c)| at + c.len_utf8());
            for at in after_separators.filter(|&at| at < item.len()) {
                tails.entry(&item[at..]).or_insert(item);
            }
        }
        let mut items = Items { status, tails, of_call: BTreeMap::new() };
        let mut unnamed = Vec::new();
        for &call_id in calls {
            match items.named(call_id) {
                Some(item) => _ = items.of_call.insert(call_id, item),
                None => unnamed.push(call_id),
            }
        }
        let claimed: BTreeSet<&str> = items.of_call.values().copied().collect();
        let unclaimed = shown.into_iter().map(|(item, _)| item).filter(|item| !claimed.contains(item));
        items.of_call.extend(unnamed.into_iter().zip(unclaimed));
        items
    }

    /// The item whose id is `call_id`, or ends with it after a separator.
    fn named(&self, call_id: &str) -> Option<&'a str> {
        let exact = self.status.get_key_value(call_id).map(|(item, _)| *item);
        exact.or_else(|| self.tails.get(call_id).copied())
    }

    /// The item that shows call `call_id`, and its last status.
    fn of(&self, call_id: &str) -> Option<(&'a str, &'a str)> {
        let item = self.of_call.get(call_id).copied().or_else(|| self.named(call_id))?;
        Some((item, self.status[item]))
    }
}

/// Whether tool item `item` shows call `call_id`: its id is the call's, or ends with it after a
/// separator (gemini-cli shows `call_1` as `read_file__call_1`).
fn names(item: &str, call_id: &str) -> bool {
    item == call_id
        || item.strip_suffix(call_id).is_some_and(|head| head.chars().next_back().is_some_and(|c| !c.is_alphanumeric()))
}

/// Where an ACP tool status stands in a call's life; an unknown status stands nowhere.
fn rank(status: &str) -> u8 {
    match status {
        "pending" => 1,
        "in_progress" => 2,
        "completed" | "failed" => 3,
        _ => 0,
    }
}

/// Whether an ACP tool status leaves the call unfinished.
fn is_open(status: &str) -> bool {
    matches!(status, "pending" | "in_progress")
}

/// Whether the prompt answered first after the tool item's last update was answered
/// `cancelled`: the turn the call belongs to was cancelled.
fn left_open_by_a_cancel(evidence: &Evidence, call_id: &str) -> bool {
    let acp = &evidence.capture.acp;
    let mentions =
        |entry: &Value| entry.pointer("/message/params/update/toolCallId").and_then(Value::as_str) == Some(call_id);
    let Some(last) = acp.iter().rposition(mentions) else { return false };
    acp[last..]
        .iter()
        .filter(|entry| entry["from"] == "agent")
        .find_map(|entry| entry.pointer("/message/result/stopReason").or_else(|| entry.pointer("/message/error")))
        .is_some_and(|answer| answer == "cancelled")
}

/// The first 200 characters of a result, for a message.
fn excerpt(output: &str) -> String {
    let mut cut: String = output.chars().take(200).collect();
    if cut.len() < output.len() {
        cut.push_str("...");
    }
    cut
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::capture::Reported;
    use crate::judge::fixture::{capture, check, entry};

    fn update(kind: &str, id: &str, status: &str) -> Value {
        entry(
            "agent",
            json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": {"sessionUpdate": kind, "toolCallId": id, "status": status}}}),
        )
    }

    fn run(results: &[Value], acp: Vec<Value>) -> Vec<String> {
        let mut events = vec![("user_message", json!({"text": "q"}))];
        events.extend(results.iter().map(|result| ("tool_result", result.clone())));
        let mut capture = capture(&events, &[]);
        capture.reported.push(Reported { stop_reason: Some("end_turn".into()), error: None });
        capture.acp = acp;
        // The MUST's findings, then the SHOULD's.
        check(INVARIANT, &capture)
    }

    #[test]
    fn results_shown_with_their_status_pass() {
        let results = [json!({"call_id": "c1", "ok": true}), json!({"call_id": "c2", "ok": false})];
        let acp = vec![
            update("tool_call", "c1", "in_progress"),
            update("tool_call_update", "c1", "completed"),
            update("tool_call", "c2", "in_progress"),
            update("tool_call_update", "c2", "failed"),
        ];
        assert_eq!(run(&results, acp), Vec::<String>::new());
    }

    #[test]
    fn swapped_open_and_missing_items_are_caught() {
        let results = [
            json!({"call_id": "c1", "ok": false}),
            json!({"call_id": "c2", "ok": true}),
            json!({"call_id": "c3", "ok": true}),
        ];
        let acp = vec![
            update("tool_call", "c1", "in_progress"),
            update("tool_call_update", "c1", "completed"),
            update("tool_call", "c2", "in_progress"),
        ];
        assert_eq!(
            run(&results, acp),
            [
                "the tool call `c1` ends `completed` in ACP, but its tool_result at seq 1 supports `failed`",
                "the tool call `c2` ends `in_progress` in ACP, but its tool_result at seq 2 supports `completed`",
                "the tool call `c3` (result at seq 3) is never shown to the client",
            ]
        );
    }

    /// ACP lets the client mark a cancelled turn's unfinished calls itself; a status that
    /// contradicts the result is still caught.
    #[test]
    fn a_call_left_open_by_a_cancelled_turn_passes_a_wrong_status_does_not() {
        let answer = |stop: &str| entry("agent", json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": stop}}));
        let results = [json!({"call_id": "c1", "ok": false}), json!({"call_id": "c2", "ok": false})];
        let acp = vec![
            update("tool_call", "c1", "in_progress"),
            update("tool_call", "c2", "in_progress"),
            update("tool_call_update", "c2", "completed"),
            answer("cancelled"),
        ];
        assert_eq!(
            run(&results, acp.clone()),
            ["the tool call `c2` ends `completed` in ACP, but its tool_result at seq 2 supports `failed`"]
        );
        let mut ended = acp;
        ended[3] = answer("end_turn");
        assert_eq!(run(&results, ended).len(), 2);
    }

    /// A load that replays a failed call `completed` says what the live view did not (codex
    /// replayed a call the cancel aborted so, found by a campaign: issue 31's missed lies).
    #[test]
    fn a_call_replayed_by_load_with_a_status_its_result_contradicts_is_caught() {
        let results = [json!({"call_id": "c1", "ok": false})];
        let mut events = vec![("user_message", json!({"text": "q"}))];
        events.extend(results.iter().map(|result| ("tool_result", result.clone())));
        let mut capture = capture(&events, &[]);
        capture.reported.push(Reported { stop_reason: Some("end_turn".into()), error: None });
        capture.acp = vec![update("tool_call", "c1", "in_progress"), update("tool_call_update", "c1", "failed")];
        capture.acp_load = vec![update("tool_call", "c1", "completed")];
        let found = check(INVARIANT, &capture);
        assert_eq!(
            found,
            ["session/load replays the tool call `c1` as `completed`, but its tool_result at seq 1 supports `failed`"]
        );
        capture.acp_load = vec![update("tool_call", "c1", "failed")];
        assert_eq!(check(INVARIANT, &capture), Vec::<String>::new());
        // Shown `completed`, then set right: the client was shown the lie all the same.
        capture.acp_load = vec![update("tool_call", "c1", "completed"), update("tool_call_update", "c1", "failed")];
        assert_eq!(
            check(INVARIANT, &capture),
            ["session/load replays the tool call `c1` as `completed`, but its tool_result at seq 1 supports `failed`"]
        );
    }

    /// ACP leaves a tool item's id to the agent: one that names the call after its own prefix
    /// is the call's item, one that only shares digits is not.
    #[test]
    fn an_item_id_that_names_the_call_is_its_item() {
        let results = [json!({"call_id": "call_1", "ok": true})];
        let acp = vec![
            update("tool_call", "read_file__call_1", "in_progress"),
            update("tool_call_update", "read_file__call_1", "completed"),
        ];
        assert_eq!(run(&results, acp), Vec::<String>::new());
        let acp = vec![update("tool_call", "read_file__call_10", "completed")];
        assert_eq!(run(&results, acp), ["the tool call `call_1` (result at seq 1) is never shown to the client"]);
    }

    /// An agent that mints its own item ids (issue 31: every call read "never shown"): the
    /// calls no item names are paired in order with the items that name no call.
    #[test]
    fn items_with_the_agents_own_ids_are_paired_in_order() {
        let judged = |acp: Vec<Value>| {
            let events = [
                ("user_message", json!({"text": "q"})),
                ("tool_call", json!({"call_id": "c1", "name": "read"})),
                ("tool_call", json!({"call_id": "c2", "name": "read"})),
                ("tool_result", json!({"call_id": "c1", "ok": true})),
                ("tool_result", json!({"call_id": "c2", "ok": false})),
            ];
            let mut capture = capture(&events, &[]);
            capture.reported.push(Reported { stop_reason: Some("end_turn".into()), error: None });
            capture.acp = acp;
            check(INVARIANT, &capture)
        };
        let acp = vec![
            update("tool_call", "toolu_9", "in_progress"),
            update("tool_call_update", "toolu_9", "completed"),
            update("tool_call", "toolu_4", "in_progress"),
            update("tool_call_update", "toolu_4", "failed"),
        ];
        assert_eq!(judged(acp), Vec::<String>::new());
        // One item for two calls: the second call is the one never shown.
        let acp = vec![update("tool_call", "toolu_9", "completed")];
        assert_eq!(judged(acp), ["the tool call `c2` (result at seq 4) is never shown to the client"]);
        // An item that names its call keeps it; the other call takes the unnamed item.
        let acp = vec![update("tool_call", "toolu_9", "failed"), update("tool_call", "read__c1", "completed")];
        assert_eq!(judged(acp), Vec::<String>::new());
    }

    #[test]
    fn without_a_log_results_are_read_through_the_profile_mapping() {
        use crate::judge::fixture::{check_played_as, mapped};
        let acp = vec![update("tool_call", "c1", "in_progress"), update("tool_call_update", "c1", "completed")];
        let (capture, scenario) = mapped(&["Process exited with code 0\nOutput:\nalpha"], acp);
        assert_eq!(check_played_as(INVARIANT, INVARIANT.id, &capture, &scenario), Vec::<String>::new());
        // The same item shown `completed` over a failed result, and one never closed.
        let acp = vec![
            update("tool_call", "c1", "in_progress"),
            update("tool_call_update", "c1", "completed"),
            update("tool_call", "c2", "in_progress"),
        ];
        let (capture, scenario) = mapped(&["Process exited with code 1\nOutput:\nno", "aborted by user"], acp);
        assert!(
            check_played_as(INVARIANT, INVARIANT.id, &capture, &scenario).is_empty(),
            "read through the profile: the SHOULD's"
        );
        assert_eq!(
            check_played_as(INVARIANT, SHOWN, &capture, &scenario),
            [
                "the tool call `c1` (`read` as `exec_command`) ends `completed` in ACP, but its result in request 2 reads as a failure through the profile's mapping, so `failed`: \"Process exited with code 1\\nOutput:\\nno\"",
                "the tool call `c2` (`read` as `exec_command`) ends `in_progress` in ACP, but its result in request 2 reads as a failure through the profile's mapping, so `failed`: \"aborted by user\"",
            ]
        );
        // Without the mapping in the capture (the reference's names), nothing is read.
        let (mut capture, scenario) = mapped(&["aborted by user"], Vec::new());
        capture.mapped_calls.clear();
        assert_eq!(check_played_as(INVARIANT, INVARIANT.id, &capture, &scenario), Vec::<String>::new());
    }

    /// A call of gauntlet's MCP server is judged by what the server answered, whatever the
    /// agent's result text says: a failure shown `completed` contradicts ACP-TOOL-STATUS.
    #[test]
    fn through_gauntlets_mcp_server_the_journal_is_the_truth() {
        use crate::judge::fixture::{check_played_as, mapped};
        use gauntlet_mock_provider::tool_server::{Answer, CallEnd, ToolCall};
        let acp = vec![update("tool_call", "c1", "in_progress"), update("tool_call_update", "c1", "completed")];
        // The agent's text reads as a success through the map; the server answered an error.
        let (mut capture, scenario) = mapped(&["Process exited with code 0\nOutput:\nalpha"], acp);
        capture.mapped_calls[0].mcp = true;
        let served = |is_error: bool| ToolCall {
            call: 1,
            tool: "read".into(),
            args: json!({"path": "a.txt"}),
            scripted: is_error,
            answer: Answer::Result { text: "alpha".into(), is_error, after_ms: 0 },
            wait_ms: 0,
            end: Some(CallEnd::Answered),
        };
        capture.tool_calls = vec![served(true)];
        assert_eq!(
            check_played_as(INVARIANT, INVARIANT.id, &capture, &scenario),
            [
                "the tool call `c1` (`read` as `exec_command`) ends `completed` in ACP, but gauntlet's MCP server answered it with a failure (its result in request 2), so `failed`: \"Process exited with code 0\\nOutput:\\nalpha\""
            ]
        );
        capture.tool_calls = vec![served(false)];
        assert_eq!(check_played_as(INVARIANT, INVARIANT.id, &capture, &scenario), Vec::<String>::new());
        // A result the server never sent is no success.
        capture.tool_calls.clear();
        assert_eq!(check_played_as(INVARIANT, INVARIANT.id, &capture, &scenario).len(), 1);
    }

    /// An update of an item never shown, and a status that goes back, are out of order
    /// (issue 31: both passed unremarked).
    #[test]
    fn an_update_before_its_item_and_a_status_going_back_are_caught() {
        use crate::judge::fixture::{entry, prompt};
        let update = |kind: &str, id: &str, status: &str| {
            entry(
                "agent",
                serde_json::json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
                    "update": {"sessionUpdate": kind, "toolCallId": id, "status": status}}}),
            )
        };
        let capture = crate::capture::Capture {
            acp: vec![
                entry("client", prompt(1, "p")),
                update("tool_call_update", "ghost", "in_progress"),
                update("tool_call", "c1", "pending"),
                update("tool_call_update", "c1", "in_progress"),
                update("tool_call_update", "c1", "pending"),
                update("tool_call_update", "c1", "completed"),
            ],
            ..crate::capture::Capture::default()
        };
        let found = crate::judge::fixture::check_as(INVARIANT, SHOWN, &capture);
        assert_eq!(
            found,
            [
                "the tool item `ghost` is updated before the client is shown it (no `tool_call` first)",
                "the tool item `c1` goes back from `in_progress` to `pending`",
            ]
        );
    }

    /// Two calls the model gave one id, shown as one item reopened, are one behaviour:
    /// REPLAY-CALL-ID-UNIQUE's, not also a status going back.
    #[test]
    fn an_item_reopened_for_a_repeated_call_id_is_not_a_status_going_back() {
        let scenario = crate::judge::fixture::scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"Read both.\"\nrespond = [\n  { calls = [{ name = \"read\", args = { path = \"a\" }, call_id = \"same\" }, { name = \"read\", args = { path = \"b\" }, call_id = \"same\" }] },\n  { text = [\"done\"] },\n]\n",
        );
        let mut capture = capture(&[], &[]);
        capture.acp = vec![
            update("tool_call", "same", "in_progress"),
            update("tool_call_update", "same", "completed"),
            update("tool_call_update", "same", "in_progress"),
            update("tool_call_update", "same", "completed"),
        ];
        let found = crate::judge::fixture::check_played_as(INVARIANT, SHOWN, &capture, &scenario);
        assert_eq!(found, Vec::<String>::new());
    }

    /// A model that closes a call whose arguments do not parse: an agent that shows it
    /// `completed` claims a run no tool could have made; shown `failed`, it tells the truth.
    #[test]
    fn a_call_whose_arguments_do_not_parse_is_never_completed() {
        let scenario = crate::judge::fixture::scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"Read it.\"\nrespond = [\n  { calls = [{ name = \"read\", raw_args = '{\"path\": \"a', call_id = \"c1\" }] },\n  { text = [\"no\"] },\n]\n",
        );
        let ended = |status: &str| {
            let mut capture = capture(&[], &[json!({}), json!({})]);
            for (index, request) in capture.requests.iter_mut().enumerate() {
                request.response_index = Some(index);
            }
            capture.acp = vec![update("tool_call", "c1", "in_progress"), update("tool_call_update", "c1", status)];
            crate::judge::fixture::check_played_as(INVARIANT, INVALID, &capture, &scenario)
        };
        assert_eq!(
            ended("completed"),
            [
                "the tool call `c1` has arguments that are not a JSON object ({\"path\": \"a), yet ends `completed` in ACP"
            ]
        );
        assert!(ended("failed").is_empty());
    }

    /// An agent that repairs the model's broken arguments and runs the call it repaired (its
    /// request gives the call parsed arguments, gauntlet's MCP server answered them with a
    /// success) shows a call that completed; the same arguments never received, it did not.
    #[test]
    fn a_call_the_agent_repaired_and_ran_may_complete() {
        use gauntlet_mock_provider::tool_server::{Answer, CallEnd, ToolCall};
        let scenario = crate::judge::fixture::scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"Read it.\"\nrespond = [\n  { calls = [{ name = \"read\", raw_args = '{\"path\": \"a', call_id = \"c1\" }] },\n  { text = [\"ok\"] },\n]\n",
        );
        let user = crate::judge::fixture::user("Read it.");
        let call = json!({"type": "function_call", "call_id": "c1", "name": "mcp__gauntlet__read", "arguments": "{\"path\": \"a\"}"});
        let output = json!({"type": "function_call_output", "call_id": "c1", "output": "alpha"});
        let played = |served_args: Value| {
            let bodies = vec![
                crate::judge::fixture::body(vec![user.clone()]),
                crate::judge::fixture::body(vec![user.clone(), call.clone(), output.clone()]),
            ];
            let mut capture = capture(&[], &bodies);
            for (index, request) in capture.requests.iter_mut().enumerate() {
                request.response_index = Some(index);
            }
            let answer = Answer::Result { text: "alpha".into(), is_error: false, after_ms: 0 };
            let end = Some(CallEnd::Answered);
            capture.tool_calls = vec![ToolCall {
                call: 1,
                tool: "read".into(),
                args: served_args,
                scripted: false,
                answer,
                wait_ms: 0,
                end,
            }];
            capture.acp = vec![update("tool_call", "c1", "in_progress"), update("tool_call_update", "c1", "completed")];
            crate::judge::fixture::check_played_as(INVARIANT, INVALID, &capture, &scenario)
        };
        assert_eq!(played(json!({"path": "a"})), Vec::<String>::new());
        assert_eq!(played(json!({"path": "b"})).len(), 1);
    }

    /// A model that calls a tool it was never offered (`deploy`, beside the offered `read`):
    /// an agent that shows that call `completed` claims a success no tool could have had; shown
    /// `failed`, it tells the truth. Read from the calls the requests carry, without a Log.
    #[test]
    fn a_call_to_a_tool_never_offered_is_never_completed() {
        let offered = |input: Vec<Value>| {
            let mut body = crate::judge::fixture::body(input);
            body["tools"] = json!([{"type": "function", "name": "read", "parameters": {}}]);
            body
        };
        let call = json!({"type": "function_call", "call_id": "c1", "name": "deploy", "arguments": "{}"});
        let output = json!({"type": "function_call_output", "call_id": "c1", "output": "done"});
        let user = crate::judge::fixture::user("Deploy it.");
        let ended = |status: &str| {
            let mut capture =
                capture(&[], &[offered(vec![user.clone()]), offered(vec![user.clone(), call.clone(), output.clone()])]);
            capture.acp = vec![update("tool_call", "c1", "in_progress"), update("tool_call_update", "c1", status)];
            crate::judge::fixture::check_as(INVARIANT, UNKNOWN, &capture)
        };
        assert_eq!(
            ended("completed"),
            ["the tool call `c1` names `deploy`, a tool no request offered the model, yet ends `completed` in ACP"]
        );
        assert!(ended("failed").is_empty());
    }
}
