//! The Turn loop: a user message, Provider calls in a tool loop, and exactly one terminal
//! outcome with its durable evidence (ADR 0026 "Turn terminal states"; pixir.md 2).
//!
//! | outcome | Log evidence after `user_message` |
//! | --- | --- |
//! | `completed` | `provider_usage`, a clean `assistant_message` |
//! | `partial_failed` | `assistant_message` with `metadata.partial`, then `turn_failed` |
//! | `failed` | `turn_failed` |
//! | `timed_out` | optional partial `assistant_message`, `turn_failed` with `timeout_ms`, `elapsed_ms`, `next_actions` |
//! | `interrupted` | optional partial `assistant_message`, orphan repair, `turn_failed` |
//!
//! Cancellation is checked first whenever the Turn waits, so a cancel that arrived before a
//! completion wins, and one that arrives after the clean answer is recorded changes nothing
//! (TURN-CANCEL-EVIDENCE).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::Duration;

use serde_json::{Value, json};

use crate::compaction;
use crate::control::{CancelSignal, TurnOutcome};
use crate::event::{Data, ErrorKind, Payload, Prompt, TerminalStatus, object};
use crate::log::LogError;
use crate::provider::{Call, Delta, Finish, OutputItem, Provider, ProviderFailure, Reply, Usage, WireRequest};
use crate::session::Session;
use crate::tools::{Toolbox, failed};

/// A wait that either finished or was cancelled first.
enum Race<T> {
    Done(T),
    Cancelled,
}

async fn race<T>(cancel: &mut CancelSignal, work: impl Future<Output = T>) -> Race<T> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Race::Cancelled,
        value = work => Race::Done(value),
    }
}

impl Session {
    /// Runs one Turn to its terminal outcome with `tools`. `Err` only when the Log could not be written.
    pub async fn prompt(
        &mut self,
        tools: &mut Toolbox,
        text: &str,
        cancel: &mut CancelSignal,
    ) -> Result<TurnOutcome, LogError> {
        self.prompt_with(tools, &Prompt { text: text.to_owned(), ..Prompt::default() }, cancel).await
    }

    /// [`Session::prompt`] with the whole of a client's prompt: the Log records its images'
    /// descriptors, and the Provider requests carry them (LOG-NO-RESOURCE-BYTES).
    pub async fn prompt_with(
        &mut self,
        tools: &mut Toolbox,
        prompt: &Prompt,
        cancel: &mut CancelSignal,
    ) -> Result<TurnOutcome, LogError> {
        self.repair_orphans("before_start_turn")?;
        tools.prepare().await;
        tools.catch_up(self)?;
        self.attach(&prompt.images);
        self.record(Payload::user_message_of(prompt))?;
        let started = tokio::time::Instant::now();
        let budget = self.config.turn_timeout;
        let mut iteration = 0u32;
        loop {
            iteration += 1;
            self.publish(Payload::status("thinking"));
            tools.catch_up(self)?;
            let request = self.call(tools.definitions());
            let deadline = started + budget;
            if let Some(due) = compaction::due(self.history(), self.config.compact_at_tokens) {
                match self.compact(&request, &due, cancel, deadline, iteration).await? {
                    Race::Cancelled => return self.fail(cancelled(), "", started),
                    Race::Done(Some(failure)) => return self.fail(failure, "", started),
                    Race::Done(None) => {}
                }
            }
            let wire = self.wire_request(&request);
            let mut streamed = String::new();
            let provider = self.provider.clone();
            let streaming = tokio::time::timeout_at(deadline, stream_live(self, &provider, &wire, &mut streamed));
            let call = match race(cancel, streaming).await {
                Race::Done(call) => call,
                Race::Cancelled => return self.fail(cancelled(), &streamed, started),
            };
            let mut reply = match call {
                Err(_elapsed) => return self.fail(turn_timeout(budget), &streamed, started),
                Ok(Err(failure)) => return self.fail(failure, &streamed, started),
                Ok(Ok(reply)) => reply,
            };
            self.record(Payload::provider_usage(self.usage_data(&reply, iteration, &request)))?;
            let has_calls = reply.items.iter().any(|item| matches!(item, OutputItem::Call { .. }));
            if has_calls && !reply.text.is_empty() {
                self.record(Payload::assistant_message(&reply.text, Data::new()))?;
            }
            let items = std::mem::take(&mut reply.items);
            if let Race::Cancelled = self.record_output_items(tools, items, cancel).await? {
                return self.fail(cancelled(), "", started);
            }
            if has_calls {
                continue;
            }
            return self.complete(&reply);
        }
    }

    /// Records a reply's reasoning and runs its tool calls in order, each call's result
    /// recorded before the next starts; a call id the reply already gave is refused, not run.
    /// `Cancelled` when a cancel interrupts a call.
    async fn record_output_items(
        &mut self,
        tools: &mut Toolbox,
        mut items: Vec<OutputItem>,
        cancel: &mut CancelSignal,
    ) -> Result<Race<()>, LogError> {
        let repeated = rename_repeated_call_ids(&mut items);
        for item in &items {
            match item {
                OutputItem::Reasoning(item) => {
                    let model = self.config.model.clone();
                    self.record(Payload::reasoning(item.clone(), &model))?;
                }
                OutputItem::Call { call_id, name, args } => {
                    if let Some(given) = repeated.get(call_id) {
                        self.refuse_repeated_call(call_id, given, name, args)?;
                        continue;
                    }
                    self.record(Payload::tool_call(call_id, name, args.clone()))?;
                    match race(cancel, tools.execute(self, name, args)).await {
                        Race::Done(result) => self.record(Payload::tool_result(call_id, result?))?,
                        Race::Cancelled => return Ok(Race::Cancelled),
                    }
                }
            }
        }
        Ok(Race::Done(()))
    }

    /// Records the reply with no tool call as the Turn's answer, marked when the Provider
    /// truncated it, and completes the Turn.
    fn complete(&mut self, reply: &Reply) -> Result<TurnOutcome, LogError> {
        let truncation = match &reply.finish {
            Finish::Completed => None,
            Finish::Incomplete(reason) => Some(reason.clone()),
        };
        let metadata = truncation.as_ref().map_or_else(Data::new, |reason| {
            object(json!({"output_truncation": {"status": "truncated", "reason": reason}}))
        });
        self.record(Payload::assistant_message(&reply.text, metadata))?;
        self.publish(Payload::status("done"));
        Ok(TurnOutcome {
            status: TerminalStatus::Completed,
            error_kind: None,
            message: None,
            next_actions: Vec::new(),
            truncation,
        })
    }

    /// Asks the model for a summary of the range `due` names and records it with the call's
    /// usage (crate::compaction). Nothing it streams is shown: a summary is not an answer. A
    /// summary call that fails, runs past the Turn's deadline or answers no text is the Turn's
    /// failure (`failed`: no answer text was streamed), its `turn_failed` details naming the
    /// `compaction_instruction` it asked, so the Log explains that request too; History stays
    /// uncompacted, and the next Turn meets the same conditions.
    async fn compact(
        &mut self,
        call: &Call,
        due: &compaction::Due,
        cancel: &mut CancelSignal,
        deadline: tokio::time::Instant,
        iteration: u32,
    ) -> Result<Race<Option<ProviderFailure>>, LogError> {
        let wire = self.wire_request_with(call, &[compaction::instruction_item()]);
        let provider = self.provider.clone();
        let mut hidden = |_| {};
        let summarizing = tokio::time::timeout_at(deadline, provider.stream(&wire, &mut hidden));
        let asked = |mut failure: ProviderFailure| {
            failure.details.insert("compaction_instruction".into(), json!(compaction::INSTRUCTION));
            Ok(Race::Done(Some(failure)))
        };
        let reply = match race(cancel, summarizing).await {
            Race::Cancelled => return Ok(Race::Cancelled),
            Race::Done(Ok(Ok(reply))) => reply,
            Race::Done(Ok(Err(failure))) => return asked(failure),
            Race::Done(Err(_elapsed)) => return asked(turn_timeout(self.config.turn_timeout)),
        };
        let mut usage = self.usage_data(&reply, iteration, call);
        usage.insert("purpose".into(), json!("compaction"));
        self.record(Payload::provider_usage(usage))?;
        if reply.text.is_empty() {
            return asked(ProviderFailure {
                kind: ErrorKind::InvalidResponse,
                message: "the model answered the compaction request with no summary".to_owned(),
                details: object(json!({"next_actions": ["retry_turn"]})),
            });
        }
        self.record(compaction::record(due, &reply.text))?;
        Ok(Race::Done(None))
    }

    /// The next Provider call, before any wire format and without the conversation
    /// ([`Session::wire_request`] adds both).
    fn call(&self, tools: Value) -> Call {
        let model = &self.config.model;
        let cache_key = format!(
            "gx1:m_{}:s_{:016x}:t_{:016x}",
            model.chars().take(14).collect::<String>(),
            fnv1a(self.config.session_id.as_bytes()),
            fnv1a(crate::canonical::to_string(&tools).as_bytes())
        );
        Call { model: model.clone(), instructions: self.config.instructions.clone(), tools, cache_key }
    }

    fn usage_data(&self, reply: &Reply, iteration: u32, call: &Call) -> Data {
        let usage = reply.usage.as_ref().map_or(Value::Null, Usage::record);
        let number = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
        let truncation = match &reply.finish {
            Finish::Completed => json!({"status": "not_truncated"}),
            Finish::Incomplete(reason) => json!({"status": "truncated", "reason": reason}),
        };
        object(json!({
            "model": self.config.model,
            "iteration": iteration,
            "attempts": reply.attempts,
            "usage_available": !usage.is_null(),
            "usage": usage,
            "usage_summary": {
                "input_tokens": number("/input_tokens"),
                "cached_tokens": number("/input_tokens_details/cached_tokens"),
                "output_tokens": number("/output_tokens"),
                "reasoning_tokens": number("/output_tokens_details/reasoning_tokens"),
                "total_tokens": number("/total_tokens"),
            },
            "prompt_cache_key": call.cache_key,
            "output_truncation": truncation,
        }))
    }

    /// Writes the failure evidence: the partial text if any, orphan repair for an interrupted
    /// Turn, then `turn_failed`.
    fn fail(
        &mut self,
        failure: ProviderFailure,
        streamed: &str,
        started: tokio::time::Instant,
    ) -> Result<TurnOutcome, LogError> {
        let status = match failure.kind {
            ErrorKind::Cancelled => TerminalStatus::Interrupted,
            ErrorKind::StreamIdleTimeout | ErrorKind::TurnTimeout => TerminalStatus::TimedOut,
            _ if streamed.is_empty() => TerminalStatus::Failed,
            _ => TerminalStatus::PartialFailed,
        };
        let mut details = failure.details;
        details.insert("elapsed_ms".into(), json!(millis(started.elapsed())));
        details.entry("next_actions").or_insert_with(|| json!(["retry_turn"]));
        if !streamed.is_empty() {
            details.insert("partial_text_length".into(), json!(streamed.chars().count()));
            self.record(Payload::partial_assistant_message(streamed, status, failure.kind, &failure.message))?;
        }
        if status == TerminalStatus::Interrupted {
            self.repair_orphans("interrupt")?;
        }
        let next_actions = details["next_actions"]
            .as_array()
            .map(|actions| actions.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        self.record(Payload::turn_failed(status, failure.kind, &failure.message, details))?;
        self.publish(Payload::status(if status == TerminalStatus::Interrupted { "interrupted" } else { "error" }));
        Ok(TurnOutcome {
            status,
            error_kind: Some(failure.kind),
            message: Some(failure.message),
            next_actions,
            truncation: None,
        })
    }
}

/// The failure of a Turn past its whole-turn budget (TURN-TIMEOUT-EVIDENCE).
impl Session {
    /// Records a call whose id the model had already given (`given`) under the id it got,
    /// and its failed `duplicate_call_id` result: it never runs (REPLAY-CALL-ID-UNIQUE).
    fn refuse_repeated_call(&mut self, call_id: &str, given: &str, name: &str, args: &Value) -> Result<(), LogError> {
        self.record(Payload::repeated_tool_call(call_id, given, name, args.clone()))?;
        let message = format!("call id `{given}` was already given to a call of this response: not run");
        self.record(Payload::tool_result(call_id, failed("duplicate_call_id", &message)))?;
        Ok(())
    }
}

/// Gives each call of `items` whose id an earlier call of the same reply already has the
/// first free id `<id>-<n>`, and returns each such new id with the id the model gave. Such a
/// call is answered failed and never run (the model may have sent one call twice, and a second
/// write or command is not harmless), so each result pairs with one call
/// (REPLAY-CALL-ID-UNIQUE: the Anthropic Messages API refuses repeated `tool_use` ids).
fn rename_repeated_call_ids(items: &mut [OutputItem]) -> BTreeMap<String, String> {
    let mut taken: BTreeSet<String> = items
        .iter()
        .filter_map(|item| match item {
            OutputItem::Call { call_id, .. } => Some(call_id.clone()),
            OutputItem::Reasoning(_) => None,
        })
        .collect();
    let mut seen = BTreeSet::new();
    let mut repeated = BTreeMap::new();
    for item in items {
        let OutputItem::Call { call_id, .. } = item else { continue };
        if seen.insert(call_id.clone()) {
            continue;
        }
        let fresh = (2..).map(|n| format!("{call_id}-{n}")).find(|id| !taken.contains(id)).unwrap_or_default();
        taken.insert(fresh.clone());
        repeated.insert(fresh.clone(), std::mem::replace(call_id, fresh));
    }
    repeated
}

fn turn_timeout(budget: Duration) -> ProviderFailure {
    ProviderFailure {
        kind: ErrorKind::TurnTimeout,
        message: "the turn exceeded its time budget".to_owned(),
        details: object(json!({
            "timeout_ms": millis(budget),
            "next_actions": ["retry_turn", "raise_turn_timeout"],
        })),
    }
}

fn cancelled() -> ProviderFailure {
    ProviderFailure {
        kind: ErrorKind::Cancelled,
        message: "the turn was cancelled".to_owned(),
        details: object(json!({"next_actions": ["retry_turn"]})),
    }
}

/// Streams a call, publishing each delta as an ephemeral event the moment it arrives and
/// keeping the text in `streamed` so it survives a timeout that drops this future.
async fn stream_live(
    session: &mut Session,
    provider: &Provider,
    wire: &WireRequest,
    streamed: &mut String,
) -> Result<Reply, ProviderFailure> {
    let mut live = |delta: Delta| match delta {
        Delta::Text(chunk) => {
            streamed.push_str(&chunk);
            session.publish(Payload::text_delta(&chunk));
        }
        Delta::Reasoning(chunk) => session.publish(Payload::reasoning_delta(&chunk)),
    };
    provider.stream(wire, &mut live).await
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// FNV-1a, for a stable `prompt_cache_key` that any implementation can reproduce.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A reply whose calls repeat an id: the second and third get the first free `<id>-<n>`
    /// (never one a call of the reply already has), each mapped to the id the model gave.
    #[test]
    fn repeated_call_ids_get_ids_of_their_own() {
        let call = |id: &str| OutputItem::Call { call_id: id.into(), name: "read".into(), args: json!({}) };
        let mut items = vec![call("a"), call("a"), call("a-2"), call("a"), OutputItem::Reasoning(json!({}))];
        let repeated = rename_repeated_call_ids(&mut items);
        let ids: Vec<&str> = items
            .iter()
            .filter_map(|item| if let OutputItem::Call { call_id, .. } = item { Some(call_id.as_str()) } else { None })
            .collect();
        assert_eq!(ids, ["a", "a-3", "a-2", "a-4"]);
        assert_eq!(repeated, BTreeMap::from([("a-3".into(), "a".into()), ("a-4".into(), "a".into())]));
    }
}
