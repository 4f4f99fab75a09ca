//! The reference implementation behind the adapter protocol: a header line chooses and
//! configures a runtime machine, then each step line gets its records.
//!
//! The in-process run of every lifecycle scenario goes through these lines too, and the
//! `gauntlet-lifecycle` binary is this over stdin and stdout, so the protocol the docs describe
//! is the one the reference answers.

use gauntlet_agent::canonical;
use gauntlet_bridge::{self as bridge, Bridge};
use gauntlet_monitor::{self as monitor, Monitor, Phase};
use serde::Deserialize;
use serde_json::Value;

use gauntlet_judge::lifecycle::capture::LifecycleCapture;
use gauntlet_judge::lifecycle::{Family, Kind, LifecycleScenario};

/// The protocol's first line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    kind: Kind,
    #[serde(default)]
    config: Option<Value>,
}

/// The runtime machine a header chose.
#[derive(Debug)]
enum Machine {
    Monitor(Box<Monitor>),
    Bridge(Box<Bridge>),
}

/// Why the reference refuses a line of its input.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// There was no line at all.
    #[error("no header line")]
    NoHeader,
    /// The header line is not `{"kind": ..., "config": {...}}`.
    #[error("header: {source}")]
    Header {
        /// Why.
        source: serde_json::Error,
    },
    /// The config is not the chosen machine's.
    #[error("config: {source}")]
    Config {
        /// Why.
        source: serde_json::Error,
    },
    /// The monitor refuses the config.
    #[error("config: {source}")]
    MonitorConfig {
        /// Why.
        source: monitor::ConfigError,
    },
    /// A step line is not a step of the machine.
    #[error("step {idx}: {source}")]
    Step {
        /// Its index (0 is the line after the header).
        idx: usize,
        /// Why.
        source: serde_json::Error,
    },
}

/// One protocol conversation with the reference.
#[derive(Debug)]
pub struct Session {
    machine: Machine,
    n_steps: usize,
}

impl Session {
    /// Starts from the header line `{"kind": ..., "config": {...}}`; a missing config is the
    /// default one.
    pub fn start(line: &str) -> Result<Session, InputError> {
        let header: Header = serde_json::from_str(line).map_err(|source| InputError::Header { source })?;
        let config = header.config.unwrap_or_else(|| Value::Object(serde_json::Map::new()));
        let machine = match header.kind.family() {
            Family::Monitor => {
                let config: monitor::Config =
                    serde_json::from_value(config).map_err(|source| InputError::Config { source })?;
                config.validate().map_err(|source| InputError::MonitorConfig { source })?;
                let phase = if header.kind == Kind::MonitorReadiness { Phase::Readiness } else { Phase::Completion };
                Machine::Monitor(Box::new(Monitor::new(phase, config)))
            }
            Family::Bridge => {
                let config: bridge::Config =
                    serde_json::from_value(config).map_err(|source| InputError::Config { source })?;
                Machine::Bridge(Box::new(Bridge::new(config)))
            }
        };
        Ok(Session { machine, n_steps: 0 })
    }

    /// The output lines of the next step line.
    pub fn step(&mut self, line: &str) -> Result<Vec<String>, InputError> {
        let idx = self.n_steps;
        self.n_steps += 1;
        let error = |source| InputError::Step { idx, source };
        match &mut self.machine {
            Machine::Monitor(monitor) => {
                let step: monitor::Step = serde_json::from_str(line).map_err(error)?;
                Ok(monitor.apply(idx, &step).iter().map(canonical::to_string).collect())
            }
            Machine::Bridge(bridge) => {
                let step: bridge::Step = serde_json::from_str(line).map_err(error)?;
                Ok(bridge.apply(idx, &step).iter().map(canonical::to_string).collect())
            }
        }
    }
}

/// The reference's run of a scenario, in process.
pub fn run(scenario: &LifecycleScenario) -> LifecycleCapture {
    let lines = scenario.input_lines();
    let answered = lines.split_first().ok_or(InputError::NoHeader).and_then(|(header, steps)| {
        let mut session = Session::start(header)?;
        let mut output = Vec::new();
        for step in steps {
            output.extend(session.step(step)?);
        }
        Ok(output)
    });
    match answered {
        Ok(output) => LifecycleCapture::from_lines(scenario, &output),
        Err(error) => {
            LifecycleCapture { faults: vec![format!("the reference refused the input: {error}")], ..Default::default() }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_lines_say_which_line_and_why() {
        let error = Session::start("{\"kind\": \"monitor.readiness\", \"config\": {\"stability_ms\": 0}}").unwrap_err();
        assert!(matches!(error, InputError::MonitorConfig { source: monitor::ConfigError::ZeroStability }));
        assert_eq!(error.to_string(), "config: stability_ms must be greater than 0");
        let error = Session::start("{\"kind\": \"nope\"}").unwrap_err();
        assert!(error.to_string().starts_with("header: unknown variant `nope`"), "{error}");
        let mut session = Session::start("{\"kind\": \"monitor.readiness\"}").unwrap();
        session.step("{\"at_ms\": 0}").unwrap();
        let error = session.step("{\"at_ms\": -1}").unwrap_err();
        assert!(matches!(error, InputError::Step { idx: 1, .. }), "{error}");
        assert!(error.to_string().starts_with("step 1: "), "{error}");
    }
}
