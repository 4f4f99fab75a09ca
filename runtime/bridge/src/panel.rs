//! Thread panels: the Telegram cards that show a thread's current turn, and the two ways a sync
//! reaches them (seed 003 "Decisions": "A global observer sync must not recreate a second
//! panel/New run for the same marked turn if a Telegram-origin panel already exists").
//!
//! codex-tg syncs a thread's panel from two places: right after Telegram input starts a turn
//! (`telegram_input`), and from the global observer that polls every thread
//! (`global_observer`). A thread has one current panel. A sync edits it in place; a sync that
//! finds none sends a new status card. What the reference models of codex-tg's
//! `syncThreadPanelToTarget` (`internal/daemon/observer_ui_v2_test.go`):
//!
//! - a Telegram-input sync adopts the thread's panel (its source becomes `telegram_input`);
//! - an edit that fails re-sends the status card as a new panel, except for a `telegram_input`
//!   panel of a turn marked as Telegram-origin, which a global-observer sync never recreates
//!   (`TestGlobalObserverDoesNotRecreateTelegramOriginPanelOnEditFailure`);
//! - a `[User]` notice repeats a prompt typed outside Telegram: only a global-observer sync sends
//!   one, once per prompt fingerprint, and never for a Telegram-origin turn, whose prompt the
//!   operator typed in Telegram already
//!   (`TestMarkedTelegramOriginTurnDoesNotDuplicateUserRequestNoticeOnObserverResync`).
//!
//! Panel ids are numbered in creation order after the highest id the config gives.

use serde::{Deserialize, Serialize};

use crate::interrupted::{Markers, TurnRef};

/// Where a sync comes from (upstream `model.PanelSource*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Right after Telegram input started or steered the turn.
    TelegramInput,
    /// The observer that polls every thread.
    GlobalObserver,
}

/// A thread's current panel (upstream `model.ThreadPanel`, the fields the rules read).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Panel {
    /// The panel id.
    pub id: u64,
    /// The thread it shows.
    pub thread_id: String,
    /// The sync that created or adopted it.
    pub source_mode: Source,
    /// The turn it shows.
    #[serde(default)]
    pub current_turn_id: String,
    /// The fingerprint of the last prompt a `[User]` notice repeated, or `""`.
    #[serde(default)]
    pub last_user_notice_fp: String,
}

/// A `panel_sync` step: one sync of the thread's panel to the snapshot it gives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PanelSync {
    /// Who syncs.
    pub source: Source,
    /// The thread.
    pub thread_id: String,
    /// The turn the snapshot shows.
    pub turn_id: String,
    /// The fingerprint of the turn's prompt, or `""` when the snapshot has none.
    #[serde(default)]
    pub user_message_fp: String,
    /// Telegram refuses the edit of the existing panel (upstream `sender.editErr`).
    #[serde(default)]
    pub edit_fails: bool,
}

/// One Telegram message a sync sends or edits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Message {
    /// `status_card` (the panel's Working or Final card) or `user_notice` (`[User]`).
    pub kind: MessageKind,
    /// `sent` (a new message) or `edited` (in place), or `edit_failed`.
    pub delivery: Delivery,
    /// The panel it belongs to.
    pub panel_id: u64,
}

/// What a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// The panel's status card.
    StatusCard,
    /// A `[User]` notice repeating the turn's prompt.
    UserNotice,
}

/// How a message reached Telegram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// A new message.
    Sent,
    /// An edit in place.
    Edited,
    /// An edit Telegram refused.
    EditFailed,
}

/// The thread panels the bridge holds.
#[derive(Clone, Debug, Default)]
pub struct Panels {
    panels: Vec<Panel>,
    next_id: u64,
}

impl Panels {
    /// The panels a config gives.
    pub fn new(panels: Vec<Panel>) -> Panels {
        let next_id = panels.iter().map(|panel| panel.id).max().unwrap_or(0).saturating_add(1);
        Panels { panels, next_id }
    }

    /// One sync: the messages it sends or edits, and the thread's panel afterwards.
    pub fn sync(&mut self, sync: &PanelSync, markers: &Markers) -> (Vec<Message>, Panel) {
        let turn = TurnRef { thread_id: sync.thread_id.clone(), turn_id: sync.turn_id.clone() };
        let marked = markers.telegram_origin.contains(&turn);
        let mut messages = Vec::new();
        let existing = self.panels.iter().position(|panel| panel.thread_id == sync.thread_id);
        let index = match existing {
            Some(index) if !sync.edit_fails => {
                let panel = &mut self.panels[index];
                messages.push(Message {
                    kind: MessageKind::StatusCard,
                    delivery: Delivery::Edited,
                    panel_id: panel.id,
                });
                if sync.source == Source::TelegramInput {
                    panel.source_mode = Source::TelegramInput;
                }
                index
            }
            Some(index) => {
                let panel = &self.panels[index];
                messages.push(Message {
                    kind: MessageKind::StatusCard,
                    delivery: Delivery::EditFailed,
                    panel_id: panel.id,
                });
                let telegram_origin_panel = panel.source_mode == Source::TelegramInput && marked;
                if telegram_origin_panel && sync.source == Source::GlobalObserver {
                    index
                } else {
                    self.panels.remove(index);
                    self.create(sync, &mut messages)
                }
            }
            None => self.create(sync, &mut messages),
        };
        let panel = &mut self.panels[index];
        panel.current_turn_id = sync.turn_id.clone();
        let notice = sync.source == Source::GlobalObserver
            && !marked
            && !sync.user_message_fp.is_empty()
            && sync.user_message_fp != panel.last_user_notice_fp;
        if notice {
            messages.push(Message { kind: MessageKind::UserNotice, delivery: Delivery::Sent, panel_id: panel.id });
            panel.last_user_notice_fp = sync.user_message_fp.clone();
        }
        (messages, panel.clone())
    }

    /// A new panel for the sync's thread, its status card sent; its index.
    fn create(&mut self, sync: &PanelSync, messages: &mut Vec<Message>) -> usize {
        let id = self.next_id;
        self.next_id = self.next_id.saturating_add(1);
        messages.push(Message { kind: MessageKind::StatusCard, delivery: Delivery::Sent, panel_id: id });
        self.panels.push(Panel {
            id,
            thread_id: sync.thread_id.clone(),
            source_mode: sync.source,
            current_turn_id: sync.turn_id.clone(),
            last_user_notice_fp: String::new(),
        });
        self.panels.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sync(source: Source, edit_fails: bool) -> PanelSync {
        PanelSync {
            source,
            thread_id: "thread".to_owned(),
            turn_id: "turn".to_owned(),
            user_message_fp: "fp".to_owned(),
            edit_fails,
        }
    }

    fn marked() -> Markers {
        let mut markers = Markers::default();
        markers.telegram_origin.insert(TurnRef { thread_id: "thread".to_owned(), turn_id: "turn".to_owned() });
        markers
    }

    #[test]
    fn an_observer_never_recreates_a_telegram_origin_panel() {
        let mut panels = Panels::new(Vec::new());
        let (sent, first) = panels.sync(&sync(Source::TelegramInput, false), &marked());
        assert_eq!(sent, [Message { kind: MessageKind::StatusCard, delivery: Delivery::Sent, panel_id: 1 }]);
        let (sent, after) = panels.sync(&sync(Source::GlobalObserver, true), &marked());
        assert_eq!(sent, [Message { kind: MessageKind::StatusCard, delivery: Delivery::EditFailed, panel_id: 1 }]);
        assert_eq!(after, first);
    }

    #[test]
    fn a_failed_edit_of_an_observer_panel_sends_a_new_card() {
        let mut panels = Panels::new(Vec::new());
        panels.sync(&sync(Source::GlobalObserver, false), &Markers::default());
        let (sent, after) = panels.sync(&sync(Source::GlobalObserver, true), &Markers::default());
        assert_eq!(sent[1], Message { kind: MessageKind::StatusCard, delivery: Delivery::Sent, panel_id: 2 });
        assert_eq!(after.id, 2);
    }

    #[test]
    fn a_user_notice_once_per_prompt_and_never_for_telegram_input() {
        let mut panels = Panels::new(Vec::new());
        let notices = |sent: &[Message]| sent.iter().filter(|m| m.kind == MessageKind::UserNotice).count();
        assert_eq!(notices(&panels.sync(&sync(Source::GlobalObserver, false), &Markers::default()).0), 1);
        assert_eq!(notices(&panels.sync(&sync(Source::GlobalObserver, false), &Markers::default()).0), 0);
        let mut panels = Panels::new(Vec::new());
        assert_eq!(notices(&panels.sync(&sync(Source::GlobalObserver, false), &marked()).0), 0);
        assert_eq!(notices(&panels.sync(&sync(Source::TelegramInput, false), &Markers::default()).0), 0);
    }
}
