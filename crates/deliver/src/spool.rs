//! The command's output on its way to `deliver`'s stderr: read from a pipe without
//! blocking, held in a bounded spool, forwarded without ever blocking.
//!
//! Each of the command's two streams has a [`Source`]: the non-blocking read end of the
//! pipe the command writes to, and a [`Spool`] of the bytes read but not yet forwarded.
//! The spool is bounded: the oldest [`HEAD_BYTES`] not yet forwarded and the newest
//! [`TAIL_BYTES`] are kept; whatever falls between them is dropped and replaced, in the
//! forwarded stream, by one marker line naming how many bytes of which stream were dropped
//! (see [`marker`]). A reader that keeps up loses nothing; one that stalls costs at most
//! `2 × (HEAD_BYTES + TAIL_BYTES)` of memory and never slows the command down.
//!
//! Forwarding never blocks: [`forward`] writes only after `poll` reported the sink
//! writable, and at most [`WRITE_MAX`] bytes at a time (`PIPE_BUF`: a write that small to a
//! pipe with room never blocks). A pipe or terminal is moreover written through a private
//! non-blocking description of it ([`Sink::new`]), since a terminal may report room for
//! fewer bytes. The sink's own file status flags are never changed (it may be a terminal
//! or a pipe shared with other processes).

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};

/// The oldest not-yet-forwarded bytes a spool keeps: 1 MiB.
pub const HEAD_BYTES: usize = 1 << 20;
/// The newest bytes a spool keeps once its head is full: 1 MiB.
pub const TAIL_BYTES: usize = 1 << 20;
/// The largest single write to the sink: `PIPE_BUF` (4096) bytes.
pub const WRITE_MAX: usize = 4096;
/// How much one [`Source::fill`] reads at most before it lets the caller check its deadline.
const FILL_BUDGET: usize = 1 << 20;

/// The line that stands for `dropped` bytes of `stream` in the forwarded output.
#[must_use]
pub fn marker(stream: &str, dropped: u64) -> Vec<u8> {
    format!(
        "\n[satyrn-host deliver: {dropped} bytes of the command's {stream} were dropped here; deliver's stderr was not read fast enough]\n"
    )
    .into_bytes()
}

/// The bytes of one stream read from the command but not yet forwarded. Bounded (see the
/// module documentation).
#[derive(Debug)]
pub struct Spool {
    stream: &'static str,
    head: Vec<u8>,
    head_sent: usize,
    note: Vec<u8>,
    note_sent: usize,
    gap: u64,
    tail: VecDeque<u8>,
    dropped: u64,
}

impl Spool {
    /// An empty spool for the stream named `stream` (`stdout`, `stderr`).
    #[must_use]
    pub fn new(stream: &'static str) -> Self {
        Self {
            stream,
            head: Vec::new(),
            head_sent: 0,
            note: Vec::new(),
            note_sent: 0,
            gap: 0,
            tail: VecDeque::new(),
            dropped: 0,
        }
    }

    /// Appends `data`; drops the oldest bytes of the tail when it is full.
    pub fn push(&mut self, mut data: &[u8]) {
        if self.head_sent == self.head.len() && self.note.is_empty() {
            self.head.clear();
            self.head_sent = 0;
        }
        if self.gap == 0 && self.note.is_empty() && self.tail.is_empty() {
            let room = HEAD_BYTES.saturating_sub(self.head.len());
            let take = room.min(data.len());
            self.head.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        if data.len() >= TAIL_BYTES {
            let skip = data.len() - TAIL_BYTES;
            self.drop_bytes(self.tail.len() + skip);
            self.tail.clear();
            data = &data[skip..];
        } else {
            let over = (self.tail.len() + data.len()).saturating_sub(TAIL_BYTES);
            self.drop_bytes(over);
            self.tail.drain(..over);
        }
        self.tail.extend(data);
    }

    fn drop_bytes(&mut self, n: usize) {
        let n = n as u64;
        self.gap += n;
        self.dropped += n;
    }

    /// Nothing is waiting to be forwarded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.head_sent == self.head.len()
            && self.note.is_empty()
            && self.gap == 0
            && self.tail.is_empty()
    }

    /// How many bytes were dropped so far.
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Bytes held in memory (head, marker and tail).
    #[must_use]
    pub fn held(&self) -> usize {
        self.head.len() + self.note.len() + self.tail.len()
    }

    /// Bytes of the stream still to forward (the marker not counted), dropped ones included.
    #[must_use]
    pub fn unsent(&self) -> u64 {
        (self.head.len() - self.head_sent + self.tail.len()) as u64 + self.gap
    }

    /// The next bytes to forward, at most [`WRITE_MAX`]; empty when nothing waits.
    fn front(&mut self) -> &[u8] {
        if self.head_sent < self.head.len() {
            let end = self.head.len().min(self.head_sent + WRITE_MAX);
            return &self.head[self.head_sent..end];
        }
        if self.note.is_empty() && self.gap > 0 {
            self.note = marker(self.stream, self.gap);
            self.note_sent = 0;
            self.gap = 0;
        }
        if !self.note.is_empty() {
            let end = self.note.len().min(self.note_sent + WRITE_MAX);
            return &self.note[self.note_sent..end];
        }
        let (first, _) = self.tail.as_slices();
        &first[..first.len().min(WRITE_MAX)]
    }

    /// Marks `n` bytes of [`Spool::front`] as forwarded.
    fn consume(&mut self, n: usize) {
        if self.head_sent < self.head.len() {
            self.head_sent += n;
        } else if !self.note.is_empty() {
            self.note_sent += n;
            if self.note_sent == self.note.len() {
                self.note.clear();
                self.note_sent = 0;
            }
        } else {
            self.tail.drain(..n);
        }
    }
}

/// One stream of the command: the read end of its pipe (until end of file) and its spool.
#[derive(Debug)]
pub struct Source {
    fd: Option<OwnedFd>,
    /// What was read but not yet forwarded.
    pub spool: Spool,
}

impl Source {
    /// `fd` (the read end of the command's pipe) made non-blocking; its own file
    /// description, so nothing else is affected.
    ///
    /// # Errors
    ///
    /// The operating-system error when the descriptor cannot be made non-blocking.
    pub fn new(stream: &'static str, fd: OwnedFd) -> io::Result<Self> {
        rustix::io::ioctl_fionbio(&fd, true)?;
        Ok(Self {
            fd: Some(fd),
            spool: Spool::new(stream),
        })
    }

    /// The pipe, while it is open.
    #[must_use]
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.fd.as_ref().map(AsFd::as_fd)
    }

    /// Whether every writer closed the pipe and everything was read.
    #[must_use]
    pub fn at_eof(&self) -> bool {
        self.fd.is_none()
    }

    /// Reads what is available now (at most about 1 MiB) into the spool; closes the pipe at
    /// end of file. Never blocks.
    ///
    /// # Errors
    ///
    /// A read error other than "would block" or "interrupted" (the pipe is closed).
    pub fn fill(&mut self) -> io::Result<()> {
        let mut buf = [0u8; 64 * 1024];
        let mut budget = FILL_BUDGET;
        while budget > 0 {
            let Some(fd) = self.fd.as_ref() else {
                return Ok(());
            };
            match rustix::io::read(fd, &mut buf) {
                Ok(0) => {
                    self.fd = None;
                    return Ok(());
                }
                Ok(n) => {
                    self.spool.push(&buf[..n]);
                    budget = budget.saturating_sub(n);
                }
                Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => return Ok(()),
                Err(e) => {
                    self.fd = None;
                    return Err(e.into());
                }
            }
        }
        Ok(())
    }
}

/// Where forwarded output goes: normally our stderr. Once a write fails (a closed pipe, a
/// full disk), output is discarded.
#[derive(Debug)]
pub struct Sink<'a> {
    shared: BorrowedFd<'a>,
    private: Option<OwnedFd>,
    broken: bool,
}

impl<'a> Sink<'a> {
    /// A sink writing to `fd`, whose flags are left as they are. When `fd` is a pipe or a
    /// character device (a terminal), it is reopened through `/proc/self/fd` as a private,
    /// non-blocking description of the same file, and written through that: a terminal
    /// that reports room for a few bytes would otherwise block a 4096-byte write. Anything
    /// else (a regular file, a socket), or a reopen that fails, is written through `fd`
    /// itself, after `poll`, at most [`WRITE_MAX`] bytes at a time.
    #[must_use]
    pub fn new(fd: BorrowedFd<'a>) -> Self {
        Self {
            shared: fd,
            private: reopen_nonblocking(fd),
            broken: false,
        }
    }

    /// The descriptor written to and polled for writability.
    #[must_use]
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.private.as_ref().map_or(self.shared, AsFd::as_fd)
    }
}

/// A private non-blocking description of the pipe or character device `fd`, if one can be
/// opened and is the same file.
fn reopen_nonblocking(fd: BorrowedFd<'_>) -> Option<OwnedFd> {
    use rustix::fs::{FileType, Mode, OFlags};
    use std::os::fd::AsRawFd;
    let before = rustix::fs::fstat(fd).ok()?;
    let kind = FileType::from_raw_mode(before.st_mode);
    if !matches!(kind, FileType::Fifo | FileType::CharacterDevice) {
        return None;
    }
    let reopened = rustix::fs::open(
        format!("/proc/self/fd/{}", fd.as_raw_fd()),
        OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
    .ok()?;
    let after = rustix::fs::fstat(&reopened).ok()?;
    (after.st_dev == before.st_dev
        && after.st_ino == before.st_ino
        && after.st_rdev == before.st_rdev)
        .then_some(reopened)
}

/// Whether anything waits to be forwarded (and could be, the sink being usable).
#[must_use]
pub fn pending(sources: &[Source], sink: &Sink<'_>) -> bool {
    !sink.broken && sources.iter().any(|s| !s.spool.is_empty())
}

/// Forwards from the spools while the sink is writable right now, alternating between the
/// streams; returns whether anything was written. Never blocks. A failed write breaks the
/// sink: from then on spools are emptied without writing.
pub fn forward(sources: &mut [Source], sink: &mut Sink<'_>) -> bool {
    let mut wrote = false;
    loop {
        if sink.broken {
            for s in sources.iter_mut() {
                s.spool = Spool {
                    dropped: s.spool.dropped + s.spool.unsent() - s.spool.gap,
                    ..Spool::new(s.spool.stream)
                };
            }
            return wrote;
        }
        if !pending(sources, sink) || !writable(sink.fd(), Duration::ZERO) {
            return wrote;
        }
        for s in sources.iter_mut() {
            let chunk = s.spool.front();
            if chunk.is_empty() {
                continue;
            }
            match rustix::io::write(sink.fd(), chunk) {
                Ok(n) => {
                    s.spool.consume(n);
                    wrote |= n > 0;
                }
                Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => {}
                Err(_) => {
                    sink.broken = true;
                    break;
                }
            }
        }
    }
}

/// Forwards what is left after the command stopped: reads the pipes to their end (every
/// writer is gone by now; a pipe that stays open is left once it has nothing to read) and
/// writes while the sink accepts, for at most `limit` in all. What cannot be written by
/// then is dropped. Returns the bytes dropped across both streams, including earlier drops.
pub fn finish(sources: &mut [Source], sink: &mut Sink<'_>, limit: Duration) -> u64 {
    let end = Instant::now() + limit;
    loop {
        for s in sources.iter_mut() {
            let _ = s.fill();
        }
        forward(sources, sink);
        let drained = sources.iter().all(|s| s.at_eof() || !readable(s));
        if !pending(sources, sink) && drained {
            break;
        }
        let now = Instant::now();
        if now >= end {
            break;
        }
        if pending(sources, sink) {
            writable(sink.fd(), (end - now).min(Duration::from_millis(50)));
        }
    }
    sources
        .iter()
        .map(|s| s.spool.dropped() + s.spool.unsent() - s.spool.gap)
        .sum()
}

fn readable(source: &Source) -> bool {
    let Some(fd) = source.fd() else { return false };
    let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::IN)];
    matches!(rustix::event::poll(&mut fds, Some(&timespec(Duration::ZERO))), Ok(n) if n > 0)
}

/// Whether `fd` is writable within `wait` (errors and hang-ups count as writable, so the
/// write that follows reports them).
fn writable(fd: BorrowedFd<'_>, wait: Duration) -> bool {
    let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::OUT)];
    matches!(rustix::event::poll(&mut fds, Some(&timespec(wait))), Ok(n) if n > 0)
}

/// `d` as a poll timeout.
#[must_use]
pub fn timespec(d: Duration) -> Timespec {
    Timespec {
        tv_sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(d.subsec_nanos()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain_all(spool: &mut Spool) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let chunk = spool.front().to_vec();
            if chunk.is_empty() {
                return out;
            }
            spool.consume(chunk.len());
            out.extend_from_slice(&chunk);
        }
    }

    #[test]
    fn a_spool_within_its_bounds_keeps_every_byte_in_order() {
        let mut s = Spool::new("stdout");
        let data: Vec<u8> = (0..HEAD_BYTES + TAIL_BYTES)
            .map(|i| (i % 251) as u8)
            .collect();
        for chunk in data.chunks(10_000) {
            s.push(chunk);
        }
        assert_eq!(s.dropped(), 0);
        assert_eq!(drain_all(&mut s), data);
        assert!(s.is_empty());
    }

    #[test]
    fn an_overfull_spool_keeps_head_and_tail_and_names_the_gap() {
        let mut s = Spool::new("stdout");
        let total = HEAD_BYTES + TAIL_BYTES + 12_345;
        let data: Vec<u8> = (0..total).map(|i| (i % 253) as u8).collect();
        for chunk in data.chunks(7_777) {
            s.push(chunk);
            assert!(s.held() <= HEAD_BYTES + TAIL_BYTES);
        }
        assert_eq!(s.dropped(), 12_345);
        let mut expected = data[..HEAD_BYTES].to_vec();
        expected.extend(marker("stdout", 12_345));
        expected.extend_from_slice(&data[HEAD_BYTES + 12_345..]);
        assert_eq!(drain_all(&mut s), expected);
    }

    #[test]
    fn one_huge_push_is_bounded_too() {
        let mut s = Spool::new("stderr");
        let data = vec![7u8; 5 * (HEAD_BYTES + TAIL_BYTES)];
        s.push(&data);
        assert_eq!(s.held(), HEAD_BYTES + TAIL_BYTES);
        assert_eq!(s.dropped(), (data.len() - HEAD_BYTES - TAIL_BYTES) as u64);
    }

    #[test]
    fn forwarding_to_a_pipe_nobody_reads_never_blocks() {
        let (read, write) = rustix::pipe::pipe().expect("pipe");
        let mut sink = Sink::new(write.as_fd());
        let (cmd_read, cmd_write) = rustix::pipe::pipe().expect("pipe");
        let mut sources = [Source::new("stdout", cmd_read).expect("source")];
        let chunk = vec![b'y'; 60_000];
        for _ in 0..100 {
            rustix::io::write(&cmd_write, &chunk).expect("write");
            sources[0].fill().expect("fill");
            forward(&mut sources, &mut sink);
        }
        assert!(sources[0].spool.held() <= HEAD_BYTES + TAIL_BYTES);
        drop(cmd_write);
        let dropped = finish(&mut sources, &mut sink, Duration::from_millis(100));
        assert!(dropped > 0);
        drop(read);
    }
}
