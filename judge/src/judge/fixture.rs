//! Hand-made captures for the tests of the Turn rules and the readings they share.
#![cfg(test)]

use serde_json::{Value, json};

use crate::capture::{Capture, Request};
use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Violation};
use crate::judge::v1_reading;

/// A Log of one Turn whose clean answer the Provider cut short for `reason`.
pub fn truncated_answer(reason: &str) -> Capture {
    let truncation = json!({"reason": reason});
    capture(
        &[
            ("user_message", json!({"text": "q"})),
            ("assistant_message", json!({"text": "a", "metadata": {"output_truncation": truncation}})),
        ],
        &[],
    )
}

/// A Log of one honest `failed` workflow `wf_1` (seq 3 its result): step `a` ran as
/// Subagent `sub_1`, which failed (`provider_error`, 7 ms), and step `b`, which depends on
/// it, is held. `edit` changes the `tool_result`'s data (`output`, `workflow`) before it is
/// logged; `workflow_finished` records the status it leaves.
pub fn failed_workflow(edit: impl FnOnce(&mut Value)) -> Capture {
    let step_a = json!({"step_id": "a", "agent_id": "sub_1", "child_session_id": "wf_1-a", "wave": 1,
        "status": "failed", "subagent_status": "failed", "checkpoint_status": "failed", "summary": "boom",
        "elapsed_ms": 7, "error": {"kind": "provider_error", "details": "boom"},
        "safe_next_actions": ["inspect_step_failure", "retry_failed_step"]});
    let step_b = json!({"step_id": "b", "status": "held", "checkpoint_status": "held",
        "held_reason": "dependency_not_checkpoint_ready", "safe_next_actions": ["rerun_after_dependencies_checkpoint_ready"]});
    let summary = json!({"steps": 2, "waves": 1, "checkpoint_ready_steps": 0, "held_steps": 1, "failed_steps": 1,
        "timeout_steps": 0, "partial_steps": 0, "needs_orchestrator_steps": 0});
    let workflow = json!({"workflow_id": "wf_1", "status": "failed", "ok": false, "steps": [step_a, step_b],
        "waves": [["a"]], "held_steps": ["b"], "failed_steps": ["a"], "partial_steps": [],
        "needs_orchestrator_steps": [], "timeout_steps": [], "summary": summary,
        "safe_next_actions": ["retry_failed_steps", "rerun_after_dependencies_checkpoint_ready"],
        "proof_states": ["summaries_collected"],
        "unresolved_seam_obligations": [{"step_id": "b", "depends_on": "a", "dependency_checkpoint_status": "failed"}]});
    let output =
        "Workflow wf_1 failed: 0 checkpoint-ready, 1 failed, 0 timed out, 1 held, 0 partial, 0 needing orchestrator.";
    let mut result = json!({"call_id": "c", "output": output, "workflow": workflow});
    edit(&mut result);
    let graph = json!({"steps": [{"id": "a", "depends_on": []}, {"id": "b", "depends_on": ["a"]}]});
    let finished = json!({"kind": "workflow_finished", "workflow_id": "wf_1", "status": result["workflow"]["status"], "ok": false});
    capture(
        &[
            (
                "subagent_event",
                json!({"subagent_id": "sub_1", "status": "failed", "reason": "provider_error",
                    "child_session_id": "wf_1-a", "summary": "boom", "elapsed_ms": 7}),
            ),
            ("workflow_event", json!({"kind": "workflow_started", "workflow_id": "wf_1", "graph": graph})),
            ("workflow_event", finished),
            ("tool_result", result),
        ],
        &[],
    )
}

/// A capture whose Log holds `events` as `(type, data)` with seqs from 0.
pub fn capture(events: &[(&str, Value)], bodies: &[Value]) -> Capture {
    let log = events
        .iter()
        .enumerate()
        .map(|(seq, (kind, data))| {
            json!({"data": data, "id": format!("{seq:016x}"), "seq": seq, "session_id": "s", "ts": "t", "type": kind})
                .to_string()
        })
        .collect();
    Capture { log, requests: requests(bodies.to_vec()), ..Capture::default() }
}

/// Runs one invariant on a capture.
pub fn check(invariant: Invariant, capture: &Capture) -> Vec<String> {
    let read = v1_reading::of_capture(capture);
    messages((invariant.check)(&Evidence::new(&read).with_raw(capture)))
}

/// The violations' messages.
pub fn messages(violations: Vec<Violation>) -> Vec<String> {
    violations.into_iter().map(|violation| violation.message).collect()
}

/// A user input item.
pub fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "input_text", "text": text}]})
}

/// An assistant input item.
pub fn assistant(text: &str) -> Value {
    json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
}

/// A transcript entry.
pub fn entry(from: &str, message: Value) -> Value {
    json!({"from": from, "message": message})
}

/// A `session/update` notification with an agent text chunk.
pub fn chunk(kind: &str, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update",
        "params": {"sessionId": "s", "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}}}})
}

/// A `session/prompt` request.
pub fn prompt(id: i64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": "s", "prompt": [{"type": "text", "text": text}]}})
}

/// A request body with these input items.
pub fn body(input: Vec<Value>) -> Value {
    json!({"model": "m", "input": input, "store": false, "stream": true})
}

/// A scenario from TOML text.
pub fn scenario(text: &str) -> crate::scenario::Scenario {
    crate::scenario::parse(text, std::path::Path::new("fixture.toml")).unwrap()
}

/// Runs one invariant on a capture of `scenario`.
pub fn check_played(invariant: Invariant, capture: &Capture, scenario: &crate::scenario::Scenario) -> Vec<String> {
    let read = v1_reading::of_capture(capture);
    messages((invariant.check)(&Evidence::of_scenario(&read, scenario).with_raw(capture)))
}

/// The messages of the violations of requirement `id` that a rule checking several finds.
pub fn check_played_as(
    invariant: Invariant,
    id: &str,
    capture: &Capture,
    scenario: &crate::scenario::Scenario,
) -> Vec<String> {
    let read = v1_reading::of_capture(capture);
    of_requirement(invariant, id, (invariant.check)(&Evidence::of_scenario(&read, scenario).with_raw(capture)))
}

/// [`check_played_as`] for a capture without a scenario.
pub fn check_as(invariant: Invariant, id: &str, capture: &Capture) -> Vec<String> {
    let read = v1_reading::of_capture(capture);
    of_requirement(invariant, id, (invariant.check)(&Evidence::new(&read).with_raw(capture)))
}

fn of_requirement(invariant: Invariant, id: &str, violations: Vec<Violation>) -> Vec<String> {
    let of = |violation: &Violation| violation.requirement.unwrap_or(invariant.id) == id;
    messages(violations.into_iter().filter(of).collect())
}

/// An agent without a Log, its `read` mapped to `exec_command`: the scripted calls and
/// their results as its requests carry them, and a scenario holding the mapping.
pub fn mapped(outputs: &[&str], acp: Vec<Value>) -> (crate::capture::Capture, crate::scenario::Scenario) {
    use crate::tool_map::{AbstractTool, MappedCall, ToolMapping};
    let mut scenario = scenario(
        "title = \"t\"\n[workspace]\n\"a.txt\" = \"alpha\"\n[[turn]]\nprompt = \"q\"\nrespond = [{ calls = [{ name = \"read\", args = { path = \"a.txt\" } }] }, { text = [\"x\"] }]\n",
    );
    let read: ToolMapping = toml::from_str(
        "name = \"exec_command\"\nargs = { cmd = \"cat {path}\" }\nok = \"code 0\"\ncontent_after = \"Output:\\n\"\n",
    )
    .unwrap();
    scenario.tools.insert(AbstractTool::Read, read);
    let rendered = json!({"cmd": "cat a.txt"});
    let mut input = vec![user("q")];
    for (n, output) in outputs.iter().enumerate() {
        let id = format!("c{}", n + 1);
        input.push(
            json!({"type": "function_call", "call_id": id, "name": "exec_command", "arguments": rendered.to_string()}),
        );
        input.push(json!({"type": "function_call_output", "call_id": id, "output": output}));
    }
    let mut capture = capture(&[], &[body(vec![user("q")]), body(input)]);
    capture.log.clear();
    capture.acp = acp;
    capture.reported.push(crate::capture::Reported { stop_reason: Some("end_turn".into()), error: None });
    capture.mapped_calls = vec![MappedCall {
        tool: AbstractTool::Read,
        args: json!({"path": "a.txt"}),
        name: "exec_command".into(),
        rendered,
        mcp: false,
    }];
    (capture, scenario)
}

/// Requests of the root answered by script responses 0, 1, 2... in order.
pub fn requests(bodies: Vec<Value>) -> Vec<Request> {
    Request::chained(bodies.into_iter().enumerate().map(|(idx, body)| ("root".to_owned(), Some(idx), body)))
}
