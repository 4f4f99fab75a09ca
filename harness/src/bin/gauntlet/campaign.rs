//! `gauntlet run --generate N` and `gauntlet check --impl PROFILE --generate N`: a campaign of
//! generated scenarios against the reference or an agent; its report is printed and written
//! beside the check reports, its reproductions into `scenarios/regression/`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use gauntlet::campaign::generator::Space;
use gauntlet::campaign::{self, Campaign, Options};
use gauntlet::cli::{CampaignArgs, CheckArgs, Cli};
use gauntlet::origin::Fingerprint;
use gauntlet::profile::{self, Network};
use gauntlet::report::campaign as campaign_report;
use gauntlet::report::progress::{Format, Progress};
use gauntlet_judge::verdict::Verdict;

use crate::check::isolate;

/// A campaign on the reference runtime: every scenario must hold. Its reports go to `dir`, else
/// into the corpus's `target/gauntlet/reference`.
pub fn on_reference(
    cli: &Cli,
    args: &CampaignArgs,
    count: usize,
    format: Format,
    dir: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let plan = crate::corpus::plan(cli, false)?;
    crate::check::listen();
    let mut options = options(args, count, "reference", Space::ALL, 1, &plan.root, "gauntlet run".to_owned());
    options.shard = cli.shard;
    let campaign = play(&options, format, &campaign::on_reference);
    let dir = dir.map_or_else(|| plan.root.join("target/gauntlet/reference"), Path::to_owned);
    finish(&campaign, &dir, None, format)
}

/// A campaign on the agent of `check`'s profile.
pub fn on_agent(cli: &Cli, check: &CheckArgs, count: usize) -> anyhow::Result<ExitCode> {
    let path = check.implementation.as_deref().context("a campaign needs --impl PROFILE (adapters have none)")?;
    anyhow::ensure!(check.filters.is_empty(), "a campaign plays generated scenarios: it takes no filters");
    let plan = crate::corpus::plan(cli, false)?;
    let profile = profile::load(path)?;
    profile.startable()?;
    isolate(&profile.name, profile.network == Network::Loopback && !check.no_isolation);
    crate::check::listen();
    let jobs = crate::check::jobs(check);
    let command = format!("gauntlet check --impl {}", path.display());
    let mut options =
        options(&check.campaign, count, &profile.name, campaign::space_of(&profile), jobs, &plan.root, command);
    options.shard = cli.shard;
    options.version = profile.probe_version().version;
    options.profile_sha256 = Fingerprint::of([profile.source.as_bytes()]);
    let driver = profile.external();
    let campaign = play(&options, check.format, &campaign::on_agent(&profile, &driver));
    let dir = check.report_dir.clone().unwrap_or_else(|| plan.root.join("target/gauntlet").join(&profile.name));
    finish(&campaign, &dir, check.markdown.as_deref(), check.format)
}

fn options(
    args: &CampaignArgs,
    count: usize,
    implementation: &str,
    space: Space,
    jobs: usize,
    root: &Path,
    command: String,
) -> Options {
    let write_to = match &args.reproductions {
        Some(dir) if dir == Path::new("-") => None,
        Some(dir) => Some(dir.clone()),
        None => Some(root.join("scenarios/regression")),
    };
    Options {
        implementation: implementation.to_owned(),
        space,
        count,
        seed: args.seed,
        jobs,
        shrink_budget: Duration::from_secs(args.shrink_secs),
        write_to,
        command,
        shard: None,
        version: None,
        // The reference is played with nothing but itself; an agent's campaign sets its profile.
        profile_sha256: Fingerprint::of([implementation.as_bytes()]),
    }
}

fn play(options: &Options, format: Format, play: &campaign::Play<'_>) -> Campaign {
    let names: Vec<String> = (0..options.count).map(|index| campaign::name(options.seed, index)).collect();
    let printer = Progress::new(format, names.iter().map(String::as_str));
    let mut progress = |idx: usize, total: usize, name: &str, verdict: Option<&Verdict>| match verdict {
        None => printer.start(idx, total, name),
        Some(verdict) => printer.finish(verdict),
    };
    campaign::run(options, play, &mut progress)
}

/// Writes `campaign.json` and `campaign.md` into `dir` (and the Markdown to `markdown`), prints
/// the report; exit 0 when the campaign is clean, 1 otherwise.
pub fn finish(campaign: &Campaign, dir: &Path, markdown: Option<&Path>, format: Format) -> anyhow::Result<ExitCode> {
    let json = serde_json::to_string_pretty(campaign)?;
    let text = campaign_report::markdown(campaign);
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, body) in [("campaign.json", &json), ("campaign.md", &text)] {
        std::fs::write(dir.join(name), body).with_context(|| format!("writing {}/{name}", dir.display()))?;
    }
    if let Some(path) = markdown {
        std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    match format {
        Format::Json => println!("{}", serde_json::to_string(campaign)?),
        Format::Text => print!("\n{}\nreports in {}\n", campaign_report::text(campaign), PathBuf::from(dir).display()),
    }
    Ok(if campaign.is_clean() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
