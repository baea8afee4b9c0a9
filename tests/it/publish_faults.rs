//! The publish step under real system-call failures (`faults.rs`): a failing disk, a file
//! system without `O_TMPFILE`, `RENAME_EXCHANGE` or `RENAME_NOREPLACE`. A failure is
//! `MUTATION_FAILED` with the whole tree unchanged (bytes, modes, inodes, entries) and no
//! temporary; a missing feature takes its fallback and succeeds. Each case runs beside its
//! sibling without the fault.

use std::path::Path;

use serde_json::{Value, json};

use crate::faults::{Fault, inject};
use crate::protocol_common::{assert_failure, is_temporary, temporaries};
use crate::support::{ContractFile, ProtocolRun, Repo, protocol_with, sha256_hex, tree_state};

const OLD: &[u8] = b"fn answer() -> u32 {\n    41\n}\n";

struct Tree {
    repo: Repo,
    contract: ContractFile,
}

impl Tree {
    fn new() -> Self {
        let repo = Repo::with_files(&[("src/lib.rs", OLD), ("src/old.rs", b"// old\n")]);
        let contract = ContractFile::new("faults", &["src/**"]);
        Self { repo, contract }
    }

    fn root(&self) -> &Path {
        self.repo.path()
    }

    fn request(&self, op: &Op) -> Value {
        let mut request = json!({
            "version": 1,
            "repo": self.root(),
            "contract": self.contract.path,
        });
        let fields = match op {
            Op::Replace => json!({"operation": "replace", "path": "src/lib.rs",
                "expected_sha256": sha256_hex(OLD), "old_text": "41", "new_text": "42"}),
            Op::Overwrite => json!({"operation": "write", "path": "src/lib.rs",
                "expected_sha256": sha256_hex(OLD), "content": "new\n"}),
            Op::Create => json!({"operation": "write", "path": "src/new/fresh.rs",
                "expected_sha256": null, "content": "fresh\n"}),
            Op::Delete => json!({"operation": "delete", "path": "src/old.rs",
                "expected_sha256": sha256_hex(b"// old\n")}),
        };
        for (k, v) in fields.as_object().expect("object") {
            request[k] = v.clone();
        }
        request
    }

    fn run(&self, op: &Op, faults: &[Fault]) -> ProtocolRun {
        protocol_with(self.request(op).to_string().as_bytes(), |cmd| {
            inject(cmd, faults);
        })
    }
}

#[derive(Debug)]
enum Op {
    Replace,
    Overwrite,
    Create,
    Delete,
}

/// `renameat2`'s flags argument, `openat`'s flags, and the bit of `O_TMPFILE` that is not
/// `O_DIRECTORY`.
const RENAME_FLAGS: usize = 4;
const OPEN_FLAGS: usize = 2;
const RENAME_NOREPLACE: u32 = 1;
const RENAME_EXCHANGE: u32 = 2;
const O_TMPFILE_BIT: u32 = 0x0040_0000;

const ALL: [Op; 4] = [Op::Replace, Op::Overwrite, Op::Create, Op::Delete];

impl Op {
    /// The path the operation changes.
    fn path(&self) -> &'static str {
        match self {
            Op::Replace | Op::Overwrite => "src/lib.rs",
            Op::Create => "src/new/fresh.rs",
            Op::Delete => "src/old.rs",
        }
    }

    /// What the path holds after a success (`None`: it is gone).
    fn after(&self) -> Option<&'static [u8]> {
        match self {
            Op::Replace => Some(b"fn answer() -> u32 {\n    42\n}\n"),
            Op::Overwrite => Some(b"new\n"),
            Op::Create => Some(b"fresh\n"),
            Op::Delete => None,
        }
    }
}

/// Asserts `run` succeeded and left the path as the operation says, with no temporary
/// anywhere in the tree.
fn assert_done(t: &Tree, op: &Op, run: &ProtocolRun, what: &str) {
    assert_eq!(
        (run.status, run.response["code"].as_str()),
        (0, Some("OK")),
        "{op:?} {what}: {}",
        run.stdout
    );
    let target = t.root().join(op.path());
    match op.after() {
        Some(bytes) => assert_eq!(std::fs::read(&target).expect("read"), bytes, "{op:?}"),
        None => assert!(!target.exists(), "{op:?} {what}: still there"),
    }
    assert_no_temporaries(t);
}

fn assert_no_temporaries(t: &Tree) {
    let names: Vec<String> = tree_state(t.root())
        .into_keys()
        .filter(|rel| rel.rsplit('/').next().is_some_and(is_temporary))
        .collect();
    assert!(names.is_empty(), "temporaries left: {names:?}");
}

/// A failing disk or a refused call at each step of every writer: `MUTATION_FAILED`
/// (exit 9) naming the step and the operating system's error, the whole tree unchanged
/// (bytes, modes, inodes, entries: no temporary, no new directory), and the same request
/// without the fault succeeds.
#[test]
fn a_failure_at_any_step_of_a_publish_changes_nothing_and_names_the_step() {
    use Op::{Create, Delete, Overwrite, Replace};
    let eio = "Input/output error";
    let cases: [(&[Op], Fault, &str); 11] = [
        (
            &[Replace, Overwrite, Create],
            Fault::with_flags(libc::SYS_openat, OPEN_FLAGS, O_TMPFILE_BIT, libc::EIO),
            "creating the temporary failed",
        ),
        (
            &[Delete],
            Fault::with_flags(
                libc::SYS_renameat2,
                RENAME_FLAGS,
                RENAME_NOREPLACE,
                libc::EIO,
            ),
            "renaming the target aside failed",
        ),
        (
            &[Replace, Overwrite],
            Fault::always(libc::SYS_fsync, libc::EIO),
            "syncing the temporary failed",
        ),
        (
            &[Create],
            Fault::always(libc::SYS_fsync, libc::EIO),
            "syncing the directory of `new` failed",
        ),
        (
            &[Replace, Overwrite, Create],
            Fault::always(libc::SYS_linkat, libc::EIO),
            "naming the temporary failed",
        ),
        (
            &[Replace, Overwrite, Create],
            Fault::always(libc::SYS_fchmod, libc::EPERM),
            "setting the mode failed: Operation not permitted",
        ),
        (
            &[Replace, Overwrite],
            Fault::with_flags(
                libc::SYS_renameat2,
                RENAME_FLAGS,
                RENAME_EXCHANGE,
                libc::EIO,
            ),
            "exchanging the temporary and the target failed",
        ),
        (
            &[Delete],
            Fault::always(libc::SYS_renameat2, libc::EIO),
            "renaming the target aside failed",
        ),
        (
            &[Delete],
            Fault::always(libc::SYS_unlinkat, libc::EIO),
            "unlinking the target failed",
        ),
        (
            &[Create],
            Fault::always(libc::SYS_mkdirat, libc::EIO),
            "creating directory `src` failed",
        ),
        (
            &[Replace, Overwrite, Create, Delete],
            Fault::always(libc::SYS_flock, libc::EIO),
            "cannot lock the worktree",
        ),
    ];
    for (ops, fault, step) in cases {
        for op in ops {
            let t = Tree::new();
            let before = tree_state(t.root());
            let run = t.run(op, &[fault]);
            assert_failure(&run, "MUTATION_FAILED", 9);
            let message = run.response["message"].as_str().expect("message");
            assert!(
                message.contains(op.path()) || step.starts_with("cannot lock"),
                "{message}"
            );
            assert!(message.contains(step), "{op:?}: {message}");
            let os_error = if fault.errno == libc::EPERM {
                "not permitted"
            } else {
                eio
            };
            assert!(message.contains(os_error), "{op:?}: {message}");
            // Where `unlinkat` itself fails, the journal entry of the name given aside
            // cannot be removed either: it stays, proving nothing left, until the next
            // call's sweep, which removes it.
            assert_eq!(
                without_journal(tree_state(t.root())),
                before,
                "{op:?} / {step}: the tree changed"
            );
            assert_done(&t, op, &t.run(op, &[]), "without the fault");
            let journal = t.root().join(".git/satyrn-temporaries");
            assert!(
                !journal.exists()
                    || std::fs::read_dir(&journal)
                        .expect("journal")
                        .next()
                        .is_none(),
                "{op:?} / {step}: a journal entry outlived the next call"
            );
        }
    }
}

/// A tree state without satyrn's own journal of temporaries (`.git/satyrn-temporaries`).
fn without_journal<V>(
    mut state: std::collections::BTreeMap<String, V>,
) -> std::collections::BTreeMap<String, V> {
    state.retain(|path, _| !path.starts_with(".git/satyrn-temporaries"));
    state
}

/// The component's own read of the worktree failing (`fstat` of the preopened directory
/// returns `EIO`): every writer is refused before it plans anything, with the WASI error's
/// words rather than a debug dump, and nothing changes.
#[test]
fn a_worktree_the_component_cannot_read_refuses_every_writer_in_plain_words() {
    for op in ALL {
        let t = Tree::new();
        let before = tree_state(t.root());
        let run = t.run(&op, &[Fault::always(libc::SYS_fstat, libc::EIO)]);
        assert_failure(&run, "MUTATION_FAILED", 9);
        let message = run.response["message"].as_str().expect("message");
        assert_eq!(
            message, "`src` cannot be read: I/O error, similar to `EIO` in POSIX",
            "{op:?}"
        );
        assert_eq!(tree_state(t.root()), before, "{op:?}: the tree changed");
        assert_done(&t, &op, &t.run(&op, &[]), "without the fault");
    }
}

/// A file system without `O_TMPFILE`, `RENAME_EXCHANGE` or `RENAME_NOREPLACE` (the kernel
/// answers `EOPNOTSUPP` or `EINVAL`, as such a file system does): every writer takes its
/// fallback and succeeds, and leaves no temporary. (The same three filters with `EIO` fail
/// the writers that use each feature, in the test above: the filters do hit.)
#[test]
fn a_file_system_without_tmpfile_exchange_or_noreplace_takes_the_fallbacks() {
    let no_tmpfile = Fault::with_flags(
        libc::SYS_openat,
        OPEN_FLAGS,
        O_TMPFILE_BIT,
        libc::EOPNOTSUPP,
    );
    let no_exchange = Fault::with_flags(
        libc::SYS_renameat2,
        RENAME_FLAGS,
        RENAME_EXCHANGE,
        libc::EINVAL,
    );
    let no_noreplace = Fault::with_flags(
        libc::SYS_renameat2,
        RENAME_FLAGS,
        RENAME_NOREPLACE,
        libc::EINVAL,
    );
    let lacks: [(&str, Vec<Fault>); 4] = [
        ("no O_TMPFILE", vec![no_tmpfile]),
        ("no RENAME_EXCHANGE", vec![no_exchange]),
        ("no RENAME_NOREPLACE", vec![no_noreplace]),
        (
            "none of the three",
            vec![no_tmpfile, no_exchange, no_noreplace],
        ),
    ];
    for (what, faults) in &lacks {
        for op in ALL {
            let t = Tree::new();
            let run = t.run(&op, faults);
            assert_done(&t, &op, &run, what);
        }
    }
}

/// After the commit point nothing is undone: the change stands, and what could not be
/// finished is said on stderr. A directory that cannot be synced after a delete; and the
/// displaced previous content of a replace that cannot be unlinked, which stays under a
/// temporary's name until the next writing call removes it (its owner is gone).
#[test]
fn a_failure_after_the_commit_point_keeps_the_change_and_says_what_is_left() {
    let t = Tree::new();
    let run = t.run(&Op::Delete, &[Fault::always(libc::SYS_fsync, libc::EIO)]);
    assert!(!t.root().join("src/old.rs").exists());
    assert_eq!(run.response["code"], "OK", "{}", run.stdout);
    assert!(
        run.stderr
            .contains("`src/old.rs` was deleted, but syncing its directory failed"),
        "{}",
        run.stderr
    );

    for op in [Op::Replace, Op::Overwrite] {
        let t = Tree::new();
        let run = t.run(&op, &[Fault::always(libc::SYS_unlinkat, libc::EIO)]);
        assert_eq!(run.response["code"], "OK", "{op:?}: {}", run.stdout);
        assert_eq!(
            std::fs::read(t.root().join(op.path())).expect("read"),
            op.after().expect("bytes")
        );
        assert!(
            run.stderr
                .contains("was published, but removing its previous content"),
            "{}",
            run.stderr
        );
        let left = temporaries(&t.root().join("src"));
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(
            std::fs::read(t.root().join("src").join(&left[0])).expect("read"),
            OLD,
            "the previous content is what stays"
        );
        // The next writing call in that directory removes it.
        let next = t.run(&Op::Delete, &[]);
        assert_eq!(next.response["code"], "OK", "{}", next.stdout);
        assert_no_temporaries(&t);
    }
}
