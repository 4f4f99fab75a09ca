//! What a lifecycle run produced: the record stream, and the golden `results.jsonl`.
//!
//! Output lines from any implementation are read here, so the protocol's rules on records
//! (docs/adapters.md "Output") are checked in one place: a line that is not a JSON object,
//! lacks a field, or names a step out of order is a fault that quotes it.

use gauntlet_agent::canonical;
use serde_json::Value;

use super::LifecycleScenario;

/// The longest part of an offending line quoted in a fault.
const QUOTE_LIMIT: usize = 300;

/// The records of one run, and what went wrong producing them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LifecycleCapture {
    /// Every valid record, in output order.
    pub records: Vec<Value>,
    /// Protocol violations and process failures, with evidence.
    pub faults: Vec<String>,
    /// The end of the adapter's stderr (evidence only: not golden).
    pub stderr_tail: String,
    /// Processes the adapter started and left running after it was stopped, each's command
    /// line; the driver killed them (evidence only: not golden).
    pub leftovers: Vec<String>,
}

impl LifecycleCapture {
    /// Reads output lines against `scenario`: each must be a JSON object with an integer `step`
    /// naming one of the scenario's steps (never going back), an integer `at_ms`, and the
    /// family's discriminator ([`super::Family::discriminator`]).
    pub fn from_lines(scenario: &LifecycleScenario, lines: &[String]) -> LifecycleCapture {
        let mut capture = LifecycleCapture::default();
        let mut last_step = 0;
        for (idx, line) in lines.iter().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match check_record(scenario, line, last_step) {
                Ok(record) => {
                    last_step = record["step"].as_u64().unwrap_or(0);
                    capture.records.push(record);
                }
                Err(why) => capture.faults.push(format!("output line {}: {why}: {}", idx + 1, quote(line))),
            }
        }
        capture
    }

    /// The golden files: `results.jsonl`, one canonical record per line.
    pub fn golden_files(&self) -> Vec<(String, String)> {
        let text: String = self.records.iter().map(|record| canonical::to_string(record) + "\n").collect();
        vec![("results.jsonl".to_owned(), text)]
    }

    /// The records step `idx` produced.
    pub fn of_step(&self, idx: usize) -> Vec<&Value> {
        self.records.iter().filter(|record| record["step"].as_u64() == u64::try_from(idx).ok()).collect()
    }
}

fn check_record(scenario: &LifecycleScenario, line: &str, last_step: u64) -> Result<Value, String> {
    let record: Value = serde_json::from_str(line).map_err(|error| format!("not JSON ({error})"))?;
    let object = record.as_object().ok_or("not a JSON object")?;
    let step = object.get("step").and_then(Value::as_u64).ok_or("no integer `step`")?;
    if step >= scenario.steps.len() as u64 {
        return Err(format!("`step` {step} names no step (the scenario has {})", scenario.steps.len()));
    }
    if step < last_step {
        return Err(format!("`step` {step} comes after a record of step {last_step}"));
    }
    object.get("at_ms").and_then(Value::as_u64).ok_or("no integer `at_ms`")?;
    let discriminator = scenario.family().discriminator();
    object.get(discriminator).and_then(Value::as_str).ok_or_else(|| format!("no string `{discriminator}`"))?;
    Ok(record)
}

/// `line`, cut to [`QUOTE_LIMIT`] characters.
fn quote(line: &str) -> String {
    match line.char_indices().nth(QUOTE_LIMIT) {
        Some((cut, _)) => format!("{}... ({} bytes)", &line[..cut], line.len()),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn scenario() -> LifecycleScenario {
        let text = "title = \"t\"\nkind = \"monitor.readiness\"\n[[step]]\nat_ms = 0\n[[step]]\nat_ms = 5\n";
        super::super::parse(text, Path::new("x.toml")).unwrap()
    }

    #[test]
    fn every_bad_line_is_a_fault_that_quotes_it_and_good_lines_are_kept() {
        let lines: Vec<String> = [
            r#"{"step":0,"at_ms":0,"status":"ready"}"#,
            "Starting classifier v1",
            r#"{"step":1,"status":"ready"}"#,
            r#"{"step":7,"at_ms":5,"status":"ready"}"#,
            r#"{"step":1,"at_ms":5,"status":"stalled"}"#,
            r#"{"step":0,"at_ms":5,"status":"ready"}"#,
        ]
        .map(str::to_owned)
        .to_vec();
        let capture = LifecycleCapture::from_lines(&scenario(), &lines);
        assert_eq!(capture.records.len(), 2);
        assert_eq!(capture.faults.len(), 4, "{:#?}", capture.faults);
        assert!(capture.faults[0].starts_with("output line 2: not JSON"), "{}", capture.faults[0]);
        assert!(capture.faults[0].ends_with("Starting classifier v1"));
        assert!(capture.faults[1].contains("no integer `at_ms`"));
        assert!(capture.faults[2].contains("names no step"));
        assert!(capture.faults[3].contains("comes after a record of step 1"));
    }

    #[test]
    fn the_golden_is_one_canonical_record_per_line() {
        let lines = vec![r#"{"status":"ready","at_ms":0,"step":0}"#.to_owned()];
        let capture = LifecycleCapture::from_lines(&scenario(), &lines);
        assert_eq!(capture.golden_files()[0].1, "{\"at_ms\":0,\"status\":\"ready\",\"step\":0}\n");
    }
}
