//! `satyrn-host confine` against the ways out an adversarial review of it found: typing
//! into the caller's terminal, processes that outlive the run, descriptors inherited
//! past the rules, credential agents named in the environment, a broker held open by
//! idle or slow connections, a `--home` or a hard link that makes a worktree file
//! writable. Each with its sibling that still works, and the files proven unchanged.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::confine::Fixture;
use crate::support::{host_bin, snapshot};

/// The run's command, as `argv`, under a terminal of its own (a pty that is the
/// controlling terminal of the session it leads): what it printed there.
fn under_a_terminal(argv: &[String]) -> String {
    let driver = r#"
import fcntl, os, pty, select, subprocess, sys, termios
master, slave = pty.openpty()
def own_terminal():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
p = subprocess.Popen(sys.argv[1:], stdin=slave, stdout=slave, stderr=subprocess.DEVNULL,
                     preexec_fn=own_terminal)
os.close(slave)
out = b""
while True:
    ready, _, _ = select.select([master], [], [], 30)
    if not ready:
        break
    try:
        chunk = os.read(master, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
p.wait()
sys.stdout.write(out.decode(errors="replace"))
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(driver)
        .args(argv)
        .stdin(Stdio::null())
        .output()
        .expect("pty driver");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_confined_command_cannot_type_into_its_terminal_and_still_uses_it() {
    let f = Fixture::new();
    let probe = r##"
import errno, fcntl, os, termios
fd = os.open("/dev/tty", os.O_RDWR)
for name, request, arg in [("TIOCSTI", termios.TIOCSTI, b"#"),
                           ("TIOCGWINSZ", termios.TIOCGWINSZ, b"\0" * 8)]:
    try:
        fcntl.ioctl(fd, request, arg)
        print(name, "OK", flush=True)
    except OSError as e:
        print(name, errno.errorcode[e.errno], flush=True)
"##;
    let python = ["python3".to_owned(), "-c".to_owned(), probe.to_owned()];
    let legacy =
        std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").is_ok_and(|v| v.trim() == "1");
    // The sibling: the same probe on the same kind of terminal, not confined.
    let plain = under_a_terminal(&python);
    assert!(plain.contains("TIOCGWINSZ OK"), "{plain}");
    if legacy {
        assert!(
            plain.contains("TIOCSTI OK"),
            "this kernel lets a process type into its own terminal: {plain}"
        );
    }
    let mut argv: Vec<String> = vec![
        host_bin().display().to_string(),
        "confine".into(),
        "--repo".into(),
        f.root().display().to_string(),
        f.contract.path.display().to_string(),
        "--".into(),
    ];
    argv.extend(python);
    let confined = under_a_terminal(&argv);
    assert!(confined.contains("TIOCSTI EPERM"), "{confined}");
    assert!(
        confined.contains("TIOCGWINSZ OK"),
        "the terminal stays usable: {confined}"
    );
}

/// Whether a process whose command line holds `marker` is alive (not a zombie).
fn alive_with(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            !zombie && memchr::memmem::find(&cmdline, marker.as_bytes()).is_some()
        })
        .count()
}

#[test]
fn no_process_of_the_command_outlives_the_run_however_deep_it_hides() {
    let f = Fixture::new();
    let root = f.root();
    // The command starts a session of its own holding a chain of nested children, the
    // deepest appending to a scratch file, and exits once that file exists.
    let chain = r#"
import os, sys, time
depth, out, marker = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if os.fork() == 0:
    os.setsid()
    for _ in range(depth):
        if os.fork() != 0:
            while True:
                time.sleep(10)
    while True:
        with open(out, "a") as f:
            f.write("x\n")
        time.sleep(0.02)
deadline = time.time() + 20
while not os.path.exists(out) and time.time() < deadline:
    time.sleep(0.01)
"#;
    let rounds = 3;
    let mut survivors = 0;
    for round in 0..rounds {
        let marker = format!("satyrn-chain-marker-{}-{round}", std::process::id());
        let out_file = root.join(format!("target/alive-{round}"));
        let out = f
            .command(
                &[],
                &[
                    "python3",
                    "-c",
                    chain,
                    "100",
                    &out_file.display().to_string(),
                    &marker,
                ],
            )
            .output()
            .expect("confine");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out_file.exists(), "the deepest child ran");
        let written = std::fs::metadata(&out_file).expect("stat").len();
        // Anything left would keep appending every 20 ms.
        let deadline = Instant::now() + Duration::from_millis(500);
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let later = std::fs::metadata(&out_file).expect("stat").len();
        let left = alive_with(&marker);
        if later != written || left > 0 {
            survivors += 1;
        }
        assert_eq!(left, 0, "round {round}: processes of the chain still alive");
        assert_eq!(later, written, "round {round}: the chain still writes");
    }
    assert_eq!(survivors, 0, "of {rounds} rounds");
}

#[test]
fn a_process_whose_first_thread_exited_is_killed_with_its_other_threads() {
    let f = Fixture::new();
    let root = f.root();
    // A process of its own session whose main thread ends (`exit` of that thread only,
    // leaving a zombie leader) while another thread keeps appending to a scratch file.
    let leader = r#"
import ctypes, os, platform, sys, threading, time
out = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    def append():
        while True:
            with open(out, "a") as f:
                f.write("x\n")
            time.sleep(0.02)
    threading.Thread(target=append).start()
    time.sleep(0.1)
    ctypes.CDLL(None).syscall(60 if platform.machine() == "x86_64" else 93, 0)
deadline = time.time() + 20
while not os.path.exists(out) and time.time() < deadline:
    time.sleep(0.01)
time.sleep(0.2)
"#;
    let rounds = 3;
    let mut survivors = 0;
    for round in 0..rounds {
        let out_file = root.join(format!("target/thread-{round}"));
        let out = f
            .command(
                &[],
                &["python3", "-c", leader, &out_file.display().to_string()],
            )
            .output()
            .expect("confine");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(out_file.exists(), "the thread ran");
        let written = std::fs::metadata(&out_file).expect("stat").len();
        let deadline = Instant::now() + Duration::from_millis(500);
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if std::fs::metadata(&out_file).expect("stat").len() != written {
            survivors += 1;
        }
    }
    assert_eq!(
        survivors, 0,
        "rounds of {rounds} whose thread still wrote after confine"
    );
}

#[test]
fn inherited_descriptors_and_credential_agents_do_not_reach_the_command() {
    let f = Fixture::new();
    let root = f.root();
    let readme = snapshot(&root.join("README.md"));
    // The caller holds the tracked README open for appending, without close-on-exec.
    let inner = format!(
        "exec 7>>README.md; exec {} confine --repo {} {} -- sh -c \
         'echo injected >&7; echo \"fd7 $?\"; echo \"agent=${{SSH_AUTH_SOCK:-unset}} pid=${{SSH_AGENT_PID:-unset}} tmux=${{TMUX:-unset}} display=${{DISPLAY:-unset}} keep=$KEEP\"'",
        host_bin().display(),
        root.display(),
        f.contract.path.display()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(&inner)
        .current_dir(&root)
        .env("HOME", f.home.path())
        .env("SSH_AUTH_SOCK", "/tmp/agent.sock")
        .env("SSH_AGENT_PID", "4242")
        .env("TMUX", "/tmp/tmux-0/default,1,0")
        .env("DISPLAY", ":0")
        .env("KEEP", "1")
        .stdin(Stdio::null())
        .output()
        .expect("sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("fd7 ") && l != "fd7 0"),
        "fd 7 is closed in the command: {stdout}"
    );
    assert!(
        stdout.contains("agent=unset pid=unset tmux=unset display=unset keep=1"),
        "the agent's variables are removed, others kept: {stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: the command can still reach tmux, GNU screen")
            || stderr
                .contains("warning: the command can still reach tmux, the X or Wayland display"),
        "a reachable multiplexer and display are named: {stderr}"
    );
    assert_eq!(
        snapshot(&root.join("README.md")),
        readme,
        "README unchanged"
    );
}

#[test]
fn the_broker_frees_every_finished_connection() {
    let f = Fixture::new();
    let root = f.root();
    // One request per connection, 300 times, with a descriptor limit far below that.
    let client = r#"
import json, os, socket, sys
body = json.dumps(dict(version=1, repo=sys.argv[1], contract="/unused.yaml",
                       operation="read", path="src/main.rs")).encode()
ok = 0
for i in range(300):
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ["SATYRN_BROKER"])
    s.sendall((os.environ["SATYRN_BROKER_SECRET"] + " protocol\n").encode())
    s.sendall(b"%d\n" % len(body) + body)
    answers = s.makefile("rb")
    status, line = answers.readline(), answers.readline()
    if line and json.loads(line)["code"] == "OK":
        ok += 1
    answers.close()
    s.close()
print("ok", ok)
"#;
    let inner = format!(
        "ulimit -n 96; exec {} confine --repo {} {} -- python3 -c '{}' {}",
        host_bin().display(),
        root.display(),
        f.contract.path.display(),
        client.replace('\'', "'\\''"),
        root.display()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(&inner)
        .env("HOME", f.home.path())
        .stdin(Stdio::null())
        .output()
        .expect("sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("ok 300"), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("300 protocol requests over 300 connections"),
        "{stderr}"
    );
}

/// The descriptors and threads of process `pid`.
fn fds_and_threads(pid: u32) -> (usize, usize) {
    let count = |d: &str| {
        std::fs::read_dir(format!("/proc/{pid}/{d}"))
            .map(Iterator::count)
            .unwrap_or(0)
    };
    (count("fd"), count("task"))
}

#[test]
fn idle_and_trickling_connections_hold_the_broker_neither_open_nor_forever() {
    let f = Fixture::new();
    let root = f.root();
    let ready = root.join("target/ready");
    // A connection that sends the right secret a byte a second (it would finish after
    // 65 s), then 200 connections that send nothing; then a real request.
    let client = r#"
import json, os, socket, sys, time
root, ready = sys.argv[1], sys.argv[2]
secret = (os.environ["SATYRN_BROKER_SECRET"] + " protocol\n").encode()
def connect():
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ["SATYRN_BROKER"])
    return s
slow = connect()
idle = [connect() for _ in range(200)]
open(ready, "w").close()
started = time.time()
closed_after = None
for b in secret:
    try:
        slow.sendall(bytes([b]))
        slow.settimeout(1.0)
        if slow.recv(1) == b"":
            closed_after = time.time() - started
            break
    except socket.timeout:
        continue
    except OSError:
        closed_after = time.time() - started
        break
print("slow closed after", None if closed_after is None else round(closed_after), flush=True)
s = connect()
s.sendall(secret)
body = json.dumps(dict(version=1, repo=root, contract="/unused.yaml",
                       operation="read", path="src/main.rs")).encode()
s.sendall(b"%d\n" % len(body) + body)
s.settimeout(60)
answers = s.makefile("rb")
status, line = answers.readline(), answers.readline()
print("real", json.loads(line)["code"], flush=True)
"#;
    let mut child = f
        .command(
            &[],
            &[
                "python3",
                "-c",
                client,
                &root.display().to_string(),
                &ready.display().to_string(),
            ],
        )
        .spawn()
        .expect("confine");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(ready.exists(), "the client opened its connections");
    // Give the broker time to accept what it will, then count what it holds.
    let mut most = (0, 0);
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        let (fds, threads) = fds_and_threads(child.id());
        most = (most.0.max(fds), most.1.max(threads));
        std::thread::sleep(Duration::from_millis(50));
    }
    let stdout = child.stdout.take().expect("stdout");
    let lines: Vec<String> = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .collect();
    let status = child.wait().expect("wait");
    assert!(status.success(), "{lines:?}");
    let limit = satyrn_confine::broker::MAX_CONNECTIONS;
    assert!(
        most.0 <= 2 * limit + 16,
        "{} descriptors for {limit} connections at most",
        most.0
    );
    assert!(
        most.1 <= limit + 8,
        "{} threads for {limit} connections at most",
        most.1
    );
    let slow = lines
        .iter()
        .find_map(|l| l.strip_prefix("slow closed after "))
        .expect("slow line");
    let after: u64 = slow.parse().unwrap_or(u64::MAX);
    assert!(
        (9..=13).contains(&after),
        "a trickling handshake ends at the 10 s deadline, not per byte: {slow}"
    );
    assert!(
        lines.iter().any(|l| l == "real OK"),
        "a real request is still served: {lines:?}"
    );
}

/// The run directories under `tmp`'s per-user parent.
fn run_dirs(tmp: &Path) -> usize {
    std::fs::read_dir(tmp)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("satyrn-confine.")
        })
        .flat_map(|parent| {
            std::fs::read_dir(parent.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .count()
}

#[test]
fn a_home_overlapping_the_repository_is_refused_and_leaves_no_run_directory() {
    let f = Fixture::new();
    let root = f.root();
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(root.join("target")).expect("mkdir");
    let before = crate::support::tree_state(&root);
    let outside = tempfile::tempdir().expect("outside");
    let marker = outside.path().join("ran");
    let common = root.join(".git");
    // The worktree again under a bind mount: the same directories by another path.
    let bound = outside.path().join("bound");
    std::fs::create_dir(&bound).expect("mkdir");
    let mounted = Command::new("mount")
        .arg("--bind")
        .arg(&root)
        .arg(&bound)
        .status()
        .expect("mount");
    assert!(mounted.success(), "mount --bind (the tests run as root)");
    let _unmount = crate::confine::BindMount(bound.clone());
    for home in [
        root.clone(),
        root.join("target"),
        root.join("src"),
        common,
        bound.clone(),
        bound.join("src"),
    ] {
        let out = f
            .command(
                &["--home", &home.display().to_string()],
                &["sh", "-c", &format!("touch {}", marker.display())],
            )
            .env("TMPDIR", tmp.path())
            .output()
            .expect("confine");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(15), "{}: {stderr}", home.display());
        assert!(stderr.contains("overlaps"), "{stderr}");
        assert!(!marker.exists(), "the command ran");
        assert_eq!(run_dirs(tmp.path()), 0, "a run directory was left behind");
    }
    assert!(
        crate::support::tree_state(&root) == before,
        "the worktree changed"
    );
    // The sibling: a home outside the repository is the command's to write.
    let home = tempfile::tempdir().expect("home");
    let out = f
        .command(
            &["--home", &home.path().display().to_string()],
            &["sh", "-c", "echo state > \"$HOME/state\""],
        )
        .env("TMPDIR", tmp.path())
        .output()
        .expect("confine");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join("state")).expect("state"),
        "state\n"
    );
    assert_eq!(run_dirs(tmp.path()), 0, "the run removed its directory");
}

#[test]
fn a_hard_link_out_of_a_scratch_path_is_refused_and_links_within_it_are_not() {
    let f = Fixture::new();
    let root = f.root();
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(root.join("target")).expect("mkdir");
    std::fs::hard_link(root.join("src/main.rs"), root.join("target/main.o")).expect("link");
    let main = snapshot(&root.join("src/main.rs"));
    let out = f
        .command(&[], &["sh", "-c", "echo '// injected' >> target/main.o"])
        .env("TMPDIR", tmp.path())
        .output()
        .expect("confine");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(15), "{stderr}");
    assert!(
        stderr.contains("main.o in a writable directory (a scratch path or --home) is a hard link"),
        "{stderr}"
    );
    assert_eq!(
        snapshot(&root.join("src/main.rs")),
        main,
        "main.rs unchanged"
    );
    assert_eq!(run_dirs(tmp.path()), 0, "a run directory was left behind");
    // The same link one level down, with the nested directory named again as a scratch
    // path (its one name must not be counted twice), and a link from a --home.
    std::fs::create_dir_all(root.join("target/sub")).expect("mkdir");
    std::fs::rename(root.join("target/main.o"), root.join("target/sub/main.o")).expect("mv");
    let nested = crate::support::ContractFile::raw(
        "id: confined\ntask: t\nwritable_paths: ['src/*.rs']\nscratch_paths: [target, target/sub]\n",
    );
    let out = f
        .command_under(
            &nested.path,
            &[],
            &["sh", "-c", "echo '// injected' >> target/sub/main.o"],
        )
        .env("TMPDIR", tmp.path())
        .output()
        .expect("confine");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(15), "nested: {stderr}");
    assert!(
        stderr.contains("sub/main.o in a writable directory"),
        "{stderr}"
    );
    std::fs::remove_file(root.join("target/sub/main.o")).expect("rm");
    let home = tempfile::tempdir().expect("home");
    std::fs::hard_link(root.join("src/main.rs"), home.path().join("x")).expect("link");
    let out = f
        .command(
            &["--home", &home.path().display().to_string()],
            &["sh", "-c", "echo '// injected' >> \"$HOME/x\""],
        )
        .env("TMPDIR", tmp.path())
        .output()
        .expect("confine");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(15), "home: {stderr}");
    assert!(stderr.contains("x in a writable directory"), "{stderr}");
    std::fs::remove_file(home.path().join("x")).expect("rm");
    let after = snapshot(&root.join("src/main.rs"));
    assert_eq!(
        (&after.bytes, after.mode, after.ino),
        (&main.bytes, main.mode, main.ino),
        "main.rs unchanged (its links are gone)"
    );
    // The sibling: a build's own links, both names inside the scratch path.
    std::fs::write(root.join("target/bin"), "built\n").expect("write");
    std::fs::hard_link(root.join("target/bin"), root.join("target/bin-copy")).expect("link");
    let out = f
        .command(&[], &["sh", "-c", "echo again >> target/bin-copy"])
        .env("TMPDIR", tmp.path())
        .output()
        .expect("confine");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(root.join("target/bin")).expect("bin"),
        "built\nagain\n"
    );
}

#[test]
fn a_standard_stream_open_for_writing_on_a_repository_file_is_refused() {
    let f = Fixture::new();
    let root = f.root();
    std::fs::create_dir_all(root.join("target")).expect("mkdir");
    let readme = snapshot(&root.join("README.md"));
    let config = snapshot(&root.join(".git/config"));
    let outside = tempfile::tempdir().expect("outside");
    let run = |redirect: &str| {
        let inner = format!(
            "exec {} confine --repo {} {} -- sh -c 'echo injected' {redirect}",
            host_bin().display(),
            root.display(),
            f.contract.path.display()
        );
        Command::new("sh")
            .arg("-c")
            .arg(&inner)
            .current_dir(&root)
            .env("HOME", f.home.path())
            .stdin(Stdio::null())
            .output()
            .expect("sh")
    };
    for redirect in [">> README.md", ">> .git/config"] {
        let out = run(redirect);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(15), "{redirect}: {stderr}");
        assert!(stderr.contains("open for writing"), "{stderr}");
    }
    assert_eq!(
        snapshot(&root.join("README.md")),
        readme,
        "README unchanged"
    );
    assert_eq!(
        snapshot(&root.join(".git/config")),
        config,
        ".git/config unchanged"
    );
    // Standard error there: refused too (the refusal itself goes where the caller sent it).
    let out = run("2>> src/lib.rs");
    assert_eq!(out.status.code(), Some(15));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).expect("lib");
    assert!(
        lib.starts_with("pub fn f() {}\n") && !lib.contains("injected"),
        "{lib}"
    );
    // The siblings: a scratch path, and a file outside the repository.
    let log = outside.path().join("log");
    for (redirect, file) in [
        (">> target/log".to_owned(), root.join("target/log")),
        (format!(">> {}", log.display()), log.clone()),
    ] {
        let out = run(&redirect);
        assert!(
            out.status.success(),
            "{redirect}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read_to_string(&file).expect("log"),
            "injected\n",
            "{redirect}"
        );
    }
}
