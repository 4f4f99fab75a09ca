//! The TOML of a scenario written from a Log: a [`toml_edit`] document built table by table,
//! its comments kept as decor (the text around a key, a value or a table header), so toml_edit
//! quotes every key and string and the layout is said once, here.
//!
//! The document reads top to bottom as the scenario format lists it: the header comments,
//! `title` and `covers`, then `[config]`, `[workspace]`, `[log]`, `[[expect.workflow]]`,
//! `[[turn]]` and `[children.<route>]`, a blank line before each table.

use serde_json::Value;
use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, value};

use super::children::ChildDraft;
use super::{Draft, TurnDraft};
use gauntlet_judge::scenario::Config;

/// The scenario's TOML, titled after `source`.
pub(super) fn render(source: &str, draft: &Draft) -> String {
    let Draft { config, workspace, preload, workflows, turns, children, notes } = draft;
    let mut document = DocumentMut::new();
    document.decor_mut().set_prefix(header(source, notes));
    document.insert("title", value(format!("Reproduces {source}")));
    document.insert("covers", value(Array::new()));
    if let Some(config) = config_table(config) {
        document.insert("config", config.into());
    }
    if !workspace.is_empty() {
        let files: Table = workspace.iter().map(|(path, content)| (path, value(content))).collect();
        document.insert("workspace", files.into());
    }
    if let Some(ndjson) = preload {
        document.insert("log", log_table(ndjson).into());
    }
    if !workflows.is_empty() {
        let mut expect = Table::new();
        expect.set_implicit(true);
        expect.insert("workflow", workflows.iter().cloned().collect::<ArrayOfTables>().into());
        document.insert("expect", expect.into());
    }
    if !turns.is_empty() {
        document.insert("turn", turns.iter().map(turn_table).collect::<ArrayOfTables>().into());
    }
    if !children.is_empty() {
        let mut routes = Table::new();
        routes.set_implicit(true);
        for child in children {
            routes.insert(&child.route, child_table(child).into());
        }
        document.insert("children", routes.into());
    }
    document.to_string()
}

/// The comment lines that open the file: the schema, where it came from, and each note.
fn header(source: &str, notes: &[String]) -> String {
    let mut lines = vec![
        "#:schema ../../docs/schema/scenario.schema.json".to_owned(),
        format!("# Written by `gauntlet new --from-log` from {source}; read it, then run it with --bless."),
    ];
    lines.extend(notes.iter().map(|note| format!("# Note: {note}.")));
    lines.iter().map(|line| format!("{line}\n")).collect()
}

/// `[config]`: the settings that differ from the defaults, if any do.
fn config_table(config: &Config) -> Option<Table> {
    let defaults = Config::default();
    let mut table = Table::new();
    if config.model != defaults.model {
        table.insert("model", value(&config.model));
    }
    let numbers = [
        ("stream_idle_timeout_ms", config.stream_idle_timeout_ms, defaults.stream_idle_timeout_ms),
        ("turn_timeout_ms", config.turn_timeout_ms, defaults.turn_timeout_ms),
        ("max_retries", config.max_retries.into(), defaults.max_retries.into()),
        ("max_subagents", config.max_subagents as u64, defaults.max_subagents as u64),
        ("compact_at_tokens", config.compact_at_tokens, defaults.compact_at_tokens),
    ];
    for (key, number, default) in numbers {
        if number != default {
            table.insert(key, value(int(number)));
        }
    }
    (!table.is_empty()).then_some(table)
}

/// `[log]`: what the Log's earlier process wrote, which the Session resumes.
fn log_table(ndjson: &str) -> Table {
    let mut table = Table::new();
    table.decor_mut().set_prefix("\n# What the Log's earlier process wrote: the Session resumes it.\n");
    table.insert("ndjson", value(ndjson));
    table
}

/// One `[[turn]]`: its prompt, what the Log shows of how it ended, and its responses.
fn turn_table(turn: &TurnDraft) -> Table {
    let mut table = Table::new();
    table.insert("prompt", value(&turn.prompt));
    if !turn.links.is_empty() {
        let links = turn.links.iter().map(|(uri, name)| {
            let mut link = InlineTable::new();
            link.insert("uri", uri.into());
            link.insert("name", name.into());
            link
        });
        table.insert("links", value(Array::from_iter(links)));
    }
    if let Some(key) = &turn.idempotency_key {
        table.insert("idempotency_key", value(key));
    }
    if let Some(status) = turn.expect {
        table.insert("expect", value(status.as_str()));
    }
    if let Some(kind) = &turn.error_kind {
        table.insert("error_kind", value(kind));
    }
    if let Some(reason) = turn.stop_reason {
        table.insert("stop_reason", value(reason));
    }
    if let Some(model) = &turn.model {
        table.insert("model", value(model));
    }
    if let Some(trigger) = turn.cancel {
        table.insert("cancel", value(trigger.name()));
    }
    table.insert("respond", respond(&turn.responses));
    if turn.expect.is_none()
        && let Some((mut after_prompt, _)) = table.iter_mut().nth(1)
    {
        // Where `expect` would be.
        after_prompt.leaf_decor_mut().set_prefix("# The Log shows no terminal evidence for this turn.\n");
    }
    table
}

/// One `[children.<route>]`: a child Session's status, reason and responses, under its note.
fn child_table(child: &ChildDraft) -> Table {
    let mut table = Table::new();
    if let Some(note) = &child.note {
        // After the header, on a line of its own.
        table.decor_mut().set_suffix(format!("\n# Note: {note}."));
    }
    if let Some(status) = child.expect {
        table.insert("expect", value(status.as_str()));
    }
    if let Some(reason) = &child.reason {
        table.insert("reason", value(reason));
    }
    if !child.responses.is_empty() {
        table.insert("respond", respond(&child.responses));
    }
    table
}

/// `respond = [...]`: on one line when it holds one response, else one response a line.
fn respond(responses: &[InlineTable]) -> Item {
    let mut array: Array = responses.iter().cloned().collect();
    if responses.len() > 1 {
        for response in array.iter_mut() {
            response.decor_mut().set_prefix("\n  ");
        }
        array.set_trailing_comma(true);
        array.set_trailing("\n");
    }
    value(array)
}

/// An inline table of `fields`, in their order.
pub(super) fn inline<const N: usize>(fields: [(&str, toml_edit::Value); N]) -> InlineTable {
    fields.into_iter().collect()
}

/// A count or a duration as a TOML integer (at most `i64::MAX`).
pub(super) fn int(number: impl TryInto<i64>) -> toml_edit::Value {
    number.try_into().unwrap_or(i64::MAX).into()
}

/// A JSON value as a TOML value (TOML has no null: a null becomes `""`), an object's keys in
/// the order the Log holds them.
pub(super) fn json_value(json: &Value) -> toml_edit::Value {
    match json {
        Value::Null => "".into(),
        Value::Bool(flag) => (*flag).into(),
        Value::Number(number) => match (number.as_i64(), number.as_f64()) {
            (Some(integer), _) => integer.into(),
            (None, Some(float)) => float.into(),
            (None, None) => number.to_string().into(),
        },
        Value::String(text) => text.into(),
        Value::Array(items) => items.iter().map(json_value).collect::<Array>().into(),
        Value::Object(map) => map.iter().map(|(key, item)| (key, json_value(item))).collect::<InlineTable>().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_arguments_become_inline_toml() {
        let args = serde_json::json!({"path": "a.txt", "n": 2, "odd key": [true], "none": null});
        // In the order the Log holds them (sorted there).
        assert_eq!(json_value(&args).to_string(), r#"{ path = "a.txt", n = 2, "odd key" = [true], none = "" }"#);
    }

    #[test]
    fn several_responses_go_one_a_line() {
        let one = inline([("text", ["Hi"].into_iter().collect())]);
        let two = inline([("status", int(500_u64))]);
        let text = |responses: &[InlineTable]| respond(responses).to_string();
        assert_eq!(text(&[]), "[]");
        assert_eq!(text(std::slice::from_ref(&one)), r#"[{ text = ["Hi"] }]"#);
        assert_eq!(text(&[two, one]), "[\n  { status = 500 },\n  { text = [\"Hi\"] },\n]");
    }
}
