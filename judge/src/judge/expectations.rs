//! Expectations: what the scenario file states, checked against the Log.
//!
//! The terminal state of each turn comes from the Log auditor, never from what the runtime
//! reported: a runtime that says `completed` over failure evidence fails here and in the
//! TURN-TERMINAL-EVIDENCE invariant.

use crate::judge::evidence::Evidence;
use crate::log_line::{Line, ToolResult};
use crate::scenario::{PlanEntryExpect, Scenario};
use crate::tool_map::AbstractTool;
use crate::verdict::{Finding, Layer};
use gauntlet_agent::EventType;

/// Checks every expectation of `scenario`.
pub fn check(scenario: &Scenario, evidence: &Evidence) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut fail = |message: String| findings.push(Finding::new(Layer::Expectation, None, message));
    let turns = &evidence.audit.turns;
    // Without a gauntlet Log, only what the agent answered can be checked here; the wire
    // invariants judge the rest against the outcome the script forces.
    let logged = !evidence.capture.log.is_empty();
    // The scenario's turns are the last ones in the Log; earlier ones were preloaded.
    let offset = turns.len().saturating_sub(scenario.turns.len());
    if logged && turns.len() < scenario.turns.len() {
        fail(format!("the Log shows {} turns, the scenario ran {}", turns.len(), scenario.turns.len()));
    }
    for (idx, expected) in scenario.turns.iter().enumerate() {
        let n = idx + 1;
        // Another agent's stop reasons are the invariants' to judge (ACP-STOP-REASON,
        // ACP-TRUNCATION-STOP-REASON), which know what it could observe: a continuation after a
        // cut, a knob it was not told. The file's `stop_reason` pins the reference's.
        if let Some(reason) = expected.stop_reason.as_ref().filter(|_| scenario.knobs.is_none()) {
            let answered = evidence.capture.reported.get(idx).and_then(|reported| reported.stop_reason.as_deref());
            if answered != Some(reason.as_str()) {
                fail(format!("turn {n}: expected stop reason `{reason}`, the agent answered {answered:?}"));
            }
        }
        let Some(turn) = turns.get(offset + idx) else { continue };
        match turn.terminal_status {
            Some(status) if status == expected.expect => {}
            Some(status) => fail(format!("turn {n}: expected `{}`, the Log shows `{status}`", expected.expect)),
            None => fail(format!("turn {n}: expected `{}`, the Log shows no terminal evidence", expected.expect)),
        }
        if let Some(kind) = expected.error_kind
            && turn.error_kind.as_deref() != Some(kind.as_str())
        {
            fail(format!("turn {n}: expected error_kind `{kind}`, the Log shows {:?}", turn.error_kind));
        }
    }
    for problem in mapped_reads(scenario, evidence) {
        fail(problem);
    }
    // An agent without a gauntlet Log is judged on how it reports its children instead
    // (delegation_reported).
    let children = if evidence.capture.log.is_empty() { None } else { Some(&scenario.children) };
    for (route, child) in children.into_iter().flatten() {
        let session = child.prompt.as_deref().and_then(|prompt| prompted_child(evidence, prompt)).unwrap_or(route);
        let subagent = evidence.audit.subagents.iter().find(|subagent| subagent.child_session_id == *session);
        if let Some(expected) = child.expect {
            match subagent.and_then(|subagent| subagent.status) {
                Some(status) if status == expected => {}
                Some(status) => {
                    fail(format!("child {route}: expected `{expected}`, the parent's Log shows `{status}`"))
                }
                None => fail(format!(
                    "child {route}: expected `{expected}`, the parent's Log shows no subagent_event for it"
                )),
            }
        }
        if let Some(reason) = &child.reason
            && subagent.and_then(|subagent| subagent.reason.as_deref()) != Some(reason.as_str())
        {
            fail(format!(
                "child {route}: expected reason `{reason}`, the parent's Log shows {:?}",
                subagent.and_then(|subagent| subagent.reason.as_deref())
            ));
        }
    }
    check_workflows(scenario, evidence, &mut fail);
    let plan = scenario.expect.plan.as_ref().map(|expected| check_plan(expected, evidence));
    if let Some(offset) = scenario.expect.torn_tail_offset {
        match &evidence.capture.torn_tail {
            Some(torn) if torn.offset == offset => {}
            Some(torn) => fail(format!("expected a torn tail at byte {offset}, it was reported at {}", torn.offset)),
            None => fail(format!("expected a torn tail at byte {offset}, none was reported")),
        }
    }
    findings.extend(plan.into_iter().flatten());
    findings
}

/// The to-do list the client is shown last against `[[expect.plan]]`. An agent that shows no
/// plan at all is a finding against ACP-PLAN-SHOWN, a MAY (ACP lets an agent share its plan;
/// it does not require it): true, and `conformant` at worst.
fn check_plan(expected: &[PlanEntryExpect], evidence: &Evidence) -> Vec<Finding> {
    let updates: Vec<&serde_json::Value> = evidence
        .capture
        .acp
        .iter()
        .filter_map(|entry| entry.pointer("/message/params/update"))
        .filter(|update| update.get("sessionUpdate").and_then(serde_json::Value::as_str) == Some("plan"))
        .collect();
    let Some(last) = updates.last() else {
        return vec![Finding::new(
            Layer::Expectation,
            Some("ACP-PLAN-SHOWN"),
            "the agent sent no ACP `plan` update: its to-do tool's list is not shown to the client as a plan"
                .to_owned(),
        )];
    };
    let text = |entry: &serde_json::Value, key: &str| {
        entry.get(key).and_then(serde_json::Value::as_str).unwrap_or_default().to_owned()
    };
    let shown: Vec<&serde_json::Value> = last
        .get("entries")
        .and_then(serde_json::Value::as_array)
        .map(|entries| entries.iter().collect())
        .unwrap_or_default();
    let matches = shown.len() == expected.len()
        && shown.iter().zip(expected).all(|(entry, expected)| {
            text(entry, "content") == expected.content
                && text(entry, "status") == expected.status
                && expected.priority.as_ref().is_none_or(|priority| text(entry, "priority") == *priority)
        });
    if matches {
        return Vec::new();
    }
    let describe = |content: String, status: String| format!("{content} ({status})");
    let shown: Vec<String> =
        shown.iter().map(|entry| describe(text(entry, "content"), text(entry, "status"))).collect();
    let wanted: Vec<String> =
        expected.iter().map(|entry| describe(entry.content.clone(), entry.status.clone())).collect();
    // ACP-PLAN-SHOWN's too: how an agent words or orders its own list is its presentation.
    vec![Finding::new(
        Layer::Expectation,
        Some("ACP-PLAN-SHOWN"),
        format!(
            "the last ACP plan update (of {}) shows {shown:?}, expected the model's last list {wanted:?}",
            updates.len()
        ),
    )]
}

/// Each `run_workflow` result, in call order, against the scenario's `[[expect.workflow]]`.
fn check_workflows(scenario: &Scenario, evidence: &Evidence, fail: &mut impl FnMut(String)) {
    if scenario.expect.workflows.is_empty() {
        return;
    }
    let calls: Vec<&str> = evidence
        .lines
        .iter()
        .filter_map(Line::tool_call)
        .filter(|call| call.name == Some("run_workflow"))
        .filter_map(|call| call.call_id)
        .collect();
    let results: Vec<ToolResult> = calls
        .iter()
        .filter_map(|call_id| {
            evidence.lines.iter().filter_map(Line::tool_result).find(|result| result.call_id == Some(call_id))
        })
        .collect();
    if results.len() != scenario.expect.workflows.len() {
        fail(format!(
            "expected {} run_workflow results, the Log shows {}",
            scenario.expect.workflows.len(),
            results.len()
        ));
    }
    for (idx, (expected, result)) in scenario.expect.workflows.iter().zip(results).enumerate() {
        let n = idx + 1;
        let error = result.error_kind();
        if let Some(kind) = &expected.error {
            if error != Some(kind.as_str()) {
                fail(format!("workflow {n}: expected a tool error `{kind}`, the Log shows {error:?}"));
            }
            continue;
        }
        let id = result.workflow.and_then(|workflow| workflow.get("workflow_id")?.as_str()).unwrap_or_default();
        let Some(audit) = evidence.audit.workflows.iter().find(|audit| audit.workflow_id == id) else {
            fail(format!("workflow {n}: no workflow_event spine in the Log (tool error {error:?})"));
            continue;
        };
        if let Some(status) = expected.status
            && audit.terminal_state != Some(status)
        {
            fail(format!("workflow {n}: expected `{status:?}`, the spine shows {:?}", audit.terminal_state));
        }
        for (step, status) in &expected.steps {
            let found = audit.steps.get(step);
            if found.map(String::as_str) != Some(status.as_str()) {
                fail(format!("workflow {n}: expected step {step} `{}`, the spine shows {found:?}", status.as_str()));
            }
        }
        if let Some(waves) = &expected.waves
            && audit.waves != *waves
        {
            fail(format!("workflow {n}: expected waves {waves:?}, the spine shows {:?}", audit.waves));
        }
    }
}

/// The child Session whose Log opens with a user message holding `prompt`: a child scripted by
/// what it was delegated, whatever id the agent gave it.
fn prompted_child<'e>(evidence: &'e Evidence, prompt: &str) -> Option<&'e str> {
    evidence.capture.children.iter().find_map(|(id, lines)| {
        let first: serde_json::Value = lines.iter().find_map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).ok()?;
            (value["type"].as_str() == Some(EventType::UserMessage.as_str())).then_some(value)
        })?;
        first["data"]["text"].as_str().is_some_and(|text| text.contains(prompt)).then_some(id.as_str())
    })
}

/// A scripted `read` of a file the scenario seeded, run as the agent's own tool through the
/// profile's `[tools]`, must come back a success carrying the file's text: otherwise the tool
/// never really ran (a wrong mapping, a sandbox that refuses it) and the scenario would judge
/// a conversation it did not mean.
fn mapped_reads(scenario: &Scenario, evidence: &Evidence) -> Vec<String> {
    let mut problems = Vec::new();
    for result in evidence.mapped_results() {
        if result.call.tool != AbstractTool::Read {
            continue;
        }
        // A read whose answer the scenario scripts is meant to fail or to differ.
        if result.call.mcp && scenario.scripts_outcome(result.call.tool.as_str(), &result.call.args) {
            continue;
        }
        let Some(path) = result.call.args.get("path").and_then(serde_json::Value::as_str) else { continue };
        let Some(text) = scenario.workspace.get(path) else { continue };
        let (id, n, name) = (&result.call_id, result.request, &result.call.name);
        if !result.outcome.ok {
            problems.push(format!(
                "the scripted `read` of `{path}` ran as `{name}` (call `{id}`), and {}: {:?}",
                result.reading(),
                result.output.chars().take(300).collect::<String>()
            ));
        } else if result.outcome.content.trim_end() != text.trim_end() {
            problems.push(format!(
                "the scripted `read` of `{path}` ran as `{name}` (call `{id}`): its result in request {n} carries {:?} through the profile's mapping, not the file's {:?}",
                result.outcome.content, text
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::mapped;

    #[test]
    fn a_mapped_read_of_a_seeded_file_must_return_it() {
        let messages = |output: &str| {
            let (capture, scenario) = mapped(&[output], Vec::new());
            let evidence = Evidence::of_scenario(&capture, &scenario);
            mapped_reads(&scenario, &evidence)
        };
        assert_eq!(messages("Process exited with code 0\nOutput:\nalpha\n"), Vec::<String>::new());
        assert_eq!(
            messages("Process exited with code 0\nOutput:\nbeta"),
            [
                "the scripted `read` of `a.txt` ran as `exec_command` (call `c1`): its result in request 2 carries \"beta\" through the profile's mapping, not the file's \"alpha\""
            ]
        );
        assert_eq!(
            messages("Process exited with code 101\nOutput:\nbubblewrap is unavailable"),
            [
                "the scripted `read` of `a.txt` ran as `exec_command` (call `c1`), and its result in request 2 reads as a failure through the profile's mapping: \"Process exited with code 101\\nOutput:\\nbubblewrap is unavailable\""
            ]
        );
    }
}
