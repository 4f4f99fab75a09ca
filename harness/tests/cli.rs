//! The everyday commands as a user runs them: `audit` over every golden Log and over a
//! hand-broken one, and `new --from-log` round-tripped over the corpus (a scenario written from
//! a golden Log, run, gives the same terminal states and the same Log modulo ids and times).

// Helpers of a test file: a panic here is a failing test, as in a `#[test]` body.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gauntlet_judge::scenario::AcpVersion;
use serde_json::Value;

#[path = "support/committed_reports.rs"]
mod committed_reports;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

fn gauntlet(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gauntlet")).args(args).current_dir(dir).output().unwrap()
}

/// `gauntlet merge PARTS --report-dir DIR`, which must succeed; the merged `file` it wrote.
fn merge(parts: &[PathBuf], dir: &Path, file: &str) -> Value {
    let mut args = vec!["merge"];
    args.extend(parts.iter().map(|part| part.to_str().unwrap()));
    args.extend(["--report-dir", dir.to_str().unwrap()]);
    let output = gauntlet(&args, &root());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap()
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
        stdout.contains("log.ndjson:2: TURN-PARTIAL-EVIDENCE (failure_evidence_complete): the assistant_message at seq 1 is recorded clean"),
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

/// What a Log says, modulo ids and times: each event without `id`, `ts` and clock readings.
fn timeless(log: &[String]) -> Vec<Value> {
    let capture = gauntlet_judge::capture::Capture { log: log.to_vec(), ..Default::default() };
    let mut events = capture.timeless_log();
    for event in &mut events {
        event.as_object_mut().unwrap().remove("id");
    }
    events
}

/// Why a scenario written from `name`'s golden Log does not reproduce it, if it does not.
fn round_trip(name: &str) -> Result<(), String> {
    use gauntlet::driver::Driver;
    let golden_log = root().join("golden").join(name).join("log.ndjson");
    let file = gauntlet_judge::log_file::read(&golden_log).map_err(|error| error.to_string())?;
    let text = gauntlet::authoring::from_log::scenario(&file, name).text;
    let path = Path::new("roundtrip.toml");
    let scenario = gauntlet_judge::scenario::parse(&text, path).map_err(|error| format!("{error}\n{text}"))?;
    // The written scenario splits the Log where the corpus scenario does: the same preload (its
    // complete lines; a torn tail leaves no trace), as many scripted turns, the same child routes.
    let original = gauntlet_judge::scenario::load(&root().join("scenarios").join(format!("{name}.toml"))).unwrap();
    let complete_lines = |ndjson: &str| ndjson.lines().filter(|line| line.ends_with('}')).count();
    let preloaded =
        |scenario: &gauntlet_judge::scenario::Scenario| scenario.log.as_ref().map(|log| complete_lines(&log.ndjson));
    // Children known by their prompt come back named by their Session ids, as a Log knows them.
    let by_prompt = original.children.values().any(|child| child.prompt.is_some());
    let shape = |scenario: &gauntlet_judge::scenario::Scenario| {
        let names: Vec<String> = if by_prompt {
            (1..=scenario.children.len()).map(|n| format!("child {n}")).collect()
        } else {
            scenario.children.keys().cloned().collect()
        };
        (preloaded(scenario), scenario.turns.len(), names)
    };
    // A reload whose fresh process writes recovery evidence (a running child found `detached`)
    // is where the reproduced process began: the turns before it are preloaded.
    let recovered = original.log.is_none()
        && scenario.log.is_some()
        && file.lines.iter().any(|line| line.contains(r#""event":"detached""#));
    let first_reload = original.turns.iter().position(|turn| turn.reload).filter(|_| recovered);
    let expected = match first_reload {
        Some(reload) => (preloaded(&scenario), original.turns.len() - reload, shape(&original).2),
        None => shape(&original),
    };
    if shape(&scenario) != expected {
        return Err(format!(
            "preload, turns and children {:?}, the corpus scenario {:?}\n{text}",
            shape(&scenario),
            expected
        ));
    }
    // A scenario v1 cannot express (a prompt's `idempotencyKey`) is played in v2.
    let scenario = scenario.in_acp(AcpVersion::V1).or_else(|_| scenario.in_acp(AcpVersion::V2))?;
    let capture = gauntlet::driver::reference::Reference::default().drive(&scenario);
    let verdict = gauntlet_judge::judge::judge(name, &scenario, &capture, Vec::new());
    if !verdict.findings.is_empty() {
        let findings: Vec<String> = verdict.findings.iter().map(ToString::to_string).collect();
        return Err(format!("the run of the written scenario has findings:\n{}\n{text}", findings.join("\n")));
    }
    let states = |audit: gauntlet_judge::audit::Audit| {
        audit.turns.into_iter().map(|turn| (turn.terminal_status, turn.error_kind)).collect::<Vec<_>>()
    };
    if states(capture.audit()) != states(gauntlet_judge::audit::audit(&file.lines)) {
        return Err(format!("the terminal states differ\n{text}"));
    }
    let (replayed, mut original) = (timeless(&capture.log), timeless(&file.lines));
    // A prompt's images are in the Log as descriptors only (LOG-NO-RESOURCE-BYTES): the written
    // scenario cannot send them, and says so in a note; the rest must match.
    for event in &mut original {
        if let Some(data) = event.get_mut("data").and_then(Value::as_object_mut)
            && data.remove("resources").is_some()
            && !text.contains("images = [{ mime_type, data }]")
        {
            return Err(format!("a prompt's images were dropped without a note\n{text}"));
        }
    }
    if replayed != original {
        let diff: Vec<String> = replayed
            .iter()
            .zip(&original)
            .filter(|(a, b)| a != b)
            .map(|(a, b)| format!("- {b}\n+ {a}"))
            .take(3)
            .collect();
        return Err(format!(
            "the Logs differ ({} events written, {} in the golden):\n{}\n{text}",
            replayed.len(),
            original.len(),
            diff.join("\n")
        ));
    }
    // A child the earlier process ran and the fresh one found detached has only that process's
    // Log, which a scenario cannot preload.
    let earlier = |id: &str| {
        recovered
            && file.lines.iter().any(|line| {
                line.contains(&format!(r#""subagent_id":"{id}""#)) && line.contains(r#""event":"detached""#)
            })
    };
    let children: Vec<_> = file.children.iter().filter(|(id, _)| !earlier(id)).collect();
    for &(id, child) in &children {
        let replayed = capture.children.get(id).map(|log| timeless(log)).unwrap_or_default();
        if replayed != timeless(&child.lines) {
            return Err(format!("the Logs of child `{id}` differ\n{text}"));
        }
    }
    let written = capture.children.keys().filter(|id| !earlier(id)).count();
    if written != children.len() {
        return Err(format!("{written} child Logs written, {} in the golden\n{text}", children.len()));
    }
    Ok(())
}

#[test]
fn new_from_log_round_trips_every_agent_scenario() {
    let mut names: Vec<String> = Vec::new();
    for family in ["turn", "acp", "subagent", "workflow"] {
        for entry in std::fs::read_dir(root().join("scenarios").join(family)).unwrap() {
            names.push(format!("{family}/{}", entry.unwrap().path().file_stem().unwrap().to_string_lossy()));
        }
    }
    names.sort();
    assert!(names.len() > 30, "found only {} scenarios", names.len());
    let problems: Vec<String> =
        names.iter().filter_map(|name| round_trip(name).err().map(|why| format!("{name}: {why}"))).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn new_from_log_notes_a_child_that_ran_without_its_log_and_scripts_it_with_its_log() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("scenarios")).unwrap();
    std::fs::write(dir.path().join(gauntlet::run::CORPUS_MARKER), "").unwrap();
    let golden = root().join("golden/subagent/completion");
    std::fs::copy(golden.join("log.ndjson"), dir.path().join("log.ndjson")).unwrap();
    let output = gauntlet(&["new", "regression/lost-child", "--from-log", "log.ndjson"], dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("note: child Session `sub_1` ran, but its Log (children/sub_1.ndjson"), "{stdout}");
    let text = std::fs::read_to_string(dir.path().join("scenarios/regression/lost-child.toml")).unwrap();
    assert!(text.contains("[children.sub_1]\n# Note: child Session `sub_1` ran"), "{text}");

    std::fs::create_dir(dir.path().join("children")).unwrap();
    std::fs::copy(golden.join("children/sub_1.ndjson"), dir.path().join("children/sub_1.ndjson")).unwrap();
    let output = gauntlet(&["new", "regression/found-child", "--from-log", "log.ndjson"], dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success() && !stdout.contains("note:"), "{stdout}");
    let text = std::fs::read_to_string(dir.path().join("scenarios/regression/found-child.toml")).unwrap();
    assert!(
        text.contains(
            "[children.sub_1]\nexpect = \"completed\"\nrespond = [{ text = [\"test_login fails on a stale token.\"] }]"
        ),
        "{text}"
    );
}

#[test]
fn run_prints_a_line_per_scenario_then_the_summary_or_json_objects() {
    let output = gauntlet(&["run", "turn/partial-then-error", "turn/clean-completion"], &root());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    // Each Turn scenario in its own dialect, then in the three others, then over ACP v2.
    assert!(lines[0].starts_with("turn/clean-completion ") && lines[0].contains(" identical "), "{stdout}");
    assert!(lines[3].starts_with("turn/clean-completion [gemini] "), "{stdout}");
    assert!(lines[4].starts_with("turn/clean-completion [acp v2] "), "{stdout}");
    assert!(lines[5].starts_with("turn/partial-then-error ") && lines[5].ends_with("partial_failed, completed"));
    assert!(lines[11].starts_with("10 scenarios: 10 identical, 0 conformant"), "{stdout}");
    assert!(!stdout.contains('\r'), "no in-place progress when stdout is not a terminal");

    let output =
        gauntlet(&["run", "--format", "json", "turn/partial-then-error", "monitor/readiness-unknown"], &root());
    let objects: Vec<Value> =
        String::from_utf8_lossy(&output.stdout).lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let scenarios: Vec<&str> = objects.iter().filter_map(|object| object["scenario"].as_str()).collect();
    assert_eq!(
        scenarios,
        [
            "monitor/readiness-unknown-input-mode-never-stalls",
            "monitor/readiness-unknown-to-stalled",
            "turn/partial-then-error",
            "turn/partial-then-error [chat_completions]",
            "turn/partial-then-error [anthropic_messages]",
            "turn/partial-then-error [gemini]",
            "turn/partial-then-error [acp v2]",
        ]
    );
    assert_eq!(objects[0]["kind"], "identical");
    let summary = &objects.last().unwrap()["summary"];
    assert_eq!((summary["total"].as_u64(), summary["identical"].as_u64()), (Some(7), Some(7)));
}

/// Copies `from` into `to`, recursively.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The `$ command` lines of a Markdown file's `console` blocks, each with the output shown
/// under it and its exit status (`? N`, else 0).
fn console_commands(markdown: &str) -> Vec<(String, Vec<String>, i32)> {
    let mut commands: Vec<(String, Vec<String>, i32)> = Vec::new();
    let mut in_console = false;
    for line in markdown.lines() {
        if line.starts_with("```") {
            in_console = line == "```console";
        } else if !in_console {
        } else if let Some(command) = line.strip_prefix("$ ") {
            commands.push((command.to_owned(), Vec::new(), 0));
        } else if let Some(status) = line.strip_prefix("? ") {
            commands.last_mut().unwrap().2 = status.parse().unwrap();
        } else {
            commands.last_mut().unwrap().1.push(line.to_owned());
        }
    }
    commands
}

/// Whether `actual` output fits `expected`: lines equal but for `[..]` (any text), and a `...`
/// line standing for any number of lines.
fn fits(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => (0..=actual.len()).any(|skip| fits(rest, &actual[skip..])),
        Some((first, rest)) => actual.split_first().is_some_and(|(line, others)| {
            let parts: Vec<&str> = first.split("[..]").collect();
            let mut at = 0;
            let matched = parts.iter().enumerate().all(|(idx, part)| {
                let found = if idx == 0 { line.starts_with(part).then_some(0) } else { line[at..].find(part) };
                found.is_some_and(|offset| {
                    at += offset + part.len();
                    true
                })
            });
            matched
                && (parts.len() == 1 && line.len() == at || parts.len() > 1 && line.ends_with(parts[parts.len() - 1]))
                && fits(rest, others)
        }),
    }
}

#[test]
fn tutorial_commands_run_as_written() {
    run_tutorial(&root());
}

/// The scenario the tutorial adds: the name its `gauntlet new` command gives.
fn tutorial_scenario(tutorial: &str) -> String {
    let new = console_commands(tutorial).into_iter().find_map(|(command, _, _)| {
        command.strip_prefix("gauntlet new ").and_then(|rest| rest.split_whitespace().next()).map(str::to_owned)
    });
    new.unwrap()
}

/// Runs every command of `source`'s docs/reproduce-a-bug.md, as written, in a copy of its
/// corpus and docs, and compares the output; returns the copy. The copy is the corpus the
/// tutorial's reader starts from, without the scenario the tutorial adds, even where `source`
/// has it committed: else `new` would refuse to write over it and `--bless` find nothing to
/// write, and committing the example would break this test.
fn run_tutorial(source: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for folder in ["scenarios", "golden", "docs"] {
        copy_tree(&source.join(folder), &dir.path().join(folder));
    }
    let tutorial = std::fs::read_to_string(source.join("docs/reproduce-a-bug.md")).unwrap();
    let example = tutorial_scenario(&tutorial);
    let _ = std::fs::remove_file(dir.path().join(format!("scenarios/{example}.toml")));
    let _ = std::fs::remove_dir_all(dir.path().join("golden").join(&example));
    let path = path_with_binaries();
    let commands = console_commands(&tutorial);
    assert!(commands.len() >= 9, "{commands:?}");
    for (command, expected, status) in commands {
        let output = Command::new("sh")
            .args(["-c", &command])
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("GAUNTLET_ROOT", dir.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let actual: Vec<&str> = stdout.lines().collect();
        assert!(
            fits(&expected, &actual) && output.status.code() == Some(status),
            "`{command}` exited {:?} (the tutorial says {status}) and printed:\n{stdout}{}\nthe tutorial shows:\n{}",
            output.status.code(),
            String::from_utf8_lossy(&output.stderr),
            expected.join("\n")
        );
    }
    dir
}

/// A scenario added offline keeps the corpus checks green (issue 40): the tutorial's example,
/// written from a Log, blessed and accepted in a copy of the repository, leaves no pending
/// golden, and the committed reports, which no agent run made with it, hold: every agent's
/// report has it as not checked yet, no adapter's does. Then the tutorial runs as written again
/// from that copy, where its example is as good as committed.
#[test]
fn a_new_scenario_keeps_the_corpus_checks_green_offline() {
    let added = run_tutorial(&root());
    let example = tutorial_scenario(&std::fs::read_to_string(root().join("docs/reproduce-a-bug.md")).unwrap());
    assert!(added.path().join(format!("scenarios/{example}.toml")).is_file());
    assert_eq!(gauntlet::golden::pending(&added.path().join("golden")), Vec::<PathBuf>::new());
    let reports = committed_reports::not_checked_yet(added.path()).unwrap();
    assert!(reports.len() > 3, "{reports:?}");
    for (report, names) in &reports {
        let listed = gauntlet::report::markdown::scenarios_listed(&std::fs::read_to_string(report).unwrap());
        let agent = gauntlet::report::coverage::family_of(&listed).is_none();
        assert_eq!(names.contains(&example), agent, "{}: {names:?}", report.display());
    }
    run_tutorial(added.path());
}

#[test]
fn transcript_lines_fit_with_wildcards() {
    let expected = |lines: &[&str]| lines.iter().map(|line| (*line).to_owned()).collect::<Vec<_>>();
    assert!(fits(&expected(&["a [..] ms  b", "...", "z"]), &["a 12 ms  b", "x", "y", "z"]));
    assert!(!fits(&expected(&["a [..] ms"]), &["a 12 ms extra"]));
    assert!(!fits(&expected(&["exact"]), &["exact but longer"]));
    assert!(fits(&expected(&["..."]), &[]));
}

/// Validates TOML files against JSON Schemas with Python's `jsonschema` (Draft 2020-12): argv
/// is `schema file...` pairs; prints one line per invalid file.
const VALIDATE_PY: &str = r#"
import json, sys, tomllib
from jsonschema import Draft202012Validator
args = sys.argv[1:]
for schema_path, toml_path in zip(args[0::2], args[1::2]):
    with open(schema_path) as schema_file:
        validator = Draft202012Validator(json.load(schema_file))
    with open(toml_path, "rb") as toml_file:
        document = tomllib.load(toml_file)
    for error in validator.iter_errors(document):
        print(f"{toml_path}: {'/'.join(map(str, error.absolute_path))}: {error.message}")
"#;

#[test]
fn schemas_are_generated_and_every_file_validates() {
    let dir = root().join("docs/schema");
    let bless =
        std::env::var_os("GAUNTLET_BLESS").is_some_and(|value| value == "1") && std::env::var_os("CI").is_none();
    let mut stale = Vec::new();
    for (name, text) in gauntlet::schema::all() {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            if bless {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &text).unwrap();
            }
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "docs/schema/{stale:?} differ from the Rust types{}; regenerate with `GAUNTLET_BLESS=1 cargo test -p gauntlet --test cli schemas` and review the diff",
        if bless { " (rewritten now)" } else { "" }
    );
    // Every scenario (Turn, and each lifecycle family's), profile and expectations file, with
    // the schema of its type.
    let mut pairs: Vec<(String, PathBuf)> = Vec::new();
    let mut lifecycle = 0;
    for (name, path) in gauntlet::run::scenario_names(&gauntlet::run::Plan::repository()) {
        let text = std::fs::read_to_string(&path).unwrap();
        match gauntlet_judge::lifecycle::kind_of(&text, &path).unwrap() {
            None => {
                gauntlet_judge::scenario::parse(&text, &path).unwrap_or_else(|error| panic!("{name}: {error}"));
                pairs.push(("scenario.schema.json".to_owned(), path));
            }
            Some(kind) => {
                gauntlet_judge::lifecycle::parse(&text, &path).unwrap_or_else(|error| panic!("{name}: {error}"));
                let family = kind.family().as_str();
                assert!(
                    name.starts_with(&format!("{family}/")),
                    "{name}: a {family} scenario outside scenarios/{family}"
                );
                pairs.push((format!("{family}.schema.json"), path));
                lifecycle += 1;
            }
        }
    }
    assert!(lifecycle > 50, "only {lifecycle} lifecycle scenarios found");
    let mut files = Vec::new();
    gauntlet::golden::walk(&root().join("harness/implementations"), &mut |path| {
        if path.extension().is_some_and(|ext| ext == "toml") {
            files.push(path.to_owned());
        }
    });
    for path in files {
        let schema = if path.to_string_lossy().ends_with(".expected.toml") {
            gauntlet::known_failures::load(&path).unwrap();
            "expected.schema.json"
        } else {
            gauntlet::profile::load(&path).unwrap();
            "profile.schema.json"
        };
        pairs.push((schema.to_owned(), path));
    }
    assert!(pairs.len() > 40, "{pairs:?}");
    let mut args = vec!["-c".to_owned(), VALIDATE_PY.to_owned()];
    for (schema, path) in &pairs {
        args.push(dir.join(schema).to_string_lossy().into_owned());
        args.push(path.to_string_lossy().into_owned());
    }
    let output = Command::new("python3").args(&args).output().expect("python3 runs the validator");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.is_empty(),
        "schema validation failed (python3 needs the `jsonschema` package):\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // And the lifecycle schemas refuse what the loader refuses: a misspelt key, another family's kind.
    let scratch = tempfile::tempdir().unwrap();
    let broken = scratch.path().join("broken.toml");
    std::fs::write(&broken, "title = \"t\"\nkind = \"bridge.steer\"\n[config]\nstabilty_ms = 1\n[[step]]\nat_ms = 0\n")
        .unwrap();
    let schema = dir.join("monitor.schema.json");
    let output = Command::new("python3")
        .args(["-c", VALIDATE_PY, schema.to_str().unwrap(), broken.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("config: Additional properties are not allowed ('stabilty_ms'"), "{stdout}");
    assert!(stdout.contains("kind: 'bridge.steer' is not valid"), "{stdout}");
}

/// From an empty folder outside any corpus, with no `--root`, `gauntlet` plays the corpus the
/// binary carries (unpacked into the cache once), and `export` writes it out where a later run
/// finds it as its own (issue 33).
#[test]
fn an_installed_gauntlet_plays_the_corpus_it_carries_from_any_folder() {
    let outside = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let run = |args: &[&str], dir: &Path| {
        Command::new(env!("CARGO_BIN_EXE_gauntlet"))
            .args(args)
            .current_dir(dir)
            .env("XDG_CACHE_HOME", cache.path())
            .env_remove("GAUNTLET_ROOT")
            .output()
            .unwrap()
    };
    let listed = run(&["list"], outside.path());
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    let names = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(names.lines().any(|name| name == "turn/partial-then-error"), "{names}");
    let played = run(&["run", "turn/clean-completion"], outside.path());
    let text = String::from_utf8_lossy(&played.stdout).into_owned();
    assert!(played.status.success(), "{text}\n{}", String::from_utf8_lossy(&played.stderr));
    assert!(text.contains("identical"), "{text}");
    // The reference agent, through its profile, checked from there: no docs/ of the corpus is
    // needed (the registry is compiled in).
    let profile = root().join("harness/implementations/gauntlet-agent.toml");
    let reports = outside.path().join("reports");
    let checked = run(
        &[
            "check",
            "--impl",
            profile.to_str().unwrap(),
            "--report-dir",
            reports.to_str().unwrap(),
            "turn/clean-completion",
            "turn/partial-then-error",
        ],
        outside.path(),
    );
    let text = String::from_utf8_lossy(&checked.stdout).into_owned();
    assert!(checked.status.success(), "{text}\n{}", String::from_utf8_lossy(&checked.stderr));
    assert!(reports.join("report.json").is_file());
    let blessed = run(&["run", "--bless", "turn/clean-completion"], outside.path());
    assert_eq!(blessed.status.code(), Some(2), "blessing needs a corpus of one's own");
    let exported = outside.path().join("corpus");
    assert!(run(&["export", exported.to_str().unwrap()], outside.path()).status.success());
    assert_eq!(
        std::fs::read(exported.join("scenarios/turn/clean-completion.toml")).unwrap(),
        std::fs::read(root().join("scenarios/turn/clean-completion.toml")).unwrap()
    );
    // The export carries gauntlet's marker, so a command run inside it finds it; a `scenarios/`
    // folder of an agent's own, without the marker, is not taken for a corpus.
    assert!(exported.join(gauntlet::run::CORPUS_MARKER).is_file());
    let found = run(&["new", "regression/mine"], &exported.join("scenarios/turn"));
    assert!(found.status.success(), "{}", String::from_utf8_lossy(&found.stderr));
    assert!(exported.join("scenarios/regression/mine.toml").is_file());
    let agent = outside.path().join("agent");
    std::fs::create_dir_all(agent.join("scenarios/turn")).unwrap();
    std::fs::write(agent.join("scenarios/turn/own-test.toml"), "not a gauntlet scenario").unwrap();
    let listed = run(&["list"], &agent);
    let names = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(listed.status.success() && !names.contains("own-test") && names.contains("turn/partial-then-error"));
    let written = run(&["new", "regression/mine"], &agent);
    assert_eq!(written.status.code(), Some(2), "never into the corpus the binary carries");
    assert!(String::from_utf8_lossy(&written.stderr).contains("no gauntlet corpus"), "{written:?}");
    let again = run(&["export", exported.to_str().unwrap()], outside.path());
    assert_eq!(again.status.code(), Some(2), "export never writes over a corpus");
}

/// `gauntlet check` of the reference agent through its profile, reports into `dir`, with
/// `args` (flags, then filters): its output, and the `report.json` it wrote.
fn check_reference(dir: &Path, args: &[&str]) -> (Output, Value) {
    let profile = root().join("harness/implementations/gauntlet-agent.toml");
    let mut all = vec!["check", "--impl", profile.to_str().unwrap(), "--report-dir", dir.to_str().unwrap()];
    all.extend(args);
    let output = gauntlet(&all, &root());
    let report = std::fs::read_to_string(dir.join("report.json")).unwrap_or_default();
    (output, serde_json::from_str(&report).unwrap_or_default())
}

/// A check split in two shards (`--shard 1/2`, `--shard 2/2`), merged, is the unsharded run:
/// the same verdicts and findings, the same comparison, the same requirement matrix (issue 33).
/// Reports that are not every shard of one run, each once, are refused (issue 40).
#[test]
fn shards_of_a_check_merge_into_the_unsharded_run() {
    let work = tempfile::tempdir().unwrap();
    let filters = [
        "turn/clean-completion",
        "turn/partial-then-error",
        "turn/two-turn-conversation",
        "acp/cancel-mid-stream",
        "turn/http-500-then-retry",
    ];
    let check = |dir: &str, args: &[&str]| -> Value {
        let (output, report) = check_reference(&work.path().join(dir), &[args, &filters[..]].concat());
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stdout));
        report
    };
    let whole = check("whole", &[]);
    let first = check("first", &["--shard", "1/2"]);
    let second = check("second", &["--shard", "2/2"]);
    let n = |report: &Value| report["scenarios"].as_array().unwrap().len();
    assert_eq!((n(&first) + n(&second), n(&first) > 0, n(&second) > 0), (n(&whole), true, true));
    let merged_dir = work.path().join("merged");
    let parts = [work.path().join("first/report.json"), work.path().join("second/report.json")];
    let merged = merge(&parts, &merged_dir, "report.json");
    // What a verdict says, without its timings.
    let verdicts = |report: &Value| -> Vec<Value> {
        report["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .map(|checked| {
                let verdict = &checked["verdict"];
                serde_json::json!([
                    verdict["scenario"],
                    verdict["kind"],
                    verdict["findings"],
                    verdict["terminal_states"]
                ])
            })
            .collect()
    };
    assert_eq!(verdicts(&merged), verdicts(&whole));
    assert_eq!(merged["comparison"], whole["comparison"]);
    assert_eq!(merged["requirements"], whole["requirements"]);
    assert_eq!(merged["warnings"], whole["warnings"]);
    // Both are what docs/schema/report.schema.json says a report.json is.
    let validate = "import json, sys\nfrom jsonschema import Draft202012Validator\n\
        validator = Draft202012Validator(json.load(open(sys.argv[1])))\n\
        for path in sys.argv[2:]:\n    for error in validator.iter_errors(json.load(open(path))):\n        \
        print(path, '/'.join(map(str, error.absolute_path)), error.message)\n";
    let schema = root().join("docs/schema/report.schema.json");
    let whole_path = work.path().join("whole/report.json");
    let merged_path = merged_dir.join("report.json");
    let output = Command::new("python3")
        .args(["-c", validate, schema.to_str().unwrap(), whole_path.to_str().unwrap(), merged_path.to_str().unwrap()])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success() && said.is_empty(), "{said}{}", String::from_utf8_lossy(&output.stderr));
    // The merged run is whole, and of the shards' corpus, profile and version.
    assert_eq!((first["shard"].as_str(), &merged["shard"]), (Some("1/2"), &Value::Null));
    for key in ["corpus_sha256", "profile_sha256", "version"] {
        assert_eq!(merged[key], whole[key], "{key}");
    }
    // Another corpus (other filters), other expectations: shard 2 played again.
    check_reference(&work.path().join("fewer"), &["--shard", "2/2", "turn/clean-completion"]);
    let expectations = work.path().join("flaky.expected.toml");
    std::fs::write(&expectations, "[[failure]]\nscenario = \"turn/clean-completion\"\nreason = \"r\"\nflaky = true\n")
        .unwrap();
    check("expecting", &["--shard", "2/2", "--expectations", expectations.to_str().unwrap()]);
    let refused = |dirs: &[&str]| -> String {
        let reports: Vec<String> =
            dirs.iter().map(|dir| work.path().join(dir).join("report.json").display().to_string()).collect();
        let mut args = vec!["merge", "--report-dir", work.path().to_str().unwrap()];
        args.extend(reports.iter().map(String::as_str));
        let output = gauntlet(&args, &root());
        assert_eq!(output.status.code(), Some(2), "{dirs:?}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    assert_eq!(refused(&["first"]), "gauntlet: shard 2 of 2 is missing\n");
    assert_eq!(refused(&["first", "second", "first"]), "gauntlet: shard 1/2 is given twice\n");
    assert!(refused(&["whole", "second"]).contains("a whole run (no --shard) is among the reports"));
    assert!(refused(&["first", "fewer"]).contains("shard 1/2 and shard 2/2 played different corpora"));
    assert!(refused(&["first", "expecting"]).contains("were played with different profiles or expectations"));
}

/// Nothing checked proves nothing: filters that match none of an agent's scenarios exit 2 and
/// say why, as `run`'s do. An expectation naming no scenario of the corpus is stale (exit 1), in
/// a shard that played none of its scenarios too, and once in the merged run (issue 40).
#[test]
fn nothing_checked_fails_and_an_expectation_of_no_scenario_is_stale() {
    let work = tempfile::tempdir().unwrap();
    for filter in ["no-such-scenario", "monitor/readiness-unknown"] {
        let (output, _) = check_reference(&work.path().join("none"), &[filter]);
        let said = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{said}");
        assert!(said.starts_with("gauntlet: no Turn scenario under "), "{said}");
        assert!(said.ends_with(&format!("matches [\"{filter}\"]: nothing to check\n")), "{said}");
    }
    let output = gauntlet(&["run", "no-such-scenario"], &root());
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no scenario under"));

    let expectations = work.path().join("gone.expected.toml");
    std::fs::write(&expectations, "[[failure]]\nscenario = \"turn/renamed-long-ago\"\nreason = \"r\"\n").unwrap();
    let check = |dir: &str, shard: &[&str]| -> Value {
        let mut args = vec!["--expectations", expectations.to_str().unwrap()];
        args.extend(shard);
        args.extend(["turn/clean-completion", "turn/partial-then-error"]);
        let (output, report) = check_reference(&work.path().join(dir), &args);
        let said = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(1), "{said}");
        let line = "stale expectation: turn/renamed-long-ago (any) names no scenario of the corpus (removed, renamed or misspelt); remove it from";
        assert!(said.contains(line), "{said}");
        report
    };
    let whole = check("whole", &[]);
    let stale = serde_json::json!([{"scenario": "turn/renamed-long-ago", "reason": "r", "why": "not_in_corpus"}]);
    assert_eq!(whole["comparison"]["stale"], stale);
    let (first, second) = (check("first", &["--shard", "1/2"]), check("second", &["--shard", "2/2"]));
    assert_eq!((&first["comparison"]["stale"], &second["comparison"]["stale"]), (&stale, &stale));
    let parts = [work.path().join("first/report.json"), work.path().join("second/report.json")];
    let merged_dir = work.path().join("merged");
    let mut args = vec!["merge", "--report-dir", merged_dir.to_str().unwrap()];
    args.extend(parts.iter().map(|part| part.to_str().unwrap()));
    assert_eq!(gauntlet(&args, &root()).status.code(), Some(1));
    let merged: Value =
        serde_json::from_str(&std::fs::read_to_string(merged_dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(merged["comparison"], whole["comparison"]);
}

/// `gauntlet init` drafts a profile from what the agent declares; filled in, `check --probe`
/// finds it conformant, and with the wrong wire it names the wire the agent called (issue 33).
#[test]
fn init_drafts_a_profile_that_filled_in_checks_the_agent() {
    let work = tempfile::tempdir().unwrap();
    let draft = work.path().join("agent.toml");
    let agent = Path::new(env!("CARGO_BIN_EXE_gauntlet-agent"));
    let output = gauntlet(&["init", "--out", draft.to_str().unwrap(), "--", agent.to_str().unwrap()], &root());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = std::fs::read_to_string(&draft).unwrap();
    assert!(text.contains("capabilities = [\"cancel\", \"load\", \"resume\", \"close\", \"list\"]"), "{text}");
    // What its user knows: how it takes the Provider's address and the model.
    let filled = text
        .replace(
            "args = []",
            "args = [\"--provider-url={provider_url}\", \"--model={model}\", \"--max-retries={max_retries}\", \"--stream-idle-timeout-ms={stream_idle_timeout_ms}\", \"--turn-timeout-ms={turn_timeout_ms}\", \"--deterministic-ids\"]",
        )
        .replace("network = \"loopback\"", "network = \"host\"");
    std::fs::write(&draft, &filled).unwrap();
    let probe = gauntlet(&["check", "--impl", draft.to_str().unwrap(), "--probe"], &root());
    let said = String::from_utf8_lossy(&probe.stdout).into_owned();
    assert!(probe.status.success(), "{said}\n{}", String::from_utf8_lossy(&probe.stderr));
    assert!(said.contains("request(s) the script answered"), "{said}");
    std::fs::write(&draft, filled.replace("dialect = \"responses\"", "dialect = \"gemini\"")).unwrap();
    let wrong = gauntlet(&["check", "--impl", draft.to_str().unwrap(), "--probe"], &root());
    let said = String::from_utf8_lossy(&wrong.stdout).into_owned();
    assert_eq!(wrong.status.code(), Some(1), "{said}");
    assert!(said.contains("OpenAI Responses"), "the probe names the wire the agent called: {said}");
}

/// A campaign with a seed split in two shards, merged, is the unsharded campaign: the same
/// scenarios played, and the same tally per requirement (issue 33).
#[test]
fn shards_of_a_campaign_merge_into_the_unsharded_campaign() {
    let work = tempfile::tempdir().unwrap();
    let campaign = |shard: Option<&str>| -> Value {
        let dir = work.path().join(shard.unwrap_or("whole").replace('/', "-"));
        let mut args = vec!["run", "--generate", "12", "--seed", "7", "--reproductions", "-"];
        args.extend(["--report-dir", dir.to_str().unwrap()]);
        if let Some(shard) = shard {
            args.extend(["--shard", shard]);
        }
        let output = gauntlet(&args, &root());
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stdout));
        serde_json::from_str(&std::fs::read_to_string(dir.join("campaign.json")).unwrap()).unwrap()
    };
    let whole = campaign(None);
    let (first, second) = (campaign(Some("1/2")), campaign(Some("2/2")));
    assert_eq!(first["count"].as_u64().unwrap() + second["count"].as_u64().unwrap(), 12);
    let merged_dir = work.path().join("merged");
    let parts = [work.path().join("1-2/campaign.json"), work.path().join("2-2/campaign.json")];
    let merged = merge(&parts, &merged_dir, "campaign.json");
    for key in ["count", "failed", "errors", "requirements", "seed", "implementation", "corpus_sha256", "shard"] {
        assert_eq!(merged[key], whole[key], "{key}");
    }
    // One shard alone is not the campaign (issue 40).
    let lone = [parts[0].to_str().unwrap()];
    let output = gauntlet(&[&["merge", "--report-dir", merged_dir.to_str().unwrap()], &lone[..]].concat(), &root());
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&output.stderr), "gauntlet: shard 2 of 2 is missing\n");
}

/// The job-matrix workflow docs/ci.md shows runs as written, each step through the shell: each
/// matrix entry's `gauntlet check --shard` step, its report uploaded as `gauntlet-<shard>`, then
/// the `gauntlet merge` step over the downloaded artifacts (the agent is gauntlet-agent, on a
/// corpus of two scenarios, so two of the four shards play nothing and pass). A shard whose
/// check cannot run fails its step, and a merge without its report fails naming it (issue 40).
#[test]
fn the_ci_workflow_in_the_docs_runs_as_written() {
    let docs = std::fs::read_to_string(root().join("docs/ci.md")).unwrap();
    let workflow = docs.split("```yaml\n").nth(1).and_then(|rest| rest.split("\n```").next()).unwrap();
    let shards: Vec<String> = workflow
        .lines()
        .find_map(|line| line.trim().strip_prefix("shard: ["))
        .map(|list| list.trim_end_matches(']').split(',').map(|n| n.trim().to_owned()).collect())
        .unwrap();
    let step = |command: &str| -> String {
        let line = workflow
            .lines()
            .find_map(|line| line.trim().strip_prefix("- run: ").filter(|run| run.starts_with(command)));
        line.unwrap().to_owned()
    };
    let work = tempfile::tempdir().unwrap();
    let corpus = work.path().join("corpus");
    corpus_of(&corpus, &["turn/clean-completion", "turn/partial-then-error"]);
    let shell = |script: &str, dir: &Path| {
        std::fs::create_dir_all(dir).unwrap();
        let mut command = Command::new("sh");
        command.args(["-c", script]).current_dir(dir).env("PATH", path_with_binaries());
        command.env("GAUNTLET_ROOT", &corpus).output().unwrap()
    };
    let profile = root().join("harness/implementations/gauntlet-agent.toml");
    let check = step("gauntlet check").replace("gauntlet/my-agent.toml", profile.to_str().unwrap());
    for shard in &shards {
        let job = work.path().join(format!("job-{shard}"));
        let output = shell(&check.replace("${{ matrix.shard }}", shard), &job);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        // upload-artifact `gauntlet-<shard>`, then download-artifact into `shards/`.
        let artifact = work.path().join(format!("merge/shards/gauntlet-{shard}"));
        std::fs::create_dir_all(&artifact).unwrap();
        std::fs::copy(job.join("report/report.json"), artifact.join("report.json")).unwrap();
    }
    let merge = step("gauntlet merge");
    let output = shell(&merge, &work.path().join("merge"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let merged: Value =
        serde_json::from_str(&std::fs::read_to_string(work.path().join("merge/report/report.json")).unwrap()).unwrap();
    assert_eq!(merged["scenarios"].as_array().unwrap().len(), 2);
    // A shard whose check cannot run (here: its profile is not there) fails its job, and the
    // merge of the others names the shard missing.
    let broken =
        check.replace(profile.to_str().unwrap(), "gauntlet/no-such-agent.toml").replace("${{ matrix.shard }}", "3");
    let output = shell(&broken, &work.path().join("job-broken"));
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    std::fs::remove_dir_all(work.path().join("merge/shards/gauntlet-3")).unwrap();
    let output = shell(&merge, &work.path().join("merge"));
    assert_eq!(output.status.code(), Some(2));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains(&format!("shard 3 of {} is missing", shards.len())), "{said}");
}

/// A corpus of the repository's scenarios `names` and their goldens, in `dir`.
fn corpus_of(dir: &Path, names: &[&str]) {
    for name in names {
        let scenario = dir.join(format!("scenarios/{name}.toml"));
        std::fs::create_dir_all(scenario.parent().unwrap()).unwrap();
        std::fs::copy(root().join(format!("scenarios/{name}.toml")), scenario).unwrap();
        copy_tree(&root().join("golden").join(name), &dir.join("golden").join(name));
    }
}

/// `PATH` with the built binaries first, so `gauntlet` in a command line is this one.
fn path_with_binaries() -> std::ffi::OsString {
    let binaries = Path::new(env!("CARGO_BIN_EXE_gauntlet")).parent().unwrap().to_owned();
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(binaries).chain(std::env::split_paths(&path))).unwrap()
}

/// An agent that answers `initialize` and `session/new` (the client's requests 1 and 2), then,
/// on its prompt, starts a daemon that leaves its session and group (`sleep 4747`), says so in
/// `MARKER`, and never answers (`sleep 4748`).
const HANGING_AGENT: &str = r#"read -r line
echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}'
read -r line
echo '{"jsonrpc":"2.0","id":2,"result":{"sessionId":"hang-1"}}'
read -r line
setsid sleep 4747 </dev/null >/dev/null 2>&1 &
: > "$MARKER"
exec sleep 4748
"#;

/// The live processes whose command line holds `text`.
fn processes_with(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let command = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if command.contains(text) && !zombie {
            found.push(command);
        }
    }
    found
}

/// SIGTERM to `gauntlet check` in the middle of a scenario ends its agent and all it started,
/// removes the scenario's scratch folders, writes the report with the scenario `interrupted`,
/// and exits 143 (issue 40).
#[test]
fn sigterm_stops_a_check_mid_scenario_and_leaves_nothing() {
    let work = tempfile::tempdir().unwrap();
    let (tmp, agent, reports, marker) =
        (work.path().join("tmp"), work.path().join("agent"), work.path().join("reports"), work.path().join("prompted"));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(agent.join("hang.sh"), HANGING_AGENT).unwrap();
    let profile = format!(
        "name = \"hang\"\ncommand = \"/bin/sh\"\nargs = [\"{{profile_dir}}/hang.sh\"]\nnetwork = \"host\"\npatience_ms = 60000\ndeadline_ms = 120000\n[env]\nMARKER = \"{}\"\n",
        marker.display()
    );
    std::fs::write(agent.join("hang.toml"), profile).unwrap();
    let check = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .args(["check", "--impl", agent.join("hang.toml").to_str().unwrap(), "--report-dir"])
        .arg(&reports)
        .args(["turn/clean-completion", "turn/two-turn-conversation"])
        .current_dir(root())
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !marker.exists() {
        assert!(started.elapsed().as_secs() < 60, "the agent was never prompted");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(check.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let output = check.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(143), "{stderr}");
    assert_eq!(processes_with("sleep 4748"), Vec::<String>::new(), "the agent outlived the check");
    assert_eq!(processes_with("sleep 4747"), Vec::<String>::new(), "its daemon outlived the check");
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().map(|entry| entry.path()).collect();
    assert!(left.is_empty(), "scratch folders left behind: {left:?}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(reports.join("report.json")).unwrap()).unwrap();
    let kinds: Vec<&str> = report["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|checked| checked["verdict"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["interrupted", "interrupted"], "{report:#}");
}
