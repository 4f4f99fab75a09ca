//! Drivers run a Scenario against an implementation and return a [`Capture`].
//!
//! A Driver never fails: whatever goes wrong in the implementation (a crash, a hang, a Log it
//! cannot write) is recorded in [`Capture::faults`] and judged like any other evidence.

pub mod acp_client;
pub mod conversation;
pub mod reference;

use crate::capture::Capture;
use crate::scenario::Scenario;

/// Runs scenarios against one implementation.
pub trait Driver: Sync {
    /// A short name for reports, e.g. `reference`.
    fn name(&self) -> &str;
    /// Runs one scenario to completion.
    fn drive(&self, scenario: &Scenario) -> Capture;
}
