//! Contract coverage: every MUST of the registry ([`gauntlet_judge::contract`]) has something that
//! checks it, and every named check exists and checks that id (the `corpus/contract-coverage`
//! trial).

use std::collections::BTreeMap;
use std::path::Path;

use gauntlet_judge::contract::{Requirement, Tier};
use gauntlet_judge::judge::{invariants, lifecycle};

/// Everything wrong with the registry: MUSTs without a check, checks that do not exist,
/// scenarios covering ids the registry does not have. `covers` maps scenario names to ids.
pub fn verify(requirements: &[Requirement], covers: &BTreeMap<String, Vec<String>>, root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for requirement in requirements {
        let id = &requirement.id;
        if requirement.tier == Tier::Must && requirement.checked_by.is_empty() {
            problems.push(format!("{id} is a MUST with no check"));
        }
        for check in &requirement.checked_by {
            let found = match check.split_once(':') {
                Some(("invariant", name)) => {
                    invariants::ALL.iter().any(|invariant| {
                        invariant.name == name && (invariant.id == id || invariant.also.contains(&id.as_str()))
                    }) || lifecycle::ALL.iter().any(|invariant| invariant.name == name && invariant.id == id)
                }
                Some(("scenario", name)) => covers.get(name).is_some_and(|ids| ids.contains(id)),
                Some(("test", path)) => root.join(path).is_file(),
                _ => false,
            };
            if !found {
                problems.push(format!("{id}: `{check}` does not exist or does not check {id}"));
            }
        }
    }
    for (scenario, ids) in covers {
        for id in ids {
            if !requirements.iter().any(|requirement| &requirement.id == id) {
                problems.push(format!("scenario {scenario} covers {id}, which docs/contract.md does not define"));
            }
        }
    }
    let every_invariant = invariants::ALL
        .iter()
        .map(|invariant| (invariant.name, invariant.id))
        .chain(lifecycle::ALL.iter().map(|invariant| (invariant.name, invariant.id)));
    for (name, id) in every_invariant {
        if !requirements.iter().any(|requirement| requirement.id == id) {
            problems.push(format!("invariant {name} checks {id}, which docs/contract.md does not define"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_judge::contract::parse;

    #[test]
    fn a_must_without_a_check_is_reported() {
        let text = "| id | tier | text | source | checked by |\n|---|---|---|---|---|\n| X-ONE | MUST | t | s | |\n";
        let requirements = parse(text).unwrap();
        assert_eq!(verify(&requirements[..1], &BTreeMap::new(), Path::new("."))[0], "X-ONE is a MUST with no check");
    }
}
