//! The threads that run a session's calls, kept between calls.
//!
//! A call runs the engine, which enters a small runtime of its own and must not run on the
//! server's. Starting a thread per call cost more than the operation (thread start-up, and
//! wasmtime's per-thread set-up and tear-down); a worker that has finished a call waits for
//! the next instead. There are never more workers than calls that ran at once (the
//! session's slots bound that), and a worker whose call panicked is not kept.

use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};

type Job = Box<dyn FnOnce() + Send>;

/// Idle workers, each waiting on its own channel.
#[derive(Debug, Default)]
pub struct Workers {
    idle: Arc<Mutex<Vec<Sender<Job>>>>,
}

impl Workers {
    /// Runs `job` on an idle worker, or on a new one.
    ///
    /// # Errors
    ///
    /// The error of starting a thread, when no worker is idle and none can be started.
    pub fn run(&self, job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        let mut job: Job = Box::new(job);
        while let Some(worker) = self.take_idle() {
            match worker.send(job) {
                Ok(()) => return Ok(()),
                // That worker is gone (its last call panicked): try the next one.
                Err(returned) => job = returned.0,
            }
        }
        self.start(job)
    }

    fn take_idle(&self) -> Option<Sender<Job>> {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
    }

    fn start(&self, first: Job) -> std::io::Result<()> {
        let (tx, rx) = channel::<Job>();
        let idle = Arc::clone(&self.idle);
        std::thread::Builder::new()
            .name("satyrn-mcp-call".into())
            .spawn(move || {
                let mut job = first;
                loop {
                    job();
                    // Idle again only once the call is done; a call that panics ends the
                    // thread before this point, so a dead worker is never listed.
                    idle.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(tx.clone());
                    match rx.recv() {
                        Ok(next) => job = next,
                        Err(_) => return,
                    }
                }
            })
            .map(drop)
    }
}
