//! LOG-TOOL-RESULT-TRUE: the Log records a call of gauntlet's MCP server `ok` only when the
//! server answered it with a success. The Log is the source of truth for what a Turn did (seed
//! 000, ADR 0003), and its `tool_result` is what the model is told next; gauntlet's tool server
//! knows what it really answered (its journal, `Capture::tool_calls`), so an error, a crash or
//! a hang recorded as a success is an invented result.

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::tool_results::Served;
use crate::log_line::Line;

pub const INVARIANT: Invariant =
    Invariant { id: "LOG-TOOL-RESULT-TRUE", also: &[], name: "tool_results_served", applies: Scope::Log, check };

fn check(evidence: &Evidence) -> Vec<Violation> {
    let mcp_calls: Vec<_> = evidence.capture.mapped_calls.iter().filter(|call| call.mcp).collect();
    if mcp_calls.is_empty() {
        return Vec::new();
    }
    let mut served = Served::of(evidence.capture);
    let mut problems = Vec::new();
    for logged in evidence.lines.iter().filter_map(Line::tool_call) {
        let (Some(call_id), Some(name)) = (logged.call_id, logged.name) else { continue };
        let args = logged.args.cloned().unwrap_or_default();
        let Some(call) = mcp_calls.iter().find(|call| call.name == name && call.rendered == args) else { continue };
        let outcome = served.outcome(call);
        let result =
            evidence.lines.iter().find(|line| line.tool_result().is_some_and(|result| result.call_id == Some(call_id)));
        let Some(result) = result else { continue };
        let recorded_ok = result.tool_result().and_then(|result| result.ok) == Some(true);
        if recorded_ok && !outcome.ok {
            let seq = result.seq.map_or_else(String::new, |seq| format!(" at seq {seq}"));
            let message = format!(
                "the Log records the tool call `{call_id}` (`{}` as `{name}`) ok{seq}, but gauntlet's MCP server answered it with no success",
                call.tool.as_str()
            );
            problems.push(Violation::new(message));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use gauntlet_mock_provider::tool_server::{Answer, CallEnd, ToolCall};
    use serde_json::json;

    use super::*;
    use crate::judge::fixture::{capture, check};
    use crate::tool_map::{AbstractTool, MappedCall};

    #[test]
    fn a_failure_of_the_server_recorded_ok_is_caught() {
        let args = json!({"path": "notes.txt"});
        let lines = |ok: bool| {
            [
                ("user_message", json!({"text": "q"})),
                ("tool_call", json!({"call_id": "c1", "name": "mcp__gauntlet__read", "args": args})),
                ("tool_result", json!({"call_id": "c1", "ok": ok, "output": "x"})),
                ("assistant_message", json!({"text": "a"})),
            ]
        };
        let served = |is_error: bool| ToolCall {
            call: 1,
            tool: "read".into(),
            args: args.clone(),
            scripted: true,
            answer: Answer::Result { text: "x".into(), is_error, after_ms: 0 },
            wait_ms: 0,
            end: Some(CallEnd::Answered),
        };
        let run = |ok: bool, is_error: bool| {
            let mut capture = capture(&lines(ok), &[]);
            capture.mapped_calls = vec![MappedCall {
                tool: AbstractTool::Read,
                args: args.clone(),
                name: "mcp__gauntlet__read".into(),
                rendered: args.clone(),
                mcp: true,
            }];
            capture.tool_calls = vec![served(is_error)];
            check(INVARIANT, &capture)
        };
        assert_eq!(
            run(true, true),
            [
                "the Log records the tool call `c1` (`read` as `mcp__gauntlet__read`) ok at seq 2, but gauntlet's MCP server answered it with no success"
            ]
        );
        assert!(run(true, false).is_empty());
        assert!(run(false, true).is_empty(), "a failure recorded as one");
    }
}
