//! A [`Response`] rebuilt from a recorded stream, beat by beat: each dialect's reader feeds a
//! [`Draft`] what its frames say (items, chunks, usage, the ending) and the last [`Mark`] it
//! saw, and [`Draft::finish`] turns it into the response the mock replays. Where the stream
//! stopped early, `cut_after` is the number of beats of the rebuilt response the Provider sent
//! (beats count the same in every dialect, see [`crate::beat`]), left out when every beat after
//! it is one the dialect sends no frame for.
//!
//! A reader says when each frame arrived ([`Draft::at`]), so each beat, and the ending, gets the
//! time of the frame that brought it (a beat the dialect sends nothing for goes with the frame
//! before it); `record/timing.rs` turns the waits between them into the response's pauses,
//! each right before the beat whose frame came late.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use crate::beat::{Beat, arguments, beats};
use crate::dialect::Dialect;
use crate::record::timing;
use crate::script::{Call, Ending, Reasoning, Response, Usage};

/// The kind of a beat a reader saw a frame for; the draft notes it with the item it belongs
/// to, the last of its kind (reasoning item, call) when it came.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mark {
    Created,
    InProgress,
    ReasoningAdded,
    ReasoningPartAdded,
    ReasoningDelta,
    ReasoningTextDone,
    ReasoningPartDone,
    ReasoningDone,
    MessageAdded,
    TextPartAdded,
    TextDelta,
    TextDone,
    TextPartDone,
    MessageDone,
    CallAdded,
    ArgsDelta,
    ArgsDone,
    CallDone,
}

/// How a recorded body ended on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEnd {
    /// The upstream ended it cleanly.
    Finished,
    /// The upstream connection failed mid-body.
    Dropped,
    /// The agent closed it before the upstream ended it (a cancel).
    ClientClosed,
    /// It was still streaming when the recording stopped.
    Unfinished,
}

/// What one recorded answer becomes: the response to replay, and what the recorder could not
/// carry into it (written as comments).
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The response.
    pub response: Response,
    /// What was lost or guessed, one sentence each.
    pub notes: Vec<String>,
}

/// A beat a frame brought, and when: its kind, its item (as `Draft::seen` notes it), which of the
/// item's beats of that kind it is (its `nth` chunk), and when the frame arrived.
#[derive(Debug, Clone, Copy)]
struct Stamp {
    mark: Mark,
    item: Option<usize>,
    nth: usize,
    at: Duration,
}

/// A response being rebuilt from frames.
#[derive(Debug, Default)]
pub struct Draft {
    response: Response,
    last: Option<Mark>,
    /// When the frame being read arrived, since the request left.
    now: Duration,
    /// Every beat a frame brought, in the order they came.
    stamps: Vec<Stamp>,
    /// When the terminal frame (or the malformed one) arrived.
    ending_at: Option<Duration>,
    /// How many argument fragments the open call has streamed.
    n_fragments: usize,
    /// Every beat seen, with its item: the furthest of them is where the stream stopped, even
    /// when a Provider sent items in another order than the mock does.
    seen: BTreeSet<(Mark, Option<usize>)>,
    /// Each call's arguments as streamed (fragments joined).
    args: Vec<String>,
    /// A whole (non-streamed) answer: it has no beats to cut.
    whole: bool,
    /// A message item started with no text yet.
    message_started: bool,
    ending: Option<Ending>,
    input: Option<u64>,
    cached: Option<u64>,
    output: Option<u64>,
    reasoning_tokens: Option<u64>,
    notes: Vec<String>,
}

impl Draft {
    /// Notes that a frame of beat kind `mark` arrived.
    pub fn mark(&mut self, mark: Mark) {
        let item = match mark {
            Mark::ReasoningAdded
            | Mark::ReasoningPartAdded
            | Mark::ReasoningDelta
            | Mark::ReasoningTextDone
            | Mark::ReasoningPartDone
            | Mark::ReasoningDone => self.response.reasoning.len().checked_sub(1),
            Mark::CallAdded | Mark::ArgsDelta | Mark::ArgsDone | Mark::CallDone => {
                self.response.calls.len().checked_sub(1)
            }
            _ => None,
        };
        let nth = match mark {
            Mark::TextDelta => self.response.message().len().saturating_sub(1),
            Mark::ReasoningDelta => self.response.reasoning.last().map_or(0, |r| r.summary.len().saturating_sub(1)),
            Mark::ArgsDelta => self.n_fragments.saturating_sub(1),
            _ => 0,
        };
        self.stamps.push(Stamp { mark, item, nth, at: self.now });
        self.seen.insert((mark, item));
        self.last = Some(mark);
    }

    /// The frames read from here on arrived `now`, since the request left.
    pub fn at(&mut self, now: Duration) {
        self.now = now;
    }

    /// A reasoning item starts.
    pub fn reasoning_added(&mut self) {
        self.response.reasoning.push(Reasoning::default());
        self.mark(Mark::ReasoningAdded);
    }

    /// The open reasoning item, started if none is.
    fn reasoning(&mut self) -> &mut Reasoning {
        if self.response.reasoning.is_empty() {
            self.response.reasoning.push(Reasoning::default());
        }
        let last = self.response.reasoning.len() - 1;
        &mut self.response.reasoning[last]
    }

    /// A summary (thinking) chunk of the open reasoning item.
    pub fn reasoning_delta(&mut self, chunk: &str) {
        self.reasoning().summary.push(chunk.to_owned());
        self.mark(Mark::ReasoningDelta);
    }

    /// The open reasoning item is done, with its opaque payload.
    pub fn reasoning_done(&mut self, encrypted: Option<String>) {
        if encrypted.is_some() {
            self.reasoning().encrypted = encrypted;
        }
        self.mark(Mark::ReasoningDone);
    }

    /// Whether any reasoning item was started.
    pub fn has_reasoning(&self) -> bool {
        !self.response.reasoning.is_empty()
    }

    /// The assistant message starts.
    pub fn message_added(&mut self) {
        self.message_started = true;
        self.mark(Mark::MessageAdded);
    }

    /// A text chunk.
    pub fn text_delta(&mut self, chunk: &str) {
        if !self.response.calls.is_empty() {
            self.note("text came after a tool call; the mock sends a response's text before its calls");
        }
        self.response.text.push(chunk.to_owned());
        self.mark(Mark::TextDelta);
    }

    /// A chunk of an explicit refusal (`refusal`), which streams as the message's text does.
    pub fn refusal_delta(&mut self, chunk: &str) {
        self.response.refusal.push(chunk.to_owned());
        self.mark(Mark::TextDelta);
    }

    /// A call starts.
    pub fn call_added(&mut self, name: &str, call_id: Option<String>) {
        self.response.calls.push(Call {
            name: name.to_owned(),
            args: Value::Null,
            call_id,
            raw_args: None,
            ..Call::default()
        });
        self.args.push(String::new());
        self.n_fragments = 0;
        self.mark(Mark::CallAdded);
    }

    /// A fragment of the open call's arguments.
    pub fn args_delta(&mut self, fragment: &str) {
        if let Some(args) = self.args.last_mut() {
            args.push_str(fragment);
        }
        self.n_fragments += 1;
        self.mark(Mark::ArgsDelta);
    }

    /// The open call's arguments are done: `whole` when the frame carries them.
    pub fn args_done(&mut self, whole: Option<&str>) {
        if let (Some(args), Some(whole)) = (self.args.last_mut(), whole) {
            *args = whole.to_owned();
        }
        self.mark(Mark::ArgsDone);
    }

    /// The open call is done (its arguments as `args_done` takes them).
    pub fn call_done(&mut self, whole: Option<&str>) {
        self.args_done(whole);
        self.mark(Mark::CallDone);
    }

    /// A whole call at once (Gemini, whole answers): name, id and arguments.
    pub fn whole_call(&mut self, name: &str, call_id: Option<String>, args: &Value) {
        self.call_added(name, call_id);
        self.call_done(Some(&args.to_string()));
    }

    /// Usage counts, each where the wire gave it.
    pub fn usage(&mut self, input: Option<u64>, cached: Option<u64>, output: Option<u64>, reasoning: Option<u64>) {
        self.input = input.or(self.input);
        self.cached = cached.or(self.cached);
        self.output = output.or(self.output);
        self.reasoning_tokens = reasoning.or(self.reasoning_tokens);
    }

    /// The stream's ending, as its terminal frame says.
    pub fn end(&mut self, ending: Ending) {
        self.ending = Some(ending);
        self.ending_at = Some(self.now);
    }

    /// Whether a terminal frame was read.
    pub fn ended(&self) -> bool {
        self.ending.is_some()
    }

    /// The answer was one JSON body, not a stream.
    pub fn whole(&mut self) {
        self.whole = true;
    }

    /// The last beat kind seen.
    pub fn last(&self) -> Option<Mark> {
        self.last
    }

    /// Something the response cannot carry.
    pub fn note(&mut self, note: impl Into<String>) {
        let note = note.into();
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    /// The response to replay in `dialect`, its body having ended as `end` at `ended_at`,
    /// with a pause for each wait of at least `min_gap`.
    pub fn finish(mut self, dialect: Dialect, end: BodyEnd, ended_at: Duration, min_gap: Duration) -> Recorded {
        let ending = match (self.ending.take(), end) {
            (Some(ending), _) => ending,
            (None, BodyEnd::Dropped) => Ending::Disconnect,
            (None, BodyEnd::Finished) => Ending::Eof,
            (None, BodyEnd::ClientClosed) => {
                self.note("the agent closed the stream before the Provider ended it (a cancel?): recorded as far as it went, ending `eof`");
                Ending::Eof
            }
            (None, BodyEnd::Unfinished) => {
                self.note("still streaming when the recording stopped: recorded as far as it went, ending `eof`");
                Ending::Eof
            }
        };
        self.response.then = ending;
        let clean = self.response.then == Ending::Completed;
        for (index, args) in std::mem::take(&mut self.args).into_iter().enumerate() {
            let parsed = match serde_json::from_str::<Value>(&args) {
                Ok(value) => value,
                Err(_) if args.trim().is_empty() => Value::Object(serde_json::Map::new()),
                Err(_) if clean => {
                    // A whole call whose arguments do not parse, in a clean answer: the model's own
                    // text, kept as it came (ACP-INVALID-ARGUMENTS).
                    if let Some(call) = self.response.calls.get_mut(index) {
                        call.raw_args = Some(args);
                    }
                    continue;
                }
                Err(_) => {
                    self.note(format!("call {index}'s arguments were cut at {args:?}: recorded as `{{}}`"));
                    Value::Object(serde_json::Map::new())
                }
            };
            if let Some(call) = self.response.calls.get_mut(index) {
                call.args = parsed;
            }
        }
        if self.message_started && self.response.message().is_empty() {
            // The message item was sent without text: an empty chunk keeps its item.
            self.response.text.push(String::new());
        }
        let seen = [self.input, self.cached, self.output, self.reasoning_tokens];
        if seen.iter().any(Option::is_some) {
            let usage = Usage {
                input: self.input.unwrap_or(Usage::DEFAULT.input),
                cached: self.cached.unwrap_or(Usage::DEFAULT.cached),
                output: self.output.unwrap_or(Usage::DEFAULT.output),
                reasoning: self.reasoning_tokens.unwrap_or(Usage::DEFAULT.reasoning),
            };
            self.response.usage = (usage != Usage::DEFAULT).then_some(usage);
        }
        self.response.cut_after = self.cut(dialect);
        self.response.pause = timing::pauses(&self.unit_times(ended_at), min_gap);
        Recorded { response: self.response, notes: self.notes }
    }

    /// When each unit of the replayed stream arrived: each beat up to the cut, then the ending
    /// (its terminal or malformed frame, else the end of the body at `ended_at`). A beat came
    /// with the frame that brought it; one the dialect sends no frame for went out with the
    /// frame before it, so a wait falls right before the frame that came late, at the same beat
    /// whatever the dialect. A beat brought again later (Anthropic's text after a call) keeps
    /// its first time.
    fn unit_times(&self, ended_at: Duration) -> Vec<Duration> {
        let arguments = arguments(&self.response);
        let beats = beats(&self.response, &arguments);
        let shown = self.response.cut_after.unwrap_or(beats.len()).min(beats.len());
        let mut times: Vec<Duration> = Vec::with_capacity(shown + 1);
        for stamp in &self.stamps {
            let Some(position) = nth_position(&beats, stamp).filter(|&position| position < shown) else { continue };
            if position < times.len() {
                continue;
            }
            let previous = times.last().copied().unwrap_or_default();
            times.resize(position, previous);
            times.push(stamp.at.max(previous));
        }
        let previous = times.last().copied().unwrap_or_default();
        times.resize(shown, previous);
        times.push(self.ending_at.unwrap_or(ended_at).max(previous));
        times
    }

    /// The beats the Provider sent, when the stream stopped before the rebuilt response's last
    /// beat that `dialect` sends a frame for.
    fn cut(&self, dialect: Dialect) -> Option<usize> {
        if self.whole {
            return None;
        }
        let arguments = arguments(&self.response);
        let beats = beats(&self.response, &arguments);
        let furthest = self.seen.iter().map(|&(mark, item)| position(&beats, mark, item)).max();
        let seen = match furthest {
            None => 0,
            Some(position) => position? + 1,
        };
        let rest = beats.get(seen..).unwrap_or_default();
        (!rest.iter().all(|beat| silent(dialect, beat))).then_some(seen)
    }
}

/// Where the last beat of kind `mark` of `item` stands.
fn position(beats: &[Beat<'_>], mark: Mark, item: Option<usize>) -> Option<usize> {
    beats.iter().rposition(|beat| is(beat, mark, item))
}

/// Where the beat a stamp notes stands: its item's `nth` beat of its kind, or the last of them
/// (a call's arguments stream in more fragments than the mock's two halves).
fn nth_position(beats: &[Beat<'_>], stamp: &Stamp) -> Option<usize> {
    let mut positions = beats.iter().enumerate().filter(|(_, beat)| is(beat, stamp.mark, stamp.item));
    let last = positions.clone().next_back();
    positions.nth(stamp.nth).or(last).map(|(position, _)| position)
}

/// Whether `beat` is of kind `mark` and of `item`.
fn is(beat: &Beat<'_>, mark: Mark, item: Option<usize>) -> bool {
    let (reasoning, call) = (item, item);
    match (mark, *beat) {
        (Mark::Created, Beat::Created)
        | (Mark::InProgress, Beat::InProgress)
        | (Mark::MessageAdded, Beat::MessageAdded)
        | (Mark::TextPartAdded, Beat::TextPartAdded)
        | (Mark::TextDelta, Beat::TextDelta(_))
        | (Mark::TextDone, Beat::TextDone)
        | (Mark::TextPartDone, Beat::TextPartDone)
        | (Mark::MessageDone, Beat::MessageDone) => true,
        (Mark::ReasoningAdded, Beat::ReasoningAdded { index, .. })
        | (Mark::ReasoningPartAdded, Beat::ReasoningPartAdded { index })
        | (Mark::ReasoningDelta, Beat::ReasoningDelta { index, .. })
        | (Mark::ReasoningTextDone, Beat::ReasoningTextDone { index, .. })
        | (Mark::ReasoningPartDone, Beat::ReasoningPartDone { index, .. })
        | (Mark::ReasoningDone, Beat::ReasoningDone { index, .. }) => Some(index) == reasoning,
        (Mark::CallAdded, Beat::CallAdded { index, .. })
        | (Mark::ArgsDelta, Beat::ArgsDelta { index, .. })
        | (Mark::ArgsDone, Beat::ArgsDone { index, .. })
        | (Mark::CallDone, Beat::CallDone { index, .. }) => Some(index) == call,
        _ => false,
    }
}

/// Whether `dialect` sends no frame for `beat` (docs/scenario-format.md, "The same response in
/// every dialect"): such beats are never seen, so a stream that stops before them is whole.
/// Each arm lists the beats its wire has frames for.
fn silent(dialect: Dialect, beat: &Beat<'_>) -> bool {
    match dialect {
        Dialect::Responses => false,
        Dialect::ChatCompletions => {
            !matches!(beat, Beat::Created | Beat::TextDelta(_) | Beat::CallAdded { .. } | Beat::ArgsDelta { .. })
        }
        Dialect::AnthropicMessages => !matches!(
            beat,
            Beat::Created
                | Beat::InProgress
                | Beat::ReasoningAdded { .. }
                | Beat::ReasoningDelta { .. }
                | Beat::ReasoningDone { .. }
                | Beat::MessageAdded
                | Beat::TextDelta(_)
                | Beat::MessageDone
                | Beat::CallAdded { .. }
                | Beat::ArgsDelta { .. }
                | Beat::CallDone { .. }
        ),
        Dialect::Gemini => match beat {
            Beat::ReasoningDelta { .. } | Beat::TextDelta(_) | Beat::CallDone { .. } => false,
            Beat::ReasoningDone { reasoning, .. } => reasoning.encrypted.is_none(),
            _ => true,
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_stopped_mid_text_is_cut_where_a_frame_was_due() {
        let mut draft = Draft::default();
        draft.mark(Mark::Created);
        draft.mark(Mark::InProgress);
        draft.message_added();
        draft.mark(Mark::TextPartAdded);
        draft.text_delta("Useful ");
        draft.end(Ending::Error("server_error".into()));
        let recorded = draft.finish(Dialect::Responses, BodyEnd::Finished, Duration::ZERO, timing::MIN_GAP);
        assert_eq!(recorded.response.cut_after, Some(5));
        assert_eq!(recorded.response.text, ["Useful "]);
        assert_eq!(recorded.response.then, Ending::Error("server_error".into()));
    }

    /// The first-token time, a stall between two chunks and a wait before the terminal frame
    /// become pauses before the beats that came late; beats Chat Completions sends nothing for
    /// go with the frame before them, so the stall falls between the chunks, as in every dialect.
    #[test]
    fn each_wait_is_a_pause_before_the_beat_that_came_late() {
        let ms = Duration::from_millis;
        let mut draft = Draft::default();
        draft.at(ms(812));
        draft.mark(Mark::Created);
        draft.at(ms(830));
        draft.message_added();
        draft.text_delta("Hello ");
        draft.at(ms(3_020));
        draft.text_delta("world");
        draft.at(ms(3_400));
        draft.end(Ending::Error("server_error".into()));
        let recorded = draft.finish(Dialect::ChatCompletions, BodyEnd::Finished, ms(3_401), timing::MIN_GAP);
        let pause = |after, ms| crate::script::Pause { after, ms };
        // Beats: created 0, in progress 1, message 2, part 3, chunks 4 and 5, done 6 to 8, the ending 9.
        assert_eq!(recorded.response.pause, [pause(0, 810), pause(5, 2_190), pause(9, 380)]);

        // An EOF comes when the body ends: after every beat, where the replay holds the end back.
        let mut draft = Draft::default();
        draft.at(ms(10));
        draft.mark(Mark::Created);
        draft.text_delta("Cut");
        let recorded = draft.finish(Dialect::ChatCompletions, BodyEnd::Finished, ms(1_510), timing::MIN_GAP);
        assert_eq!((recorded.response.then, recorded.response.pause), (Ending::Eof, vec![pause(8, 1_500)]));
    }

    /// A whole call whose arguments do not parse, in a clean answer, keeps them as `raw_args`;
    /// a refusal's chunks are its `refusal`, the message's beats (issue 34).
    #[test]
    fn invalid_arguments_and_refusals_are_recorded_as_they_came() {
        let mut draft = Draft::default();
        draft.mark(Mark::Created);
        draft.call_added("read", Some("c1".into()));
        draft.args_delta("{\"path\": \"a");
        draft.end(Ending::Completed);
        let recorded = draft.finish(Dialect::ChatCompletions, BodyEnd::Finished, Duration::ZERO, timing::MIN_GAP);
        let call = &recorded.response.calls[0];
        assert_eq!((call.raw_args.as_deref(), &call.args), (Some("{\"path\": \"a"), &Value::Null));
        assert!(recorded.notes.is_empty(), "{:?}", recorded.notes);

        let mut draft = Draft::default();
        draft.mark(Mark::Created);
        draft.message_added();
        draft.refusal_delta("No.");
        draft.end(Ending::Completed);
        let recorded = draft.finish(Dialect::Responses, BodyEnd::Finished, Duration::ZERO, timing::MIN_GAP);
        assert_eq!(
            (recorded.response.refusal.as_slice(), recorded.response.text.as_slice()),
            (&["No.".to_owned()][..], &[][..])
        );
    }

    #[test]
    fn silent_beats_after_the_last_frame_are_no_cut() {
        let mut draft = Draft::default();
        draft.mark(Mark::Created);
        draft.text_delta("Half");
        let recorded = draft.finish(Dialect::ChatCompletions, BodyEnd::Dropped, Duration::ZERO, timing::MIN_GAP);
        assert_eq!((recorded.response.cut_after, recorded.response.then), (None, Ending::Disconnect));
    }

    /// Text after a call (Anthropic may interleave blocks) moves into the message, and the
    /// call, seen whole, still ends the stream: no cut drops it.
    #[test]
    fn the_furthest_beat_seen_decides_the_cut() {
        let mut draft = Draft::default();
        draft.mark(Mark::Created);
        draft.message_added();
        draft.text_delta("Looking");
        draft.mark(Mark::MessageDone);
        draft.call_added("read", Some("toolu_1".into()));
        draft.args_delta("{\"path\":\"a\"}");
        draft.call_done(None);
        draft.message_added();
        draft.text_delta(" more");
        let recorded = draft.finish(Dialect::AnthropicMessages, BodyEnd::Dropped, Duration::ZERO, timing::MIN_GAP);
        assert_eq!(recorded.response.text, ["Looking", " more"]);
        assert_eq!(recorded.response.calls[0].args, serde_json::json!({ "path": "a" }));
        assert_eq!((recorded.response.cut_after, recorded.response.then), (None, Ending::Disconnect));
        assert_eq!(recorded.notes.len(), 1, "{:?}", recorded.notes);
    }
}
