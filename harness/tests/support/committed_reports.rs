//! The committed reports (docs/reports/*.md) read against a corpus: each may lack scenarios
//! added since it was made (not checked yet, until `scripts/reports` runs the agents again),
//! but none lists a scenario the corpus does not have or lists them out of order. Shared by the
//! `corpus/reports-list-the-corpus` trial and the cli test that adds a scenario offline.

use std::path::{Path, PathBuf};

use gauntlet::check;
use gauntlet::report::coverage::{self, Coverage};
use gauntlet::report::markdown;
use gauntlet::run::Plan;

/// Each committed report of the corpus at `root` with the scenarios it has not checked yet
/// (`(report, scenarios)`); `Err` names every report that is out of date.
pub fn not_checked_yet(root: &Path) -> Result<Vec<(PathBuf, Vec<String>)>, String> {
    let plan = Plan { root: root.to_owned(), bless: false, shard: None };
    let dir = root.join("docs/reports");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|error| format!("{}: {error}", dir.display()))?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    paths.sort();
    let (mut notes, mut problems) = (Vec::new(), Vec::new());
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))?;
        let listed = markdown::scenarios_listed(&text);
        let coverage = Coverage::of(&listed, &check::scenarios_of(&plan, coverage::family_of(&listed)));
        if !coverage.holds() {
            problems.push(format!("{}: {}", path.display(), out_of_date(&coverage)));
        }
        notes.push((path, coverage.not_checked_yet));
    }
    if problems.is_empty() {
        Ok(notes)
    } else {
        Err(format!("reports out of date (scripts/reports):\n{}", problems.join("\n")))
    }
}

/// Why a report that does not hold is out of date.
fn out_of_date(coverage: &Coverage) -> String {
    let mut wrong = Vec::new();
    if !coverage.not_in_corpus.is_empty() {
        wrong.push(format!("lists scenarios the corpus does not have: {}", coverage.not_in_corpus.join(", ")));
    }
    if !coverage.in_order {
        wrong.push("lists its scenarios out of corpus order".to_owned());
    }
    wrong.join("; ")
}
