//! `satyrn-host confine`: the real kernel's Landlock holding a real shell to the contract,
//! the broker as the only writer, every refusal beside its sibling success, the files
//! proven unchanged (bytes, mode, inode).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::deliver_support::{Caller, FixedRepo, commit_all, deliver_cmd, finish};
use crate::support::{ContractFile, git_ok, host_bin, snapshot, tree_state, without_git_location};

/// A worktree with a declared file, a private file at the root and one in `src/`, an
/// ignored scratch path, and a caller's home with credential stores.
pub(crate) struct Fixture {
    pub(crate) repo: FixedRepo,
    pub(crate) home: tempfile::TempDir,
    pub(crate) contract: ContractFile,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        let repo = FixedRepo::with_files(&[
            ("src/main.rs", b"fn main() {}\n"),
            ("src/lib.rs", b"pub fn f() {}\n"),
            ("src/id_rsa", b"PRIVATE KEY\n"),
            (".env", b"SECRET=1\n"),
            ("README.md", b"# readme\n"),
            (".gitignore", b"/target/\n"),
        ]);
        let home = tempfile::tempdir().expect("home");
        for (rel, content) in [
            (".ssh/id_rsa", "caller's key\n"),
            (".aws/credentials", "caller's aws\n"),
            (".profile", "export A=1\n"),
        ] {
            let p = home.path().join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, content).expect("write");
        }
        let contract = ContractFile::raw(
            "id: confined\ntask: t\nwritable_paths: ['src/*.rs']\nscratch_paths: [target]\n",
        );
        Self {
            repo,
            home,
            contract,
        }
    }

    pub(crate) fn root(&self) -> PathBuf {
        self.repo.path()
    }

    pub(crate) fn confine(&self, opts: &[&str], script: &str) -> Output {
        self.command(opts, &["sh", "-c", script])
            .output()
            .expect("run confine")
    }

    pub(crate) fn command(&self, opts: &[&str], argv: &[&str]) -> Command {
        self.command_under(&self.contract.path, opts, argv)
    }

    /// [`Fixture::command`] under another contract.
    pub(crate) fn command_under(&self, contract: &Path, opts: &[&str], argv: &[&str]) -> Command {
        let mut cmd = Command::new(host_bin());
        cmd.arg("confine")
            .arg("--repo")
            .arg(self.root())
            .args(opts)
            .arg(contract)
            .arg("--")
            .args(argv)
            .env("HOME", self.home.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        without_git_location(&mut cmd);
        cmd
    }
}

/// `NAME rc` lines of a script's stdout.
fn results(out: &Output) -> Vec<(String, i32)> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (name, rc) = l.rsplit_once(' ')?;
            Some((name.to_owned(), rc.parse().ok()?))
        })
        .collect()
}

/// One shell line per operation on `dir`: each prints its name and status.
fn write_ops(tag: &str, dir: &str, file: &str) -> String {
    [
        ("create", format!("echo x > {dir}/new-{tag}")),
        ("append", format!("echo x >> {file}")),
        ("truncate", format!("truncate -s 0 {file}")),
        ("hardlink", format!("ln {file} {dir}/hard-{tag}")),
        ("symlink", format!("ln -s x {dir}/link-{tag}")),
        ("mkdir", format!("mkdir {dir}/dir-{tag}")),
        ("mkfifo", format!("mkfifo {dir}/fifo-{tag}")),
        ("rename", format!("mv {file} {dir}/renamed-{tag}")),
        // The renamed file where the rename succeeded, the original where it was refused.
        ("unlink", format!("rm -f {file} {dir}/renamed-{tag}")),
    ]
    .iter()
    .map(|(op, line)| format!("{line} 2>/dev/null; echo \"{tag}-{op} $?\"\n"))
    .collect()
}

#[test]
fn every_kind_of_write_is_refused_outside_the_scratch_and_allowed_in_it() {
    let f = Fixture::new();
    let root = f.root();
    let home = f.home.path().display().to_string();
    let before_tree = tree_state(&root);
    let watched = [
        root.join("src/main.rs"),
        root.join(".git/config"),
        root.join(".git/HEAD"),
        f.home.path().join(".profile"),
    ];
    let before: Vec<_> = watched.iter().map(|p| snapshot(p)).collect();
    let mut script = String::new();
    script += &write_ops("worktree", ".", "src/main.rs");
    script += &write_ops("git", ".git", ".git/config");
    script += &write_ops("head", ".git", ".git/HEAD");
    script += &write_ops("home", &home, &format!("{home}/.profile"));
    script += "echo kept > \"$TMPDIR/t\"; echo kept > \"$HOME/h\"; echo kept > target/t\n";
    script += &write_ops("tmp", "\"$TMPDIR\"", "\"$TMPDIR/t\"");
    script += &write_ops("scratchhome", "\"$HOME\"", "\"$HOME/h\"");
    script += &write_ops("scratchpath", "target", "target/t");
    // The walk of the worktree below would open the FIFO.
    script += "rm -f target/fifo-scratchpath\n";
    let out = f.confine(&[], &script);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("Landlock ABI"), "{stderr}");
    let results = results(&out);
    assert_eq!(results.len(), 7 * 9, "{results:?}");
    let mut refused = 0;
    for (name, rc) in &results {
        let inside = ["tmp-", "scratchhome-", "scratchpath-"]
            .iter()
            .any(|p| name.starts_with(p));
        if inside {
            assert_eq!(*rc, 0, "{name} must succeed in the scratch: {results:?}");
        } else {
            assert_ne!(*rc, 0, "{name} must be refused: {results:?}");
            refused += 1;
        }
    }
    eprintln!(
        "{refused} writes outside the scratch refused, {} inside allowed",
        results.len() - refused
    );
    let after: Vec<_> = watched.iter().map(|p| snapshot(p)).collect();
    assert_eq!(before, after, "bytes, mode or inode changed");
    let mut after_tree = tree_state(&root);
    // The scratch path is the one place the command wrote (`target/`, ignored by git).
    after_tree.retain(|k, _| !k.starts_with("target"));
    assert_eq!(before_tree, after_tree);
    assert_eq!(
        std::fs::read_dir(f.home.path()).expect("home").count(),
        3,
        "nothing new in the caller's home"
    );
}

#[test]
fn private_files_and_credential_stores_are_unreadable_and_ordinary_files_readable() {
    let f = Fixture::new();
    let root = f.root();
    // Another name of the private `.env`, untracked: unreadable too.
    std::fs::hard_link(root.join(".env"), root.join("notes.txt")).expect("link");
    let extra = tempfile::NamedTempFile::new().expect("extra");
    std::fs::write(extra.path(), "denied by flag\n").expect("write");
    let home = f.home.path().display().to_string();
    let extra_path = extra.path().display().to_string();
    let script = format!(
        "for p in .env src/id_rsa notes.txt {home}/.ssh/id_rsa {home}/.aws/credentials {extra_path} \
         src/main.rs README.md {home}/.profile .git/HEAD; do cat \"$p\" >/dev/null 2>&1; echo \"$p $?\"; done; \
         git status --porcelain >/dev/null 2>&1; echo \"git-status $?\""
    );
    let out = f.confine(&["--deny-read", &extra_path], &script);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("3 private worktree paths"), "{stderr}");
    let results = results(&out);
    let rc = |p: &str| {
        results
            .iter()
            .find(|(n, _)| n == p)
            .unwrap_or_else(|| panic!("{p}: {results:?}"))
            .1
    };
    for p in [".env", "src/id_rsa", "notes.txt"] {
        assert_ne!(rc(p), 0, "{p} must be unreadable");
    }
    for p in [
        format!("{home}/.ssh/id_rsa"),
        format!("{home}/.aws/credentials"),
        extra_path.clone(),
    ] {
        assert_ne!(rc(&p), 0, "{p} must be unreadable");
    }
    for p in ["src/main.rs", "README.md", ".git/HEAD", "git-status"] {
        assert_eq!(rc(p), 0, "{p} must be readable");
    }
    assert_eq!(
        rc(&format!("{home}/.profile")),
        0,
        "an ordinary file of the home is readable"
    );
}

#[test]
fn tcp_bind_is_refused_and_connect_reaches_only_the_allowed_port() {
    let f = Fixture::new();
    let allowed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let other = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let (a, b) = (
        allowed.local_addr().expect("addr").port(),
        other.local_addr().expect("addr").port(),
    );
    let script = format!(
        "bash -c 'exec 3<>/dev/tcp/127.0.0.1/{a}' 2>/dev/null; echo \"allowed $?\"; \
         bash -c 'exec 3<>/dev/tcp/127.0.0.1/{b}' 2>/dev/null; echo \"other $?\"; \
         python3 -c 'import socket; socket.socket().bind((\"127.0.0.1\", 0))' 2>/dev/null; echo \"bind $?\""
    );
    let out = f.confine(&["--allow-connect", &a.to_string()], &script);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        results(&out),
        vec![
            ("allowed".into(), 0),
            ("other".into(), 1),
            ("bind".into(), 1)
        ],
    );
    // Sibling: without --allow-connect, connect is not restricted; bind still is.
    let out = f.confine(&[], &script);
    assert_eq!(
        results(&out),
        vec![
            ("allowed".into(), 0),
            ("other".into(), 0),
            ("bind".into(), 1)
        ],
    );
}

#[test]
fn a_kernel_without_landlock_is_a_named_refusal_and_nothing_runs() {
    let f = Fixture::new();
    let outside = tempfile::tempdir().expect("outside");
    let marker = outside.path().join("ran");
    let script = format!("touch {}", marker.display());
    // Without Landlock: the kernel's own ENOSYS, through a seccomp filter.
    let without_landlock = |opts: &[&str]| {
        let mut cmd = f.command(opts, &["sh", "-c", &script]);
        crate::faults::inject(
            &mut cmd,
            &[crate::faults::Fault::always(
                libc::SYS_landlock_create_ruleset,
                libc::ENOSYS,
            )],
        );
        cmd.output().expect("confine")
    };
    let out = without_landlock(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(15), "{stderr}");
    assert!(
        stderr.contains("ENOSYS") && stderr.contains("nothing was run"),
        "{stderr}"
    );
    assert!(!marker.exists(), "the command ran");
    // --unconfined is the explicit opt-out: it runs, and says nothing is enforced.
    let out = without_landlock(&["--unconfined"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("NOTHING is enforced"), "{stderr}");
    assert!(marker.exists());
    // The real sibling: the same kernel without the filter confines (the write is refused).
    std::fs::remove_file(&marker).expect("rm");
    let out = f
        .command(&[], &["sh", "-c", &script])
        .output()
        .expect("confine");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!marker.exists());
}

#[test]
fn the_exit_status_is_the_commands_and_a_signal_reaches_its_group() {
    let f = Fixture::new();
    let out = f.confine(&[], "exit 7");
    assert_eq!(out.status.code(), Some(7));
    let mut child = f
        .command(&[], &["sh", "-c", "echo \"$TMPDIR\"; sleep 60 & wait"])
        .spawn()
        .expect("confine");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    let tmp = PathBuf::from(line.trim());
    assert!(tmp.is_dir(), "{line}");
    let started = Instant::now();
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::TERM,
    )
    .expect("kill");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(128 + 15));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(!tmp.exists(), "the scratch is removed");
    assert!(
        !tmp.parent().expect("run dir").exists(),
        "the run's directory is removed"
    );
}

/// One MCP exchange through `satyrn-host mcp` (a relay inside a confined run): initialize,
/// read `src/main.rs`, replace `old` by `new` in it; prints each answer's `isError`.
const CLIENT: &str = r#"
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp", "--repo", ".", sys.argv[2]] + sys.argv[5:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def call(i, method, params):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode()); p.stdin.flush()
    line = p.stdout.readline()
    return json.loads(line) if line else None
r = call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
if r is None:
    print("mcp refused"); sys.exit(0)
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'); p.stdin.flush()
r = call(2, "tools/call", {"name": "read", "arguments": {"path": "src/main.rs"}})
print("read", r["result"].get("isError", False))
r = call(3, "tools/call", {"name": "edit", "arguments": {"path": "src/main.rs", "edits": [{"op": "replace", "old_text": sys.argv[3], "new_text": sys.argv[4]}]}})
print("edit", r["result"].get("isError", False))
p.stdin.close(); p.wait()
"#;

#[test]
fn a_scripted_agent_under_deliver_bypasses_nothing_and_its_one_gated_edit_is_the_candidate() {
    let repo = FixedRepo::with_files(&[
        ("src/main.rs", b"fn main() {}\n"),
        ("src/lib.rs", b"pub fn f() {}\n"),
        (".env", b"SECRET=1\n"),
        ("README.md", b"# readme\n"),
        (".gitignore", b"/local.key\n"),
    ]);
    let root = repo.path();
    // The caller's own secret, never committed: ignored, in their checkout only.
    std::fs::write(root.join("local.key"), "caller's local key\n").expect("write");
    std::fs::write(root.join("README.md"), "# readme, second\n").expect("write");
    commit_all(&root, "second");
    // The caller's work in progress, stashed.
    std::fs::write(root.join("README.md"), "# caller's work\n").expect("write");
    git_ok(&root, &["stash", "push", "-q", "-m", "caller wip"]);
    let home = tempfile::tempdir().expect("home");
    std::fs::create_dir_all(home.path().join(".ssh")).expect("mkdir");
    std::fs::write(home.path().join(".ssh/id_rsa"), "caller's key\n").expect("key");
    let client = tempfile::NamedTempFile::new().expect("client");
    std::fs::write(client.path(), CLIENT).expect("write client");
    let contract = ContractFile::raw("id: agent\ntask: t\nwritable_paths: ['src/*.rs']\n");
    let config_before = std::fs::read(root.join(".git/config")).expect("config");
    let stash_before = git_ok(&root, &["stash", "list"]);
    let before = Caller::capture(&root);
    let home_s = home.path().display().to_string();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
    let bypasses: Vec<(&str, String)> = vec![
        ("sed -i", "sed -i s/main/evil/ src/main.rs".into()),
        ("echo >>", "echo x >> src/main.rs".into()),
        ("cp over", "cp README.md src/main.rs".into()),
        ("mv", "mv src/main.rs src/moved.rs".into()),
        ("rm", "rm src/lib.rs".into()),
        ("truncate", "truncate -s 0 src/main.rs".into()),
        ("rm -rf", "rm -rf src".into()),
        ("ln -s", "ln -s /etc/passwd src/link.rs".into()),
        ("ln", "ln src/main.rs src/hard.rs".into()),
        ("mkfifo .gitignore", "mkfifo .gitignore".into()),
        ("mkdir", "mkdir newdir".into()),
        ("write the .git file", "printf x > .git".into()),
        (
            "git commit -am",
            "git -c user.name=a -c user.email=a@b commit -qam x".into(),
        ),
        ("git stash", "git stash -q".into()),
        ("git stash pop", "git stash pop -q".into()),
        (
            "git update-ref",
            "git update-ref refs/heads/main HEAD~1".into(),
        ),
        ("git config", "git config user.name evil".into()),
        ("git worktree add", "git worktree add -q ../wt".into()),
        ("git branch", "git branch evil".into()),
        ("git tag", "git tag evil".into()),
        ("git pack-refs", "git pack-refs --all".into()),
        ("cat .env", "cat .env".into()),
        ("cat ~/.ssh/id_rsa", format!("cat {home_s}/.ssh/id_rsa")),
        (
            "cat the caller's untracked key",
            format!("cat {}/local.key", root.display()),
        ),
        (
            "write the caller's home",
            format!("echo x > {home_s}/.bashrc"),
        ),
        ("write /tmp", "echo x > /tmp/satyrn-confine-bypass".into()),
        ("kill the broker", "kill -0 $PPID".into()),
        (
            "the broker without the secret",
            format!(
                "test \"$(python3 -c 'import os,socket; s=socket.socket(socket.AF_UNIX); s.connect(os.environ[\"SATYRN_BROKER\"]); s.sendall(b\"0\"*64+b\"\\n\"+{init:?}.encode()+b\"\\n\")\ntry: print(len(s.recv(100)))\nexcept ConnectionResetError: print(0)')\" != 0"
            ),
        ),
    ];
    let mut script = String::new();
    for (name, line) in &bypasses {
        script += &format!("({line}) >/dev/null 2>&1; echo \"{name} $?\"\n");
    }
    script += &format!(
        "python3 {} {} {} 'fn main() {{}}' 'fn main() {{ println!(\"gated\"); }}'\n",
        client.path().display(),
        host_bin().display(),
        contract.path.display()
    );
    let argv = confine_argv(&[], &contract.path, &script);
    let argv: Vec<&std::ffi::OsStr> = argv.iter().map(std::ffi::OsString::as_os_str).collect();
    let started = Instant::now();
    let out = deliver_cmd(&root, &contract.path, &[], &argv)
        .env("HOME", home.path())
        .output()
        .expect("deliver");
    let run = finish(out, started.elapsed());
    assert_eq!(run.code(), "OK", "{}\n{}", run.stdout, run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    let mut refused = 0;
    for (name, _) in &bypasses {
        let line = lines
            .iter()
            .find(|l| l.rsplit_once(' ').is_some_and(|(n, _)| n == *name))
            .unwrap_or_else(|| panic!("no result for {name}: {}", run.stderr));
        let rc: i32 = line.rsplit_once(' ').expect("rc").1.parse().expect("rc");
        assert_ne!(rc, 0, "bypass `{name}` succeeded: {}", run.stderr);
        refused += 1;
    }
    assert!(
        run.stderr.contains("read False") && run.stderr.contains("edit False"),
        "{}",
        run.stderr
    );
    eprintln!(
        "{refused} of {} bypasses refused; the gated edit landed",
        bypasses.len()
    );
    assert!(refused >= 25);
    assert_eq!(run.receipt["paths"], serde_json::json!(["src/main.rs"]));
    let commit = run.receipt["candidate_commit"].as_str().expect("commit");
    assert_eq!(
        git_ok(&root, &["show", &format!("{commit}:src/main.rs")]),
        "fn main() { println!(\"gated\"); }\n"
    );
    before.assert_unchanged(&root, Some("refs/satyrn/candidates/agent/head"));
    assert_eq!(git_ok(&root, &["stash", "list"]), stash_before);
    assert_eq!(
        std::fs::read(root.join(".git/config")).expect("config"),
        config_before
    );
    assert!(!Path::new("/tmp/satyrn-confine-bypass").exists());
    assert!(!home.path().join(".bashrc").exists());
}

#[test]
fn two_runs_at_once_reach_neither_the_others_broker_nor_its_scratch() {
    let f = Fixture::new();
    let client = tempfile::NamedTempFile::new().expect("client");
    std::fs::write(client.path(), CLIENT).expect("write client");
    // Run A: says where its broker and scratch are, leaves a file there, waits to be told.
    let mut a = f
        .command(
            &[],
            &[
                "sh",
                "-c",
                "echo secret-a > \"$TMPDIR/a\"; echo \"$SATYRN_BROKER $TMPDIR\"; while [ ! -e \"$TMPDIR/stop\" ]; do sleep 0.05; done",
            ],
        )
        .spawn()
        .expect("run a");
    let mut line = String::new();
    BufReader::new(a.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    let (socket_a, tmp_a) = line.trim().split_once(' ').expect("two fields");
    let before = std::fs::read(f.root().join("src/main.rs")).expect("read");
    // Run B: tries A's scratch, then A's broker with its own secret, then its own broker.
    let b = f.confine(
        &[],
        &format!(
            "cat {tmp_a}/a >/dev/null 2>&1; echo \"read-a $?\"; ls {tmp_a} >/dev/null 2>&1; echo \"list-a $?\"; \
             python3 {client} {host} {contract} 'fn main() {{}}' 'fn main() {{ evil(); }}' --broker {socket_a}; \
             python3 {client} {host} {contract} 'fn main() {{}}' 'fn main() {{ own(); }}'",
            client = client.path().display(),
            host = host_bin().display(),
            contract = f.contract.path.display(),
        ),
    );
    let stdout = String::from_utf8_lossy(&b.stdout);
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.contains(&"read-a 1"), "{stdout}");
    assert!(
        lines.contains(&"mcp refused"),
        "A's broker answered B: {stdout}"
    );
    assert!(lines.contains(&"edit False"), "B's own broker: {stdout}");
    assert_eq!(
        std::fs::read_to_string(f.root().join("src/main.rs")).expect("read"),
        "fn main() { own(); }\n"
    );
    assert_ne!(
        before,
        std::fs::read(f.root().join("src/main.rs")).expect("read")
    );
    std::fs::write(Path::new(tmp_a).join("stop"), "").expect("stop a");
    let status = a.wait().expect("wait a");
    assert!(status.success());
    let _ = std::io::stderr().flush();
}

/// `satyrn-host confine --repo . OPTS CONTRACT -- sh -c SCRIPT`, as deliver's argv.
fn confine_argv(opts: &[&str], contract: &Path, script: &str) -> Vec<std::ffi::OsString> {
    let mut argv: Vec<std::ffi::OsString> = vec![
        host_bin().into(),
        "confine".into(),
        "--repo".into(),
        ".".into(),
    ];
    argv.extend(opts.iter().map(Into::into));
    argv.extend([
        contract.into(),
        "--".into(),
        "sh".into(),
        "-c".into(),
        script.into(),
    ]);
    argv
}

/// Delivers `script` run by `satyrn-host confine OPTS`, in a repository with a declared
/// `src/main.rs`; returns the run.
fn deliver_confined(opts: &[&str], script: &str) -> (FixedRepo, crate::deliver_support::Run) {
    let repo = FixedRepo::with_files(&[
        ("src/main.rs", b"fn main() {}\n"),
        ("src/lib.rs", b"pub fn f() {}\n"),
    ]);
    let root = repo.path();
    let contract = ContractFile::raw("id: provenance\ntask: t\nwritable_paths: ['src/*.rs']\n");
    let client = root.parent().expect("parent").join("client.py");
    std::fs::write(&client, CLIENT).expect("client");
    let script = script
        .replace("@CLIENT@", &client.display().to_string())
        .replace("@HOST@", &host_bin().display().to_string())
        .replace("@CONTRACT@", &contract.path.display().to_string());
    let argv = confine_argv(opts, &contract.path, &script);
    let argv: Vec<&std::ffi::OsStr> = argv.iter().map(std::ffi::OsString::as_os_str).collect();
    let started = Instant::now();
    let out = deliver_cmd(&root, &contract.path, &[], &argv)
        .output()
        .expect("deliver");
    let run = finish(out, started.elapsed());
    (repo, run)
}

const GATED: &str = "python3 @CLIENT@ @HOST@ @CONTRACT@ 'fn main() {}' 'fn main() { gated(); }'";

#[test]
fn a_confined_candidate_holds_only_what_the_broker_published() {
    // The sibling: the gated edit alone is the candidate.
    let (_repo, run) = deliver_confined(&[], GATED);
    assert_eq!(run.code(), "OK", "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.receipt["paths"], serde_json::json!(["src/main.rs"]));
    let confinement = run.receipt["confinement"].as_str().expect("confinement");
    assert!(confinement.starts_with("Landlock ABI "), "{confinement}");
    assert!(
        run.stderr.contains(confinement),
        "the receipt says what was printed at start"
    );
    // Through `satyrn-host protocol` (as Pi's tools call it), recorded in the ledger too.
    let sha = crate::support::sha256_hex(b"fn main() {}\n");
    let request = format!(
        r#"{{"version":1,"operation":"replace","repo":"'"$PWD"'","contract":"@CONTRACT@","path":"src/main.rs","expected_sha256":"{sha}","old_text":"fn main() {{}}","new_text":"fn main() {{ relayed(); }}"}}"#
    );
    let (_repo, run) = deliver_confined(&[], &format!("printf '%s' '{request}' | @HOST@ protocol"));
    assert_eq!(run.code(), "OK", "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.receipt["paths"], serde_json::json!(["src/main.rs"]));
    // Landlock does not cover chmod: a mode the broker did not set is refused.
    let (repo, run) = deliver_confined(&[], &format!("{GATED} && chmod +x src/lib.rs"));
    crate::deliver_support::assert_discarded(&run, "OUTSIDE_CONTRACT");
    assert_eq!(
        run.receipt["outside_contract"],
        serde_json::json!([{
            "path": "src/lib.rs", "change": "mode", "code": "NOT_BROKERED",
            "detail": "`src/lib.rs` was changed around satyrn's broker: its mode changed from 100644 to 100755; the broker keeps modes"
        }]),
        "{}",
        run.stdout
    );
    assert!(git_ok(&repo.path(), &["for-each-ref", "refs/satyrn"]).is_empty());
    // Without the kernel's boundary (--unconfined) the command could write the ledger too,
    // so none is given and no provenance is claimed: a direct write of a declared file is
    // published, and the receipt says so.
    let (_repo, run) = deliver_confined(
        &["--unconfined"],
        &format!("test -z \"$SATYRN_PROVENANCE\" && {GATED} && echo direct >> src/lib.rs"),
    );
    assert_eq!(run.code(), "OK", "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        run.receipt["paths"],
        serde_json::json!(["src/lib.rs", "src/main.rs"])
    );
    assert_eq!(
        run.receipt["confinement"],
        "--unconfined: nothing was enforced by the kernel, and no provenance check was made"
    );
}

/// A confined command cannot overwrite the broker's edit, but another writer can: the
/// candidate's content must then be refused as not the broker's last publication.
#[test]
fn a_change_made_beside_a_confined_run_is_not_the_brokers() {
    let repo = FixedRepo::with_files(&[("src/main.rs", b"fn main() {}\n")]);
    let root = repo.path();
    let contract = ContractFile::raw("id: beside\ntask: t\nwritable_paths: ['src/*.rs']\n");
    let client = root.parent().expect("parent").join("client.py");
    std::fs::write(&client, CLIENT).expect("client");
    let script = format!(
        "{} && echo \"READY $PWD $TMPDIR\" && while [ ! -e \"$TMPDIR/go\" ]; do sleep 0.05; done",
        GATED
            .replace("@CLIENT@", &client.display().to_string())
            .replace("@HOST@", &host_bin().display().to_string())
            .replace("@CONTRACT@", &contract.path.display().to_string())
    );
    let argv = confine_argv(&[], &contract.path, &script);
    let argv: Vec<&std::ffi::OsStr> = argv.iter().map(std::ffi::OsString::as_os_str).collect();
    let started = Instant::now();
    let mut child = deliver_cmd(&root, &contract.path, &[], &argv)
        .spawn()
        .expect("deliver");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut seen = String::new();
    let (worktree, tmp) = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).expect("read") > 0,
            "no READY: {seen}"
        );
        seen.push_str(&line);
        if let Some(rest) = line.trim().strip_prefix("READY ") {
            let (w, t) = rest.split_once(' ').expect("two paths");
            break (PathBuf::from(w), PathBuf::from(t));
        }
    };
    std::fs::write(worktree.join("src/main.rs"), "fn main() { beside(); }\n")
        .expect("write beside");
    std::fs::write(tmp.join("go"), "").expect("go");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).expect("read");
    let out = child.wait_with_output().expect("wait");
    let run = finish(
        std::process::Output {
            status: out.status,
            stdout: out.stdout,
            stderr: (seen + &rest).into_bytes(),
        },
        started.elapsed(),
    );
    crate::deliver_support::assert_discarded(&run, "OUTSIDE_CONTRACT");
    let entries = run.receipt["outside_contract"].as_array().expect("entries");
    assert_eq!(entries.len(), 1, "{}", run.stdout);
    assert_eq!(entries[0]["path"], "src/main.rs");
    assert_eq!(entries[0]["code"], "NOT_BROKERED");
    assert!(
        entries[0]["detail"]
            .as_str()
            .expect("detail")
            .contains("its content is not the broker's last publication"),
        "{}",
        run.stdout
    );
}

#[test]
fn root_keeps_no_capability_and_names_that_are_not_utf8_stay_private() {
    let f = Fixture::new();
    let root = f.root();
    let odd = std::ffi::OsStr::from_bytes(b"k\xff.key");
    std::fs::write(root.join(odd), "odd key\n").expect("write");
    std::fs::create_dir(root.join(".GIT")).expect("mkdir");
    std::fs::write(root.join(".GIT/id_rsa"), "hidden key\n").expect("write");
    let out = f.confine(
        &[],
        "grep -q '^CapEff:.0000000000000000$' /proc/self/status; echo \"caps $?\"; \
         chattr +i src/main.rs 2>/dev/null; echo \"chattr $?\"; \
         cat k*.key >/dev/null 2>&1; echo \"odd $?\"; cat .GIT/id_rsa >/dev/null 2>&1; echo \"dotgit $?\"; \
         cat src/lib.rs >/dev/null; echo \"lib $?\"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = results(&out);
    let rc = |n: &str| results.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
    assert_eq!(rc("caps"), Some(0), "{results:?}");
    assert_eq!(rc("lib"), Some(0), "{results:?}");
    for n in ["chattr", "odd", "dotgit"] {
        assert_ne!(rc(n), Some(0), "{n}: {results:?}");
    }
    let attrs = Command::new("lsattr")
        .arg(root.join("src/main.rs"))
        .output()
        .expect("lsattr");
    assert!(
        !String::from_utf8_lossy(&attrs.stdout)
            .split_whitespace()
            .next()
            .unwrap_or("")
            .contains('i')
    );
}

#[test]
fn a_scratch_path_with_tracked_files_or_a_private_files_other_name_is_refused_before_anything_runs()
{
    // Tracked files in a scratch path: refused, nothing run.
    let repo = FixedRepo::with_files(&[
        ("docs/README", b"tracked\n"),
        (".gitignore", b"/docs/\n/target/\n"),
        (".env", b"S=1\n"),
    ]);
    let root = repo.path();
    // Ignored, yet tracked: added with --force.
    git_ok(&root, &["add", "--force", "docs/README"]);
    commit_all(&root, "track an ignored file");
    let outside = tempfile::tempdir().expect("outside");
    let marker = outside.path().join("ran");
    let contract = ContractFile::raw("id: s\ntask: t\nscratch_paths: [docs]\n");
    let run = |contract: &ContractFile| {
        let mut cmd = Command::new(host_bin());
        cmd.arg("confine")
            .arg("--repo")
            .arg(&root)
            .arg(&contract.path)
            .arg("--")
            .args(["sh", "-c", &format!("touch {}", marker.display())])
            .stdin(Stdio::null());
        cmd.output().expect("confine")
    };
    let out = run(&contract);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds tracked files"));
    // Another name of the private `.env` inside a scratch path: its grant would expose it.
    std::fs::create_dir(root.join("target")).expect("mkdir");
    std::fs::hard_link(root.join(".env"), root.join("target/envlink")).expect("link");
    let contract = ContractFile::raw("id: s\ntask: t\nscratch_paths: [target]\n");
    let out = run(&contract);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(15), "{stderr}");
    assert!(
        stderr.contains("envlink is unreadable but lies in the writable"),
        "{stderr}"
    );
    assert!(!marker.exists(), "the command ran");
    // The sibling: without the link, the same run starts.
    std::fs::remove_file(root.join("target/envlink")).expect("rm");
    let out = run(&contract);
    assert_eq!(
        out.status.code(),
        Some(1),
        "touch outside is refused, so it ran: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Unmounts on drop, so a failing test leaves no mount behind.
pub(crate) struct BindMount(pub(crate) PathBuf);

impl Drop for BindMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_bind_mount_of_the_worktree_exposes_no_private_file() {
    let f = Fixture::new();
    let alt = tempfile::tempdir().expect("alt");
    let status = Command::new("mount")
        .arg("--bind")
        .arg(f.root())
        .arg(alt.path())
        .status()
        .expect("mount");
    assert!(
        status.success(),
        "mount --bind needs root (the test machine runs as root)"
    );
    let _mounted = BindMount(alt.path().to_path_buf());
    let alt_s = alt.path().display().to_string();
    let out = f.confine(
        &[],
        &format!(
            "cat {alt_s}/.env >/dev/null 2>&1; echo \"env $?\"; cat {alt_s}/src/id_rsa >/dev/null 2>&1; echo \"key $?\"; \
             cat {alt_s}/src/main.rs >/dev/null 2>&1; echo \"main $?\""
        ),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        results(&out),
        vec![("env".into(), 1), ("key".into(), 1), ("main".into(), 0)]
    );
}

/// Files that come and go while the rules are computed (other processes' temporaries in a
/// directory the plan lists) are no reason to fail: a race looped, and counted.
#[test]
fn entries_vanishing_while_the_rules_are_built_never_fail_a_start() {
    let f = Fixture::new();
    let churn_dir = f.root().join("churn");
    std::fs::create_dir(&churn_dir).expect("mkdir");
    // A private file beside the churn, so the directory is split entry by entry.
    std::fs::write(churn_dir.join(".env"), "S=1\n").expect("env");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let (stop, dir) = (std::sync::Arc::clone(&stop), churn_dir.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for i in 0..50 {
                    let p = dir.join(format!("t{i}"));
                    let _ = std::fs::create_dir(&p);
                    let _ = std::fs::write(p.join("x"), "x");
                }
                for i in 0..50 {
                    let _ = std::fs::remove_dir_all(dir.join(format!("t{i}")));
                }
                n += 1;
            }
            n
        })
    };
    let rounds = 40;
    let mut failed = Vec::new();
    for _ in 0..rounds {
        let out = f.confine(&[], "true");
        if !out.status.success() {
            failed.push(String::from_utf8_lossy(&out.stderr).into_owned());
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let cycles = churn.join().expect("churn");
    eprintln!(
        "{} of {rounds} starts failed during {cycles} churn cycles",
        failed.len()
    );
    assert!(cycles > 0);
    assert!(failed.is_empty(), "{failed:?}");
}

#[test]
fn protocol_inside_a_confined_run_goes_to_the_broker_under_the_frozen_contract() {
    let f = Fixture::new();
    let root = f.root();
    let sha = crate::support::sha256_file(&root.join("src/main.rs"));
    let readme = snapshot(&root.join("README.md"));
    let request = |repo: &str, contract: &str, path: &str, old: &str, new: &str, sha: &str| {
        serde_json::json!({
            "version": 1, "operation": "replace", "repo": repo, "contract": contract,
            "path": path, "expected_sha256": sha, "old_text": old, "new_text": new,
        })
        .to_string()
    };
    let root_s = root.display().to_string();
    let readme_sha = crate::support::sha256_file(&root.join("README.md"));
    let requests = [
        // A permissive contract the command wrote in its scratch is never opened.
        request(
            &root_s,
            "$TMPDIR/any.yaml",
            "README.md",
            "# readme",
            "# taken",
            &readme_sha,
        ),
        // Another repository.
        request("/tmp", "/x.yaml", "src/main.rs", "fn main() {}", "x", &sha),
        // The gated replace, under the frozen contract.
        request(
            &root_s,
            "/nonexistent.yaml",
            "src/main.rs",
            "fn main() {}",
            "fn main() { relayed(); }",
            &sha,
        ),
    ];
    let mut script = String::from(
        "printf 'id: x\\ntask: x\\nwritable_paths: [\"*\"]\\n' > \"$TMPDIR/any.yaml\"\n",
    );
    for r in &requests {
        script += &format!(
            "printf '%s' \"$(cat <<'JSON'\n{r}\nJSON\n)\" | sed \"s|\\$TMPDIR|$TMPDIR|\" | {} protocol; echo \"rc $?\"\n",
            host_bin().display()
        );
    }
    script += &format!(
        "printf '{{}}' | SATYRN_BROKER_SECRET=wrong {} protocol; echo \"rc $?\"\n",
        host_bin().display()
    );
    let out = f.confine(&[], &script);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 8, "{stdout}");
    let answer = |i: usize| serde_json::from_str::<serde_json::Value>(lines[2 * i]).expect("json");
    assert_eq!(answer(0)["code"], "PATH_UNDECLARED", "{stdout}");
    assert_eq!(lines[1], "rc 9");
    assert_eq!(answer(1)["code"], "REPO_UNAVAILABLE", "{stdout}");
    assert_eq!(answer(2)["code"], "OK", "{stdout}");
    assert_eq!(lines[5], "rc 0");
    assert_eq!(answer(3)["code"], "INTERNAL_ERROR", "{stdout}");
    assert!(
        answer(3)["message"]
            .as_str()
            .expect("message")
            .contains("without an answer")
    );
    assert_eq!(
        snapshot(&root.join("README.md")),
        readme,
        "README.md unchanged"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/main.rs")).expect("read"),
        "fn main() { relayed(); }\n"
    );
}

/// A request refused at the broker's first line while the rest of it is still being sent
/// (a wrong secret, a large request): the relay's answer is the refusal, never a send
/// error. The race of the close against the write, looped and counted.
#[test]
fn a_refused_large_request_is_always_answered_as_refused() {
    let f = Fixture::new();
    let rounds = 20;
    let out = f.confine(
        &[],
        &format!(
            "head -c 1048576 /dev/zero | tr '\\0' x > \"$TMPDIR/big\"; \
             for i in $(seq {rounds}); do SATYRN_BROKER_SECRET=wrong {} protocol < \"$TMPDIR/big\"; done; true",
            host_bin().display()
        ),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let refused = stdout
        .lines()
        .filter(|l| l.contains("\"INTERNAL_ERROR\"") && l.contains("without an answer"))
        .count();
    eprintln!("{refused} of {rounds} refused requests answered as refused");
    assert_eq!(refused, rounds, "{stdout}");
}

/// One connection, many protocol requests (the framing Pi's tools use): each frame is
/// answered in turn under the frozen contract, a refusal does not end the session, and a
/// frame that cannot be one (no length) is answered `INVALID_REQUEST` and ends it; the
/// broker counts one connection and every request.
#[test]
fn a_protocol_session_answers_every_frame_on_one_connection() {
    let f = Fixture::new();
    let root = f.root();
    let sha = crate::support::sha256_file(&root.join("src/main.rs"));
    let env = snapshot(&root.join(".env"));
    let client = r#"
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ["SATYRN_BROKER"])
s.sendall((os.environ["SATYRN_BROKER_SECRET"] + " protocol\n").encode())
answers = s.makefile("rb")
def ask(name, frame):
    try:
        s.sendall(frame)
        status, line = answers.readline(), answers.readline()
    except OSError:
        line = b""
    if not line:
        print(name, "EOF")
        return
    r = json.loads(line)
    print(name, int(status), r["code"], json.dumps(r["result"]))
def request(**fields):
    body = json.dumps(dict(version=1, repo=sys.argv[1], contract="/unused.yaml", **fields)).encode()
    return b"%d\n" % len(body) + body
ask("read", request(operation="read", path="src/main.rs"))
ask("private", request(operation="read", path=".env"))
ask("replace", request(operation="replace", path="src/main.rs", expected_sha256=sys.argv[2],
                       old_text="fn main() {}", new_text="fn main() { session(); }"))
ask("again", request(operation="read", path="src/main.rs"))
ask("unframed", b"{}\n")
ask("after", request(operation="read", path="src/main.rs"))
"#;
    let out = f
        .command(
            &[],
            &["python3", "-c", client, &root.display().to_string(), &sha],
        )
        .output()
        .expect("run confine");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{stdout}");
    assert!(
        lines[0].starts_with("read 0 OK ") && lines[0].contains("fn main() {}"),
        "{stdout}"
    );
    assert!(
        lines[1].starts_with("private ") && lines[1].contains(" PATH_PRIVATE "),
        "{stdout}"
    );
    assert!(lines[2].starts_with("replace 0 OK "), "{stdout}");
    assert!(
        lines[3].contains("session();"),
        "the session sees its own publication: {stdout}"
    );
    assert!(
        lines[4].starts_with("unframed ") && lines[4].contains(" INVALID_REQUEST "),
        "{stdout}"
    );
    assert_eq!(
        lines[5], "after EOF",
        "a session ends after an unframed request"
    );
    assert!(
        stderr.contains(
            "the broker served 0 MCP sessions, and 4 protocol requests over 1 connection"
        ),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/main.rs")).expect("read"),
        "fn main() { session(); }\n"
    );
    assert_eq!(snapshot(&root.join(".env")), env, ".env unchanged");
}
