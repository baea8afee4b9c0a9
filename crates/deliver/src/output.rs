//! The command's output on its way out: two close-on-exec pipes for its stdout and stderr,
//! read without blocking into bounded spools and forwarded to `deliver`'s stderr without
//! blocking (the spools themselves: [`super::spool`]).

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags};
use rustix::pipe::PipeFlags;

use super::spool::{self, Sink, Source};

/// The read side of the command's two streams and the sink they are forwarded to.
#[derive(Debug)]
pub struct Output<'a> {
    sources: [Source; 2],
    sink: Sink<'a>,
}

/// The write ends the command gets as its stdout and stderr.
#[derive(Debug)]
pub struct WriteEnds {
    /// The command's stdout.
    pub stdout: OwnedFd,
    /// The command's stderr.
    pub stderr: OwnedFd,
}

impl<'a> Output<'a> {
    /// Two new pipes, forwarded to `sink` (our stderr).
    ///
    /// # Errors
    ///
    /// What could not be set up, with the operating-system error.
    pub fn new(sink: BorrowedFd<'a>) -> Result<(Self, WriteEnds), (&'static str, io::Error)> {
        let pipe = |what| {
            rustix::pipe::pipe_with(PipeFlags::CLOEXEC).map_err(|e| (what, io::Error::from(e)))
        };
        let (out_read, stdout) = pipe("cannot create the stdout pipe")?;
        let (err_read, stderr) = pipe("cannot create the stderr pipe")?;
        let source = |stream, fd, what| Source::new(stream, fd).map_err(|e| (what, e));
        let sources = [
            source("stdout", out_read, "cannot set up the stdout pipe")?,
            source("stderr", err_read, "cannot set up the stderr pipe")?,
        ];
        let output = Self {
            sources,
            sink: Sink::new(sink),
        };
        Ok((output, WriteEnds { stdout, stderr }))
    }

    /// Adds what to poll for: each open pipe readable, and the sink writable while bytes
    /// wait for it.
    pub fn poll_fds<'s>(&'s self, fds: &mut Vec<PollFd<'s>>) {
        for source in &self.sources {
            if let Some(fd) = source.fd() {
                fds.push(PollFd::from_borrowed_fd(fd, PollFlags::IN));
            }
        }
        if spool::pending(&self.sources, &self.sink) {
            fds.push(PollFd::from_borrowed_fd(self.sink.fd(), PollFlags::OUT));
        }
    }

    /// Reads what the pipes hold and forwards what the sink accepts, without blocking.
    pub fn pump(&mut self) {
        for source in &mut self.sources {
            // A read error closes that pipe; the command then gets EPIPE, as it would
            // writing to any closed pipe.
            let _ = source.fill();
        }
        spool::forward(&mut self.sources, &mut self.sink);
    }

    /// Forwards what is left for at most `limit`; returns the bytes never forwarded.
    pub fn finish(mut self, limit: Duration) -> u64 {
        spool::finish(&mut self.sources, &mut self.sink, limit)
    }
}
