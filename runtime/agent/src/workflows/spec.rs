//! The `run_workflow` spec and its validation: an invalid spec is a tool error of kind
//! `invalid_args` with details, never a partial run (ADR 0014 "Invalid Workflow
//! specifications remain Tool errors"; pixir.md 8; WF-SPEC-INVALID).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::subagents::{DEFAULT_TIMEOUT_MS, ToolFailure};

/// The default whole-workflow time budget.
pub const DEFAULT_WORKFLOW_TIMEOUT_MS: u64 = 600_000;
/// The default number of steps in one wave.
pub const DEFAULT_MAX_CONCURRENCY: u64 = 6;

/// What a step may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Posture {
    /// Reads only (`read_set` defaults to everything, `write_set` is empty).
    ReadOnly,
    /// Writes (`write_set` defaults to everything).
    Writer,
}

impl Posture {
    /// The contract string.
    pub fn as_str(self) -> &'static str {
        match self {
            Posture::ReadOnly => "read_only",
            Posture::Writer => "writer",
        }
    }
}

/// One step: a task for one Subagent.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Unique within the workflow, `^[A-Za-z0-9][A-Za-z0-9_-]*$`.
    pub id: String,
    /// What the step's Subagent is asked to do.
    pub task: String,
    /// The Subagent role.
    pub agent: String,
    /// Steps that must be `checkpoint_ready` before this one starts.
    pub depends_on: Vec<String>,
    /// Read or write posture.
    pub posture: Posture,
    /// Paths it reads (`**/*` is everything).
    pub read_set: Vec<String>,
    /// Paths it writes.
    pub write_set: Vec<String>,
    /// The step's Subagent timeout.
    pub timeout_ms: u64,
}

/// A validated workflow.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The workflow id.
    pub id: String,
    /// A display name.
    pub name: String,
    /// At most this many steps per wave.
    pub max_concurrency: usize,
    /// The whole-workflow budget.
    pub timeout_ms: u64,
    /// The steps, in spec order.
    pub steps: Vec<Step>,
}

impl Spec {
    /// The step with id `id`.
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|step| step.id == id)
    }
}

fn invalid(message: impl Into<String>, details: Value) -> ToolFailure {
    let mut failure = ToolFailure::new("invalid_args", message);
    failure.details = details;
    failure
}

fn safe_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// [`crate::subagents::positive`], with the field and the value it refused as details.
fn positive(spec: &Value, key: &str, default: u64) -> Result<u64, ToolFailure> {
    crate::subagents::positive(spec, key, default)
        .map_err(|failure| ToolFailure { details: json!({"field": key, "value": spec.get(key)}), ..failure })
}

fn strings(step: &Value, key: &str, index: usize) -> Result<Option<Vec<String>>, ToolFailure> {
    match step.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => {
            items.iter().map(|item| item.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>().map(Some).ok_or_else(
                || {
                    invalid(
                        format!("`steps[{index}].{key}` must be an array of strings"),
                        json!({"step": index, "field": key}),
                    )
                },
            )
        }
        Some(_) => Err(invalid(
            format!("`steps[{index}].{key}` must be an array of strings"),
            json!({"step": index, "field": key}),
        )),
    }
}

/// Parses and validates a spec; `ordinal` numbers the default id `wf_<ordinal>`.
pub fn parse(spec: &Value, ordinal: usize) -> Result<Spec, ToolFailure> {
    if !spec.is_object() {
        return Err(invalid("the workflow spec must be an object", json!({})));
    }
    let id = spec.get("id").and_then(Value::as_str).map_or_else(|| format!("wf_{ordinal}"), str::to_owned);
    if !safe_id(&id) {
        return Err(invalid(format!("workflow id `{id}` is not safe"), json!({"field": "id"})));
    }
    let name = spec.get("name").and_then(Value::as_str).unwrap_or(&id).to_owned();
    let max_concurrency =
        usize::try_from(positive(spec, "max_concurrency", DEFAULT_MAX_CONCURRENCY)?).unwrap_or(usize::MAX);
    let timeout_ms = positive(spec, "timeout_ms", DEFAULT_WORKFLOW_TIMEOUT_MS)?;
    let raw_steps = match spec.get("steps") {
        Some(Value::Array(steps)) if !steps.is_empty() => steps,
        _ => return Err(invalid("`steps` must be a non-empty array", json!({"field": "steps"}))),
    };
    let steps =
        raw_steps.iter().enumerate().map(|(index, raw)| parse_step(raw, index)).collect::<Result<Vec<_>, _>>()?;
    check_dependencies(&steps)?;
    Ok(Spec { id, name, max_concurrency, timeout_ms, steps })
}

/// Parses and validates step `index` of a spec: its id, task, posture and sets.
fn parse_step(raw: &Value, index: usize) -> Result<Step, ToolFailure> {
    if !raw.is_object() {
        return Err(invalid(format!("`steps[{index}]` must be an object"), json!({"step": index})));
    }
    let id = raw.get("id").and_then(Value::as_str).map_or_else(|| format!("step_{}", index + 1), str::to_owned);
    if !safe_id(&id) {
        return Err(invalid(format!("step id `{id}` is not safe"), json!({"step": index, "field": "id"})));
    }
    let Some(task) = raw.get("task").and_then(Value::as_str).filter(|task| !task.trim().is_empty()) else {
        return Err(invalid(format!("step `{id}` needs a `task`"), json!({"step": id, "field": "task"})));
    };
    let agent = raw.get("agent").and_then(Value::as_str).unwrap_or("default").to_owned();
    let posture = match raw.get("posture").and_then(Value::as_str) {
        Some("read_only") => Posture::ReadOnly,
        Some("writer") => Posture::Writer,
        None if agent == "explorer" => Posture::ReadOnly,
        None => Posture::Writer,
        Some(other) => {
            return Err(invalid(
                format!("step `{id}` has posture `{other}`; expected read_only or writer"),
                json!({"step": id, "field": "posture"}),
            ));
        }
    };
    let read_set = strings(raw, "read_set", index)?;
    let write_set = strings(raw, "write_set", index)?;
    if posture == Posture::ReadOnly && write_set.as_ref().is_some_and(|set| !set.is_empty()) {
        return Err(invalid(
            format!("step `{id}` is read_only but has a write_set"),
            json!({"step": id, "field": "write_set"}),
        ));
    }
    let (read_set, write_set) = match posture {
        Posture::ReadOnly => (read_set.unwrap_or_else(|| vec!["**/*".to_owned()]), Vec::new()),
        Posture::Writer => (
            read_set.unwrap_or_default(),
            write_set.filter(|set| !set.is_empty()).unwrap_or_else(|| vec!["**/*".to_owned()]),
        ),
    };
    Ok(Step {
        id,
        task: task.to_owned(),
        agent,
        depends_on: strings(raw, "depends_on", index)?.unwrap_or_default(),
        posture,
        read_set,
        write_set,
        timeout_ms: positive(raw, "timeout_ms", DEFAULT_TIMEOUT_MS)?,
    })
}

/// Checks the steps' ids are unique and their dependencies name steps of the workflow
/// without a cycle.
fn check_dependencies(steps: &[Step]) -> Result<(), ToolFailure> {
    let mut seen = BTreeSet::new();
    let duplicates: BTreeSet<&str> = steps.iter().map(|step| step.id.as_str()).filter(|id| !seen.insert(*id)).collect();
    if !duplicates.is_empty() {
        return Err(invalid("step ids must be unique", json!({"duplicates": duplicates})));
    }
    let missing: Vec<Value> = steps
        .iter()
        .flat_map(|step| {
            step.depends_on
                .iter()
                .filter(|dep| !seen.contains(dep.as_str()))
                .map(|dep| json!({"step": step.id, "missing_dependency": dep}))
        })
        .collect();
    if !missing.is_empty() {
        return Err(invalid("a step depends on a step the workflow does not have", json!({"missing": missing})));
    }
    if let Some(cycle) = find_cycle(steps) {
        return Err(invalid(format!("the dependencies form a cycle: {}", cycle.join(" -> ")), json!({"cycle": cycle})));
    }
    Ok(())
}

/// A dependency cycle, as the ids along it (first repeated at the end), if any.
fn find_cycle(steps: &[Step]) -> Option<Vec<String>> {
    let deps: BTreeMap<&str, &[String]> =
        steps.iter().map(|step| (step.id.as_str(), step.depends_on.as_slice())).collect();
    // 0 unvisited, 1 on the path, 2 done.
    let mut state: BTreeMap<&str, u8> = BTreeMap::new();
    fn visit<'a>(
        id: &'a str,
        deps: &BTreeMap<&'a str, &'a [String]>,
        state: &mut BTreeMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match state.get(id) {
            Some(2) => return None,
            Some(1) => {
                let start = path.iter().position(|on| *on == id).unwrap_or(0);
                let mut cycle: Vec<String> = path[start..].iter().map(|id| (*id).to_owned()).collect();
                cycle.push(id.to_owned());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(id, 1);
        path.push(id);
        for dep in deps.get(id).copied().unwrap_or_default() {
            if let Some(cycle) = visit(dep, deps, state, path) {
                return Some(cycle);
            }
        }
        path.pop();
        state.insert(id, 2);
        None
    }
    steps.iter().find_map(|step| visit(&step.id, &deps, &mut state, &mut Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(spec: Value) -> ToolFailure {
        parse(&spec, 1).unwrap_err()
    }

    #[test]
    fn defaults_fill_ids_postures_and_sets() {
        let spec = parse(
            &json!({"steps": [{"task": "look", "agent": "explorer"}, {"task": "fix", "depends_on": ["step_1"]}]}),
            3,
        )
        .unwrap();
        assert_eq!(spec.id, "wf_3");
        assert_eq!(spec.steps[0].posture, Posture::ReadOnly);
        assert_eq!(spec.steps[0].read_set, ["**/*"]);
        assert_eq!(spec.steps[1].write_set, ["**/*"]);
        assert_eq!((spec.max_concurrency, spec.timeout_ms), (6, 600_000));
    }

    #[test]
    fn invalid_specs_are_invalid_args_with_details() {
        assert_eq!(error(json!({"steps": []})).message, "`steps` must be a non-empty array");
        let duplicate = error(json!({"steps": [{"id": "a", "task": "x"}, {"id": "a", "task": "y"}]}));
        assert_eq!((duplicate.kind, duplicate.details.clone()), ("invalid_args", json!({"duplicates": ["a"]})));
        let missing = error(json!({"steps": [{"id": "a", "task": "x", "depends_on": ["ghost"]}]}));
        assert_eq!(missing.details, json!({"missing": [{"step": "a", "missing_dependency": "ghost"}]}));
        let cycle = error(
            json!({"steps": [{"id": "a", "task": "x", "depends_on": ["b"]}, {"id": "b", "task": "y", "depends_on": ["a"]}]}),
        );
        assert_eq!(cycle.details, json!({"cycle": ["a", "b", "a"]}));
        assert_eq!(error(json!({"max_concurrency": 0, "steps": [{"task": "x"}]})).details["field"], "max_concurrency");
        assert_eq!(error(json!({"steps": [{"id": "../x", "task": "x"}]})).details["field"], "id");
    }
}
