//! A campaign's report: per requirement, how many generated scenarios exercised it and how
//! many failed it, with the reproduction shrunk for each failing one; then what was flaky.
//! The same content for the console and for Markdown (`campaign.md`); `campaign.json` is the
//! [`Campaign`] itself.

use std::fmt::Write as _;

use gauntlet_judge::contract::with_tier;

use crate::campaign::{Campaign, Reproduction};

/// The console report.
pub fn text(campaign: &Campaign) -> String {
    let mut out = format!("{}\n", headline(campaign));
    let width = campaign.requirements.keys().map(|id| with_tier(id).len()).max().unwrap_or(0);
    for (requirement, tally) in &campaign.requirements {
        let named = with_tier(requirement);
        let _ = write!(out, "  {named:<width$}  {:>4} exercised  {:>4} failed", tally.exercised, tally.failed);
        if let Some(reproduction) = reproduction_of(campaign, requirement) {
            let _ = write!(out, "  {}", where_it_is(reproduction));
        }
        out.push('\n');
    }
    for reproduction in &campaign.reproductions {
        let _ = writeln!(out, "\n{}: {}", with_tier(&reproduction.requirement), reproduction.finding);
        let _ = writeln!(out, "  {}", where_it_is(reproduction));
    }
    for flaky in &campaign.flaky {
        let _ = writeln!(
            out,
            "\nflaky: {} failed on scenario {} once, then held: {}",
            with_tier(&flaky.requirement),
            flaky.scenario,
            flaky.finding
        );
    }
    out
}

/// The Markdown report.
pub fn markdown(campaign: &Campaign) -> String {
    let mut out = format!("# Campaign: {}\n\n{}\n\n", campaign.implementation, headline(campaign));
    out.push_str("| requirement | exercised | failed | reproduction |\n| --- | ---: | ---: | --- |\n");
    for (requirement, tally) in &campaign.requirements {
        let reproduction = reproduction_of(campaign, requirement).map_or_else(String::new, where_it_is);
        let _ =
            writeln!(out, "| {} | {} | {} | {reproduction} |", with_tier(requirement), tally.exercised, tally.failed);
    }
    for reproduction in &campaign.reproductions {
        let _ = write!(
            out,
            "\n## {}\n\n{}\n\n{}\n\n```toml\n{}```\n",
            with_tier(&reproduction.requirement),
            quote(&reproduction.finding),
            where_it_is(reproduction),
            reproduction.toml
        );
    }
    if !campaign.flaky.is_empty() {
        out.push_str("\n## Flaky\n\nFailures that did not come again when their scenario was played a second time; nothing was shrunk from them.\n\n");
        for flaky in &campaign.flaky {
            let _ =
                writeln!(out, "- {} on scenario {}: {}", with_tier(&flaky.requirement), flaky.scenario, flaky.finding);
        }
    }
    out
}

fn headline(campaign: &Campaign) -> String {
    let interrupted = match campaign.interrupted {
        0 => String::new(),
        n => format!(" ({n} not played: gauntlet was stopped)"),
    };
    format!(
        "{} generated scenarios{interrupted} (seed {}) on {}: {} failed, {} could not be played; {} requirements failed, {} flaky; {:.1} s",
        campaign.count,
        campaign.seed,
        campaign.implementation,
        campaign.failed,
        campaign.errors,
        campaign.reproductions.len(),
        campaign.flaky.len(),
        campaign.elapsed_ms as f64 / 1000.0,
    )
}

fn reproduction_of<'a>(campaign: &'a Campaign, requirement: &str) -> Option<&'a Reproduction> {
    campaign.reproductions.iter().find(|reproduction| reproduction.requirement == requirement)
}

/// Where a reproduction is and how it was found.
fn where_it_is(reproduction: &Reproduction) -> String {
    let (turns, from) = reproduction.turns;
    let shrunk = format!(
        "from scenario {}, {turns} of its {from} turns, {} shrink steps",
        reproduction.scenario, reproduction.shrink_steps
    );
    match &reproduction.path {
        Some(path) => format!("{path} ({shrunk})"),
        None => format!("not written ({shrunk})"),
    }
}

/// `text` as a Markdown block quote.
fn quote(text: &str) -> String {
    text.lines().map(|line| format!("> {line}")).collect::<Vec<_>>().join("\n")
}
