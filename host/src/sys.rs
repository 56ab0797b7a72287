//! Facts about this process and the digest that names a build, below every layer that needs
//! them: `trust` compares owners with the user id and lock-file lines with digests, `plugin`
//! names its shadow folder by the user id and hashes what it stages, `worker` hands the digest
//! to its process as hex.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

/// The real user id of this process (0 where there is no such thing).
pub fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    #[cfg(unix)]
    return unsafe { libc::getuid() };
    #[cfg(not(unix))]
    return 0;
}

/// SHA-256 of a file's bytes: the identity of a build.
pub fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Lowercase hex of a digest.
pub fn hex(digest: &[u8; 32]) -> String {
    digest.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The digest a 64-digit hex string (as [`hex`] writes it) stands for.
pub fn parse_hex(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_round_trip_through_hex() {
        let h: [u8; 32] = std::array::from_fn(|i| (i * 37) as u8);
        assert_eq!(parse_hex(&hex(&h)), Some(h));
        assert_eq!(parse_hex("00"), None);
        assert_eq!(parse_hex(&"zz".repeat(32)), None);
        assert_eq!(
            hex(&digest(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
