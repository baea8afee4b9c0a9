//! The command line itself (clap): help, version, suggestions, completions and the man page,
//! each run through the real binary. Usage errors of each subcommand are pinned beside the
//! subcommand's own tests (`protocol_requests`, `deliver`, `attempt`, `reuse`).

use std::process::{Command, Output};

use crate::support::{ContractFile, Repo, host_bin};

fn host(args: &[&str]) -> Output {
    Command::new(host_bin())
        .args(args)
        .env_remove("SATYRN_MODEL")
        .output()
        .expect("run satyrn-host")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Exit 2, nothing on stdout, a `usage error` line naming `what` on stderr.
fn assert_usage_error(args: &[&str], what: &str) {
    let out = host(args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out.stdout));
    assert!(
        stderr.starts_with("satyrn-host: usage error: "),
        "{args:?}: {stderr}"
    );
    assert!(stderr.contains(what), "{args:?}: {stderr}");
}

#[test]
fn every_subcommand_has_its_own_help_on_stdout() {
    for (sub, options) in [
        ("check", &["--repo <REPO>", "<CONTRACT>"][..]),
        ("protocol", &["stdin"]),
        (
            "deliver",
            &[
                "--repo <REPO>",
                "--timeout <SECONDS>",
                "[default: 600]",
                "-- <COMMAND>...",
            ],
        ),
        (
            "attempt",
            &["--model <MODEL>", "SATYRN_MODEL", "<CONTRACT>"],
        ),
        (
            "mcp",
            &["--repo <REPO>", "[CONTRACT]", "required unless relaying"],
        ),
        ("confine", &["--agent <AGENT>", "--repo <WORKTREE>"]),
        ("component", &["export"]),
        ("completions", &["<SHELL>", "bash"]),
        ("man", &["[SUBCOMMAND]"]),
    ] {
        for help in ["--help", "-h"] {
            let out = host(&[sub, help]);
            let stdout = text(&out.stdout);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{sub} {help}: {}",
                text(&out.stderr)
            );
            assert!(out.stderr.is_empty(), "{sub} {help}");
            assert!(
                stdout.contains(&format!("Usage: satyrn-host {sub}")),
                "{stdout}"
            );
            for option in options {
                assert!(
                    stdout.contains(option),
                    "{sub} {help}: {option} in {stdout}"
                );
            }
        }
    }
    // Each agent's exact command, in the long help.
    let long = text(&host(&["confine", "--help"]).stdout);
    for line in [
        "satyrn-host confine --agent claude --repo . CONTRACT -- claude -p TASK",
        "satyrn-host confine --agent codex --repo . CONTRACT -- codex exec TASK",
        "satyrn-host confine --agent pi --repo . CONTRACT -- pi --print --model P/ID TASK",
    ] {
        assert!(long.contains(line), "confine --help lacks {line}: {long}");
    }
    let out = host(&["component", "export", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("--out <DIR>"));
}

#[test]
fn the_top_level_help_and_version_list_no_internal_subcommand() {
    for args in [&["--help"][..], &["help"], &["-h"]] {
        let out = host(args);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        for sub in [
            "check",
            "protocol",
            "deliver",
            "attempt",
            "mcp",
            "component",
        ] {
            assert!(
                stdout.contains(&format!("  {sub} ")),
                "{args:?}: {sub} in {stdout}"
            );
        }
        assert!(!stdout.contains("__"), "{stdout}");
    }
    for args in [&["--version"][..], &["-V"], &["deliver", "--version"]] {
        let out = host(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(
            text(&out.stdout).contains(env!("CARGO_PKG_VERSION")),
            "{args:?}"
        );
    }
}

#[test]
fn a_mistyped_subcommand_or_option_gets_a_suggestion() {
    assert_usage_error(&["delivr"], "similar subcommand exists: 'deliver'");
    assert_usage_error(&["__deliver-watchdg"], "unrecognized subcommand");
    let out = host(&["__deliver-watchdg"]);
    assert!(!text(&out.stderr).contains("__deliver-watchdog"), "hidden");
    assert_usage_error(
        &["check", "--rep", "r", "c"],
        "similar argument exists: '--repo'",
    );
    assert_usage_error(&["component", "exprot"], "'export'");
    assert_usage_error(&[], "a subcommand is required");
    // The sibling success: the same subcommand spelled right.
    assert_eq!(host(&["deliver", "--help"]).status.code(), Some(0));
}

#[test]
fn options_take_their_values_inline_too() {
    let repo = Repo::with_files(&[("a.txt", b"a\n")]);
    let contract = ContractFile::new("inline", &["*"]);
    let repo_arg = format!("--repo={}", repo.path().display());
    let out = host(&["check", &repo_arg, contract.path.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"code\":\"OK\""));
    // `--model=VALUE` is taken: the run goes on to read the (missing) contract, exit 3.
    let out = host(&["attempt", "--model=p/m", "/nonexistent/contract.yaml"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    // An inline value Pi could read as an option is still refused.
    assert_usage_error(&["attempt", "--model=-x", "c.yaml"], "could be read by pi");
}

#[test]
fn completions_and_man_pages_come_from_the_same_definitions() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = host(&["completions", shell]);
        let script = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", text(&out.stderr));
        for word in ["deliver", "timeout", "model", "export"] {
            assert!(script.contains(word), "{shell}: {word}");
        }
        assert!(!script.contains("__deliver-watchdog"), "{shell}");
    }
    assert_usage_error(&["completions", "tcsh"], "invalid value 'tcsh'");
    let out = host(&["man"]);
    let page = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(page.contains(".TH satyrn-host 1"), "{page}");
    assert!(page.contains("satyrn\\-host\\-deliver(1)"), "{page}");
    let out = host(&["man", "deliver"]);
    let page = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(page.contains(".TH satyrn-host-deliver 1"), "{page}");
    assert!(page.contains("\\-\\-timeout"), "{page}");
    assert_usage_error(&["man", "nope"], "no subcommand named \"nope\"");
}

#[test]
fn the_internal_watchdog_checks_its_own_command_line() {
    for (args, what) in [
        (&["__deliver-watchdog"][..], "<PID>"),
        (&["__deliver-watchdog", "1"], "not in 2.."),
        (&["__deliver-watchdog", "x"], "invalid digit"),
        (&["__deliver-watchdog", "5", "6"], "unexpected argument '6'"),
    ] {
        assert_usage_error(args, what);
    }
    // A valid pid with stdin at its end: nothing armed, exit 0 at once.
    let out = Command::new(host_bin())
        .args(["__deliver-watchdog", &std::process::id().to_string()])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn the_exact_protocol_command_line_answers_and_any_other_is_clap_s() {
    // `satyrn-host protocol` alone is dispatched without clap (its one-shot start-up, which
    // only the figures in docs/performance.md can see); any other command line that names
    // it is still clap's: usage errors, help and version.
    assert_usage_error(&["protocol", "extra"], "unexpected argument 'extra'");
    assert_usage_error(
        &["protocol", "--repo", "/tmp"],
        "unexpected argument '--repo'",
    );
    let version = host(&["protocol", "--version"]);
    assert_eq!(version.status.code(), Some(0));
    assert!(text(&version.stdout).contains(env!("CARGO_PKG_VERSION")));
    // The sibling: the exact command line answers its request, one JSON line on stdout.
    crate::protocol_common::assert_invalid(&crate::support::protocol_raw(b"{}"));
}
