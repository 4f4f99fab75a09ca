//! `gauntlet init`: a profile draft for an agent, from what it declares at `initialize`.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use gauntlet::probe;
use gauntlet_judge::scenario::AcpVersion;

/// How long the agent may take to answer `initialize` (agents on Node.js start slowly).
const PATIENCE: Duration = Duration::from_secs(30);

/// Starts `agent` in a loopback-only network namespace, asks it `initialize`, and writes the
/// draft to `out`.
pub fn init(out: &Path, agent: &[String]) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(!out.exists(), "{} exists already: the draft never writes over a profile", out.display());
    let (program, args) = agent.split_first().context("init needs the agent's command after `--`")?;
    crate::check::isolate("the agent", true);
    let result = probe::initialize(program, args, PATIENCE, AcpVersion::V1)?;
    // A second start asks for v2: an agent that answers in 2 speaks it (one that does not may
    // refuse, or answer 1, its latest).
    let v2 = probe::initialize(program, args, PATIENCE, AcpVersion::V2);
    let speaks_v2 = v2.is_ok_and(|result| result.get("protocolVersion") == Some(&serde_json::json!(2)));
    let draft = probe::draft(program, args, &result, speaks_v2);
    std::fs::write(out, draft).with_context(|| format!("writing {}", out.display()))?;
    println!(
        "wrote {}: fill in the lines marked FILL, then `gauntlet check --impl {} --probe`",
        out.display(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}
