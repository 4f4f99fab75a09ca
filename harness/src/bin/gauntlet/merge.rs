//! `gauntlet merge`: the reports of a run split across machines (`--shard K/N`), a check's or a
//! campaign's, as the one run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use gauntlet::check::{self, CheckRun};
use gauntlet::report::progress::Format;
use gauntlet::report::{self, CheckReport};
use gauntlet_judge::contract;

use crate::check::write;

/// `gauntlet merge`: the shards' `report.json` as the one run, its reports written to `dir`
/// and its summary printed; exit 0 when it failed only where expected, 1 otherwise.
pub fn merge(reports: &[PathBuf], dir: &Path) -> anyhow::Result<ExitCode> {
    let values = reports
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            serde_json::from_str::<serde_json::Value>(&text).with_context(|| format!("{} is not JSON", path.display()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    // A campaign's report (`campaign.json`) names its seed; a check's does not.
    if values.first().is_some_and(|value| value.get("seed").is_some()) {
        let shards = values
            .into_iter()
            .map(serde_json::from_value::<gauntlet::campaign::Campaign>)
            .collect::<Result<Vec<_>, _>>()
            .context("the reports are not all a campaign's campaign.json")?;
        let campaign = gauntlet::campaign::merge(shards)?;
        return crate::campaign::finish(&campaign, dir, None, Format::Text);
    }
    let mut runs = Vec::new();
    // The requirements the check judged (an adapter's, its family's only), as its report lists them.
    let mut judged: Option<Vec<String>> = None;
    for (path, value) in reports.iter().zip(values) {
        let ids = value["requirements"]
            .as_array()
            .map(|rows| rows.iter().filter_map(|row| row["id"].as_str().map(str::to_owned)).collect::<Vec<_>>());
        judged = judged.or(ids);
        let run: CheckRun = serde_json::from_value(value)
            .with_context(|| format!("{} is not the report.json of a gauntlet check", path.display()))?;
        runs.push(run);
    }
    let run = check::merge(runs)?;
    let judged = judged.unwrap_or_default();
    let mut requirements = contract::requirements().to_vec();
    requirements.retain(|requirement| judged.contains(&requirement.id));
    let report = CheckReport::new(&run, &requirements, run.logged);
    write(dir, &report::files(&report))?;
    print!("{}", report::counts(&report.verdicts));
    print!("\n{}", report::requirements::text(&report.rows));
    print!("{}", report::check_summary(&run, None, dir));
    let (passed, failed) = run.counts();
    println!("{passed} passed, {failed} failed");
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
