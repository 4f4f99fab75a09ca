//! The results of the scripted tool calls an agent ran through its own tools, as it sent them
//! back to its model ([`Evidence::mapped_results`]): read through the profile's mapping, or as
//! gauntlet's MCP server says it really answered them ([`Served`]). How an agent without a
//! gauntlet Log reports a tool's outcome.

use std::collections::{HashMap, HashSet, VecDeque};

use gauntlet_mock_provider::Message;
use gauntlet_mock_provider::tool_server::ToolCall;
use serde_json::Value;

use crate::capture::Capture;
use crate::judge::evidence::Evidence;
use crate::judge::views::requests::read_new_messages;
use crate::tool_map::{MappedCall, Outcome};

/// The result of one scripted tool call that the driver rendered as one of the agent's own
/// tools (through the profile's mapping, or as a tool of gauntlet's MCP server), as the agent
/// sent it back to the model, with its outcome: read through the mapping, or what the MCP
/// server's journal says it really returned.
#[derive(Debug, Clone, PartialEq)]
pub struct MappedResult {
    /// The call id the model gave the call.
    pub call_id: String,
    /// The scripted call.
    pub call: MappedCall,
    /// The result text, as the first request that carries it has it.
    pub output: String,
    /// The result read through the mapping.
    pub outcome: Outcome,
    /// The request (1-based) that first carries it.
    pub request: usize,
}

impl MappedResult {
    /// How its outcome was known, for a finding: "its result in request 3 reads as a failure
    /// through the profile's mapping", or "gauntlet's MCP server answered it with a failure".
    pub fn reading(&self) -> String {
        let what = if self.outcome.ok { "a success" } else { "a failure" };
        match self.call.mcp {
            true => format!("gauntlet's MCP server answered it with {what} (its result in request {})", self.request),
            false => format!("its result in request {} reads as {what} through the profile's mapping", self.request),
        }
    }
}

impl Evidence<'_> {
    /// The results of the scripted calls rendered through the profile's `[tools]`, each once,
    /// in the order requests first carry them: how an agent without a gauntlet Log reports a
    /// tool's outcome to its model. A call is known by the rendered name and arguments the
    /// request repeats; its result by the call id the model gave it.
    pub fn mapped_results(&self) -> Vec<MappedResult> {
        let Some(scenario) = self.scenario else { return Vec::new() };
        if self.capture.mapped_calls.is_empty() {
            return Vec::new();
        }
        let mut results: Vec<MappedResult> = Vec::new();
        // Each result once, by its call id and its place among that id's results: a model may
        // give two calls of a response one id (REPLAY-CALL-ID-UNIQUE), and every request
        // repeats the conversation before it, so each run of requests is read once, its new
        // messages only (a long Session costs linear time).
        let mut seen: HashSet<(&str, usize)> = HashSet::new();
        let mut runs: HashMap<usize, Pairing> = HashMap::new();
        let mut served = Served::of(self.capture);
        for (idx, (_, conversation, new)) in read_new_messages(self).enumerate() {
            // Within a run, the k-th result of an id answers the k-th call of that id.
            let Pairing { open, answered } = runs.entry(conversation.run).or_default();
            for message in new {
                match message {
                    Message::ToolCall { call_id, name, args } => {
                        // Most wires send arguments as a JSON string.
                        let args = match args {
                            Value::String(text) => serde_json::from_str(text).unwrap_or_else(|_| args.clone()),
                            other => other.clone(),
                        };
                        let known =
                            self.capture.mapped_calls.iter().find(|call| call.name == *name && call.rendered == args);
                        open.entry(call_id.as_str()).or_default().push_back(known);
                    }
                    Message::ToolResult { call_id, output } => {
                        let nth = answered.entry(call_id.as_str()).or_default();
                        *nth += 1;
                        let call = open.get_mut(call_id.as_str()).and_then(VecDeque::pop_front);
                        let Some(Some(call)) = call else { continue };
                        let mapping = scenario.tools.get(&call.tool);
                        if !(call.mcp || mapping.is_some()) || !seen.insert((call_id.as_str(), *nth)) {
                            continue;
                        }
                        let outcome = match mapping {
                            Some(mapping) if !call.mcp => mapping.outcome(output),
                            _ => served.outcome(call),
                        };
                        results.push(MappedResult {
                            call_id: call_id.clone(),
                            call: call.clone(),
                            output: output.clone(),
                            outcome,
                            request: idx + 1,
                        });
                    }
                    _ => {}
                }
            }
        }
        results
    }
}

/// The calls gauntlet's MCP server received, each the outcome of one scripted call: the first
/// not yet taken with the call's tool and arguments.
pub(crate) struct Served<'a> {
    calls: &'a [ToolCall],
    taken: Vec<bool>,
}

impl<'a> Served<'a> {
    /// Every call the capture's MCP server received, none taken yet.
    pub(crate) fn of(capture: &'a Capture) -> Served<'a> {
        Served { calls: &capture.tool_calls, taken: vec![false; capture.tool_calls.len()] }
    }

    /// What the server really returned for `call`: a failure when it never received it (the
    /// tool did not run, whatever the agent told its model).
    pub(crate) fn outcome(&mut self, call: &MappedCall) -> Outcome {
        let tool = call.tool.as_str();
        let found = self
            .calls
            .iter()
            .zip(&mut self.taken)
            .find(|(served, taken)| !**taken && served.tool == tool && served.args == call.args);
        match found {
            Some((served, taken)) => {
                *taken = true;
                Outcome { ok: served.succeeded(), content: served.text().unwrap_or_default().to_owned() }
            }
            None => Outcome { ok: false, content: String::new() },
        }
    }
}

/// The calls of one run of requests still waiting for their results, by call id, and how many
/// results each id has had ([`Evidence::mapped_results`]).
#[derive(Default)]
struct Pairing<'a> {
    open: HashMap<&'a str, VecDeque<Option<&'a MappedCall>>>,
    answered: HashMap<&'a str, usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::fixture::{body, user};
    use crate::judge::v1_reading;

    /// A call id the model gives again in a later turn has a result of its own: a run's
    /// requests are read once each, so what an id has had is kept between them.
    #[test]
    fn a_call_id_given_again_in_a_later_request_has_its_own_result() {
        use crate::judge::fixture::{mapped, requests};
        let (mut capture, scenario) = mapped(&[], Vec::new());
        let call = serde_json::json!({"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{\"cmd\":\"cat a.txt\"}"});
        let output = |text: &str| serde_json::json!({"type": "function_call_output", "call_id": "c1", "output": text});
        let first = vec![user("q"), call.clone(), output("Process exited with code 0\nOutput:\nalpha")];
        let mut second = first.clone();
        second.extend([user("again"), call, output("Process exited with code 1\nOutput:\nno")]);
        let bodies = vec![body(vec![user("q")]), body(first), body(second)];
        capture.requests = requests(bodies);
        let read = v1_reading::of_capture(&capture);
        let results = Evidence::of_scenario(&read, &scenario).mapped_results();
        let seen: Vec<(usize, bool)> = results.iter().map(|result| (result.request, result.outcome.ok)).collect();
        assert_eq!(seen, [(2, true), (3, false)]);
    }
}
