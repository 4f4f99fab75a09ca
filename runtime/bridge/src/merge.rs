//! The stored thread row and `mergeThreadMetadata` (ADR-012 "Metadata merge", part B.2.4).
//!
//! A fresh snapshot wins; the stored row only fills what the snapshot left empty, and an old
//! active turn is never restored once the snapshot's thread status is terminal.

use serde::{Deserialize, Serialize};

use crate::snapshot::Snapshot;
use crate::status::{is_terminal, looks_active};

/// The bridge's stored thread row (upstream SQLite `threads`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct ThreadRow {
    /// The thread id.
    pub id: String,
    /// The title.
    pub title: String,
    /// The project name (`ProjectNameFromCWD` when the row comes from a read).
    pub project: String,
    /// The working directory.
    pub cwd: String,
    /// The thread status text.
    pub status: String,
    /// The active turn, or `""`.
    pub active_turn_id: String,
}

impl ThreadRow {
    /// The row a snapshot describes, before any merge.
    pub fn from_snapshot(snapshot: &Snapshot) -> ThreadRow {
        ThreadRow {
            id: snapshot.thread_id.clone(),
            title: snapshot.thread_title.clone(),
            project: snapshot.thread_project.clone(),
            cwd: snapshot.thread_cwd.clone(),
            status: snapshot.thread_status.clone(),
            active_turn_id: snapshot.active_turn_id.clone(),
        }
    }

    /// `Thread.Label()`: `"[project] title"`, or the title alone without a project; the cwd plays
    /// no part (a row read from the app server always has a project).
    pub fn label(&self) -> String {
        let title = if self.title.trim().is_empty() { self.id.trim() } else { self.title.trim() };
        let project = self.project.trim();
        if project.is_empty() { title.to_owned() } else { format!("[{project}] {title}") }
    }

    /// `threadLooksActiveForInput` (and `ForPolling`, the same rule).
    pub fn looks_active(&self) -> bool {
        looks_active(&self.status, &self.active_turn_id)
    }
}

/// `mergeThreadMetadata(current, fallback)`: every empty field of `current` taken from `fallback`,
/// status before active turn, and the active turn only while the merged status is not terminal.
pub fn merge(current: &ThreadRow, fallback: &ThreadRow) -> ThreadRow {
    let fill = |mine: &str, theirs: &str| if mine.is_empty() { theirs.to_owned() } else { mine.to_owned() };
    let mut merged = ThreadRow {
        id: fill(&current.id, &fallback.id),
        title: fill(&current.title, &fallback.title),
        project: fill(&current.project, &fallback.project),
        cwd: fill(&current.cwd, &fallback.cwd),
        status: fill(&current.status, &fallback.status),
        active_turn_id: current.active_turn_id.clone(),
    };
    if merged.active_turn_id.is_empty() && !is_terminal(&merged.status) {
        merged.active_turn_id = fallback.active_turn_id.clone();
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: &str, active_turn_id: &str) -> ThreadRow {
        ThreadRow {
            id: "t".into(),
            status: status.into(),
            active_turn_id: active_turn_id.into(),
            ..ThreadRow::default()
        }
    }

    #[test]
    fn a_terminal_status_never_gets_the_stale_active_turn_back() {
        let merged = merge(&row("completed", ""), &row("active", "turn-stale"));
        assert_eq!((merged.status.as_str(), merged.active_turn_id.as_str()), ("completed", ""));
        assert!(!merged.looks_active());
    }

    #[test]
    fn an_idle_status_restores_the_stale_active_turn() {
        let merged = merge(&row("idle", ""), &row("active", "turn-stale"));
        assert_eq!(merged.active_turn_id, "turn-stale");
        assert!(merged.looks_active());
    }

    #[test]
    fn an_empty_status_is_filled_before_the_active_turn() {
        let merged = merge(&row("", ""), &row("active", "turn-stale"));
        assert_eq!((merged.status.as_str(), merged.active_turn_id.as_str()), ("active", "turn-stale"));
    }

    #[test]
    fn labels_name_the_project_and_never_the_cwd() {
        let thread = ThreadRow { title: "Fix".into(), project: "Codex".into(), ..row("", "") };
        assert_eq!(thread.label(), "[Codex] Fix");
        let thread = ThreadRow { title: "Fix".into(), cwd: "C:\\Users\\you\\Projects\\Codex".into(), ..row("", "") };
        assert_eq!(thread.label(), "Fix");
    }
}
