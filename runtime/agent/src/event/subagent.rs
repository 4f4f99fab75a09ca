//! The Subagent lifecycle as the Log records it: statuses, the parent-visible lifecycle
//! events, the transitions between statuses, and what a delegation tool's result reports
//! (ADR 0026 "Subagent terminal states"; pixir.md 7; SUB-LIFECYCLE). Log vocabulary, so
//! replay and the ACP projection read it without the delegation layer.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Data;

/// Where a child Session stands, as its parent sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SubagentStatus {
    /// Spawned, not yet running.
    Queued,
    /// Its Turn is running.
    Running,
    /// Its Turn reached a clean answer: the summary is usable.
    Completed,
    /// Its Turn failed, partially or wholly.
    Failed,
    /// It ran past its timeout and was interrupted.
    TimedOut,
    /// The parent cancelled it while it ran.
    Cancelled,
    /// It was running when its manager went away; nothing controls it now.
    Detached,
    /// The parent closed it after it ended, or before it started.
    Closed,
}

impl SubagentStatus {
    /// Every status.
    pub const ALL: [SubagentStatus; 8] = [
        SubagentStatus::Queued,
        SubagentStatus::Running,
        SubagentStatus::Completed,
        SubagentStatus::Failed,
        SubagentStatus::TimedOut,
        SubagentStatus::Cancelled,
        SubagentStatus::Detached,
        SubagentStatus::Closed,
    ];

    /// The contract string, e.g. `timed_out`.
    pub fn as_str(self) -> &'static str {
        match self {
            SubagentStatus::Queued => "queued",
            SubagentStatus::Running => "running",
            SubagentStatus::Completed => "completed",
            SubagentStatus::Failed => "failed",
            SubagentStatus::TimedOut => "timed_out",
            SubagentStatus::Cancelled => "cancelled",
            SubagentStatus::Detached => "detached",
            SubagentStatus::Closed => "closed",
        }
    }

    /// Parses a contract string.
    pub fn parse(text: &str) -> Option<SubagentStatus> {
        SubagentStatus::ALL.into_iter().find(|status| status.as_str() == text)
    }

    /// Queued and running are the only non-terminal statuses: a wait must not report success
    /// merely because a child exists (ADR 0026).
    pub fn is_terminal(self) -> bool {
        !matches!(self, SubagentStatus::Queued | SubagentStatus::Running)
    }

    /// The transitions of pixir.md 7: queued to running, failed, detached or closed; running to
    /// an end; an ended child may be restarted or closed; detached and closed are final.
    pub fn can_become(self, next: SubagentStatus) -> bool {
        use SubagentStatus::{Cancelled, Closed, Completed, Detached, Failed, Queued, Running, TimedOut};
        match self {
            Queued => matches!(next, Running | Failed | Detached | Closed),
            Running => matches!(next, Completed | Failed | TimedOut | Cancelled | Detached),
            Completed | Failed | TimedOut | Cancelled => matches!(next, Running | Closed),
            Detached | Closed => false,
        }
    }
}

impl std::fmt::Display for SubagentStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `event` of a parent-visible `subagent_event` (pixir.md 7 "event / status pairs").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LifecycleEvent {
    /// Spawned.
    Queued,
    /// Its Turn started.
    Started,
    /// Completed.
    Finished,
    /// Failed.
    Failed,
    /// Timed out.
    TimedOut,
    /// Cancelled by the parent.
    Cancelled,
    /// Closed by the parent.
    Closed,
    /// Found running on restore with no live handle.
    Detached,
}

impl LifecycleEvent {
    /// The contract string, e.g. `finished`.
    pub fn as_str(self) -> &'static str {
        match self {
            LifecycleEvent::Queued => "queued",
            LifecycleEvent::Started => "started",
            LifecycleEvent::Finished => "finished",
            LifecycleEvent::Failed => "failed",
            LifecycleEvent::TimedOut => "timed_out",
            LifecycleEvent::Cancelled => "cancelled",
            LifecycleEvent::Closed => "closed",
            LifecycleEvent::Detached => "detached",
        }
    }

    /// Parses a contract string.
    pub fn parse(text: &str) -> Option<LifecycleEvent> {
        [
            LifecycleEvent::Queued,
            LifecycleEvent::Started,
            LifecycleEvent::Finished,
            LifecycleEvent::Failed,
            LifecycleEvent::TimedOut,
            LifecycleEvent::Cancelled,
            LifecycleEvent::Closed,
            LifecycleEvent::Detached,
        ]
        .into_iter()
        .find(|event| event.as_str() == text)
    }

    /// The status this event puts the child in.
    pub fn status(self) -> SubagentStatus {
        match self {
            LifecycleEvent::Queued => SubagentStatus::Queued,
            LifecycleEvent::Started => SubagentStatus::Running,
            LifecycleEvent::Finished => SubagentStatus::Completed,
            LifecycleEvent::Failed => SubagentStatus::Failed,
            LifecycleEvent::TimedOut => SubagentStatus::TimedOut,
            LifecycleEvent::Cancelled => SubagentStatus::Cancelled,
            LifecycleEvent::Closed => SubagentStatus::Closed,
            LifecycleEvent::Detached => SubagentStatus::Detached,
        }
    }

    /// The terminal summaries the parent's model sees in replay (pixir.md 3.2): `finished`,
    /// `failed`, `cancelled`, `timed_out`. Every other lifecycle event is audit only
    /// (SUB-REPLAY-TERMINAL-ONLY).
    pub fn is_replayed(self) -> bool {
        matches!(
            self,
            LifecycleEvent::Finished | LifecycleEvent::Failed | LifecycleEvent::Cancelled | LifecycleEvent::TimedOut
        )
    }
}

/// Whether a delegation tool's result says the delegated work did not fully complete: a
/// `wait_agent` outcome that is not complete, or a `run_workflow` result that is not `ok`.
/// The tool call itself succeeded; what it reports is partial.
pub fn reports_partial(result: &Data) -> bool {
    let flag = |holder: &str, key: &str| result.get(holder).and_then(|value| value.get(key)).and_then(Value::as_bool);
    flag("outcome", "complete") == Some(false) || flag("workflow", "ok") == Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions_follow_the_lifecycle_table() {
        use SubagentStatus::*;
        let allowed: Vec<(SubagentStatus, SubagentStatus)> = SubagentStatus::ALL
            .into_iter()
            .flat_map(|from| SubagentStatus::ALL.into_iter().map(move |to| (from, to)))
            .filter(|(from, to)| from.can_become(*to))
            .collect();
        assert_eq!(
            allowed,
            [
                (Queued, Running),
                (Queued, Failed),
                (Queued, Detached),
                (Queued, Closed),
                (Running, Completed),
                (Running, Failed),
                (Running, TimedOut),
                (Running, Cancelled),
                (Running, Detached),
                (Completed, Running),
                (Completed, Closed),
                (Failed, Running),
                (Failed, Closed),
                (TimedOut, Running),
                (TimedOut, Closed),
                (Cancelled, Running),
                (Cancelled, Closed),
            ]
        );
    }

    #[test]
    fn only_queued_and_running_are_live_and_only_four_events_replay() {
        let live: Vec<_> = SubagentStatus::ALL.into_iter().filter(|status| !status.is_terminal()).collect();
        assert_eq!(live, [SubagentStatus::Queued, SubagentStatus::Running]);
        let replayed: Vec<_> =
            ["queued", "started", "finished", "failed", "timed_out", "cancelled", "closed", "detached"]
                .into_iter()
                .filter(|name| LifecycleEvent::parse(name).is_some_and(LifecycleEvent::is_replayed))
                .collect();
        assert_eq!(replayed, ["finished", "failed", "timed_out", "cancelled"]);
    }

    #[test]
    fn names_match_serde() {
        for status in SubagentStatus::ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), serde_json::json!(status.as_str()));
            assert_eq!(SubagentStatus::parse(status.as_str()), Some(status));
        }
    }
}
