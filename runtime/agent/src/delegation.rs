//! Delegation as a [`ToolSet`]: `spawn_agent`, `wait_agent`, `close_agent`, `delegate` ([`subagents`])
//! and `run_workflow` ([`workflows`]) over one [`Subagents`] manager, registered into a
//! delegating Session's [`Toolbox`](crate::tools::Toolbox). Child Sessions get the workspace
//! tools only, so children never delegate (pixir.md 7 `max_depth`).
//!
//! [`subagents`]: crate::subagents
//! [`workflows`]: crate::workflows

use serde_json::Value;

use crate::log::LogError;
use crate::session::Session;
use crate::subagents::{self, Subagents};
use crate::tools::{ToolFuture, ToolSet};
use crate::workflows;

/// The delegation tools of one parent Session.
#[derive(Debug)]
pub struct Delegation {
    subagents: Subagents,
    /// Whether the synchronous `delegate` is offered too.
    delegate: bool,
}

impl Delegation {
    /// Delegation for an opened Session: its children restored from the Log, and any that was
    /// queued or running recorded `detached`, before anything else happens (SUB-DETACHED).
    /// At most `max_subagents` children run at once; more wait `queued`.
    pub fn open(session: &mut Session, max_subagents: usize) -> Result<Delegation, LogError> {
        let (subagents, detached) = Subagents::restore(session.history(), max_subagents);
        for payload in detached {
            session.record(payload)?;
        }
        Ok(Delegation { subagents, delegate: false })
    }

    /// Offers the synchronous `delegate` too, when `delegate`.
    #[must_use]
    pub fn with_delegate(self, delegate: bool) -> Delegation {
        Delegation { delegate, ..self }
    }
}

impl ToolSet for Delegation {
    fn definitions(&self) -> Vec<Value> {
        let mut definitions = subagents::definitions();
        if self.delegate {
            definitions.push(subagents::delegate_definition());
        }
        definitions.push(workflows::definition());
        definitions
    }

    fn execute<'a>(&'a mut self, session: &'a mut Session, name: &'a str, args: &'a Value) -> Option<ToolFuture<'a>> {
        let subagents = &mut self.subagents;
        Some(match name {
            "spawn_agent" => Box::pin(async move { subagents.spawn_agent(session, args) }),
            "delegate" if self.delegate => Box::pin(subagents.delegate(session, args)),
            "wait_agent" => Box::pin(subagents.wait_agent(session, args)),
            "close_agent" => Box::pin(subagents.close_agent(session, args)),
            "run_workflow" => Box::pin(workflows::run_workflow(subagents, session, args)),
            _ => return None,
        })
    }

    /// Records what children reported since the last look: the parent writes `subagent_event`s
    /// only when a Turn starts, before a Provider call, or while a delegation call is pending.
    fn catch_up(&mut self, session: &mut Session) -> Result<(), LogError> {
        self.subagents.drain(session)
    }
}
