//! `satyrn-host confine --agent claude|codex`: what each agent finds in its scratch
//! directory (read by a real shell standing in for the agent inside the real kernel's
//! rules), what it can no longer read or reach, and the refusals at start, each beside its
//! sibling success, the user's files proven unchanged. The real agent CLIs run under it in
//! `tests/agents/test/confined.test.mjs`.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use crate::confine::Fixture;
use crate::support::{host_bin, snapshot, tree_state};

/// A user's Codex directory: a config naming a model endpoint and another MCP server, a
/// login, and instructions of their own.
fn codex_user(home: &Path, port: u16) -> std::path::PathBuf {
    let dir = home.join(".codex");
    std::fs::create_dir_all(dir.join("sessions")).expect("mkdir");
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "# my settings\nmodel = \"my-model\"\nmodel_provider = \"mine\"\n\n[model_providers.mine]\nname = \"mine\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nwire_api = \"responses\"\n\n[mcp_servers.other]\ncommand = \"other-server\"\n"
        ),
    )
    .expect("config");
    std::fs::write(dir.join("auth.json"), "{\"OPENAI_API_KEY\":\"sk-user\"}\n").expect("auth");
    std::fs::write(dir.join("AGENTS.md"), "Prefer small commits.\n").expect("agents");
    std::fs::write(dir.join("sessions/old.jsonl"), "another session\n").expect("session");
    dir
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn describe(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        stdout(out),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn codex_finds_satyrn_as_its_only_server_its_login_and_the_note_and_cannot_read_the_user_s_directory()
 {
    let f = Fixture::new();
    let user = codex_user(f.home.path(), 4242);
    let files = [
        "config.toml",
        "auth.json",
        "AGENTS.md",
        "sessions/old.jsonl",
    ];
    let before: Vec<_> = files.iter().map(|n| snapshot(&user.join(n))).collect();
    let script = format!(
        "cat \"$CODEX_HOME/config.toml\"; echo '--- agents'; cat \"$CODEX_HOME/AGENTS.md\"; \
         echo '--- auth'; cat \"$CODEX_HOME/auth.json\"; stat -c '%a' \"$CODEX_HOME/auth.json\"; \
         echo '--- user'; cat {u}/config.toml >/dev/null 2>&1; echo \"user-config $?\"; \
         cat {u}/sessions/old.jsonl >/dev/null 2>&1; echo \"user-session $?\"; \
         echo x > \"$CODEX_HOME/state\"; echo \"own-state $?\"",
        u = user.display()
    );
    let out = f.confine(&["--agent", "codex"], &script);
    assert!(out.status.success(), "{}", describe(&out));
    let text = stdout(&out);
    let (config, rest) = text.split_once("--- agents").expect("sections");
    let parsed: toml_edit::DocumentMut = config.parse().expect("a valid config.toml");
    assert_eq!(parsed["model"].as_str(), Some("my-model"), "{config}");
    assert_eq!(
        parsed["model_providers"]["mine"]["base_url"].as_str(),
        Some("http://127.0.0.1:4242/v1")
    );
    assert!(parsed["mcp_servers"].get("other").is_none(), "{config}");
    let satyrn = &parsed["mcp_servers"]["satyrn"];
    assert_eq!(
        satyrn["command"].as_str(),
        Some(host_bin().to_str().expect("utf-8"))
    );
    assert_eq!(
        satyrn["args"].as_array().map(toml_edit::Array::len),
        Some(1)
    );
    assert_eq!(parsed["sandbox_mode"].as_str(), Some("danger-full-access"));
    assert_eq!(parsed["approval_policy"].as_str(), Some("never"));
    assert!(
        config.contains("# my settings"),
        "comments are kept: {config}"
    );
    let (agents, rest) = rest.split_once("--- auth").expect("auth");
    assert!(
        agents
            .trim_start()
            .starts_with("# satyrn: this session is confined"),
        "{agents}"
    );
    assert!(
        agents.contains("`edit` (namespace `mcp__satyrn`)"),
        "{agents}"
    );
    assert!(
        agents.contains("Prefer small commits."),
        "the user's instructions follow the note"
    );
    assert!(agents.contains("`target/`"), "the scratch path is named");
    assert!(
        rest.contains("sk-user") && rest.contains("\n600\n"),
        "{rest}"
    );
    assert!(rest.contains("user-config 1"), "{rest}");
    assert!(rest.contains("user-session 1"), "{rest}");
    assert!(rest.contains("own-state 0"), "{rest}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--agent codex: CODEX_HOME=")
            && stderr.contains("carried config.toml, auth.json, AGENTS.md"),
        "{stderr}"
    );
    assert!(stderr.contains("TCP connect only to port 4242"), "{stderr}");
    let after: Vec<_> = files.iter().map(|n| snapshot(&user.join(n))).collect();
    assert_eq!(before, after, "the user's Codex directory was written");
}

#[test]
fn claude_finds_satyrn_its_permissions_hook_login_and_note_and_cannot_read_the_user_s_state() {
    let f = Fixture::new();
    let home = f.home.path();
    let user = home.join(".claude");
    std::fs::create_dir_all(&user).expect("mkdir");
    std::fs::write(
        user.join("settings.json"),
        "{\"model\":\"opus\",\"env\":{\"ANTHROPIC_BASE_URL\":\"http://127.0.0.1:4343\"}}\n",
    )
    .expect("settings");
    std::fs::write(
        user.join(".credentials.json"),
        "{\"token\":\"user-login\"}\n",
    )
    .expect("creds");
    std::fs::write(
        home.join(".claude.json"),
        "{\"projects\":{\"/secret/project\":{}}}\n",
    )
    .expect("state");
    let watched = [
        user.join("settings.json"),
        user.join(".credentials.json"),
        home.join(".claude.json"),
    ];
    let before: Vec<_> = watched.iter().map(|p| snapshot(p)).collect();
    let script = format!(
        "cat \"$CLAUDE_CONFIG_DIR/.claude.json\"; echo '--- settings'; cat \"$CLAUDE_CONFIG_DIR/settings.json\"; \
         echo '--- note'; cat \"$CLAUDE_CONFIG_DIR/CLAUDE.md\"; echo '--- creds'; cat \"$CLAUDE_CONFIG_DIR/.credentials.json\"; \
         cat {h}/.claude.json >/dev/null 2>&1; echo \"user-state $?\"; \
         cat {h}/.claude/settings.json >/dev/null 2>&1; echo \"user-settings $?\"",
        h = home.display()
    );
    let out = f.confine(&["--agent", "claude"], &script);
    assert!(out.status.success(), "{}", describe(&out));
    let text = stdout(&out);
    let (state, rest) = text.split_once("--- settings").expect("sections");
    let state: serde_json::Value = serde_json::from_str(state).expect("json");
    assert_eq!(
        state["mcpServers"]["satyrn"]["command"],
        host_bin().to_str().expect("utf-8")
    );
    assert_eq!(
        state["mcpServers"]["satyrn"]["args"],
        serde_json::json!(["mcp"])
    );
    assert!(
        state.get("projects").is_none(),
        "the user's state was carried"
    );
    let (settings, rest) = rest.split_once("--- note").expect("note");
    let settings: serde_json::Value = serde_json::from_str(settings).expect("json");
    assert_eq!(settings["model"], "opus");
    let allow = settings["permissions"]["allow"].to_string();
    for tool in ["mcp__satyrn", "Bash", "Edit", "Write"] {
        assert!(allow.contains(&format!("\"{tool}\"")), "{allow}");
    }
    assert_eq!(settings["env"]["ENABLE_TOOL_SEARCH"], "false");
    assert!(
        settings["hooks"]["PostToolUseFailure"][0]["hooks"][0]["command"]
            .as_str()
            .is_some_and(|c| c.contains("mcp__satyrn__edit"))
    );
    let (note, rest) = rest.split_once("--- creds").expect("creds");
    assert!(note.contains("`mcp__satyrn__edit`"), "{note}");
    assert!(rest.contains("user-login"), "{rest}");
    assert!(rest.contains("user-state 1"), "{rest}");
    assert!(rest.contains("user-settings 1"), "{rest}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("TCP connect only to port 4343"), "{stderr}");
    let after: Vec<_> = watched.iter().map(|p| snapshot(p)).collect();
    assert_eq!(before, after, "the user's Claude files were written");
}

/// A bash line that connects to `port` on 127.0.0.1 and prints `NAME STATUS`.
fn connect(name: &str, port: u16) -> String {
    format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' 2>/dev/null; echo \"{name} $?\"\n")
}

#[test]
fn an_agent_connects_to_its_model_endpoint_and_to_no_other_port() {
    let model = TcpListener::bind("127.0.0.1:0").expect("bind");
    let other = TcpListener::bind("127.0.0.1:0").expect("bind");
    let model_port = model.local_addr().expect("addr").port();
    let other_port = other.local_addr().expect("addr").port();
    let f = Fixture::new();
    codex_user(f.home.path(), model_port);
    let script = connect("model", model_port) + &connect("other", other_port);
    let out = f.confine(&["--agent", "codex"], &script);
    let text = stdout(&out);
    assert!(text.contains("model 0"), "{}", describe(&out));
    assert!(text.contains("other 1"), "{}", describe(&out));
    // --allow-connect adds a port.
    let extra = other_port.to_string();
    let out = f.confine(&["--agent", "codex", "--allow-connect", &extra], &script);
    let text = stdout(&out);
    assert!(
        text.contains("model 0") && text.contains("other 0"),
        "{}",
        describe(&out)
    );
}

#[test]
fn a_user_agent_directory_inside_the_worktree_is_refused_and_nothing_runs() {
    let f = Fixture::new();
    let root = f.root();
    let inside = root.join("target/codex");
    std::fs::create_dir_all(&inside).expect("mkdir");
    std::fs::write(inside.join("config.toml"), "model = \"evil\"\n").expect("config");
    let before = tree_state(&root);
    // In the scratch path: the command could create it.
    let marker = root.join("target/ran");
    let script = format!("touch {}", marker.display());
    let out = f
        .command(&["--agent", "codex"], &["sh", "-c", &script])
        .env("CODEX_HOME", &inside)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(15), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("CONFINE_UNAVAILABLE") && stderr.contains("lies inside the worktree"),
        "{stderr}"
    );
    assert!(!marker.exists(), "the command ran");
    assert_eq!(tree_state(&root), before);
    // The sibling: the same directory outside the worktree.
    let outside = f.home.path().join("codex-elsewhere");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("config.toml"), "model = \"fine\"\n").expect("config");
    let out = f
        .command(&["--agent", "codex"], &["sh", "-c", &script])
        .env("CODEX_HOME", &outside)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", describe(&out));
    assert!(marker.exists());
}

#[test]
fn a_malformed_user_config_is_a_named_refusal_that_runs_nothing_and_changes_nothing() {
    let f = Fixture::new();
    let user = codex_user(f.home.path(), 4242);
    std::fs::write(user.join("config.toml"), "model = \"unterminated\n[x\n").expect("config");
    std::fs::write(f.home.path().join(".claude.json"), "{}\n").expect("state");
    let settings = f.home.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().expect("parent")).expect("mkdir");
    std::fs::write(&settings, "[1, 2]\n").expect("settings");
    // In the scratch path: the command could create it.
    let marker = f.root().join("target/ran");
    let script = format!("touch {}", marker.display());
    for (agent, file, says) in [
        ("codex", user.join("config.toml"), "config.toml"),
        ("claude", settings.clone(), "is not a JSON object"),
    ] {
        let before = snapshot(&file);
        let out = f
            .command(&["--agent", agent], &["sh", "-c", &script])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(15), "{}", describe(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("--agent {agent}: ")) && stderr.contains(says),
            "{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(!marker.exists(), "the command ran");
        assert_eq!(snapshot(&file), before);
    }
}

#[test]
fn an_agent_cannot_be_run_unconfined() {
    let f = Fixture::new();
    let out = f.confine(&["--agent", "claude", "--unconfined"], "true");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot be used with"),
        "{}",
        describe(&out)
    );
}

#[test]
fn mcp_without_a_repository_outside_a_confined_run_is_a_usage_error() {
    let out = std::process::Command::new(host_bin())
        .arg("mcp")
        .env_remove("SATYRN_BROKER")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--repo REPO and CONTRACT are required"),
        "{}",
        describe(&out)
    );
}

#[test]
fn the_scratch_agent_directory_is_private_and_removed_with_the_run() {
    let f = Fixture::new();
    let out = f.confine(
        &["--agent", "claude"],
        "stat -c '%a' \"$CLAUDE_CONFIG_DIR\"; echo \"$CLAUDE_CONFIG_DIR\"",
    );
    assert!(out.status.success(), "{}", describe(&out));
    let text = stdout(&out);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("700"));
    let dir = Path::new(lines.next().expect("dir"));
    assert!(!dir.exists(), "{} outlived the run", dir.display());
}

#[test]
fn a_user_directory_that_is_a_symlink_is_unreadable_under_its_target_s_path_too() {
    let f = Fixture::new();
    let home = f.home.path();
    // ~/.codex and ~/.ssh point elsewhere; a file beside their targets stays readable.
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let real_codex = elsewhere.path().join("codex-real");
    codex_user(elsewhere.path(), 4242);
    std::fs::rename(elsewhere.path().join(".codex"), &real_codex).expect("rename");
    std::os::unix::fs::symlink(&real_codex, home.join(".codex")).expect("symlink");
    let real_ssh = elsewhere.path().join("ssh-real");
    std::fs::create_dir(&real_ssh).expect("mkdir");
    std::fs::write(real_ssh.join("id_ed25519"), "key\n").expect("key");
    std::fs::remove_dir_all(home.join(".ssh")).expect("rm");
    std::os::unix::fs::symlink(&real_ssh, home.join(".ssh")).expect("symlink");
    std::fs::write(elsewhere.path().join("ordinary.txt"), "fine\n").expect("ordinary");
    let e = elsewhere.path().display();
    let script = format!(
        "for p in {e}/codex-real/config.toml {e}/codex-real/auth.json {e}/ssh-real/id_ed25519 {e}/ordinary.txt \"$CODEX_HOME/auth.json\"; do \
         cat \"$p\" >/dev/null 2>&1; echo \"$p $?\"; done"
    );
    let out = f.confine(&["--agent", "codex"], &script);
    assert!(out.status.success(), "{}", describe(&out));
    let text = stdout(&out);
    for (name, rc) in [
        ("codex-real/config.toml", 1),
        ("codex-real/auth.json", 1),
        ("ssh-real/id_ed25519", 1),
        ("ordinary.txt", 0),
        (".codex/auth.json", 0),
    ] {
        assert!(
            text.lines()
                .any(|l| l.contains(name) && l.ends_with(&format!(" {rc}"))),
            "{name} should give {rc}: {}",
            describe(&out)
        );
    }
}

#[test]
fn a_symlink_inside_the_user_s_agent_directory_does_not_make_its_target_readable() {
    let f = Fixture::new();
    let user = codex_user(f.home.path(), 4242);
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let sessions = elsewhere.path().join("sessions-real");
    std::fs::create_dir(&sessions).expect("mkdir");
    std::fs::write(sessions.join("transcript.jsonl"), "another project\n").expect("write");
    std::fs::write(elsewhere.path().join("ordinary.txt"), "fine\n").expect("write");
    std::fs::remove_dir_all(user.join("sessions")).expect("rm");
    std::os::unix::fs::symlink(&sessions, user.join("sessions")).expect("symlink");
    // What Codex itself leaves there: its own binary linked under other names.
    let program = elsewhere.path().join("agent-binary");
    std::fs::write(&program, "#!/bin/sh\necho agent-ran\n").expect("write");
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::create_dir_all(user.join("tmp/arg0")).expect("mkdir");
    std::os::unix::fs::symlink(&program, user.join("tmp/arg0/apply_patch")).expect("symlink");
    let e = elsewhere.path().display();
    let script = format!(
        "cat {e}/sessions-real/transcript.jsonl >/dev/null 2>&1; echo \"transcript $?\"; \
         cat {e}/ordinary.txt >/dev/null 2>&1; echo \"ordinary $?\"; {e}/agent-binary"
    );
    let out = f.confine(&["--agent", "codex"], &script);
    let text = stdout(&out);
    assert!(text.contains("transcript 1"), "{}", describe(&out));
    assert!(text.contains("ordinary 0"), "{}", describe(&out));
    assert!(
        text.contains("agent-ran"),
        "the agent's own program must still run: {}",
        describe(&out)
    );
}

#[test]
fn a_model_endpoint_is_read_as_the_agent_reads_it_and_one_without_a_port_is_refused() {
    let model = TcpListener::bind("127.0.0.1:0").expect("bind");
    let other = TcpListener::bind("127.0.0.1:0").expect("bind");
    let (m, o) = (
        model.local_addr().expect("addr").port(),
        other.local_addr().expect("addr").port(),
    );
    let f = Fixture::new();
    let script = connect("model", m) + &connect("other", o);
    // Spaces and a backslash, as Node's URL parser reads them: the model's port, only.
    for url in [
        format!("http://127.0.0.1:{m} "),
        format!(" http://127.0.0.1:{m}/v1"),
        format!("http://127.0.0.1:{m}\\@x:{o}/"),
    ] {
        let out = f
            .command(&["--agent", "claude"], &["sh", "-c", &script])
            .env("ANTHROPIC_BASE_URL", &url)
            .output()
            .expect("run");
        let text = stdout(&out);
        assert!(
            text.contains("model 0") && text.contains("other 1"),
            "{url:?}: {}",
            describe(&out)
        );
    }
    // No port to derive: refused, nothing runs, the network never left open.
    let marker = f.root().join("target/ran");
    for url in [
        "ftp://127.0.0.1/",
        "http://127.0.0.1:99999/",
        "127.0.0.1:80",
    ] {
        let out = f
            .command(
                &["--agent", "claude"],
                &["sh", "-c", &format!("touch {}", marker.display())],
            )
            .env("ANTHROPIC_BASE_URL", url)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(15), "{url:?}: {}", describe(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("cannot tell the TCP port"),
            "{}",
            describe(&out)
        );
        assert!(!marker.exists(), "the command ran for {url:?}");
    }
}

#[test]
fn the_repository_s_own_agent_configuration_is_unreadable_to_the_agent() {
    let f = Fixture::new();
    let root = f.root();
    for (rel, text) in [
        (".claude/settings.json", "{\"hooks\":{}}\n"),
        (".claude/settings.local.json", "{}\n"),
        (".mcp.json", "{}\n"),
        (".codex/config.toml", "model = \"x\"\n"),
        (".pi/extensions/evil.ts", "export default () => {};\n"),
        (".claude/CLAUDE.md", "project notes\n"),
    ] {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    let probe = |agent: &str, files: &[&str]| {
        let script: String = files
            .iter()
            .map(|p| format!("cat {p} >/dev/null 2>&1; echo \"{p} $?\"\n"))
            .collect();
        let out = f.confine(&["--agent", agent], &script);
        assert!(out.status.success(), "{}", describe(&out));
        stdout(&out)
    };
    let text = probe(
        "claude",
        &[
            ".claude/settings.json",
            ".claude/settings.local.json",
            ".mcp.json",
            ".claude/CLAUDE.md",
            "README.md",
        ],
    );
    for refused in [
        ".claude/settings.json 1",
        ".claude/settings.local.json 1",
        ".mcp.json 1",
    ] {
        assert!(text.contains(refused), "{text}");
    }
    assert!(
        text.contains(".claude/CLAUDE.md 0") && text.contains("README.md 0"),
        "{text}"
    );
    // Codex reads a project's .codex/ only when the user's configuration trusts the
    // project; --agent codex carries no trust (and an unreadable one would stop Codex).
    let text = probe("codex", &[".codex/config.toml", ".claude/settings.json"]);
    assert!(
        text.contains(".codex/config.toml 0") && text.contains(".claude/settings.json 0"),
        "{text}"
    );
    let text = probe("pi", &[".pi/extensions/evil.ts", ".mcp.json"]);
    assert!(
        text.contains(".pi/extensions/evil.ts 1") && text.contains(".mcp.json 0"),
        "{text}"
    );
}

#[test]
fn a_user_file_that_resolves_into_the_worktree_is_refused_and_nothing_is_copied() {
    let f = Fixture::new();
    let root = f.root();
    let user = codex_user(f.home.path(), 4242);
    let marker = root.join("target/ran");
    let script = format!("touch {}", marker.display());
    for (name, target) in [("config.toml", "README.md"), ("auth.json", ".env")] {
        let link = user.join(name);
        let saved = std::fs::read(&link).expect("read");
        std::fs::remove_file(&link).expect("rm");
        std::os::unix::fs::symlink(root.join(target), &link).expect("symlink");
        let before = tree_state(&root);
        let out = f
            .command(&["--agent", "codex"], &["sh", "-c", &script])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(15), "{name}: {}", describe(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("inside the worktree"),
            "{}",
            describe(&out)
        );
        assert!(!marker.exists());
        assert_eq!(tree_state(&root), before);
        std::fs::remove_file(&link).expect("rm");
        std::fs::write(&link, saved).expect("restore");
    }
}

#[test]
fn a_tmpdir_inside_the_worktree_is_refused_before_anything_runs() {
    let f = Fixture::new();
    let root = f.root();
    let marker = root.join("target/ran");
    let script = format!("touch {}", marker.display());
    let inside = root.join("target/tmp");
    std::fs::create_dir_all(&inside).expect("mkdir");
    let out = f
        .command(&[], &["sh", "-c", &script])
        .env("TMPDIR", &inside)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(15), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the run's scratch (under TMPDIR)"),
        "{}",
        describe(&out)
    );
    assert!(!marker.exists());
    // The sibling: a TMPDIR outside.
    let outside = tempfile::tempdir().expect("tempdir");
    let out = f
        .command(&[], &["sh", "-c", &script])
        .env("TMPDIR", outside.path())
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", describe(&out));
    assert!(marker.exists());
}

#[test]
fn satyrn_host_at_a_path_that_is_not_utf8_is_a_named_refusal_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let f = Fixture::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let odd = dir.path().join(std::ffi::OsStr::from_bytes(b"bin-\xff"));
    std::fs::create_dir(&odd).expect("mkdir");
    let copy = odd.join("satyrn-host");
    std::fs::copy(host_bin(), &copy).expect("copy");
    let marker = f.root().join("target/ran");
    for agent in ["claude", "codex", "pi"] {
        let out = std::process::Command::new(&copy)
            .args(["confine", "--agent", agent, "--repo"])
            .arg(f.root())
            .arg(&f.contract.path)
            .args(["--", "touch"])
            .arg(&marker)
            .env("HOME", f.home.path())
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(15), "{agent}: {stderr}");
        assert!(
            stderr.contains("not UTF-8") && !stderr.contains("panicked"),
            "{stderr}"
        );
        assert!(!marker.exists());
    }
}

#[test]
fn the_repository_s_configuration_is_unreadable_in_every_directory_down_to_the_working_one() {
    let f = Fixture::new();
    let root = f.root();
    for dir in ["", "src/", "src/deep/"] {
        let p = root.join(format!("{dir}.mcp.json"));
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, "{}\n").expect("write");
    }
    // A repository's settings that are a symlink to another file of the repository.
    std::fs::create_dir_all(root.join("src/deep/.claude")).expect("mkdir");
    std::fs::write(root.join("docs-settings.json"), "{\"hooks\":{}}\n").expect("write");
    std::os::unix::fs::symlink(
        "../../../docs-settings.json",
        root.join("src/deep/.claude/settings.json"),
    )
    .expect("symlink");
    let cwd = root.join("src/deep");
    let out = f.confine(
        &["--agent", "claude", "--cwd", cwd.to_str().expect("utf-8")],
        "for p in ../../.mcp.json ../.mcp.json .mcp.json .claude/settings.json ../../docs-settings.json ../../README.md; do \
         cat $p >/dev/null 2>&1; echo \"$p $?\"; done",
    );
    assert!(out.status.success(), "{}", describe(&out));
    let text = stdout(&out);
    for line in [
        "../../.mcp.json 1",
        "../.mcp.json 1",
        ".mcp.json 1",
        ".claude/settings.json 1",
        "../../docs-settings.json 1",
        "../../README.md 0",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line}: {}",
            describe(&out)
        );
    }
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("warning: the repository's"),
        "the user is told: {}",
        describe(&out)
    );
}

#[test]
fn every_agent_s_login_is_unreadable_whichever_agent_runs_and_without_one() {
    let f = Fixture::new();
    let home = f.home.path();
    for (rel, text) in [
        (".claude/.credentials.json", "claude login\n"),
        (".codex/auth.json", "codex key\n"),
        (".pi/agent/auth.json", "pi key\n"),
        (".claude/notes.md", "notes\n"),
    ] {
        let p = home.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    let h = home.display();
    let script = format!(
        "for p in {h}/.claude/.credentials.json {h}/.codex/auth.json {h}/.pi/agent/auth.json {h}/.claude/notes.md; do \
         cat $p >/dev/null 2>&1; echo \"$p $?\"; done"
    );
    // Under --agent pi the other agents' whole directories are unreadable.
    let text = stdout(&f.confine(&["--agent", "pi"], &script));
    for name in [
        ".claude/.credentials.json 1",
        ".codex/auth.json 1",
        ".pi/agent/auth.json 1",
        ".claude/notes.md 1",
    ] {
        assert!(text.contains(name), "{name}: {text}");
    }
    // Without --agent, the logins are credential stores; the rest stays readable.
    let text = stdout(&f.confine(&[], &script));
    for name in [
        ".claude/.credentials.json 1",
        ".codex/auth.json 1",
        ".pi/agent/auth.json 1",
        ".claude/notes.md 0",
    ] {
        assert!(text.contains(name), "{name}: {text}");
    }
}

#[test]
fn a_key_linked_to_an_executable_file_in_a_credential_store_stays_unreadable() {
    let f = Fixture::new();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let key = elsewhere.path().join("id_ed25519");
    std::fs::write(&key, "key\n").expect("write");
    // As on a vfat or WSL mount, where every file is 0755.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::os::unix::fs::symlink(&key, f.home.path().join(".ssh/id_ed25519")).expect("symlink");
    let out = f.confine(
        &[],
        &format!("cat {} >/dev/null 2>&1; echo \"key $?\"", key.display()),
    );
    assert!(stdout(&out).contains("key 1"), "{}", describe(&out));
}

#[test]
fn a_symlink_in_another_worktree_denies_nothing_beyond_that_worktree() {
    let f = Fixture::new();
    let root = f.root();
    let other = tempfile::tempdir().expect("tempdir");
    let second = other.path().join("second");
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(&root)
        .args(["worktree", "add", "-q", "--detach"])
        .arg(&second)
        .status()
        .expect("git");
    assert!(status.success());
    std::os::unix::fs::symlink("/usr/bin", second.join("ubin")).expect("symlink");
    let out = f.confine(&[], "ls /usr/bin/sh >/dev/null && echo usr-bin-readable");
    assert!(
        stdout(&out).contains("usr-bin-readable"),
        "{}",
        describe(&out)
    );
}

#[test]
fn a_refused_home_or_tmpdir_creates_nothing() {
    let f = Fixture::new();
    let root = f.root();
    let contract = crate::support::ContractFile::raw(
        "id: c\ntask: t\nwritable_paths: ['src/*.rs']\nscratch_paths: [build]\n",
    );
    let inside = root.join("src/tmp");
    std::fs::create_dir_all(&inside).expect("mkdir");
    let before = tree_state(&root);
    let home_inside = root.join("src");
    for (opts, tmpdir) in [
        (vec!["--home", home_inside.to_str().expect("utf-8")], None),
        (vec![], Some(&inside)),
    ] {
        let mut cmd = f.command_under(&contract.path, &opts, &["true"]);
        if let Some(t) = tmpdir {
            cmd.env("TMPDIR", t);
        }
        let out = cmd.output().expect("run");
        assert_eq!(out.status.code(), Some(15), "{}", describe(&out));
        assert_eq!(
            tree_state(&root),
            before,
            "a refused start changed the worktree"
        );
    }
}
