//! The script data model: what the mock provider answers, route by route, in order.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The default route, served at `/v1/responses`.
pub const ROOT: &str = "root";

/// All responses, per route, in the order they will be served.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Script {
    /// Route name to its responses; route [`ROOT`] is the default.
    pub routes: BTreeMap<String, Vec<Response>>,
    /// How many of the root's responses belong to each turn, in order. When given, a request
    /// made during turn N is answered from turn N's responses only (see
    /// `MockProvider::begin_turn`), so an agent's hidden retry never consumes another turn's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<usize>,
    /// What answers a request of a turn whose responses are used up.
    #[serde(skip_serializing_if = "Exhausted::is_default")]
    pub exhausted: Exhausted,
    /// The first of [`Script::turns`] that are optional: asked only by an agent that acts so
    /// (a busy prompt it queues as a turn of its own), so never unconsumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optional_from: Option<usize>,
    /// Per turn, the root response (its index, after every turn's) that answers a continuation
    /// of the turn after a fault, every time, as a retry meets the fault; a turn without one
    /// answers a continuation with the rest of the faulted response and a clean end. Never
    /// unconsumed: only an agent that continues asks it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub continuations: Vec<Option<usize>>,
    /// Routes known by what their conversation carries: a request whose first user message
    /// holds the route's text is that route's, whatever Session it names (a child an agent's own
    /// delegation tool starts, named by the prompt it was delegated, with no header the agent
    /// does not send).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub prompted: BTreeMap<String, String>,
}

/// The answer to a request made after its turn's responses are used up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Exhausted {
    /// The provider as it is: a retry of a request that met a fault (the turn's last response
    /// an HTTP error, a stream that errs, fails, drops, ends without its terminal event or is
    /// malformed, or one the client gave up on) meets the same fault again, up to
    /// [`RETRY_CAP`] times in a row, so an agent's own retry budget is what is judged. Any other
    /// request past the turn's responses comes after its answer (a side request, a
    /// continuation, a queued prompt's request): it gets an empty clean response, nothing to
    /// show and nothing to retry, and is noted as unscripted (MOCK-STRICT on the reference).
    #[default]
    Retry,
    /// HTTP 500 with an `unscripted_request` error body: clearly not model output, a mismatch
    /// for MOCK-STRICT, and a server error an agent may retry.
    Unscripted,
    /// The turn's last response again, as often as asked: "fail every retry" as a script.
    RepeatLast,
}

/// How many times in a row the mock repeats a fault to an agent that keeps retrying it: far
/// above any agent's own budget (claude-agent-acp's default is 10 attempts), so an agent that
/// reaches it never stops by itself (WIRE-RETRY-BOUNDED names it).
pub const RETRY_CAP: usize = 12;

impl Exhausted {
    fn is_default(&self) -> bool {
        *self == Exhausted::default()
    }
}

/// One scripted answer to one request; every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Response {
    /// Reasoning items, emitted first, one output item each.
    pub reasoning: Vec<Reasoning>,
    /// Assistant text deltas, forming one message item (omitted when empty).
    pub text: Vec<String>,
    /// An explicit refusal's text deltas in place of `text`: the message a model sends when it
    /// declines (OpenAI's `refusal`, in each wire's own shape), with a clean end; never with
    /// `text` or `calls`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refusal: Vec<String>,
    /// Function calls, emitted after the message.
    pub calls: Vec<Call>,
    /// Token usage; absent means input 100, cached 0, output 10, reasoning 0.
    pub usage: Option<Usage>,
    /// How the stream ends.
    pub then: Ending,
    /// Hold the stream open mid-way, then continue: one pause (`{ after, ms }`) or a list of
    /// them in order of `after` (a recording's first-token time and gaps).
    #[serde(deserialize_with = "pauses::deserialize", serialize_with = "pauses::serialize")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "schema", schemars(with = "pauses::Pauses"))]
    pub pause: Vec<Pause>,
    /// Emit only the first N content frames (counting from `response.created`), then apply `then`.
    pub cut_after: Option<usize>,
    /// Answer with this non-2xx status and a provider-shaped JSON error body instead of a stream.
    pub status: Option<u16>,
    /// Seconds, sent as the `retry-after` header along with `status`.
    pub retry_after: Option<u64>,
}

/// A reasoning item with a streamed summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Reasoning {
    /// Summary delta chunks.
    pub summary: Vec<String>,
    /// Opaque `encrypted_content` carried by the finished item.
    pub encrypted: Option<String>,
}

/// A function call item.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// Function name.
    pub name: String,
    /// Arguments (a TOML table in scenario files), sent as compact JSON in the order written.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub args: serde_json::Value,
    /// The arguments as raw text instead of `args`, sent exactly as written, JSON or not: a
    /// model's call whose arguments do not parse (`'{"path": "notes.md"'`, garbage) with a
    /// clean end, which no `args` table can say (ACP-INVALID-ARGUMENTS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_args: Option<String>,
    /// Call id; defaults to `call_<n>`.
    pub call_id: Option<String>,
    /// The Responses `namespace` the called tool sits in (a request's `namespace` tool, as
    /// codex offers MCP servers' tools); other wires have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// What gauntlet's MCP server answers this call with, for a call of one of its tools
    /// (`read`, `write`, `list`, `wait`); by default the tool runs on the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<ToolOutcome>,
}

/// What a scripted call answers at the tool server, instead of running the tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolOutcome {
    /// A successful result with this text, the tool not run.
    Result(String),
    /// A result with `isError: true` and this text: MCP's tool execution error.
    Error(String),
    /// A JSON-RPC error with this message: MCP's protocol error.
    RpcError(String),
    /// The server exits while the call runs, answering nothing.
    Crash,
    /// The call never answers, until the client cancels it or stops the server.
    Hang,
    /// The call runs as usual, but answers only after this many milliseconds (scaled by the
    /// run's time scale, as every scenario duration).
    SlowMs(u64),
}

impl ToolOutcome {
    /// The outcome as a scenario file writes it (`outcome = ...`): the one writer of this enum,
    /// matched exhaustively, so a new outcome is a compile error here (the campaign's
    /// generator writes through it).
    pub fn toml(&self) -> toml_edit::Value {
        match self {
            ToolOutcome::Result(text) => keyed("result", text),
            ToolOutcome::Error(text) => keyed("error", text),
            ToolOutcome::RpcError(text) => keyed("rpc_error", text),
            ToolOutcome::Crash => "crash".into(),
            ToolOutcome::Hang => "hang".into(),
            ToolOutcome::SlowMs(ms) => {
                let mut table = toml_edit::InlineTable::new();
                table.insert("slow_ms", i64::try_from(*ms).unwrap_or(i64::MAX).into());
                table.into()
            }
        }
    }
}

impl Call {
    /// The arguments text the wire carries: `raw_args` as written, else `args` as compact JSON.
    pub fn arguments(&self) -> String {
        self.raw_args.clone().unwrap_or_else(|| self.args.to_string())
    }

    /// The arguments as a JSON value, for wires whose arguments are an object (Gemini's
    /// `args`, a whole Anthropic `input`): `raw_args` parsed, or, when it does not parse, the
    /// text as a JSON string, which such a wire cannot carry (its scenarios skip the dialect).
    pub fn args_value(&self) -> serde_json::Value {
        match &self.raw_args {
            Some(text) => serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.clone())),
            None => self.args.clone(),
        }
    }

    /// Whether its arguments are a JSON object, as every tool's arguments must be.
    pub fn args_parse(&self) -> bool {
        self.args_value().is_object()
    }
}

/// Token usage reported by a terminal event; every field defaults to 0 when the table is given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Usage {
    /// Input tokens.
    pub input: u64,
    /// Cached input tokens.
    pub cached: u64,
    /// Output tokens.
    pub output: u64,
    /// Reasoning tokens (part of output).
    pub reasoning: u64,
}

/// A stall with the stream still open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Pause {
    /// Frames emitted before the pause.
    pub after: usize,
    /// Pause length in milliseconds.
    pub ms: u64,
}

/// `pause` as a file writes it: one table, as it always was, or an array of them. Both read
/// through `Pause`'s own strict deserializer, so an unknown key is named as it is elsewhere.
mod pauses {
    use std::fmt;

    use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
    use serde::de::{MapAccess, SeqAccess, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Pause;

    /// A stall, or several: one pause, or a list of them in order of `after`.
    #[cfg(feature = "schema")]
    #[derive(schemars::JsonSchema)]
    #[serde(untagged)]
    #[allow(dead_code)]
    pub enum Pauses {
        /// One pause.
        One(Pause),
        /// Pauses in order of `after`.
        Many(Vec<Pause>),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Pause>, D::Error> {
        struct OneOrMany;
        impl<'de> Visitor<'de> for OneOrMany {
            type Value = Vec<Pause>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a pause `{ after = N, ms = D }` or an array of them")
            }

            fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<Vec<Pause>, M::Error> {
                Pause::deserialize(MapAccessDeserializer::new(map)).map(|pause| vec![pause])
            }

            fn visit_seq<S: SeqAccess<'de>>(self, seq: S) -> Result<Vec<Pause>, S::Error> {
                Vec::deserialize(SeqAccessDeserializer::new(seq))
            }
        }
        deserializer.deserialize_any(OneOrMany)
    }

    /// One pause as a table, as files have always written it; several as an array.
    pub fn serialize<S: Serializer>(pauses: &[Pause], serializer: S) -> Result<S::Ok, S::Error> {
        match pauses {
            [pause] => pause.serialize(serializer),
            pauses => pauses.serialize(serializer),
        }
    }
}

/// How a stream ends.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// `response.completed`.
    #[default]
    Completed,
    /// `response.incomplete` with this reason (e.g. `max_output_tokens`).
    Incomplete(String),
    /// An in-band `error` event with this code.
    Error(String),
    /// `response.failed` with this error code.
    Failed(String),
    /// The connection drops mid-body.
    Disconnect,
    /// The body ends cleanly without a terminal event.
    Eof,
    /// One frame whose data is not JSON, then the body ends.
    Malformed,
}

impl Ending {
    /// The ending as a scenario file writes it (`then = ...`), `None` for the default, a
    /// completed stream. The one writer of this enum, matched exhaustively: a new stream fault
    /// is a compile error here, in each dialect's encoder and in the campaign's
    /// `fault_kind`, the places it must be handled (the recorder, `from_log` and the generator
    /// write through this).
    pub fn toml(&self) -> Option<toml_edit::Value> {
        match self {
            Ending::Completed => None,
            Ending::Incomplete(reason) => Some(keyed("incomplete", reason)),
            Ending::Error(code) => Some(keyed("error", code)),
            Ending::Failed(code) => Some(keyed("failed", code)),
            Ending::Disconnect => Some("disconnect".into()),
            Ending::Eof => Some("eof".into()),
            Ending::Malformed => Some("malformed".into()),
        }
    }
}

/// `{ key = text }`.
fn keyed(key: &str, text: &str) -> toml_edit::Value {
    let mut table = toml_edit::InlineTable::new();
    table.insert(key, text.into());
    table.into()
}

/// A script or scenario file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The TOML did not parse or did not fit the model; the message includes line and column.
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
    /// A response is self-contradictory.
    #[error("route `{route}` response {index}: {problem}")]
    Invalid {
        /// The route.
        route: String,
        /// The response's 0-based index in its route.
        index: usize,
        /// The key whose value is wrong (`status`, `retry_after`, `pause`), so a loader can point at it.
        key: &'static str,
        /// What is wrong.
        problem: String,
    },
}

impl Usage {
    /// The usage reported when a response gives none.
    pub const DEFAULT: Usage = Usage { input: 100, cached: 0, output: 10, reasoning: 0 };
}

impl Response {
    /// The usage to report: the scripted one or [`Usage::DEFAULT`].
    pub fn effective_usage(&self) -> Usage {
        self.usage.unwrap_or(Usage::DEFAULT)
    }

    /// The answer to a continuation of this response after its fault: the text it kept back
    /// (cut, or after the stall the client `given_up` on; none when it streamed all it had),
    /// with the default usage and a clean end.
    pub fn rest(&self, given_up: bool) -> Response {
        let shown = if given_up { self.text_before_pause() } else { self.visible_text() };
        let whole = self.text.concat();
        let rest = whole.strip_prefix(shown.as_str()).unwrap_or_default();
        Response { text: if rest.is_empty() { Vec::new() } else { vec![rest.to_owned()] }, ..Response::default() }
    }

    /// Number of output items the full stream carries (reasoning, message, calls).
    pub fn item_count(&self) -> usize {
        self.reasoning.len() + usize::from(!self.message().is_empty()) + self.calls.len()
    }

    /// The message's text deltas: its `text`, or its `refusal` when it refuses.
    pub fn message(&self) -> &[String] {
        if self.refuses() { &self.refusal } else { &self.text }
    }

    /// `ending` as a wire whose refusal is a way of stopping writes it (Anthropic's `refusal`
    /// stop reason, Gemini's `SAFETY`): a refusal's clean end as a content filter's stop.
    pub fn stop_of(&self, ending: &Ending) -> Ending {
        match ending {
            Ending::Completed if self.refuses() => Ending::Incomplete("content_filter".to_owned()),
            ending => ending.clone(),
        }
    }

    /// Whether the model declines in so many words (`refusal`).
    pub fn refuses(&self) -> bool {
        !self.refusal.is_empty()
    }

    /// The reason the Provider cut this clean answer short (`response.incomplete`), if it did;
    /// a refusal that ends cleanly is `content_filter`, the Responses vocabulary's name for a
    /// model that declines (as Anthropic's `refusal` stop and Gemini's `SAFETY` read).
    pub fn truncation(&self) -> Option<&str> {
        match &self.then {
            Ending::Incomplete(reason) => Some(reason),
            Ending::Completed if self.refuses() => Some("content_filter"),
            _ => None,
        }
    }

    /// True when the answer is not a clean end of a response: an HTTP error, or a stream that
    /// ends in an error, a drop, a malformed frame or without a terminal event.
    pub fn fails(&self) -> bool {
        self.status.is_some() || !matches!(self.then, Ending::Completed | Ending::Incomplete(_))
    }
}

impl Script {
    /// A script with only the root route.
    pub fn root(responses: Vec<Response>) -> Self {
        Self { routes: BTreeMap::from([(ROOT.to_owned(), responses)]), ..Self::default() }
    }

    /// Reads a script file (`[[routes.<name>]]` tables).
    pub fn from_toml_str(text: &str) -> Result<Self, ScriptError> {
        let script: Script = toml::from_str(text)?;
        script.validate()
    }

    /// Reads a scenario file leniently: `turn[*].respond` arrays, in order, become route
    /// [`ROOT`], and `[config] exhausted` the script's; every other key is ignored (responses
    /// themselves stay strict).
    pub fn from_scenario_toml(text: &str) -> Result<Self, ScriptError> {
        #[derive(Deserialize)]
        struct Scenario {
            #[serde(default)]
            turn: Vec<Turn>,
            #[serde(default)]
            config: Config,
        }
        #[derive(Deserialize, Default)]
        struct Config {
            #[serde(default)]
            exhausted: Exhausted,
        }
        #[derive(Deserialize)]
        struct Turn {
            #[serde(default)]
            respond: Vec<Response>,
        }
        let scenario: Scenario = toml::from_str(text)?;
        let script = Self::root(scenario.turn.into_iter().flat_map(|t| t.respond).collect());
        Script { exhausted: scenario.config.exhausted, ..script }.validate()
    }

    /// Rejects self-contradictory responses (a non-error `status`, `retry_after` without
    /// `status`, pauses out of order, a call with both `args` and `raw_args`, a refusal with
    /// text or calls).
    pub fn validate(self) -> Result<Self, ScriptError> {
        for (route, responses) in &self.routes {
            for (index, response) in responses.iter().enumerate() {
                let out_of_order = response.pause.windows(2).find(|pair| pair[1].after <= pair[0].after);
                let both_args = response.calls.iter().find(|call| call.raw_args.is_some() && !call.args.is_null());
                let refusal_with = response.refuses() && !(response.text.is_empty() && response.calls.is_empty());
                let (key, problem) = match (response.status, response.retry_after, out_of_order) {
                    (Some(s), _, _) if !(400..=599).contains(&s) => ("status", format!("status {s} is not 4xx/5xx")),
                    (None, Some(_), _) => ("retry_after", "retry_after needs a status".to_owned()),
                    (_, _, Some(pair)) => (
                        "pause",
                        format!(
                            "pauses go in order of `after`, each after more frames than the one before \
                             (after = {} follows after = {})",
                            pair[1].after, pair[0].after
                        ),
                    ),
                    _ if refusal_with => ("refusal", "a refusal comes with no `text` and no `calls`".to_owned()),
                    _ => match both_args {
                        Some(call) => ("raw_args", format!("call `{}` gives both `args` and `raw_args`", call.name)),
                        None => continue,
                    },
                };
                return Err(ScriptError::Invalid { route: route.clone(), index, key, problem });
            }
        }
        Ok(self)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The one writer of each fault enum reads back through the scenario reader as written.
    #[test]
    fn endings_and_tool_outcomes_read_back_as_written() {
        let code = || "server_error".to_owned();
        let endings = [
            Ending::Incomplete("max_output_tokens".into()),
            Ending::Error(code()),
            Ending::Failed(code()),
            Ending::Disconnect,
            Ending::Eof,
            Ending::Malformed,
        ];
        for then in endings {
            let response: Response = toml::from_str(&format!("then = {}", then.toml().unwrap())).unwrap();
            assert_eq!(response.then, then);
        }
        assert!(Ending::Completed.toml().is_none());
        let outcomes = [
            ToolOutcome::Result("Buy bread.".into()),
            ToolOutcome::Error("permission \"denied\"".into()),
            ToolOutcome::RpcError("gone".into()),
            ToolOutcome::Crash,
            ToolOutcome::Hang,
            ToolOutcome::SlowMs(2_000),
        ];
        let written: Vec<String> = outcomes.iter().map(|outcome| outcome.toml().to_string()).collect();
        assert_eq!(
            written,
            [
                r#"{ result = "Buy bread." }"#,
                r#"{ error = 'permission "denied"' }"#,
                r#"{ rpc_error = "gone" }"#,
                r#""crash""#,
                r#""hang""#,
                "{ slow_ms = 2000 }",
            ]
        );
        for outcome in outcomes {
            let call: Call = toml::from_str(&format!("name = \"read\"\noutcome = {}", outcome.toml())).unwrap();
            assert_eq!(call.outcome, Some(outcome));
        }
    }

    #[test]
    fn visible_text_stops_at_the_cut() {
        let response = |cut_after| Response { text: vec!["a".into(), "b".into()], cut_after, ..Response::default() };
        assert_eq!(response(None).visible_text(), "ab");
        // created, in_progress, item added, part added, then the first delta.
        assert_eq!(response(Some(5)).visible_text(), "a");
        assert_eq!(response(Some(4)).visible_text(), "");
        let frames = crate::dialect::responses::encode(
            &response(Some(5)),
            &crate::dialect::EncodeContext { response_id: "r".into(), model: "m".into(), item_base: 1 },
        );
        let deltas = frames.iter().filter(|step| matches!(step, crate::dialect::Step::Bytes(b) if b.starts_with(b"event: response.output_text.delta"))).count();
        assert_eq!(deltas, 1);
    }

    #[test]
    fn scenario_file_collects_turn_responses() {
        let text = r#"
title = "retry after partial"
covers = ["retry", "partial"]

[[turn]]
prompt = "hello"
expect = { text = "Useful partial" }
respond = [
  { text = ["Useful ", "partial"], then = { error = "server_error" } },
  { status = 429, retry_after = 2 },
]

[[turn]]
prompt = "again"
[[turn.respond]]
calls = [{ name = "shell", args = { cmd = "ls", timeout = 5 } }]
then = "eof"
usage = { input = 7 }
"#;
        let script = Script::from_scenario_toml(text).unwrap();
        let root = &script.routes[ROOT];
        assert_eq!(root.len(), 3);
        assert_eq!(root[0].then, Ending::Error("server_error".into()));
        assert_eq!((root[1].status, root[1].retry_after), (Some(429), Some(2)));
        assert_eq!(root[2].then, Ending::Eof);
        assert_eq!(root[2].calls[0].args["timeout"], 5);
        assert_eq!(root[2].effective_usage(), Usage { input: 7, ..Usage::default() });
        assert_eq!(root[0].effective_usage(), Usage::DEFAULT);
    }

    #[test]
    fn script_file_and_endings() {
        let text = r#"
[[routes.root]]
text = ["hi"]
then = { incomplete = "max_output_tokens" }
[[routes.side]]
then = "disconnect"
pause = { after = 3, ms = 100 }
"#;
        let script = Script::from_toml_str(text).unwrap();
        assert_eq!(script.routes[ROOT][0].then, Ending::Incomplete("max_output_tokens".into()));
        assert_eq!(script.routes["side"][0].pause, [Pause { after: 3, ms: 100 }]);
    }

    /// `pause` is one table, as it always was, or a list of them in order of `after`; a key
    /// `Pause` does not know is named, in either form, and so are pauses out of order.
    #[test]
    fn pause_is_one_table_or_a_list() {
        let respond = |pause: &str| {
            format!("title = \"x\"\n\n[[turn]]\nprompt = \"p\"\nrespond = [{{ text = [\"a\"], pause = {pause} }}]\n")
        };
        let pauses = |pause: &str| {
            Script::from_scenario_toml(&respond(pause)).map(|script| script.routes[ROOT][0].pause.clone())
        };
        assert_eq!(pauses("{ after = 0, ms = 800 }").unwrap(), [Pause { after: 0, ms: 800 }]);
        assert_eq!(
            pauses("[{ after = 0, ms = 800 }, { after = 5, ms = 3000 }]").unwrap(),
            [Pause { after: 0, ms: 800 }, Pause { after: 5, ms: 3000 }]
        );
        assert_eq!(pauses("[]").unwrap(), []);
        for unknown in ["{ after = 0, mss = 800 }", "[{ after = 0, ms = 1 }, { after = 2, mss = 800 }]"] {
            let message = pauses(unknown).unwrap_err().to_string();
            assert!(message.contains("unknown field `mss`") && message.contains("line 5"), "{message}");
        }
        let message = pauses("3").unwrap_err().to_string();
        assert!(message.contains("a pause `{ after = N, ms = D }` or an array of them"), "{message}");
        let message = pauses("[{ after = 5, ms = 1 }, { after = 5, ms = 2 }]").unwrap_err().to_string();
        assert!(
            message.contains("pauses go in order of `after`") && message.contains("after = 5 follows after = 5"),
            "{message}"
        );
    }

    #[test]
    fn unknown_key_in_response_names_key_and_line() {
        let text = "title = \"x\"\n\n[[turn]]\nprompt = \"p\"\nrespond = [{ txet = [\"a\"] }]\n";
        let message = Script::from_scenario_toml(text).unwrap_err().to_string();
        assert!(message.contains("txet"), "{message}");
        assert!(message.contains("line 5"), "{message}");
    }

    #[test]
    fn contradictory_response_is_rejected() {
        let err = Script::from_toml_str("[[routes.root]]\nretry_after = 3\n").unwrap_err();
        assert!(err.to_string().contains("retry_after needs a status"), "{err}");
        assert!(Script::from_toml_str("[[routes.root]]\nstatus = 200\n").is_err());
    }
}
