//! Fingerprints: the hex SHA-1 of NUL-terminated parts, so `("ab", "c")` and `("a", "bc")` differ.

/// `fingerprint(parts...)` as codex-tg computes it: each part followed by one NUL byte.
pub fn fingerprint(parts: &[&str]) -> String {
    let mut hasher = sha1_smol::Sha1::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update(&[0]);
    }
    hasher.digest().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_nul_terminated() {
        // printf 'turn-1\0completed\0' | sha1sum
        assert_eq!(fingerprint(&["turn-1", "completed"]), "527722d3fb47e8fc222cd12f8e2abdc071fc5fb9");
        assert_ne!(fingerprint(&["ab", "c"]), fingerprint(&["a", "bc"]));
        // printf '\0' | sha1sum
        assert_eq!(fingerprint(&[""]), "5ba93c9db0cff93f52b521d7420e43f6eda2784f");
    }
}
