//! The readings of a capture that several rules share, each over the Evidence and split by what
//! it reads: the Log ([`log`]), the Provider requests ([`requests`]), the ACP transcripts ([`acp`]) and
//! the tool results an agent reported ([`tool_results`]). Each rule imports what it reads; none of them judges, and none imports a rule.
//! The transcript's pure readings, which the Evidence itself caches, stand below it in
//! [`crate::judge::transcript`].

pub(crate) mod acp;
pub(crate) mod log;
pub(crate) mod requests;
pub(crate) mod tool_results;
