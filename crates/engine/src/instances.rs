//! Component instances kept between the calls of one long-lived front end.
//!
//! A fresh [`Mutator`] costs an instantiation, and for a front end that answers many calls
//! (an MCP session) a thread's first use of wasmtime as well. [`Instances`] lends an
//! instance for one operation and takes it back afterwards, so the next call of the
//! session skips that work. What makes reuse keep every guarantee of a fresh instance
//! (see `docs/architecture.md`, "Reused instances"):
//!
//! - an instance is bound to the one worktree of its [`Instances`], and its only
//!   capability stays the read-only preopen it was made with;
//! - the component keeps no state between calls (every export re-reads the preopen and
//!   drops every descriptor it opened), and wasmtime's hostcall fuel is reset for every
//!   host call, so [`HOSTCALL_FUEL`](super::HOSTCALL_FUEL) stays a per-call bound;
//! - every call goes through [`Lent::call`]: a call that fails in the engine (a trap,
//!   hostcall fuel exhausted, a result that cannot be lifted) discards the instance at once,
//!   as does a panic while it is lent, so a failure of one call never reaches the next
//!   (wasmtime itself refuses to enter a store that trapped);
//! - an instance whose linear memory grew past [`REUSE_MAX_MEMORY`], or that has served
//!   [`REUSE_MAX_CALLS`] operations, is dropped instead of kept, so a session's memory
//!   stays bounded after one large file.

use std::os::fd::OwnedFd;
use std::sync::{Mutex, PoisonError};

use super::{EngineError, Loaded, Mutator};

/// An instance whose linear memory grew past this many bytes is not kept: 64 MiB.
pub const REUSE_MAX_MEMORY: usize = 64 << 20;

/// An instance serves at most this many operations before it is replaced: 1024.
pub const REUSE_MAX_CALLS: u32 = 1024;

/// The most idle instances kept: 8 (one per call an MCP session runs at once).
pub const MAX_IDLE: usize = 8;

/// Instances of the component over one worktree, lent one operation at a time.
pub struct Instances {
    loaded: Loaded,
    worktree: OwnedFd,
    idle: Mutex<Vec<Kept>>,
}

struct Kept {
    mutator: Mutator,
    calls: u32,
}

impl std::fmt::Debug for Instances {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instances").finish_non_exhaustive()
    }
}

impl Instances {
    /// Instances of `loaded` over `worktree` (the descriptor is duplicated: the instances
    /// preopen exactly the directory it names now, whatever its path names later).
    ///
    /// # Errors
    ///
    /// [`EngineError`] when the descriptor cannot be duplicated.
    pub fn new(loaded: &Loaded, worktree: &OwnedFd) -> Result<Self, EngineError> {
        let worktree = worktree
            .try_clone()
            .map_err(|e| EngineError::new("duplicating the worktree descriptor", e))?;
        Ok(Self {
            loaded: loaded.clone(),
            worktree,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// An instance for one operation: an idle one, or a fresh one.
    ///
    /// # Errors
    ///
    /// [`EngineError`] when a fresh instance cannot be made.
    pub fn lend(&self) -> Result<Lent<'_>, EngineError> {
        let kept = match self.take_idle() {
            Some(kept) => kept,
            None => Kept {
                mutator: self.loaded.instantiate(&self.worktree)?,
                calls: 0,
            },
        };
        Ok(Lent {
            kept: Some(kept),
            home: self,
        })
    }

    /// How many instances are idle (kept for the next call).
    #[must_use]
    pub fn idle(&self) -> usize {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    fn take_idle(&self) -> Option<Kept> {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
    }

    fn give_back(&self, mut kept: Kept) {
        kept.calls += 1;
        if kept.calls >= REUSE_MAX_CALLS || kept.mutator.peak_memory() > REUSE_MAX_MEMORY {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < MAX_IDLE {
            idle.push(kept);
        }
    }
}

/// An instance lent for one operation; returned to its [`Instances`] when dropped, unless
/// a call failed in the engine or the thread is panicking.
pub struct Lent<'a> {
    kept: Option<Kept>,
    home: &'a Instances,
}

impl std::fmt::Debug for Lent<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lent").finish_non_exhaustive()
    }
}

impl Lent<'_> {
    /// Runs one call of the component (`call` is one [`Mutator`] method).
    ///
    /// # Errors
    ///
    /// The call's [`EngineError`]; the instance is then discarded, and any later call on
    /// this loan fails too.
    pub fn call<T>(
        &mut self,
        call: impl FnOnce(&mut Mutator) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        let Some(kept) = self.kept.as_mut() else {
            return Err(EngineError::plain(
                "the component instance was discarded after a failed call",
            ));
        };
        let result = call(&mut kept.mutator);
        if result.is_err() {
            self.kept = None;
        }
        result
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(kept) = self.kept.take()
            && !std::thread::panicking()
        {
            self.home.give_back(kept);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Instances, REUSE_MAX_MEMORY};
    use crate::test_support::{read, worktree};
    use crate::{Loaded, RefusalCode, ReplaceError, ReplaceRequest};

    #[test]
    fn an_instance_is_kept_between_calls_and_discarded_after_a_failed_one() {
        let (_dir, fd) = worktree(&[("a.txt", b"hello\n")]);
        let instances = Instances::new(&Loaded::new().expect("load"), &fd).expect("instances");
        for served in 1..=3 {
            let mut lent = instances.lend().expect("lend");
            let page = lent.call(|m| m.read(&read("a.txt"))).expect("no failure");
            assert_eq!(page.expect("a page").text, "hello\n");
            drop(lent);
            assert_eq!(instances.idle(), 1);
            let kept = instances.idle.lock().expect("idle");
            assert_eq!(kept[0].calls, served, "the same instance served every call");
        }
        // A real engine failure, induced: no hostcall fuel left to lift the page.
        let mut lent = instances.lend().expect("lend");
        let failed = lent.call(|m| {
            m.store.set_hostcall_fuel(0);
            m.read(&read("a.txt"))
        });
        assert!(failed.is_err(), "the result could not be lifted");
        assert!(
            lent.call(|m| m.read(&read("a.txt"))).is_err(),
            "the loan is spent"
        );
        drop(lent);
        assert_eq!(instances.idle(), 0, "the failed instance is not kept");
        // The next call gets a fresh instance and succeeds.
        let mut lent = instances.lend().expect("lend");
        let page = lent.call(|m| m.read(&read("a.txt"))).expect("no failure");
        assert_eq!(page.expect("a page").text, "hello\n");
        drop(lent);
        assert_eq!(instances.idle.lock().expect("idle")[0].calls, 1);
    }

    #[test]
    fn an_instance_whose_memory_grew_past_the_bound_is_not_kept() {
        let big = vec![b'x'; REUSE_MAX_MEMORY + (1 << 20)];
        let (_dir, fd) = worktree(&[("small.txt", b"hello\n"), ("big.txt", &big)]);
        let instances = Instances::new(&Loaded::new().expect("load"), &fd).expect("instances");
        let writable = ["*".to_string()];
        let mut lent = instances.lend().expect("lend");
        let sha = lent
            .call(|m| m.revision("small.txt", &writable, &[]))
            .expect("no failure");
        assert!(sha.is_ok(), "{sha:?}");
        drop(lent);
        assert_eq!(instances.idle(), 1, "a small instance is kept");
        // The whole file is read into the instance's memory before the revision gate.
        let stale = ReplaceRequest {
            path: "big.txt".into(),
            writable_paths: writable.to_vec(),
            private_paths: Vec::new(),
            expected_sha256: Some("0".repeat(64)),
            old_text: "x".into(),
            new_text: "y".into(),
        };
        let mut lent = instances.lend().expect("lend");
        let refused = lent.call(|m| m.replace(&stale)).expect("no failure");
        assert!(
            matches!(&refused, Err(ReplaceError::Refused(r)) if r.code == RefusalCode::RevisionStale),
            "{refused:?}"
        );
        drop(lent);
        assert_eq!(instances.idle(), 0, "the grown instance is dropped");
    }
}
