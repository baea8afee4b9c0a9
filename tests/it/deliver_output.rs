//! `deliver`'s forwarding of the command's output: the deadline holds and memory and disk
//! stay bounded whatever the reader of `deliver`'s stderr does (a real pipe nobody reads, a
//! real `yes`), and what was dropped is named.

use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;

use std::time::{Duration, Instant};

use crate::deliver_support::*;
use crate::support::ContractFile;

/// Disk blocks used under `dir` (bytes), tolerating entries that vanish meanwhile.
fn disk_usage(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            total += meta.blocks() * 512;
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    total
}

/// The peak resident set (bytes) of a running process so far, from `/proc/PID/status`.
fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

const MEMORY_BOUND: u64 = 64 << 20;
const DISK_BOUND: u64 = 16 << 20;

#[test]
fn a_stalled_stderr_reader_cannot_hold_the_deadline_or_grow_the_spool() {
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let tmp = tempfile::tempdir().expect("tempdir");
    let marks = tempfile::tempdir().expect("tempdir");
    let pidfile = marks.path().join("pid");
    let contract = ContractFile::any("flood");
    let script = format!("echo $$ > '{}'; exec yes", pidfile.display());
    let argv = [OsStr::new("sh"), OsStr::new("-c"), OsStr::new(&script)];
    // The read end is held open and never read: deliver's stderr fills and stays full.
    let (stalled_reader, writer) = std::io::pipe().expect("pipe");
    let t0 = Instant::now();
    let mut child = deliver_cmd(&root, &contract.path, &["--timeout", "2"], &argv)
        .env("TMPDIR", tmp.path())
        .stderr(writer)
        .spawn()
        .expect("spawn deliver");
    let (mut memory, mut disk) = (0, 0);
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        memory = memory.max(peak_rss(child.id()).unwrap_or(0));
        disk = disk.max(disk_usage(tmp.path()));
        if disk > DISK_BOUND || memory > MEMORY_BOUND || t0.elapsed() > Duration::from_secs(60) {
            kill_tree(&mut child);
            panic!(
                "deliver unbounded: after {:?}, temporary usage {disk} B, peak memory {memory} B",
                t0.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let run = finish(child.wait_with_output().expect("wait"), t0.elapsed());
    assert_eq!(run.code(), "COMMAND_TIMEOUT", "{}", run.stdout);
    assert_eq!(run.status, 8);
    assert_eq!(run.receipt["signal"], libc::SIGTERM);
    let pgid = read_pid(&pidfile);
    assert!(
        poll_until(Duration::from_secs(5), || !group_alive(pgid)),
        "the command's group outlived deliver"
    );
    assert!(
        disk <= DISK_BOUND && memory <= MEMORY_BOUND,
        "{disk} {memory}"
    );
    eprintln!(
        "stalled reader: ended after {:?}, peak temporary usage {disk} B, peak deliver memory {memory} B",
        run.elapsed
    );
    before.assert_unchanged(&root, None);
    assert!(crate::support::dir_entries(tmp.path()).is_empty());
    drop(stalled_reader);
    sibling_success(&root, "flood");
}

#[test]
fn a_late_reader_gets_the_head_and_tail_and_the_count_of_what_was_dropped() {
    const TOTAL: usize = 5 << 20;
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let marks = tempfile::tempdir().expect("tempdir");
    let done = marks.path().join("done");
    let contract = ContractFile::any("late-reader");
    let script = format!(
        "head -c {TOTAL} /dev/zero | tr '\\0' o; echo x > a.txt; touch '{}'; sleep 0.5",
        done.display()
    );
    let argv = [OsStr::new("sh"), OsStr::new("-c"), OsStr::new(&script)];
    let (mut reader, writer) = std::io::pipe().expect("pipe");
    let child = deliver_cmd(&root, &contract.path, &[], &argv)
        .stderr(writer)
        .spawn()
        .expect("spawn deliver");
    // Nobody reads until the command has written everything.
    assert!(
        poll_until(Duration::from_secs(60), || done.exists()),
        "the command never finished writing"
    );
    let mut forwarded = Vec::new();
    reader.read_to_end(&mut forwarded).expect("read stderr");
    let out = child.wait_with_output().expect("wait");
    let run = finish(out, Duration::ZERO);
    assert_eq!(run.code(), "OK", "{}", run.stdout);
    let text = String::from_utf8(forwarded).expect("utf-8");
    let prefix = "\n[satyrn-host deliver: ";
    assert_eq!(text.matches(prefix).count(), 1, "one marker expected");
    let at = text.find(prefix).expect("marker");
    let dropped: usize = text[at + prefix.len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("dropped count");
    assert!(text[at..].contains("bytes of the command's stdout were dropped here"));
    let (head, tail) = (
        &text[..at],
        &text[at + 1 + text[at + 1..].find('\n').expect("end") + 1..],
    );
    assert!(
        head.bytes().all(|b| b == b'o') && head.len() >= 1 << 20,
        "the first MiB"
    );
    assert!(
        tail.bytes().all(|b| b == b'o'),
        "only the command's bytes after the marker"
    );
    assert_eq!(tail.len(), 1 << 20, "the last 1 MiB is kept");
    assert!(dropped > 0, "something was dropped");
    assert_eq!(
        head.len() + tail.len() + dropped,
        TOTAL,
        "every byte is kept or counted"
    );
}

#[test]
fn a_terminal_nobody_reads_cannot_hold_the_deadline_either() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let repo = FixedRepo::with_files(&[("a.txt", b"a\n")]);
    let root = repo.path();
    let before = Caller::capture(&root);
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty with valid out-pointers and no name, termios or window size.
    let rc = unsafe {
        libc::openpty(
            &raw mut master,
            &raw mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: openpty returned two fresh descriptors that nothing else owns.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let contract = ContractFile::any("tty-flood");
    let argv = [OsStr::new("yes")];
    let t0 = Instant::now();
    let child = deliver_cmd(&root, &contract.path, &["--timeout", "2"], &argv)
        .stderr(std::process::Stdio::from(slave))
        .spawn()
        .expect("spawn deliver");
    // A deliver held by the terminal nobody reads is killed after a minute and fails.
    let run = wait_ended(child, Duration::from_secs(60), t0);
    assert_eq!(run.code(), "COMMAND_TIMEOUT", "{}", run.stdout);
    before.assert_unchanged(&root, None);
    drop(master);
    sibling_success(&root, "tty-flood");
}
