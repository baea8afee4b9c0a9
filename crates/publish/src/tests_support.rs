//! What the writers' tests share: a worktree root with an outside directory beside it, a
//! snapshot of everything under both (bytes, mode, inode, link target), directory
//! listings, and this test binary run again as a child process.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use super::PublishError;

/// A temporary directory holding `root/` (the worktree, opened as the writers get it) and
/// `outside/` (what must never be touched).
pub(super) struct Tree {
    outer: tempfile::TempDir,
    pub(super) fd: OwnedFd,
}

impl Tree {
    pub(super) fn new() -> Self {
        let outer = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(outer.path().join("root")).expect("mkdir root");
        std::fs::create_dir(outer.path().join("outside")).expect("mkdir outside");
        std::fs::write(outer.path().join("outside/kept.txt"), b"outside\n").expect("write");
        let fd = open_dir(&outer.path().join("root"));
        Self { outer, fd }
    }

    /// `rel` beneath the root.
    pub(super) fn at(&self, rel: &str) -> PathBuf {
        self.outer.path().join("root").join(rel)
    }

    pub(super) fn outside(&self) -> PathBuf {
        self.outer.path().join("outside")
    }

    pub(super) fn write(&self, rel: &str, bytes: &[u8]) {
        let path = self.at(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, bytes).expect("write");
    }

    /// Every entry under the root and the outside directory.
    pub(super) fn snapshot(&self) -> BTreeMap<PathBuf, Entry> {
        let mut entries = BTreeMap::new();
        collect(self.outer.path(), self.outer.path(), &mut entries);
        entries
    }
}

/// One entry of a [`Tree::snapshot`].
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Entry {
    File { mode: u32, ino: u64, bytes: Vec<u8> },
    Dir { mode: u32, ino: u64 },
    Link { ino: u64, target: PathBuf },
}

fn collect(base: &Path, dir: &Path, into: &mut BTreeMap<PathBuf, Entry>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        let meta = std::fs::symlink_metadata(&path).expect("lstat");
        let (mode, ino) = (meta.permissions().mode(), meta.ino());
        let rel = path.strip_prefix(base).expect("beneath").to_path_buf();
        let found = if meta.file_type().is_symlink() {
            Entry::Link {
                ino,
                target: std::fs::read_link(&path).expect("readlink"),
            }
        } else if meta.is_dir() {
            collect(base, &path, into);
            Entry::Dir { mode, ino }
        } else {
            Entry::File {
                mode,
                ino,
                bytes: std::fs::read(&path).expect("read"),
            }
        };
        into.insert(rel, found);
    }
}

pub(super) fn open_dir(path: &Path) -> OwnedFd {
    rustix::fs::open(
        path,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .expect("open directory")
}

fn open_dir_or_file(path: &Path) -> OwnedFd {
    rustix::fs::open(
        path,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .expect("open")
}

/// The sorted names in `dir`.
pub(super) fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

pub(super) fn mode_of(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).expect("lstat").mode() & 0o7777
}

/// What [`plant_temporaries`] left in a directory `d` of the tree: the names the sweep must
/// remove, and those it must keep.
pub(super) struct Planted {
    /// Recorded in the journal by a writer that is gone, and still the recorded inode.
    pub(super) proven: Vec<String>,
    /// Everything else: a dead pid's name with no entry (committed content, say), a
    /// recorded name whose file was replaced by another inode, one whose writer still holds
    /// its entry, and a file that is no temporary, named by a forged entry.
    pub(super) kept: Vec<String>,
}

/// Plants, in `rel_dir` of `tree` (which gets a `.git` directory, so it has a journal),
/// temporaries of every kind [`Planted`] names. The live entry stays held until `hold` is
/// dropped by the caller.
pub(super) fn plant_temporaries(tree: &Tree, rel_dir: &str) -> (Planted, OwnedFd) {
    std::fs::create_dir_all(tree.at(".git")).expect("mkdir .git");
    let journal = super::journal::Journal::open(&tree.fd).expect("a journal");
    let dir = tree.at(rel_dir);
    let mut gone = Command::new("true").spawn().expect("spawn true");
    let gone_pid = gone.id();
    gone.wait().expect("wait");
    let name_only = format!(".old.txt.satyrn-{gone_pid}-00000000ab.tmp");
    std::fs::write(dir.join(&name_only), b"committed content\n").expect("plant");
    let plant = |name: &str, replace_after: bool| {
        let path = dir.join(name);
        std::fs::write(&path, b"left by a killed publish\n").expect("plant");
        let file = open_dir_or_file(&path);
        let (dev, id) = super::journal::FileId::of(&file, None).expect("statx");
        let record = journal
            .record(&format!("{rel_dir}/{name}"), dev, &[id])
            .expect("record");
        if replace_after {
            std::fs::remove_file(&path).expect("rm");
            std::fs::write(&path, b"someone else's file\n").expect("replace");
        }
        record
    };
    let proven = format!(".old.txt.satyrn-{gone_pid}-00000000cd.tmp");
    let replaced = format!(".old.txt.satyrn-{gone_pid}-00000000ef.tmp");
    let live = format!(".old.txt.satyrn-{}-0000000012.tmp", std::process::id());
    // An entry naming a file that is no temporary (forged: it proves nothing).
    let forged = "keep.txt".to_owned();
    // A killed writer: its lock is released, its entry stays.
    for record in [
        plant(&proven, false),
        plant(&replaced, true),
        plant(&forged, false),
    ] {
        record.abandon();
    }
    let held = plant(&live, false);
    let hold = held.hand_over();
    (
        Planted {
            proven: vec![proven],
            kept: vec![name_only, replaced, live, forged],
        },
        hold,
    )
}

/// The one word a child prints per outcome.
pub(super) fn outcome_word(outcome: &Result<(), PublishError>) -> &'static str {
    match outcome {
        Ok(()) => "ok",
        Err(PublishError::Exists(_)) => "exists",
        Err(PublishError::Stale(_)) => "stale",
        Err(PublishError::Failed(_) | PublishError::Io { .. }) => "failed",
    }
}

/// The prefix of the lines a child reports on; the test harness prints other lines.
pub(super) const REPORT: &str = "satyrn-child ";

/// This test binary running only the test `test` (its full path, e.g.
/// `tests_create::child_process_entry`), with `envs` added; stdin piped, stdout and stderr
/// into one pipe. Never the parent's stderr: a child under a file-size limit would die of
/// SIGXFSZ writing to it when it is a file already longer than the limit (a test run whose
/// output goes to a log).
pub(super) struct SelfChild {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<std::fs::File>,
}

impl SelfChild {
    pub(super) fn spawn(test: &str, envs: &[(&str, String)]) -> Self {
        let (reader, writer) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).expect("pipe");
        let mut child = Command::new(std::env::current_exe().expect("current exe"))
            .args(["--exact", test, "--nocapture", "--test-threads=1", "-q"])
            .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::piped())
            .stdout(writer.try_clone().expect("dup the pipe"))
            .stderr(writer)
            .spawn()
            .expect("spawn the test binary");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(std::fs::File::from(reader));
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// Lets the child go on (one byte on its stdin).
    pub(super) fn go(&mut self) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(b"g").expect("write to child");
        stdin.flush().expect("flush");
    }

    /// The child's next report line (without the prefix); panics when it ended instead.
    pub(super) fn report(&mut self) -> String {
        self.try_report()
            .expect("the child ended without reporting")
    }

    /// The child's next report line, or `None` when it ended first.
    pub(super) fn try_report(&mut self) -> Option<String> {
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line).expect("read child") == 0 {
                return None;
            }
            if let Some(report) = line.strip_prefix(REPORT) {
                return Some(report.trim_end().to_owned());
            }
        }
    }

    /// Sends `signal` to the child.
    pub(super) fn signal(&self, signal: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(
            i32::try_from(self.child.id()).expect("pid fits a pid_t"),
        )
        .expect("a child's pid is positive");
        rustix::process::kill_process(pid, signal).expect("kill");
    }

    /// Waits for the child, whatever its end.
    pub(super) fn wait(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let mut rest = String::new();
        while self.stdout.read_line(&mut rest).expect("read child") > 0 {}
        self.child.wait().expect("wait")
    }

    /// Waits for the child; panics unless its test passed.
    pub(super) fn finish(mut self) {
        drop(self.stdin.take());
        let mut rest = String::new();
        while self.stdout.read_line(&mut rest).expect("read child") > 0 {}
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "child failed: {status}; output: {rest}");
    }
}

/// In a child: waits for the parent's go-ahead; `false` when the parent closed stdin.
pub(super) fn wait_for_go() -> bool {
    let mut byte = [0u8; 1];
    matches!(std::io::Read::read(&mut std::io::stdin(), &mut byte), Ok(1))
}

/// In a child: reports one line to the parent.
pub(super) fn report(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{REPORT}{line}").expect("report");
    out.flush().expect("flush");
}

/// Plants every kind of temporary in `d` ([`plant_temporaries`]), runs `writer` (a create,
/// a delete), and checks that it removed what the journal proves and nothing else, byte for
/// byte, leaving `d` as `kept` plus `also` (what the writer itself left there); then that
/// the once-live writer's file goes with the next sweep, and a replaced one never.
pub(super) fn assert_sweeps_only_what_the_journal_proves(
    tree: &Tree,
    also: Option<&str>,
    writer: impl FnOnce(),
) {
    let (planted, hold) = plant_temporaries(tree, "d");
    let at = |name: &str| tree.at("d").join(name);
    let kept_bytes: Vec<Vec<u8>> = planted
        .kept
        .iter()
        .map(|n| std::fs::read(at(n)).expect("read"))
        .collect();
    writer();
    let mut expected = planted.kept.clone();
    expected.extend(also.map(str::to_owned));
    expected.sort();
    assert_eq!(names(&tree.at("d")), expected);
    for name in &planted.proven {
        assert!(!at(name).exists(), "{name} was proven, yet kept");
    }
    for (name, bytes) in planted.kept.iter().zip(&kept_bytes) {
        assert_eq!(&std::fs::read(at(name)).expect("read"), bytes, "{name}");
    }
    // The live writer ends: its entry is kept by nobody, and the next sweep removes its file.
    // (Polled: a child another test forks may hold the lock's descriptor until it execs.)
    drop(hold);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while super::sweep(&tree.fd).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the once-live one was never swept"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!at(&planted.kept[2]).exists());
    assert!(
        at(&planted.kept[1]).exists(),
        "a replaced file is never removed"
    );
}
