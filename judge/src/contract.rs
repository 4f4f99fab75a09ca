//! The requirement registry, parsed from docs/contract.md: ids, tiers and what checks each.
//! Whether those checks exist is a repository lint's to say (`harness/tests/lints/coverage.rs`).
//!
//! Each row of the registry table is `| id | tier | requirement | source | checked by |`. The
//! "checked by" cell lists `invariant:<name>` (a file in `judge/invariants/`),
//! `scenario:<name>` (a scenario that lists the id in `covers`) or `test:<path>` (a file
//! holding unit tests), separated by commas.

use std::sync::LazyLock;

/// The registry this build of gauntlet judges by: docs/contract.md, compiled in, so a corpus
/// anywhere (without a docs/ folder of its own) is checked against the ids its judge knows.
pub const REGISTRY: &str = include_str!("../../docs/contract.md");

static REQUIREMENTS: LazyLock<Vec<Requirement>> = LazyLock::new(|| parse(REGISTRY).unwrap_or_default());

/// Every requirement of the compiled-in registry, in its order.
pub fn requirements() -> &'static [Requirement] {
    &REQUIREMENTS
}

/// Whether the compiled-in registry defines requirement `id` (a scenario's `covers` entry).
pub fn defines(id: &str) -> bool {
    tier_of(id).is_some()
}

/// The tier of requirement `id` in the compiled-in registry.
pub fn tier_of(id: &str) -> Option<Tier> {
    REQUIREMENTS.iter().find(|requirement| requirement.id == id).map(|requirement| requirement.tier)
}

/// Requirement `id` with its tier, `ACP-STOP-REASON (MUST)`, so a reader tells a lie against a
/// published sentence (MUST) from advice (SHOULD) and from the reference's own choice (MAY); an
/// id the registry does not define as it is.
pub fn with_tier(id: &str) -> String {
    match tier_of(id) {
        Some(tier) => format!("{id} ({})", tier.as_str()),
        None => id.to_owned(),
    }
}

/// How binding a requirement is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Required.
    Must,
    /// Recommended.
    Should,
    /// Optional: the reference's (or Pixir's) own choice, which no outside text asks of
    /// another implementation. A finding against it never makes a verdict nonconformant.
    May,
}

impl Tier {
    /// The word the contract writes it with.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Must => "MUST",
            Tier::Should => "SHOULD",
            Tier::May => "MAY",
        }
    }
}

/// One row of the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// E.g. `TURN-FAILED-EVIDENCE`.
    pub id: String,
    /// MUST, SHOULD or MAY.
    pub tier: Tier,
    /// The text it comes from, as the "source" column says it (a seed, ACP, JSON-RPC 2.0,
    /// pixir.md): what a report quotes so a reader sees which sentence a finding breaks.
    pub source: String,
    /// The checks named in the "checked by" column.
    pub checked_by: Vec<String>,
}

/// A registry row of docs/contract.md that is not `| id | tier | requirement | source | checked by |`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("docs/contract.md:{line}: a registry row needs 5 cells, found {cells}")]
pub struct RegistryError {
    /// The 1-based line of the row.
    pub line: usize,
    /// How many cells it has.
    pub cells: usize,
}

/// Parses the registry rows out of docs/contract.md; other lines are prose.
pub fn parse(text: &str) -> Result<Vec<Requirement>, RegistryError> {
    let mut requirements = Vec::new();
    for (idx, line) in text.lines().enumerate() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
        let Some(tier) = cells.get(1).and_then(|tier| match *tier {
            "MUST" => Some(Tier::Must),
            "SHOULD" => Some(Tier::Should),
            "MAY" => Some(Tier::May),
            _ => None,
        }) else {
            continue;
        };
        if cells.len() != 5 {
            return Err(RegistryError { line: idx + 1, cells: cells.len() });
        }
        let checked_by = cells[4]
            .split(',')
            .map(|check| check.trim().trim_matches('`').to_owned())
            .filter(|check| !check.is_empty())
            .collect();
        let (id, source) = (cells[0].trim_matches('`').to_owned(), cells[3].to_owned());
        requirements.push(Requirement { id, tier, source, checked_by });
    }
    Ok(requirements)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_in_registry_parses_and_defines_its_ids() {
        assert!(parse(REGISTRY).unwrap().len() > 50);
        assert!(defines("TURN-TERMINAL-EVIDENCE") && defines("TURN-RESTART-RECOVERY"));
        assert!(!defines("TURN-NO-SUCH-THING") && !defines(""));
    }

    #[test]
    fn a_row_with_the_wrong_cells_is_named_by_line() {
        let error = parse("# Registry\n\n| `A-ID` | MUST | a rule | seed |\n").unwrap_err();
        assert_eq!(error, RegistryError { line: 3, cells: 4 });
        assert_eq!(error.to_string(), "docs/contract.md:3: a registry row needs 5 cells, found 4");
    }
}
