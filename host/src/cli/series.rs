//! `satyrn-host series emit slurm|kubernetes --repo-url URL --contract PATH --attempts N
//! --push REMOTE [--rev REV] [--timeout SECONDS] [--parallelism J] [--image IMAGE]
//! [--host-bin PATH] -- COMMAND [ARG ...]`: prints the job definition that runs one
//! `deliver` per index of a series on the scheduler ([`satyrn_deliver::emit`],
//! `docs/delivery.md`, "Across machines"). Writes nothing, starts nothing.
//!
//! - `--id`, the contract's id, names the job and the candidates: `ID/001` … `ID/N`.
//! - `kubernetes` needs `--image` (git and `satyrn-host` in it); its output is JSON, which
//!   `kubectl apply -f -` takes as it takes YAML.
//! - Every value must be UTF-8; a usage error (exit 2) otherwise.

use std::ffi::OsString;
use std::time::Duration;

use clap::Subcommand;

use satyrn_deliver::emit::{self, Job};

/// `series`'s arguments.
#[derive(Debug, clap::Args)]
#[command(about = "Job definitions that run a series' attempts on an existing scheduler")]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the job definition for SCHEDULER (slurm: an sbatch script with a job array;
    /// kubernetes: an Indexed Job) running one deliver per index.
    Emit(Emit),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Scheduler {
    Slurm,
    Kubernetes,
}

#[derive(Debug, clap::Args)]
struct Emit {
    /// The scheduler.
    #[arg(value_enum)]
    scheduler: Scheduler,
    /// The series id: the contract's id (candidates ID/001 …).
    #[arg(long)]
    id: String,
    /// The repository every index clones (a URL the nodes reach).
    #[arg(long, value_name = "URL")]
    repo_url: String,
    /// The revision each index checks out (default: the clone's default branch).
    #[arg(long, value_name = "REV")]
    rev: Option<String>,
    /// The contract, relative to the repository's root.
    #[arg(long, value_name = "PATH")]
    contract: String,
    /// Run indexes 1 to N (1-999).
    #[arg(long, value_name = "N", value_parser = super::deliver::parse_number)]
    attempts: u16,
    /// At most J indexes at once.
    #[arg(long, value_name = "J", value_parser = super::deliver::parse_number)]
    parallelism: Option<u16>,
    /// Where every index pushes its candidate or its receipt, create-only (a URL the
    /// nodes reach).
    #[arg(long, value_name = "REMOTE")]
    push: String,
    /// deliver's --timeout for each index.
    #[arg(long, value_name = "SECONDS", value_parser = super::deliver::parse_timeout, default_value = "600")]
    timeout: Duration,
    /// The container image (kubernetes; must hold git and satyrn-host).
    #[arg(long, value_name = "IMAGE")]
    image: Option<String>,
    /// The satyrn-host the nodes run.
    #[arg(long, value_name = "PATH", default_value = "satyrn-host")]
    host_bin: String,
    /// The command each index runs, after a literal `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Runs `series`.
#[must_use]
pub fn run(args: Args) -> u8 {
    let Command::Emit(emit) = args.command;
    let command: Option<Vec<String>> = emit
        .command
        .iter()
        .map(|w| w.to_str().map(str::to_owned))
        .collect();
    let Some(command) = command else {
        return super::usage_error("series", "every word of the command must be UTF-8");
    };
    if emit.id.is_empty() || emit.id.contains('/') || !emit.id.bytes().all(|b| b.is_ascii_graphic())
    {
        return super::usage_error(
            "series",
            format!(
                "--id must be a contract id (printable ASCII, no `/`), got {:?}",
                emit.id
            ),
        );
    }
    let job = Job {
        id: emit.id,
        attempts: emit.attempts,
        parallelism: emit.parallelism,
        repo_url: emit.repo_url,
        rev: emit.rev,
        contract: emit.contract,
        push: emit.push,
        timeout: emit.timeout,
        command,
        host: emit.host_bin,
    };
    let text = match (emit.scheduler, &emit.image) {
        (Scheduler::Slurm, _) => emit::slurm(&job),
        (Scheduler::Kubernetes, Some(image)) => {
            let mut text =
                serde_json::to_string_pretty(&emit::kubernetes(&job, image)).unwrap_or_default();
            text.push('\n');
            text
        }
        (Scheduler::Kubernetes, None) => {
            return super::usage_error("series", "kubernetes needs --image");
        }
    };
    let mut out = std::io::stdout().lock();
    let _ = std::io::Write::write_all(&mut out, text.as_bytes());
    let _ = std::io::Write::flush(&mut out);
    0
}
