//! WIRE-CUT-CALL-NOT-RUN: a tool call the output limit cut is never run. A response that ended
//! `incomplete` with its stream cut inside (or before) a call's arguments holds a call the model
//! never finished (the Anthropic Messages API: a response cut at `max_tokens` inside a
//! `tool_use` block holds an incomplete tool use, to be asked again with a higher limit; the
//! Responses API marks it `incomplete`). Read from gauntlet's MCP server's journal: a tool it
//! received more calls of than the script finished ran the cut one, whatever arguments the
//! agent made up for it.

use std::collections::BTreeSet;

use gauntlet_mock_provider::script::{Ending, Response};

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};

pub const INVARIANT: Invariant =
    Invariant { id: "WIRE-CUT-CALL-NOT-RUN", also: &[], name: "cut_call_not_run", applies: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<Violation> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    if evidence.capture.tool_calls.is_empty() {
        return Vec::new();
    }
    let responses: Vec<&Response> = scenario.root_responses().collect();
    let calls = || {
        responses
            .iter()
            .flat_map(|response| response.calls.iter().enumerate().map(move |(at, call)| (*response, at, call)))
    };
    let cut =
        |response: &Response, at: usize| matches!(response.then, Ending::Incomplete(_)) && !response.finishes_call(at);
    let cut_tools: BTreeSet<&str> =
        calls().filter(|(response, at, _)| cut(response, *at)).map(|(_, _, call)| call.name.as_str()).collect();
    let mut problems = Vec::new();
    for tool in cut_tools {
        let finished = calls().filter(|(response, at, call)| call.name == tool && !cut(response, *at)).count();
        let ran = evidence.capture.tool_calls.iter().filter(|served| served.tool == tool).count();
        if ran > finished {
            problems.push(Violation::new(format!(
                "a `{tool}` call the output limit cut was run: gauntlet's MCP server received {ran} call(s) of `{tool}`, the model finished {finished}"
            )));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use gauntlet_mock_provider::tool_server::{Answer, CallEnd, ToolCall};
    use serde_json::json;

    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{check_played, scenario};

    /// The model's `write` cut inside its arguments: an agent that runs it anyway (the server
    /// received a `write`) is caught; one that drops it, or a run of a call the model
    /// finished, is not.
    #[test]
    fn a_call_cut_by_the_output_limit_that_ran_is_caught() {
        let cut = scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"Rewrite it.\"\nstop_reason = \"max_tokens\"\nrespond = [\n  { calls = [{ name = \"write\", args = { path = \"a\", content = \"b\" } }], cut_after = 4, then = { incomplete = \"max_output_tokens\" } },\n]\n",
        );
        let served = |tool: &str| ToolCall {
            call: 1,
            tool: tool.into(),
            args: json!({"path": "a"}),
            scripted: false,
            answer: Answer::Result { text: "written".into(), is_error: false, after_ms: 0 },
            wait_ms: 0,
            end: Some(CallEnd::Answered),
        };
        let ran =
            |calls: Vec<ToolCall>| check_played(INVARIANT, &Capture { tool_calls: calls, ..Capture::default() }, &cut);
        assert_eq!(
            ran(vec![served("write")]),
            [
                "a `write` call the output limit cut was run: gauntlet's MCP server received 1 call(s) of `write`, the model finished 0"
            ]
        );
        assert!(ran(vec![served("read")]).is_empty());
        assert!(ran(Vec::new()).is_empty());
        let whole = scenario(
            "title = \"t\"\n[[turn]]\nprompt = \"Rewrite it.\"\nrespond = [{ calls = [{ name = \"write\", args = { path = \"a\", content = \"b\" } }] }, { text = [\"done\"] }]\n",
        );
        let capture = Capture { tool_calls: vec![served("write")], ..Capture::default() };
        assert!(check_played(INVARIANT, &capture, &whole).is_empty());
    }
}
