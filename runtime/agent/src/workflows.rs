//! Workflows: structural orchestration over Subagents through the `run_workflow` tool
//! (ADR 0014, ADR 0026 "Workflow terminal states"; pixir.md 8; WF-*).
//!
//! A run is a sequence of phases: validate the spec ([`spec`]); then, wave after wave, hold
//! the steps that can no longer start and plan the next wave from what is decided
//! ([`plan`]), start its steps as Subagents and wait for them or the workflow's deadline
//! (`wave.rs`), and decide each step's checkpoint ([`checkpoint`]; the decisions so far in
//! `decisions.rs`); when the deadline passed, what still runs is closed and the rest held;
//! last, the result ([`result`]): `ok: true` only for full completion. Every decision is a
//! durable `workflow_event` in the parent's Log first (`spine.rs`, WF-SPINE).

pub mod checkpoint;
#[cfg(feature = "runtime")]
mod decisions;
#[cfg(feature = "runtime")]
pub mod plan;
#[cfg(feature = "runtime")]
pub mod result;
#[cfg(feature = "runtime")]
pub mod spec;
#[cfg(feature = "runtime")]
mod spine;
#[cfg(feature = "runtime")]
mod wave;

#[cfg(feature = "runtime")]
mod run;
#[cfg(feature = "runtime")]
pub use run::definition;
#[cfg(feature = "runtime")]
pub(crate) use run::run_workflow;
