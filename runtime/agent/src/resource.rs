//! Session Resources: an image a prompt attaches, and the descriptor the Log keeps of it, and
//! a link a prompt points at ([`Link`])
//! (LOG-NO-RESOURCE-BYTES; seed 004 `Pixir.Event.user_message`: "Descriptors contain local
//! identity and hashes only; raw image bytes or base64 payloads must never be placed in the
//! Log"; ADR 0021).
//!
//! The Log records a [`Image::descriptor`]: `kind`, `mime_type`, `byte_length` and `sha256`
//! of the decoded bytes. The bytes go to the Session's resource store beside the Logs
//! (`.gauntlet/resources/<sha256>`, content-addressed: the descriptor's hash is the file's
//! local identity) and stay in memory with the Session's replay fold, which carries the image
//! to the Provider in every request (each dialect in its own form). A Session loaded in a fresh
//! process takes the bytes back from the store ([`restore`]); an image the store lost (or a
//! file whose hash no longer matches) is replayed as the prompt's text alone.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// An image attached to a prompt: its payload as the client sent it, and its identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// The MIME type the client gave (`image/png`).
    pub mime_type: String,
    /// The base64 payload, as sent (it is what every wire carries).
    pub data: String,
    /// The decoded length in bytes.
    pub byte_length: usize,
    /// The lowercase hex SHA-256 of the decoded bytes: the image's identity.
    pub sha256: String,
}

/// An image the runtime refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// The payload is not standard base64.
    #[error("the image data is not base64: {0}")]
    NotBase64(String),
    /// The MIME type is not an image's.
    #[error("`{0}` is not an image MIME type")]
    NotAnImage(String),
}

impl Image {
    /// An image from an ACP `image` content block's `mimeType` and `data`.
    pub fn from_base64(mime_type: &str, data: &str) -> Result<Image, ImageError> {
        if !mime_type.starts_with("image/") {
            return Err(ImageError::NotAnImage(mime_type.to_owned()));
        }
        let bytes = STANDARD.decode(data).map_err(|error| ImageError::NotBase64(error.to_string()))?;
        Ok(Image {
            mime_type: mime_type.to_owned(),
            data: data.to_owned(),
            byte_length: bytes.len(),
            sha256: hex_sha256(&bytes),
        })
    }

    /// An image from its bytes.
    pub fn from_bytes(mime_type: &str, bytes: &[u8]) -> Image {
        Image {
            mime_type: mime_type.to_owned(),
            data: STANDARD.encode(bytes),
            byte_length: bytes.len(),
            sha256: hex_sha256(bytes),
        }
    }

    /// What the Log keeps of it: identity and hash, never the bytes.
    pub fn descriptor(&self) -> Value {
        json!({"kind": "image", "mime_type": self.mime_type, "byte_length": self.byte_length, "sha256": self.sha256})
    }

    /// The `data:` URL the Responses and Chat Completions wires carry.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime_type, self.data)
    }
}

/// A resource a prompt points at by URI (an ACP `resource_link` block), which the Log keeps
/// as it was sent (`links` of the `user_message`) and the model reads as a Markdown link
/// (ACP-PROMPT-LINK-CARRIED). The runtime never fetches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Its URI.
    pub uri: String,
    /// Its name, as the client shows it.
    pub name: String,
}

impl Link {
    /// What the Log records of it.
    pub fn descriptor(&self) -> Value {
        json!({"uri": self.uri, "name": self.name})
    }

    /// It read back from a `user_message`'s `links` entry.
    pub fn from_descriptor(value: &Value) -> Option<Link> {
        let field = |key: &str| Some(value.get(key)?.as_str()?.to_owned());
        Some(Link { uri: field("uri")?, name: field("name")? })
    }

    /// The words the model reads for it: a Markdown link naming it and its URI.
    pub fn markdown(&self) -> String {
        format!("[{}]({})", self.name, self.uri)
    }
}

/// The links a `user_message`'s data records.
pub fn links(data: &serde_json::Map<String, Value>) -> Vec<Link> {
    let recorded = data.get("links").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    recorded.iter().filter_map(Link::from_descriptor).collect()
}

/// The lowercase hex SHA-256 of `bytes`.
fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Keeps an image's bytes in the store folder `dir` as `<sha256>` (once: the name is the
/// content's hash). Never through a symlink.
pub fn store(dir: &Path, image: &Image) -> std::io::Result<()> {
    let bytes = STANDARD.decode(&image.data).map_err(std::io::Error::other)?;
    std::fs::create_dir_all(dir)?;
    let path = dir.join(&image.sha256);
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_file() => Ok(()),
        Ok(_) => Err(std::io::Error::other(format!("{} is not a file", path.display()))),
        Err(_) => std::fs::write(&path, bytes),
    }
}

/// The image a Log descriptor names, from the store folder `dir`: `None` when the descriptor
/// is not an image's, names no 64-hex-digit hash (a Log is input: its hash never becomes a
/// path otherwise), or the file is missing, a symlink, or no longer has that hash.
pub fn restore(dir: &Path, descriptor: &Value) -> Option<Image> {
    let sha256 = descriptor.get("sha256")?.as_str()?;
    let hex = sha256.len() == 64 && sha256.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'));
    let mime_type = descriptor.get("mime_type")?.as_str()?;
    if !hex || descriptor.get("kind")?.as_str()? != "image" || !mime_type.starts_with("image/") {
        return None;
    }
    let path = dir.join(sha256);
    if !std::fs::symlink_metadata(&path).ok()?.is_file() {
        return None;
    }
    let image = Image::from_bytes(mime_type, &std::fs::read(&path).ok()?);
    (image.sha256 == sha256).then_some(image)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1x1 PNG.
    const PIXEL: &str =
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

    #[test]
    fn a_descriptor_holds_identity_and_hash_only() {
        let image = Image::from_base64("image/png", PIXEL).unwrap();
        let descriptor = image.descriptor();
        assert_eq!(descriptor["byte_length"], 70);
        assert_eq!(descriptor["sha256"].as_str().unwrap().len(), 64);
        assert!(!descriptor.to_string().contains(PIXEL));
        assert_eq!(image.data_url(), format!("data:image/png;base64,{PIXEL}"));
    }

    #[test]
    fn the_store_gives_back_what_it_kept_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let image = Image::from_base64("image/png", PIXEL).unwrap();
        store(dir.path(), &image).unwrap();
        store(dir.path(), &image).unwrap();
        assert_eq!(restore(dir.path(), &image.descriptor()), Some(image.clone()));
        let mut traversal = image.descriptor();
        traversal["sha256"] = json!("../../etc/passwd");
        assert_eq!(restore(dir.path(), &traversal), None);
        std::fs::write(dir.path().join(&image.sha256), b"changed").unwrap();
        assert_eq!(restore(dir.path(), &image.descriptor()), None);
    }

    #[test]
    fn bad_payloads_and_types_are_refused() {
        assert!(matches!(Image::from_base64("image/png", "not base64!"), Err(ImageError::NotBase64(_))));
        assert_eq!(Image::from_base64("text/plain", PIXEL), Err(ImageError::NotAnImage("text/plain".to_owned())));
    }
}
