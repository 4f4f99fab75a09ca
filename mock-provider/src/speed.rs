//! `mock-provider serve --speed`: how fast a served script's pauses pass on the real clock. A
//! factor divides every pause (2 is twice as fast, 0.5 half as fast, 1 real time), `max` (or
//! 0) leaves none. Only the script's waits scale: `retry-after` is the Provider's word to the
//! client, sent as written, and the mock's own short wait before a scripted drop is kept.
//!
//! Scenarios played by the harness need none of this: they run on tokio's paused clock, where
//! any pause costs nothing.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::dialect::Step;

/// How fast pauses pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    /// Each pause lasts its length divided by this factor (finite, above 0).
    Factor(f64),
    /// No pause waits at all.
    Max,
}

impl Default for Speed {
    /// Real time.
    fn default() -> Speed {
        Speed::Factor(1.0)
    }
}

impl Speed {
    /// How long `pause` lasts at this speed. A factor so small that the wait would pass
    /// `Duration::MAX` waits that long instead.
    pub fn scale(self, pause: Duration) -> Duration {
        match self {
            Speed::Max => Duration::ZERO,
            Speed::Factor(factor) => Duration::try_from_secs_f64(pause.as_secs_f64() / factor).unwrap_or(Duration::MAX),
        }
    }

    /// `steps` with each pause scaled; a pause that scales to nothing is left out.
    pub fn apply(self, steps: Vec<Step>) -> Vec<Step> {
        if self == Speed::default() {
            return steps;
        }
        steps
            .into_iter()
            .filter_map(|step| match step {
                Step::Pause(pause) => Some(self.scale(pause)).filter(|pause| !pause.is_zero()).map(Step::Pause),
                step => Some(step),
            })
            .collect()
    }
}

impl fmt::Display for Speed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Speed::Factor(factor) => write!(f, "{factor}"),
            Speed::Max => f.write_str("max"),
        }
    }
}

/// A `--speed` value that is no speed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{given}` is not a speed: {problem}; give a factor (2 = twice as fast, 0.5 = half as fast, 1 = real time) or `max` (no waits; 0 means the same)"
)]
pub struct BadSpeed {
    /// The value given.
    pub given: String,
    /// What is wrong with it.
    pub problem: &'static str,
}

impl FromStr for Speed {
    type Err = BadSpeed;

    fn from_str(text: &str) -> Result<Speed, BadSpeed> {
        let bad = |problem| BadSpeed { given: text.to_owned(), problem };
        let trimmed = text.trim();
        if trimmed.eq_ignore_ascii_case("max") {
            return Ok(Speed::Max);
        }
        let factor: f64 = trimmed.parse().map_err(|_| bad("not a number"))?;
        if !factor.is_finite() {
            return Err(bad("not a finite number"));
        }
        if factor < 0.0 {
            return Err(bad("a speed cannot be negative"));
        }
        Ok(if factor == 0.0 { Speed::Max } else { Speed::Factor(factor) })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[test]
    fn a_factor_divides_each_pause_and_max_leaves_none() {
        let second = Duration::from_secs(1);
        assert_eq!(Speed::default().scale(second), second);
        assert_eq!(Speed::Factor(2.0).scale(second), Duration::from_millis(500));
        assert_eq!(Speed::Factor(0.5).scale(second), Duration::from_secs(2));
        assert_eq!(Speed::Factor(3.0).scale(Duration::from_millis(900)), Duration::from_millis(300));
        assert_eq!(Speed::Max.scale(second), Duration::ZERO);
        assert_eq!(Speed::Factor(1e-300).scale(second), Duration::MAX, "saturates instead of panicking");

        let bytes = |text: &'static str| Step::Bytes(Bytes::from_static(text.as_bytes()));
        let steps =
            vec![Step::Pause(second), bytes("a"), Step::Pause(Duration::from_millis(300)), bytes("b"), Step::Abort];
        assert_eq!(Speed::default().apply(steps.clone()), steps);
        assert_eq!(
            Speed::Factor(4.0).apply(steps.clone()),
            [
                Step::Pause(Duration::from_millis(250)),
                bytes("a"),
                Step::Pause(Duration::from_millis(75)),
                bytes("b"),
                Step::Abort
            ]
        );
        assert_eq!(Speed::Max.apply(steps), [bytes("a"), bytes("b"), Step::Abort]);
    }

    #[test]
    fn speeds_parse_and_bad_ones_say_what_to_give() {
        assert_eq!("2".parse::<Speed>().unwrap(), Speed::Factor(2.0));
        assert_eq!("0.25".parse::<Speed>().unwrap(), Speed::Factor(0.25));
        assert_eq!("max".parse::<Speed>().unwrap(), Speed::Max);
        assert_eq!("MAX".parse::<Speed>().unwrap(), Speed::Max);
        assert_eq!("0".parse::<Speed>().unwrap(), Speed::Max);
        for (given, problem) in [
            ("fast", "not a number"),
            ("", "not a number"),
            ("-2", "a speed cannot be negative"),
            ("inf", "not a finite number"),
            ("NaN", "not a finite number"),
        ] {
            let message = given.parse::<Speed>().unwrap_err().to_string();
            assert!(message.starts_with(&format!("`{given}` is not a speed: {problem};")), "{message}");
            assert!(message.contains("2 = twice as fast") && message.contains("`max`"), "{message}");
        }
        assert_eq!(Speed::Factor(1.5).to_string().parse::<Speed>().unwrap(), Speed::Factor(1.5));
        assert_eq!(Speed::Max.to_string(), "max");
    }
}
