//! What a report is a part of: the implementation's version, the shard of the run, and
//! fingerprints of the corpus and of the profile and expectations it was played with.
//! `gauntlet merge` puts reports together only when they are every shard of one run, each once
//! (issue 40): a shard that never wrote its report, or one of another run, fails the merge
//! instead of passing for a smaller run.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::run::Shard;

/// A SHA-256, in hex, of what a run was played from: equal on every machine that played the
/// same thing, and cheap to compare.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct Fingerprint(String);

impl Fingerprint {
    /// The fingerprint of `parts`, in order; each is length-prefixed, so no two lists of parts
    /// give the same bytes.
    pub fn of<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> Fingerprint {
        let mut hasher = Sha256::new();
        for part in parts {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        Fingerprint(hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect())
    }

    /// The fingerprint of corpus scenarios, each `(name, path)`: its name, its file and every
    /// golden file under `golden/<name>/` of `root` (pending `.new` files aside), so two
    /// machines agree only when they play the same scenarios against the same goldens.
    pub fn of_scenarios<'a>(root: &Path, scenarios: impl IntoIterator<Item = (&'a str, &'a Path)>) -> Fingerprint {
        let mut parts: Vec<Vec<u8>> = Vec::new();
        for (name, path) in scenarios {
            parts.push(name.as_bytes().to_vec());
            parts.push(std::fs::read(path).unwrap_or_default());
            let base = root.join("golden").join(name);
            let mut goldens: Vec<PathBuf> = Vec::new();
            crate::golden::walk(&base, &mut |file| {
                if file.extension().is_none_or(|ext| ext != "new") {
                    goldens.push(file.to_owned());
                }
            });
            goldens.sort();
            for file in goldens {
                let relative = file.strip_prefix(&base).unwrap_or(&file).to_string_lossy().replace('\\', "/");
                parts.push(relative.into_bytes());
                parts.push(std::fs::read(&file).unwrap_or_default());
            }
        }
        Fingerprint::of(parts.iter().map(Vec::as_slice))
    }
}

/// Where a report comes from; `report.json` and `campaign.json` carry it at their top level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Origin {
    /// What the implementation's version probe printed.
    pub version: Option<String>,
    /// `K/N` for one shard of a run split across machines; null for a whole run.
    pub shard: Option<Shard>,
    /// The scenarios the whole run selected (every shard's) and their goldens; for a campaign,
    /// its generated scenarios.
    pub corpus_sha256: Fingerprint,
    /// The profile (an adapter's command and family) and the expectations it was judged by.
    pub profile_sha256: Fingerprint,
}

/// Why reports are not every shard of one run, each once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotOneRun {
    /// No report was given.
    #[error("no report to merge")]
    Empty,
    /// A whole run among others: it holds every scenario already.
    #[error("a whole run (no --shard) is among the reports: merge the shards of one run")]
    Whole,
    /// Shards of two splits (`1/2` and `3/4`).
    #[error("shard {0} and shard {1} are of different splits: every shard of one run has the same N")]
    Split(Shard, Shard),
    /// The same shard twice.
    #[error("shard {0} is given twice")]
    Twice(Shard),
    /// Shards no report holds: the run is not whole without them.
    #[error("{} of {count} {} missing", missing_list(indices), if indices.len() == 1 { "is" } else { "are" })]
    Missing {
        /// The K of each missing shard.
        indices: Vec<usize>,
        /// N.
        count: usize,
    },
    /// Another corpus, other goldens or other filters.
    #[error("{0} and {1} played different corpora (other scenarios, goldens or filters)")]
    Corpus(String, String),
    /// Another profile or expectations file.
    #[error("{0} and {1} were played with different profiles or expectations")]
    Profile(String, String),
    /// Another version of the implementation.
    #[error("{0} and {1} played different versions of the implementation: {2} and {3}")]
    Version(String, String, String, String),
}

/// `shard 2` or `shards 2, 3 and 4`.
fn missing_list(indices: &[usize]) -> String {
    let names: Vec<String> = indices.iter().map(usize::to_string).collect();
    match names.split_last() {
        Some((last, [])) => format!("shard {last}"),
        Some((last, rest)) => format!("shards {} and {last}", rest.join(", ")),
        None => "no shard".to_owned(),
    }
}

impl Origin {
    /// How a report names itself in an error: `shard K/N`, or `the whole run`.
    fn label(&self) -> String {
        self.shard.map_or_else(|| "the whole run".to_owned(), |shard| format!("shard {shard}"))
    }

    /// The origin of the run `reports` make up when they are every shard of one run, each once
    /// (or one whole run alone): the same corpus, profile, expectations and version, and every
    /// shard K of one N. The merged run is whole.
    pub fn merged<'a>(reports: impl IntoIterator<Item = &'a Origin>) -> Result<Origin, NotOneRun> {
        let reports: Vec<&Origin> = reports.into_iter().collect();
        let first = *reports.first().ok_or(NotOneRun::Empty)?;
        reports[1..].iter().try_for_each(|other| first.played_as(other))?;
        if let [whole] = reports[..]
            && whole.shard.is_none()
        {
            return Ok(whole.clone());
        }
        let shards = reports.iter().map(|report| report.shard.ok_or(NotOneRun::Whole)).collect::<Result<_, _>>()?;
        every_shard_once(shards)?;
        Ok(Origin { shard: None, ..first.clone() })
    }

    /// `Err` when `other` was not played as this was: another corpus, profile or version.
    fn played_as(&self, other: &Origin) -> Result<(), NotOneRun> {
        let (a, b) = (self.label(), other.label());
        if other.corpus_sha256 != self.corpus_sha256 {
            return Err(NotOneRun::Corpus(a, b));
        }
        if other.profile_sha256 != self.profile_sha256 {
            return Err(NotOneRun::Profile(a, b));
        }
        if other.version != self.version {
            let shown = |version: &Option<String>| version.clone().unwrap_or_else(|| "(none)".to_owned());
            return Err(NotOneRun::Version(a, b, shown(&self.version), shown(&other.version)));
        }
        Ok(())
    }
}

/// `Err` unless `shards` are every shard of one split, each once.
fn every_shard_once(mut shards: Vec<Shard>) -> Result<(), NotOneRun> {
    shards.sort();
    let Some(&first) = shards.first() else { return Err(NotOneRun::Empty) };
    if let Some(other) = shards.iter().find(|shard| shard.count != first.count) {
        return Err(NotOneRun::Split(first, *other));
    }
    if let Some(pair) = shards.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(NotOneRun::Twice(pair[0]));
    }
    let indices: Vec<usize> =
        (1..=first.count).filter(|index| !shards.iter().any(|shard| shard.index == *index)).collect();
    if indices.is_empty() { Ok(()) } else { Err(NotOneRun::Missing { indices, count: first.count }) }
}

/// A whole run of `version`, from nothing, for the reports' tests.
#[cfg(test)]
impl Origin {
    pub(crate) fn whole(version: Option<&str>) -> Origin {
        let nothing = Fingerprint::of([]);
        Origin {
            version: version.map(str::to_owned),
            shard: None,
            corpus_sha256: nothing.clone(),
            profile_sha256: nothing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(text: &str) -> Origin {
        Origin {
            version: Some("1.0".to_owned()),
            shard: Some(text.parse().unwrap()),
            corpus_sha256: Fingerprint::of([b"corpus".as_slice()]),
            profile_sha256: Fingerprint::of([b"profile".as_slice()]),
        }
    }

    fn merged(texts: &[&str]) -> Result<Origin, String> {
        let origins: Vec<Origin> = texts.iter().map(|text| shard(text)).collect();
        Origin::merged(&origins).map_err(|error| error.to_string())
    }

    /// Every shard once merges into a whole run; a missing, doubled or foreign shard is named.
    #[test]
    fn only_every_shard_of_one_split_once_merges() {
        assert_eq!(merged(&["2/2", "1/2"]).map(|origin| origin.shard), Ok(None));
        assert_eq!(merged(&["1/2"]).unwrap_err(), "shard 2 of 2 is missing");
        assert_eq!(merged(&["2/4"]).unwrap_err(), "shards 1, 3 and 4 of 4 are missing");
        assert_eq!(merged(&["1/2", "1/2", "2/2"]).unwrap_err(), "shard 1/2 is given twice");
        assert_eq!(
            merged(&["1/2", "2/3"]).unwrap_err(),
            "shard 1/2 and shard 2/3 are of different splits: every shard of one run has the same N"
        );
        let whole = Origin { shard: None, ..shard("1/1") };
        assert_eq!(Origin::merged([&whole]), Ok(whole.clone()));
        assert_eq!(Origin::merged([&whole, &shard("1/2")]), Err(NotOneRun::Whole));
        assert_eq!(Origin::merged([]), Err(NotOneRun::Empty));
    }

    /// Shards of another corpus, profile or version are not one run.
    #[test]
    fn shards_of_another_corpus_profile_or_version_do_not_merge() {
        let first = shard("1/2");
        let corpus = Origin { corpus_sha256: Fingerprint::of([b"other".as_slice()]), ..shard("2/2") };
        let profile = Origin { profile_sha256: Fingerprint::of([b"other".as_slice()]), ..shard("2/2") };
        let version = Origin { version: Some("1.1".to_owned()), ..shard("2/2") };
        let error = |other: &Origin| Origin::merged([&first, other]).unwrap_err().to_string();
        assert_eq!(
            error(&corpus),
            "shard 1/2 and shard 2/2 played different corpora (other scenarios, goldens or filters)"
        );
        assert_eq!(error(&profile), "shard 1/2 and shard 2/2 were played with different profiles or expectations");
        assert_eq!(
            error(&version),
            "shard 1/2 and shard 2/2 played different versions of the implementation: 1.0 and 1.1"
        );
    }

    /// Parts never run together: `["ab", "c"]` and `["a", "bc"]` differ.
    #[test]
    fn a_fingerprint_keeps_its_parts_apart() {
        assert_ne!(Fingerprint::of([b"ab".as_slice(), b"c"]), Fingerprint::of([b"a".as_slice(), b"bc"]));
        assert_eq!(Fingerprint::of([b"x".as_slice()]).0.len(), 64);
    }
}
