//! The scenario files of `scenarios/bridge/` replayed on the reference bridge: each step's `expect`
//! tables must be subsets of the records it produces, one per record, in order.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::{Action, Bridge, Config, Step};

const KINDS: [&str; 6] =
    ["bridge.normalize", "bridge.merge", "bridge.steer", "bridge.interrupted", "bridge.generation", "bridge.render"];

/// A scenario file as docs/scenario-format.md "Lifecycle scenarios" describes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    title: String,
    kind: String,
    covers: Vec<String>,
    source: String,
    behaviour: String,
    #[serde(default)]
    config: Config,
    #[serde(rename = "step")]
    steps: Vec<FileStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileStep {
    at_ms: u64,
    #[serde(rename = "do")]
    action: Action,
    #[serde(default)]
    expect: Option<Vec<toml::Value>>,
}

/// `expected` is a subset of `actual` as the harness judges it (docs/scenario-format.md): objects
/// key by key, arrays element by element with the same length, scalars by equality.
fn is_subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(expected), Value::Object(actual)) => {
            expected.iter().all(|(key, value)| actual.get(key).is_some_and(|found| is_subset(value, found)))
        }
        (Value::Array(expected), Value::Array(actual)) => {
            expected.len() == actual.len() && expected.iter().zip(actual).all(|(want, got)| is_subset(want, got))
        }
        _ => expected == actual,
    }
}

fn check_file(path: &Path) -> Result<usize, String> {
    let text = std::fs::read_to_string(path).map_err(|error| error.to_string())?;
    let file: File = toml::from_str(&text).map_err(|error| error.to_string())?;
    if !KINDS.contains(&file.kind.as_str()) {
        return Err(format!("unknown kind {:?}", file.kind));
    }
    if file.title.is_empty() || file.source.is_empty() {
        return Err("a title and a source are required".to_owned());
    }
    if file.covers.is_empty() || !file.covers.iter().all(|id| id.starts_with("BRIDGE-")) {
        return Err(format!("covers must name BRIDGE- ids: {:?}", file.covers));
    }
    if !matches!(file.behaviour.as_str(), "requirement" | "reference") {
        return Err(format!("unknown behaviour {:?}", file.behaviour));
    }
    if file.steps.is_empty() {
        return Err("no [[step]]".to_owned());
    }
    let mut bridge = Bridge::new(file.config);
    let mut n_checked = 0;
    let mut last_at_ms = 0;
    for (step_idx, file_step) in file.steps.into_iter().enumerate() {
        if file_step.at_ms < last_at_ms {
            return Err(format!("step {step_idx} goes back in time"));
        }
        last_at_ms = file_step.at_ms;
        let step = Step { at_ms: file_step.at_ms, action: file_step.action };
        let line = serde_json::to_string(&step).map_err(|error| error.to_string())?;
        let step: Step = serde_json::from_str(&line).map_err(|error| format!("step {step_idx} as JSON: {error}"))?;
        let records = bridge.apply(step_idx, &step);
        let Some(expect) = file_step.expect else { continue };
        let expect: Vec<Value> =
            expect.into_iter().map(|table| serde_json::to_value(table).unwrap_or(Value::Null)).collect();
        let actual: Vec<Value> =
            records.iter().map(|record| serde_json::to_value(record).unwrap_or(Value::Null)).collect();
        let pretty = serde_json::to_string_pretty(&actual).unwrap_or_default();
        if expect.len() != actual.len() {
            return Err(format!("step {step_idx}: expected {} records, got {}:\n{pretty}", expect.len(), actual.len()));
        }
        for (record_idx, (expected, actual)) in expect.iter().zip(&actual).enumerate() {
            if !is_subset(expected, actual) {
                return Err(format!("step {step_idx} record {record_idx}: {expected} is not a subset of:\n{pretty}"));
            }
        }
        n_checked += 1;
    }
    Ok(n_checked)
}

#[test]
fn every_bridge_scenario_meets_its_expectations() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/bridge");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| entries.filter_map(Result::ok).map(|entry| entry.path()).collect())
        .unwrap_or_default();
    paths.retain(|path| path.extension().is_some_and(|ext| ext == "toml"));
    paths.sort();
    assert!(!paths.is_empty(), "no scenarios in {}", dir.display());
    let failures: Vec<String> = paths
        .iter()
        .filter_map(|path| check_file(path).err().map(|error| format!("{}: {error}", path.display())))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn steps_round_trip_through_json() {
    let step: Step = serde_json::from_str(r#"{"at_ms": 5, "do": {"read": {"result": null}}}"#).unwrap();
    let text = serde_json::to_string(&step).unwrap();
    assert_eq!(serde_json::from_str::<Step>(&text).unwrap(), step);
    let error = toml::from_str::<Step>("at_ms = 0\ndo.read = { result = {}, extra = 1 }\n").unwrap_err();
    assert!(error.to_string().contains("extra"), "{error}");
    let error = toml::from_str::<Step>("at_ms = 0\ndo.read = { result_json = '{' }\n").unwrap_err();
    assert!(error.to_string().contains("line 2"), "{error}");
}

#[test]
fn a_config_survives_the_protocol_header() {
    let text = r#"
observer_poll_ms = 0
thread = { id = "t", status = "active", active_turn_id = "u" }
telegram_origin = [{ thread_id = "t", turn_id = "u" }]
app_server = { thread_read_json = '{"thread": {"id": "t", "status": null}}', steer_errors = ["no active turn"] }
"#;
    let config: Config = toml::from_str(text).unwrap();
    assert_eq!(config.app_server.thread_read["thread"]["status"], Value::Null);
    let json = serde_json::to_value(&config).unwrap();
    assert_eq!(serde_json::from_value::<Config>(json).unwrap(), config);
    assert_eq!(serde_json::from_value::<Config>(serde_json::json!({})).unwrap(), Config::default());
    let error = toml::from_str::<Config>("app_server = { thread_read = {}, thread_read_json = '{}' }").unwrap_err();
    assert!(error.to_string().contains("not both"), "{error}");
}

#[test]
fn every_action_survives_the_protocol_line() {
    let lines = [
        r#"{"at_ms":0,"do":{"merge":{"result":{"id":"t"}}}}"#,
        r#"{"at_ms":0,"do":{"gate":{"snapshot":{"thread_id":"t","tool":null}}}}"#,
        r#"{"at_ms":0,"do":{"input":{"text":"hi","route_turn_id":"u"}}}"#,
        r#"{"at_ms":0,"do":{"stop":{}}}"#,
        r#"{"at_ms":0,"do":{"ensure_sessions":{}}}"#,
        r#"{"at_ms":0,"do":{"live_loop_exit":{"generation":1}}}"#,
        r#"{"at_ms":0,"do":{"client_payload":{"kind":"notification","generation":1}}}"#,
        r#"{"at_ms":0,"do":{"render":{"helper":"rpc_string","value":null}}}"#,
    ];
    for line in lines {
        let step: Step = serde_json::from_str(line).unwrap();
        let again: Step = serde_json::from_str(&serde_json::to_string(&step).unwrap()).unwrap();
        assert_eq!(again, step, "{line}");
    }
    assert!(serde_json::from_str::<Step>(r#"{"at_ms":0,"do":{"stop":{"thread":"t"}}}"#).is_err());
}
