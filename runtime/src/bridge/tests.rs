//! The scenario files of `scenarios/bridge/` replayed on the reference bridge: each step's `expect`
//! tables must be subsets of the records it produces, one per record, in order.

use std::path::Path;

use serde_json::Value;

use super::{Bridge, Config, Step};

const HEADER_KEYS: [&str; 5] = ["title", "kind", "covers", "source", "behaviour"];
const KINDS: [&str; 6] =
    ["bridge.normalize", "bridge.merge", "bridge.steer", "bridge.interrupted", "bridge.generation", "bridge.render"];

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
    let mut table: toml::Table = toml::from_str(&text).map_err(|error| error.to_string())?;
    for key in HEADER_KEYS {
        if table.remove(key).is_none() {
            return Err(format!("missing header `{key}`"));
        }
    }
    let kind =
        toml::from_str::<toml::Table>(&text).ok().and_then(|header| header.get("kind")?.as_str().map(str::to_owned));
    if !kind.as_deref().is_some_and(|kind| KINDS.contains(&kind)) {
        return Err(format!("unknown kind {kind:?}"));
    }
    let config: Config = match table.remove("config") {
        Some(config) => config.try_into().map_err(|error: toml::de::Error| format!("config: {error}"))?,
        None => Config::default(),
    };
    let Some(toml::Value::Array(steps)) = table.remove("step") else { return Err("no [[step]]".to_owned()) };
    if let Some(key) = table.keys().next() {
        return Err(format!("unknown key `{key}`"));
    }
    let mut bridge = Bridge::new(config);
    let mut n_checked = 0;
    let mut last_at_ms = 0;
    for (step_idx, step) in steps.into_iter().enumerate() {
        let toml::Value::Table(mut step) = step else { return Err(format!("step {step_idx} is not a table")) };
        let expect = step.remove("expect");
        let step: Step = toml::Value::Table(step)
            .try_into()
            .map_err(|error: toml::de::Error| format!("step {step_idx}: {error}"))?;
        if step.at_ms < last_at_ms {
            return Err(format!("step {step_idx} goes back in time"));
        }
        last_at_ms = step.at_ms;
        let records = bridge.apply(step_idx, &step);
        let Some(expect) = expect else { continue };
        let expect: Value = expect.try_into().map_err(|error: toml::de::Error| error.to_string())?;
        let actual: Vec<Value> =
            records.iter().map(|record| serde_json::to_value(record).unwrap_or(Value::Null)).collect();
        let Value::Array(expect) = expect else { return Err(format!("step {step_idx}: expect is not an array")) };
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
