//! Beats: the dialect-neutral units of a scripted response's stream, the Responses API's
//! content frames one for one. `cut_after` and each pause's `after` count beats, so a script means
//! the same cut in every dialect, and what a client could have been shown ([`Response::visible_text`])
//! is known without any wire format.

use crate::script::{Call, Pause, Reasoning, Response};

/// One unit of a response's content, in the order every dialect streams it: the Responses
/// API's content frames, one for one. In every variant `index` is the position among the
/// response's reasoning items (or calls), `reasoning` / `call` the scripted item, `delta` a chunk.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Beat<'r> {
    /// The response starts (`response.created`).
    Created,
    /// It is in progress (`response.in_progress`).
    InProgress,
    /// Reasoning item `index` starts.
    ReasoningAdded { index: usize, reasoning: &'r Reasoning },
    /// Its summary part starts.
    ReasoningPartAdded { index: usize },
    /// A summary text chunk.
    ReasoningDelta { index: usize, delta: &'r str },
    /// The summary text is done.
    ReasoningTextDone { index: usize, reasoning: &'r Reasoning },
    /// The summary part is done.
    ReasoningPartDone { index: usize, reasoning: &'r Reasoning },
    /// Reasoning item `index` is done.
    ReasoningDone { index: usize, reasoning: &'r Reasoning },
    /// The assistant message starts.
    MessageAdded,
    /// Its text part starts.
    TextPartAdded,
    /// A text chunk.
    TextDelta(&'r str),
    /// The text is done.
    TextDone,
    /// The text part is done.
    TextPartDone,
    /// The message is done.
    MessageDone,
    /// Call `index` starts.
    CallAdded { index: usize, call: &'r Call },
    /// A fragment of its JSON arguments.
    ArgsDelta { index: usize, delta: &'r str },
    /// Its arguments are done.
    ArgsDone { index: usize, call: &'r Call },
    /// Call `index` is done.
    CallDone { index: usize, call: &'r Call },
}

/// Every beat of `response`'s full stream, in order. Call arguments are compact JSON in the
/// order the script wrote them, streamed in two halves.
pub fn beats<'r>(response: &'r Response, arguments: &'r [String]) -> Vec<Beat<'r>> {
    let mut beats = vec![Beat::Created, Beat::InProgress];
    for (index, reasoning) in response.reasoning.iter().enumerate() {
        beats.extend([Beat::ReasoningAdded { index, reasoning }, Beat::ReasoningPartAdded { index }]);
        beats.extend(reasoning.summary.iter().map(|delta| Beat::ReasoningDelta { index, delta }));
        beats.extend([
            Beat::ReasoningTextDone { index, reasoning },
            Beat::ReasoningPartDone { index, reasoning },
            Beat::ReasoningDone { index, reasoning },
        ]);
    }
    // A refusal streams as the message's text: each encoder writes it in its wire's refusal shape.
    if !response.message().is_empty() {
        beats.extend([Beat::MessageAdded, Beat::TextPartAdded]);
        beats.extend(response.message().iter().map(|delta| Beat::TextDelta(delta)));
        beats.extend([Beat::TextDone, Beat::TextPartDone, Beat::MessageDone]);
    }
    for ((index, call), arguments) in response.calls.iter().enumerate().zip(arguments) {
        beats.push(Beat::CallAdded { index, call });
        beats.extend(split_in_two(arguments).into_iter().map(|delta| Beat::ArgsDelta { index, delta }));
        beats.extend([Beat::ArgsDone { index, call }, Beat::CallDone { index, call }]);
    }
    beats
}

/// Each call's arguments text: compact JSON in the order the script wrote them, or its raw text.
pub fn arguments(response: &Response) -> Vec<String> {
    response.calls.iter().map(Call::arguments).collect()
}

/// Two halves at a char boundary near the middle, or one chunk if shorter than 2 chars.
fn split_in_two(text: &str) -> Vec<&str> {
    let chars = text.chars().count();
    if chars < 2 {
        return vec![text];
    }
    let mid = text.char_indices().nth(chars / 2).map_or(text.len(), |(i, _)| i);
    vec![&text[..mid], &text[mid..]]
}

impl Response {
    /// The text deltas a client of this stream receives before any cut: what an agent could
    /// have shown its user, in every dialect (`cut_after` counts beats, see [`beats`]).
    pub fn visible_text(&self) -> String {
        self.text_of_beats(self.cut_after.unwrap_or(usize::MAX))
    }

    /// The text deltas a client receives before the stream stalls at [`Self::stall`] (all of
    /// [`Self::visible_text`] when it never stalls): what an agent that gives up on the stall
    /// (its own idle timeout) was streamed.
    pub fn text_before_pause(&self) -> String {
        let stall = self.stall().map_or(usize::MAX, |pause| pause.after);
        self.text_of_beats(self.cut_after.unwrap_or(usize::MAX).min(stall))
    }

    /// Whether call `index` streamed whole before any cut: its arguments done. A call the cut
    /// falls inside (or before) is one the model never finished.
    pub fn finishes_call(&self, index: usize) -> bool {
        let Some(cut) = self.cut_after else { return index < self.calls.len() };
        let arguments = arguments(self);
        let delivered = beats(self, &arguments).into_iter().take(cut);
        delivered.into_iter().any(|beat| matches!(beat, Beat::ArgsDone { index: done, .. } if done == index))
    }

    /// The pause a client that closes the stream mid-way is taken to have given up on: the
    /// longest (the first of equally long ones), the only one when a script writes one. A
    /// recording's short gaps and first-token time come before or after it.
    pub fn stall(&self) -> Option<Pause> {
        self.pause.iter().copied().reduce(|longest, pause| if pause.ms > longest.ms { pause } else { longest })
    }

    /// Whether it ends cleanly with nothing to show or run: no text, no call (reasoning alone,
    /// or nothing at all), as a model sometimes answers.
    pub fn is_empty_answer(&self) -> bool {
        !self.fails() && self.truncation().is_none() && self.text.concat().is_empty() && self.calls.is_empty()
    }

    /// How many beats its stream has up to the end of its message (or of its reasoning, when
    /// it has no text): where a fault after the whole text lands, counted as `cut_after` counts.
    pub fn beats_through_message(&self) -> usize {
        self.beats_through(|beat| matches!(beat, Beat::MessageDone))
    }

    /// How many beats its stream has up to its last text chunk (or the end of its reasoning,
    /// when it has no text): where a stall after the whole text goes, as `pause.after` counts.
    pub fn beats_through_text(&self) -> usize {
        self.beats_through(|beat| matches!(beat, Beat::TextDelta(_)))
    }

    /// The beats up to the last one that is `wanted`, else those before its message or calls.
    fn beats_through(&self, wanted: impl Fn(&Beat<'_>) -> bool) -> usize {
        let arguments = arguments(self);
        let beats = beats(self, &arguments);
        match beats.iter().rposition(&wanted) {
            Some(at) => at + 1,
            None => beats
                .iter()
                .position(|beat| matches!(beat, Beat::MessageAdded | Beat::CallAdded { .. }))
                .unwrap_or(beats.len()),
        }
    }

    /// The text deltas among the first `n_beats` beats; none for an HTTP error.
    fn text_of_beats(&self, n_beats: usize) -> String {
        if self.status.is_some() {
            return String::new();
        }
        let arguments = arguments(self);
        beats(self, &arguments)
            .iter()
            .take(n_beats)
            .filter_map(|beat| match beat {
                Beat::TextDelta(text) => Some(*text),
                _ => None,
            })
            .collect()
    }
}
