//! Running scenarios: load, drive, golden, judge. Both the CLI and `cargo test` call this, so
//! they cannot disagree.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::driver::Driver;
use crate::verdict::{Finding, Layer, Verdict};
use crate::{golden, judge, scenario};

/// Where the corpus lives and how to treat goldens.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The folder holding `scenarios/` and `golden/`.
    pub root: PathBuf,
    /// Write pending golden files for mismatches.
    pub bless: bool,
}

impl Plan {
    /// The repository root (the workspace above this crate), blessing off.
    pub fn repository() -> Plan {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().map_or_else(|| PathBuf::from("."), Path::to_owned);
        Plan { root, bless: false }
    }

    /// The scenarios folder.
    pub fn scenarios(&self) -> PathBuf {
        self.root.join("scenarios")
    }

    /// The golden folder.
    pub fn golden(&self) -> PathBuf {
        self.root.join("golden")
    }
}

/// Every scenario as `(name, path)`, sorted by name; the name is the path under `scenarios/`
/// without `.toml`, e.g. `turn/partial-then-error`.
pub fn scenario_names(plan: &Plan) -> Vec<(String, PathBuf)> {
    let base = plan.scenarios();
    let mut found = Vec::new();
    golden::walk(&base, &mut |path| {
        if path.extension().is_some_and(|ext| ext == "toml")
            && let Ok(relative) = path.strip_prefix(&base)
        {
            let name = relative.with_extension("").to_string_lossy().replace('\\', "/");
            found.push((name, path.to_owned()));
        }
    });
    found.sort();
    found
}

/// Runs one scenario and judges it.
pub fn run_scenario(plan: &Plan, driver: &dyn Driver, name: &str, path: &Path) -> Verdict {
    let started = Instant::now();
    let mut verdict = match scenario::load(path) {
        Err(error) => {
            Verdict::from_findings(name, Vec::new(), vec![Finding::new(Layer::Fault, None, error.to_string())])
        }
        Ok(scenario) => {
            let capture = driver.drive(&scenario);
            let golden = golden::compare(&plan.golden().join(name), &capture.golden_files(), plan.bless);
            judge::judge(name, &scenario, &capture, golden)
        }
    };
    verdict.elapsed_ms = started.elapsed().as_millis();
    verdict
}
