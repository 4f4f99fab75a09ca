//! Portable tools: a profile maps the corpus's abstract tools (`read`, `write`, `list`,
//! `wait`, the reference's workspace tools, and `plan`, its to-do list) to the agent's own, so the scripted model calls
//! the agent's real tools and the tool scenarios run against any agent
//! (docs/implementations.md "Tools").
//!
//! A mapping is three things: the agent's tool name, an argument template whose strings hold
//! the abstract call's arguments as placeholders (`{path}`, `{content}`, `{ms}`, `{seconds}`,
//! and `{workspace}`, `{home}`, `{tmp}`; a `plan` call's `{entries}`, each entry rendered
//! through the mapping's `entry` template), and how to read the result the agent sends back to
//! the model in its next request: which text marks success or failure, and where the content
//! sits. Rendering happens in the driver (only it knows the scratch workspace); the judge reads
//! results through the same mapping, never through the reference's tool names.

use std::collections::BTreeMap;

use gauntlet_mock_provider::script::Script;
use gauntlet_mock_provider::tool_names::Renamed;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool of the corpus's scripts, as the reference runtime names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AbstractTool {
    /// Reads a workspace file: `{path}`.
    Read,
    /// Writes a workspace file: `{path}`, `{content}`.
    Write,
    /// Lists a workspace folder: `{path}` (`.` when the call names none).
    List,
    /// Runs for a while, a slow tool to cancel: `{ms}`, `{seconds}` (scaled by the profile's
    /// `time_scale`, like every scenario duration, and rounded up).
    Wait,
    /// Replaces the to-do list with the complete current one: `{entries}`, each entry through
    /// the mapping's `entry` template (`{content}`, `{status}`, `{priority}`, `{index}`), so
    /// the agent shows it as an ACP `plan` (ACP-PLAN-WHOLE-LIST).
    Plan,
    /// Runs a subagent on a task and returns its answer, synchronously: `{prompt}`,
    /// `{description}`, `{agent}` (the agent's own delegation tool: Claude Code's `Task`,
    /// opencode's `task`).
    Delegate,
}

impl AbstractTool {
    /// Every abstract tool.
    pub const ALL: [AbstractTool; 6] = [
        AbstractTool::Read,
        AbstractTool::Write,
        AbstractTool::List,
        AbstractTool::Wait,
        AbstractTool::Plan,
        AbstractTool::Delegate,
    ];

    /// Its name in scripts and profiles.
    pub fn as_str(self) -> &'static str {
        match self {
            AbstractTool::Read => "read",
            AbstractTool::Write => "write",
            AbstractTool::List => "list",
            AbstractTool::Wait => "wait",
            AbstractTool::Plan => "plan",
            AbstractTool::Delegate => "delegate",
        }
    }

    /// The abstract tool a scripted call names, if any.
    pub fn named(name: &str) -> Option<AbstractTool> {
        AbstractTool::ALL.into_iter().find(|tool| tool.as_str() == name)
    }

    /// The placeholders of its own arguments.
    pub fn placeholders(self) -> &'static [&'static str] {
        match self {
            AbstractTool::Read | AbstractTool::List => &["path"],
            AbstractTool::Write => &["path", "content"],
            AbstractTool::Wait => &["ms", "seconds"],
            AbstractTool::Plan => &["entries"],
            AbstractTool::Delegate => &["prompt", "description", "agent"],
        }
    }
}

/// The placeholders of a `plan` mapping's `entry` template: one entry of the call's list
/// (`index` counts from 1; `priority` is `medium` when the call gives none).
pub const ENTRY_PLACEHOLDERS: &[&str] = &["content", "status", "priority", "index"];

/// The placeholders every template may use: where the scenario runs.
pub const LOCATIONS: &[&str] = &["workspace", "home", "tmp"];

/// A profile's mappings, by abstract tool.
pub type ToolMap = BTreeMap<AbstractTool, ToolMapping>;

/// How one abstract tool is called as one of the agent's tools, and how its result reads.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolMapping {
    /// The agent's tool the scripted model calls, as the agent offers it to the model.
    pub name: String,
    /// The arguments, a table whose strings may hold placeholders; a string that is exactly
    /// `{ms}` or `{seconds}` becomes a number. `{name:sh}` is the value quoted for a POSIX
    /// shell (for a tool that takes a command line).
    #[serde(default = "no_args")]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub args: Value,
    /// A result holding this text is a success (and, without it, any result no `failed` text
    /// matches).
    #[serde(default)]
    pub ok: Option<String>,
    /// A result holding any of these texts failed, whatever `ok` says.
    #[serde(default)]
    pub failed: Vec<String>,
    /// The content starts after the first occurrence of this text (default: the whole result).
    #[serde(default)]
    pub content_after: Option<String>,
    /// The content ends before the first occurrence of this text after its start (default: the
    /// end of the result).
    #[serde(default)]
    pub content_before: Option<String>,
    /// Each content line starts with its line number and this separator (`1: text`), which
    /// is not content.
    #[serde(default)]
    pub numbered_lines: Option<String>,
    /// For `plan`: one entry of the agent's list, a table whose strings may hold
    /// `{content}`, `{status}`, `{priority}` and `{index}`; the string `{entries}` in `args`
    /// becomes the list of the call's entries rendered through it.
    #[serde(default)]
    #[schemars(with = "Option<BTreeMap<String, serde_json::Value>>")]
    pub entry: Option<Value>,
}

fn no_args() -> Value {
    Value::Object(serde_json::Map::new())
}

/// One scripted call as the driver rendered it for the agent: evidence for the judge, which
/// recognises the call in the requests by its rendered name and arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MappedCall {
    /// The abstract tool the script called.
    pub tool: AbstractTool,
    /// The script's arguments.
    pub args: Value,
    /// The agent's tool name.
    pub name: String,
    /// The arguments sent to the agent.
    pub rendered: Value,
    /// The call went to gauntlet's MCP server, whose journal says what it returned
    /// (`Capture::tool_calls`); else the profile's mapping reads its result.
    pub mcp: bool,
}

impl MappedCall {
    /// A scripted call the mock sent under the agent's name for a tool of gauntlet's MCP
    /// server; `None` for a tool the corpus does not know.
    pub fn served(renamed: Renamed) -> Option<MappedCall> {
        let tool = AbstractTool::named(&renamed.tool)?;
        Some(MappedCall { tool, rendered: renamed.args.clone(), args: renamed.args, name: renamed.name, mcp: true })
    }
}

/// A tool result read through its mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The mapping says the tool succeeded.
    pub ok: bool,
    /// The content the result carries.
    pub content: String,
}

/// A placeholder in a template that its tool does not fill: its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPlaceholder(pub String);

impl ToolMapping {
    /// Reads a result text through the mapping.
    pub fn outcome(&self, output: &str) -> Outcome {
        let failed = self.failed.iter().any(|text| output.contains(text.as_str()));
        let ok = !failed && self.ok.as_ref().is_none_or(|text| output.contains(text.as_str()));
        let start =
            self.content_after.as_ref().and_then(|marker| output.find(marker.as_str()).map(|at| at + marker.len()));
        let rest = &output[start.unwrap_or(0)..];
        let rest = match self.content_before.as_ref().and_then(|marker| rest.find(marker.as_str())) {
            Some(end) => &rest[..end],
            None => rest,
        };
        let content = match &self.numbered_lines {
            Some(separator) => rest
                .lines()
                .map(|line| match line.split_once(separator.as_str()) {
                    Some((number, text)) if number.trim().chars().all(|c| c.is_ascii_digit()) => text,
                    _ => line,
                })
                .collect::<Vec<_>>()
                .join("\n"),
            None => rest.to_owned(),
        };
        Outcome { ok, content }
    }

    /// The arguments for one scripted call of `tool`: each string of the template filled
    /// from the call's `args` and the `locations`; durations shrink by `time_scale`.
    pub fn render(
        &self,
        tool: AbstractTool,
        args: &Value,
        locations: &BTreeMap<&str, String>,
        time_scale: f64,
    ) -> Value {
        let mut values = values(tool, args, locations, time_scale);
        if tool == AbstractTool::Plan {
            let entry = self.entry.clone().unwrap_or_else(no_args);
            let entries = plan_entries(args)
                .into_iter()
                .map(|entry_values| {
                    let mut entry_values: BTreeMap<String, Value> = entry_values;
                    entry_values.extend(values.iter().map(|(key, value)| (key.clone(), value.clone())));
                    fill_value(&entry, &entry_values)
                })
                .collect();
            values.insert("entries".to_owned(), Value::Array(entries));
        }
        fill_value(&self.args, &values)
    }

    /// The placeholders of the template that `tool` does not fill, first one first.
    pub fn check(&self, tool: AbstractTool) -> Result<(), UnknownPlaceholder> {
        let mut strings = Vec::new();
        collect_strings(&self.args, &mut strings);
        let entry_strings = {
            let mut entry_strings = Vec::new();
            if let Some(entry) = &self.entry {
                collect_strings(entry, &mut entry_strings);
            }
            entry_strings
        };
        let entry_known = |name: &str| tool == AbstractTool::Plan && ENTRY_PLACEHOLDERS.contains(&name);
        let args = strings.into_iter().map(|string| (string, false));
        for (string, in_entry) in args.chain(entry_strings.into_iter().map(|string| (string, true))) {
            for name in placeholders(string) {
                let known = tool.placeholders().contains(&name) || LOCATIONS.contains(&name);
                if !(known || (in_entry && entry_known(name))) {
                    return Err(UnknownPlaceholder(name.to_owned()));
                }
            }
        }
        Ok(())
    }
}

/// Renders every call of `script` whose tool `map` maps (on every route), in place; returns
/// the rendered calls, in script order. Unmapped calls stay as written, and so do calls whose
/// answer the script gives (`outcome`), which go to gauntlet's MCP server.
pub fn render_script(
    map: &ToolMap,
    script: &mut Script,
    locations: &BTreeMap<&str, String>,
    time_scale: f64,
) -> Vec<MappedCall> {
    let mut mapped = Vec::new();
    if map.is_empty() {
        return mapped;
    }
    for call in script.routes.values_mut().flatten().flat_map(|response| response.calls.iter_mut()) {
        // What a call answers, when the scenario scripts it, only gauntlet's MCP server plays.
        if call.outcome.is_some() {
            continue;
        }
        let Some(tool) = AbstractTool::named(&call.name) else { continue };
        let Some(mapping) = map.get(&tool) else { continue };
        if call.raw_args.is_some() {
            // Raw argument text goes out as written under the agent's name: no template renders
            // text that is not JSON, and such a call is never run, so it has no mapped result.
            call.name.clone_from(&mapping.name);
            continue;
        }
        let rendered = mapping.render(tool, &call.args, locations, time_scale);
        mapped.push(MappedCall {
            tool,
            args: call.args.clone(),
            name: mapping.name.clone(),
            rendered: rendered.clone(),
            mcp: false,
        });
        call.name.clone_from(&mapping.name);
        call.args = rendered;
    }
    mapped
}

/// The placeholder values of each entry of a `plan` call's `entries`, in order.
fn plan_entries(args: &Value) -> Vec<BTreeMap<String, Value>> {
    let list = args.get("entries").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    list.iter()
        .enumerate()
        .map(|(idx, entry)| {
            let text = |key: &str, default: &str| {
                Value::String(entry.get(key).and_then(Value::as_str).unwrap_or(default).to_owned())
            };
            BTreeMap::from([
                ("content".to_owned(), text("content", "")),
                ("status".to_owned(), text("status", "pending")),
                ("priority".to_owned(), text("priority", "medium")),
                ("index".to_owned(), Value::String((idx + 1).to_string())),
            ])
        })
        .collect()
}

/// The values of one call's placeholders.
fn values(
    tool: AbstractTool,
    args: &Value,
    locations: &BTreeMap<&str, String>,
    time_scale: f64,
) -> BTreeMap<String, Value> {
    let mut values: BTreeMap<String, Value> =
        locations.iter().map(|(name, value)| ((*name).to_owned(), Value::String(value.clone()))).collect();
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
    match tool {
        AbstractTool::Read | AbstractTool::List | AbstractTool::Write => {
            let default = if tool == AbstractTool::List { "." } else { "" };
            values.insert("path".to_owned(), Value::String(text("path").unwrap_or_else(|| default.to_owned())));
            if tool == AbstractTool::Write {
                values.insert("content".to_owned(), Value::String(text("content").unwrap_or_default()));
            }
        }
        AbstractTool::Wait => {
            let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
            // Scenario durations are far below 2^52 ms, where f64 stays exact.
            #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let scaled = (ms as f64 * time_scale).ceil() as u64;
            values.insert("ms".to_owned(), Value::from(scaled));
            values.insert("seconds".to_owned(), Value::from(scaled.div_ceil(1000)));
        }
        // Filled by `render`, from the `entry` template.
        AbstractTool::Plan => {}
        AbstractTool::Delegate => {
            let prompt = text("prompt").unwrap_or_default();
            values
                .insert("description".to_owned(), Value::String(text("description").unwrap_or_else(|| prompt.clone())));
            values.insert("agent".to_owned(), Value::String(text("agent").unwrap_or_default()));
            values.insert("prompt".to_owned(), Value::String(prompt));
        }
    }
    values
}

fn fill_value(template: &Value, values: &BTreeMap<String, Value>) -> Value {
    match template {
        Value::String(text) => {
            // A string that is one numeric or list placeholder becomes the number or the list.
            let whole = text.strip_prefix('{').and_then(|rest| rest.strip_suffix('}'));
            if let Some(number) =
                whole.and_then(|name| values.get(name)).filter(|value| value.is_number() || value.is_array())
            {
                return number.clone();
            }
            Value::String(fill(text, values))
        }
        Value::Array(items) => Value::Array(items.iter().map(|item| fill_value(item, values)).collect()),
        Value::Object(fields) => {
            Value::Object(fields.iter().map(|(key, value)| (key.clone(), fill_value(value, values))).collect())
        }
        other => other.clone(),
    }
}

/// `text` with each known `{name}` or `{name:sh}` replaced; anything else left as written.
fn fill(text: &str, values: &BTreeMap<String, Value>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let filled = after.find('}').and_then(|close| {
            let (name, shell) = match after[..close].strip_suffix(":sh") {
                Some(name) => (name, true),
                None => (&after[..close], false),
            };
            let value = values.get(name)?;
            let plain = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
            Some((if shell { shell_quote(&plain) } else { plain }, close))
        });
        match filled {
            Some((value, close)) => {
                out.push_str(&value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A POSIX shell word that is exactly `text`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The placeholder names in a template string: `{name}` or `{name:sh}` with a lowercase name.
pub fn placeholders(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        let inner = &after[..close];
        let name = inner.strip_suffix(":sh").unwrap_or(inner);
        if !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            names.push(name);
        }
        rest = after;
    }
    names
}

fn collect_strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|item| collect_strings(item, out)),
        Value::Object(fields) => fields.values().for_each(|item| collect_strings(item, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use gauntlet_mock_provider::script::{Call, Response};
    use serde_json::json;

    use super::*;

    fn mapping(name: &str, args: Value) -> ToolMapping {
        ToolMapping {
            name: name.to_owned(),
            args,
            ok: None,
            failed: Vec::new(),
            content_after: None,
            content_before: None,
            numbered_lines: None,
            entry: None,
        }
    }

    fn locations() -> BTreeMap<&'static str, String> {
        BTreeMap::from([("workspace", "/w".to_owned()), ("home", "/h".to_owned()), ("tmp", "/h/tmp".to_owned())])
    }

    #[test]
    fn templates_fill_arguments_locations_quoting_and_numbers() {
        let read = mapping("read", json!({"filePath": "{workspace}/{path}", "limit": 10}));
        assert_eq!(
            read.render(AbstractTool::Read, &json!({"path": "notes.txt"}), &locations(), 1.0),
            json!({"filePath": "/w/notes.txt", "limit": 10})
        );
        let write = mapping("exec_command", json!({"cmd": "printf %s {content:sh} > {path:sh}"}));
        let args = json!({"path": "a b.txt", "content": "it's {path}"});
        assert_eq!(
            write.render(AbstractTool::Write, &args, &locations(), 1.0),
            json!({"cmd": r"printf %s 'it'\''s {path}' > 'a b.txt'"})
        );
        let wait = mapping("bash", json!({"command": "sleep {seconds}", "timeout": "{ms}", "note": "{ms} ms"}));
        assert_eq!(
            wait.render(AbstractTool::Wait, &json!({"ms": 600_000}), &locations(), 0.01),
            json!({"command": "sleep 6", "timeout": 6000, "note": "6000 ms"})
        );
        let list = mapping("ls", json!({"dir": "{path}", "json": "{\"a\": 1}"}));
        assert_eq!(
            list.render(AbstractTool::List, &json!({}), &locations(), 1.0),
            json!({"dir": ".", "json": "{\"a\": 1}"})
        );
    }

    #[test]
    fn a_plan_renders_each_entry_through_its_template() {
        let mut todo = mapping("update_plan", json!({"plan": "{entries}", "note": "{workspace}"}));
        todo.entry = Some(json!({"step": "{content}", "status": "{status}", "id": "{index}", "p": "{priority}"}));
        let args = json!({"entries": [{"content": "a", "status": "completed", "priority": "high"}, {"content": "b", "status": "pending"}]});
        assert_eq!(
            todo.render(AbstractTool::Plan, &args, &locations(), 1.0),
            json!({"plan": [
                {"step": "a", "status": "completed", "id": "1", "p": "high"},
                {"step": "b", "status": "pending", "id": "2", "p": "medium"},
            ], "note": "/w"})
        );
        assert_eq!(todo.check(AbstractTool::Plan), Ok(()));
        assert_eq!(todo.check(AbstractTool::Read), Err(UnknownPlaceholder("entries".to_owned())));
        let mut stray = mapping("update_plan", json!({"plan": "{content}"}));
        stray.entry = None;
        assert_eq!(stray.check(AbstractTool::Plan), Err(UnknownPlaceholder("content".to_owned())));
    }

    #[test]
    fn a_placeholder_the_tool_does_not_fill_is_named() {
        let read = mapping("read", json!({"filePath": "{workspace}/{path}", "x": ["{content:sh}"]}));
        assert_eq!(read.check(AbstractTool::Read), Err(UnknownPlaceholder("content".to_owned())));
        assert_eq!(read.check(AbstractTool::Write), Ok(()));
        assert_eq!(mapping("wait", json!({"t": "{seconds}{ms}"})).check(AbstractTool::Wait), Ok(()));
    }

    #[test]
    fn results_read_success_and_content_through_the_mapping() {
        let mut exec = mapping("exec_command", json!({}));
        exec.ok = Some("Process exited with code 0".to_owned());
        exec.content_after = Some("Output:\n".to_owned());
        let done = "Chunk ID: 1\nProcess exited with code 0\nOutput:\nThe build is green.";
        assert_eq!(exec.outcome(done), Outcome { ok: true, content: "The build is green.".to_owned() });
        let failed = exec.outcome("Process exited with code 1\nOutput:\ncat: x: No such file");
        assert!(!failed.ok);
        let mut read = mapping("read", json!({}));
        read.failed = vec!["Error:".to_owned()];
        read.content_after = Some("<content>\n".to_owned());
        read.content_before = Some("\n\n(End".to_owned());
        read.numbered_lines = Some(": ".to_owned());
        let shown = "<path>/w/a</path>\n<content>\n1: alpha\n2: beta: gamma\n\n(End of file)\n</content>";
        assert_eq!(read.outcome(shown), Outcome { ok: true, content: "alpha\nbeta: gamma".to_owned() });
        assert!(!read.outcome("Error: File not found").ok);
    }

    #[test]
    fn a_script_is_rendered_on_every_route_and_unmapped_calls_stay() {
        let call = |name: &str, args: Value| Call { name: name.to_owned(), args, ..Call::default() };
        let mut script = Script::root(vec![Response {
            calls: vec![call("read", json!({"path": "a.txt"})), call("spawn_agent", json!({}))],
            ..Response::default()
        }]);
        script
            .routes
            .insert("sub_1".to_owned(), vec![Response { calls: vec![call("list", json!({}))], ..Response::default() }]);
        let map = ToolMap::from([
            (AbstractTool::Read, mapping("exec_command", json!({"cmd": "cat {path}"}))),
            (AbstractTool::List, mapping("exec_command", json!({"cmd": "ls {path}"}))),
        ]);
        let mapped = render_script(&map, &mut script, &locations(), 1.0);
        let root = &script.routes[gauntlet_mock_provider::ROOT][0].calls;
        assert_eq!((root[0].name.as_str(), &root[0].args), ("exec_command", &json!({"cmd": "cat a.txt"})));
        assert_eq!(root[1].name, "spawn_agent");
        assert_eq!(script.routes["sub_1"][0].calls[0].args, json!({"cmd": "ls ."}));
        let tools: Vec<AbstractTool> = mapped.iter().map(|call| call.tool).collect();
        assert_eq!(tools, [AbstractTool::Read, AbstractTool::List]);
    }
}
