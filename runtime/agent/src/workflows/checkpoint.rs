//! Step Outcomes' `checkpoint_status` and Checkpoint Bundles (ADR 0014; pixir.md 8;
//! WF-CHECKPOINT).
//!
//! `checkpoint_status` is a Workflow projection over the Subagent status, not a replacement:
//! a completed step is `checkpoint_ready` unless its summary says otherwise
//! (`checkpoint_status: partial`, `failed` or `needs_orchestrator`); every other terminal
//! status is `failed`; a step never started because a dependency was not ready is `held`.
//! Only `checkpoint_ready` is safe for dependents.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::event::SubagentStatus;

/// Whether a step's result is safe to build on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CheckpointStatus {
    /// Safe for dependents.
    CheckpointReady,
    /// Useful evidence, not enough to unblock dependents.
    Partial,
    /// A terminal non-usable state: failed, timed out, cancelled, closed, detached.
    Failed,
    /// Never started: a dependency was not ready, or the workflow ran out of time.
    Held,
    /// An ambiguity or conflict the workflow cannot resolve alone.
    NeedsOrchestrator,
}

impl CheckpointStatus {
    /// Every status.
    pub const ALL: [CheckpointStatus; 5] = [
        CheckpointStatus::CheckpointReady,
        CheckpointStatus::Partial,
        CheckpointStatus::Failed,
        CheckpointStatus::Held,
        CheckpointStatus::NeedsOrchestrator,
    ];

    /// The contract string.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckpointStatus::CheckpointReady => "checkpoint_ready",
            CheckpointStatus::Partial => "partial",
            CheckpointStatus::Failed => "failed",
            CheckpointStatus::Held => "held",
            CheckpointStatus::NeedsOrchestrator => "needs_orchestrator",
        }
    }

    /// Parses a contract string.
    pub fn parse(text: &str) -> Option<CheckpointStatus> {
        CheckpointStatus::ALL.into_iter().find(|status| status.as_str() == text)
    }

    /// The step-level safe next actions (pixir.md 8).
    pub fn safe_next_actions(self, timed_out: bool) -> Vec<&'static str> {
        match self {
            CheckpointStatus::CheckpointReady => vec![],
            CheckpointStatus::Partial => vec!["synthesize_from_partial_or_retry_step"],
            CheckpointStatus::NeedsOrchestrator => vec!["ask_user_or_orchestrator"],
            CheckpointStatus::Failed if timed_out => vec!["retry_failed_step"],
            CheckpointStatus::Failed => vec!["inspect_step_failure", "retry_failed_step"],
            CheckpointStatus::Held if timed_out => vec!["retry_workflow_with_larger_timeout"],
            CheckpointStatus::Held => vec!["rerun_after_dependencies_checkpoint_ready"],
        }
    }
}

/// The checkpoint status of a step whose Subagent ended `status` with `summary`.
pub fn derive(status: SubagentStatus, summary: &str) -> CheckpointStatus {
    if status != SubagentStatus::Completed {
        return CheckpointStatus::Failed;
    }
    declared(summary).unwrap_or(CheckpointStatus::CheckpointReady)
}

/// The first `checkpoint_status: <status>` a summary declares (case-insensitive), other than
/// `held`, which only the scheduler decides.
fn declared(summary: &str) -> Option<CheckpointStatus> {
    let lower = summary.to_lowercase();
    let marker = "checkpoint_status:";
    let mut rest = lower.as_str();
    while let Some(at) = rest.find(marker) {
        let after = rest[at + marker.len()..].trim_start();
        let word: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if let Some(status) = CheckpointStatus::parse(&word).filter(|status| *status != CheckpointStatus::Held) {
            return Some(status);
        }
        rest = &rest[at + marker.len()..];
    }
    None
}

/// What a Checkpoint Bundle is built from.
#[derive(Debug, Clone)]
pub struct BundleInput<'a> {
    /// The step.
    pub step_id: &'a str,
    /// Its Subagent id, if it ran.
    pub agent_id: Option<&'a str>,
    /// Its child Session, if it ran.
    pub child_session_id: Option<&'a str>,
    /// The decided status.
    pub status: CheckpointStatus,
    /// The Subagent's status, if it ran.
    pub subagent_status: Option<SubagentStatus>,
    /// The Subagent's summary.
    pub summary: &'a str,
    /// Why it is not ready, when it is not.
    pub limitations: Vec<&'a str>,
}

/// A Checkpoint Bundle, version 2: the evidence that makes a step safe (or not) to consume.
pub fn bundle(input: &BundleInput) -> Value {
    let dependent_safe = input.status == CheckpointStatus::CheckpointReady;
    let source = if input.subagent_status.is_some() { "subagent_terminal_summary" } else { "workflow_scheduler" };
    let summary: String = input.summary.chars().take(2000).collect();
    json!({
        "step_id": input.step_id,
        "agent_id": input.agent_id,
        "child_session_id": input.child_session_id,
        "status": input.status.as_str(),
        "dependent_safe": dependent_safe,
        "summary": summary,
        "known_limitations": input.limitations,
        "verification": {"source": source, "subagent_status": input.subagent_status.map(SubagentStatus::as_str)},
        "version": 2,
        "typed_payloads": [{
            "schema_id": "workflow_checkpoint.v1",
            "provenance": "harness_projection",
            "validation": {"status": "valid", "validated_at": "runtime"},
            "payload": {
                "step_id": input.step_id,
                "agent_id": input.agent_id,
                "child_session_id": input.child_session_id,
                "checkpoint_status": input.status.as_str(),
                "dependent_safe": dependent_safe,
                "known_limitations": input.limitations,
                "verification_source": source,
            },
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completed_step_is_ready_unless_its_summary_says_otherwise() {
        assert_eq!(derive(SubagentStatus::Completed, "All good."), CheckpointStatus::CheckpointReady);
        assert_eq!(
            derive(SubagentStatus::Completed, "Half done. Checkpoint_Status: PARTIAL"),
            CheckpointStatus::Partial
        );
        assert_eq!(
            derive(SubagentStatus::Completed, "checkpoint_status: held, checkpoint_status: needs_orchestrator"),
            CheckpointStatus::NeedsOrchestrator
        );
        for status in
            [SubagentStatus::Failed, SubagentStatus::TimedOut, SubagentStatus::Cancelled, SubagentStatus::Detached]
        {
            assert_eq!(derive(status, "checkpoint_status: checkpoint_ready"), CheckpointStatus::Failed);
        }
    }

    #[test]
    fn names_match_serde() {
        for status in CheckpointStatus::ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), json!(status.as_str()));
        }
    }

    #[test]
    fn only_a_ready_bundle_is_dependent_safe() {
        let input = BundleInput {
            step_id: "a",
            agent_id: Some("sub_1"),
            child_session_id: Some("wf_1-a"),
            status: CheckpointStatus::Partial,
            subagent_status: Some(SubagentStatus::Completed),
            summary: "s",
            limitations: vec!["checkpoint_not_ready"],
        };
        assert_eq!(bundle(&input)["dependent_safe"], false);
        let ready = BundleInput { status: CheckpointStatus::CheckpointReady, limitations: vec![], ..input };
        assert_eq!(bundle(&ready)["dependent_safe"], true);
        assert_eq!(bundle(&ready)["typed_payloads"][0]["schema_id"], "workflow_checkpoint.v1");
    }
}
