//! JUnit XML for CI systems: one test case per scenario. A known failure (listed in the
//! expectations file) passes with a note; an unexpected failure or a stale expectation fails,
//! and an expectation naming no scenario of the corpus is a failing test case of its own.

use std::fmt::Write as _;

use super::CheckReport;
use crate::known_failures::Staleness;
use gauntlet_judge::verdict::VerdictKind;

/// The run as a JUnit XML document.
pub fn render(report: &CheckReport<'_>) -> String {
    let run = report.run;
    let failing = run.failing();
    // JUnit has no word for a test that was stopped: an interrupted scenario is skipped, with why.
    let not_run = |kind| matches!(kind, VerdictKind::Skipped | VerdictKind::Interrupted);
    let skipped = run.scenarios.iter().filter(|checked| not_run(checked.verdict.kind)).count();
    let unknown: Vec<_> = run.comparison.stale.iter().filter(|stale| stale.why == Staleness::NotInCorpus).collect();
    let total_ms: u128 = run.scenarios.iter().map(|checked| checked.verdict.elapsed_ms).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuite name=\"gauntlet {}\" tests=\"{}\" failures=\"{}\" skipped=\"{skipped}\" time=\"{}\">",
        escape(&run.implementation),
        run.scenarios.len() + unknown.len(),
        failing.len(),
        seconds(total_ms)
    );
    for checked in &run.scenarios {
        let verdict = &checked.verdict;
        let (family, _) = verdict.scenario.split_once('/').unwrap_or(("", &verdict.scenario));
        let _ = write!(
            out,
            "  <testcase classname=\"{}\" name=\"{}\" time=\"{}\">",
            escape(family),
            escape(&verdict.scenario),
            seconds(verdict.elapsed_ms)
        );
        let findings: Vec<String> = verdict.findings.iter().map(ToString::to_string).collect();
        if let Some(why) = &verdict.skipped {
            let _ = write!(out, "<skipped message=\"{}\"/>", escape(why));
        } else if failing.contains(&verdict.scenario.as_str()) {
            let stale: Vec<String> = run
                .comparison
                .stale
                .iter()
                .filter(|stale| stale.entry.scenario == verdict.scenario)
                .map(|stale| format!("stale expectation ({}): {}", stale.why.describe(), stale.entry.reason))
                .collect();
            let message = format!("{} ({})", verdict.kind.as_str(), stale.first().map_or("unexpected", |_| "stale"));
            let body = stale.into_iter().chain(findings).collect::<Vec<_>>().join("\n");
            let _ = write!(out, "<failure message=\"{}\">{}</failure>", escape(&message), escape(&body));
        } else if !findings.is_empty() {
            let _ = write!(out, "<system-out>{}</system-out>", escape(&findings.join("\n")));
        }
        out.push_str("</testcase>\n");
    }
    for stale in unknown {
        let _ = writeln!(
            out,
            "  <testcase classname=\"expectations\" name=\"{}\" time=\"0.000\"><failure message=\"stale expectation\">{}: {}</failure></testcase>",
            escape(&stale.entry.scenario),
            stale.why.describe(),
            escape(&stale.entry.reason)
        );
    }
    // The run's warnings (a mask that matched nothing, a model never passed), where a CI shows
    // a suite's output.
    if !run.warnings.is_empty() {
        let warnings: Vec<String> = run.warnings.iter().map(|warning| format!("warning: {warning}")).collect();
        let _ = writeln!(out, "  <system-out>{}</system-out>", escape(&warnings.join("\n")));
    }
    out.push_str("</testsuite>\n");
    out
}

fn seconds(ms: u128) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// Escapes text for XML attributes and content; drops characters XML 1.0 cannot carry.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c < ' ' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{CheckRun, Checked};
    use crate::known_failures::{Comparison, Failure, KnownFailure, Stale};
    use gauntlet_judge::verdict::{Finding, Layer, Verdict};

    #[test]
    fn unexpected_failures_fail_and_text_is_escaped() {
        let bad = Verdict::from_findings(
            "turn/a",
            vec![],
            vec![Finding::new(Layer::Invariant, Some("R"), "<end_turn> & \u{1}")],
        );
        let run = CheckRun {
            implementation: "x".into(),
            origin: crate::origin::Origin::whole(None),
            isolated: true,
            containment: crate::driver::containment::Method::PidNamespace,
            version_leftovers: Vec::new(),
            scenarios: vec![Checked::of(bad), Checked::of(Verdict::skipped("acp/b", "lacks cancel".into()))],
            warnings: Vec::new(),
            comparison: Comparison {
                unexpected: vec![Failure {
                    scenario: "turn/a".into(),
                    requirement: Some("R".into()),
                    also: Vec::new(),
                    message: "m".into(),
                }],
                stale: vec![Stale {
                    entry: KnownFailure {
                        scenario: "turn/gone".into(),
                        requirement: None,
                        reason: "r".into(),
                        flaky: false,
                    },
                    why: Staleness::NotInCorpus,
                }],
                ..Comparison::default()
            },
            unmatched_masks: Vec::new(),
            logged: false,
        };
        let xml = render(&CheckReport::new(&run, &[], true));
        assert!(xml.contains("tests=\"3\" failures=\"2\" skipped=\"1\""), "{xml}");
        assert!(xml.contains("name=\"turn/gone\" time=\"0.000\"><failure message=\"stale expectation\">names no scenario of the corpus (removed, renamed or misspelt): r</failure>"), "{xml}");
        assert!(
            xml.contains(
                "<failure message=\"nonconformant (unexpected)\">[invariant R] &lt;end_turn&gt; &amp; </failure>"
            ),
            "{xml}"
        );
        assert!(xml.contains("<skipped message=\"lacks cancel\"/>"), "{xml}");
    }
}
