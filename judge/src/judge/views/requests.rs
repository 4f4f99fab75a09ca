//! The Provider requests, read for several rules: each request's turn ([`request_turns`]) and
//! dialect-neutral conversation, read once per run of requests ([`read_new_messages`],
//! [`judge_messages`]), the scripted response that answered it ([`served`]) and what the script
//! streamed per turn ([`Streamed`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use gauntlet_agent::EventType;
use gauntlet_mock_provider::{Message, Response};

use crate::capture::Request;
use crate::judge::conversations::Conversation;
use crate::judge::evidence::Evidence;
use crate::log_line::Line;
use crate::scenario::{Scenario, Turn};
use crate::verdict::Violation;

/// Each request with its dialect-neutral reading, in order.
pub(crate) fn read_requests<'e>(evidence: &'e Evidence) -> impl Iterator<Item = (&'e Request, Conversation<'e>)> {
    evidence.capture.requests.iter().zip(evidence.conversations.iter())
}

/// Each request with its reading and the messages in it that no earlier request of its run
/// carried. A run's requests grow, each carrying the messages of the one before it
/// ([`Conversation::run`]), so a rule that reads only these reads a long Session's messages
/// once, not once per request.
pub(crate) fn read_new_messages<'e>(
    evidence: &'e Evidence,
) -> impl Iterator<Item = (&'e Request, Conversation<'e>, &'e [Message])> {
    let mut read: BTreeMap<usize, usize> = BTreeMap::new();
    read_requests(evidence).map(move |(request, conversation)| {
        let seen = read.entry(conversation.run).or_default();
        let new = conversation.messages.get(*seen..).unwrap_or_default();
        *seen = (*seen).max(conversation.messages.len());
        (request, conversation, new)
    })
}

/// Whether each request rewrote its route's conversation, as a compaction does: its messages
/// (reasoning left out, which a model switch may drop) no longer start with those of the
/// previous request of its route, less any of their assistant messages (a request that only
/// drops a failed attempt's text is no compaction: issue 31) (REPLAY-COMPACTION-KEEPS-PROMPT,
/// REPLAY-COMPACTION-NO-PARTIAL). A request that extends its run did not; only a request that
/// starts a run is compared.
pub(crate) fn rewrites(evidence: &Evidence) -> Vec<bool> {
    let mut last: HashMap<&str, (usize, &[Message])> = HashMap::new();
    read_requests(evidence)
        .map(|(request, conversation)| {
            let rewritten = match last.get(request.route.as_str()) {
                Some((run, previous)) if *run != conversation.run => !keeps(conversation.messages, previous),
                _ => false,
            };
            last.insert(&request.route, (conversation.run, conversation.messages));
            rewritten
        })
        .collect()
}

/// `messages` start with `previous`, reasoning left out of both, but for assistant messages of
/// `previous` they leave out.
fn keeps(messages: &[Message], previous: &[Message]) -> bool {
    let spoken = |message: &&Message| !matches!(message, Message::Reasoning { .. });
    let mut messages = messages.iter().filter(spoken).peekable();
    previous.iter().filter(spoken).all(|wanted| {
        if messages.peek() == Some(&wanted) {
            messages.next();
            true
        } else {
            matches!(wanted, Message::Assistant { .. })
        }
    })
}

/// The Log's prompts (its `user_message` lines), to place a request in its turn: the turn of
/// the last prompt whose text the request carries. A run's requests grow, so a rule keeps the
/// latest prompt its run carries as it reads the run's new messages ([`Prompts::carried_by`]).
pub(crate) struct Prompts<'a> {
    /// Each prompt's index among the Log's lines, in order.
    pub(crate) lines: Vec<usize>,
    /// For each prompt text, the last prompt with it.
    pub(crate) last: HashMap<&'a str, usize>,
}

impl<'a> Prompts<'a> {
    pub(crate) fn of(lines: &'a [Line]) -> Prompts<'a> {
        let lines_at: Vec<usize> = (0..lines.len()).filter(|&at| lines[at].kind == EventType::UserMessage).collect();
        let last = lines_at
            .iter()
            .enumerate()
            .map(|(prompt, &at)| {
                (lines[at].user_message().and_then(|message| message.text).unwrap_or_default(), prompt)
            })
            .collect();
        Prompts { lines: lines_at, last }
    }

    /// The last prompt whose text `message` carries, when it is a user message: its whole
    /// text, or its text up to the end of one of its last [`LINKS_READ`] lines, after which a
    /// prompt's links may follow, a line each (ACP-PROMPT-LINK-CARRIED).
    pub(crate) fn carried_by(&self, message: &Message) -> Option<usize> {
        let Message::User { text } = message else { return None };
        let line_ends = text.rmatch_indices('\n').map(|(at, _)| at).take(LINKS_READ);
        std::iter::once(text.len()).chain(line_ends).find_map(|end| self.last.get(&text[..end]).copied())
    }
}

/// How many lines of links after a prompt's text [`Prompts::carried_by`] reads past: a bound,
/// so a long pasted prompt costs a few lookups, not one per line.
const LINKS_READ: usize = 32;

/// The findings of a rule that judges each carried message by itself (`judge` adds what it
/// finds in one message, after `request N `, given the request's index in the capture and the
/// request): a message's findings hold for every request that
/// carries it, so each is reported once, at the first request that carried it, naming the
/// later requests of its run that carried it again and how many copies a request held at most
/// (an agent that re-sends a failed attempt's text each retry piles copies up).
pub(crate) fn judge_messages<'e>(
    evidence: &'e Evidence,
    mut judge: impl FnMut(usize, &'e Request, &'e Message, &mut Vec<Violation>),
) -> Vec<Violation> {
    let mut found: BTreeMap<usize, Vec<Violation>> = BTreeMap::new();
    // Each finding of each run: the requests (1-based) that carried it, and its most copies.
    let mut reported: Vec<((usize, Violation), Vec<usize>, usize)> = Vec::new();
    for (idx, (request, conversation, new)) in read_new_messages(evidence).enumerate() {
        let found = found.entry(conversation.run).or_default();
        for message in new {
            judge(idx, request, message, found);
        }
        let mut counted: Vec<(&Violation, usize)> = Vec::new();
        for what in found.iter() {
            match counted.iter_mut().find(|(known, _)| *known == what) {
                Some((_, copies)) => *copies += 1,
                None => counted.push((what, 1)),
            }
        }
        for (what, copies) in counted {
            let key = (conversation.run, what.clone());
            match reported.iter_mut().find(|(known, _, _)| *known == key) {
                Some((_, requests, most)) => {
                    requests.push(idx + 1);
                    *most = (*most).max(copies);
                }
                None => reported.push((key, vec![idx + 1], copies)),
            }
        }
    }
    reported
        .into_iter()
        .map(|((_, Violation { at, message: what, requirement }), requests, most)| {
            let copies = if most > 1 { format!(", up to {most} copies in one request") } else { String::new() };
            let message = match requests.as_slice() {
                [first] if most == 1 => format!("request {first} {what}"),
                [first] => format!("request {first} {what} ({most} copies)"),
                [first, later @ ..] => {
                    format!("request {first} {what} (carried again by {}{copies})", request_list(later))
                }
                [] => String::new(),
            };
            Violation { at, message, requirement }
        })
        .collect()
}

/// Request numbers as `request 3`, `requests 3 to 9` or `requests 3, 5 and 9`.
pub(crate) fn request_list(numbers: &[usize]) -> String {
    let consecutive = numbers.windows(2).all(|pair| pair[1] == pair[0] + 1);
    match numbers {
        [one] => format!("request {one}"),
        [first, _, .., last] if consecutive => format!("requests {first} to {last}"),
        [rest @ .., last] => {
            let rest: Vec<String> = rest.iter().map(ToString::to_string).collect();
            format!("requests {} and {last}", rest.join(", "))
        }
        [] => String::new(),
    }
}

/// Which scenario turn each Provider request belongs to: the turn the client had begun when it
/// arrived, as the driver told the mock; for a capture without that, the latest turn whose
/// prompt the request carries as user text (a request carries every earlier prompt too).
/// `None` without a scenario, for a request that carries no prompt of it, or for one of a
/// queued busy prompt's own turn.
pub(crate) fn request_turns(evidence: &Evidence) -> Vec<Option<usize>> {
    let Some(scenario) = evidence.scenario else { return vec![None; evidence.capture.requests.len()] };
    evidence
        .capture
        .requests
        .iter()
        .zip(evidence.conversations.iter())
        .map(|(request, conversation)| {
            // A child Session's request is not a turn's: only the root's are bound to turns.
            let root = request.route == gauntlet_mock_provider::ROOT;
            // A queued busy prompt's own turn comes after every scenario turn: no turn's.
            if root && request.turn.is_some_and(|turn| turn >= scenario.turns.len()) {
                return None;
            }
            request.turn.filter(|_| root).or_else(|| {
                let texts: Vec<&str> = conversation.user_texts().collect();
                scenario.turns.iter().rposition(|turn| texts.iter().any(|text| text.contains(turn.prompt.as_str())))
            })
        })
        .collect()
}

/// The turns of the scenario that `wanted` picks and that asked the Provider something, each
/// with its index and its requests (indices into the capture's), in order.
pub(crate) fn asking_turns<'s>(
    evidence: &Evidence,
    scenario: &'s Scenario,
    wanted: impl Fn(&Turn) -> bool,
) -> Vec<(usize, &'s Turn, Vec<usize>)> {
    let turns = request_turns(evidence);
    scenario
        .turns
        .iter()
        .enumerate()
        .filter(|(_, turn)| wanted(turn))
        .map(|(turn_idx, turn)| {
            (turn_idx, turn, (0..turns.len()).filter(|&idx| turns[idx] == Some(turn_idx)).collect())
        })
        .filter(|(_, _, requests): &(usize, &Turn, Vec<usize>)| !requests.is_empty())
        .collect()
}

/// The scripted response that answered a request, if the script answered it.
pub(crate) fn served<'a>(evidence: &Evidence<'a>, request: &Request) -> Option<&'a Response> {
    if request.route != gauntlet_mock_provider::ROOT {
        return None;
    }
    evidence.root_response(request.response_index?)
}

/// One response the script streamed to the agent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Streamed {
    /// The text deltas the agent received from it (all of them for a clean response).
    pub(crate) text: String,
    /// It ended cleanly (`response.completed` or `response.incomplete`), read to its end.
    pub(crate) clean: bool,
    /// It was the model's explicit refusal (`refusal`).
    pub(crate) refused: bool,
}

/// What the script streamed for each scenario turn, in request order: the responses served to
/// the requests that belong to the turn (by the prompt they carry last, [`request_turns`]),
/// whichever turn of the script they were written for. Empty without a scenario.
pub(crate) fn streamed_per_turn(evidence: &Evidence) -> Vec<Vec<Streamed>> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    let mut turns = vec![Vec::new(); scenario.turns.len()];
    for (index, (request, turn)) in evidence.capture.requests.iter().zip(request_turns(evidence)).enumerate() {
        if let (Some(turn), Some(response)) = (turn, served(evidence, request)) {
            // Clean only if the agent read it to its end: one it closed (a cancel, its own
            // timeout) streamed only part of it, never a finished answer.
            let ended = evidence.capture.timings.get(index).and_then(|timing| timing.ended);
            let cut = ended.is_some_and(|ended| ended.how != gauntlet_mock_provider::StreamEnd::Finished);
            let clean = !response.fails() && !cut;
            turns[turn].push(Streamed { text: response.visible_text(), clean, refused: response.refuses() });
        }
    }
    turns
}

/// An id two of a response's scripted calls share.
pub(crate) fn repeated_id(response: &Response) -> Option<&str> {
    let mut seen = BTreeSet::new();
    response.calls.iter().filter_map(|call| call.call_id.as_deref()).find(|id| !seen.insert(*id))
}

/// Every request the script did not answer and every scripted response never requested.
pub(crate) fn unplaced(evidence: &Evidence) -> Vec<String> {
    let capture = evidence.capture;
    let unmatched = capture.unmatched.iter().map(|why| format!("unscripted request: {why}"));
    let unconsumed = capture
        .unconsumed
        .iter()
        .map(|(route, index)| format!("scripted response {index} of route `{route}` was never requested"));
    unmatched.chain(unconsumed).collect()
}
