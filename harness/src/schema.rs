//! JSON Schemas of the strict TOML files, generated from the serde types that load them, so an
//! editor completes and checks scenario, profile and expectations files (docs/schema/); and of
//! a check's `report.json`, from the types that write it, for a CI step that reads it.
//!
//! The committed files are compared with [`all`] by a test (`schemas_are_generated_and_every_file_validates`
//! in `harness/tests/cli.rs`); `GAUNTLET_BLESS=1` rewrites them. Lifecycle scenarios have one
//! schema per family (`monitor.schema.json`, `bridge.schema.json`), their `kind` narrowed to the
//! family's kinds.

use schemars::JsonSchema;
use serde_json::Value;

use crate::known_failures::KnownFailures;
use crate::profile::Profile;
use gauntlet_judge::lifecycle::{BridgeFile, Family, MonitorFile};
use gauntlet_judge::scenario::Scenario;

/// Every schema, as `(file name under docs/schema/, pretty JSON with a final newline)`.
pub fn all() -> Vec<(&'static str, String)> {
    vec![
        ("scenario.schema.json", generate::<Scenario>("A gauntlet Turn scenario (docs/scenario-format.md)")),
        ("profile.schema.json", generate::<Profile>("A gauntlet implementation profile (docs/implementations.md)")),
        (
            "expected.schema.json",
            generate::<KnownFailures>("An implementation's known failures (<profile>.expected.toml)"),
        ),
        ("monitor.schema.json", lifecycle::<MonitorFile>(Family::Monitor)),
        ("bridge.schema.json", lifecycle::<BridgeFile>(Family::Bridge)),
        (
            "report.schema.json",
            generate::<crate::report::json::Report<'static>>("A gauntlet check's report.json (docs/ci.md)"),
        ),
    ]
}

fn generate<T: JsonSchema>(description: &str) -> String {
    render(schema::<T>(description))
}

fn schema<T: JsonSchema>(description: &str) -> schemars::Schema {
    let mut schema = schemars::schema_for!(T);
    schema.insert("description".to_owned(), description.into());
    schema
}

fn render(schema: schemars::Schema) -> String {
    format!("{}\n", gauntlet_agent::canonical::to_string_pretty(&schema))
}

/// The schema of a lifecycle family's files: `kind` only takes that family's kinds.
fn lifecycle<T: JsonSchema>(family: Family) -> String {
    let description = format!(
        "A gauntlet lifecycle scenario of the {} family (docs/scenario-format.md, \"Lifecycle scenarios\")",
        family.as_str()
    );
    let mut schema = schema::<T>(&description);
    let prefix = format!("{}.", family.as_str());
    if let Some(Value::Array(kinds)) = schema.pointer_mut("/$defs/Kind/oneOf") {
        kinds.retain(|kind| kind.get("const").and_then(Value::as_str).is_some_and(|name| name.starts_with(&prefix)));
    }
    render(schema)
}
