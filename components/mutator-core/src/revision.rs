//! File revisions: the SHA-256 of a file's exact bytes, written as 64 lowercase hex digits.

use alloc::string::String;
use core::fmt;
use sha2::{Digest, Sha256};

/// The SHA-256 of a file's exact bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Revision([u8; 32]);

/// A revision string that is not 64 lowercase hexadecimal digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RevisionShapeError;

impl fmt::Display for RevisionShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a revision must be 64 lowercase hexadecimal digits (a SHA-256)")
    }
}

impl Revision {
    /// The revision of `bytes`.
    #[must_use]
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// The revision whose digest is `digest` (for hashes computed elsewhere, e.g. streamed).
    #[must_use]
    pub fn from_digest(digest: [u8; 32]) -> Self {
        Self(digest)
    }

    /// Parses 64 lowercase hexadecimal digits.
    ///
    /// # Errors
    ///
    /// [`RevisionShapeError`] for any other length or character (uppercase included:
    /// one revision has one spelling).
    pub fn parse(hex: &str) -> Result<Self, RevisionShapeError> {
        let bytes = hex.as_bytes();
        if bytes.len() != 64 {
            return Err(RevisionShapeError);
        }
        let mut out = [0u8; 32];
        for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
            *slot = (nibble(pair[0])? << 4) | nibble(pair[1])?;
        }
        Ok(Self(out))
    }

    /// The 64-digit lowercase hexadecimal spelling.
    #[must_use]
    pub fn to_hex(&self) -> String {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(char::from(DIGITS[usize::from(b >> 4)]));
            s.push(char::from(DIGITS[usize::from(b & 0xf)]));
        }
        s
    }
}

/// An incremental SHA-256, for hashing a file in pieces (and reusing a shared prefix).
#[derive(Clone, Default)]
pub struct Hasher(Sha256);

impl Hasher {
    /// A hasher with nothing hashed yet.
    #[must_use]
    pub fn new() -> Self {
        Self(Sha256::new())
    }

    /// Appends `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The revision of everything appended.
    #[must_use]
    pub fn finish(self) -> Revision {
        Revision(self.0.finalize().into())
    }
}

impl fmt::Debug for Hasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Hasher")
    }
}

fn nibble(c: u8) -> Result<u8, RevisionShapeError> {
    match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        _ => Err(RevisionShapeError),
    }
}

impl fmt::Debug for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Revision({})", self.to_hex())
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn hashes_and_round_trips() {
        assert_eq!(Revision::of(b"").to_hex(), EMPTY);
        assert_eq!(Revision::parse(EMPTY), Ok(Revision::of(b"")));
    }

    #[test]
    fn refuses_bad_shapes() {
        assert!(Revision::parse(&EMPTY.to_uppercase()).is_err());
        assert!(Revision::parse(&EMPTY[1..]).is_err());
        assert!(Revision::parse(&alloc::format!("{EMPTY}0")).is_err());
        assert!(Revision::parse(&EMPTY.replace('e', "g")).is_err());
    }
}
