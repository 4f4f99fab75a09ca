//! The wave planner: which steps may run together next (pixir.md 8 "Waves"; WF-WAVES).
//!
//! Greedy in spec order: a step runs when every dependency is `checkpoint_ready` (a partial
//! checkpoint does not unblock), when it conflicts with no step already in the wave, and
//! while the wave has room (`max_concurrency`). Conflicts: two writers whose write sets
//! overlap, or a writer whose write set overlaps a reader's read set. `**/*` overlaps
//! everything; two paths overlap when equal or when one is a folder of the other.

use std::collections::BTreeMap;

use super::checkpoint::CheckpointStatus;
use super::spec::{Posture, Spec, Step};

fn overlap(left: &[String], right: &[String]) -> bool {
    left.iter().any(|a| {
        right.iter().any(|b| {
            a == "**/*" || b == "**/*" || a == b || a.starts_with(&format!("{b}/")) || b.starts_with(&format!("{a}/"))
        })
    })
}

/// True when two steps may not share a wave.
pub fn conflicts(a: &Step, b: &Step) -> bool {
    let writes_into = |writer: &Step, other: &Step| {
        writer.posture == Posture::Writer
            && (overlap(&writer.write_set, &other.write_set) || overlap(&writer.write_set, &other.read_set))
    };
    writes_into(a, b) || writes_into(b, a)
}

/// The next wave: steps not yet started whose dependencies are all `checkpoint_ready`.
pub fn next_wave(spec: &Spec, decided: &BTreeMap<String, CheckpointStatus>, started: &[String]) -> Vec<String> {
    let mut wave: Vec<&Step> = Vec::new();
    for step in &spec.steps {
        if wave.len() >= spec.max_concurrency {
            break;
        }
        let ready = step.depends_on.iter().all(|dep| decided.get(dep) == Some(&CheckpointStatus::CheckpointReady));
        if started.contains(&step.id) || decided.contains_key(&step.id) || !ready {
            continue;
        }
        if wave.iter().any(|other| conflicts(step, other)) {
            continue;
        }
        wave.push(step);
    }
    wave.into_iter().map(|step| step.id.clone()).collect()
}

/// Steps not started that can never start: a dependency was decided and is not
/// `checkpoint_ready` (held, reason `dependency_not_checkpoint_ready`).
pub fn blocked(spec: &Spec, decided: &BTreeMap<String, CheckpointStatus>, started: &[String]) -> Vec<String> {
    spec.steps
        .iter()
        .filter(|step| !started.contains(&step.id) && !decided.contains_key(&step.id))
        .filter(|step| {
            step.depends_on
                .iter()
                .any(|dep| decided.get(dep).is_some_and(|status| *status != CheckpointStatus::CheckpointReady))
        })
        .map(|step| step.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflows::spec::parse;
    use serde_json::json;

    #[test]
    fn overlapping_writers_never_share_a_wave_and_capacity_is_respected() {
        let spec = parse(
            &json!({"max_concurrency": 2, "steps": [
                {"id": "a", "task": "x", "write_set": ["src/api"]},
                {"id": "b", "task": "x", "write_set": ["src/api/routes.rs"]},
                {"id": "c", "task": "x", "write_set": ["docs"]},
                {"id": "d", "task": "x", "write_set": ["tests"]},
            ]}),
            1,
        )
        .unwrap();
        assert_eq!(next_wave(&spec, &BTreeMap::new(), &[]), ["a", "c"]);
        let started = ["a".to_owned(), "c".to_owned()];
        assert_eq!(next_wave(&spec, &BTreeMap::new(), &started), ["b", "d"]);
    }

    #[test]
    fn only_checkpoint_ready_unblocks_and_other_outcomes_hold_dependents() {
        let spec = parse(
            &json!({"steps": [
                {"id": "a", "task": "x", "agent": "explorer"},
                {"id": "b", "task": "x", "agent": "explorer"},
                {"id": "c", "task": "x", "agent": "explorer", "depends_on": ["a"]},
                {"id": "d", "task": "x", "agent": "explorer", "depends_on": ["b"]},
            ]}),
            1,
        )
        .unwrap();
        let started = ["a".to_owned(), "b".to_owned()];
        let decided = BTreeMap::from([
            ("a".to_owned(), CheckpointStatus::CheckpointReady),
            ("b".to_owned(), CheckpointStatus::Partial),
        ]);
        assert_eq!(next_wave(&spec, &decided, &started), ["c"]);
        assert_eq!(blocked(&spec, &decided, &started), ["d"]);
    }
}
