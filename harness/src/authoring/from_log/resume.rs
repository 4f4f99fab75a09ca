//! Where the process that a scenario reproduces began writing: the events before that point
//! are the scenario's `[log]` preload, those after it its scripted turns.
//!
//! A Log does not say which process wrote which event, but two things in it do:
//!
//! - **Restart recovery.** A resumed Session writes its recovery evidence before anything else
//!   (TURN-RESTART-RECOVERY, SUB-DETACHED): `tool_result`s repairing orphan calls with reason
//!   `restart` (TURN-ORPHAN-REPAIR), `turn_failed` with `error_kind: "restarted"`, and
//!   `subagent_event`s `detached`. The last run of such events is where the last process began.
//! - **Output no Provider call produced.** A run records `provider_usage` before each finished
//!   call's answer and tool calls (pixir.md 1.3). In a Log that records usage, a clean answer or
//!   tool call with no `provider_usage` before it was not written by a Provider call a script can
//!   play (an earlier process that kept no usage, an import, a hand edit): its Turn and
//!   everything before it are preloaded. This is what shows in a Log whose earlier process
//!   ended cleanly (a torn tail the resume cut leaves no trace).
//!
//! The later of the two points wins; with neither, nothing is preloaded.

use super::Event;
use gauntlet_agent::EventType;
use gauntlet_agent::event::LifecycleEvent;

/// The index in `events` of the first event the reproduced process wrote: 0 when the whole Log
/// is scripted. A point with no `user_message` after it is no point (nothing could be
/// scripted): the whole Log is scripted then, and `notes` says why.
pub(super) fn point(events: &[Event], notes: &mut Vec<String>) -> usize {
    let resumed = after_restart(events);
    let unplayable = after_unplayable_output(events);
    let point = resumed.max(unplayable);
    if point == 0 {
        return 0;
    }
    if !events[point..].iter().any(|event| event.line.kind == EventType::UserMessage) {
        notes.push(format!(
            "the Log has no prompt after seq {}, where its last process began: nothing to preload it under, so every turn is scripted",
            events[point].line.seq.unwrap_or_default()
        ));
        return 0;
    }
    point
}

/// Whether `event` is recovery evidence a resumed Session writes before anything else.
fn is_recovery(event: &Event) -> bool {
    let line = &event.line;
    if let Some(result) = line.tool_result() {
        let reason = result.error_details().and_then(|details| details.get("reason")?.as_str());
        return result.error_kind() == Some("orphan_tool_call") && reason == Some("restart");
    }
    line.turn_failed().is_some_and(|failed| failed.error_kind == Some("restarted"))
        || line.subagent_event().is_some_and(|event| event.lifecycle_event() == Some(LifecycleEvent::Detached))
}

/// The first event of the last run of recovery events, else 0.
fn after_restart(events: &[Event]) -> usize {
    let Some(last) = events.iter().rposition(is_recovery) else { return 0 };
    let mut first = last;
    while first > 0 && is_recovery(&events[first - 1]) {
        first -= 1;
    }
    first
}

/// Where the last Turn holding clean output without its `provider_usage` ends (the next
/// `user_message`, or the recovery evidence that closed it), when a later `provider_usage`
/// shows that the Log records usage; else 0.
fn after_unplayable_output(events: &[Event]) -> usize {
    // A call's answer and tool calls follow its usage; the calls of one response run one after
    // another, so a tool call may follow a tool result, but an answer may not. Text right before
    // `turn_failed` is the failed call's partial text, however it was recorded.
    let (mut usage_open, mut after_results) = (false, false);
    let mut unplayable_at = None;
    let mut answer_without_usage = None;
    for (idx, event) in events.iter().enumerate() {
        let line = &event.line;
        if line.kind == EventType::TurnFailed {
            answer_without_usage = None;
            continue;
        }
        unplayable_at = answer_without_usage.take().or(unplayable_at);
        match line.kind.known() {
            Some(EventType::ProviderUsage) => (usage_open, after_results) = (true, false),
            Some(EventType::UserMessage) => usage_open = false,
            Some(EventType::ToolResult) => after_results = true,
            Some(EventType::ToolCall) if !usage_open => unplayable_at = Some(idx),
            Some(EventType::AssistantMessage) if (!usage_open || after_results) && !line.is_partial_assistant() => {
                answer_without_usage = Some(idx);
            }
            _ => {}
        }
    }
    unplayable_at = answer_without_usage.or(unplayable_at);
    let Some(at) = unplayable_at else { return 0 };
    let ends_turn = |event: &Event| event.line.kind == EventType::UserMessage || is_recovery(event);
    let Some(end) = events[at..].iter().position(ends_turn).map(|n| at + n) else { return 0 };
    if events[end..].iter().any(|event| event.line.kind == EventType::ProviderUsage) { end } else { 0 }
}
