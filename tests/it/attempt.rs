//! `satyrn-host attempt` with a fake `pi` (a Python script) in real git repositories: the
//! argv and environment Pi receives, the transcript bytes, the patch, a failing Pi
//! preserved as exit 10 with its artifacts, no change, and every artifact-destination
//! refusal beside a sibling success. The real Pi runs in `pi/test/e2e.test.ts`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::{Repo, git_ok, host_bin, sha256_hex};

/// The fake Pi: records argv and environment as JSON, prints two transcript lines, edits
/// through `satyrn-host protocol` using the mutation context for each `path|old|new` in
/// `FAKE_PI_EDIT` (`;`-separated), and exits with `FAKE_PI_EXIT`.
const FAKE_PI: &str = r#"#!/usr/bin/env python3
import json, os, subprocess, sys
log = os.environ["FAKE_PI_LOG"]
context_file = os.environ.get("SATYRN_MUTATION_CONTEXT_FILE")
context = json.load(open(context_file)) if context_file else None
prompt = sys.stdin.read()
def private_modes():
    ctx = context or {}
    if "contract" not in ctx:
        return {}
    private = os.path.dirname(ctx["contract"])
    paths = [private] + [os.path.join(private, n) for n in os.listdir(private)]
    return {p: oct(os.stat(p).st_mode & 0o777) for p in paths}
agent = os.environ.get("PI_CODING_AGENT_DIR", "")
carried = {n: open(os.path.join(agent, n)).read() for n in sorted(os.listdir(agent))} if agent else {}
with open(log, "w") as f:
    json.dump({"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd(),
               "context": context, "prompt": prompt,
               "cwd_entries": os.listdir("."), "agent_files": carried,
               "modes": {p: oct(os.stat(p).st_mode & 0o777) for p in [".", agent] if p},
               "private_modes": private_modes()}, f)
sys.stdout.buffer.write(b'{"type":"session","fake":true}\n')
for edit in filter(None, os.environ.get("FAKE_PI_EDIT", "").split(";")):
    path, old, new = edit.split("|")
    ctx = context
    req = {"version": 1, "operation": "replace", "repo": ctx["repo"], "contract": ctx["contract"],
           "path": path, "expected_sha256": ctx["revisions"].get(path), "old_text": old, "new_text": new}
    out = subprocess.run([os.environ["SATYRN_HOST_BIN"], "protocol"], input=json.dumps(req).encode(),
                         capture_output=True)
    sys.stdout.buffer.write(out.stdout)
for leave in filter(None, os.environ.get("FAKE_PI_LEAVE", "").split(";")):
    with open(leave, "w") as f:
        f.write("left behind\n")
sys.stdout.buffer.write(b'{"type":"agent_end","bytes":"\\u00e9\\t"}\n')
sys.exit(int(os.environ.get("FAKE_PI_EXIT", "0")))
"#;

struct Fixture {
    repo: Repo,
    outside: tempfile::TempDir,
    fake_pi: PathBuf,
    log: PathBuf,
    contract: PathBuf,
}

const GREETING: &[u8] = b"hello world\n";

impl Fixture {
    fn new() -> Self {
        let repo = Repo::with_files(&[
            ("src/greeting.txt", GREETING),
            ("src/other.txt", b"other\n"),
            ("README.md", b"readme\n"),
        ]);
        let outside = tempfile::tempdir().expect("tempdir");
        let fake_pi = outside.path().join("fake-pi");
        std::fs::write(&fake_pi, FAKE_PI).expect("write fake pi");
        std::fs::set_permissions(&fake_pi, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let contract = outside.path().join("contract.yaml");
        std::fs::write(
            &contract,
            "id: attempt-test\ntask: Say hello to satyrn.\nwritable_paths: ['src/g*.txt', 'missing/*']\n",
        )
        .expect("contract");
        let log = outside.path().join("pi-log.json");
        Self {
            repo,
            outside,
            fake_pi,
            log,
            contract,
        }
    }

    /// `satyrn-host attempt --unconfined ARGS` in the repository, with the fake Pi and a
    /// clean environment (no model, no artifact destinations) plus `env`. Unconfined: the
    /// fake Pi logs what it got to the test's directory, which a confined Pi could not
    /// write; the real Pi runs confined in `pi/test/e2e.test.ts`.
    fn attempt_command<A: AsRef<std::ffi::OsStr>>(
        &self,
        args: &[A],
        env: &[(&str, &str)],
    ) -> Command {
        let mut cmd = Command::new(host_bin());
        cmd.current_dir(self.repo.path())
            .arg("attempt")
            .arg("--unconfined")
            .args(args)
            .env("SATYRN_PI_BIN", &self.fake_pi)
            .env("FAKE_PI_LOG", &self.log)
            .env_remove("SATYRN_ATTEMPT_TRANSCRIPT")
            .env_remove("SATYRN_ATTEMPT_PATCH")
            .env_remove("SATYRN_MODEL");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }

    /// [`Self::attempt_command`] run to completion.
    fn attempt<A: AsRef<std::ffi::OsStr>>(&self, args: &[A], env: &[(&str, &str)]) -> Output {
        self.attempt_command(args, env)
            .output()
            .expect("run attempt")
    }

    /// The usual attempt: `--model provider/model-1` and the fixture's contract.
    fn command(&self, env: &[(&str, &str)]) -> Command {
        let contract = self.contract.as_os_str();
        self.attempt_command(
            &["--model".as_ref(), "provider/model-1".as_ref(), contract],
            env,
        )
    }

    /// Commits everything in the repository.
    fn commit_all(&self, message: &str) {
        git_ok(self.repo.path(), &["add", "-A"]);
        git_ok(self.repo.path(), &["commit", "-q", "-m", message]);
    }

    fn run(&self, env: &[(&str, &str)]) -> Output {
        self.command(env).output().expect("run attempt")
    }

    fn pi_log(&self) -> Value {
        serde_json::from_slice(&std::fs::read(&self.log).expect("pi ran")).expect("log json")
    }

    fn dest(&self, name: &str) -> PathBuf {
        self.outside.path().join(name)
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn pi_gets_the_exact_argv_context_and_environment() {
    let fx = Fixture::new();
    let out = fx.run(&[
        ("GIT_DIR", "/nonexistent/elsewhere"),
        ("GIT_WORK_TREE", "/nonexistent"),
        ("GIT_NAMESPACE", "other"),
        ("VIRTUAL_ENV", "/venv"),
        ("SSH_AUTH_SOCK", "/agent.sock"),
        ("NODE_OPTIONS", "--max-old-space-size=4096"),
        ("NODE_PATH", "/elsewhere/node_modules"),
        ("LD_AUDIT", "/nonexistent/audit.so"),
        ("BASH_ENV", "/nonexistent/bash_env"),
        ("ENV", "/nonexistent/env"),
        ("OPENAI_API_KEY", "sk-kept"),
        ("SATYRN_MUTATION_CONTEXT", "{\"inherited\":true}"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = fx.pi_log();
    let argv: Vec<&str> = log["argv"]
        .as_array()
        .expect("argv")
        .iter()
        .map(|v| v.as_str().expect("str"))
        .collect();
    // No prompt argument: the prompt is Pi's standard input.
    let flags = &argv[..];
    let prompt = log["prompt"].as_str().expect("prompt on stdin");
    assert_eq!(flags.len(), 19, "{argv:?}");
    assert_eq!(
        &flags[..10],
        [
            "--print",
            "--mode",
            "json",
            "--no-session",
            "--model",
            "provider/model-1",
            "--system-prompt",
            satyrn_attempt::pi::SYSTEM_PROMPT,
            "--no-extensions",
            "--extension"
        ]
    );
    assert!(flags[10].ends_with("/pi/engine.ts"), "{}", flags[10]);
    assert_eq!(flags[11], "--extension");
    assert!(flags[12].ends_with("/pi/mutator.ts"), "{}", flags[12]);
    assert_eq!(
        &flags[13..],
        [
            "--no-skills",
            "--no-prompt-templates",
            "--no-themes",
            "--no-context-files",
            "--tools",
            "read,edit,ls,find,grep,write,delete,apply_patch"
        ]
    );
    assert!(
        !argv.iter().any(|a| a.contains("orchestrator")),
        "the child must not load /implement"
    );
    assert!(
        prompt.starts_with("Task:\nSay hello to satyrn."),
        "{prompt}"
    );
    assert!(
        prompt.contains(
            "Files you may edit (every other file is read-only):\n- src/greeting.txt\n\n"
        ),
        "{prompt}"
    );
    assert!(!prompt.contains("other.txt") && !prompt.contains("README"));
    assert_eq!(
        prompt,
        satyrn_attempt::prompt::build(
            "Say hello to satyrn.",
            &["src/g*.txt".to_string(), "missing/*".to_string()],
            &["src/greeting.txt"]
        )
        .expect("prompt"),
        "the prompt file is exactly the built prompt"
    );

    let env = log["env"].as_object().expect("env");
    for removed in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_NAMESPACE",
        "VIRTUAL_ENV",
        "SSH_AUTH_SOCK",
        "NODE_OPTIONS",
        "NODE_PATH",
        "LD_AUDIT",
        "BASH_ENV",
        "ENV",
    ] {
        assert!(
            !env.contains_key(removed),
            "{removed} leaked into Pi's environment"
        );
    }
    assert_eq!(env["OPENAI_API_KEY"], "sk-kept");
    assert_eq!(env["SATYRN_HOST_BIN"].as_str(), host_bin().to_str());
    assert!(
        !env.contains_key("SATYRN_MUTATION_CONTEXT"),
        "the inline context variable is never passed on"
    );
    let context_file = PathBuf::from(
        env["SATYRN_MUTATION_CONTEXT_FILE"]
            .as_str()
            .expect("context file"),
    );
    assert!(
        !context_file.exists(),
        "the context file is removed with the private directory"
    );
    let context: Value = log["context"].clone();
    let repo = std::fs::canonicalize(fx.repo.path()).expect("canonical");
    assert_eq!(context["version"], 1);
    assert_eq!(
        std::fs::canonicalize(context["repo"].as_str().expect("repo")).expect("repo"),
        repo
    );
    let revisions: BTreeMap<String, String> =
        serde_json::from_value(context["revisions"].clone()).expect("revisions");
    assert_eq!(
        revisions,
        BTreeMap::from([("src/greeting.txt".to_string(), sha256_hex(GREETING))])
    );
    // The frozen contract: exact bytes, outside the worktree, removed afterwards.
    let frozen = PathBuf::from(context["contract"].as_str().expect("contract"));
    assert!(!frozen.starts_with(fx.repo.path()) && !frozen.starts_with(&repo));
    assert!(!frozen.exists(), "the private directory must be removed");
    // Nothing changed, so no patch; the worktree is clean.
    assert_eq!(git_ok(fx.repo.path(), &["status", "--porcelain"]), "");
}

/// Pi never runs in the repository and never sees the user's agent directory: its working
/// directory is empty and private, and its agent directory holds copies of `models.json`
/// and `auth.json` only (the real-Pi proof with hostile settings is in `pi/test/e2e.test.ts`).
#[test]
fn pi_runs_in_a_private_home_with_only_the_users_models_and_credentials() {
    let fx = Fixture::new();
    let user_agent = fx.outside.path().join("user-agent");
    std::fs::create_dir_all(user_agent.join("extensions")).expect("mkdir");
    for (name, text) in [
        ("models.json", "{\"providers\":{}}"),
        ("auth.json", "{\"p\":{\"key\":\"k\"}}"),
        (
            "settings.json",
            "{\"npmCommand\":[\"sh\"],\"packages\":[\"npm:x\"]}",
        ),
        ("SYSTEM.md", "USER SYSTEM PROMPT"),
        ("APPEND_SYSTEM.md", "USER APPEND"),
        ("extensions/evil.ts", "export default () => {}"),
    ] {
        std::fs::write(user_agent.join(name), text).expect("write");
    }
    std::fs::create_dir_all(fx.repo.path().join(".pi")).expect("mkdir");
    std::fs::write(fx.repo.path().join(".pi/SYSTEM.md"), "REPO SYSTEM PROMPT").expect("write");
    let out = fx.run(&[("PI_CODING_AGENT_DIR", user_agent.to_str().expect("utf8"))]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = fx.pi_log();
    let cwd = PathBuf::from(log["cwd"].as_str().expect("cwd"));
    let repo = std::fs::canonicalize(fx.repo.path()).expect("canonical");
    assert!(
        !cwd.starts_with(&repo),
        "Pi ran inside the repository: {}",
        cwd.display()
    );
    assert!(cwd.ends_with("cwd"), "{}", cwd.display());
    assert_eq!(
        log["cwd_entries"],
        serde_json::json!([]),
        "Pi's working directory is not empty"
    );
    let agent = log["env"]["PI_CODING_AGENT_DIR"]
        .as_str()
        .expect("agent dir");
    assert_ne!(
        Path::new(agent),
        user_agent,
        "Pi got the user's own agent directory"
    );
    assert_eq!(
        log["agent_files"],
        serde_json::json!({"auth.json": "{\"p\":{\"key\":\"k\"}}", "models.json": "{\"providers\":{}}"})
    );
    assert_eq!(log["modes"]["."], "0o700");
    // No shared temporary directory and no on-disk cache of compiled extensions.
    assert_eq!(log["env"]["JITI_FS_CACHE"], "false");
    let tmp = PathBuf::from(log["env"]["TMPDIR"].as_str().expect("TMPDIR"));
    assert_eq!(
        tmp.parent(),
        cwd.parent(),
        "TMPDIR is not in the private directory"
    );
    assert_eq!(log["private_modes"][tmp.to_str().expect("utf8")], "0o700");
    assert_eq!(log["modes"][agent], "0o700");
    assert!(
        !Path::new(agent).exists(),
        "the private home must be removed"
    );
    // The user's directory is untouched.
    assert!(user_agent.join("settings.json").exists() && user_agent.join("SYSTEM.md").exists());

    // Refusals: a relative agent directory, or one inside the worktree; Pi never runs.
    for bad in [
        "relative/agent",
        fx.repo.path().join(".pi").to_str().expect("utf8"),
    ] {
        let _ = std::fs::remove_file(&fx.log);
        let out = fx.run(&[("PI_CODING_AGENT_DIR", bad)]);
        assert_eq!(out.status.code(), Some(10), "{bad}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("PI_CODING_AGENT_DIR")
                || stderr(&out).contains("inside the worktree"),
            "{}",
            stderr(&out)
        );
        assert!(!fx.log.exists(), "{bad}: Pi ran");
    }
}

/// The private directory, the frozen contract and the transcript spool are owner-only
/// whatever the umask.
#[test]
fn the_private_directory_and_spool_are_owner_only_under_a_permissive_umask() {
    let fx = Fixture::new();
    let mut cmd = fx.command(&[]);
    // SAFETY: umask(2) is async-signal-safe and only changes the child's file-mode mask.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    let out = cmd.output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = fx.pi_log();
    let context: Value = log["context"].clone();
    let frozen = PathBuf::from(context["contract"].as_str().expect("contract"));
    let private = frozen.parent().expect("private dir").to_path_buf();
    let modes = &log["private_modes"];
    assert_eq!(modes[private.to_str().expect("utf8")], "0o700", "{modes}");
    assert_eq!(modes[frozen.to_str().expect("utf8")], "0o600", "{modes}");
    assert_eq!(
        modes[private.join("transcript.jsonl").to_str().expect("utf8")],
        "0o600",
        "{modes}"
    );
}

#[test]
fn transcript_is_copied_exactly_and_the_patch_is_published() {
    let fx = Fixture::new();
    let transcript = fx.dest("transcript.jsonl");
    let patch = fx.dest("attempt.patch");
    let out = fx.run(&[
        ("FAKE_PI_EDIT", "src/greeting.txt|world|satyrn"),
        (
            "SATYRN_ATTEMPT_TRANSCRIPT",
            transcript.to_str().expect("utf8"),
        ),
        ("SATYRN_ATTEMPT_PATCH", patch.to_str().expect("utf8")),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(fx.repo.file("src/greeting.txt")).expect("read"),
        b"hello satyrn\n"
    );
    assert_eq!(std::fs::read(&transcript).expect("transcript"), out.stdout);
    let lines: Vec<Value> = out
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1]["code"], "OK", "the edit went through satyrn-host");
    let patch_text = std::fs::read_to_string(&patch).expect("patch");
    assert!(
        patch_text.starts_with("diff --git a/src/greeting.txt b/src/greeting.txt\n"),
        "{patch_text}"
    );
    assert!(patch_text.contains("-hello world\n+hello satyrn\n"));
    // The patch applies to the base.
    git_ok(fx.repo.path(), &["stash", "-q"]);
    git_ok(
        fx.repo.path(),
        &["apply", "--check", patch.to_str().expect("utf8")],
    );
}

#[test]
fn no_change_publishes_the_transcript_but_no_patch() {
    let fx = Fixture::new();
    let transcript = fx.dest("t.jsonl");
    let patch = fx.dest("p.patch");
    let out = fx.run(&[
        (
            "SATYRN_ATTEMPT_TRANSCRIPT",
            transcript.to_str().expect("utf8"),
        ),
        ("SATYRN_ATTEMPT_PATCH", patch.to_str().expect("utf8")),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read(&transcript).expect("transcript"), out.stdout);
    assert!(!patch.exists(), "an empty patch is not published");
}

#[test]
fn a_failing_pi_is_exit_10_with_its_artifacts_preserved() {
    let fx = Fixture::new();
    let transcript = fx.dest("t.jsonl");
    let patch = fx.dest("p.patch");
    let out = fx.run(&[
        ("FAKE_PI_EXIT", "3"),
        ("FAKE_PI_EDIT", "src/greeting.txt|world|there"),
        (
            "SATYRN_ATTEMPT_TRANSCRIPT",
            transcript.to_str().expect("utf8"),
        ),
        ("SATYRN_ATTEMPT_PATCH", patch.to_str().expect("utf8")),
    ]);
    assert_eq!(out.status.code(), Some(10));
    assert!(
        stderr(&out).contains("pi exited unsuccessfully"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&transcript).expect("transcript"), out.stdout);
    assert!(
        std::fs::read_to_string(&patch)
            .expect("patch")
            .contains("+hello there")
    );
}

#[test]
fn editing_the_contract_cannot_widen_permissions_mid_run() {
    // A contract inside the repository that declares itself writable: the agent widens it
    // to `*` through satyrn (allowed), then tries an undeclared edit. Every request points
    // at the frozen copy, so the widening has no effect on this attempt.
    let fx = Fixture::new();
    let text = "id: attempt-test\ntask: t\nwritable_paths: ['contract.yaml', 'src/g*.txt']\n";
    std::fs::write(fx.repo.file("contract.yaml"), text).expect("write");
    fx.commit_all("contract");
    let out = fx.attempt(
        &["--model", "m", "contract.yaml"],
        &[(
            "FAKE_PI_EDIT",
            "contract.yaml|['contract.yaml', 'src/g*.txt']|['*'];README.md|readme|owned;src/greeting.txt|world|satyrn",
        )],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let codes: Vec<String> = out
        .stdout
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter_map(|v| v["code"].as_str().map(str::to_string))
        .collect();
    assert_eq!(codes, ["OK", "PATH_UNDECLARED", "OK"]);
    assert_eq!(
        std::fs::read_to_string(fx.repo.file("contract.yaml")).expect("read"),
        text.replace("['contract.yaml', 'src/g*.txt']", "['*']")
    );
    assert_eq!(
        std::fs::read(fx.repo.file("README.md")).expect("read"),
        b"readme\n"
    );
    assert_eq!(
        std::fs::read(fx.repo.file("src/greeting.txt")).expect("read"),
        b"hello satyrn\n"
    );
}

#[test]
fn artifact_destinations_are_refused_before_pi_runs_and_never_overwritten() {
    let fx = Fixture::new();
    let existing = fx.dest("existing.jsonl");
    std::fs::write(&existing, b"keep me").expect("write");
    let link = fx.dest("link.jsonl");
    std::os::unix::fs::symlink(fx.dest("target.jsonl"), &link).expect("symlink");
    let file_parent = fx.dest("a-file");
    std::fs::write(&file_parent, b"x").expect("write");
    let inside_worktree = fx.repo.file("transcript.jsonl");
    let inside_git = fx.repo.path().join(".git").join("transcript.jsonl");
    let cases: Vec<(&str, PathBuf)> = vec![
        ("existing", existing.clone()),
        ("dangling symlink", link.clone()),
        ("non-directory parent", file_parent.join("t.jsonl")),
        ("missing parent", fx.dest("missing/t.jsonl")),
        ("inside the worktree", inside_worktree.clone()),
        ("inside .git", inside_git.clone()),
        ("relative", PathBuf::from("relative.jsonl")),
    ];
    for variable in ["SATYRN_ATTEMPT_TRANSCRIPT", "SATYRN_ATTEMPT_PATCH"] {
        for (what, path) in &cases {
            let _ = std::fs::remove_file(&fx.log);
            let out = fx.run(&[(variable, path.to_str().expect("utf8"))]);
            assert_eq!(
                out.status.code(),
                Some(10),
                "{variable} {what}: {}",
                stderr(&out)
            );
            assert!(stderr(&out).contains(variable), "{what}: {}", stderr(&out));
            assert!(
                !fx.log.exists(),
                "{variable} {what}: Pi ran despite a refused destination"
            );
        }
    }
    assert_eq!(std::fs::read(&existing).expect("existing"), b"keep me");
    assert!(!fx.dest("target.jsonl").exists());
    assert!(!inside_worktree.exists() && !inside_git.exists());
    // Sibling success: a fresh name in the same directory.
    let fresh = fx.dest("fresh.jsonl");
    let out = fx.run(&[("SATYRN_ATTEMPT_TRANSCRIPT", fresh.to_str().expect("utf8"))]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read(&fresh).expect("fresh"), out.stdout);
}

/// The race of the artifact check: while attempts run, another process keeps swapping the
/// destination's parent between a real directory and symlinks into the worktree and its git
/// directory. Counted over many attempts: none ever publishes inside the repository, and the
/// attempts that find the real directory publish there (the sibling success).
#[test]
fn swapping_the_destination_parent_for_a_symlink_never_publishes_inside_the_repository() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let fx = Fixture::new();
    let base = fx.outside.path().to_path_buf();
    let flip = base.join("flip");
    // `flip` is always there: atomically exchanged (RENAME_EXCHANGE) with a symlink to the
    // worktree or to .git and back, so it is the real directory half of the time.
    std::fs::create_dir(&flip).expect("mkdir");
    let links = [base.join("to-worktree"), base.join("to-git")];
    std::os::unix::fs::symlink(fx.repo.path(), &links[0]).expect("symlink");
    std::os::unix::fs::symlink(fx.repo.path().join(".git"), &links[1]).expect("symlink");
    let exchange = |a: &Path, b: &Path| {
        rustix::fs::renameat_with(
            rustix::fs::CWD,
            a,
            rustix::fs::CWD,
            b,
            rustix::fs::RenameFlags::EXCHANGE,
        )
        .expect("exchange");
    };
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, flip, links) = (Arc::clone(&stop), flip.clone(), links.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for link in &links {
                    exchange(&flip, link);
                    exchange(&flip, link);
                    swaps += 2;
                }
            }
            swaps
        })
    };
    // Three attempts at a time, 20 each: against the swapper about a quarter find the real
    // directory and the rest a symlink (207 runs gave 47 and 160), so both sides are met.
    let next = std::sync::atomic::AtomicU32::new(0);
    let outcomes: Vec<(String, Option<i32>, Vec<u8>, String)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..3)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    for _ in 0..20 {
                        let name = format!("t-{}.jsonl", next.fetch_add(1, Ordering::Relaxed));
                        let out = fx.run(&[(
                            "SATYRN_ATTEMPT_TRANSCRIPT",
                            flip.join(&name).to_str().expect("utf8"),
                        )]);
                        mine.push((name, out.status.code(), out.stdout.clone(), stderr(&out)));
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker"))
            .collect()
    });
    let runs = outcomes.len();
    let mut expected: Vec<(String, Vec<u8>)> = Vec::new();
    let mut refused = 0u32;
    for (name, code, stdout, err) in outcomes {
        match code {
            Some(0) => expected.push((name, stdout)),
            Some(10) => refused += 1,
            other => panic!("unexpected exit {other:?}: {err}"),
        }
    }
    let published = expected.len();
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    eprintln!("{runs} runs, {published} published, {refused} refused, {swaps} swaps");
    // The worktree and its git directory (walked together): no transcript ever landed there.
    let inside: Vec<String> = walk(fx.repo.path())
        .into_iter()
        .filter(|p| p.ends_with(".jsonl"))
        .collect();
    assert!(
        inside.is_empty(),
        "published inside the repository: {inside:?}"
    );
    assert!(
        published > 0,
        "no attempt found the real directory (the sibling success)"
    );
    assert!(
        refused > 0,
        "no attempt met a symlink: the race was not exercised"
    );
    // Swapping has stopped: every success published into the real directory, exactly.
    for (name, stdout) in &expected {
        assert_eq!(
            &std::fs::read(flip.join(name)).expect("published in the real directory"),
            stdout
        );
    }
}

/// The parent is moved into the worktree while the transcript is being written (after
/// every check before the link): the publication is taken back and the attempt fails.
#[test]
fn a_parent_moved_into_the_worktree_during_publication_keeps_nothing_there() {
    let fx = Fixture::new();
    let parent = fx.outside.path().join("out");
    std::fs::create_dir(&parent).expect("mkdir");
    let loud_pi = fx.outside.path().join("loud-pi");
    std::fs::write(
        &loud_pi,
        "#!/usr/bin/env python3\nimport sys\nchunk = b'x' * (1 << 20) + b'\\n'\nfor _ in range(300):\n    sys.stdout.buffer.write(chunk)\n",
    )
    .expect("write");
    std::fs::set_permissions(&loud_pi, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let moved = fx.repo.path().join("moved");
    let watcher = {
        let (parent, moved) = (parent.clone(), moved.clone());
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
            while std::time::Instant::now() < deadline {
                let temp = std::fs::read_dir(&parent)
                    .map(|entries| {
                        entries
                            .filter_map(Result::ok)
                            .any(|e| e.file_name().to_string_lossy().contains(".satyrn-"))
                    })
                    .unwrap_or(false);
                if temp {
                    std::fs::rename(&parent, &moved).expect("move the parent into the worktree");
                    return true;
                }
                std::thread::yield_now();
            }
            false
        })
    };
    let out = fx
        .command(&[(
            "SATYRN_ATTEMPT_TRANSCRIPT",
            parent.join("t.jsonl").to_str().expect("utf8"),
        )])
        .env("SATYRN_PI_BIN", &loud_pi)
        .stdout(std::process::Stdio::null())
        .output()
        .expect("run");
    assert!(
        watcher.join().expect("watcher"),
        "the temporary never appeared"
    );
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("was moved inside"),
        "{}",
        stderr(&out)
    );
    assert!(
        !moved.join("t.jsonl").exists(),
        "the transcript stayed inside the worktree"
    );
    let left: Vec<String> = walk(&moved);
    assert!(left.is_empty(), "left inside the worktree: {left:?}");
}

/// Every file path under `dir`, recursively, as strings.
fn walk(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)
            .expect("read_dir")
            .filter_map(Result::ok)
        {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else {
                found.push(path.to_string_lossy().into_owned());
            }
        }
    }
    found
}

#[test]
fn a_destination_that_appears_during_the_run_is_not_overwritten() {
    let fx = Fixture::new();
    let dest = fx.dest("late.jsonl");
    // The fake Pi's log file doubles as the late arrival: point FAKE_PI_LOG at the destination.
    let out = fx
        .command(&[("SATYRN_ATTEMPT_TRANSCRIPT", dest.to_str().expect("utf8"))])
        .env("FAKE_PI_LOG", &dest)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("never overwritten"),
        "{}",
        stderr(&out)
    );
    let kept: Value = serde_json::from_slice(&std::fs::read(&dest).expect("dest"))
        .expect("the late file is intact");
    assert!(kept["argv"].is_array());
    let leftovers: Vec<_> = std::fs::read_dir(fx.outside.path())
        .expect("ls")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(".satyrn-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary left behind");
}

/// `--model=VALUE` is `--model VALUE`, and after `--` a contract may start with `-`; the
/// same name without `--` is still an unknown option (exit 2, no Pi).
#[test]
fn model_equals_and_double_dash_reach_a_contract_named_like_an_option() {
    let fx = Fixture::new();
    std::fs::copy(&fx.contract, fx.repo.file("-dash.yaml")).expect("copy");
    fx.commit_all("dash contract");
    let out = fx.attempt(&["--model=provider/model-2", "--", "-dash.yaml"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let argv = fx.pi_log()["argv"].clone();
    let model_at = argv
        .as_array()
        .expect("argv")
        .iter()
        .position(|a| a == "--model")
        .expect("--model");
    assert_eq!(argv[model_at + 1], "provider/model-2");
    std::fs::remove_file(&fx.log).expect("rm log");
    for args in [
        &["--model=provider/m", "-dash.yaml"][..],
        &["--model=provider/m", "--model", "x", "--", "-dash.yaml"][..],
        &["--model=", "--", "-dash.yaml"][..],
    ] {
        let out = fx.attempt(args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty());
        assert!(!fx.log.exists(), "{args:?}: Pi ran");
    }
}

/// A subdirectory with an empty `.git` directory, or a `.git` file that names no git
/// directory, is not a worktree root: `REPO_UNAVAILABLE` (exit 6) before Pi, nothing
/// written. The sibling success is every other attempt here, run at a real root.
#[test]
fn a_nested_empty_git_directory_or_bogus_git_file_is_not_a_worktree_root() {
    let fx = Fixture::new();
    let sub = fx.repo.path().join("sub");
    std::fs::create_dir_all(sub.join(".git")).expect("mkdir");
    let bogus = fx.repo.path().join("bogus");
    std::fs::create_dir_all(&bogus).expect("mkdir");
    std::fs::write(bogus.join(".git"), b"not a gitdir line\n").expect("write");
    let before = git_ok(
        fx.repo.path(),
        &["status", "--porcelain", "--untracked-files=all"],
    );
    for dir in [&sub, &bogus] {
        let out = fx.command(&[]).current_dir(dir).output().expect("run");
        assert_eq!(
            out.status.code(),
            Some(6),
            "{}: {}",
            dir.display(),
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("is not the root of a git worktree"),
            "{}",
            stderr(&out)
        );
        assert!(!fx.log.exists(), "Pi ran in {}", dir.display());
    }
    assert_eq!(
        git_ok(
            fx.repo.path(),
            &["status", "--porcelain", "--untracked-files=all"]
        ),
        before
    );
}

/// A stale (prunable) worktree registration, whose directory is gone, contains nothing: it
/// no longer makes every artifact destination fail. A live registration still refuses.
#[test]
fn a_prunable_worktree_registration_does_not_block_artifact_destinations() {
    let fx = Fixture::new();
    let linked = fx.outside.path().join("linked");
    git_ok(
        fx.repo.path(),
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            linked.to_str().expect("utf8"),
        ],
    );
    // While it exists, a destination inside the linked worktree is refused.
    let inside_linked = linked.join("t.jsonl");
    let out = fx.run(&[(
        "SATYRN_ATTEMPT_TRANSCRIPT",
        inside_linked.to_str().expect("utf8"),
    )]);
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("which the attempt may change"),
        "{}",
        stderr(&out)
    );
    assert!(!inside_linked.exists());
    // Its directory disappears without `git worktree remove`: the registration is prunable.
    std::fs::remove_dir_all(&linked).expect("rm");
    assert!(
        git_ok(fx.repo.path(), &["worktree", "list", "--porcelain"]).contains("prunable"),
        "the registration should be prunable"
    );
    let transcript = fx.dest("after-prune.jsonl");
    let patch = fx.dest("after-prune.patch");
    let out = fx.run(&[
        ("FAKE_PI_EDIT", "src/greeting.txt|world|satyrn"),
        (
            "SATYRN_ATTEMPT_TRANSCRIPT",
            transcript.to_str().expect("utf8"),
        ),
        ("SATYRN_ATTEMPT_PATCH", patch.to_str().expect("utf8")),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read(&transcript).expect("transcript"), out.stdout);
    assert!(
        std::fs::read_to_string(&patch)
            .expect("patch")
            .contains("+hello satyrn")
    );
}

/// The transcript and the patch cannot share one file, and a destination ending in `/`
/// names a directory: both refused before Pi, nothing created.
#[test]
fn identical_or_directory_shaped_destinations_are_refused_before_pi() {
    let fx = Fixture::new();
    let same = fx.dest("same.out");
    let spelled_twice = fx.outside.path().join(".").join("same.out");
    let out = fx.run(&[
        ("SATYRN_ATTEMPT_TRANSCRIPT", same.to_str().expect("utf8")),
        (
            "SATYRN_ATTEMPT_PATCH",
            spelled_twice.to_str().expect("utf8"),
        ),
    ]);
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("name the same file"),
        "{}",
        stderr(&out)
    );
    assert!(!fx.log.exists(), "Pi ran");
    assert!(!same.exists());
    for shaped in ["dir-shaped/", "dot-shaped/."] {
        let path = format!("{}/{shaped}", fx.outside.path().display());
        let out = fx.run(&[("SATYRN_ATTEMPT_TRANSCRIPT", path.as_str())]);
        assert_eq!(out.status.code(), Some(10), "{shaped}: {}", stderr(&out));
        assert!(!fx.log.exists(), "{shaped}: Pi ran");
        assert!(!fx.dest(shaped.trim_end_matches(['/', '.'])).exists());
    }
    // A parent reached through a symbolic link is refused too (give the resolved path).
    std::os::unix::fs::symlink(fx.outside.path(), fx.dest("alias")).expect("symlink");
    let through = fx.dest("alias").join("t.jsonl");
    let out = fx.run(&[("SATYRN_ATTEMPT_TRANSCRIPT", through.to_str().expect("utf8"))]);
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    assert!(!fx.dest("t.jsonl").exists());
    // Siblings: two different names in the same directory both publish.
    let out = fx.run(&[
        ("FAKE_PI_EDIT", "src/greeting.txt|world|satyrn"),
        (
            "SATYRN_ATTEMPT_TRANSCRIPT",
            fx.dest("t.out").to_str().expect("utf8"),
        ),
        (
            "SATYRN_ATTEMPT_PATCH",
            fx.dest("p.out").to_str().expect("utf8"),
        ),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(fx.dest("t.out").exists() && fx.dest("p.out").exists());
}

/// A contract that is a FIFO is refused at once (`CONTRACT_UNREADABLE`, exit 3) instead of
/// blocking the attempt forever.
#[test]
fn a_fifo_contract_is_refused_at_once() {
    let fx = Fixture::new();
    let fifo = fx.dest("contract.fifo");
    let c = std::ffi::CString::new(fifo.to_str().expect("utf8")).expect("cstring");
    // SAFETY: mkfifo(3) with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut child = fx
        .attempt_command(&["--model", "m", fifo.to_str().expect("utf8")], &[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().expect("try_wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("attempt blocked on a FIFO contract");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a regular file"),
        "{}",
        stderr(&out)
    );
    assert!(!fx.log.exists(), "Pi ran");
}

/// `attempt` can be stopped by its PID: a SIGTERM to the attempt alone (not its group) is
/// forwarded to Pi; the attempt waits for Pi, publishes the transcript Pi produced, reports
/// the interruption (exit 10) and removes its private directory.
#[test]
fn sigterm_to_the_attempt_is_forwarded_to_pi_and_reported() {
    let fx = Fixture::new();
    let slow_pi = fx.outside.path().join("slow-pi");
    let marker = fx.dest("pi-started");
    let got = fx.dest("pi-got-signal");
    std::fs::write(
        &slow_pi,
        format!(
            "#!/usr/bin/env python3\nimport json, os, signal, sys, time\n\
             def on_term(sig, frame):\n    open({got:?}, 'w').write(str(sig))\n    \
             sys.stdout.write('{{\"type\":\"stopped\"}}\\n'); sys.stdout.flush(); sys.exit(143)\n\
             signal.signal(signal.SIGTERM, on_term)\n\
             ctx = json.load(open(os.environ['SATYRN_MUTATION_CONTEXT_FILE']))\n\
             sys.stdout.write('{{\"type\":\"session\"}}\\n'); sys.stdout.flush()\n\
             open({marker:?}, 'w').write(os.path.dirname(ctx['contract']))\n\
             time.sleep(60)\n",
            got = got.to_str().expect("utf8"),
            marker = marker.to_str().expect("utf8"),
        ),
    )
    .expect("write");
    std::fs::set_permissions(&slow_pi, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let transcript = fx.dest("t.jsonl");
    let mut child = fx
        .command(&[(
            "SATYRN_ATTEMPT_TRANSCRIPT",
            transcript.to_str().expect("utf8"),
        )])
        .env("SATYRN_PI_BIN", &slow_pi)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !marker.exists() {
        assert!(std::time::Instant::now() < deadline, "Pi never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let private = PathBuf::from(std::fs::read_to_string(&marker).expect("marker"));
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) of our own child's PID.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    while child.try_wait().expect("try_wait").is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the attempt did not stop after SIGTERM"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("interrupted by SIGTERM"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&got).expect("Pi got the signal"),
        "15"
    );
    assert_eq!(
        out.stdout,
        b"{\"type\":\"session\"}\n{\"type\":\"stopped\"}\n"
    );
    assert_eq!(std::fs::read(&transcript).expect("transcript"), out.stdout);
    assert!(!private.exists(), "the private directory was not removed");
}

/// `SIGKILL` cannot be caught or forwarded: Pi gets `SIGTERM` from the kernel when the
/// attempt dies (its parent-death signal), so no Pi outlives a killed attempt; the private
/// directory it leaves is removed by the next attempt.
#[test]
fn sigkill_to_the_attempt_ends_pi_with_it() {
    let fx = Fixture::new();
    let slow_pi = fx.outside.path().join("slow-pi");
    let started = fx.dest("pi-pid");
    let got = fx.dest("pi-got-signal");
    std::fs::write(
        &slow_pi,
        format!(
            "#!/usr/bin/env python3\nimport os, signal, sys, time\n\
             def on_term(sig, frame):\n    open({got:?}, 'w').write(str(sig)); sys.exit(143)\n\
             signal.signal(signal.SIGTERM, on_term)\n\
             open({started:?} + '.tmp', 'w').write(str(os.getpid()))\n\
             os.rename({started:?} + '.tmp', {started:?})\n\
             time.sleep(60)\n",
            got = got.to_str().expect("utf8"),
            started = started.to_str().expect("utf8"),
        ),
    )
    .expect("write");
    std::fs::set_permissions(&slow_pi, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // The killed attempt's private directory stays here, not in the machine's /tmp.
    let tmp = tempfile::tempdir().expect("tmp");
    let mut child = fx
        .command(&[("TMPDIR", tmp.path().to_str().expect("utf8"))])
        .env("SATYRN_PI_BIN", &slow_pi)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let limit = std::time::Duration::from_secs(30);
    assert!(
        crate::deliver_support::poll_until(limit, || started.exists()),
        "Pi never started"
    );
    let pi: i32 = std::fs::read_to_string(&started)
        .expect("pid")
        .parse()
        .expect("a pid");
    assert!(crate::deliver_support::alive(pi));
    child.kill().expect("SIGKILL the attempt");
    child.wait().expect("reap the attempt");
    assert!(
        crate::deliver_support::poll_until(limit, || !crate::deliver_support::alive(pi)),
        "Pi outlived the killed attempt"
    );
    assert_eq!(
        std::fs::read_to_string(&got).expect("Pi got a signal"),
        "15"
    );
    // The killed attempt's private directory is left. The next attempt keeps it while its
    // marker is younger than a minute (Pi may still be finishing), then removes it (its
    // owner is gone) and says so.
    let left = crate::support::dir_entries(tmp.path());
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].starts_with("satyrn-attempt-"), "{left:?}");
    let tmpdir = [("TMPDIR", tmp.path().to_str().expect("utf8"))];
    let young = fx.command(&tmpdir).output().expect("run attempt");
    assert_eq!(young.status.code(), Some(0), "{}", stderr(&young));
    assert!(
        !stderr(&young).contains("removed the abandoned"),
        "{}",
        stderr(&young)
    );
    assert_eq!(crate::support::dir_entries(tmp.path()), left);
    backdate_marker(&tmp.path().join(&left[0]));
    let next = fx
        .command(&[("TMPDIR", tmp.path().to_str().expect("utf8"))])
        .output()
        .expect("run attempt");
    assert_eq!(next.status.code(), Some(0), "{}", stderr(&next));
    assert!(
        stderr(&next).contains(&format!(
            "satyrn-host attempt: removed the abandoned directory {}",
            tmp.path().join(&left[0]).display()
        )),
        "{}",
        stderr(&next)
    );
    assert_eq!(
        crate::support::dir_entries(tmp.path()),
        Vec::<String>::new()
    );
}

#[test]
fn usage_and_check_refusals_run_no_pi() {
    let fx = Fixture::new();
    let run = |args: &[&str], env: &[(&str, &str)]| fx.attempt(args, env);
    let contract = fx.contract.to_str().expect("utf8");
    for (args, env, status) in [
        (vec![contract], vec![], 2),
        (vec!["--model", "-x", contract], vec![], 2),
        (vec![contract], vec![("SATYRN_MODEL", "--help")], 2),
        (vec!["--model", "m"], vec![], 2),
        (
            vec!["--model", "m", "/nonexistent/contract.yaml"],
            vec![],
            3,
        ),
    ] {
        let out = run(&args, &env);
        assert_eq!(
            out.status.code(),
            Some(status),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(out.stdout.is_empty());
        assert!(!fx.log.exists(), "{args:?}: Pi ran");
    }
    // No declared tracked file → ATTEMPT_FAILED before Pi.
    let empty = tempfile::tempdir().expect("tempdir");
    let none = empty.path().join("c.yaml");
    std::fs::write(&none, "id: x\ntask: t\nwritable_paths: ['nothing/*']\n").expect("write");
    let out = run(&["--model", "m", none.to_str().expect("utf8")], &[]);
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
    assert!(stderr(&out).contains("no tracked regular file"));
    assert!(!fx.log.exists());
    // A tracked symlink never enters the map, even when declared.
    std::os::unix::fs::symlink("greeting.txt", fx.repo.file("src/glink.txt")).expect("symlink");
    fx.commit_all("link");
    // Sibling success: SATYRN_MODEL is honoured.
    let out = run(&[contract], &[("SATYRN_MODEL", "env/model")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = fx.pi_log();
    assert!(
        log["argv"]
            .as_array()
            .expect("argv")
            .iter()
            .any(|a| a == "env/model")
    );
    let ctx: Value = log["context"].clone();
    assert_eq!(
        ctx["revisions"]
            .as_object()
            .expect("map")
            .keys()
            .collect::<Vec<_>>(),
        ["src/greeting.txt"]
    );
}

#[test]
fn a_contract_inside_the_repository_is_read_from_it() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.repo.file("..hidden")).expect("mkdir");
    let inside = fx.repo.file("..hidden/contract.yaml");
    std::fs::copy(&fx.contract, &inside).expect("copy");
    fx.commit_all("contract");
    let out = fx.attempt(&["--model", "m", "..hidden/contract.yaml"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("contract read from the repository"),
        "{}",
        stderr(&out)
    );
    let _: &Path = fx.repo.path();
}

#[test]
fn files_named_like_temporaries_that_no_journal_proves_are_kept() {
    // What a killed `satyrn-host protocol` left is swept on the proof of the worktree's
    // journal (`publish_kill`); a file Pi wrote with a temporary's name and a dead pid has
    // no entry, so it is Pi's file and stays.
    let fx = Fixture::new();
    let stale = fx.repo.file("src/.greeting.txt.satyrn-4242-0badf00d01.tmp");
    let lookalike = fx.repo.file("src/.greeting.txt.satyrn-x.tmp");
    let patch = fx.dest("p.patch");
    let out = fx.run(&[
        ("FAKE_PI_EDIT", "src/greeting.txt|world|satyrn"),
        (
            "FAKE_PI_LEAVE",
            &format!("{};{}", stale.display(), lookalike.display()),
        ),
        ("SATYRN_ATTEMPT_PATCH", patch.to_str().expect("utf8")),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stale.exists(),
        "a name alone proved nothing, yet it was removed"
    );
    assert!(!stderr(&out).contains("satyrn-4242"), "{}", stderr(&out));
    assert!(
        lookalike.exists(),
        "a file that is not a satyrn temporary was removed"
    );
    let patch_text = std::fs::read_to_string(&patch).expect("patch");
    assert!(!patch_text.contains("satyrn-4242"), "{patch_text}");
}

/// The task may be up to 100 KiB (the prompt reaches Pi on its standard input, so no kernel
/// limit of one argument applies); one byte more is refused before Pi starts.
#[test]
fn a_task_of_100_kib_reaches_pi_and_one_byte_more_is_refused() {
    let fx = Fixture::new();
    let big = fx.outside.path().join("big.yaml");
    let limit = satyrn_attempt::prompt::MAX_TASK_BYTES;
    let write = |task: &str| {
        std::fs::write(
            &big,
            format!("id: big\ntask: {task}\nwritable_paths: ['src/g*.txt']\n"),
        )
        .expect("write");
    };
    write(&"x".repeat(limit));
    let out = fx.attempt(&["--model".as_ref(), "m".as_ref(), big.as_os_str()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let prompt = fx.pi_log()["prompt"].as_str().expect("prompt").to_string();
    assert!(prompt.starts_with(&format!("Task:\n{}\n\n", "x".repeat(limit))));
    std::fs::remove_file(&fx.log).expect("rm");
    write(&"x".repeat(limit + 1));
    let out = fx.attempt(&["--model".as_ref(), "m".as_ref(), big.as_os_str()], &[]);
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "the task is {} bytes, over the {limit}-byte limit",
            limit + 1
        )),
        "{}",
        stderr(&out)
    );
    assert!(!fx.log.exists(), "Pi ran");
}

#[test]
fn files_too_large_to_read_or_edit_never_enter_the_revision_map() {
    let fx = Fixture::new();
    std::fs::write(
        fx.repo.file("src/giant.txt"),
        vec![b'a'; 16 * 1024 * 1024 + 1],
    )
    .expect("write");
    std::fs::write(fx.repo.file("src/gsmall.txt"), vec![b'a'; 1024]).expect("write");
    fx.commit_all("big");
    let out = fx.run(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = fx.pi_log();
    let ctx: Value = log["context"].clone();
    let mut keys: Vec<&String> = ctx["revisions"].as_object().expect("map").keys().collect();
    keys.sort();
    assert_eq!(keys, ["src/greeting.txt", "src/gsmall.txt"]);
}

/// The model value Pi received (`--model VALUE`) in the fake Pi's log.
fn model_given_to_pi(fx: &Fixture) -> String {
    let log = fx.pi_log();
    let argv = log["argv"].as_array().expect("argv");
    let at = argv.iter().position(|a| a == "--model").expect("--model");
    argv[at + 1].as_str().expect("model").to_owned()
}

/// Several `--model`s are one per attempt: attempt I (from `SATYRN_ATTEMPT_INDEX`) gets the
/// I-th. A list whose length is not `SATYRN_ATTEMPTS`, or without the index, is a usage error
/// (exit 2) before Pi runs, leaving the repository as it was; a single `--model` ignores the
/// index, as before.
#[test]
fn a_list_of_models_gives_attempt_i_the_ith_and_a_wrong_length_runs_no_pi() {
    let fx = Fixture::new();
    let contract = fx.contract.to_str().expect("utf8");
    let list = ["--model", "p/first", "--model", "p/second", contract];
    let before = crate::support::snapshot(&fx.repo.file("src/greeting.txt"));
    for env in [
        vec![("SATYRN_ATTEMPT_INDEX", "1"), ("SATYRN_ATTEMPTS", "3")],
        vec![("SATYRN_ATTEMPT_INDEX", "1")],
        vec![],
        vec![("SATYRN_ATTEMPT_INDEX", "3"), ("SATYRN_ATTEMPTS", "2")],
    ] {
        let out = fx.attempt(&list, &env);
        assert_eq!(out.status.code(), Some(2), "{env:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty());
        assert!(
            stderr(&out).contains("SATYRN_ATTEMPT"),
            "{env:?}: {}",
            stderr(&out)
        );
        assert!(!fx.log.exists(), "{env:?}: Pi ran");
        assert_eq!(
            crate::support::snapshot(&fx.repo.file("src/greeting.txt")),
            before
        );
    }
    for (index, model) in [("2", "p/second"), ("1", "p/first")] {
        let out = fx.attempt(
            &list,
            &[("SATYRN_ATTEMPT_INDEX", index), ("SATYRN_ATTEMPTS", "2")],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(model_given_to_pi(&fx), model);
        assert!(
            stderr(&out).contains(&format!("attempt {index} of 2 uses model {model}")),
            "{}",
            stderr(&out)
        );
    }
    let out = fx.attempt(
        &["--model", "p/only", contract],
        &[("SATYRN_ATTEMPT_INDEX", "3"), ("SATYRN_ATTEMPTS", "5")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(model_given_to_pi(&fx), "p/only");
}

/// Makes the owner marker in `dir` two minutes old, as if its attempt had been killed then.
fn backdate_marker(dir: &Path) {
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(120);
    std::fs::File::options()
        .write(true)
        .open(dir.join("owner"))
        .and_then(|f| f.set_modified(old))
        .expect("backdate the owner marker");
}

/// A private directory that cannot be removed (every `unlinkat` fails with `EIO`) is
/// reported as retained (exit 10), and its owner marker is taken out of it, so no later
/// attempt removes what the report names, however old it gets.
#[test]
fn a_retained_private_directory_is_never_swept_later() {
    use crate::faults::{Fault, inject};
    let fx = Fixture::new();
    let tmp = tempfile::tempdir().expect("tmp");
    let tmpdir = [("TMPDIR", tmp.path().to_str().expect("utf8"))];
    let mut cmd = fx.command(&tmpdir);
    inject(&mut cmd, &[Fault::always(libc::SYS_unlinkat, libc::EIO)]);
    let out = cmd.output().expect("run attempt");
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
    let kept = crate::support::dir_entries(tmp.path());
    assert_eq!(kept.len(), 1, "{kept:?}");
    let dir = tmp.path().join(&kept[0]);
    assert!(
        stderr(&out).contains(&format!("cleanup failed, retained {}", dir.display())),
        "{}",
        stderr(&out)
    );
    // `remove_dir_all` unlinks with `unlinkat`, the marker is taken out with `unlink`.
    assert!(!dir.join("owner").exists(), "the marker is still there");
    let next = fx.command(&tmpdir).output().expect("run attempt");
    assert_eq!(next.status.code(), Some(0), "{}", stderr(&next));
    assert!(
        dir.exists(),
        "a later attempt removed the retained directory"
    );
    assert_eq!(crate::support::dir_entries(tmp.path()), kept);
}

/// A temporary directory that fills up (a real `ENOSPC`: a small `tmpfs` of the attempt's
/// own) at every size from 4 KiB up: each attempt either runs Pi and succeeds, or fails
/// with `ATTEMPT_FAILED` naming the private file it could not write — before Pi ran, with
/// nothing on stdout — or Pi fails to write its transcript into the full spool and the
/// attempt reports Pi's failure. The repository is unchanged every time.
#[test]
fn a_full_temporary_directory_fails_the_attempt_at_the_step_it_reached() {
    let mut steps = std::collections::BTreeSet::new();
    let mut succeeded = 0;
    for kib in (4u64..=128).step_by(4) {
        let fx = Fixture::new();
        let status_before = git_ok(fx.repo.path(), &["status", "--porcelain=v1", "-z"]);
        let tmp = tempfile::tempdir().expect("tmp");
        let mut cmd = fx.command(&[("TMPDIR", tmp.path().to_str().expect("utf8"))]);
        crate::faults::small_disk(&mut cmd, tmp.path(), kib * 1024);
        let out = cmd.output().expect("run attempt");
        let said = stderr(&out);
        match out.status.code() {
            Some(0) => {
                succeeded += 1;
                assert!(fx.log.exists(), "{kib} KiB: Pi did not run");
            }
            // Pi itself could not write its transcript into the full spool, and said so.
            Some(10) if said.contains("ATTEMPT_FAILED: pi exited unsuccessfully") => {
                assert!(
                    said.contains("No space left on device"),
                    "{kib} KiB: {said}"
                );
                steps.insert("write the transcript (Pi)".to_string());
            }
            Some(10) => {
                let step = said
                    .strip_prefix("satyrn-host attempt: ATTEMPT_FAILED: cannot ")
                    .and_then(|rest| rest.split_once(": No space left on device"))
                    .map(|(step, _)| step.to_string())
                    .unwrap_or_else(|| panic!("{kib} KiB: exit 10: {said}"));
                steps.insert(step);
                assert!(out.stdout.is_empty(), "{kib} KiB");
                assert!(!fx.log.exists(), "{kib} KiB: Pi ran");
            }
            other => panic!("{kib} KiB: exit {other:?}: {said}"),
        }
        assert_eq!(
            git_ok(fx.repo.path(), &["status", "--porcelain=v1", "-z"]),
            status_before,
            "{kib} KiB: the repository changed"
        );
    }
    assert!(succeeded > 0, "no size was large enough");
    assert!(steps.len() >= 3, "failures at too few steps: {steps:?}");
}

/// An artifact that cannot be written — its destination's disk is full (a real `ENOSPC`
/// on a small `tmpfs`), or `fsync` fails with `EIO` — fails the attempt with exit 10,
/// naming the destination and the error; on the real disk the destination directory is
/// left exactly as it was (no partial file, no temporary) and the private directory is gone.
/// The sibling: the same attempt on a disk with room succeeds (its artifacts vanish with
/// that private disk; other tests check their bytes).
#[test]
fn an_artifact_that_cannot_be_written_fails_the_attempt_and_leaves_nothing_partial() {
    use crate::faults::{Fault, inject, small_disk};
    let artifacts = |dest: &Path| {
        let (t, p) = (dest.join("t.jsonl"), dest.join("p.patch"));
        [
            (
                "SATYRN_ATTEMPT_TRANSCRIPT",
                t.to_str().expect("utf8").to_string(),
            ),
            (
                "SATYRN_ATTEMPT_PATCH",
                p.to_str().expect("utf8").to_string(),
            ),
        ]
    };
    // A full disk: the transcript fits in the first page, the patch does not.
    let fx = Fixture::new();
    let dest = tempfile::tempdir().expect("dest");
    let env = artifacts(dest.path());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut with_edit = env.clone();
    with_edit.push(("FAKE_PI_EDIT", "src/greeting.txt|hello|HELLO"));
    let mut cmd = fx.command(&with_edit);
    small_disk(&mut cmd, dest.path(), 4 * 1024);
    let out = cmd.output().expect("run attempt");
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "ATTEMPT_FAILED: publishing SATYRN_ATTEMPT_PATCH={}: writing failed: No space left on device",
            dest.path().join("p.patch").display()
        )),
        "{}",
        stderr(&out)
    );

    // A disk whose fsync fails: nothing appears at either destination.
    let fx = Fixture::new();
    let tmp = tempfile::tempdir().expect("tmp");
    let mut env_tmp = env.clone();
    let tmp_path = tmp.path().to_str().expect("utf8").to_string();
    env_tmp.push(("TMPDIR", &tmp_path));
    let mut cmd = fx.command(&env_tmp);
    inject(&mut cmd, &[Fault::always(libc::SYS_fsync, libc::EIO)]);
    let out = cmd.output().expect("run attempt");
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ATTEMPT_FAILED: publishing SATYRN_ATTEMPT_TRANSCRIPT=")
            && stderr(&out).contains("Input/output error"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        crate::support::dir_entries(dest.path()),
        Vec::<String>::new(),
        "something was left at the destination"
    );
    assert_eq!(
        crate::support::dir_entries(tmp.path()),
        Vec::<String>::new()
    );

    // With room: both artifacts.
    let fx = Fixture::new();
    let mut cmd = fx.command(&with_edit);
    small_disk(&mut cmd, dest.path(), 64 * 1024);
    let out = cmd.output().expect("run attempt");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A kernel without `pidfd_open`: the attempt cannot watch Pi, so it kills and reaps it,
/// says so (exit 10) and removes its private directory; no Pi is left running.
#[test]
fn a_kernel_without_pidfd_open_fails_the_attempt_and_leaves_no_pi() {
    use crate::deliver_support::{alive, poll_until};
    use crate::faults::{Fault, inject};
    let fx = Fixture::new();
    let slow_pi = fx.outside.path().join("slow-pi");
    let started = fx.dest("pi-pid");
    std::fs::write(
        &slow_pi,
        format!(
            "#!/bin/sh\necho $$ > '{0}.tmp' && mv '{0}.tmp' '{0}'\nexec sleep 60\n",
            started.display()
        ),
    )
    .expect("write");
    std::fs::set_permissions(&slow_pi, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let tmp = tempfile::tempdir().expect("tmp");
    let mut cmd = fx.command(&[("TMPDIR", tmp.path().to_str().expect("utf8"))]);
    cmd.env("SATYRN_PI_BIN", &slow_pi);
    inject(
        &mut cmd,
        &[Fault::always(libc::SYS_pidfd_open, libc::ENOSYS)],
    );
    let out = cmd.output().expect("run attempt");
    assert_eq!(out.status.code(), Some(10), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "ATTEMPT_FAILED: cannot wait for pi (it was killed): Function not implemented"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        crate::support::dir_entries(tmp.path()),
        Vec::<String>::new()
    );
    // Pi was killed, before or after it wrote its pid: either way none is running.
    if poll_until(std::time::Duration::from_millis(500), || started.exists()) {
        let pid: i32 = std::fs::read_to_string(&started)
            .expect("pid")
            .trim()
            .parse()
            .expect("a pid");
        assert!(!alive(pid), "Pi {pid} outlived the attempt");
    }
    let ok = fx.command(&[]).output().expect("run attempt");
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
}
