//! The mock provider: the single place that decides how each request is answered.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use serde_json::json;
use tokio::time::Instant;

use crate::body::Body;
use crate::conversation::Message;
use crate::dialect::{Answer, Asked, Dialect, EncodeContext, Step, json_answer};
use crate::increment::Chain;
use crate::journal::{After, Ended, JournalEntry, Mismatch, MismatchReason, StreamEnd, Timing};
use crate::script::{Exhausted, RETRY_CAP, ROOT, Response, Script};
use crate::side::{SideReply, SideRequest};
use crate::tool_names::{self, McpCalls, Renamed};

/// A scripted provider, shared via `Arc` between the server or in-process callers.
#[derive(Debug)]
pub struct MockProvider {
    script: Script,
    /// The wire format it speaks; a request to another dialect's endpoint is a mismatch.
    dialect: Dialect,
    side: Vec<SideRequest>,
    /// Shared with the [`EndRecorder`]s of replies still streaming.
    state: Arc<Mutex<State>>,
    /// Journal times count from here, on tokio's clock.
    started: Instant,
    /// Which scripted calls of a gauntlet tool go out under the agent's name for it (the
    /// agent runs gauntlet's MCP server); `None` when none do.
    names_tools: Option<McpCalls>,
}

#[derive(Debug, Default)]
struct State {
    cursors: BTreeMap<String, usize>,
    served: usize,
    next_item: usize,
    journal: Vec<JournalEntry>,
    /// The last body of each journal route, which the next one's increment is to.
    bodies: Chain,
    mismatches: Vec<Mismatch>,
    side_served: Vec<String>,
    /// The first `session_id` header seen: the root Session's, whatever its name.
    root_session: Option<String>,
    /// The turn the client began last ([`MockProvider::begin_turn`]), and which of the root's
    /// responses were served, when the script binds them to turns.
    turn: Option<usize>,
    root_served: Vec<bool>,
    /// The turn of a busy prompt the client sent, and its text ([`MockProvider::queue_turn`]):
    /// a request whose latest user text is that prompt, or any request once the current turn's
    /// responses are used up after its answer, is that prompt's, queued as a turn of its own.
    queued: Option<(usize, String)>,
    /// The scripted calls sent under the agent's name for a gauntlet tool, in order.
    renamed: Vec<Renamed>,
}

/// A request, independent of the transport.
#[derive(Debug, Clone, Default)]
pub struct MockRequest {
    /// HTTP method.
    pub method: String,
    /// Request path, without query.
    pub path: String,
    /// Headers as (name, value).
    pub headers: Vec<(String, String)>,
    /// Raw body.
    pub body: Bytes,
}

/// The answer: status, headers and the body as steps.
#[derive(Debug, Clone)]
pub struct MockReply {
    /// HTTP status.
    pub status: u16,
    /// Headers as (name, value).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub steps: Vec<Step>,
    /// Notes in the journal how the body ended; `None` for a side request (not journaled).
    pub end: Option<EndRecorder>,
}

/// Records, once, when and how one journaled response body ended (the transport that plays
/// the body calls it: see [`crate::in_process::Playback`]).
#[derive(Debug, Clone)]
pub struct EndRecorder {
    state: Arc<Mutex<State>>,
    started: Instant,
    entry: usize,
}

impl EndRecorder {
    /// Notes the HTTP status the request is answered with.
    fn record_status(&self, status: u16) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = state.journal.get_mut(self.entry) {
            entry.status = Some(status);
        }
    }

    /// Notes that the body ended now, unless an end was already noted.
    pub fn record(&self, how: StreamEnd) {
        let at = self.started.elapsed();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = state.journal.get_mut(self.entry)
            && entry.timing.ended.is_none()
        {
            entry.timing.ended = Some(Ended { at, how });
        }
    }
}

/// Scripted responses of one route that were never served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unconsumed {
    /// The route.
    pub route: String,
    /// Index of the first unserved response.
    pub index: usize,
    /// How many remain.
    pub remaining: usize,
}

/// Everything the provider saw, and what is left.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MockReport {
    /// Every request, in arrival order.
    pub journal: Vec<JournalEntry>,
    /// Routes with responses left.
    pub unconsumed: Vec<Unconsumed>,
    /// Requests no script answered.
    pub mismatches: Vec<Mismatch>,
    /// The names of side requests answered, in order (not in the journal).
    pub side_requests: Vec<String>,
    /// The scripted calls sent under the agent's name for a gauntlet tool, in order.
    pub renamed: Vec<Renamed>,
}

impl MockReport {
    /// True when every response was served and every request matched.
    pub fn is_strictly_satisfied(&self) -> bool {
        self.unconsumed.is_empty() && self.mismatches.is_empty()
    }
}

impl fmt::Display for MockReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let served = self.journal.iter().filter(|e| e.response_index.is_some()).count();
        writeln!(f, "requests: {} ({served} served, {} mismatched)", self.journal.len(), self.mismatches.len())?;
        for u in &self.unconsumed {
            writeln!(f, "unconsumed: route `{}` has {} response(s) left from index {}", u.route, u.remaining, u.index)?;
        }
        for m in &self.mismatches {
            writeln!(f, "mismatch: {m}")?;
        }
        Ok(())
    }
}

/// The header a runtime names its Session in (as Codex sends it), so requests of concurrent
/// child Sessions reach their own scripts (design.md "Mock provider", routes).
pub const SESSION_HEADER: &str = "session_id";

/// The route a path names and the endpoint it calls: `/routes/<name>/v1/responses` is route
/// `<name>` calling `/v1/responses`; a path without the prefix names no route.
pub fn split_route(path: &str) -> (Option<&str>, &str) {
    let named = path.strip_prefix("/routes/").and_then(|rest| {
        let (name, endpoint) = rest.split_at(rest.find('/')?);
        (!name.is_empty()).then_some((name, endpoint))
    });
    match named {
        Some((name, endpoint)) => (Some(name), endpoint),
        None => (None, path),
    }
}

impl MockProvider {
    /// A provider serving `script`.
    pub fn new(script: Script) -> Self {
        Self {
            script,
            dialect: Dialect::default(),
            side: Vec::new(),
            state: Arc::new(Mutex::new(State { next_item: 1, ..State::default() })),
            started: Instant::now(),
            names_tools: None,
        }
    }

    /// Sends the `calls` of gauntlet's MCP tools under the name the request's offered tools
    /// give each ([`crate::tool_names`]).
    pub fn with_mcp_tool_names(mut self, calls: McpCalls) -> Self {
        self.names_tools = Some(calls);
        self
    }

    /// `instant` as the journal writes times: time since this provider was made, on tokio's
    /// clock (zero for an earlier instant).
    pub fn since_start(&self, instant: Instant) -> Duration {
        instant.saturating_duration_since(self.started)
    }

    /// Speaks `dialect` instead of the Responses API.
    pub fn with_dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = dialect;
        self
    }

    /// The wire format it speaks.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Also answers these side requests, outside the script and the journal.
    pub fn with_side_requests(mut self, side: Vec<SideRequest>) -> Self {
        self.side = side;
        self
    }

    /// The client begins turn `turn` (from 0): from now on root requests are answered from that
    /// turn's responses only, when the script says which belong to which turn
    /// ([`Script::turns`]); what a turn's retries ask beyond them is [`Script::exhausted`]'s.
    pub fn begin_turn(&self, turn: usize) {
        let mut state = self.lock();
        state.turn = Some(turn);
        state.queued = None;
    }

    /// The client sent a busy prompt `prompt` whose own turn is `turn`: a request that carries
    /// it as its latest user text (an agent that stopped the running turn for it asks at once),
    /// or one that comes after the current turn's answer (an agent that queued it), is answered
    /// from that turn.
    pub fn queue_turn(&self, turn: usize, prompt: &str) {
        self.lock().queued = Some((turn, prompt.to_owned()));
    }

    /// Whether `body`'s latest user text holds `prompt`.
    fn asks(&self, body: &Body, prompt: &str) -> bool {
        let conversation = body.json().and_then(|value| self.dialect.read(value).ok());
        conversation
            .is_some_and(|conversation| conversation.user_texts().last().is_some_and(|text| text.contains(prompt)))
    }

    /// The root responses of turn `turn`, as a range of indices.
    /// The root response that answers a continuation of `turn`, when the script gives one.
    fn continuation(&self, turn: usize) -> Option<usize> {
        self.script.continuations.get(turn).copied().flatten()
    }

    fn turn_range(&self, turn: usize) -> std::ops::Range<usize> {
        let start: usize = self.script.turns.iter().take(turn).sum();
        start..start + self.script.turns.get(turn).copied().unwrap_or(0)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Decides the answer to `request`, records it, and advances the route: a side request
    /// (a `HEAD` probe, a title or classifier call) is answered outside the script; a model call
    /// is routed to its Session's script, placed in it, journaled, and answered with the
    /// response placed, the empty clean response past a turn's answer, or an error saying why
    /// it could not be placed.
    pub fn respond(&self, request: MockRequest) -> MockReply {
        let header =
            |name: &str| request.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
        // Shared by the answer and the journal's chain of bodies, never copied nor parsed whole,
        // and scanned only when its structure is not found from the route's previous body: a
        // long conversation's bodies are large.
        let body = Body::new(request.body.clone());
        let (named, endpoint) = split_route(&request.path);
        let asked = Asked { path: endpoint, body: &body };
        let mut state = match self.side_answer(self.lock(), &request, &asked) {
            Ok(reply) => return reply,
            Err(state) => state,
        };
        let session = header(SESSION_HEADER);
        let named = named.or_else(|| self.prompted_route(&body));
        let route = self.route(&mut state, named, endpoint, session.as_deref());
        let journal_route = match &route {
            Ok(route) => route.unwrap_or_default().to_owned(),
            Err(_) => session.clone().unwrap_or_default(),
        };
        // The increment first: it checks, part by part, that the body is JSON.
        let increment = state.bodies.push(&journal_route, body.clone());
        let continues = increment.changes_conversation(self.dialect.conversation_key()) == Some(true);
        let decision = self.place(&mut state, &request.method, route, &body, continues);
        let turn = state.turn;
        state.journal.push(JournalEntry {
            route: journal_route,
            response_index: decision.as_ref().ok().map(|(index, _, _)| *index),
            method: request.method.clone(),
            path: request.path.clone(),
            content_type: header("content-type"),
            accept: header("accept"),
            body: increment,
            timing: Timing { received: self.started.elapsed(), ended: None },
            status: None,
            turn,
            unplaced: match &decision {
                Err(MismatchReason::TurnExhausted { after, .. }) => Some(after.clone()),
                _ => None,
            },
        });
        let end =
            Some(EndRecorder { state: Arc::clone(&self.state), started: self.started, entry: state.journal.len() - 1 });
        let (index, route, response) = match decision {
            Ok(found) => found,
            Err(MismatchReason::TurnExhausted { turn, served, after }) if after.answers_empty() => {
                // Nothing left to say: an empty clean response, which a client can neither show
                // nor retry, instead of an error body gauntlet made up; a continuation gets
                // what the faulted response kept back, if anything.
                let rest = match after {
                    After::Continuation { of, given_up } => {
                        self.script.routes.get(ROOT).and_then(|root| root.get(of)).map(|faulted| faulted.rest(given_up))
                    }
                    _ => None,
                }
                .unwrap_or_default();
                let reason = MismatchReason::TurnExhausted { turn, served, after };
                state.mismatches.push(Mismatch { method: request.method.clone(), path: request.path.clone(), reason });
                return self.answer(state, &rest, &asked, end);
            }
            Err(reason) => return refuse(state, request, reason, end),
        };
        if route == ROOT && self.bound_turn(&state).is_some() {
            let n_root = self.script.routes.get(ROOT).map_or(0, Vec::len);
            state.root_served.resize(n_root, false);
            if let Some(served) = state.root_served.get_mut(index) {
                *served = true;
            }
        } else {
            // Every request the route answers counts, a repeated fault's too.
            *state.cursors.entry(route.to_owned()).or_insert(0) += 1;
        }
        self.answer(state, response, &asked, end)
    }

    /// `response` with the usage its ending and the request call for ([`Dialect::reported_usage`]).
    fn usage_at_the_limit<'r>(&self, response: Cow<'r, Response>, asked: &Asked<'_>) -> Cow<'r, Response> {
        let usage = self.dialect.reported_usage(&response, asked.body.json());
        if usage == response.effective_usage() {
            return response;
        }
        Cow::Owned(Response { usage: Some(usage), ..response.into_owned() })
    }

    /// The answer to a request that is no call of the model, outside the script and the
    /// journal: a `HEAD` is a reachability probe (claude-agent-acp sends `HEAD /` to its base
    /// URL), answered 200 with no body; a side request its canned reply, encoded with the
    /// state unlocked. Any other request gets the state back.
    fn side_answer<'s>(
        &self,
        mut state: MutexGuard<'s, State>,
        request: &MockRequest,
        asked: &Asked<'_>,
    ) -> Result<MockReply, MutexGuard<'s, State>> {
        if request.method == "HEAD" {
            state.side_served.push(format!("HEAD {}", request.path));
            return Ok(MockReply { status: 200, headers: Vec::new(), steps: Vec::new(), end: None });
        }
        let Some(side) = self.side.iter().find(|side| side.matches(self.dialect, &request.path, asked.body)) else {
            return Err(state);
        };
        state.side_served.push(side.name.clone());
        let response = match side.reply() {
            SideReply::Json(body) => return Ok(reply(json_answer(200, body.clone()), None)),
            SideReply::Stream(response) => response,
        };
        state.served += 1;
        let ctx = EncodeContext {
            response_id: format!("resp_side_{}", state.side_served.len()),
            model: self.dialect.model(asked).unwrap_or_else(|| "unknown".to_owned()),
            item_base: 1_000_000 + state.side_served.len() * 100,
        };
        drop(state);
        Ok(reply(self.dialect.answer(response, &ctx, asked), None))
    }

    /// The route a model call belongs to: the one its path names, else the Session its header
    /// names (a child's), else the root; or why it has none (another dialect's endpoint).
    fn route<'s>(
        &'s self,
        state: &mut State,
        named: Option<&'s str>,
        endpoint: &str,
        session: Option<&str>,
    ) -> Result<Option<&'s str>, MismatchReason> {
        match (named, session) {
            _ if !self.dialect.serves(endpoint) => Err(match Dialect::of_path(endpoint) {
                Some(called) => MismatchReason::WrongDialect { called, expected: self.dialect },
                None => MismatchReason::NoRoute {
                    route: None,
                    scripted: self.script.routes.keys().cloned().collect(),
                    dialect: self.dialect,
                },
            }),
            (None, Some(session)) => self.session_route(state, session).map(Some),
            (None, None) => Ok(Some(ROOT)),
            (Some(route), _) => Ok(Some(route)),
        }
    }

    /// The scripted response a routed call gets: a queued busy prompt's own request (one that
    /// carries it, or the first after the running turn's answer) is placed in that prompt's
    /// turn; any other in the turn the client is in, or its route's next.
    fn place<'s>(
        &'s self,
        state: &mut State,
        method: &str,
        route: Result<Option<&'s str>, MismatchReason>,
        body: &Body,
        continues: bool,
    ) -> Result<(usize, &'s str, &'s Response), MismatchReason> {
        if matches!(route, Ok(Some(ROOT)))
            && let Some((queued, prompt)) = &state.queued
            && self.asks(body, prompt)
        {
            // The busy prompt's own request, however the running turn ended.
            state.turn = Some(*queued);
            state.queued = None;
        }
        let decision = route.and_then(|route| self.decide(state, method, route, body, continues));
        if let Err(MismatchReason::TurnExhausted { after: After::Answer, .. }) = &decision
            && let Some((queued, _)) = state.queued.take()
        {
            // The running turn is answered: this is the queued busy prompt's request.
            state.turn = Some(queued);
            return self.decide(state, method, Some(ROOT), body, continues);
        }
        decision
    }

    /// Encodes `response` as the next journaled answer: its response id and item numbers follow
    /// the ones served before, whether the script placed it or it is the empty clean response of
    /// a request the script could not place.
    fn answer(
        &self,
        mut state: MutexGuard<'_, State>,
        response: &Response,
        asked: &Asked<'_>,
        end: Option<EndRecorder>,
    ) -> MockReply {
        state.served += 1;
        let ctx = EncodeContext {
            response_id: format!("resp_{}", state.served),
            model: self.dialect.model(asked).unwrap_or_else(|| "unknown".to_owned()),
            item_base: state.next_item,
        };
        state.next_item += response.item_count();
        let renamed = self.names_tools.and_then(|calls| {
            let offered = asked.body.json().map(tool_names::offered).unwrap_or_default();
            tool_names::rename(response, &offered, calls)
        });
        let response = match renamed {
            Some((renamed, calls)) => {
                state.renamed.extend(calls);
                Cow::Owned(renamed)
            }
            None => Cow::Borrowed(response),
        };
        let response = self.usage_at_the_limit(response, asked);
        drop(state);
        reply(self.dialect.answer(&response, &ctx, asked), end)
    }

    /// How many requests the journal holds so far, answered or not.
    pub fn request_count(&self) -> usize {
        self.lock().journal.len()
    }

    /// How long the provider has been idle: `None` while a journaled response body is open,
    /// else the time since the last one ended (since the provider started, when none came).
    /// A client that must interrupt an agent picks such a gap, so that the moment it chose
    /// does not race the agent's next request.
    pub fn idle_for(&self) -> Option<Duration> {
        let state = self.lock();
        let mut last = Duration::ZERO;
        for entry in &state.journal {
            last = last.max(entry.timing.ended?.at);
        }
        Some(self.started.elapsed().saturating_sub(last))
    }

    /// Whether a request of the client's turn `turn` was answered with a scripted HTTP error and
    /// its body has ended: the agent is then waiting to retry, or has given up.
    pub fn http_failed_in_turn(&self, turn: usize) -> bool {
        let state = self.lock();
        state.journal.iter().any(|entry| {
            let scripted = entry.response_index.and_then(|index| self.script.routes.get(&entry.route)?.get(index));
            entry.turn == Some(turn)
                && entry.timing.ended.is_some()
                && scripted.is_some_and(|response| response.status.is_some())
        })
    }

    /// Whether any request arrived while the client's turn `turn` ran.
    pub fn asked_in_turn(&self, turn: usize) -> bool {
        self.lock().journal.iter().any(|entry| entry.turn == Some(turn))
    }

    /// The route of a request from Session `session`: the route named after it when the script
    /// has one (a child Session), else the root, which is the first Session that asked. Any
    /// other Session has no script and is refused (MOCK-STRICT).
    fn session_route<'s>(&'s self, state: &mut State, session: &str) -> Result<&'s str, MismatchReason> {
        if let Some((route, _)) = self.script.routes.get_key_value(session) {
            return Ok(route.as_str());
        }
        match &state.root_session {
            None => {
                state.root_session = Some(session.to_owned());
                Ok(ROOT)
            }
            Some(root) if root == session => Ok(ROOT),
            Some(_) => Err(MismatchReason::NoRoute {
                route: Some(session.to_owned()),
                scripted: self.script.routes.keys().cloned().collect(),
                dialect: self.dialect,
            }),
        }
    }

    /// The route whose text the request's opening user message holds ([`Script::prompted`]).
    fn prompted_route(&self, body: &Body) -> Option<&str> {
        if self.script.prompted.is_empty() {
            return None;
        }
        let conversation = body.json().and_then(|value| self.dialect.read(value).ok())?;
        // The user texts the conversation opens with (a wire may split one message into parts:
        // Claude Code puts a reminder before the delegated prompt).
        let opening: Vec<&str> = conversation
            .messages
            .iter()
            .map_while(|message| match message {
                Message::User { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let mut routes = self.script.prompted.iter();
        routes
            .find(|(_, prompt)| opening.iter().any(|text| text.contains(prompt.as_str())))
            .map(|(route, _)| route.as_str())
    }

    /// The index of the next response and its route key, or why there is none.
    fn decide<'s>(
        &'s self,
        state: &State,
        method: &str,
        route: Option<&str>,
        body: &Body,
        continues: bool,
    ) -> Result<(usize, &'s str, &'s Response), MismatchReason> {
        let scripted = || self.script.routes.keys().cloned().collect();
        let Some(route) = route else {
            return Err(MismatchReason::NoRoute { route: None, scripted: scripted(), dialect: self.dialect });
        };
        if method != "POST" {
            return Err(MismatchReason::WrongMethod);
        }
        let Some((key, responses)) = self.script.routes.get_key_value(route) else {
            return Err(MismatchReason::NoRoute {
                route: Some(route.to_owned()),
                scripted: scripted(),
                dialect: self.dialect,
            });
        };
        if let Some(error) = body.not_json() {
            return Err(MismatchReason::BodyNotJson { error: error.to_owned() });
        }
        if route == ROOT
            && let Some(turn) = self.bound_turn(state)
        {
            let range = self.turn_range(turn);
            let next = range.clone().find(|index| !state.root_served.get(*index).copied().unwrap_or(false));
            let exhausted = |after| MismatchReason::TurnExhausted { turn, served: range.len(), after };
            let index = match (next, self.script.exhausted) {
                (Some(index), _) => index,
                (None, Exhausted::RepeatLast) if !range.is_empty() => range.end - 1,
                (None, Exhausted::Retry) => {
                    match retry_of(state, responses, turn, continues, self.continuation(turn)) {
                        Ok(index) => index,
                        Err(after) => return Err(exhausted(after)),
                    }
                }
                (None, _) => return Err(exhausted(After::Refused)),
            };
            return responses
                .get(index)
                .map(|response| (index, key.as_str(), response))
                .ok_or_else(|| exhausted(After::Nothing));
        }
        let index = state.cursors.get(route).copied().unwrap_or(0);
        // A route no turn binds (a child's; every route under `mock-provider serve`, which
        // begins no turn), past its script: its last response again when the script says
        // `repeat_last`, and a retry of its fault meets the same fault again (the provider as it
        // is), up to the cap, as a turn's retry does: never a made-up answer.
        match (responses.get(index), responses.last(), self.script.exhausted) {
            (Some(response), _, _) => Ok((index, key.as_str(), response)),
            (None, Some(last), Exhausted::RepeatLast) => Ok((responses.len() - 1, key.as_str(), last)),
            (None, Some(last), Exhausted::Retry) if last.fails() && index - responses.len() < RETRY_CAP => {
                Ok((responses.len() - 1, key.as_str(), last))
            }
            _ => Err(MismatchReason::Exhausted { route: route.to_owned(), served: responses.len() }),
        }
    }

    /// The turn the root's requests are bound to now, when the script binds them.
    fn bound_turn(&self, state: &State) -> Option<usize> {
        state.turn.filter(|_| !self.script.turns.is_empty())
    }

    /// What was requested, what is left and what did not match.
    pub fn report(&self) -> MockReport {
        let state = self.lock();
        let unconsumed = self
            .script
            .routes
            .iter()
            .filter_map(|(route, responses)| {
                if route == ROOT && self.bound_turn(&state).is_some() {
                    // The responses of optional turns, and those answering continuations, are
                    // never unconsumed.
                    let bound: usize = self.script.turns.iter().sum();
                    let required = self.script.optional_from.map_or(bound, |turn| self.turn_range(turn).start);
                    let served = |index: usize| state.root_served.get(index).copied().unwrap_or(false);
                    let index = (0..required).find(|index| !served(*index))?;
                    let remaining = (index..required).filter(|index| !served(*index)).count();
                    return Some(Unconsumed { route: route.clone(), index, remaining });
                }
                let index = state.cursors.get(route).copied().unwrap_or(0);
                let remaining = responses.len().saturating_sub(index);
                (remaining > 0).then(|| Unconsumed { route: route.clone(), index, remaining })
            })
            .collect();
        MockReport {
            journal: state.journal.clone(),
            unconsumed,
            mismatches: state.mismatches.clone(),
            side_requests: state.side_served.clone(),
            renamed: state.renamed.clone(),
        }
    }
}

/// A reply from a dialect's answer, noting its end in the journal through `end`.
/// The reply of `answer`; its status goes into the journal entry `end` notes the end of, so
/// the journal says what the agent met on the wire. Called with the state unlocked.
/// The error answer to a request the script could not place, saying why; the reason is kept
/// among the run's mismatches.
fn refuse(
    mut state: MutexGuard<'_, State>,
    request: MockRequest,
    reason: MismatchReason,
    end: Option<EndRecorder>,
) -> MockReply {
    let status = reason.status();
    let mismatch = Mismatch { method: request.method, path: request.path, reason };
    let body = json!({ "error": {
        "type": "gauntlet_unmatched_request", "code": "unmatched_request",
        "message": format!("unmatched request {mismatch}"),
    }});
    state.mismatches.push(mismatch);
    drop(state);
    reply(json_answer(status, body), end)
}

fn reply(answer: Answer, end: Option<EndRecorder>) -> MockReply {
    if let Some(end) = &end {
        end.record_status(answer.status);
    }
    MockReply { status: answer.status, headers: answer.headers, steps: answer.steps, end }
}

/// The response a request past turn `turn`'s script retries, when it is a retry: the turn's
/// last request met a fault (its response one, or a body the client gave up on), the request
/// asks it again (its conversation is the same) and that fault was not yet repeated
/// [`RETRY_CAP`] times in a row. One that `continues` the conversation is a continuation: it
/// gets the turn's `continuation` response when the script gives one (up to the same cap),
/// else what the faulted response kept back. Otherwise what the request came after
/// ([`Exhausted::Retry`]).
fn retry_of(
    state: &State,
    responses: &[Response],
    turn: usize,
    continues: bool,
    continuation: Option<usize>,
) -> Result<usize, After> {
    let mut asked = state.journal.iter().rev().filter(|entry| entry.route == ROOT && entry.turn == Some(turn));
    let Some(last) = asked.next() else { return Err(After::Nothing) };
    let Some(index) = last.response_index else { return Err(After::Nothing) };
    let Some(response) = responses.get(index) else { return Err(After::Nothing) };
    let given_up = last.timing.ended.is_some_and(|ended| ended.how == StreamEnd::ClientClosed);
    if !response.fails() && !given_up {
        return Err(match response.truncation() {
            Some(reason) => After::Truncated(reason.to_owned()),
            None if !response.calls.is_empty() => After::ToolCalls,
            None => After::Answer,
        });
    }
    let index = match continuation {
        Some(scripted) if continues => scripted,
        None if continues => return Err(After::Continuation { of: index, given_up }),
        _ => index,
    };
    let repeats = asked.take_while(|entry| entry.response_index == Some(index)).count();
    if repeats >= RETRY_CAP {
        return Err(After::Fault { repeats });
    }
    Ok(index)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn post(path: &str, body: &str) -> MockRequest {
        MockRequest { method: "POST".into(), path: path.into(), headers: vec![], body: Bytes::from(body.to_owned()) }
    }

    #[test]
    fn a_turn_is_answered_from_its_own_responses_and_a_request_after_its_answer_gets_an_empty_one() {
        let text = |t: &str| Response { text: vec![t.into()], ..Response::default() };
        let mut script = Script::root(vec![text("one"), text("two")]);
        script.turns = vec![1, 1];
        let provider = MockProvider::new(script.clone());
        provider.begin_turn(0);
        assert_eq!(provider.respond(post("/v1/responses", "{}")).status, 200);
        // A request of the agent's own after turn 1's answer does not take turn 2's answer; it
        // gets an empty clean response, nothing to show or to retry.
        let after = provider.respond(post("/v1/responses", "{}"));
        assert_eq!(after.status, 200);
        let shown = format!("{:?}", after.steps);
        assert!(shown.contains("response.completed") && !shown.contains("output_text.delta"), "{shown}");
        provider.begin_turn(1);
        assert_eq!(provider.respond(post("/v1/responses", "{}")).status, 200);
        let report = provider.report();
        let served: Vec<_> = report.journal.iter().map(|entry| (entry.turn, entry.response_index)).collect();
        assert_eq!(served, [(Some(0), Some(0)), (Some(0), None), (Some(1), Some(1))]);
        assert!(report.unconsumed.is_empty());
        assert!(report.mismatches[0].to_string().contains("turn 1 is exhausted"), "{}", report.mismatches[0]);
        assert!(report.mismatches[0].to_string().contains("after the turn's answer"), "{}", report.mismatches[0]);

        script.exhausted = Exhausted::RepeatLast;
        let provider = MockProvider::new(script.clone());
        provider.begin_turn(0);
        for _ in 0..3 {
            assert_eq!(provider.respond(post("/v1/responses", "{}")).status, 200);
        }
        let report = provider.report();
        assert!(report.journal.iter().all(|entry| entry.response_index == Some(0)));
        assert_eq!(report.unconsumed, [Unconsumed { route: ROOT.into(), index: 1, remaining: 1 }]);

        script.exhausted = Exhausted::Unscripted;
        let provider = MockProvider::new(script);
        provider.begin_turn(0);
        provider.respond(post("/v1/responses", "{}"));
        assert_eq!(provider.respond(post("/v1/responses", "{}")).status, 500);
    }

    /// A busy prompt an agent queues gets its own turn's answer once the running turn is
    /// answered; without a busy prompt, the same request is one after the answer.
    #[test]
    fn a_queued_busy_prompt_is_answered_from_its_own_turn() {
        let text = |t: &str| Response { text: vec![t.into()], ..Response::default() };
        let mut script = Script::root(vec![text("first"), text("queued")]);
        script.turns = vec![1, 1];
        script.optional_from = Some(1);
        let provider = MockProvider::new(script.clone());
        provider.begin_turn(0);
        provider.queue_turn(1, "second");
        provider.respond(post("/v1/responses", "{}"));
        provider.respond(post("/v1/responses", "{}"));
        let report = provider.report();
        let served: Vec<_> = report.journal.iter().map(|entry| (entry.turn, entry.response_index)).collect();
        assert_eq!(served, [(Some(0), Some(0)), (Some(1), Some(1))]);
        assert!(report.mismatches.is_empty() && report.unconsumed.is_empty(), "{report}");
        // A refused busy prompt leaves its optional turn unasked, and that is no leftover.
        let refused = MockProvider::new(script);
        refused.begin_turn(0);
        refused.queue_turn(1, "second");
        refused.respond(post("/v1/responses", "{}"));
        assert!(refused.report().unconsumed.is_empty());
    }

    /// An agent that stops the running turn for a busy prompt asks for it at once, before the
    /// running turn's answer: its request is the busy prompt's, not a retry of the turn it cut.
    #[test]
    fn a_request_carrying_the_busy_prompt_is_its_own_turns_whatever_came_before() {
        let text = |t: &str| Response { text: vec![t.into()], ..Response::default() };
        let failed = Response { status: Some(500), ..Response::default() };
        let mut script = Script::root(vec![failed, text("queued")]);
        script.turns = vec![1, 1];
        script.optional_from = Some(1);
        let provider = MockProvider::new(script);
        provider.begin_turn(0);
        provider.queue_turn(1, "second prompt");
        let asking = |prompt: &str| {
            let body =
                serde_json::json!({"input": [{"role": "user", "content": [{"type": "input_text", "text": prompt}]}]});
            post("/v1/responses", &body.to_string())
        };
        provider.respond(asking("first prompt"));
        // After a fault, a request of the running turn would be its retry; this one carries the
        // busy prompt.
        provider.respond(asking("second prompt"));
        let served: Vec<_> = provider.report().journal.iter().map(|entry| (entry.turn, entry.response_index)).collect();
        assert_eq!(served, [(Some(0), Some(0)), (Some(1), Some(1))]);
    }

    /// A reachability probe is side traffic, answered and kept out of the script and journal.
    #[test]
    fn a_head_probe_is_a_side_request() {
        let provider = MockProvider::new(Script::root(vec![Response::default()]));
        let probe = MockRequest { method: "HEAD".into(), path: "/".into(), ..MockRequest::default() };
        let reply = provider.respond(probe);
        assert_eq!((reply.status, reply.steps.len()), (200, 0));
        let report = provider.report();
        assert!(report.journal.is_empty() && report.mismatches.is_empty(), "{report}");
        assert_eq!(report.side_requests, ["HEAD /"]);
    }

    /// The provider is still failing: a retry past the script meets the turn's fault again, as
    /// often as an agent's own budget asks, up to the cap, and is no mismatch.
    #[test]
    fn a_retry_of_a_fault_meets_the_same_fault_up_to_the_cap() {
        let fault = Response { status: Some(503), retry_after: Some(1), ..Response::default() };
        let mut script = Script::root(vec![fault.clone()]);
        script.turns = vec![1];
        let provider = MockProvider::new(script);
        provider.begin_turn(0);
        for attempt in 0..=RETRY_CAP {
            let reply = provider.respond(post("/v1/responses", "{}"));
            assert_eq!(reply.status, 503, "attempt {attempt}");
            assert!(reply.headers.iter().any(|(name, _)| name == "retry-after"), "{:?}", reply.headers);
        }
        let report = provider.report();
        assert!(report.mismatches.is_empty(), "{report}");
        assert!(report.journal.iter().all(|entry| entry.response_index == Some(0)));
        let past = provider.respond(post("/v1/responses", "{}"));
        assert_eq!(past.status, 500);
        let report = provider.report();
        assert!(report.mismatches[0].to_string().contains(&format!("already met again {RETRY_CAP} times")), "{report}");
    }

    /// A request after a fault whose conversation differs from the faulted request's is a
    /// continuation, no retry: it does not meet the fault again but gets what the faulted
    /// response kept back (its text past a cut) and a clean end, and is journaled as such.
    #[test]
    fn a_continuation_after_a_fault_gets_the_rest_and_a_clean_end() {
        use crate::script::Ending;
        let cut = Response {
            text: vec!["The build ".into(), "passed.".into()],
            cut_after: Some(5),
            then: Ending::Disconnect,
            ..Response::default()
        };
        assert_eq!(cut.visible_text(), "The build ");
        let mut script = Script::root(vec![cut]);
        script.turns = vec![1];
        let provider = MockProvider::new(script);
        provider.begin_turn(0);
        let asked = r#"{"input":[{"role":"user","content":"Build it"}]}"#;
        provider.respond(post("/v1/responses", asked));
        // The same conversation again: a retry, which meets the fault.
        provider.respond(post("/v1/responses", asked));
        assert_eq!(provider.report().journal[1].response_index, Some(0));
        let resumed = r#"{"input":[{"role":"user","content":"Build it"},{"role":"assistant","content":"The build "},{"role":"user","content":"Resume directly"}]}"#;
        let reply = provider.respond(post("/v1/responses", resumed));
        assert_eq!(reply.status, 200);
        let streamed = format!("{:?}", reply.steps);
        assert!(streamed.contains("passed.") && streamed.contains("response.completed"), "{streamed}");
        let report = provider.report();
        assert_eq!(report.journal[2].unplaced, Some(After::Continuation { of: 0, given_up: false }));
        assert!(report.mismatches[0].to_string().contains("a continuation and no retry"), "{report}");
    }

    /// A script that says how a turn's continuations are answered (the Provider is still down)
    /// has every continuation meet that response, journaled as served, and it is never counted
    /// unconsumed by an agent that does not continue.
    #[test]
    fn a_scripted_continuation_answers_every_continuation() {
        use crate::script::Ending;
        let failed =
            Response { text: vec!["Half".into()], then: Ending::Error("server_error".into()), ..Response::default() };
        let down = Response { then: Ending::Error("server_error".into()), ..Response::default() };
        let mut script = Script::root(vec![failed, down]);
        script.turns = vec![1];
        script.continuations = vec![Some(1)];
        let provider = MockProvider::new(script.clone());
        provider.begin_turn(0);
        let asked = r#"{"input":[{"role":"user","content":"Go"}]}"#;
        let resumed = r#"{"input":[{"role":"user","content":"Go"},{"role":"assistant","content":"Half"}]}"#;
        let again = r#"{"input":[{"role":"user","content":"Go"},{"role":"assistant","content":"Half"},{"role":"user","content":"go on"}]}"#;
        for body in [asked, resumed, again] {
            provider.respond(post("/v1/responses", body));
        }
        let report = provider.report();
        let served: Vec<_> = report.journal.iter().map(|entry| entry.response_index).collect();
        assert_eq!(served, [Some(0), Some(1), Some(1)]);
        assert!(report.mismatches.is_empty() && report.unconsumed.is_empty(), "{report}");
        let untouched = MockProvider::new(script);
        untouched.begin_turn(0);
        untouched.respond(post("/v1/responses", asked));
        assert!(untouched.report().unconsumed.is_empty());
    }

    /// The journal keeps the status each request was answered with: a failing response asked
    /// for whole comes as an HTTP error, the same one streamed as a 200 that fails in band, and
    /// a request the script cannot place as the mock's own error.
    #[test]
    fn the_journal_keeps_the_status_the_agent_met() {
        use crate::script::Ending;
        let failed =
            Response { text: vec!["x".into()], then: Ending::Failed("server_error".into()), ..Response::default() };
        let mut script = Script::root(vec![failed.clone(), failed]);
        script.turns = vec![2];
        script.exhausted = Exhausted::Unscripted;
        let chat = MockProvider::new(script).with_dialect(Dialect::ChatCompletions);
        chat.begin_turn(0);
        chat.respond(post("/v1/chat/completions", r#"{"model":"m","stream":true}"#));
        chat.respond(post("/v1/chat/completions", r#"{"model":"m"}"#));
        chat.respond(post("/v1/chat/completions", r#"{"model":"m"}"#));
        let statuses: Vec<_> = chat.report().journal.iter().map(|entry| entry.status).collect();
        assert_eq!(statuses, [Some(200), Some(500), Some(500)]);
    }

    /// A response cut by the output limit reports the output tokens the request allowed, in
    /// each dialect's field (issue 45); scripted usage and a request that names no limit keep
    /// theirs.
    #[test]
    fn a_cut_by_the_output_limit_reports_the_limit_as_its_output() {
        use crate::script::Ending;
        let cut = Response {
            text: vec!["x".into()],
            then: Ending::Incomplete("max_output_tokens".into()),
            ..Response::default()
        };
        let served = |dialect: Dialect, path: &str, body: &str, response: &Response| {
            let provider = MockProvider::new(Script::root(vec![response.clone()])).with_dialect(dialect);
            format!("{:?}", provider.respond(post(path, body)).steps)
        };
        let cases = [
            (Dialect::Responses, "/v1/responses", r#"{"max_output_tokens":16384}"#, "output_tokens\\\":16384"),
            (
                Dialect::ChatCompletions,
                "/v1/chat/completions",
                r#"{"max_tokens":16384}"#,
                "completion_tokens\\\":16384",
            ),
            (Dialect::AnthropicMessages, "/v1/messages", r#"{"max_tokens":16384}"#, "output_tokens\\\":16384"),
            (
                Dialect::Gemini,
                "/v1beta/models/m:streamGenerateContent",
                r#"{"generationConfig":{"maxOutputTokens":16384}}"#,
                "candidatesTokenCount\\\":16384",
            ),
        ];
        for (dialect, path, body, reported) in cases {
            let shown = served(dialect, path, body, &cut);
            assert!(shown.contains(reported), "{dialect:?}: {shown}");
            assert!(!served(dialect, path, "{}", &cut).contains("16384"), "{dialect:?}");
        }
        let scripted =
            Response { usage: Some(crate::script::Usage { output: 7, ..crate::script::Usage::DEFAULT }), ..cut };
        assert!(
            !served(Dialect::Responses, "/v1/responses", r#"{"max_output_tokens":16384}"#, &scripted).contains("16384")
        );
    }

    /// A child's retry of its fault meets the fault again, up to the cap, as a turn's does:
    /// never an answer gauntlet made up.
    #[test]
    fn a_routes_fault_meets_its_retries_up_to_the_cap() {
        let mut script = Script::root(vec![Response::default()]);
        script.routes.insert("child".into(), vec![Response { status: Some(500), ..Response::default() }]);
        let provider = MockProvider::new(script);
        for _ in 0..=RETRY_CAP {
            assert_eq!(provider.respond(post("/routes/child/v1/responses", "{}")).status, 500);
        }
        assert_eq!(provider.respond(post("/routes/child/v1/responses", "{}")).status, 404);
    }

    #[test]
    fn routes_cursors_and_mismatches() {
        let mut script = Script::root(vec![Response::default(), Response::default()]);
        script.routes.insert("side".into(), vec![Response { status: Some(500), ..Response::default() }]);
        script.exhausted = Exhausted::Unscripted;
        let provider = MockProvider::new(script);
        assert_eq!(provider.respond(post("/v1/responses", r#"{"model":"m"}"#)).status, 200);
        assert_eq!(provider.respond(post("/routes/side/v1/responses", "{}")).status, 500);
        assert_eq!(provider.respond(post("/routes/side/v1/responses", "{}")).status, 404);
        assert_eq!(provider.respond(post("/v1/responses", "not json")).status, 400);
        assert_eq!(provider.respond(post("/routes/nope/v1/responses", "{}")).status, 404);
        let get = MockRequest { method: "GET".into(), ..post("/v1/responses", "{}") };
        assert_eq!(provider.respond(get).status, 405);

        let report = provider.report();
        assert_eq!(report.journal.len(), 6);
        assert_eq!(report.journal[0].response_index, Some(0));
        assert_eq!(report.journal[3].body.whole(), Some(&json!("not json")));
        assert_eq!(report.unconsumed, [Unconsumed { route: "root".into(), index: 1, remaining: 1 }]);
        let reasons: Vec<_> = report.mismatches.iter().map(|m| m.reason.status()).collect();
        assert_eq!(reasons, [404, 400, 404, 405]);
        assert!(report.mismatches[0].to_string().contains("1 of 1 scripted responses were already consumed"));
        assert!(!report.is_strictly_satisfied());
    }

    #[test]
    fn a_request_in_another_dialect_names_both() {
        let provider = MockProvider::new(Script::root(vec![Response::default()]));
        assert_eq!(provider.respond(post("/v1/messages", r#"{"model":"m"}"#)).status, 404);
        let chat = MockProvider::new(Script::root(vec![Response::default()])).with_dialect(Dialect::ChatCompletions);
        let answer = chat.respond(post("/routes/root/v1/chat/completions", r#"{"model":"m","stream":true}"#));
        assert_eq!(answer.status, 200);
        let report = provider.report();
        assert_eq!(
            report.mismatches[0].to_string(),
            "the agent called POST /v1/messages (Anthropic Messages); its profile says responses"
        );
        assert!(chat.report().is_strictly_satisfied());
    }

    #[test]
    fn side_requests_are_answered_outside_the_script_and_the_journal() {
        let side: SideRequest =
            toml::from_str("name = \"title\"\npointer = \"/instructions\"\ncontains = \"title\"").unwrap();
        let provider = MockProvider::new(Script::root(vec![Response::default()])).with_side_requests(vec![side]);
        let title = provider.respond(post("/v1/responses", r#"{"instructions":"Write a title"}"#));
        assert_eq!(title.status, 200);
        assert_eq!(provider.respond(post("/v1/responses", r#"{"instructions":"Agent"}"#)).status, 200);
        let report = provider.report();
        assert_eq!(report.side_requests, ["title"]);
        assert_eq!(report.journal.len(), 1);
        assert!(report.is_strictly_satisfied());
    }

    /// Title generation is a side request in every dialect: matched by the system text the
    /// dialect carries, answered with a stream in that dialect, left out of the journal.
    #[test]
    fn side_requests_work_in_every_dialect() {
        let side: SideRequest = toml::from_str(
            "name = \"title\"\nsystem_contains = \"a title\"\nrespond = { text = [\"Fix the \", \"build\"] }",
        )
        .unwrap();
        let requests = |system: &str| {
            [
                (
                    Dialect::Responses,
                    "/v1/responses",
                    json!({ "model": "m", "instructions": system, "input": "go", "stream": true }),
                ),
                (
                    Dialect::ChatCompletions,
                    "/v1/chat/completions",
                    json!({ "model": "m", "stream": true, "messages": [{ "role": "system", "content": system }, { "role": "user", "content": "go" }] }),
                ),
                (
                    Dialect::AnthropicMessages,
                    "/v1/messages",
                    json!({ "model": "m", "stream": true, "system": system, "messages": [{ "role": "user", "content": "go" }] }),
                ),
                (
                    Dialect::Gemini,
                    "/v1beta/models/m:streamGenerateContent",
                    json!({ "systemInstruction": { "parts": [{ "text": system }] }, "contents": [{ "role": "user", "parts": [{ "text": "go" }] }] }),
                ),
            ]
        };
        for ((dialect, path, title), (_, _, agent)) in
            requests("Write a title for this").into_iter().zip(requests("You are an agent"))
        {
            let provider = MockProvider::new(Script::root(vec![Response::default()]))
                .with_dialect(dialect)
                .with_side_requests(vec![side.clone()]);
            let answer = provider.respond(post(path, &title.to_string()));
            assert_eq!((answer.status, answer.end.is_none()), (200, true), "{dialect}");
            assert_eq!(answer.headers[0].1, "text/event-stream", "{dialect}");
            let body: Vec<u8> = answer
                .steps
                .iter()
                .filter_map(|step| if let Step::Bytes(bytes) = step { Some(bytes.to_vec()) } else { None })
                .flatten()
                .collect();
            let body = String::from_utf8(body).unwrap();
            assert!(body.contains("Fix the ") && body.contains("build"), "{dialect}: {body}");
            assert_eq!(provider.respond(post(path, &agent.to_string())).status, 200, "{dialect}");
            let report = provider.report();
            assert_eq!(
                (report.side_requests.as_slice(), report.journal.len()),
                (&["title".to_owned()][..], 1),
                "{dialect}"
            );
            assert!(report.is_strictly_satisfied(), "{dialect}");
        }
    }

    #[test]
    fn the_session_header_picks_a_child_route_and_the_first_session_is_the_root() {
        let mut script = Script::root(vec![Response::default(), Response::default()]);
        script.routes.insert("sub_1".into(), vec![Response::default()]);
        let provider = MockProvider::new(script);
        let from = |session: &str| MockRequest {
            headers: vec![(SESSION_HEADER.into(), session.into())],
            ..post("/v1/responses", "{}")
        };
        assert_eq!(provider.respond(from("a1b2")).status, 200);
        assert_eq!(provider.respond(from("sub_1")).status, 200);
        assert_eq!(provider.respond(from("a1b2")).status, 200);
        assert_eq!(provider.respond(from("stranger")).status, 404);
        let report = provider.report();
        let routes: Vec<_> = report.journal.iter().map(|entry| entry.route.as_str()).collect();
        assert_eq!(routes, ["root", "sub_1", "root", "stranger"]);
        assert!(report.mismatches[0].to_string().contains("route `stranger` is not in the script"));
    }

    #[test]
    fn ids_are_unique_across_responses() {
        let text = Response { text: vec!["a".into()], ..Response::default() };
        let provider = MockProvider::new(Script::root(vec![text.clone(), text]));
        let first = provider.respond(post("/v1/responses", "{}"));
        let second = provider.respond(post("/v1/responses", "{}"));
        let bytes = |reply: &MockReply| match &reply.steps[2] {
            Step::Bytes(b) => String::from_utf8(b.to_vec()).unwrap(),
            other => panic!("{other:?}"),
        };
        assert!(bytes(&first).contains("msg_1"));
        assert!(bytes(&second).contains("msg_2"));
        assert!(provider.report().is_strictly_satisfied());
    }
}
