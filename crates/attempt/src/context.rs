//! The mutation context (version 1): what the Pi package needs to confine an attempt — the
//! worktree, the frozen contract and the revision map.
//!
//! It reaches Pi through a private file, never an environment string (which the kernel caps
//! at 128 KiB): [`write`] puts it in the attempt's private directory (mode 0600; the
//! directory is 0700 and removed afterwards), and `SATYRN_MUTATION_CONTEXT_FILE` names it.
//! Its size is bounded only by [`MAX_CONTEXT_BYTES`], room for hundreds of thousands of
//! declared files.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The variable that names the context file in Pi's environment.
pub const CONTEXT_FILE_VAR: &str = "SATYRN_MUTATION_CONTEXT_FILE";

/// The largest context accepted: 64 MiB (about 600 000 declared files of 30-byte paths).
pub const MAX_CONTEXT_BYTES: usize = 64 * 1024 * 1024;

/// Why the context could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// The encoded context is larger than [`MAX_CONTEXT_BYTES`].
    #[error(
        "the mutation context is {bytes} bytes ({files} declared files), over the \
         {MAX_CONTEXT_BYTES}-byte limit; narrow writable_paths"
    )]
    TooLarge {
        /// Its size in bytes.
        bytes: usize,
        /// How many files the revision map holds.
        files: usize,
    },
    /// The worktree or the frozen contract is not a UTF-8 path (JSON cannot carry it).
    #[error("{0} is not a UTF-8 path")]
    NotUtf8(String),
    /// Writing the file failed.
    #[error("cannot write the mutation context: {0}")]
    Io(#[source] std::io::Error),
}

/// Encodes the context: `{"version":1,"repo":..,"contract":..,"revisions":{PATH:SHA256}}`.
///
/// # Errors
///
/// [`ContextError::NotUtf8`] for a non-UTF-8 path, [`ContextError::TooLarge`] over
/// [`MAX_CONTEXT_BYTES`].
pub fn encode(
    repo: &Path,
    contract: &Path,
    revisions: &BTreeMap<String, String>,
) -> Result<Vec<u8>, ContextError> {
    let utf8 = |p: &Path| {
        p.to_str()
            .map(str::to_string)
            .ok_or_else(|| ContextError::NotUtf8(p.display().to_string()))
    };
    let bytes = serde_json::to_vec(&serde_json::json!({
        "version": 1,
        "repo": utf8(repo)?,
        "contract": utf8(contract)?,
        "revisions": revisions,
    }))
    .map_err(|e| ContextError::Io(e.into()))?;
    if bytes.len() > MAX_CONTEXT_BYTES {
        return Err(ContextError::TooLarge {
            bytes: bytes.len(),
            files: revisions.len(),
        });
    }
    Ok(bytes)
}

/// Writes `bytes` to the new file `path` (mode 0600 whatever the umask; never replaces an
/// existing file). Not fsynced: the file lives only as long as the attempt and reaches the
/// child through the page cache; a crash ends the attempt anyway.
///
/// # Errors
///
/// [`ContextError::Io`].
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), ContextError> {
    std::fs::File::options()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(ContextError::Io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_version_one_and_refuses_one_byte_over_the_limit() {
        let map = BTreeMap::from([("src/a.rs".to_string(), "a".repeat(64))]);
        let bytes = encode(Path::new("/r"), Path::new("/p/contract.yaml"), &map).expect("encode");
        let value: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(value["version"], 1);
        assert_eq!(value["revisions"]["src/a.rs"], "a".repeat(64));
        // Grow one path until the encoding is exactly at the limit, then one byte over.
        let fixed = encode(Path::new("/r"), Path::new("/c"), &BTreeMap::new())
            .expect("empty")
            .len();
        let entry_overhead = r#"{"":""}"#.len() - 2 + 64;
        let path_len = MAX_CONTEXT_BYTES - fixed - entry_overhead;
        let at = BTreeMap::from([("p".repeat(path_len), "a".repeat(64))]);
        let encoded = encode(Path::new("/r"), Path::new("/c"), &at).expect("at the limit");
        assert_eq!(encoded.len(), MAX_CONTEXT_BYTES);
        let over = BTreeMap::from([("p".repeat(path_len + 1), "a".repeat(64))]);
        assert!(matches!(
            encode(Path::new("/r"), Path::new("/c"), &over),
            Err(ContextError::TooLarge { bytes, files: 1 }) if bytes == MAX_CONTEXT_BYTES + 1
        ));
    }
}
