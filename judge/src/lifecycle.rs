//! Lifecycle scenarios: contracts judged from outside a runtime, from a config and a timed
//! stream of steps (the `monitor` and `bridge` families; docs/adapters.md).
//!
//! A lifecycle scenario is strict TOML: a header (`title`, `kind`, `covers`, `source`,
//! `behaviour`), a `[config]` table and `[[step]]` tables, each step with an optional `expect`
//! list. Its run is a stream of JSON records; the golden is `results.jsonl`.
//!
//! The same scenario reaches every implementation as the adapter protocol's lines
//! ([`LifecycleScenario::input_lines`]): the reference answers them in process, any other
//! implementation as a command over stdin and stdout (the `gauntlet` crate's `lifecycle`).

pub mod capture;

use std::convert::Infallible;
use std::path::Path;

use gauntlet_bridge as bridge;
use gauntlet_monitor as monitor;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::locate::{LoadError, parse_toml};

/// What a lifecycle scenario judges; the first word is its family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Kind {
    /// houmao's readiness monitor: is the surface safe for a prompt?
    #[serde(rename = "monitor.readiness")]
    MonitorReadiness,
    /// houmao's completion monitor: did the submitted turn finish?
    #[serde(rename = "monitor.completion")]
    MonitorCompletion,
    /// codex-tg: `thread/read` snapshot normalization.
    #[serde(rename = "bridge.normalize")]
    BridgeNormalize,
    /// codex-tg: the stored row merged into a fresh snapshot.
    #[serde(rename = "bridge.merge")]
    BridgeMerge,
    /// codex-tg: operator input, steer or start; `/stop`.
    #[serde(rename = "bridge.steer")]
    BridgeSteer,
    /// codex-tg: the deferred `interrupted` terminal gate.
    #[serde(rename = "bridge.interrupted")]
    BridgeInterrupted,
    /// codex-tg: generation-aware sessions and RPC client.
    #[serde(rename = "bridge.generation")]
    BridgeGeneration,
    /// codex-tg: nil-safe rendering.
    #[serde(rename = "bridge.render")]
    BridgeRender,
    /// codex-tg: thread panels synced from Telegram input and the global observer.
    #[serde(rename = "bridge.panel")]
    BridgePanel,
}

impl Kind {
    /// The family the kind belongs to.
    pub fn family(self) -> Family {
        match self {
            Kind::MonitorReadiness | Kind::MonitorCompletion => Family::Monitor,
            Kind::BridgeNormalize
            | Kind::BridgeMerge
            | Kind::BridgeSteer
            | Kind::BridgeInterrupted
            | Kind::BridgeGeneration
            | Kind::BridgeRender
            | Kind::BridgePanel => Family::Bridge,
        }
    }

    /// The kind as written in scenario files and protocol headers.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::MonitorReadiness => "monitor.readiness",
            Kind::MonitorCompletion => "monitor.completion",
            Kind::BridgeNormalize => "bridge.normalize",
            Kind::BridgeMerge => "bridge.merge",
            Kind::BridgeSteer => "bridge.steer",
            Kind::BridgeInterrupted => "bridge.interrupted",
            Kind::BridgeGeneration => "bridge.generation",
            Kind::BridgeRender => "bridge.render",
            Kind::BridgePanel => "bridge.panel",
        }
    }
}

/// A family of lifecycle scenarios; an adapter implements one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// The lifecycle monitor (houmao, seed 002).
    Monitor,
    /// The app-server bridge's turn lifecycle normalization (codex-tg ADR-012, seed 003).
    Bridge,
}

impl Family {
    /// Every family.
    pub const ALL: [Family; 2] = [Family::Monitor, Family::Bridge];

    /// The family whose requirement a docs/contract.md id is, if any.
    pub fn of_requirement(id: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|family| id.starts_with(family.requirement_prefix()))
    }

    /// The family's name, also its folder under `scenarios/`.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Monitor => "monitor",
            Family::Bridge => "bridge",
        }
    }

    /// The field that says what a record is: its `status` for the monitor, its `record` for
    /// the bridge.
    pub fn discriminator(self) -> &'static str {
        match self {
            Family::Monitor => "status",
            Family::Bridge => "record",
        }
    }

    /// The prefix of its requirement ids in docs/contract.md.
    pub fn requirement_prefix(self) -> &'static str {
        match self {
            Family::Monitor => "MON-",
            Family::Bridge => "BRIDGE-",
        }
    }
}

/// Whether a scenario states a requirement or records the reference's behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Behaviour {
    /// Its expectations are requirements: a difference is `nonconformant`.
    #[default]
    Requirement,
    /// It pins a quirk of the upstream code that the contract does not require: a difference
    /// from its expectations is only a golden difference (`conformant`).
    Reference,
}

/// One lifecycle scenario, loaded and checked.
#[derive(Debug, Clone)]
pub struct LifecycleScenario {
    /// A one-line description.
    pub title: String,
    /// What it judges.
    pub kind: Kind,
    /// Requirement ids it exercises.
    pub covers: Vec<String>,
    /// The upstream test or probe it transcribes.
    pub source: Option<String>,
    /// Requirement or reference behaviour.
    pub behaviour: Behaviour,
    /// The config, as the protocol's header carries it (every default filled in).
    pub config: Value,
    /// The steps, as the protocol carries them.
    pub steps: Vec<Value>,
    /// Each step's expected records (subsets), when it states them.
    pub expect: Vec<Option<Vec<Value>>>,
}

/// A lifecycle scenario file of one family: its config `C` and steps `S` (docs/schema/ is
/// generated from it, [`crate::schema`]).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, bound(deserialize = "C: Deserialize<'de> + Default, S: Deserialize<'de>"))]
#[schemars(bound = "C: schemars::JsonSchema + Default + Serialize, S: schemars::JsonSchema")]
pub struct File<C, S> {
    /// One line saying what the scenario shows.
    title: String,
    /// What it judges: `monitor.*` in scenarios/monitor, `bridge.*` in scenarios/bridge.
    kind: Kind,
    /// Requirement ids from docs/contract.md it exercises.
    #[serde(default)]
    covers: Vec<String>,
    /// The upstream test or probe it transcribes.
    #[serde(default)]
    source: Option<String>,
    /// Whether its expectations are requirements or pin the upstream's behaviour.
    #[serde(default)]
    behaviour: Behaviour,
    /// The family's settings; every key has a default.
    #[serde(default)]
    config: C,
    /// The timed steps, in order; time never goes back.
    #[serde(rename = "step", default)]
    steps: Vec<S>,
}

/// A monitor scenario file.
pub type MonitorFile = File<monitor::Config, MonitorStep>;

/// A bridge scenario file.
pub type BridgeFile = File<bridge::Config, BridgeStep>;

/// One step of a monitor scenario.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MonitorStep {
    /// Virtual milliseconds since the start of the run; never decreasing.
    at_ms: u64,
    /// What the parser saw; absent for a bare advance of the clock.
    #[serde(default)]
    observe: Option<monitor::Observation>,
    /// The records the step must produce, in order, each a subset of its record (`[]`: none).
    #[serde(default)]
    #[schemars(with = "Option<Vec<serde_json::Map<String, Value>>>")]
    expect: Option<Vec<toml::Value>>,
}

/// One step of a bridge scenario.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BridgeStep {
    /// Milliseconds since the scenario started; never decreasing.
    at_ms: u64,
    /// What happens: one action.
    #[serde(rename = "do")]
    action: bridge::Action,
    /// The records the step must produce, in order, each a subset of its record (`[]`: none).
    #[serde(default)]
    #[schemars(with = "Option<Vec<serde_json::Map<String, Value>>>")]
    expect: Option<Vec<toml::Value>>,
}

/// A step of a scenario file: the protocol step it sends, and what it expects.
trait FileStep {
    fn split(self) -> Result<(Value, Option<Vec<toml::Value>>), serde_json::Error>;
}

impl FileStep for MonitorStep {
    fn split(self) -> Result<(Value, Option<Vec<toml::Value>>), serde_json::Error> {
        Ok((serde_json::to_value(monitor::Step { at_ms: self.at_ms, observe: self.observe })?, self.expect))
    }
}

impl FileStep for BridgeStep {
    fn split(self) -> Result<(Value, Option<Vec<toml::Value>>), serde_json::Error> {
        Ok((serde_json::to_value(bridge::Step { at_ms: self.at_ms, action: self.action })?, self.expect))
    }
}

/// Only the `kind`, to choose how to read the rest.
#[derive(Deserialize)]
struct KindOnly {
    kind: Option<Kind>,
}

/// The lifecycle kind of a scenario file, or `None` for a Turn scenario (no `kind` key); an
/// unknown kind is an error naming the key.
pub fn kind_of(text: &str, path: &Path) -> Result<Option<Kind>, LoadError> {
    Ok(parse_toml::<KindOnly>(text, path)?.kind)
}

/// Reads a lifecycle scenario file (one with a `kind`).
pub fn parse(text: &str, path: &Path) -> Result<LifecycleScenario, LoadError> {
    parse_as(text, path, kind_of(text, path)?.unwrap_or(Kind::MonitorReadiness))
}

/// Reads a lifecycle scenario file whose `kind` is known to be `kind` (its family's tables).
pub fn parse_as(text: &str, path: &Path, kind: Kind) -> Result<LifecycleScenario, LoadError> {
    match kind.family() {
        Family::Bridge => read::<bridge::Config, BridgeStep, Infallible>(text, path, |_| Ok(())),
        Family::Monitor => read::<monitor::Config, MonitorStep, _>(text, path, monitor::Config::validate),
    }
}

/// Reads a file of one family; `validate` is its config's own check.
fn read<C, S, E>(
    text: &str,
    path: &Path,
    validate: impl Fn(&C) -> Result<(), E>,
) -> Result<LifecycleScenario, LoadError>
where
    C: serde::de::DeserializeOwned + Serialize + Default,
    S: serde::de::DeserializeOwned + FileStep,
    E: std::fmt::Display,
{
    let invalid =
        |message: String| LoadError::Invalid { path: path.to_owned(), line: 1, column: 1, key: None, message };
    let file: File<C, S> = parse_toml(text, path)?;
    crate::scenario::check_covers(text, path, &file.covers)?;
    validate(&file.config).map_err(|message| invalid(format!("config: {message}")))?;
    let mut steps = Vec::new();
    let mut expect = Vec::new();
    for step in file.steps {
        let (protocol, expected) = step.split().map_err(|error| invalid(error.to_string()))?;
        steps.push(protocol);
        expect.push(expected.map(|tables| tables.into_iter().map(json_of).collect()));
    }
    let config = serde_json::to_value(&file.config).map_err(|error| invalid(error.to_string()))?;
    let scenario = LifecycleScenario {
        title: file.title,
        kind: file.kind,
        covers: file.covers,
        source: file.source,
        behaviour: file.behaviour,
        config,
        steps,
        expect,
    };
    scenario.validate().map_err(invalid)?;
    Ok(scenario)
}

/// A TOML value as JSON (TOML has no null, so nothing is lost).
fn json_of(value: toml::Value) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

impl LifecycleScenario {
    /// Steps must exist and never go back in time.
    fn validate(&self) -> Result<(), String> {
        if self.steps.is_empty() {
            return Err("a lifecycle scenario needs at least one [[step]]".to_owned());
        }
        let times: Vec<u64> = self.steps.iter().map(|step| step["at_ms"].as_u64().unwrap_or(0)).collect();
        if let Some(idx) = times.windows(2).position(|pair| pair[1] < pair[0]) {
            return Err(format!(
                "step {} is at {} ms, before step {} at {} ms: time never goes back",
                idx + 1,
                times[idx + 1],
                idx,
                times[idx]
            ));
        }
        Ok(())
    }

    /// The family.
    pub fn family(&self) -> Family {
        self.kind.family()
    }

    /// The adapter protocol's input: a header `{"kind", "config"}`, then one line per step.
    pub fn input_lines(&self) -> Vec<String> {
        let header = json!({ "kind": self.kind.as_str(), "config": self.config });
        std::iter::once(&header).chain(&self.steps).map(gauntlet_agent::canonical::to_string).collect()
    }

    /// The time of step `idx`.
    pub fn at_ms(&self, idx: usize) -> Option<u64> {
        self.steps.get(idx).and_then(|step| step["at_ms"].as_u64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const READINESS: &str = r#"title = "t"
kind = "monitor.readiness"
[config]
stall_timeout_ms = 5000
[[step]]
at_ms = 0
observe = { availability = "unknown", business_state = "unknown", input_mode = "unknown" }
[[step]]
at_ms = 5000
expect = [{ status = "stalled" }]
"#;

    #[test]
    fn a_monitor_scenario_becomes_protocol_lines_with_defaults_filled_in() {
        let scenario = parse(READINESS, Path::new("x.toml")).unwrap();
        let lines = scenario.input_lines();
        assert_eq!(lines.len(), 3);
        let header: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(header["kind"], "monitor.readiness");
        assert_eq!(header["config"]["stability_ms"], 1000);
        assert_eq!(lines[2], r#"{"at_ms":5000}"#);
        assert_eq!(scenario.expect[1], Some(vec![json!({ "status": "stalled" })]));
    }

    #[test]
    fn a_misspelt_observation_key_names_line_and_key() {
        let text = READINESS.replace("business_state = \"unknown\"", "busines_state = \"unknown\"");
        let message = parse(&text, Path::new("x.toml")).unwrap_err().to_string();
        assert!(message.starts_with("x.toml:7:39: key `busines_state`"), "{message}");
    }

    #[test]
    fn time_never_goes_back() {
        let text = READINESS.replace("at_ms = 5000", "at_ms = 0").replace("at_ms = 0\nobserve", "at_ms = 20\nobserve");
        let message = parse(&text, Path::new("x.toml")).unwrap_err().to_string();
        assert!(message.contains("before step"), "{message}");
    }

    #[test]
    fn the_kind_decides_the_family_and_its_absence_means_a_turn_scenario() {
        assert_eq!(kind_of(READINESS, Path::new("x")).unwrap(), Some(Kind::MonitorReadiness));
        assert_eq!(kind_of("title = \"t\"\n", Path::new("x")).unwrap(), None);
        let message = kind_of("kind = \"monitor.ready\"\n", Path::new("x")).unwrap_err().to_string();
        assert!(message.contains("key `kind`"), "{message}");
    }
}
