//! `satyrn-host candidates list|show|diff|apply|drop`: reviewing what `deliver` published
//! (see [`satyrn_candidates`] and `docs/candidates.md`).
//!
//! - With `--json`, stdout carries exactly one JSON document, `{"version":1,"code",
//!   "message", …}`, also for a refusal; without it, a table or text on stdout and a
//!   refusal as one line `satyrn-host candidates: CODE: message` on stderr.
//! - `diff` writes the patch itself to stdout (no `--json`).
//! - The exit status is the code's row in [`satyrn_code`]; a usage error exits 2.

use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;
use serde::Serialize;

use satyrn_candidates::{
    self as candidates, Error, Namespace, apply, diff, drop, list, remote, series, show,
};
use satyrn_code::Code;
use satyrn_git::Git;

/// Review, apply and drop the candidates deliver published.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Every candidate: base, base against HEAD, files with added/removed lines, creation time.
    List {
        #[command(flatten)]
        common: Common,
    },
    /// One row per attempt of a series ID (candidates ID/001 …): state, code, host,
    /// duration and change, from the receipts; indexes with nothing there named missing.
    Series {
        #[command(flatten)]
        common: Common,
        /// Cover indexes 1 to N (default: up to the highest index found).
        #[arg(long, value_name = "N", value_parser = parse_attempts)]
        attempts: Option<u16>,
        /// The series id (the contract id).
        id: String,
    },
    /// One candidate and the receipt deliver printed for it.
    Show {
        #[command(flatten)]
        common: Common,
        /// The candidate id.
        id: String,
    },
    /// The candidate's patch against its own base.
    Diff {
        /// The worktree root of the repository.
        #[arg(long)]
        repo: PathBuf,
        /// Read the candidates gathered on this remote (fetched first).
        #[arg(long)]
        remote: Option<String>,
        /// With --remote: how long each exchange with the remote may take, in seconds
        /// (default 120); then it is stopped and named.
        #[arg(long, value_name = "SECONDS", value_parser = super::deliver::parse_timeout, default_value = "120")]
        timeout: std::time::Duration,
        /// The candidate id.
        id: String,
    },
    /// The candidate's changes into the clean checkout, staged; 3-way when HEAD moved.
    Apply {
        #[command(flatten)]
        common: Common,
        /// The candidate id.
        id: String,
    },
    /// Delete the candidate's refs if its head still names the listed commit.
    Drop {
        /// The worktree root of the repository.
        #[arg(long)]
        repo: PathBuf,
        /// One JSON document on stdout.
        #[arg(long)]
        json: bool,
        /// Delete the candidate on this remote instead (compare-and-delete there, by a
        /// push with leases); the local candidates are not touched.
        #[arg(long)]
        remote: Option<String>,
        /// With --remote: how long each exchange with the remote may take, in seconds
        /// (default 120); then it is stopped and named.
        #[arg(long, value_name = "SECONDS", value_parser = super::deliver::parse_timeout, default_value = "120")]
        timeout: std::time::Duration,
        /// The full commit id the candidate was listed with.
        #[arg(long, value_parser = parse_object_id)]
        expect: String,
        /// The candidate id.
        id: String,
    },
}

#[derive(Debug, clap::Args)]
struct Common {
    /// The worktree root of the repository.
    #[arg(long)]
    repo: PathBuf,
    /// One JSON document on stdout.
    #[arg(long)]
    json: bool,
    /// Read the candidates gathered on this remote (fetched first into
    /// refs/satyrn/remotes/).
    #[arg(long)]
    remote: Option<String>,
    /// With --remote: how long each exchange with the remote may take, in seconds (default
    /// 120); then it is stopped and named.
    #[arg(long, value_name = "SECONDS", value_parser = super::deliver::parse_timeout, default_value = "120")]
    timeout: std::time::Duration,
}

/// A full object id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.
fn parse_object_id(value: &str) -> Result<String, String> {
    let hex = value
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if hex && (value.len() == 40 || value.len() == 64) {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "expected a full commit id (40 or 64 lowercase hex digits), got {value:?}"
        ))
    }
}

/// Runs `candidates` as parsed; returns the exit status.
#[must_use]
pub fn run(cli: Args) -> u8 {
    match cli.command {
        Command::List { common } => answer(common.json, || {
            let (git, namespace) = open(&common.repo, common.remote.as_deref(), common.timeout)?;
            let candidates = list::list(&git, &namespace)?;
            Ok((
                if common.json {
                    String::new()
                } else {
                    list::table(&candidates)
                },
                Listed {
                    remote: common.remote.clone(),
                    candidates,
                },
            ))
        }),
        Command::Series {
            common,
            attempts,
            id,
        } => answer(common.json, || {
            let (git, namespace) = open(&common.repo, common.remote.as_deref(), common.timeout)?;
            let series = series::series(&git, &namespace, &id, attempts)?;
            Ok((
                series::table(&series),
                SeriesBody {
                    remote: common.remote.clone(),
                    series,
                },
            ))
        }),
        Command::Show { common, id } => answer(common.json, || {
            let (git, namespace) = open(&common.repo, common.remote.as_deref(), common.timeout)?;
            let shown = show::show(&git, &namespace, &id)?;
            Ok((show::text(&shown), shown))
        }),
        Command::Diff {
            repo,
            remote,
            timeout,
            id,
        } => {
            let result = open(&repo, remote.as_deref(), timeout)
                .and_then(|(git, namespace)| diff::diff(&git, &namespace, &id));
            match result {
                Ok(patch) => {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(&patch);
                    let _ = out.flush();
                    0
                }
                Err(e) => refuse(false, &e),
            }
        }
        Command::Apply { common, id } => answer(common.json, || {
            let (git, namespace) = open(&common.repo, common.remote.as_deref(), common.timeout)?;
            let applied = apply::apply(&git, &namespace, &id)?;
            let mut text = format!(
                "applied candidate {} ({}) onto {}{}; {} path(s) staged, nothing committed:\n",
                list::readable(&applied.id),
                applied.commit,
                applied.head,
                if applied.three_way { " (3-way)" } else { "" },
                applied.paths.len()
            );
            for p in &applied.paths {
                text.push_str(&format!("  {}\n", list::readable(p)));
            }
            Ok((text, AppliedBody { applied }))
        }),
        Command::Drop {
            repo,
            json,
            remote,
            timeout,
            expect,
            id,
        } => answer(json, || {
            let git = candidates::open(&repo)?;
            let dropped = match &remote {
                Some(remote) => drop::drop_remote(&bounded(git, timeout), remote, &id, &expect)?,
                None => drop::drop(&git, &id, &expect)?,
            };
            let text = format!(
                "dropped candidate {} ({}){}: {}\n",
                list::readable(&dropped.id),
                dropped.commit,
                dropped
                    .remote
                    .as_deref()
                    .map(|r| format!(" on {}", list::readable(r)))
                    .unwrap_or_default(),
                dropped.refs.join(", ")
            );
            Ok((text, DroppedBody { dropped }))
        }),
    }
}

/// The JSON document of every answer: these three fields first, then the body's.
#[derive(Serialize)]
struct Document<'a, T: Serialize> {
    version: u64,
    code: Code,
    message: &'a str,
    #[serde(flatten)]
    body: Option<T>,
}

#[derive(Serialize)]
struct Listed {
    remote: Option<String>,
    candidates: Vec<list::Entry>,
}

#[derive(Serialize)]
struct SeriesBody {
    remote: Option<String>,
    series: series::Series,
}

/// `--attempts`: 1 to the most attempts of a series.
fn parse_attempts(text: &str) -> Result<u16, String> {
    super::deliver::parse_index("--attempts", &std::ffi::OsString::from(text))
}

#[derive(Serialize)]
struct AppliedBody {
    applied: apply::Applied,
}

#[derive(Serialize)]
struct DroppedBody {
    dropped: drop::Dropped,
}

fn open(
    repo: &std::path::Path,
    remote: Option<&str>,
    timeout: std::time::Duration,
) -> Result<(Git, Namespace), Error> {
    let git = candidates::open(repo)?;
    let Some(r) = remote else {
        return Ok((git, Namespace::local()));
    };
    let git = bounded(git, timeout);
    let namespace = remote::mirror(&git, r)?;
    Ok((git, namespace))
}

/// `git` with every invocation bounded by `timeout` from now (a remote that never answers
/// is stopped with its process group and named: `git::GitError::TimedOut`).
fn bounded(git: Git, timeout: std::time::Duration) -> Git {
    match std::time::Instant::now().checked_add(timeout) {
        Some(deadline) => git.with_deadline(deadline, satyrn_git::OnSignal::Stop),
        None => git,
    }
}

/// Prints what `body` answers: its text, or with `as_json` one [`Document`].
fn answer<T: Serialize>(as_json: bool, body: impl FnOnce() -> Result<(String, T), Error>) -> u8 {
    match body() {
        Ok((_, fields)) if as_json => {
            print_document(Code::Ok, "", Some(fields));
            0
        }
        Ok((text, _)) => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            0
        }
        Err(e) => refuse(as_json, &e),
    }
}

fn print_document<T: Serialize>(code: Code, message: &str, body: Option<T>) {
    let document = Document {
        version: 1,
        code,
        message,
        body,
    };
    // Strings, integers, options and vectors of them always serialize; the fallback keeps
    // the one-document promise even so.
    let line = serde_json::to_string(&document).unwrap_or_else(|e| {
        format!(
            "{{\"version\":1,\"code\":\"INTERNAL_ERROR\",\"message\":{}}}",
            serde_json::Value::String(e.to_string())
        )
    });
    super::print_json_line(&line);
}

fn refuse(as_json: bool, error: &Error) -> u8 {
    let code = error.code();
    if as_json {
        print_document::<()>(code, &error.to_string(), None);
    } else {
        let _ = writeln!(std::io::stderr(), "satyrn-host candidates: {code}: {error}");
    }
    code.exit_status()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expect_takes_only_full_lowercase_object_ids() {
        assert!(parse_object_id(&"a".repeat(40)).is_ok());
        assert!(parse_object_id(&"0".repeat(64)).is_ok());
        for bad in ["", "abc", &"A".repeat(40), &"g".repeat(40), &"a".repeat(41)] {
            assert!(parse_object_id(bad).is_err(), "{bad}");
        }
    }
}
