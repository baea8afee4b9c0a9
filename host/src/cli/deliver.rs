//! `satyrn-host deliver --repo REPO [--timeout SECONDS] [--push REMOTE]
//! [--attempt I | --attempts N [--jobs J]] CONTRACT -- COMMAND [ARG ...]`: runs one attempt in
//! a detached worktree and prints one receipt, or (`--attempts`) a series of them and one
//! summary (see [`crate::deliver`], [`crate::deliver::series`] and `docs/delivery.md`).
//!
//! - A literal `--` is required; every token after it is the command's argv, exactly.
//!   A missing `--` or an empty command is a usage error: exit 2, no receipt.
//! - `--timeout` takes finite positive seconds (fractions allowed); default 600.
//! - stdout carries exactly one compact JSON receipt line; the command's output is
//!   forwarded to stderr.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::code::Code;
use crate::deliver::candidate::MAX_ATTEMPTS;
use crate::deliver::{self, DEFAULT_TIMEOUT, Request, receipt::Outcome, receipt::Receipt};

/// Parses `deliver`'s arguments. `Err` is a usage message.
///
/// # Errors
///
/// A usage message for a missing `--`, an empty command, a missing or repeated
/// `--repo`/`--timeout`/CONTRACT, an unknown option, or an invalid timeout.
pub fn parse(args: &[OsString]) -> Result<Request, String> {
    let Some(sep) = args.iter().position(|a| a == "--") else {
        return Err("deliver needs a literal -- before the command".to_owned());
    };
    let (ours, command) = (&args[..sep], &args[sep + 1..]);
    if command.is_empty() {
        return Err("deliver needs a command after --".to_owned());
    }
    let mut repo: Option<PathBuf> = None;
    let mut timeout: Option<Duration> = None;
    let mut contract: Option<PathBuf> = None;
    let mut push: Option<String> = None;
    let mut attempt: Option<u16> = None;
    let mut attempts: Option<u16> = None;
    let mut jobs: Option<u16> = None;
    let mut iter = ours.iter();
    while let Some(arg) = iter.next() {
        if arg == "--repo" {
            match iter.next() {
                Some(value) if repo.is_none() => repo = Some(PathBuf::from(value)),
                Some(_) => return Err("--repo given twice".to_owned()),
                None => return Err("--repo needs a value".to_owned()),
            }
        } else if arg == "--timeout" {
            match iter.next() {
                Some(value) if timeout.is_none() => timeout = Some(parse_timeout(value)?),
                Some(_) => return Err("--timeout given twice".to_owned()),
                None => return Err("--timeout needs a value".to_owned()),
            }
        } else if arg == "--push" {
            match iter.next().map(|v| v.to_str()) {
                Some(Some(value)) if push.is_none() && !value.is_empty() => {
                    push = Some(value.to_owned());
                }
                Some(_) if push.is_some() => return Err("--push given twice".to_owned()),
                Some(_) => return Err("--push needs a UTF-8, non-empty REMOTE".to_owned()),
                None => return Err("--push needs a value".to_owned()),
            }
        } else if arg == "--attempt" {
            match iter.next() {
                Some(value) if attempt.is_none() => {
                    attempt = Some(parse_index("--attempt", value)?)
                }
                Some(_) => return Err("--attempt given twice".to_owned()),
                None => return Err("--attempt needs a value".to_owned()),
            }
        } else if arg == "--attempts" || arg == "--jobs" {
            let name = arg.to_string_lossy();
            let slot = if arg == "--attempts" {
                &mut attempts
            } else {
                &mut jobs
            };
            match iter.next() {
                Some(value) if slot.is_none() => *slot = Some(parse_index(&name, value)?),
                Some(_) => return Err(format!("{name} given twice")),
                None => return Err(format!("{name} needs a value")),
            }
        } else if arg.to_string_lossy().starts_with('-') {
            return Err(format!("deliver: unknown option {arg:?}"));
        } else if contract.is_none() {
            contract = Some(PathBuf::from(arg));
        } else {
            return Err("deliver takes one CONTRACT".to_owned());
        }
    }
    let (Some(repo), Some(contract)) = (repo, contract) else {
        return Err("deliver needs --repo REPO and CONTRACT".to_owned());
    };
    let series = match (attempts, jobs, attempt) {
        (Some(_), _, Some(_)) => {
            return Err("--attempt and --attempts exclude each other".to_owned());
        }
        (None, Some(_), _) => return Err("--jobs needs --attempts".to_owned()),
        (Some(n), j, None) => Some((n, j.unwrap_or_else(default_jobs))),
        (None, None, _) => None,
    };
    Ok(Request {
        repo,
        contract,
        timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
        argv: command.to_vec(),
        push,
        attempt,
        series,
    })
}

/// A decimal integer from 1 to [`MAX_ATTEMPTS`] (digits only).
///
/// # Errors
///
/// A usage message naming `option`.
pub fn parse_index(option: &str, value: &OsString) -> Result<u16, String> {
    let bad = || format!("{option} takes a number from 1 to {MAX_ATTEMPTS}, got {value:?}");
    let text = value.to_str().ok_or_else(bad)?;
    if text.is_empty() || text.len() > 3 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    text.parse::<u16>()
        .ok()
        .filter(|n| (1..=MAX_ATTEMPTS).contains(n))
        .ok_or_else(bad)
}

/// The default `--jobs`: the number of CPUs this process may use (1 when unknown).
fn default_jobs() -> u16 {
    std::thread::available_parallelism()
        .ok()
        .and_then(|n| u16::try_from(n.get()).ok())
        .unwrap_or(1)
        .min(MAX_ATTEMPTS)
}

/// Finite, positive seconds that fit a [`Duration`].
fn parse_timeout(value: &OsString) -> Result<Duration, String> {
    let bad = || format!("--timeout must be finite positive seconds, got {value:?}");
    let text = value.to_str().ok_or_else(bad)?;
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(bad());
    }
    let secs: f64 = text.parse().map_err(|_| bad())?;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(bad());
    }
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(bad)
}

/// Runs `deliver`.
#[must_use]
pub fn run(args: &[OsString]) -> u8 {
    let request = match parse(args) {
        Ok(r) => r,
        Err(message) => return super::usage_error(&message),
    };
    if let Some((attempts, jobs)) = request.series {
        return run_series(args, attempts, jobs, &request);
    }
    let receipt = match deliver::signals::install() {
        Ok(()) => super::panic::catch(|| {
            super::panic::trigger("deliver");
            deliver::deliver(&request)
        })
        .unwrap_or_else(|message| {
            let repo = deliver::normalize(&request.repo);
            Receipt::new(
                Outcome::Refused,
                Code::InternalError,
                message,
                &repo.to_string_lossy(),
            )
        }),
        Err(e) => {
            let repo = deliver::normalize(&request.repo);
            Receipt::new(
                Outcome::Refused,
                Code::InternalError,
                format!("cannot install signal handlers: {e}"),
                &repo.to_string_lossy(),
            )
        }
    };
    super::print_json_line(&receipt.to_json());
    receipt.exit_status()
}

/// `--attempts N`: supervises N child `deliver`s and prints one summary line.
fn run_series(args: &[OsString], attempts: u16, jobs: u16, request: &Request) -> u8 {
    let refused = |message: String| {
        let repo = deliver::normalize(&request.repo);
        let receipt = Receipt::new(
            Outcome::Refused,
            Code::InternalError,
            message,
            &repo.to_string_lossy(),
        );
        super::print_json_line(&receipt.to_json());
        receipt.exit_status()
    };
    if let Err(e) = deliver::signals::install() {
        return refused(format!("cannot install signal handlers: {e}"));
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return refused(format!("cannot find this executable: {e}")),
    };
    let summary = deliver::series::run(&exe, args, attempts, jobs);
    match serde_json::to_string(&summary) {
        Ok(line) => super::print_json_line(&line),
        Err(e) => return refused(format!("cannot render the summary: {e}")),
    }
    summary.exit
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_separator_and_a_command_are_required() {
        assert!(parse(&args(&["--repo", "r", "c", "true"])).is_err());
        assert!(parse(&args(&["--repo", "r", "c", "--"])).is_err());
        let r = parse(&args(&[
            "--repo", "r", "c", "--", "cmd", "--", "--repo", "",
        ]))
        .expect("valid");
        assert_eq!(r.argv, args(&["cmd", "--", "--repo", ""]));
        assert_eq!(r.timeout, DEFAULT_TIMEOUT);
        assert_eq!(r.contract, PathBuf::from("c"));
    }

    #[test]
    fn timeouts_are_finite_positive_seconds() {
        for ok in ["1", "0.5", "600", "1.", "86400"] {
            assert!(parse_timeout(&OsString::from(ok)).is_ok(), "{ok}");
        }
        for bad in [
            "0", "0.0", "-1", "+1", "nan", "inf", "1e3", "", ".", "1e999", "abc", "1 ",
        ] {
            assert!(parse_timeout(&OsString::from(bad)).is_err(), "{bad}");
        }
        assert!(parse_timeout(&OsString::from("9".repeat(400))).is_err());
    }
}
