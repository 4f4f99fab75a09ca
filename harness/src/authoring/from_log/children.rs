//! The `[children.<route>]` scripts of a scenario written from a Log: each child Session that
//! started in the reproduced process is scripted from its own Log (`children/<id>.ndjson` beside
//! the root Log, as [`gauntlet_judge::log_file::read`] finds them), its one Turn drafted as a root Turn
//! is; `expect` and `reason` are its last `subagent_event` in the root Log (SUB-EVENT-FIELDS).
//!
//! What the Logs cannot give is said, never guessed: a child that ran but whose Log is missing
//! gets no script and a note. `max_subagents` is read from a spawn the runtime answered
//! `queued` while others ran (SUB-LIFECYCLE).

use std::collections::BTreeSet;

use gauntlet_agent::EventType;
use gauntlet_agent::event::{LifecycleEvent, SubagentStatus};
use toml_edit::InlineTable;

use super::{Event, draft_turn, events, turn_starts};
use gauntlet_judge::audit::{self, Audit};
use gauntlet_judge::log_file::LogFile;
use gauntlet_judge::scenario::Config;

/// One child Session's script being written.
#[derive(Debug)]
pub(super) struct ChildDraft {
    /// The child Session's id: its route.
    pub(super) route: String,
    pub(super) expect: Option<SubagentStatus>,
    pub(super) reason: Option<String>,
    pub(super) responses: Vec<InlineTable>,
    /// Why its script is missing or incomplete, when it is.
    pub(super) note: Option<String>,
}

/// The scripts of the children of `file` (whose readable lines are `all`, the reproduced process
/// beginning at `all[resume]`), in first-seen order; sets `config.max_subagents` and adds to
/// `notes`.
pub(super) fn scripts(
    file: &LogFile,
    all: &[Event],
    resume: usize,
    audited: &Audit,
    config: &mut Config,
    notes: &mut Vec<String>,
) -> Vec<ChildDraft> {
    if let Some(limit) = slot_limit(&all[resume..]) {
        config.max_subagents = limit;
    }
    let started_here: BTreeSet<&str> = all[resume..]
        .iter()
        .filter_map(|event| event.line.subagent_event())
        .filter(|event| event.lifecycle_event() == Some(LifecycleEvent::Started))
        .filter_map(|event| event.child_session_id)
        .collect();
    let mut drafts = Vec::new();
    for subagent in &audited.subagents {
        let route = subagent.child_session_id.clone();
        let mut draft = ChildDraft {
            route,
            expect: subagent.status,
            reason: subagent.reason.clone(),
            responses: Vec::new(),
            note: None,
        };
        if started_here.contains(draft.route.as_str()) {
            match file.children.get(&draft.route) {
                Some(child) => draft.note = script(child, &mut draft.responses, config),
                None => {
                    draft.note = Some(format!(
                        "child Session `{}` ran, but its Log (children/{0}.ndjson or {0}.ndjson beside the root Log) was not found: its answers cannot be known, so it has no script; add its `respond` by hand",
                        draft.route
                    ));
                }
            }
        }
        notes.extend(draft.note.iter().cloned());
        drafts.push(draft);
    }
    drafts
}

/// Drafts a child's responses from its Log; a note when the Log holds more than one Turn.
fn script(child: &LogFile, responses: &mut Vec<InlineTable>, config: &mut Config) -> Option<String> {
    let events = events(&child.lines);
    let starts = turn_starts(&events);
    let &first = starts.first()?;
    let end = starts.get(1).copied().unwrap_or(events.len());
    let audited = audit::audit(&child.lines);
    let mut model = config.model.clone();
    let turn = draft_turn(&events[first], &events[first + 1..end], audited.turns.first(), config, &mut model);
    responses.extend(turn.responses);
    (starts.len() > 1).then(|| {
        format!(
            "child Log {} holds {} Turns; a child script plays one, so only the first is scripted",
            child.path.display(),
            starts.len()
        )
    })
}

/// The number of children that were running when a `spawn_agent` was answered `queued`: the
/// runtime's slot limit, when the Log shows it reached.
fn slot_limit(events: &[Event]) -> Option<usize> {
    let mut running: BTreeSet<&str> = BTreeSet::new();
    let mut limit: Option<usize> = None;
    for event in events {
        let line = &event.line;
        match line.kind.known() {
            Some(EventType::SubagentEvent) => {
                let Some(event) = line.subagent_event() else { continue };
                let Some(id) = event.child_session_id else { continue };
                match event.subagent_status() {
                    Some(SubagentStatus::Running) => {
                        running.insert(id);
                    }
                    Some(status) if status.is_terminal() => {
                        running.remove(id);
                    }
                    _ => {}
                }
            }
            Some(EventType::ToolResult)
                if line
                    .tool_result()
                    .and_then(|result| result.subagent?.get("status")?.as_str())
                    .and_then(SubagentStatus::parse)
                    == Some(SubagentStatus::Queued) =>
            {
                let now = running.len().max(1);
                limit = Some(limit.map_or(now, |known| known.min(now)));
            }
            _ => {}
        }
    }
    limit
}
