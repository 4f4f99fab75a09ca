//! The names an agent gives gauntlet's MCP tools. Agents name MCP tools their own way
//! (`mcp__gauntlet__read`, `gauntlet_read`, `mcp_gauntlet_read`, with sanitizers and hash
//! suffixes); each tool's description ends with its marker ([`crate::tool_server::marker`]),
//! so the name is read from the tools a request offers, whatever the wire's shape for them.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::script::Response;

/// The name gauntlet's server has in `mcpServers`: no `_`, `-` or `.`, so every agent's name
/// sanitizer keeps it (`mcp__gauntlet__read`, `gauntlet_read`, `mcp_gauntlet_read`).
pub const SERVER_NAME: &str = "gauntlet";

/// The corpus's tools, as the server offers them.
pub const TOOLS: [&str; 4] = ["list", "read", "write", "wait"];

/// The marker each tool's description ends with: whatever name an agent gives the tool, the
/// mock finds it in the tools a request offers by this text.
pub fn marker(tool: &str) -> String {
    format!("[gauntlet-tool:{tool}]")
}

/// One scripted call the mock sent under the agent's name for a gauntlet tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Renamed {
    /// The tool, as the script names it (`read`).
    pub tool: String,
    /// The agent's name for it (`mcp__gauntlet__read`).
    pub name: String,
    /// The call's arguments.
    pub args: Value,
}

/// The agent's name for a gauntlet tool, and the Responses namespace it offers it in (codex
/// offers an MCP server's tools as a `namespace` tool, `mcp__gauntlet` holding `read`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered {
    /// The tool's name.
    pub name: String,
    /// Its namespace, if any.
    pub namespace: Option<String>,
}

/// The agent's name for each gauntlet tool a request body offers, by tool. Every wire keeps
/// its tools under `tools` (Gemini one level down, in `functionDeclarations`), each an object
/// with a `name` and a `description` somewhere in it.
pub fn offered(body: &Value) -> BTreeMap<&'static str, Offered> {
    let mut names = BTreeMap::new();
    if let Some(tools) = body.get("tools") {
        collect(tools, None, &mut names);
    }
    names
}

fn collect(value: &Value, namespace: Option<&str>, names: &mut BTreeMap<&'static str, Offered>) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| collect(item, namespace, names)),
        Value::Object(object) => {
            let name = object.get("name").and_then(Value::as_str);
            let description = object.get("description").and_then(Value::as_str).unwrap_or_default();
            let tool = TOOLS.into_iter().find(|tool| description.contains(&marker(tool)));
            if let (Some(name), Some(tool)) = (name, tool) {
                let namespace = namespace.map(str::to_owned);
                names.entry(tool).or_insert_with(|| Offered { name: name.to_owned(), namespace });
            }
            let inner = match object.get("type").and_then(Value::as_str) {
                Some("namespace") => name,
                _ => namespace,
            };
            object.values().for_each(|value| collect(value, inner, names));
        }
        _ => {}
    }
}

/// Which scripted calls of gauntlet's tools go to its MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpCalls {
    /// Every one: the agent has no tools of its own for the corpus's.
    All,
    /// Only those that script the tool's `outcome`, which only the server can play; the others
    /// go to the agent's own tools of the same names (the reference's workspace tools).
    Scripted,
}

/// `response` with each call of a gauntlet tool the request offers (of the `calls` that go to
/// the MCP server) under the agent's name, and those calls; `None` when no call is renamed.
pub fn rename(
    response: &Response,
    offered: &BTreeMap<&'static str, Offered>,
    calls: McpCalls,
) -> Option<(Response, Vec<Renamed>)> {
    let mut renamed = Vec::new();
    let mut response = response.clone();
    for call in &mut response.calls {
        if calls == McpCalls::Scripted && call.outcome.is_none() {
            continue;
        }
        let Some(offered) = offered.get(call.name.as_str()) else { continue };
        renamed.push(Renamed { tool: call.name.clone(), name: offered.name.clone(), args: call.args.clone() });
        call.name.clone_from(&offered.name);
        call.namespace.clone_from(&offered.namespace);
    }
    (!renamed.is_empty()).then_some((response, renamed))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::script::Call;

    #[test]
    fn names_are_read_from_every_wire_shape() {
        let described = |tool: &str| format!("Read a file. {}", marker(tool));
        let bodies = [
            json!({"tools": [{"type": "function", "name": "mcp__gauntlet__read", "description": described("read")}]}),
            json!({"tools": [{"type": "function", "function": {"name": "mcp__gauntlet__read", "description": described("read")}}]}),
            json!({"tools": [{"functionDeclarations": [{"name": "mcp__gauntlet__read", "description": described("read")}]}]}),
        ];
        let read = Offered { name: "mcp__gauntlet__read".into(), namespace: None };
        for body in bodies {
            assert_eq!(offered(&body), BTreeMap::from([("read", read.clone())]), "{body}");
        }
        // codex's Responses `namespace` tool holds the server's tools under their own names.
        let namespaced = json!({"tools": [{"type": "namespace", "name": "mcp__gauntlet", "tools": [
            {"type": "function", "name": "read", "description": described("read")}]}]});
        let read = Offered { name: "read".into(), namespace: Some("mcp__gauntlet".into()) };
        assert_eq!(offered(&namespaced), BTreeMap::from([("read", read)]));
        // An agent's own `read`, without the marker, is not gauntlet's.
        assert!(offered(&json!({"tools": [{"name": "read", "description": "Read a file."}]})).is_empty());
    }

    #[test]
    fn only_offered_tools_are_renamed() {
        let call = |name: &str| Call { name: name.into(), args: json!({"path": "a"}), ..Call::default() };
        let response = Response { calls: vec![call("read"), call("shell")], ..Response::default() };
        let offered = BTreeMap::from([("read", Offered { name: "gauntlet_read".into(), namespace: None })]);
        let Some((renamed, calls)) = rename(&response, &offered, McpCalls::All) else { panic!("nothing renamed") };
        assert_eq!(renamed.calls.iter().map(|call| call.name.as_str()).collect::<Vec<_>>(), ["gauntlet_read", "shell"]);
        assert_eq!(calls, [Renamed { tool: "read".into(), name: "gauntlet_read".into(), args: json!({"path": "a"}) }]);
        assert_eq!(rename(&response, &BTreeMap::new(), McpCalls::All), None);
        // An agent with tools of its own takes only the calls whose outcome is scripted.
        assert_eq!(rename(&response, &offered, McpCalls::Scripted), None);
    }
}
