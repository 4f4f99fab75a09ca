//! Beats: where in the Responses frame sequence each piece of a scripted answer becomes
//! known, so `cut_after` and `pause.after` mean the same point of the answer in every dialect.
//!
//! A scenario counts `cut_after` and `pause.after` in Responses frames (`response.created` is
//! frame 0; see `dialect::responses` and [`Response::visible_text`]). Another dialect frames the
//! same answer differently, so each of its frames carries the beat (Responses frame index) at
//! which the information it carries was sent there: a dialect frame is sent before a cut at `N`
//! exactly when its beat is below `N`, and a pause at `after = N` comes before the first frame
//! whose beat is `N` or more. The text a client saw before a cut or a stall is then the same
//! in every dialect, which is what makes the Log the same.

use std::time::Duration;

use bytes::Bytes;

use super::Step;
use crate::script::Response;

/// The beats of one output item in the Responses stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemBeats {
    /// `response.output_item.added`.
    pub added: usize,
    /// One beat per delta (summary chunk, text chunk, argument fragment), in order.
    pub deltas: Vec<usize>,
    /// `response.output_item.done`: the item is complete.
    pub done: usize,
}

/// The beats of a whole scripted answer: `response.created` is 0, `response.in_progress` 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beats {
    /// One per reasoning item.
    pub reasoning: Vec<ItemBeats>,
    /// The assistant message, when the answer has text.
    pub message: Option<ItemBeats>,
    /// One per function call.
    pub calls: Vec<ItemBeats>,
    /// The number of content frames: the beat a terminal frame has.
    pub end: usize,
}

/// The beat of `response.created`.
pub const CREATED: usize = 0;
/// The beat of `response.in_progress`.
pub const IN_PROGRESS: usize = 1;

impl Beats {
    /// The beats of `response`'s Responses stream: a reasoning item and the message are
    /// added, part added, deltas, text done, part done, item done; a call is added, one or two
    /// argument fragments, arguments done, item done.
    pub fn of(response: &Response) -> Beats {
        let mut next = IN_PROGRESS + 1;
        let mut item = |n_deltas: usize, n_before: usize, n_after: usize| {
            let added = next;
            let first_delta = added + 1 + n_before;
            let deltas = (first_delta..first_delta + n_deltas).collect();
            let done = first_delta + n_deltas + n_after;
            next = done + 1;
            ItemBeats { added, deltas, done }
        };
        let reasoning = response.reasoning.iter().map(|r| item(r.summary.len(), 1, 2)).collect();
        let message = (!response.text.is_empty()).then(|| item(response.text.len(), 1, 2));
        let calls =
            response.calls.iter().map(|call| item(argument_fragments(&call.args.to_string()).len(), 0, 1)).collect();
        Beats { reasoning, message, calls, end: next }
    }
}

/// A call's compact JSON arguments in the fragments the Responses stream sends: two halves at
/// a char boundary near the middle, or one piece when shorter than 2 chars.
pub fn argument_fragments(arguments: &str) -> Vec<&str> {
    let n_chars = arguments.chars().count();
    if n_chars < 2 {
        return vec![arguments];
    }
    let mid = arguments.char_indices().nth(n_chars / 2).map_or(arguments.len(), |(idx, _)| idx);
    vec![&arguments[..mid], &arguments[mid..]]
}

/// One frame of a dialect's stream with the beat at which its content is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The Responses frame index this frame corresponds to.
    pub beat: usize,
    /// The bytes on the wire.
    pub bytes: Bytes,
}

/// How a dialect's body ends after its content frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
    /// These frames (a terminal event, or nothing for a body that just ends).
    Frames(Vec<Bytes>),
    /// One frame that is not valid for the dialect, then the body ends.
    Malformed(Bytes),
    /// The connection drops.
    Abort,
}

/// The steps of a body: the content frames before the cut, then the tail, with the pause
/// placed by beat (see the module doc). `end` is [`Beats::end`]: the tail's beat is where the
/// Responses terminal would be, so a pause past the last frame stalls after the tail exactly
/// when the Responses stream would stall after its terminal event.
pub fn assemble(response: &Response, end: usize, frames: Vec<Frame>, tail: Tail) -> Vec<Step> {
    let cut = response.cut_after.unwrap_or(usize::MAX);
    let tail_beat = cut.min(end);
    let mut steps: Vec<Step> = Vec::with_capacity(frames.len() + 3);
    let mut pause = response.pause;
    let mut pause_before = |steps: &mut Vec<Step>, beat: usize| {
        if let Some(due) = pause
            && beat >= due.after
        {
            pause = None;
            steps.push(Step::Pause(Duration::from_millis(due.ms)));
        }
    };
    for frame in frames.into_iter().filter(|frame| frame.beat < cut) {
        pause_before(&mut steps, frame.beat);
        steps.push(Step::Bytes(frame.bytes));
    }
    match tail {
        Tail::Frames(frames) => {
            for frame in frames {
                pause_before(&mut steps, tail_beat);
                steps.push(Step::Bytes(frame));
            }
            pause_before(&mut steps, usize::MAX);
        }
        Tail::Malformed(frame) => {
            pause_before(&mut steps, tail_beat);
            steps.push(Step::Bytes(frame));
            pause_before(&mut steps, usize::MAX);
        }
        Tail::Abort => {
            pause_before(&mut steps, usize::MAX);
            steps.push(Step::Abort);
        }
    }
    steps
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::dialect::{EncodeContext, responses};
    use crate::script::{Call, Ending, Pause, Reasoning};

    fn sample() -> Response {
        Response {
            reasoning: vec![Reasoning { summary: vec!["a".into(), "b".into()], encrypted: None }],
            text: vec!["Hel".into(), "lo".into()],
            calls: vec![Call { name: "read".into(), args: json!({"path": "x"}), call_id: None }],
            ..Response::default()
        }
    }

    /// The beats name the Responses encoder's own frames: a check that the two agree.
    #[test]
    fn beats_are_the_responses_frame_indices() {
        let response = sample();
        let ctx = EncodeContext { response_id: "r".into(), model: "m".into(), item_base: 1 };
        let kinds: Vec<String> = responses::encode(&response, &ctx)
            .iter()
            .filter_map(|step| match step {
                Step::Bytes(bytes) => std::str::from_utf8(bytes).ok()?.lines().next().map(str::to_owned),
                _ => None,
            })
            .collect();
        let beats = Beats::of(&response);
        let kind = |beat: usize| kinds[beat].trim_start_matches("event: response.").to_owned();
        assert_eq!(kind(beats.reasoning[0].added), "output_item.added");
        assert!(beats.reasoning[0].deltas.iter().all(|&beat| kind(beat) == "reasoning_summary_text.delta"));
        assert_eq!(kind(beats.reasoning[0].done), "output_item.done");
        let message = beats.message.unwrap();
        assert_eq!(message.deltas.iter().map(|&beat| kind(beat)).collect::<Vec<_>>(), ["output_text.delta"; 2]);
        assert_eq!(kind(message.done), "output_item.done");
        assert!(beats.calls[0].deltas.iter().all(|&beat| kind(beat) == "function_call_arguments.delta"));
        assert_eq!(kind(beats.calls[0].done), "output_item.done");
        assert_eq!(kind(beats.end), "completed");
        assert_eq!(beats.end, kinds.len() - 1);
    }

    #[test]
    fn cut_and_pause_follow_beats() {
        let frame = |beat: usize| Frame { beat, bytes: Bytes::from(format!("{beat};")) };
        let response = Response {
            cut_after: Some(4),
            pause: Some(Pause { after: 2, ms: 5 }),
            then: Ending::Eof,
            ..Response::default()
        };
        let steps = assemble(&response, 9, vec![frame(0), frame(2), frame(2), frame(3), frame(4)], Tail::Abort);
        let shown: Vec<String> = steps
            .iter()
            .map(|step| match step {
                Step::Bytes(bytes) => String::from_utf8(bytes.to_vec()).unwrap(),
                Step::Pause(duration) => format!("pause {}", duration.as_millis()),
                Step::Abort => "abort".to_owned(),
            })
            .collect();
        assert_eq!(shown, ["0;", "pause 5", "2;", "2;", "3;", "abort"]);
        let end = || Tail::Frames(vec![Bytes::from_static(b"end")]);
        let before_terminal = Response { pause: Some(Pause { after: 1, ms: 1 }), ..Response::default() };
        let steps = assemble(&before_terminal, 1, vec![frame(0)], end());
        assert!(matches!(steps[..], [Step::Bytes(_), Step::Pause(_), Step::Bytes(_)]));
        let after_terminal = Response { pause: Some(Pause { after: 99, ms: 1 }), ..Response::default() };
        let steps = assemble(&after_terminal, 1, vec![frame(0)], end());
        assert!(matches!(steps[..], [Step::Bytes(_), Step::Bytes(_), Step::Pause(_)]));
    }
}
