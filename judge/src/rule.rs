//! A contract rule as the judge runs it, for every family: the requirement its findings carry,
//! the further requirements the same reading checks, its name, what it is judged on, and its
//! check.

/// One contract rule. `Check` is how it reads its evidence (a Turn run's capture, or a
/// lifecycle run's records) and `Applies` what it is judged on (a Turn rule's Logs and run, a
/// lifecycle rule's family): the two families of rules differ only there.
#[derive(Debug, Clone, Copy)]
pub struct Invariant<Check, Applies> {
    /// The requirement id in docs/contract.md that its findings carry.
    pub id: &'static str,
    /// Further requirement ids this rule also checks, in part or from the same reading (its
    /// violations then name which).
    pub also: &'static [&'static str],
    /// The file (and rule) name.
    pub name: &'static str,
    /// What it is judged on.
    pub applies: Applies,
    /// Returns what it finds, with evidence.
    pub check: Check,
}
