//! Where a value sits in a TOML file: byte spans from toml's own parser, so a loader can name
//! the line of a value it refuses after deserializing (a response's `status`, a `covers` id,
//! a profile mask) and look for placeholders in string values only, never in comments; and the
//! diagnostics every strict TOML file of the corpus loads with ([`parse_toml`], [`LoadError`]
//! naming file, line, column and key), for scenarios, profiles and expectations alike.

use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};

/// One step of a path into a TOML document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// A key of a table.
    Key(&'a str),
    /// An index of an array (an array of tables included).
    Index(usize),
}

/// The byte span of the value at `path` in `text`, if the text parses and the value is there.
pub fn span(text: &str, path: &[Step<'_>]) -> Option<Range<usize>> {
    let document = DeTable::parse(text).ok()?;
    let mut span = document.span();
    let mut value: Option<&DeValue<'_>> = None;
    let mut table = Some(document.get_ref());
    for step in path {
        let next = match (step, table, value) {
            (Step::Key(key), Some(table), _) => {
                table.iter().find(|(name, _)| name.get_ref() == key).map(|(_, value)| value)?
            }
            (Step::Index(index), _, Some(DeValue::Array(items))) => items.get(*index)?,
            _ => return None,
        };
        span = next.span();
        value = Some(next.get_ref());
        table = match next.get_ref() {
            DeValue::Table(inner) => Some(inner),
            _ => None,
        };
    }
    Some(span)
}

/// The innermost key whose value holds byte `offset` (`args` for an argument, `API_URL` in
/// `[env]`, `content` for a `[[files]]` entry's content), if the text parses. Tables are
/// searched whole: a `[table]`'s own span is only its header.
pub fn key_at(text: &str, offset: usize) -> Option<String> {
    fn in_table(table: &DeTable<'_>, offset: usize) -> Option<String> {
        table.iter().find_map(|(name, item)| in_value(name.get_ref(), item, offset))
    }
    fn in_value(name: &str, item: &toml::Spanned<DeValue<'_>>, offset: usize) -> Option<String> {
        match item.get_ref() {
            DeValue::Table(inner) => in_table(inner, offset),
            DeValue::Array(items) => items
                .iter()
                .find_map(|entry| match entry.get_ref() {
                    DeValue::Table(inner) => in_table(inner, offset),
                    _ => None,
                })
                .or_else(|| item.span().contains(&offset).then(|| name.to_owned())),
            _ => item.span().contains(&offset).then(|| name.to_owned()),
        }
    }
    in_table(DeTable::parse(text).ok()?.get_ref(), offset)
}

/// Every string value in `text` (keys and comments are not values), with its span in the
/// text (quotes included) and its content; empty when the text does not parse.
pub fn strings(text: &str) -> Vec<(Range<usize>, String)> {
    strings_at(text, &[])
}

/// Every string value inside the value at `path` (a table's, however it is written: a
/// `[table]`, dotted keys or inline), as [`strings`] gives them; empty when there is none.
pub fn strings_at(text: &str, path: &[Step<'_>]) -> Vec<(Range<usize>, String)> {
    fn visit(value: &toml::Spanned<DeValue<'_>>, found: &mut Vec<(Range<usize>, String)>) {
        match value.get_ref() {
            DeValue::String(string) => found.push((value.span(), string.to_string())),
            DeValue::Array(items) => items.iter().for_each(|item| visit(item, found)),
            DeValue::Table(table) => table.iter().for_each(|(_, item)| visit(item, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    if let Ok(document) = DeTable::parse(text) {
        let mut table = Some(document.get_ref());
        let mut at: Option<&toml::Spanned<DeValue<'_>>> = None;
        for step in path {
            let next = match (step, table, at.map(toml::Spanned::get_ref)) {
                (Step::Key(key), Some(table), _) => {
                    table.iter().find(|(name, _)| name.get_ref() == key).map(|(_, v)| v)
                }
                (Step::Index(index), _, Some(DeValue::Array(items))) => items.get(*index),
                _ => None,
            };
            let Some(next) = next else { return Vec::new() };
            table = match next.get_ref() {
                DeValue::Table(inner) => Some(inner),
                _ => None,
            };
            at = Some(next);
        }
        match (table, at) {
            (Some(table), _) => table.iter().for_each(|(_, item)| visit(item, &mut found)),
            (None, Some(value)) => visit(value, &mut found),
            (None, None) => {}
        }
    }
    found.sort_by_key(|(span, _)| span.start);
    found
}

/// Why a scenario file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a valid scenario.
    #[error("{path}:{line}:{column}: {}{message}", key.as_deref().map(|key| format!("key `{key}`: ")).unwrap_or_default())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The offending key, when one can be named.
        key: Option<String>,
        /// What is wrong.
        message: String,
    },
}

/// Reads a corpus file as UTF-8; invalid UTF-8 is an error at the line and column where the
/// first bad byte is.
pub fn read_text(path: &Path) -> Result<String, LoadError> {
    let bytes = std::fs::read(path).map_err(|source| LoadError::Io { path: path.to_owned(), source })?;
    String::from_utf8(bytes).map_err(|error| {
        let offset = error.utf8_error().valid_up_to();
        let bytes = error.as_bytes();
        // The valid prefix is text: count lines and characters in it.
        let valid = std::str::from_utf8(&bytes[..offset]).unwrap_or_default();
        let (line, column) = position(valid, offset);
        let byte = bytes.get(offset).copied().unwrap_or_default();
        LoadError::Invalid {
            path: path.to_owned(),
            line,
            column,
            key: None,
            message: format!("invalid UTF-8 (byte 0x{byte:02x} at byte offset {offset}); a corpus file is UTF-8 text"),
        }
    })
}

/// [`LoadError::Invalid`] at the value `at` names in `text` (1:1 when it cannot be found).
pub fn invalid_at(text: &str, path: &Path, at: &[Step<'_>], key: &str, message: String) -> LoadError {
    let offset = span(text, at).map_or(0, |span| span.start);
    let (line, column) = position(text, offset);
    LoadError::Invalid { path: path.to_owned(), line, column, key: Some(key.to_owned()), message }
}

/// Deserializes any strict TOML file of the corpus, turning a serde error into a [`LoadError`]
/// that names the line, column and key. Every scenario family loads through this.
pub fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, path: &Path) -> Result<T, LoadError> {
    toml::from_str(text).map_err(|error| {
        let start = error.span().map_or(0, |span| span.start);
        let (line, column) = position(text, start);
        let message = error.message().trim().to_owned();
        let key = backticked_field(&message).or_else(|| key_before(text, start));
        LoadError::Invalid { path: path.to_owned(), line, column, key, message }
    })
}

/// 1-based line and column (in characters) of a byte offset.
pub fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |idx| idx + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// The field named in serde's "unknown field `x`" and "missing field `x`" messages.
fn backticked_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `").or_else(|| message.strip_prefix("missing field `"))?;
    rest.split_once('`').map(|(key, _)| key.to_owned())
}

/// The key whose value starts at `offset`: the last `key =` before it on the same line, or in
/// a table header the key at `offset`.
fn key_before(text: &str, offset: usize) -> Option<String> {
    let before = &text[..offset.min(text.len())];
    let line = &before[before.rfind('\n').map_or(0, |idx| idx + 1)..];
    if line.trim_start().starts_with('[') && !line.contains('=') {
        // A table header (`[tools.reed]`): the key the error points at.
        let key: String = text[offset.min(text.len())..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-'))
            .collect();
        return (!key.is_empty()).then_some(key);
    }
    let assignment = line.rfind('=')?;
    let key: String = line[..assignment]
        .trim_end()
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '"' | '.'))
        .collect();
    let key: String = key.chars().rev().collect::<String>().trim_matches('"').to_owned();
    (!key.is_empty()).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_follow_keys_and_indexes_through_arrays_of_tables() {
        let text = "title = \"t\"\ncovers = [\"A\", \"B\"]\n\n[[turn]]\nprompt = \"p\"\n\n[[turn]]\nrespond = [{ status = 700 }]\n";
        let at = |path: &[Step<'_>]| span(text, path).map(|span| &text[span]);
        assert_eq!(at(&[Step::Key("covers"), Step::Index(1)]), Some("\"B\""));
        assert_eq!(
            at(&[Step::Key("turn"), Step::Index(1), Step::Key("respond"), Step::Index(0), Step::Key("status")]),
            Some("700")
        );
        assert_eq!(at(&[Step::Key("turn"), Step::Index(2)]), None);
        assert_eq!(at(&[Step::Key("title"), Step::Index(0)]), None);
    }

    #[test]
    fn the_key_of_an_offset_is_the_innermost_one() {
        let text = "args = [\"a\", \"b\"]\n[env]\nURL = \"u\"\n[[files]]\npath = \"p\"\ncontent = \"c\"\n";
        let key = |needle: &str| key_at(text, text.find(needle).unwrap());
        assert_eq!(key("\"b\"").as_deref(), Some("args"));
        assert_eq!(key("\"u\"").as_deref(), Some("URL"));
        assert_eq!(key("\"c\"").as_deref(), Some("content"));
        assert_eq!(key("[env]"), None);
    }

    #[test]
    fn strings_at_a_path_are_those_inside_it_however_the_table_is_written() {
        let text = "x = \"a\"\n[tools.read]\nname = \"r\"\nargs = { p = \"{path}\" }\n[tools.wait]\nok = [\"w\"]\n";
        let at = |path: &[Step<'_>]| strings_at(text, path).into_iter().map(|(_, s)| s).collect::<Vec<_>>();
        assert_eq!(at(&[Step::Key("tools")]), ["r", "{path}", "w"]);
        assert_eq!(at(&[Step::Key("tools"), Step::Key("wait"), Step::Key("ok")]), ["w"]);
        assert_eq!(at(&[Step::Key("x")]), ["a"]);
        assert!(at(&[Step::Key("nope")]).is_empty());
    }

    #[test]
    fn strings_are_values_never_comments_or_keys() {
        let text = "# a {comment}\n\"{key}\" = \"x {value}\" # {after}\nlist = ['{a}', \"\"\"\n{b}\"\"\"]\n";
        let found: Vec<String> = strings(text).into_iter().map(|(_, string)| string).collect();
        assert_eq!(found, ["x {value}", "{a}", "{b}"]);
    }
}
