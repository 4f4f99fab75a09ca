//! The recorded exchanges as a scenario file: one `[[turn]]` per prompt, each model call's
//! answer a response of its turn's `respond`, written with toml_edit so the file shows a call's
//! arguments in the order the Provider sent them and the notes become comments.
//!
//! A request starts a turn when its conversation adds a user message to the one before it; a
//! request that adds only tool results, or repeats it (a retry), continues the turn. A request
//! whose conversation does not continue the Session's (title generation, a classifier) is a
//! side request and is left out, named in a comment: a profile answers side requests apart
//! from the script (`side_requests`), so kept as a turn's response it would answer the wrong
//! request on replay. Requests that are not model calls (a `HEAD` probe, a model list) are
//! left out the same way.

use bytes::Bytes;
use serde_json::Value;
use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Table, value};

use crate::body::Body;
use crate::conversation::Message;
use crate::dialect::{Asked, Dialect};
use crate::record::draft::Recorded;
use crate::record::secrets::Secrets;
use crate::script::{Call, Response};

/// One request the recorder forwarded and what its answer replays as.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// Its place among the requests the recorder saw, from 1.
    pub number: usize,
    /// The HTTP method.
    pub method: String,
    /// The endpoint path, without query.
    pub path: String,
    /// The request body.
    pub body: Bytes,
    /// The answer, read.
    pub recorded: Recorded,
}

/// A turn being assembled.
#[derive(Debug, Default)]
struct Turn {
    prompt: String,
    responses: Vec<Response>,
    notes: Vec<String>,
}

/// The scenario TOML of `exchanges`, recorded in `dialect` from `upstream`, with `notes` (what
/// was not recorded at all) and every credential in `secrets` scrubbed from it.
pub fn render(
    dialect: Dialect,
    upstream: &str,
    exchanges: &[Exchange],
    notes: Vec<String>,
    secrets: &Secrets,
) -> String {
    // Each model call's user messages and tool results, the part of a conversation a Session grows.
    let inputs: Vec<Option<Vec<Message>>> = exchanges.iter().map(|exchange| input(dialect, exchange)).collect();
    let extends = |earlier: &[Message], later: &[Message]| later.starts_with(earlier);
    // The Session's first request is the first one a later request continues.
    let first = (0..inputs.len())
        .find(|&index| {
            let Some(earlier) = &inputs[index] else { return false };
            inputs[index + 1..].iter().flatten().any(|later| extends(earlier, later))
        })
        .or_else(|| inputs.iter().position(Option::is_some));
    let mut notes = notes;
    let mut turns: Vec<Turn> = Vec::new();
    let mut model = None;
    let mut last: Option<&[Message]> = None;
    for (index, (exchange, input)) in exchanges.iter().zip(&inputs).enumerate() {
        let request = format!("request {} ({} {})", exchange.number, exchange.method, exchange.path);
        let Some(input) = input else {
            notes.push(format!("{request} left out: not a {dialect} model call (its method, path or body)"));
            continue;
        };
        let continues = last.is_none_or(|last| extends(last, input));
        if first.is_some_and(|first| index < first) || !continues {
            notes.push(format!(
                "{request} left out as a side request: its conversation does not continue the Session's"
            ));
            continue;
        }
        let n_users = |messages: &[Message]| messages.iter().filter(|m| matches!(m, Message::User { .. })).count();
        if last.is_none_or(|last| n_users(input) > n_users(last)) {
            let prompt = input.iter().rev().find_map(|message| match message {
                Message::User { text } => Some(text.clone()),
                _ => None,
            });
            turns.push(Turn { prompt: prompt.unwrap_or_default(), ..Turn::default() });
        }
        if model.is_none() {
            let body = Body::new(exchange.body.clone());
            model = dialect.model(&Asked { path: &exchange.path, body: &body });
        }
        last = Some(input);
        if let Some(turn) = turns.last_mut() {
            let number = turn.responses.len() + 1;
            turn.notes.extend(exchange.recorded.notes.iter().map(|note| format!("response {number}: {note}")));
            turn.responses.push(exchange.recorded.response.clone());
        }
    }
    let text = document(dialect, upstream, model.as_deref(), &turns, &notes);
    secrets.scrub(&text)
}

/// The user messages and tool results of a model call's conversation; `None` for a request
/// that is not one.
fn input(dialect: Dialect, exchange: &Exchange) -> Option<Vec<Message>> {
    if exchange.method != "POST" || !dialect.serves(&exchange.path) {
        return None;
    }
    let body: Value = serde_json::from_slice(&exchange.body).ok()?;
    let conversation = dialect.read(&body).ok()?;
    let grown = |message: &Message| matches!(message, Message::User { .. } | Message::ToolResult { .. });
    Some(conversation.messages.into_iter().filter(grown).collect())
}

/// The document: header comments, title, config, then each turn under its notes.
fn document(dialect: Dialect, upstream: &str, model: Option<&str>, turns: &[Turn], notes: &[String]) -> String {
    let mut document = DocumentMut::new();
    let mut header = vec![
        format!("# Recorded by `mock-provider record` from {upstream} in the {} dialect.", dialect.human()),
        "# Each turn's `expect` is the recorder's guess from its last answer: check it, and add `covers`.".to_owned(),
    ];
    header.extend(notes.iter().map(|note| format!("# Note: {note}.")));
    document.decor_mut().set_prefix(header.iter().map(|line| format!("{line}\n")).collect::<String>());
    document.insert("title", value(format!("Recorded from {upstream}")));
    document.insert("covers", value(Array::new()));
    let mut config = Table::new();
    config.insert("dialect", value(dialect.key()));
    if let Some(model) = model {
        config.insert("model", value(model));
    }
    document.insert("config", config.into());
    let mut tables = ArrayOfTables::new();
    for turn in turns {
        let mut table = Table::new();
        let mut notes = turn.notes.clone();
        table.insert("prompt", value(&turn.prompt));
        if let Some(expect) = turn.responses.last().and_then(expect) {
            table.insert("expect", value(expect));
        }
        let mut respond: Array = turn.responses.iter().map(|response| response_table(response, &mut notes)).collect();
        for response in respond.iter_mut() {
            response.decor_mut().set_prefix("\n  ");
        }
        respond.set_trailing_comma(true);
        respond.set_trailing("\n");
        table.insert("respond", value(respond));
        let comments: String = notes.iter().map(|note| format!("# Note: {note}.\n")).collect();
        table.decor_mut().set_prefix(format!("\n{comments}"));
        tables.push(table);
    }
    document.insert("turn", tables.into());
    document.to_string()
}

/// The terminal state a turn whose last answer is `response` most likely has: none (the
/// default, `completed`) for a clean answer.
fn expect(response: &Response) -> Option<&'static str> {
    if !response.fails() {
        return None;
    }
    Some(if response.visible_text().is_empty() { "failed" } else { "partial_failed" })
}

/// One response as an inline table, its keys in the scenario format's order, defaults left out.
fn response_table(response: &Response, notes: &mut Vec<String>) -> InlineTable {
    let mut table = InlineTable::new();
    let strings = |texts: &[String]| texts.iter().map(String::as_str).collect::<Array>();
    if !response.reasoning.is_empty() {
        let items = response.reasoning.iter().map(|reasoning| {
            let mut item = InlineTable::new();
            item.insert("summary", strings(&reasoning.summary).into());
            if let Some(encrypted) = &reasoning.encrypted {
                item.insert("encrypted", encrypted.into());
            }
            item
        });
        table.insert("reasoning", items.collect::<Array>().into());
    }
    if !response.text.is_empty() {
        table.insert("text", strings(&response.text).into());
    }
    if !response.refusal.is_empty() {
        table.insert("refusal", strings(&response.refusal).into());
    }
    if !response.calls.is_empty() {
        let calls = response.calls.iter().map(|call| call_table(call, notes));
        table.insert("calls", calls.collect::<Array>().into());
    }
    if let Some(usage) = response.usage {
        let mut item = InlineTable::new();
        for (key, count) in
            [("input", usage.input), ("cached", usage.cached), ("output", usage.output), ("reasoning", usage.reasoning)]
        {
            item.insert(key, integer(count));
        }
        table.insert("usage", item.into());
    }
    if let Some(then) = response.then.toml() {
        table.insert("then", then);
    }
    let pauses = response.pause.iter().map(|pause| {
        let mut item = InlineTable::new();
        item.insert("after", integer(pause.after as u64));
        item.insert("ms", integer(pause.ms));
        item
    });
    match response.pause.len() {
        0 => {}
        1 => table.extend(pauses.map(|pause| ("pause", toml_edit::Value::from(pause)))),
        _ => {
            table.insert("pause", pauses.collect::<Array>().into());
        }
    }
    let counts = [
        ("cut_after", response.cut_after.map(|n| n as u64)),
        ("status", response.status.map(u64::from)),
        ("retry_after", response.retry_after),
    ];
    for (key, count) in counts {
        if let Some(count) = count {
            table.insert(key, integer(count));
        }
    }
    table
}

/// One scripted call as an inline table: its name, its arguments (raw when they are not
/// JSON) and its id when the script gives one.
fn call_table(call: &Call, notes: &mut Vec<String>) -> InlineTable {
    let mut item = InlineTable::new();
    item.insert("name", call.name.as_str().into());
    match &call.raw_args {
        Some(text) => item.insert("raw_args", text.as_str().into()),
        None => item.insert("args", toml_of(&call.args, notes)),
    };
    if let Some(call_id) = &call.call_id {
        item.insert("call_id", call_id.as_str().into());
    }
    item
}

fn integer(count: u64) -> toml_edit::Value {
    i64::try_from(count).unwrap_or(i64::MAX).into()
}

/// Call arguments as TOML, keys in the order the Provider sent them. TOML has no null, and an
/// integer past `i64::MAX` no integer: each is kept as a string, with a note.
fn toml_of(json: &Value, notes: &mut Vec<String>) -> toml_edit::Value {
    match json {
        Value::Object(fields) => {
            fields.iter().map(|(key, field)| (key.as_str(), toml_of(field, notes))).collect::<InlineTable>().into()
        }
        Value::Array(items) => items.iter().map(|item| toml_of(item, notes)).collect::<Array>().into(),
        Value::String(text) => text.as_str().into(),
        Value::Bool(flag) => (*flag).into(),
        Value::Number(number) if number.is_i64() => number.as_i64().unwrap_or_default().into(),
        Value::Number(number) if number.is_f64() => number.as_f64().unwrap_or_default().into(),
        other => {
            notes.push(format!("the argument `{other}` has no TOML form: written as a string"));
            other.to_string().into()
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn exchange(number: usize, method: &str, input: Value, text: &str) -> Exchange {
        let body = Bytes::from(json!({ "model": "m", "input": input }).to_string());
        let response = Response { text: vec![text.to_owned()], ..Response::default() };
        let recorded = Recorded { response, notes: Vec::new() };
        Exchange { number, method: method.to_owned(), path: "/v1/responses".to_owned(), body, recorded }
    }

    fn user(text: &str) -> Value {
        json!({ "type": "message", "role": "user", "content": text })
    }

    /// A title request before the Session's first and one between its requests are side
    /// requests, left out; a retry and a tool result continue a turn; a new prompt starts one.
    #[test]
    fn turns_follow_prompts_and_side_requests_are_left_out() {
        let result = json!({ "type": "function_call_output", "call_id": "c1", "output": "A" });
        let exchanges = [
            exchange(1, "POST", json!([user("Write a title for: hi")]), "Greeting"),
            exchange(2, "POST", json!([user("hi")]), "retry me"),
            exchange(3, "POST", json!([user("hi")]), "call"),
            exchange(4, "HEAD", json!([]), ""),
            exchange(5, "POST", json!([user("hi"), result]), "Done."),
            exchange(6, "POST", json!([user("Summarise: hi")]), "Summary"),
            exchange(7, "POST", json!([user("hi"), result, user("next")]), "Next."),
        ];
        let text = render(Dialect::Responses, "http://up", &exchanges, Vec::new(), &Secrets::default());
        let script = crate::Script::from_scenario_toml(&text).unwrap();
        let texts: Vec<String> = script.routes[crate::ROOT].iter().map(|response| response.text.concat()).collect();
        assert_eq!(texts, ["retry me", "call", "Done.", "Next."], "{text}");
        let scenario: toml::Table = text.parse().unwrap();
        let prompts: Vec<&str> =
            scenario["turn"].as_array().unwrap().iter().map(|turn| turn["prompt"].as_str().unwrap()).collect();
        assert_eq!(prompts, ["hi", "next"]);
        for left_out in [
            "request 1 (POST /v1/responses) left out as a side request",
            "request 4 (HEAD /v1/responses) left out",
            "request 6 (POST /v1/responses) left out as a side request",
        ] {
            assert!(text.contains(left_out), "{left_out}: {text}");
        }
    }
}
