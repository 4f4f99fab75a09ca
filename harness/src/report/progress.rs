//! Verdicts as they finish, for `gauntlet run` and `gauntlet check`.
//!
//! # Format
//!
//! - text, stdout not a terminal: one line per scenario as it finishes (scenario, terminal
//!   states, verdict, time), for logs and pipes;
//! - text on a terminal: the same lines, with one in-place line naming the scenario running
//!   now and how far the run is (`[12/120] turn/partial-then-error`), rewritten with `\r`;
//! - JSON (`--format json`): one object per line, each a verdict as it finishes (`scenario`,
//!   `kind`, `terminal_states`, `findings`, `elapsed_ms`, `skipped` when skipped), then one
//!   `{"summary": {...}}` object with the counts of each verdict kind, `total` and `elapsed_ms`.
//!   **Boundary:** scripts and CI dashboards read it.

use std::io::{IsTerminal, Write};

use serde_json::json;

use gauntlet_judge::verdict::Verdict;

/// How verdicts are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Lines for people.
    Text,
    /// One JSON object per verdict, then a summary object.
    Json,
}

/// Prints verdicts to stdout as they finish.
#[derive(Debug)]
pub struct Progress {
    format: Format,
    /// Whether an in-place line is shown (text on a terminal).
    live: bool,
    /// Width of the scenario column.
    width: usize,
}

impl Progress {
    /// A printer for `format`; `names` are the scenarios to come, for the column width.
    pub fn new<'a>(format: Format, names: impl IntoIterator<Item = &'a str>) -> Progress {
        let width = names.into_iter().map(|name| name.chars().count()).max().unwrap_or(0);
        Progress { format, live: format == Format::Text && std::io::stdout().is_terminal(), width }
    }

    /// Scenario `idx` of `total` starts.
    pub fn start(&self, idx: usize, total: usize, name: &str) {
        if self.live {
            print!("\r\x1b[2K[{}/{total}] {name}", idx + 1);
            let _ = std::io::stdout().flush();
        }
    }

    /// A scenario finished.
    pub fn finish(&self, verdict: &Verdict) {
        if self.live {
            print!("\r\x1b[2K");
        }
        match self.format {
            Format::Text => println!("{}", line(verdict, self.width)),
            Format::Json => println!("{}", gauntlet_agent::canonical::to_string(verdict)),
        }
        let _ = std::io::stdout().flush();
    }

    /// The run ended: the summary object for JSON (text summaries are the callers').
    pub fn end(&self, verdicts: &[Verdict]) {
        if self.format == Format::Json {
            println!("{}", gauntlet_agent::canonical::to_string(&summary(verdicts)));
        }
    }
}

/// One verdict as a line: scenario, terminal states, verdict, time.
pub fn line(verdict: &Verdict, width: usize) -> String {
    let states = states(&verdict.terminal_states);
    format!("{:<width$}  {:<13}  {} ms  {states}", verdict.scenario, verdict.kind.as_str(), verdict.elapsed_ms)
}

/// The runs of states shown on one line: three or more alike in a row as `N × state`, and past
/// [`STATE_RUNS`] runs a count of the rest, so a long conversation stays one readable line.
fn states(states: &[String]) -> String {
    let mut runs: Vec<(usize, &str)> = Vec::new();
    for state in states {
        match runs.last_mut() {
            Some((count, last)) if *last == state.as_str() => *count += 1,
            _ => runs.push((1, state)),
        }
    }
    let shown = runs.iter().take(STATE_RUNS).map(|&(count, state)| match count {
        1 => state.to_owned(),
        2 => format!("{state}, {state}"),
        _ => format!("{count} × {state}"),
    });
    let mut line = shown.collect::<Vec<_>>().join(", ");
    let rest: usize = runs.iter().skip(STATE_RUNS).map(|(count, _)| count).sum();
    if rest > 0 {
        line.push_str(&format!(", and {rest} more"));
    }
    if line.is_empty() { "-".to_owned() } else { line }
}

/// How many runs of states a line shows before it counts the rest.
const STATE_RUNS: usize = 8;

/// The final JSON object: counts of each verdict kind.
fn summary(verdicts: &[Verdict]) -> serde_json::Value {
    let elapsed_ms: u128 = verdicts.iter().map(|verdict| verdict.elapsed_ms).sum();
    let mut summary = json!({"total": verdicts.len(), "elapsed_ms": elapsed_ms});
    for (kind, count) in super::tally(verdicts) {
        summary[kind.as_str()] = json!(count);
    }
    json!({ "summary": summary })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_each_kind() {
        let verdicts = [Verdict::from_findings("a", Vec::new(), Vec::new()), Verdict::skipped("b", "no".into())];
        let summary = summary(&verdicts);
        assert_eq!(summary["summary"]["identical"], 1);
        assert_eq!(summary["summary"]["skipped"], 1);
        assert_eq!(summary["summary"]["total"], 2);
    }

    #[test]
    fn a_line_names_scenario_verdict_time_and_states() {
        let verdict = Verdict::from_findings("turn/x", vec!["completed".into()], Vec::new());
        assert_eq!(line(&verdict, 8), "turn/x    identical      0 ms  completed");
    }

    /// A 1,000-turn scenario prints a few words, not 1,000 (issue 31).
    #[test]
    fn long_runs_of_states_are_counted() {
        let strings = |list: &[&str]| list.iter().map(|state| (*state).to_owned()).collect::<Vec<_>>();
        assert_eq!(states(&[]), "-");
        assert_eq!(states(&strings(&["completed", "completed", "failed"])), "completed, completed, failed");
        let mut long = vec!["completed".to_owned(); 1000];
        long.push("interrupted".to_owned());
        assert_eq!(states(&long), "1000 × completed, interrupted");
        let alternating: Vec<String> = (0..20).map(|idx| ["completed", "failed"][idx % 2].to_owned()).collect();
        assert_eq!(
            states(&alternating),
            "completed, failed, completed, failed, completed, failed, completed, failed, and 12 more"
        );
    }
}
