//! The `type` of a Log line, typed: one of the contract's Event types, or another
//! implementation's own, kept as written. Every rule compares with [`EventType`], never with a
//! string, so a misspelt type does not compile instead of silently matching nothing (a lint in
//! `harness/tests/lints.rs` holds the judge to it).

use std::fmt;

use gauntlet_agent::EventType;

/// A Log line's `type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// One of the contract's Event types.
    Known(EventType),
    /// Another implementation's own type, as its Log wrote it.
    Other(String),
}

impl EventKind {
    /// The kind named `name`.
    pub fn parse(name: &str) -> EventKind {
        EventType::parse(name).map_or_else(|| EventKind::Other(name.to_owned()), EventKind::Known)
    }

    /// The contract's type, when it is one.
    pub fn known(&self) -> Option<EventType> {
        match self {
            EventKind::Known(kind) => Some(*kind),
            EventKind::Other(_) => None,
        }
    }

    /// The name as the Log wrote it.
    pub fn as_str(&self) -> &str {
        match self {
            EventKind::Known(kind) => kind.as_str(),
            EventKind::Other(name) => name,
        }
    }
}

impl PartialEq<EventType> for EventKind {
    fn eq(&self, other: &EventType) -> bool {
        self.known() == Some(*other)
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_type_parses_as_itself_and_another_is_kept() {
        assert_eq!(EventKind::parse("turn_failed"), EventType::TurnFailed);
        assert_eq!(EventKind::parse("turn_failed").as_str(), "turn_failed");
        let own = EventKind::parse("agent_thought");
        assert_eq!(own, EventKind::Other("agent_thought".to_owned()));
        assert_eq!(own.known(), None);
        assert_eq!(own.to_string(), "agent_thought");
    }
}
