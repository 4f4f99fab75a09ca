//! The mock's Anthropic Messages and Gemini encoders against the runtime's readers, over every
//! scripted response of the corpus: the two sides share no code, so agreeing here is the
//! check that each speaks the wire the other reads (issue 11, docs/dialects.md).
//!
//! For every response of every scenario (HTTP errors aside), each dialect's bytes are read by
//! the runtime's reader for that dialect, and what it hands the Turn must be what the script
//! means, the same in both dialects: the text shown before the end ([`Response::visible_text`]),
//! the reasoning items and calls a cut left complete, the usage, the finish, or the failure
//! kind. A Turn that gets the same hand-over writes the same Log.
//!
//! Last, the judge's reading of each request by what it added is the reading of its whole body.

use gauntlet::driver::Driver;
use gauntlet::driver::reference::Reference;
use gauntlet::run::{self, AnyScenario, Plan};
use gauntlet_agent::event::ErrorKind;
use gauntlet_agent::provider::Usage;
use gauntlet_agent::provider::{Decode, Delta, Dialect as RuntimeDialect, Finish, OutputItem, reasoning};
use gauntlet_judge::judge::conversations;
use gauntlet_mock_provider::dialect::{Beat, EncodeContext, Step, anthropic_messages, arguments, beats, gemini};
use gauntlet_mock_provider::increment::Chain;
use gauntlet_mock_provider::{Ending, Response, Script};

/// What the runtime's reader handed the Turn.
#[derive(Debug, PartialEq)]
enum Handed {
    Reply { text: String, items: Vec<OutputItem>, usage: Option<Usage>, finish: Finish },
    Failed { kind: ErrorKind, shown: String },
}

/// Plays `steps` into a decoder, as a transport would: a drop is a network failure.
fn hand(steps: &[Step], mut decoder: Box<dyn Decode>) -> Handed {
    let mut shown = String::new();
    let mut on_delta = |delta: Delta| {
        if let Delta::Text(text) = delta {
            shown.push_str(&text);
        }
    };
    for step in steps {
        let outcome = match step {
            Step::Bytes(bytes) => decoder.push(bytes, &mut on_delta),
            Step::Pause(_) => continue,
            Step::Abort => return Handed::Failed { kind: ErrorKind::Network, shown },
        };
        match outcome {
            Ok(None) => {}
            Ok(Some(reply)) => {
                assert_eq!(reply.text, shown, "the reply's text is the text streamed");
                return Handed::Reply {
                    text: reply.text,
                    items: reply.items,
                    usage: reply.usage,
                    finish: reply.finish,
                };
            }
            Err(failure) => return Handed::Failed { kind: failure.kind, shown },
        }
    }
    Handed::Failed { kind: decoder.eof().kind, shown }
}

/// What the script means the Turn is handed, in the runtime's neutral terms.
fn meant(response: &Response, ctx: &EncodeContext) -> Handed {
    let shown = response.visible_text();
    let kind = match &response.then {
        Ending::Error(_) | Ending::Failed(_) => ErrorKind::ProviderHttpError,
        Ending::Eof => ErrorKind::IncompleteStream,
        Ending::Malformed => ErrorKind::InvalidResponse,
        Ending::Disconnect => ErrorKind::Network,
        Ending::Completed | Ending::Incomplete(_) => {
            let arguments = arguments(response);
            let all = beats(response, &arguments);
            let n_shown = response.cut_after.map_or(all.len(), |cut| cut.min(all.len()));
            let mut items = Vec::new();
            for beat in &all[..n_shown] {
                match *beat {
                    Beat::ReasoningDone { reasoning, .. } => items.push(OutputItem::Reasoning(reasoning::item(
                        &reasoning.summary.concat(),
                        reasoning.encrypted.as_deref(),
                    ))),
                    Beat::CallDone { index, call } => {
                        items.push(OutputItem::call(&ctx.call_id(response, index), &call.name, &call.arguments()))
                    }
                    _ => {}
                }
            }
            let usage = response.effective_usage();
            let usage = Usage {
                input: usage.input,
                cached: usage.cached,
                output: usage.output,
                reasoning: usage.reasoning,
                total: usage.input + usage.output,
            };
            // A refusal's clean end is a content filter's stop, as each wire says it.
            let finish = match response.truncation() {
                Some("content_filter") => Finish::Incomplete("content_filter".to_owned()),
                Some(_) => Finish::Incomplete("max_output_tokens".to_owned()),
                None => Finish::Completed,
            };
            return Handed::Reply { text: shown, items, usage: Some(usage), finish };
        }
    };
    Handed::Failed { kind, shown }
}

/// Gemini has no boundary between reasoning items but a signature: a response whose reasoning
/// items after the first are not all closed by one reads back differently, by design. Its
/// `functionCall.args` is an object, so it cannot carry arguments that are not one.
fn gemini_can_express(response: &Response) -> bool {
    let items = &response.reasoning;
    items.iter().all(|item| !item.summary.is_empty() || item.encrypted.is_some())
        && items.windows(2).all(|pair| pair[0].encrypted.is_some())
        && response.calls.iter().all(gauntlet_mock_provider::Call::args_parse)
}

#[test]
fn every_corpus_response_reads_back_as_scripted_in_both_dialects() {
    let plan = gauntlet::run::Plan::repository();
    let mut n_checked = 0;
    let mut problems = Vec::new();
    for (name, path) in gauntlet::run::scenario_names(&plan) {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        // Lifecycle scenarios have no `respond` tables; a file the mock cannot read is judged elsewhere.
        let Ok(script) = Script::from_scenario_toml(&text) else { continue };
        for (route, responses) in &script.routes {
            for (index, response) in responses.iter().enumerate().filter(|(_, response)| response.status.is_none()) {
                let ctx = EncodeContext { response_id: format!("resp_{index}"), model: "m".into(), item_base: 1 };
                let want = meant(response, &ctx);
                let got =
                    hand(&anthropic_messages::encode(response, &ctx), RuntimeDialect::AnthropicMessages.decoder());
                if got != want {
                    problems
                        .push(format!("{name} {route}[{index}] anthropic_messages:\n  got  {got:?}\n  want {want:?}"));
                }
                if gemini_can_express(response) {
                    let got = hand(&gemini::encode(response, &ctx), RuntimeDialect::Gemini.decoder());
                    if got != want {
                        problems.push(format!("{name} {route}[{index}] gemini:\n  got  {got:?}\n  want {want:?}"));
                    }
                }
                n_checked += 1;
            }
        }
    }
    assert!(n_checked > 20, "only {n_checked} scripted responses found");
    assert!(problems.is_empty(), "{} disagreements:\n{}", problems.len(), problems.join("\n"));
}

// The judge reads each request by what it added (`Conversations`): over the corpus, in every
// dialect, that reading equals the reading of each whole body.

/// Reading new items alone is sound only if each dialect reads a conversation item by item:
/// every request of the corpus, in every dialect, reads as its whole body does.
#[test]
fn increments_read_as_each_whole_body_does_over_the_corpus() {
    let plan = Plan::repository();
    let mut n_grown = 0;
    for (name, path) in run::scenario_names(&plan) {
        let Ok(AnyScenario::Turn(scenario)) = run::load(&path) else { continue };
        for dialect in run::CORPUS_DIALECTS {
            let Ok(scenario) = scenario.in_dialect(dialect) else { continue };
            let capture = Reference::default().drive(&scenario);
            let shared = conversations::Conversations::read(capture.dialect, &capture.requests);
            assert_eq!(shared.len(), capture.requests.len());
            let mut chain = Chain::default();
            for (idx, request) in capture.requests.iter().enumerate() {
                n_grown +=
                    usize::from(conversations::appended_only(&request.body, dialect.conversation_key()).is_some());
                let whole = capture.dialect.read(chain.apply(&request.route, &request.body)).unwrap_or_default();
                let read = shared.get(idx).unwrap();
                let model = whole.model.as_deref().or(request.model.as_deref());
                assert_eq!(
                    (read.model, read.system, read.messages),
                    (model, &whole.system[..], &whole.messages[..]),
                    "{name} [{dialect}] request {}",
                    idx + 1
                );
            }
        }
    }
    assert!(n_grown > 100, "only {n_grown} requests were read from their new items");
}
