//! JSON Schemas of the strict TOML files, generated from the serde types that load them, so an
//! editor completes and checks scenario, profile and expectations files (docs/schema/).
//!
//! The committed files are compared with [`all`] by a test (`schemas_are_generated_and_every_file_validates`
//! in `harness/tests/cli.rs`); `GAUNTLET_BLESS=1` rewrites them. Lifecycle scenarios (`kind =
//! "monitor.*"`, `"bridge.*"`) are not covered yet: their steps are runtime types of the monitor
//! and bridge.

use schemars::JsonSchema;

use crate::known_failures::KnownFailures;
use crate::profile::Profile;
use crate::scenario::Scenario;

/// Every schema, as `(file name under docs/schema/, pretty JSON with a final newline)`.
pub fn all() -> Vec<(&'static str, String)> {
    vec![
        ("scenario.schema.json", generate::<Scenario>("A gauntlet Turn scenario (docs/scenario-format.md)")),
        ("profile.schema.json", generate::<Profile>("A gauntlet implementation profile (docs/implementations.md)")),
        (
            "expected.schema.json",
            generate::<KnownFailures>("An implementation's known failures (<profile>.expected.toml)"),
        ),
    ]
}

fn generate<T: JsonSchema>(description: &str) -> String {
    let mut schema = schemars::schema_for!(T);
    schema.insert("description".to_owned(), description.into());
    format!("{}\n", gauntlet_runtime::canonical::to_string_pretty(&schema))
}
