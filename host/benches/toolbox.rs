//! `search` and `list` over a generated 20 000-file tree of about 100 MB, against the
//! native tools in the same run: `git grep -F` and ripgrep (`rg -F`) for a literal search,
//! `git ls-files` and `find` for the listing.
//!
//! Run: `cargo bench -p satyrn-host --bench toolbox` (release binary; ripgrep from Debian's
//! `ripgrep`, installed by `scripts/setup.sh`). Prints the median of each over a few rounds
//! (warm page cache) and the ratios (goal: `search` ≤ 3× `git grep -F`). `satyrn in-process`
//! is one call of the operation layer with the engine already loaded (what an MCP session
//! pays); `satyrn protocol` is a whole `satyrn-host protocol` process (what Pi pays).

mod common;

/// One line of the report on stdout (the workspace denies `println!`).
macro_rules! say {
    ($($arg:tt)*) => {
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    };
}

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use satyrn_engine::{Instances, Loaded};
use satyrn_operation::{self as operation, ListArgs, Scope, SearchArgs};

const FILES: usize = 20_000;
const FILE_BYTES: usize = 5_000;
const ROUNDS: usize = 5;
/// Every 2000th file holds the needle once: ten matches in the whole tree, so every
/// tool reads everything.
const NEEDLE: &str = "satyrn_needle_4711";

fn build_tree(repo: &Path) {
    common::git_init(repo);
    let line = "let value = compute(alpha, beta, gamma); // filler text for the bench\n";
    let filler: String = line.repeat(FILE_BYTES / line.len() + 1)[..FILE_BYTES].to_string();
    for i in 0..FILES {
        let dir = repo.join(format!("src/m{:02}/d{:02}", i % 40, (i / 40) % 25));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let mut text = filler.clone();
        if i % 2000 == 0 {
            text.push_str(NEEDLE);
            text.push('\n');
        }
        std::fs::write(dir.join(format!("f{i:05}.rs")), text).expect("write");
    }
    common::ok(common::git(repo).args(["add", "-A"]));
    common::ok(common::git(repo).args(["commit", "-q", "-m", "tree"]));
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time(mut run: impl FnMut()) -> Duration {
    let samples = (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            run();
            started.elapsed()
        })
        .collect();
    median(samples)
}

fn native(program: &str, args: &[&str], dir: &Path) -> Option<Duration> {
    let probe = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        say!("{program}: not installed (bash scripts/setup.sh installs it)");
        return None;
    }
    Some(time(|| {
        let out = Command::new(program)
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::piped())
            .output()
            .expect("run");
        assert!(!out.stdout.is_empty(), "{program} found nothing");
    }))
}

fn host() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_satyrn-host"))
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    let started = Instant::now();
    build_tree(&repo);
    say!(
        "tree: {FILES} files of {FILE_BYTES} bytes ({} MB) in {:.1} s",
        FILES * FILE_BYTES / 1_000_000,
        started.elapsed().as_secs_f64()
    );
    let contract = dir.path().join("contract.yaml");
    std::fs::write(
        &contract,
        "id: bench\ntask: bench\nwritable_paths: ['src/*']\n",
    )
    .expect("contract");
    let (contract_doc, root) =
        satyrn_protocol::check(&repo, &contract).expect("contract and repository");
    let loaded = Loaded::new().expect("engine");
    let instances = Instances::new(&loaded, root.dir()).expect("instances");
    let scope = Scope {
        root: &root,
        contract: &contract_doc,
        loaded: &loaded,
        instances: &instances,
    };

    let search_args = SearchArgs {
        query: NEEDLE.to_string(),
        ..SearchArgs::default()
    };
    let found = operation::search(scope, &search_args).expect("search");
    assert_eq!(found.files.len(), FILES / 2000, "every needle found");
    assert!(found.next_cursor.is_none(), "one page covers the tree");
    let in_process = time(|| {
        operation::search(scope, &search_args).expect("search");
    });
    let request = serde_json::json!({
        "version": 1, "operation": "search", "repo": repo, "contract": contract, "query": NEEDLE,
    })
    .to_string();
    let by_protocol = time(|| {
        common::time_protocol(&host(), &request);
    });
    let git_grep = native("git", &["grep", "-F", "-n", NEEDLE], &repo);
    let rg = native("rg", &["-F", "-n", NEEDLE], &repo);
    say!("\nsearch for a literal (median of {ROUNDS}):");
    say!("  satyrn in-process   {:>8.1} ms", ms(in_process));
    say!("  satyrn protocol     {:>8.1} ms", ms(by_protocol));
    for (name, baseline) in [("git grep -F", git_grep), ("rg -F", rg)] {
        if let Some(b) = baseline {
            say!(
                "  {name:<19} {:>8.1} ms   satyrn in-process {:.2}x, protocol {:.2}x",
                ms(b),
                ratio(in_process, b),
                ratio(by_protocol, b)
            );
        }
    }

    let list_all = || {
        let mut cursor = None;
        let mut entries = 0;
        loop {
            let page = operation::list(
                scope,
                &ListArgs {
                    recursive: true,
                    cursor: cursor.take(),
                    ..ListArgs::default()
                },
            )
            .expect("list");
            entries += page.entries.len();
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => return entries,
            }
        }
    };
    assert_eq!(
        list_all(),
        FILES + 40 + 40 * 25 + 1,
        "files and directories"
    );
    let listing = time(|| {
        list_all();
    });
    let ls_files = native("git", &["ls-files"], &repo);
    let find = native("find", &["src"], &repo);
    say!("\nlist the whole tree, 1000 entries per page (median of {ROUNDS}):");
    say!("  satyrn in-process   {:>8.1} ms", ms(listing));
    for (name, baseline) in [("git ls-files", ls_files), ("find", find)] {
        if let Some(b) = baseline {
            say!(
                "  {name:<19} {:>8.1} ms   satyrn {:.2}x",
                ms(b),
                ratio(listing, b)
            );
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}
