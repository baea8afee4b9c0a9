//! `satyrn-host deliver --repo REPO [--timeout SECONDS] [--push REMOTE]
//! [--attempt I | --attempt-from slurm|kubernetes | --attempts N [--jobs J]] CONTRACT --
//! COMMAND [ARG ...]`: runs one attempt in
//! a detached worktree and prints one receipt, or (`--attempts`) a series of them and one
//! summary (see [`satyrn_deliver`], [`satyrn_deliver::series`] and `docs/delivery.md`).
//!
//! - A literal `--` is required; every token after it is the command's argv, exactly.
//!   A missing `--` or an empty command is a usage error: exit 2, no receipt.
//! - `--timeout` takes finite positive seconds (fractions allowed); default 600.
//! - stdout carries exactly one compact JSON receipt line; the command's output is
//!   forwarded to stderr.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use satyrn_code::Code;
use satyrn_deliver::candidate::MAX_ATTEMPTS;
use satyrn_deliver::{self as deliver, Request, receipt::Outcome, receipt::Receipt};

/// `deliver`'s arguments.
#[derive(Debug, clap::Args)]
#[command(
    about = "Run a command in a detached worktree; keep its change as a candidate ref",
    long_about = "Runs COMMAND in a detached worktree of REPO at HEAD, keeps the declared \
                  files it changed as a candidate commit under refs/satyrn/candidates/ID, \
                  and prints exactly one JSON receipt line on stdout (docs/delivery.md); the \
                  command's own output is forwarded to stderr. REPO itself is never changed."
)]
pub struct Args {
    /// The repository: the root of a clean git worktree (no tracked changes, deletions or
    /// untracked files).
    #[arg(long, value_name = "REPO", value_parser = super::path())]
    pub repo: PathBuf,
    /// How long the command may run before its process group is killed (COMMAND_TIMEOUT):
    /// finite positive seconds, fractions allowed.
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout, default_value = "600")]
    pub timeout: Duration,
    /// After the candidate exists locally, publish it to REMOTE (a git remote name or URL)
    /// create-only: the push fails when REMOTE already has the candidate (docs/candidates.md).
    #[arg(long, value_name = "REMOTE", value_parser = parse_remote)]
    pub push: Option<String>,
    /// This delivery is attempt I (1-999) of a series: its candidate is ID/III. Set by
    /// --attempts for each child.
    #[arg(long, value_name = "I", value_parser = parse_number, conflicts_with = "attempts")]
    pub attempt: Option<u16>,
    /// Take the attempt index from the scheduler's variable: slurm (SLURM_ARRAY_TASK_ID, as
    /// is: submit the array as --array=1-N) or kubernetes (JOB_COMPLETION_INDEX + 1: an
    /// Indexed Job counts from 0). A missing or invalid variable is a usage error.
    #[arg(long, value_name = "SCHEDULER", value_enum, conflicts_with_all = ["attempt", "attempts"])]
    pub attempt_from: Option<Scheduler>,
    /// Run N (1-999) attempts of the contract, each in its own worktree and its own
    /// candidate ID/001..; one summary line follows their receipts.
    #[arg(long, value_name = "N", value_parser = parse_number)]
    pub attempts: Option<u16>,
    /// How many attempts run at once (default: the number of CPUs); needs --attempts.
    #[arg(long, value_name = "J", value_parser = parse_number, requires = "attempts")]
    pub jobs: Option<u16>,
    /// The task contract (YAML); its id names the candidate ref.
    #[arg(value_name = "CONTRACT", value_parser = super::path())]
    pub contract: PathBuf,
    /// The command and its arguments, after a literal `--`: every token after it is passed
    /// exactly as given, another `--` included.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

impl From<Args> for Request {
    fn from(args: Args) -> Self {
        Self {
            repo: args.repo,
            contract: args.contract,
            timeout: args.timeout,
            argv: args.command,
            push: args.push,
            attempt: args.attempt,
            series: args
                .attempts
                .map(|n| (n, args.jobs.unwrap_or_else(default_jobs))),
        }
    }
}

/// A scheduler whose job arrays name each index in a variable of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scheduler {
    /// Slurm job arrays: `SLURM_ARRAY_TASK_ID`, taken as the index.
    Slurm,
    /// Kubernetes Indexed Jobs: `JOB_COMPLETION_INDEX`, 0-based, plus one.
    Kubernetes,
}

impl Scheduler {
    /// The variable naming the index, and what is added to its value.
    #[must_use]
    pub fn variable(self) -> (&'static str, u16) {
        match self {
            Self::Slurm => ("SLURM_ARRAY_TASK_ID", 0),
            Self::Kubernetes => ("JOB_COMPLETION_INDEX", 1),
        }
    }

    /// The attempt index this process's environment names (`get`: a variable's value).
    ///
    /// # Errors
    ///
    /// A usage message naming the variable when it is missing, not a number, or gives an
    /// index outside 1 to [`MAX_ATTEMPTS`].
    pub fn index(self, get: impl Fn(&str) -> Option<OsString>) -> Result<u16, String> {
        let (name, offset) = self.variable();
        let value =
            get(name).ok_or_else(|| format!("--attempt-from needs {name} in the environment"))?;
        let raw = value
            .to_str()
            .filter(|t| !t.is_empty() && t.len() <= 3 && t.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|t| t.parse::<u16>().ok())
            .ok_or_else(|| format!("{name} must be a number, got {value:?}"))?;
        Some(raw + offset)
            .filter(|i| (1..=MAX_ATTEMPTS).contains(i))
            .ok_or_else(|| {
                format!(
                    "{name}={raw} gives attempt {}, outside 1 to {MAX_ATTEMPTS}",
                    raw + offset
                )
            })
    }
}

/// A non-empty, UTF-8 remote name or URL.
fn parse_remote(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("REMOTE must not be empty".to_owned());
    }
    Ok(text.to_owned())
}

/// An attempt count or index from 1 to [`MAX_ATTEMPTS`].
pub(super) fn parse_number(text: &str) -> Result<u16, String> {
    parse_index("the value", &OsString::from(text))
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
pub(super) fn parse_timeout(text: &str) -> Result<Duration, String> {
    let bad = || format!("--timeout must be finite positive seconds, got {text:?}");
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
pub fn run(args: Args) -> u8 {
    let from = args.attempt_from;
    let mut request = Request::from(args);
    if let Some(scheduler) = from {
        match scheduler.index(|name| std::env::var_os(name)) {
            Ok(index) => request.attempt = Some(index),
            Err(message) => return super::usage_error("deliver", message),
        }
    }
    if let Some((attempts, jobs)) = request.series {
        if let Some(message) = models_mismatch(&request.argv, attempts) {
            return super::usage_error("deliver", message);
        }
        return run_series(&series_args(&request), attempts, jobs, &request);
    }
    let receipt = match satyrn_os::signals::install() {
        Ok(()) => super::panic::catch(|| {
            satyrn_os::fault::trigger("deliver");
            deliver::deliver(&request)
        })
        .unwrap_or_else(|message| {
            let repo = satyrn_git::root::normalize(&request.repo);
            Receipt::new(
                Outcome::Refused,
                Code::InternalError,
                message,
                &repo.to_string_lossy(),
            )
        }),
        Err(e) => {
            let repo = satyrn_git::root::normalize(&request.repo);
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

/// Why a series of `attempts` cannot run `argv` when it is `satyrn-host attempt` (this
/// executable's file name, then `attempt`) with a list of several `--model`s whose length
/// is not `attempts`; checked before any attempt starts, as `attempt` itself would refuse
/// each one (`cli::attempt::select`). `None` for any other command.
fn models_mismatch(argv: &[OsString], attempts: u16) -> Option<String> {
    use clap::FromArgMatches;
    let ours = std::env::current_exe().ok()?.file_name()?.to_owned();
    let (program, rest) = argv.split_first()?;
    if std::path::Path::new(program).file_name() != Some(ours.as_os_str())
        || rest.first().is_none_or(|a| a != "attempt")
    {
        return None;
    }
    let matches = super::definition()
        .try_get_matches_from(std::iter::once(program).chain(rest))
        .ok()?;
    let super::Command::Attempt(parsed) = super::Cli::from_arg_matches(&matches).ok()?.command
    else {
        return None;
    };
    let models = parsed.model.len();
    (models > 1 && models != usize::from(attempts)).then(|| {
        format!(
            "the attempt command lists {models} models (--model) for {attempts} attempts (--attempts); give one model per attempt"
        )
    })
}

/// The command line of one attempt of `request`'s series, without the subcommand and
/// without `--attempt` (which [`deliver::series::child_args`] puts in front).
fn series_args(request: &Request) -> Vec<OsString> {
    let mut args = vec![
        OsString::from("--repo"),
        request.repo.clone().into_os_string(),
        OsString::from("--timeout"),
        OsString::from(request.timeout.as_secs_f64().to_string()),
    ];
    if let Some(remote) = &request.push {
        args.push(OsString::from("--push"));
        args.push(OsString::from(remote));
    }
    args.push(request.contract.clone().into_os_string());
    args.push(OsString::from("--"));
    args.extend(request.argv.iter().cloned());
    args
}

/// `--attempts N`: supervises N child `deliver`s and prints one summary line.
fn run_series(args: &[OsString], attempts: u16, jobs: u16, request: &Request) -> u8 {
    let refused = |message: String| {
        let repo = satyrn_git::root::normalize(&request.repo);
        let receipt = Receipt::new(
            Outcome::Refused,
            Code::InternalError,
            message,
            &repo.to_string_lossy(),
        );
        super::print_json_line(&receipt.to_json());
        receipt.exit_status()
    };
    if let Err(e) = satyrn_os::signals::install() {
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
    use super::super::{Command, parse};
    use super::*;
    use satyrn_deliver::DEFAULT_TIMEOUT;

    fn request(list: &[&str]) -> Result<Request, clap::Error> {
        let args = std::iter::once("deliver").chain(list.iter().copied());
        match parse(&args.collect::<Vec<_>>())?.command {
            Command::Deliver(args) => Ok(args.into()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_separator_and_a_command_are_required() {
        assert!(request(&["--repo", "r", "c", "true"]).is_err());
        assert!(request(&["--repo", "r", "c", "--"]).is_err());
        assert!(request(&["--repo", "r", "--", "c", "true"]).is_err());
        let r = request(&["--repo", "r", "c", "--", "cmd", "--", "--repo", ""]).expect("valid");
        let argv: Vec<OsString> = ["cmd", "--", "--repo", ""].map(OsString::from).into();
        assert_eq!(r.argv, argv);
        assert_eq!(r.timeout, DEFAULT_TIMEOUT);
        assert_eq!(r.contract, PathBuf::from("c"));
        let r = request(&["c", "--timeout=0.5", "--repo=", "--", "x"]).expect("valid");
        assert_eq!(
            (r.repo, r.timeout),
            (PathBuf::new(), Duration::from_millis(500))
        );
    }

    #[test]
    fn timeouts_are_finite_positive_seconds() {
        for ok in ["1", "0.5", "600", "1.", "86400"] {
            assert!(parse_timeout(ok).is_ok(), "{ok}");
        }
        for bad in [
            "0", "0.0", "-1", "+1", "nan", "inf", "1e3", "", ".", "1e999", "abc", "1 ",
        ] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
        assert!(parse_timeout(&"9".repeat(400)).is_err());
    }
}
