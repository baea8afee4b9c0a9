//! `deliver --attempts N [--jobs J]`: N attempts of one contract, at most J at once.
//!
//! Each attempt is a child `satyrn-host deliver --attempt I …` of this very executable with
//! the caller's other arguments unchanged, so each keeps every single-`deliver` guarantee
//! (its own worktree, timeout, signal handling, subreaper, watchdog, cleanup, receipt). This
//! module only supervises them; it runs no git and creates nothing:
//!
//! - children get `SATYRN_ATTEMPT_INDEX=I` and `SATYRN_ATTEMPTS=N` in their environment,
//!   which their command inherits (how attempts differ — model, seed — is the caller's
//!   choice);
//! - a child's stdout (its one receipt line) is read whole; its stderr is ours;
//! - `SIGINT`/`SIGTERM`/`SIGHUP` received by the parent (handlers of [`satyrn_os::signals`],
//!   installed by the caller) is forwarded once to every running child, and no further
//!   attempt starts; each child then stops, cleans up and prints its `INTERRUPTED` receipt;
//! - each child gets `SIGTERM` if the parent dies (`PR_SET_PDEATHSIG`), so a killed parent
//!   leaves no attempt running past its own cleanup.
//!
//! The summary lists every attempt's receipt byte for byte (see `docs/delivery.md`).

use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags};
use rustix::process::{Pid, Signal};
use serde::Serialize;
use serde_json::value::RawValue;

use satyrn_code::Code;
use satyrn_os::signals;

/// How often the supervisor looks at its children when no signal wakes it.
const TICK: Duration = Duration::from_millis(50);

/// The environment variable telling an attempt's command which attempt it is (1-based).
pub const INDEX_VAR: &str = "SATYRN_ATTEMPT_INDEX";
/// The environment variable telling an attempt's command how many attempts there are.
pub const COUNT_VAR: &str = "SATYRN_ATTEMPTS";

/// One attempt's line in the summary.
#[derive(Debug, Serialize)]
pub struct AttemptResult {
    /// The attempt's index (1-based).
    pub attempt: u16,
    /// The child's exit status, when it exited.
    pub exit_status: Option<i32>,
    /// The signal that ended the child, when one did (it printed no receipt then).
    pub signal: Option<i32>,
    /// The child's receipt, exactly as it printed it; `None` when it printed none (it
    /// never started, or died without one).
    pub receipt: Option<Box<RawValue>>,
    /// Why there is no receipt; empty when there is one.
    pub message: String,
}

/// The one JSON line `deliver --attempts` prints.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Always 1.
    pub version: u64,
    /// Always `"attempts"`: this is a summary, not a receipt.
    pub outcome: &'static str,
    /// `OK` when at least one attempt created a candidate; else `INTERRUPTED` when the
    /// series was interrupted; else the code of the lowest-numbered attempt's receipt.
    pub code: String,
    /// How many attempts created a candidate, and of how many.
    pub message: String,
    /// Every attempt, by index.
    pub attempts: Vec<AttemptResult>,
    /// The exit status of the series (the code's row; `INTERNAL_ERROR`'s without any
    /// receipt).
    #[serde(skip)]
    pub exit: u8,
}

struct Running {
    attempt: u16,
    child: Child,
    stdout: JoinHandle<Vec<u8>>,
}

/// The options of `deliver` that take a value (the next token, whatever it looks like).
const VALUE_OPTIONS: [&str; 6] = [
    "--repo",
    "--timeout",
    "--push",
    "--attempt",
    "--attempts",
    "--jobs",
];

/// The arguments of attempt `index`'s child: `args` (those of `deliver`, without the
/// subcommand) without `--attempts N` and `--jobs J` before the `--`, with `--attempt I` in
/// front. Option values are skipped as `deliver`'s parser reads them (a `--repo` named
/// `--jobs` stays a `--repo`).
#[must_use]
pub fn child_args(args: &[OsString], index: u16) -> Vec<OsString> {
    let sep = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let mut out = vec![
        OsString::from("deliver"),
        OsString::from("--attempt"),
        OsString::from(index.to_string()),
    ];
    let mut i = 0;
    while i < sep {
        let takes_value = VALUE_OPTIONS.iter().any(|o| args[i] == *o);
        let width = if takes_value { 2 } else { 1 };
        let end = (i + width).min(sep);
        if !(args[i] == "--attempts" || args[i] == "--jobs") {
            out.extend(args[i..end].iter().cloned());
        }
        i = end;
    }
    out.extend(args[sep..].iter().cloned());
    out
}

/// Runs attempts 1 to `attempts` of `args` (at most `jobs` at once) as children of `exe`.
#[must_use]
pub fn run(exe: &Path, args: &[OsString], attempts: u16, jobs: u16) -> Summary {
    let mut results: Vec<AttemptResult> = Vec::new();
    let mut running: Vec<Running> = Vec::new();
    let mut next: u16 = 1;
    let mut forwarded = false;
    loop {
        let interrupted = signals::received();
        if let Some(sig) = interrupted
            && !forwarded
        {
            forwarded = true;
            if let Some(sig) = Signal::from_named_raw(sig) {
                for r in &running {
                    if let Some(pid) = i32::try_from(r.child.id()).ok().and_then(Pid::from_raw) {
                        let _ = rustix::process::kill_process(pid, sig);
                    }
                }
            }
        }
        while interrupted.is_none() && running.len() < usize::from(jobs) && next <= attempts {
            match spawn(exe, args, next, attempts) {
                Ok(r) => running.push(r),
                Err(e) => results.push(AttemptResult {
                    attempt: next,
                    exit_status: None,
                    signal: None,
                    receipt: None,
                    message: format!("cannot start the attempt: {e}"),
                }),
            }
            next += 1;
        }
        let mut i = 0;
        while i < running.len() {
            match running[i].child.try_wait() {
                Ok(Some(status)) => {
                    let done = running.swap_remove(i);
                    results.push(finish(done, status));
                }
                Ok(None) => i += 1,
                Err(e) => {
                    let mut done = running.swap_remove(i);
                    let status = done.child.wait();
                    let mut result = match status {
                        Ok(status) => finish(done, status),
                        Err(_) => AttemptResult {
                            attempt: done.attempt,
                            exit_status: None,
                            signal: None,
                            receipt: None,
                            message: String::new(),
                        },
                    };
                    if result.receipt.is_none() {
                        result.message = format!("cannot wait for the attempt: {e}");
                    }
                    results.push(result);
                }
            }
        }
        if running.is_empty() && (next > attempts || interrupted.is_some()) {
            break;
        }
        wait_tick();
    }
    for attempt in next..=attempts {
        results.push(AttemptResult {
            attempt,
            exit_status: None,
            signal: None,
            receipt: None,
            message: "not started: the series was interrupted".to_owned(),
        });
    }
    results.sort_by_key(|r| r.attempt);
    summarize(results, attempts, signals::received().is_some())
}

fn spawn(exe: &Path, args: &[OsString], index: u16, attempts: u16) -> std::io::Result<Running> {
    let mut cmd = Command::new(exe);
    cmd.args(child_args(args, index))
        .env(INDEX_VAR, index.to_string())
        .env(COUNT_VAR, attempts.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    satyrn_os::process::end_with_parent(&mut cmd, Signal::TERM);
    let mut child = cmd.spawn()?;
    let mut pipe = child
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("the attempt's stdout was not piped"))?;
    // Read while it runs: a receipt larger than the pipe must not block the child.
    let stdout = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    });
    Ok(Running {
        attempt: index,
        child,
        stdout,
    })
}

fn finish(done: Running, status: ExitStatus) -> AttemptResult {
    use std::os::unix::process::ExitStatusExt;
    let bytes = done.stdout.join().unwrap_or_default();
    let line = String::from_utf8_lossy(&bytes);
    let receipt = RawValue::from_string(line.trim_end().to_owned()).ok();
    AttemptResult {
        attempt: done.attempt,
        exit_status: status.code(),
        signal: status.signal(),
        message: if receipt.is_some() {
            String::new()
        } else {
            format!("the attempt printed no receipt ({status})")
        },
        receipt,
    }
}

/// Waits up to [`TICK`], or less when a signal arrives.
fn wait_tick() {
    let timeout = super::spool::timespec(TICK);
    match signals::wake_fd() {
        Some(fd) => {
            let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::IN)];
            let _ = rustix::event::poll(&mut fds, Some(&timeout));
            signals::drain();
        }
        None => std::thread::sleep(TICK),
    }
}

fn code_of(receipt: &RawValue) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Coded {
        code: String,
    }
    serde_json::from_str::<Coded>(receipt.get())
        .ok()
        .map(|c| c.code)
}

fn summarize(results: Vec<AttemptResult>, attempts: u16, interrupted: bool) -> Summary {
    let created = results
        .iter()
        .filter(|r| r.receipt.as_deref().and_then(code_of).as_deref() == Some("OK"))
        .count();
    let first = results
        .iter()
        .find_map(|r| Some((r.receipt.as_deref().and_then(code_of)?, r.exit_status?)));
    let (code, exit) = if created > 0 {
        (Code::Ok.as_str().to_owned(), Code::Ok.exit_status())
    } else if interrupted {
        (
            Code::Interrupted.as_str().to_owned(),
            Code::Interrupted.exit_status(),
        )
    } else {
        match first {
            Some((code, status)) => (code, u8::try_from(status).unwrap_or(1)),
            None => (
                Code::InternalError.as_str().to_owned(),
                Code::InternalError.exit_status(),
            ),
        }
    };
    Summary {
        version: 1,
        outcome: "attempts",
        code,
        message: format!("{created} of {attempts} attempts created a candidate"),
        attempts: results,
        exit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn child_arguments_drop_the_series_options_before_the_separator_only() {
        let given = args(&[
            "--repo",
            "r",
            "--attempts",
            "3",
            "--jobs",
            "2",
            "c",
            "--",
            "cmd",
            "--jobs",
            "9",
        ]);
        assert_eq!(
            child_args(&given, 7),
            args(&[
                "deliver",
                "--attempt",
                "7",
                "--repo",
                "r",
                "c",
                "--",
                "cmd",
                "--jobs",
                "9"
            ])
        );
    }
}
