//! `series emit slurm|kubernetes`: the job definition that runs one `deliver` per index of a
//! series on an existing scheduler — a Slurm job array (`sbatch` script) or a Kubernetes
//! Indexed Job — and nothing else: the scheduler schedules.
//!
//! Every index does the same: clone the repository into a private directory, check out the
//! revision, run `deliver --attempt-from <scheduler> --push REMOTE --timeout T CONTRACT --
//! COMMAND`, remove the directory. A series split over machines so makes the same refs
//! (`ID/III`) as `deliver --attempts N`, each pushed create-only; a requeued or retried index
//! whose result is already on the remote is `CANDIDATE_EXISTS` (or its receipt's
//! `published.pushed` false), never an overwrite.
//!
//! Values reach the job as environment variables (`SATYRN_REPO_URL`, …), and the command
//! as the shell's own positional arguments, so no value is ever re-parsed by a shell.

use std::fmt::Write;
use std::time::Duration;

/// What a job definition runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The series id (the contract's id): the job's name.
    pub id: String,
    /// Indexes 1 to `attempts`.
    pub attempts: u16,
    /// At most this many at once (`None`: as many as the scheduler allows).
    pub parallelism: Option<u16>,
    /// The repository every index clones.
    pub repo_url: String,
    /// The revision checked out (`None`: the clone's default branch).
    pub rev: Option<String>,
    /// The contract, relative to the repository's root.
    pub contract: String,
    /// Where every index pushes (create-only).
    pub push: String,
    /// `deliver --timeout`.
    pub timeout: Duration,
    /// The command, argv exactly.
    pub command: Vec<String>,
    /// The `satyrn-host` to run (a name on `PATH`, or a path on the nodes).
    pub host: String,
}

/// `text` as one single-quoted POSIX shell word.
#[must_use]
pub fn shell_word(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The time limit a scheduler gets for one index: `--timeout`, plus 10 minutes for the
/// clone, the push and the clean-up, in whole minutes.
#[must_use]
pub fn limit_minutes(timeout: Duration) -> u64 {
    // At most a year: every scheduler's field takes it.
    timeout
        .as_secs()
        .div_ceil(60)
        .saturating_add(10)
        .min(366 * 24 * 60)
}

/// The shell script every index runs, reading `SATYRN_*` from its environment and the
/// command from its positional arguments; `scheduler` is `deliver --attempt-from`'s value.
///
/// `deliver` runs in the background and the shell forwards `TERM`, `INT` and `HUP` to it,
/// then waits for it to clean up: a kubelet signals only the container's first process (this
/// shell), and Slurm signals every process of the task (`deliver` then gets it twice, which
/// it takes as once). The exit status is `deliver`'s, and the `EXIT` trap removes the clone.
fn body(scheduler: &str) -> String {
    let mut s = String::new();
    s.push_str(
        "set -eu
",
    );
    s.push_str("work=$(mktemp -d \"${TMPDIR:-/tmp}/satyrn-attempt.XXXXXX\")\n");
    s.push_str("trap 'rm -rf -- \"$work\"' EXIT\n");
    s.push_str("git clone --quiet -- \"$SATYRN_REPO_URL\" \"$work/repo\"\n");
    s.push_str(
        "if [ -n \"${SATYRN_REV:-}\" ]; then git -C \"$work/repo\" checkout --quiet --detach \"$SATYRN_REV^{commit}\" --; fi\n",
    );
    let _ = writeln!(
        s,
        "\"$SATYRN_HOST_BIN\" deliver --repo \"$work/repo\" --attempt-from {scheduler} --push \"$SATYRN_PUSH\" --timeout \"$SATYRN_TIMEOUT\" \"$work/repo/$SATYRN_CONTRACT\" -- \"$@\" &"
    );
    s.push_str("pid=$!\n");
    s.push_str("trap 'kill -TERM \"$pid\" 2>/dev/null || :' TERM INT HUP\n");
    s.push_str("status=0\n");
    s.push_str("while :; do\n");
    s.push_str("  wait \"$pid\" && status=0 || status=$?\n");
    s.push_str("  kill -0 \"$pid\" 2>/dev/null || break\n");
    s.push_str("done\n");
    s.push_str("exit \"$status\"\n");
    s
}

fn env(job: &Job) -> Vec<(&'static str, String)> {
    vec![
        ("SATYRN_HOST_BIN", job.host.clone()),
        ("SATYRN_REPO_URL", job.repo_url.clone()),
        ("SATYRN_REV", job.rev.clone().unwrap_or_default()),
        ("SATYRN_CONTRACT", job.contract.clone()),
        ("SATYRN_PUSH", job.push.clone()),
        ("SATYRN_TIMEOUT", format!("{}", job.timeout.as_secs_f64())),
    ]
}

/// The `sbatch` script: a job array of `1-N` (`%J` when a parallelism is given), requeued on
/// node failure or preemption (`--requeue`), one `deliver` per task.
#[must_use]
pub fn slurm(job: &Job) -> String {
    let mut s = String::from("#!/bin/sh\n");
    // sbatch reads a directive's value up to a `#` or a blank: the name keeps only what it
    // takes as it is.
    let name: String = job
        .id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let _ = writeln!(s, "#SBATCH --job-name=satyrn-{name}");
    match job.parallelism {
        Some(j) => {
            let _ = writeln!(s, "#SBATCH --array=1-{}%{j}", job.attempts);
        }
        None => {
            let _ = writeln!(s, "#SBATCH --array=1-{}", job.attempts);
        }
    }
    s.push_str("#SBATCH --requeue\n");
    let _ = writeln!(s, "#SBATCH --time={}", limit_minutes(job.timeout));
    s.push_str("# Generated by satyrn-host series emit slurm; submit with: sbatch THIS_FILE\n");
    for (name, value) in env(job) {
        let _ = writeln!(s, "export {name}={}", shell_word(&value));
    }
    s.push_str("set --");
    for word in &job.command {
        s.push(' ');
        s.push_str(&shell_word(word));
    }
    s.push('\n');
    s.push_str(&body("slurm"));
    s
}

/// A Kubernetes object name from `id`: lowercase letters, digits and `-`, starting and
/// ending with an alphanumeric, at most 63 characters (`satyrn-` and the id, every other
/// character turned into `-`).
#[must_use]
pub fn object_name(id: &str) -> String {
    let mut name: String = format!("satyrn-{id}")
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    name.truncate(63);
    while name.ends_with('-') {
        name.pop();
    }
    name
}

/// The Indexed Job (`batch/v1`, `completionMode: Indexed`): `N` completions, each index
/// retried at most once (`backoffLimitPerIndex: 1`) and failing alone
/// (`maxFailedIndexes: N`), an index that ran to an outcome never retried and a disrupted
/// pod retried uncounted (`podFailurePolicy`), pods never restarted in place. `image` must
/// hold git and `satyrn-host`.
#[must_use]
pub fn kubernetes(job: &Job, image: &str) -> serde_json::Value {
    let env: Vec<serde_json::Value> = env(job)
        .into_iter()
        .map(|(name, value)| serde_json::json!({"name": name, "value": value}))
        .collect();
    let mut args = vec![body("kubernetes"), "satyrn-attempt".to_owned()];
    args.extend(job.command.iter().cloned());
    serde_json::json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": object_name(&job.id),
            "labels": {"app.kubernetes.io/managed-by": "satyrn"},
        },
        "spec": {
            "completions": job.attempts,
            "parallelism": job.parallelism.unwrap_or(job.attempts),
            "completionMode": "Indexed",
            "backoffLimitPerIndex": 1,
            "maxFailedIndexes": job.attempts,
            // deliver's 8 is an index that ran to an outcome without a candidate (its receipt
            // says which, and is on the remote): failed, never retried, since a retry would
            // only find it there. A pod disrupted (preempted, evicted) is retried, uncounted.
            "podFailurePolicy": {
                "rules": [
                    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                    {"action": "FailIndex", "onExitCodes": {"containerName": "attempt", "operator": "In", "values": [8]}},
                ],
            },
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "activeDeadlineSeconds": limit_minutes(job.timeout) * 60,
                    "containers": [{
                        "name": "attempt",
                        "image": image,
                        "command": ["/bin/sh", "-c"],
                        "args": args,
                        "env": env,
                    }],
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_word_survives_every_quote() {
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn object_names_are_dns_labels() {
        assert_eq!(object_name("Feature_1"), "satyrn-feature-1");
        assert_eq!(object_name(&"x".repeat(80)).len(), 63);
        assert!(!object_name("a--").ends_with('-'));
    }
}
