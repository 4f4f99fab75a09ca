//! What a Turn rule is, apart from the list of rules: what it reads ([`Scope`]), its type
//! ([`Invariant`]), what it returns ([`Violation`]) and how it runs into findings. Every rule of
//! `invariants/` imports these from here, so no rule reaches up to the registry.

use crate::judge::evidence::Evidence;
pub use crate::verdict::Violation;
use crate::verdict::{Finding, Layer};

/// What a rule reads, and so which Logs it can judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// One Log alone: judged on the root's and on every child's.
    Log,
    /// One Log and the Provider requests of its Session: judged on the root and every child.
    Replay,
    /// The whole run (the ACP transcript, the answers, the script): judged on the root.
    Run,
}

/// One contract rule over a Turn run: judged on the Logs and the run its [`Scope`] says.
pub type Invariant = crate::rule::Invariant<fn(&Evidence) -> Vec<Violation>, Scope>;

impl Invariant {
    /// Its findings on `evidence`, each carrying its requirement id.
    pub fn run(&self, evidence: &Evidence) -> Vec<Finding> {
        (self.check)(evidence)
            .into_iter()
            .map(|violation| {
                let id = violation.requirement.unwrap_or(self.id);
                debug_assert!(
                    id == self.id || self.also.contains(&id),
                    "{} reports {id}, not in its `also`",
                    self.name
                );
                Finding::new(Layer::Invariant, Some(id), violation.message).at(violation.at)
            })
            .collect()
    }
}
