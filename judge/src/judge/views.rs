//! The readings of a capture that several rules share, each over the Evidence and split by what
//! it reads: the Log ([`log`], a workflow's graph in [`workflow_graph`]), the Provider requests
//! ([`requests`]), the ACP transcripts ([`acp`], the load replay in [`load_replay`]), and what
//! several of them say together: the tool results an agent reported ([`tool_results`]), the
//! partial texts ([`partials`]) and the failure texts ([`diagnostics`]) of a run. Each rule
//! imports what it reads; none of them judges, and none imports a rule: a helper two rules
//! share lives here.
//! The transcript's pure readings, which the Evidence itself caches, stand below it in
//! [`crate::judge::transcript`].

pub(crate) mod acp;
pub(crate) mod diagnostics;
pub(crate) mod load_replay;
pub(crate) mod log;
pub(crate) mod partials;
pub(crate) mod requests;
pub(crate) mod said;
pub(crate) mod tool_results;
pub(crate) mod workflow_graph;
