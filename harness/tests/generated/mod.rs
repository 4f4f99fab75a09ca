//! Generated scenarios: a campaign (`gauntlet::campaign`) of seeded Turn scenarios on the
//! reference, which must satisfy every invariant and expectation on each one. A failure is
//! confirmed, shrunk to a smallest scenario and saved under `scenarios/regression/` (never in
//! CI), to be fixed, blessed and reviewed like any reproduced bug.
//!
//! `cargo test -p gauntlet --test conformance -- generated` runs a fixed seed;
//! `GAUNTLET_GENERATED_CASES=10000 GAUNTLET_GENERATED_SEED=7 cargo test --release -p gauntlet
//! --test conformance -- generated` runs as long as asked (or `gauntlet run --generate N`).

use std::path::Path;
use std::time::Duration;

use gauntlet::campaign::generator::Space;
use gauntlet::campaign::{self, Options};
use gauntlet::report;

fn number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|value| value.parse().ok()).unwrap_or(default)
}

/// The trial: a fixed seed and case count unless the environment asks for more.
pub fn trial(root: &Path) -> Result<(), String> {
    let options = Options {
        implementation: "reference".to_owned(),
        space: Space::ALL,
        count: usize::try_from(number("GAUNTLET_GENERATED_CASES", 96)).unwrap_or(usize::MAX),
        seed: number("GAUNTLET_GENERATED_SEED", 0),
        jobs: 1,
        shrink_budget: Duration::from_secs(120),
        // Like blessing, CI never writes into the corpus.
        write_to: std::env::var_os("CI").is_none().then(|| root.join("scenarios/regression")),
        command: "gauntlet run".to_owned(),
        shard: None,
        version: None,
        profile_sha256: gauntlet::origin::Fingerprint::of([]),
    };
    let campaign = campaign::run(&options, &campaign::on_reference, &mut |_, _, _, _| {});
    if campaign.is_clean() {
        return Ok(());
    }
    let shrunk: Vec<&str> = campaign.reproductions.iter().map(|reproduction| reproduction.toml.as_str()).collect();
    Err(format!(
        "generated scenarios break the contract on the reference:\n{}\n{}",
        report::campaign::text(&campaign),
        shrunk.join("\n")
    ))
}
