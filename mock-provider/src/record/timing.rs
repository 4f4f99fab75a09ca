//! A recording's timing: when each chunk of an answer arrived ([`Arrivals`]), and the pauses
//! that replay it ([`pauses`]). Each beat of the rebuilt response (and its ending) is given the
//! time the frame that brought it arrived (`record/draft.rs`); a wait of at least the minimum
//! gap before one becomes a `pause` before that beat: the first-token time (a pause after 0
//! beats), a stall mid-stream, a wait before the terminal event, an error or the end of the
//! body. Shorter waits are the network's jitter, not the model's behaviour, and replay as none;
//! the ones kept are rounded to [`ROUND_MS`].

use std::time::Duration;

use crate::script::Pause;

/// The shortest wait a recording keeps as a pause by default, in milliseconds
/// (`mock-provider record --min-gap-ms`).
pub const MIN_GAP_MS: u64 = 50;

/// [`MIN_GAP_MS`] as a duration.
pub const MIN_GAP: Duration = Duration::from_millis(MIN_GAP_MS);

/// Recorded pauses are rounded to this many milliseconds.
pub const ROUND_MS: u64 = 10;

/// When the bytes of one answer body arrived, as time since its request left for the upstream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Arrivals {
    /// Each chunk as it came: the body's length with it, and when it came.
    chunks: Vec<(usize, Duration)>,
    /// When the body ended (finished, dropped, or closed by the agent).
    end: Option<Duration>,
}

impl Arrivals {
    /// A chunk of `len` bytes arrived `at`.
    pub fn chunk(&mut self, len: usize, at: Duration) {
        let total = self.chunks.last().map_or(0, |&(total, _)| total) + len;
        self.chunks.push((total, at));
    }

    /// The body ended `at`; only its first end counts.
    pub fn end(&mut self, at: Duration) {
        self.end.get_or_insert(at);
    }

    /// When the body's first `length` bytes had all arrived (the last chunk's time past the
    /// end of what came).
    pub fn at(&self, length: usize) -> Duration {
        let index = self.chunks.partition_point(|&(total, _)| total < length);
        self.chunks.get(index).or(self.chunks.last()).map_or(Duration::ZERO, |&(_, at)| at)
    }

    /// When the body ended; when it had not (still streaming as the recording stopped), when
    /// its last chunk arrived.
    pub fn ended(&self) -> Duration {
        self.end.or(self.chunks.last().map(|&(_, at)| at)).unwrap_or_default()
    }
}

/// The pauses that replay units (beats, then the ending) arriving at `times` (since the request
/// left): a wait of at least `min_gap` before unit `i` becomes `{ after = i, ms }`, rounded to
/// [`ROUND_MS`]; shorter ones are left out.
pub fn pauses(times: &[Duration], min_gap: Duration) -> Vec<Pause> {
    let mut previous = Duration::ZERO;
    let mut pauses = Vec::new();
    for (after, &at) in times.iter().enumerate() {
        let gap = at.saturating_sub(previous);
        previous = previous.max(at);
        let ms = round(gap);
        if gap >= min_gap && ms > 0 {
            pauses.push(Pause { after, ms });
        }
    }
    pauses
}

/// `gap` in whole milliseconds, rounded to the nearest [`ROUND_MS`].
fn round(gap: Duration) -> u64 {
    let ms = u64::try_from(gap.as_millis()).unwrap_or(u64::MAX);
    ms.saturating_add(ROUND_MS / 2) / ROUND_MS * ROUND_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[test]
    fn a_byte_arrived_with_its_chunk() {
        let mut arrivals = Arrivals::default();
        assert_eq!((arrivals.at(1), arrivals.ended()), (Duration::ZERO, Duration::ZERO));
        arrivals.chunk(10, ms(5));
        arrivals.chunk(4, ms(900));
        assert_eq!(
            [arrivals.at(1), arrivals.at(10), arrivals.at(11), arrivals.at(14)],
            [ms(5), ms(5), ms(900), ms(900)]
        );
        assert_eq!((arrivals.at(99), arrivals.ended()), (ms(900), ms(900)), "past the end, and no end yet");
        arrivals.end(ms(1200));
        arrivals.end(ms(5000));
        assert_eq!(arrivals.ended(), ms(1200));
    }

    /// The first-token time, a stall and a wait before the ending are kept, rounded; jitter
    /// under the minimum gap is not, and never counts twice.
    #[test]
    fn gaps_from_the_minimum_up_become_pauses() {
        let times = [ms(812), ms(815), ms(861), ms(3_466), ms(3_470), ms(3_470), ms(4_100)];
        assert_eq!(
            pauses(&times, MIN_GAP),
            [Pause { after: 0, ms: 810 }, Pause { after: 3, ms: 2_610 }, Pause { after: 6, ms: 630 }]
        );
        assert_eq!(pauses(&times, ms(700)), [Pause { after: 0, ms: 810 }, Pause { after: 3, ms: 2_610 }]);
        assert_eq!(pauses(&[ms(3), ms(4)], Duration::ZERO), [], "nothing rounds to 0 ms");
        assert_eq!(pauses(&[ms(50)], MIN_GAP), [Pause { after: 0, ms: 50 }], "the minimum itself is kept");
        assert_eq!(pauses(&[ms(49)], MIN_GAP), []);
    }
}
