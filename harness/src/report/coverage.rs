//! A report read against today's corpus. The corpus grows offline (a scenario written, blessed
//! and accepted) while an agent's report comes only from running that agent, so a scenario a
//! report never played is *not checked yet*: shown, never a failure. A report that lists a
//! scenario the corpus does not have (removed, renamed), or lists its scenarios out of corpus
//! order, is out of date.

use gauntlet_judge::lifecycle::Family;

/// A report's scenarios against the corpus's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coverage {
    /// Scenarios of the corpus the report does not list: added since it was made.
    pub not_checked_yet: Vec<String>,
    /// Scenarios the report lists that the corpus does not have.
    pub not_in_corpus: Vec<String>,
    /// Whether the scenarios both have are listed in corpus order, each once.
    pub in_order: bool,
}

impl Coverage {
    /// `listed` (a report's scenarios, in its order) against `corpus` (the scenarios its check
    /// plays today, in corpus order).
    pub fn of(listed: &[String], corpus: &[String]) -> Coverage {
        let not_checked_yet = corpus.iter().filter(|name| !listed.contains(name)).cloned().collect();
        let not_in_corpus = listed.iter().filter(|name| !corpus.contains(name)).cloned().collect();
        let both: Vec<&String> = listed.iter().filter(|name| corpus.contains(name)).collect();
        let in_order = both.iter().copied().eq(corpus.iter().filter(|name| listed.contains(name)));
        Coverage { not_checked_yet, not_in_corpus, in_order }
    }

    /// Whether the report is up to date, but for scenarios not checked yet.
    pub fn holds(&self) -> bool {
        self.not_in_corpus.is_empty() && self.in_order
    }
}

/// The lifecycle family a report's scenarios are of (an adapter's check); `None` for an
/// agent's, whose are Turn scenarios.
pub fn family_of(listed: &[String]) -> Option<Family> {
    Family::ALL.into_iter().find(|family| listed.iter().any(|name| name.starts_with(&format!("{}/", family.as_str()))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    /// A scenario added since the report is not checked yet, and the report still holds; one
    /// removed or renamed, or a list out of order or listing one twice, does not.
    #[test]
    fn a_scenario_added_since_is_not_checked_yet_and_one_removed_is_out_of_date() {
        let corpus = names(&["acp/a", "turn/b", "turn/new"]);
        let grown = Coverage::of(&names(&["acp/a", "turn/b"]), &corpus);
        assert_eq!(grown.not_checked_yet, ["turn/new"]);
        assert!(grown.holds());
        let removed = Coverage::of(&names(&["acp/a", "turn/gone", "turn/b"]), &corpus);
        assert_eq!((removed.not_in_corpus.as_slice(), removed.holds()), (["turn/gone".to_owned()].as_slice(), false));
        assert!(!Coverage::of(&names(&["turn/b", "acp/a"]), &corpus).holds());
        assert!(!Coverage::of(&names(&["acp/a", "acp/a", "turn/b"]), &corpus).holds());
        assert!(Coverage::of(&corpus, &corpus).holds() && Coverage::of(&corpus, &corpus).not_checked_yet.is_empty());
    }

    #[test]
    fn a_report_of_lifecycle_scenarios_is_of_their_family() {
        assert_eq!(family_of(&names(&["monitor/a"])), Some(Family::Monitor));
        assert_eq!(family_of(&names(&["turn/a"])), None);
    }
}
