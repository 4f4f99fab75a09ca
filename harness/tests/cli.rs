//! The `gauntlet` binary as a user runs it, for the everyday commands: `audit` over every
//! golden Log and over a hand-broken one.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

fn gauntlet(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gauntlet")).args(args).current_dir(dir).output().unwrap()
}

/// Every golden Log of the agent families (`golden/<family>/<name>/log.ndjson`).
fn golden_logs() -> Vec<PathBuf> {
    let mut logs = Vec::new();
    for family in std::fs::read_dir(root().join("golden")).unwrap() {
        for scenario in std::fs::read_dir(family.unwrap().path()).unwrap() {
            let log = scenario.unwrap().path().join("log.ndjson");
            if log.is_file() {
                logs.push(log);
            }
        }
    }
    logs.sort();
    logs
}

#[test]
fn audit_of_every_golden_log_agrees_with_its_outcome() {
    let logs = golden_logs();
    assert!(logs.len() > 30, "found only {} golden Logs", logs.len());
    let mut args = vec!["audit", "--json"];
    args.extend(logs.iter().map(|path| path.to_str().unwrap()));
    let output = gauntlet(&args, &root());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let reports: Vec<Value> = stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(reports.len(), logs.len());
    for (log, report) in logs.iter().zip(&reports) {
        let outcome: Value =
            serde_json::from_str(&std::fs::read_to_string(log.with_file_name("outcome.json")).unwrap()).unwrap();
        assert_eq!(report["audit"], outcome["audit"], "{}", log.display());
        assert_eq!(report["findings"], Value::Array(Vec::new()), "{}", log.display());
        let children = log.with_file_name("children");
        let n_children = std::fs::read_dir(&children).map_or(0, Iterator::count);
        let audited = report.get("children").and_then(Value::as_array).map_or(0, Vec::len);
        assert_eq!(audited, n_children, "{}: child Logs audited", log.display());
    }
}

#[test]
fn audit_names_the_rule_and_the_line_of_a_partial_answer_recorded_clean() {
    let dir = tempfile::tempdir().unwrap();
    let golden = std::fs::read_to_string(root().join("golden/turn/partial-then-error/log.ndjson")).unwrap();
    // The partial answer loses its `metadata`: a runtime that would replay it as final.
    let broken: String = golden
        .lines()
        .map(|line| {
            let mut event: Value = serde_json::from_str(line).unwrap();
            event["data"].as_object_mut().unwrap().remove("metadata");
            format!("{event}\n")
        })
        .collect();
    std::fs::write(dir.path().join("log.ndjson"), broken).unwrap();
    let output = gauntlet(&["audit", "log.ndjson"], dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("log.ndjson:2: TURN-FAILED-EVIDENCE (failure_evidence_complete): the assistant_message at seq 1 is recorded clean"),
        "{stdout}"
    );
}

#[test]
fn audit_of_what_is_not_a_log_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a log\n").unwrap();
    let output = gauntlet(&["audit", "notes.txt"], dir.path());
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not an NDJSON Log"));
}
