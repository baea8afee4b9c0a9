//! Real edits replayed: the first 3,000 modifications of text files in this repository's own
//! history (or another's: `--repo PATH`) (from its root commit; each a file's old and new blob), each turned into one exact
//! `replace` (the changed lines with as much context as makes them unique) and applied as an
//! MCP `edit` with the explicit revision in one long-lived session, against a native
//! in-process apply with the same checks and durability (read, SHA-256 of the bytes compared
//! with the revision, the text found exactly once, the splice, a temporary written and
//! fsynced, renamed, the directory fsynced), interleaved change by change in the same run.
//!
//! Run: `cargo bench -p satyrn-host --bench replay [-- --runs N] [--repo PATH]` (N changes, default 3000,
//! or all the history holds when fewer: about 1,400 at 387 commits; the checkout needs its
//! history, and a shallow clone with under 100 changes is refused by name). Goal: MCP
//! `edit` ≤ 1.5× the native apply (p50 per change).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

/// The largest blob replayed (either side).
const MAX_BYTES: usize = 256 * 1024;

/// One change: the file before and after, and the one `replace` that makes it.
struct Change {
    old: String,
    new: String,
    old_text: String,
    new_text: String,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let wanted = common::runs_arg(&args, 3000);
    let mut out = std::io::stdout().lock();
    let source = args
        .iter()
        .position(|a| a == "--repo")
        .and_then(|i| args.get(i + 1))
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
            std::path::PathBuf::from,
        );
    let changes = history(&source, wanted);
    assert!(
        changes.len() >= 100,
        "the history of {} holds only {} replayable changes (a shallow clone?)",
        source.display(),
        changes.len()
    );
    if changes.len() < wanted {
        let _ = writeln!(
            out,
            "the history holds {} replayable changes of the {wanted} asked for: all of them are replayed",
            changes.len()
        );
    }
    let bytes: usize = changes.iter().map(|c| c.old.len()).sum();
    let _ = writeln!(
        out,
        "{} changes from the history of {}, files of {} bytes on average",
        changes.len(),
        source.display(),
        bytes / changes.len()
    );

    let host = Path::new(env!("CARGO_BIN_EXE_satyrn-host"));
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    common::git_init(&repo);
    std::fs::create_dir(repo.join("native")).expect("mkdir");
    let contract = tmp.path().join("contract.yaml");
    std::fs::write(
        &contract,
        "id: replay\ntask: replay\nwritable_paths: ['replay.txt']\n",
    )
    .expect("contract");
    let mut session = common::McpSession::start(host, &repo, &contract);
    let (mut mcp, mut native) = (Vec::new(), Vec::new());
    let file = repo.join("replay.txt");
    let native_file = repo.join("native/replay.txt");
    for change in &changes {
        std::fs::write(&file, &change.old).expect("set up");
        let expected = common::sha256_hex(change.old.as_bytes());
        let started = Instant::now();
        let edited = session.call(
            "edit",
            json!({"path": "replay.txt", "expected_sha256": expected,
                   "edits": [{"op": "replace", "old_text": change.old_text, "new_text": change.new_text}]}),
        );
        mcp.push(started.elapsed());
        assert_eq!(
            edited["sha256"],
            common::sha256_hex(change.new.as_bytes()),
            "the replayed edit did not make the new blob"
        );

        std::fs::write(&native_file, &change.old).expect("set up");
        native.push(native_apply(&native_file, &expected, change));
        assert_eq!(
            std::fs::read(&native_file).expect("read"),
            change.new.as_bytes()
        );
    }
    drop(session.stdin);
    let _ = session.child.wait();

    let row = |what: &str, samples: &[Duration]| {
        let (p50, p95) = common::percentiles(samples);
        let total: Duration = samples.iter().sum();
        format!(
            "| {what} | {} | {} | {:.2} s |",
            common::ms(p50),
            common::ms(p95),
            total.as_secs_f64()
        )
    };
    let _ = writeln!(
        out,
        "\n| per change | p50 | p95 | total |\n|---|---|---|---|"
    );
    let _ = writeln!(
        out,
        "{}",
        row("MCP `edit` with the explicit revision", &mcp)
    );
    let _ = writeln!(
        out,
        "{}",
        row(
            "native apply: read, hash, find once, splice, write + fsync, rename, directory fsync",
            &native
        )
    );
    let p50 = |s: &[Duration]| common::percentiles(s).0.as_secs_f64();
    let _ = writeln!(
        out,
        "\nMCP edit / native apply (p50): {:.2}× (goal ≤ 1.5×)",
        p50(&mcp) / p50(&native)
    );
}

/// The native apply of `change` to `file`, with the checks satyrn makes and its durability.
fn native_apply(file: &Path, expected: &str, change: &Change) -> Duration {
    let started = Instant::now();
    let bytes = std::fs::read(file).expect("read");
    assert_eq!(common::sha256_hex(&bytes), expected, "stale");
    let text = std::str::from_utf8(&bytes).expect("utf-8");
    let mut found = text.match_indices(change.old_text.as_str());
    let (at, _) = found.next().expect("the text occurs");
    assert!(found.next().is_none(), "the text occurs once");
    let mut next = String::with_capacity(text.len() + change.new_text.len());
    next.push_str(&text[..at]);
    next.push_str(&change.new_text);
    next.push_str(&text[at + change.old_text.len()..]);
    common::write_atomically(file, next.as_bytes());
    started.elapsed()
}

/// The first `wanted` replayable modifications in `repo`'s history, oldest first: a regular
/// file's blob replaced by another, both UTF-8 text without NUL of at most [`MAX_BYTES`].
fn history(repo: &Path, wanted: usize) -> Vec<Change> {
    let log = common::git(repo)
        .args([
            "log",
            "--reverse",
            "--raw",
            "--no-renames",
            "--no-abbrev",
            "--format=",
            "HEAD",
        ])
        .output()
        .expect("git log");
    assert!(log.status.success(), "git log failed in {}", repo.display());
    let mut pairs = Vec::new();
    for line in String::from_utf8_lossy(&log.stdout).lines() {
        // :100644 100644 <old> <new> M\t<path>
        let Some((meta, _path)) = line.split_once('\t') else {
            continue;
        };
        let fields: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        if let [old_mode, new_mode, old, new, "M"] = fields[..]
            && old_mode == "100644"
            && new_mode == "100644"
        {
            pairs.push((old.to_owned(), new.to_owned()));
        }
    }
    let mut batch = common::git(repo)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("git cat-file");
    let mut input = batch.stdin.take().expect("stdin");
    let mut output = BufReader::new(batch.stdout.take().expect("stdout"));
    let mut blob = |id: &str| -> Option<String> {
        writeln!(input, "{id}").expect("ask");
        input.flush().expect("flush");
        let mut header = String::new();
        output.read_line(&mut header).expect("header");
        let size: usize = header.split(' ').nth(2)?.trim().parse().ok()?;
        let mut bytes = vec![0; size + 1];
        output.read_exact(&mut bytes).expect("blob");
        bytes.pop();
        (size <= MAX_BYTES && !bytes.contains(&0))
            .then(|| String::from_utf8(bytes).ok())
            .flatten()
    };
    let mut changes = Vec::new();
    for (old, new) in pairs {
        if changes.len() == wanted {
            break;
        }
        let (Some(old), Some(new)) = (blob(&old), blob(&new)) else {
            continue;
        };
        if old.is_empty() || old == new {
            continue;
        }
        let (old_text, new_text) = one_replace(&old, &new);
        changes.push(Change {
            old,
            new,
            old_text,
            new_text,
        });
    }
    drop(input);
    let _ = batch.wait();
    changes
}

/// The one exact replacement that turns `old` into `new`: the lines that differ, widened by
/// context lines on both sides until the old text occurs exactly once.
fn one_replace(old: &str, new: &str) -> (String, String) {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let room = a.len().min(b.len()) - prefix;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(room)
        .take_while(|(x, y)| x == y)
        .count();
    let mut context = 1;
    loop {
        let start = prefix.saturating_sub(context);
        let tail = suffix.saturating_sub(context);
        let old_text: String = a[start..a.len() - tail].concat();
        let new_text: String = b[start..b.len() - tail].concat();
        if !old_text.is_empty() && old.matches(old_text.as_str()).count() == 1 {
            return (old_text, new_text);
        }
        context *= 2;
    }
}
