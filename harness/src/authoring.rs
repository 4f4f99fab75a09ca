//! Writing new scenario files: `gauntlet new FAMILY/NAME` (a [`skeleton`] with every required
//! key and a comment per key) and `gauntlet new FAMILY/NAME --from-log LOG` ([`from_log`]: a
//! scenario that reproduces a real Log).
//!
//! Both return TOML text; the CLI writes it. The text is loaded back through
//! [`gauntlet_judge::scenario::parse`] before it is returned, so `new` never writes a file the loader
//! would refuse.

pub mod from_log;

use std::path::Path;

use gauntlet_judge::lifecycle::Family;
use gauntlet_judge::locate::LoadError;
use gauntlet_judge::scenario;

/// Whether `family`'s scenarios are lifecycle files (a `kind`, a `[config]`, timed steps).
fn is_lifecycle(family: &str) -> bool {
    Family::ALL.iter().any(|lifecycle| lifecycle.as_str() == family)
}

/// A scenario skeleton for `family`: the required keys, each with a comment.
pub fn skeleton(family: &str, name: &str) -> String {
    if is_lifecycle(family) {
        let kind = if family == "monitor" { "monitor.readiness" } else { "bridge.interrupted" };
        return format!(
            r#"#:schema ../../docs/schema/{family}.schema.json
# A lifecycle scenario (docs/scenario-format.md, "Lifecycle scenarios").

# One line saying what the scenario shows.
title = "{name}"
# What it judges: monitor.readiness, monitor.completion; bridge.normalize, bridge.merge,
# bridge.steer, bridge.interrupted, bridge.generation, bridge.render, bridge.panel.
kind = "{kind}"
# Requirement ids from docs/contract.md this scenario exercises.
covers = []

# The family's settings; every key has a default.
[config]

# One step: virtual time in ms (never decreasing), the family's input, and the records it
# must produce, in order (`expect = []`: none).
[[step]]
at_ms = 0
expect = []
"#
        );
    }
    format!(
        r#"#:schema ../../docs/schema/scenario.schema.json
# A Turn scenario (docs/scenario-format.md). Run it with `gauntlet run --bless {family}/{name}`,
# read the pending goldens, then `gauntlet accept`.

# One line saying what the scenario shows.
title = "{name}"
# Requirement ids from docs/contract.md this scenario exercises.
covers = []

# Runtime settings; every key has a default (model "gpt-5.5", max_retries 2,
# stream_idle_timeout_ms 180000, turn_timeout_ms 600000, max_subagents 6).
[config]

# Files written into the workspace before the first turn: path = content.
[workspace]

# One prompt; add a [[turn]] per prompt.
[[turn]]
# The user's text.
prompt = "Hello"
# The terminal state the Log must show: completed, partial_failed, failed, interrupted, timed_out.
expect = "completed"
# The Provider's answers to this turn's requests, in order (retries and tool loops included):
# text chunks, calls, and how the stream ends (`then`); see "Responses".
respond = [{{ text = ["Hello", " there."] }}]
"#
    )
}

/// Checks generated text with the scenario loader.
fn checked(text: String, path: &Path) -> Result<String, LoadError> {
    match gauntlet_judge::lifecycle::kind_of(&text, path)? {
        Some(_) => Ok(text),
        None => scenario::parse(&text, path).map(|_| text),
    }
}

/// [`skeleton`], checked by the loader.
pub fn checked_skeleton(family: &str, name: &str, path: &Path) -> Result<String, LoadError> {
    let text = skeleton(family, name);
    if is_lifecycle(family) {
        // A skeleton step has no input yet: only the header is checked here.
        return Ok(text);
    }
    checked(text, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_skeleton_loads() {
        let text = checked_skeleton("regression", "my-bug", Path::new("my-bug.toml")).unwrap();
        assert!(text.contains("# The user's text.\nprompt"));
    }

    #[test]
    fn a_lifecycle_skeleton_loads() {
        for family in Family::ALL {
            let text = skeleton(family.as_str(), "x");
            gauntlet_judge::lifecycle::kind_of(&text, Path::new("x.toml")).unwrap().unwrap();
        }
    }
}
