//! Nil-safe rendering (ADR-012 "Nil-Safe Rendering Contract", part B.2.9): missing, null, empty and
//! literal `"<nil>"` payload values are absent, so no Go stringification artifact reaches Telegram.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Render;

/// A helper a `render` step calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Helper {
    /// [`rpc_string`] of `value`.
    RpcString,
    /// [`string_value`] of `value` with `fallback`.
    StringValue,
    /// [`payload_string`] of `value`.
    PayloadString,
    /// [`map_string`] of `value` (a map) at `key`.
    MapString,
    /// [`render_command`] of `value`.
    RenderCommand,
    /// [`clean_tool_text`] of `value`'s text.
    CleanToolText,
    /// [`clean_nil_literal`] of `value`'s text.
    CleanNilLiteral,
    /// [`render_event_msg`] of `ts` and `value`.
    EventMsg,
    /// [`summary_messages`] of `value`.
    Summary,
    /// [`details_messages`] of `value`.
    Details,
    /// [`choice_options`] of `value`.
    ChoiceOptions,
    /// [`answer_choice`] of `value`.
    AnswerChoice,
    /// [`user_input_response`] of `value` and `answer`.
    UserInputResponse,
}

/// A helper's output: `text`, `options`, `messages` or `payload`, whichever the helper makes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rendered {
    /// The helper.
    pub helper: Helper,
    /// A text result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Choice labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    /// Telegram messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<String>>,
    /// A JSON payload to send.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    /// Whether any output contains the nil literal (upstream's `telegram_render_contains_nil` marker).
    pub contains_nil: bool,
}

/// Runs one helper.
pub fn call(render: &Render) -> Rendered {
    let value = &render.value;
    let mut rendered = Rendered {
        helper: render.helper,
        text: None,
        options: None,
        messages: None,
        payload: None,
        contains_nil: false,
    };
    match render.helper {
        Helper::RpcString => rendered.text = Some(rpc_string(value)),
        Helper::StringValue => rendered.text = Some(string_value(value, &render.fallback)),
        Helper::PayloadString => rendered.text = Some(payload_string(Some(value))),
        Helper::MapString => {
            rendered.text = Some(value.as_object().map(|map| map_string(map, &render.key)).unwrap_or_default());
        }
        Helper::RenderCommand => rendered.text = Some(render_command(value)),
        Helper::CleanToolText => rendered.text = Some(clean_tool_text(&plain_text(value))),
        Helper::CleanNilLiteral => rendered.text = Some(clean_nil_literal(&plain_text(value))),
        Helper::EventMsg => rendered.text = Some(render_event_msg(&render.ts, value)),
        Helper::Summary => rendered.messages = Some(summary_messages(value)),
        Helper::Details => rendered.messages = Some(details_messages(value)),
        Helper::ChoiceOptions => rendered.options = Some(choice_options(value)),
        Helper::AnswerChoice => rendered.text = Some(answer_choice(value)),
        Helper::UserInputResponse => rendered.payload = Some(user_input_response(value, &render.answer)),
    }
    let texts = [
        rendered.text.clone().unwrap_or_default(),
        rendered.options.clone().unwrap_or_default().join("\n"),
        rendered.messages.clone().unwrap_or_default().join("\n"),
        rendered.payload.as_ref().map(Value::to_string).unwrap_or_default(),
    ];
    rendered.contains_nil = texts.iter().any(|text| text.contains(NIL_LITERAL));
    rendered
}

/// The literal Go prints for a nil value; upstream payloads carry it as data.
pub const NIL_LITERAL: &str = "<nil>";

/// A value's text the way Go's `%v` shows scalars; objects and arrays as compact JSON.
fn plain_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        Value::Number(number) => match number.as_f64() {
            Some(float) if float.fract() == 0.0 && float.abs() < 1e15 => format!("{}", float as i64),
            _ => number.to_string(),
        },
        other => other.to_string(),
    }
}

/// `rpcString`: nil, `""`, blanks and `"<nil>"` are `""`; anything else is its trimmed text (`42.0` is `"42"`).
pub fn rpc_string(value: &Value) -> String {
    let text = plain_text(value).trim().to_owned();
    if text == NIL_LITERAL { String::new() } else { text }
}

/// `stringValue`: a string unless it is the nil literal; a non-string is the fallback.
pub fn string_value(value: &Value, fallback: &str) -> String {
    match value {
        Value::String(text) if text.trim() != NIL_LITERAL => text.clone(),
        _ => fallback.to_owned(),
    }
}

/// `payloadString`: nil is `""`, otherwise the trimmed text with the nil literal removed.
pub fn payload_string(value: Option<&Value>) -> String {
    value.map(rpc_string).unwrap_or_default()
}

/// `payloadMapString`: one key of a map, nil-safe.
pub fn map_string(map: &Map<String, Value>, key: &str) -> String {
    payload_string(map.get(key))
}

/// `firstPayloadString`: the first key whose value is meaningful.
pub fn first_string(map: &Map<String, Value>, keys: &[&str]) -> String {
    keys.iter().map(|key| map_string(map, key)).find(|text| !text.is_empty()).unwrap_or_default()
}

/// `cleanTelegramNilLiteral`: every `"<nil>"` substring removed, before entity offsets are computed.
pub fn clean_nil_literal(text: &str) -> String {
    text.replace(NIL_LITERAL, "")
}

/// `cleanToolText`: empty, nil and empty-container renderings are no text at all.
pub fn clean_tool_text(text: &str) -> String {
    let trimmed = text.trim();
    if matches!(trimmed, "" | NIL_LITERAL | "{}" | "[]" | "map[]") { String::new() } else { trimmed.to_owned() }
}

/// `renderCommand`: a command's label, skipping nil-like parts; `""` when nothing meaningful remains.
pub fn render_command(value: &Value) -> String {
    match value {
        Value::Array(parts) => {
            let parts: Vec<String> = parts.iter().map(rpc_string).filter(|part| !part.is_empty()).collect();
            parts.join(" ")
        }
        Value::Object(map) => {
            for key in ["command", "cmd", "input", "text"] {
                if let Some(found) = map.get(key) {
                    let text = render_command(found);
                    if !text.is_empty() {
                        return text;
                    }
                }
            }
            let from_arguments = match map.get("arguments") {
                Some(Value::String(json)) => match serde_json::from_str::<Value>(json) {
                    Ok(Value::Object(arguments)) => arguments.get("cmd").map(render_command).unwrap_or_default(),
                    _ => String::new(),
                },
                Some(Value::Object(arguments)) => arguments.get("cmd").map(render_command).unwrap_or_default(),
                _ => String::new(),
            };
            if !from_arguments.is_empty() {
                return from_arguments;
            }
            first_string(map, &["name", "tool"])
        }
        other => clean_tool_text(&rpc_string(other)),
    }
}

/// The label of one choice: a string, or the first meaningful `label`, `text` or `value`.
fn choice_label(choice: &Value) -> String {
    match choice {
        Value::Object(map) => first_string(map, &["label", "text", "value"]),
        other => rpc_string(other),
    }
}

/// `extractChoiceOptions`: the option labels of a plan or question payload, nil-like entries skipped.
///
/// Looks at `choices`, `options`, `suggestions`, `responses`, then `questions[0].options`.
pub fn choice_options(payload: &Value) -> Vec<String> {
    let Value::Object(map) = payload else { return Vec::new() };
    let list = ["choices", "options", "suggestions", "responses"]
        .iter()
        .find_map(|key| map.get(*key).and_then(Value::as_array))
        .or_else(|| {
            map.get("questions")
                .and_then(Value::as_array)
                .and_then(|questions| questions.first())
                .and_then(|question| question.get("options"))
                .and_then(Value::as_array)
        });
    list.map(|choices| choices.iter().map(choice_label).filter(|label| !label.is_empty()).collect()).unwrap_or_default()
}

/// The callback text for a choice answer: the upstream refusal when the option carries no text.
pub fn answer_choice(payload: &Value) -> String {
    let text = match payload {
        Value::Object(map) => first_string(map, &["text", "label", "value"]),
        other => rpc_string(other),
    };
    if text.is_empty() { "Answer option is empty.".to_owned() } else { text }
}

/// The `requestUserInput` response: the answer under `text`, `value`, `response` and `input`, and
/// `answers` keyed by question id only for ids that are meaningful (the key is left out when none are).
pub fn user_input_response(request: &Value, answer: &str) -> Value {
    let mut response = Map::new();
    for key in ["text", "value", "response", "input"] {
        response.insert(key.to_owned(), Value::String(answer.to_owned()));
    }
    let mut answers = Map::new();
    if let Some(questions) = request.get("questions").and_then(Value::as_array) {
        for question in questions {
            let id = question.as_object().map(|map| map_string(map, "id")).unwrap_or_default();
            if !id.is_empty() {
                answers.insert(id, serde_json::json!({ "answers": [answer] }));
            }
        }
    }
    if !answers.is_empty() {
        response.insert("answers".to_owned(), Value::Object(answers));
    }
    Value::Object(response)
}

/// `renderEventMsg` (codex-tg `internal/daemon/log_archive.go`): one rollout `event_msg` as a log
/// line, `[<ts>] <HEADER> ...`; an exec end's output follows on lines indented by four spaces.
/// An unknown type renders nothing. Every field goes through [`map_string`], so a missing or
/// `<nil>` command leaves only the (upstream) trailing space.
pub fn render_event_msg(ts: &str, payload: &Value) -> String {
    let Value::Object(map) = payload else { return String::new() };
    let field = |key: &str| map_string(map, key);
    match field("type").as_str() {
        "task_started" => format!("[{ts}] TASK STARTED turn={}", field("turn_id")),
        "thread_name_updated" => format!("[{ts}] THREAD NAME {}", field("thread_name")),
        "user_message" => format!("[{ts}] USER {}", field("message")),
        "agent_message" => {
            let phase = field("phase");
            let phase = if phase.is_empty() { "message".to_owned() } else { phase };
            format!("[{ts}] ASSISTANT ({phase}) {}", field("message"))
        }
        "exec_command_end" => {
            let command = map.get("command").map(render_command).unwrap_or_default();
            let mut text = format!("[{ts}] TOOL OUTPUT ({}) {command}", field("status"));
            let output = field("aggregated_output");
            if !output.is_empty() {
                let indented: Vec<String> =
                    output.replace("\r\n", "\n").split('\n').map(|line| format!("    {line}")).collect();
                text.push('\n');
                text.push_str(&indented.join("\n"));
            }
            text
        }
        "approval_request" => format!("[{ts}] APPROVAL REQUEST {}", field("question")),
        "user_input_request" => format!("[{ts}] INPUT REQUEST {}", field("question")),
        "task_complete" => format!("[{ts}] TASK COMPLETE {}", field("last_agent_message")),
        "turn_aborted" => format!("[{ts}] TURN ABORTED reason={}", field("reason")),
        _ => String::new(),
    }
}

/// The body of `renderSummaryPanelMarkdown` (codex-tg `internal/daemon/panels.go`), without the
/// visual header and timing footer the reference does not model: `Status: <readableStatus>`, then
/// each entry oldest first as `[label]` and its text with the nil literal deleted, or
/// `No agent messages yet.`.
///
/// `summary` is `{"latest_turn_status": ..., "thread_status": ..., "entries": [{"phase": ..., "text": ...}]}`,
/// entries newest first as a snapshot holds them.
pub fn summary_messages(summary: &Value) -> Vec<String> {
    let status = [summary.get("latest_turn_status"), summary.get("thread_status")]
        .into_iter()
        .map(payload_string)
        .find(|status| !status.is_empty())
        .unwrap_or_else(|| "idle".to_owned());
    let mut text = format!("Status: {status}");
    let entries = summary.get("entries").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    if entries.is_empty() {
        text.push_str("\n\nNo agent messages yet.");
    }
    for entry in entries.iter().rev().filter_map(Value::as_object) {
        let body = clean_nil_literal(&payload_string(entry.get("text"))).trim().to_owned();
        if body.is_empty() {
            continue;
        }
        text.push_str(&format!("\n\n{}\n{body}", summary_label(&map_string(entry, "phase"))));
    }
    vec![text]
}

/// The Details card: the turn's detail items oldest first, each as `[kind]` and its text (a
/// tool as its command, an output as its cleaned text), an item with nothing meaningful left
/// out; `No details yet.` when none remains. The nil-safe rules apply to every part (seed 003
/// "Nil-safe rendering": "nil-like payload values do not leak into command, Details, summary,
/// tool, output"); the layout is the reference's own.
///
/// `details` is `[{"kind": ..., "text": ..., "command": ..., "output": ...}]`, `kind` one of
/// `user`, `commentary`, `plan`, `tool`, `output`, `final`.
pub fn details_messages(details: &Value) -> Vec<String> {
    let items = details.as_array().map(Vec::as_slice).unwrap_or(&[]);
    let lines: Vec<String> = items
        .iter()
        .filter_map(Value::as_object)
        .filter_map(|item| {
            let kind = map_string(item, "kind");
            let body = match kind.as_str() {
                "tool" => item.get("command").map(render_command).unwrap_or_default(),
                "output" => {
                    clean_tool_text(&clean_nil_literal(&plain_text(item.get("output").unwrap_or(&Value::Null))))
                }
                _ => clean_nil_literal(&payload_string(item.get("text"))).trim().to_owned(),
            };
            let label = if kind.is_empty() { "detail".to_owned() } else { kind };
            (!body.is_empty()).then(|| format!("[{label}]\n{body}"))
        })
        .collect();
    if lines.is_empty() { vec!["No details yet.".to_owned()] } else { vec![lines.join("\n\n")] }
}

/// `summaryAgentLabel`: `[agent]` without a phase, `[final]` for a final answer, else `[phase]`.
fn summary_label(phase: &str) -> String {
    match phase.to_lowercase().as_str() {
        "" => "[agent]".to_owned(),
        "final_answer" => "[final]".to_owned(),
        other => format!("[{other}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rpc_string_skips_nil_like_values() {
        for value in [json!(null), json!(""), json!(" "), json!("<nil>")] {
            assert_eq!(rpc_string(&value), "");
        }
        assert_eq!(rpc_string(&json!(42.0)), "42");
        assert_eq!(rpc_string(&json!(1.5)), "1.5");
    }

    #[test]
    fn string_value_treats_nil_literal_as_missing() {
        assert_eq!(string_value(&json!("<nil>"), "fallback"), "fallback");
        assert_eq!(string_value(&json!("ok"), "fallback"), "ok");
        assert_eq!(string_value(&json!(3), "fallback"), "fallback");
    }

    #[test]
    fn commands_skip_nil_like_parts() {
        assert_eq!(render_command(&json!(null)), "");
        assert_eq!(render_command(&json!([null, "<nil>", "echo ok"])), "echo ok");
        assert_eq!(render_command(&json!({"command": "<nil>", "input": "printf ok"})), "printf ok");
        assert_eq!(render_command(&json!({"name": "read_thread_terminal", "arguments": "{}"})), "read_thread_terminal");
        assert_eq!(render_command(&json!({"name": "exec_command", "arguments": "{\"cmd\":\"sleep 1\"}"})), "sleep 1");
    }

    #[test]
    fn choices_fall_back_past_nil_labels() {
        let options =
            json!([{"text": "a"}, {"value": "b"}, {"label": "c"}, {"label": "<nil>", "text": "d"}, {}, "<nil>"]);
        assert_eq!(choice_options(&json!({ "options": options })), ["a", "b", "c", "d"]);
        assert_eq!(choice_options(&json!({"questions": [{ "options": options }]})), ["a", "b", "c", "d"]);
    }

    #[test]
    fn details_skip_nil_like_parts() {
        let details = json!([
            { "kind": "commentary", "text": "Looking <nil>around." },
            { "kind": "tool", "command": [null, "<nil>", "ls"] },
            { "kind": "output", "output": "map[]" },
            { "kind": "<nil>", "text": "<nil>" },
            { "kind": "final", "text": "Done." }
        ]);
        assert_eq!(details_messages(&details), ["[commentary]\nLooking around.\n\n[tool]\nls\n\n[final]\nDone."]);
        assert_eq!(details_messages(&json!(null)), ["No details yet."]);
    }

    #[test]
    fn summary_removes_the_nil_literal() {
        let summary =
            json!({"latest_turn_status": "<nil>", "entries": [{"phase": "<nil>", "text": "Before <nil> after"}]});
        assert_eq!(summary_messages(&summary), ["Status: idle\n\n[agent]\nBefore  after"]);
    }

    #[test]
    fn user_input_response_drops_nil_question_ids() {
        let request = json!({"questions": [{"id": "<nil>", "question": "Pick one."}, {"question": "Missing id."}]});
        let response = user_input_response(&request, "Yes");
        assert!(response.get("answers").is_none());
        assert_eq!(response["input"], "Yes");
    }
}
