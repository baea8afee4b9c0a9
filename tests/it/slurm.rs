//! A series on a real Slurm cluster: a single-node cluster (Debian's `slurm-wlm` and
//! `munge`, installed by `scripts/setup.sh`) started by the test in private directories on
//! its own ports, a bare remote served by a real `git daemon` on 127.0.0.1, and the job
//! script `satyrn-host series emit slurm` prints, submitted with `sbatch`. Every daemon the
//! test starts is stopped by its own pid, and nothing is left.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::candidates::candidates;
use crate::candidates_remote::Daemon;
use crate::deliver_support::{FixedRepo, poll_until};
use crate::support::{git_ok, host_bin};

/// A single-node cluster: `munged`, `slurmctld` and `slurmd`, each with its state, sockets,
/// logs and pid file under one private directory.
struct Cluster {
    dir: tempfile::TempDir,
    pid_files: Vec<PathBuf>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

fn require(program: &str) {
    let found = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path)
            .chain([PathBuf::from("/usr/sbin")])
            .any(|d| d.join(program).is_file())
    });
    assert!(
        found,
        "{program} is missing: run scripts/setup.sh, which installs slurm-wlm and munge"
    );
}

fn pid_in(file: &Path) -> Option<i32> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

/// Whether process `pid` is gone (or only a zombie waiting for its parent).
fn gone(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

impl Cluster {
    fn start() -> Self {
        for program in [
            "munged",
            "slurmctld",
            "slurmd",
            "sbatch",
            "squeue",
            "scontrol",
            "scancel",
        ] {
            require(program);
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        for sub in ["state", "spool", "log", "run", "munge"] {
            std::fs::create_dir(d.join(sub)).expect("mkdir");
        }
        let key: Vec<u8> = (0..1024).map(|_| rand_byte()).collect();
        std::fs::write(d.join("munge/munge.key"), key).expect("key");
        set_mode(&d.join("munge/munge.key"), 0o400);
        let socket = d.join("munge/munge.socket");
        let status = Command::new(sbin("munged"))
            .arg("--force")
            .arg(format!(
                "--key-file={}",
                d.join("munge/munge.key").display()
            ))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!(
                "--pid-file={}",
                d.join("munge/munged.pid").display()
            ))
            .arg(format!(
                "--log-file={}",
                d.join("munge/munged.log").display()
            ))
            .arg(format!("--seed-file={}", d.join("munge/seed").display()))
            .status()
            .expect("munged");
        assert!(status.success(), "munged did not start");
        let mut cluster = Self {
            pid_files: vec![d.join("munge/munged.pid")],
            dir,
        };
        let host = short_hostname();
        let d = cluster.dir.path().to_path_buf();
        let conf = format!(
            "ClusterName=satyrntest\nSlurmctldHost={host}\nSlurmctldPort={}\nSlurmdPort={}\n\
             SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nCredType=cred/munge\n\
             AuthInfo=socket={}\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/run/slurmctld.pid\nSlurmdPidFile={d}/run/slurmd.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\nSlurmdLogFile={d}/log/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\nMpiDefault=none\nReturnToService=2\n\
             SchedulerType=sched/backfill\nJobCompType=jobcomp/none\n\
             AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none\n\
             InactiveLimit=0\nKillWait=5\nMinJobAge=600\n\
             NodeName={host} CPUs=2 RealMemory=4000 State=UNKNOWN\n\
             PartitionName=main Nodes={host} Default=YES MaxTime=INFINITE State=UP\n",
            free_port(),
            free_port(),
            socket.display(),
            d = d.display(),
        );
        std::fs::write(d.join("slurm.conf"), conf).expect("slurm.conf");
        for daemon in ["slurmctld", "slurmd"] {
            cluster.pid_files.push(d.join(format!("run/{daemon}.pid")));
            let status = cluster
                .command(&sbin(daemon))
                .arg("-f")
                .arg(d.join("slurm.conf"))
                .status()
                .expect(daemon);
            assert!(
                status.success(),
                "{daemon} did not start: {}",
                cluster.logs()
            );
        }
        let ready = poll_until(Duration::from_secs(30), || {
            cluster
                .output("sinfo", &["-h", "-o", "%T"])
                .is_some_and(|s| s.trim() == "idle")
        });
        assert!(ready, "the node never became idle: {}", cluster.logs());
        cluster
    }

    fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("SLURM_CONF", self.conf()).stdin(Stdio::null());
        cmd
    }

    fn output(&self, program: &str, args: &[&str]) -> Option<String> {
        let out = self.command(Path::new(program)).args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn logs(&self) -> String {
        ["log/slurmctld.log", "log/slurmd.log"]
            .iter()
            .map(|f| std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Submits `script`, its output under `out`; returns the job id.
    fn sbatch(&self, script: &Path, out: &Path, env: &[(&str, &Path)]) -> String {
        let mut cmd = self.command(Path::new("sbatch"));
        cmd.arg("--parsable")
            .arg(format!("--chdir={}", out.display()))
            .arg(format!("--output={}/%A_%a.out", out.display()))
            .arg(format!("--error={}/%A_%a.err", out.display()))
            .arg(script)
            .envs(env.iter().copied());
        let done = cmd.output().expect("sbatch");
        assert!(
            done.status.success(),
            "sbatch: {}",
            String::from_utf8_lossy(&done.stderr)
        );
        String::from_utf8_lossy(&done.stdout).trim().to_owned()
    }

    /// The state of each task of `job` (`1_3 RUNNING` lines).
    fn states(&self, job: &str) -> String {
        self.output("squeue", &["-h", "-t", "all", "-j", job, "-o", "%i %T"])
            .unwrap_or_default()
    }

    /// Waits until no task of `job` is pending or running.
    fn wait_done(&self, job: &str, limit: Duration) {
        let done = poll_until(limit, || {
            let states = self.states(job);
            !states.is_empty()
                && states.lines().all(|l| {
                    !l.ends_with(" PENDING")
                        && !l.ends_with(" RUNNING")
                        && !l.ends_with(" COMPLETING")
                })
        });
        assert!(
            done,
            "job {job} did not finish: {}\n{}",
            self.states(job),
            self.logs()
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // slurmd, slurmctld, munged: the reverse of their start.
        let pids: Vec<i32> = self
            .pid_files
            .iter()
            .rev()
            .filter_map(|f| pid_in(f))
            .collect();
        for &pid in &pids {
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(pid).expect("pid"),
                rustix::process::Signal::TERM,
            );
            if !poll_until(Duration::from_secs(15), || gone(pid)) {
                let _ = rustix::process::kill_process(
                    rustix::process::Pid::from_raw(pid).expect("pid"),
                    rustix::process::Signal::KILL,
                );
            }
        }
        for pid in pids {
            assert!(
                poll_until(Duration::from_secs(5), || gone(pid)),
                "daemon {pid} is still running"
            );
        }
    }
}

fn sbin(program: &str) -> PathBuf {
    let path = Path::new("/usr/sbin").join(program);
    if path.exists() {
        path
    } else {
        PathBuf::from(program)
    }
}

fn short_hostname() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
    name.trim().split('.').next().expect("name").to_owned()
}

fn rand_byte() -> u8 {
    let mut b = [0u8; 1];
    rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::empty()).expect("getrandom");
    b[0]
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// The job script for a series of `attempts` of the contract `contract`, running `script`.
fn emitted(
    url: &str,
    contract: &str,
    id: &str,
    attempts: &str,
    timeout: &str,
    script: &str,
) -> String {
    let out = Command::new(host_bin())
        .args([
            "series",
            "emit",
            "slurm",
            "--id",
            id,
            "--repo-url",
            url,
            "--contract",
            contract,
        ])
        .args(["--attempts", attempts, "--push", url, "--timeout", timeout])
        .arg("--host-bin")
        .arg(host_bin())
        .args(["--", "sh", "-c", script])
        .output()
        .expect("series emit");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn view(clone: &Path, url: &str, id: &str, attempts: &str) -> Value {
    let answer = candidates(
        clone,
        &[
            "series",
            "--json",
            "--remote",
            url,
            "--attempts",
            attempts,
            id,
        ],
    );
    assert_eq!(answer.status, 0, "{} {}", answer.stdout, answer.stderr);
    serde_json::from_str::<Value>(&answer.stdout).expect("JSON")["series"].clone()
}

fn column<'a>(series: &'a Value, field: &str) -> Vec<Option<&'a str>> {
    series["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r[field].as_str())
        .collect()
}

/// Eight indexes (two fail, one makes no change, one times out), a cancelled index whose
/// requeue completes, and two arrays of one series racing: the series view shows every
/// row as it ran, and create-only holds.
#[test]
fn a_series_on_slurm_gathers_every_index_on_the_remote() {
    let cluster = Cluster::start();
    let work = tempfile::tempdir().expect("tempdir");
    let (out, tmp, marks) = (
        work.path().join("out"),
        work.path().join("tmp"),
        work.path().join("marks"),
    );
    for d in [&out, &tmp, &marks] {
        std::fs::create_dir(d).expect("mkdir");
    }
    let origin = FixedRepo::with_files(&[
        ("a.txt", b"a\n"),
        ("task.yaml", b"id: feat\ntask: t\nwritable_paths: [a.txt]\n"),
        ("slow.yaml", b"id: slow\ntask: t\nwritable_paths: [a.txt]\n"),
        ("race.yaml", b"id: race\ntask: t\nwritable_paths: [a.txt]\n"),
    ]);
    let served = work.path().join("served");
    std::fs::create_dir(&served).expect("mkdir");
    git_ok(
        &served,
        &[
            "clone",
            "-q",
            "--bare",
            &origin.path().to_string_lossy(),
            "remote.git",
        ],
    );
    let daemon = Daemon::start(&served);
    let url = format!("git://127.0.0.1:{}/remote.git", daemon.port);
    let reader = work.path().join("reader");
    git_ok(
        work.path(),
        &["clone", "-q", &url, &reader.to_string_lossy()],
    );
    let env = [("TMPDIR", tmp.as_path()), ("MARKS", marks.as_path())];

    // Eight indexes.
    let script = "case $SATYRN_ATTEMPT_INDEX in 2|5) exit 3;; 4) true;; 7) sleep 60;; *) echo \"index $SATYRN_ATTEMPT_INDEX\" > a.txt;; esac";
    let job_file = work.path().join("feat.sh");
    std::fs::write(
        &job_file,
        emitted(&url, "task.yaml", "feat", "8", "3", script),
    )
    .expect("write");
    let job = cluster.sbatch(&job_file, &out, &env);
    cluster.wait_done(&job, Duration::from_secs(180));
    let series = view(&reader, &url, "feat", "8");
    assert_eq!(
        column(&series, "state"),
        [
            "candidate",
            "no-candidate",
            "candidate",
            "no-candidate",
            "no-candidate",
            "candidate",
            "no-candidate",
            "candidate"
        ]
        .map(Some),
        "{series}"
    );
    assert_eq!(
        column(&series, "code"),
        [
            "OK",
            "COMMAND_FAILED",
            "OK",
            "NO_CHANGE",
            "COMMAND_FAILED",
            "OK",
            "COMMAND_TIMEOUT",
            "OK"
        ]
        .map(Some),
        "{series}"
    );
    assert_eq!(series["missing"], serde_json::json!([]));
    let host = short_hostname();
    assert!(
        column(&series, "host")
            .iter()
            .all(|h| h.is_some_and(|h| h.starts_with(&host))),
        "{series}"
    );
    for i in [1, 3, 6, 8] {
        let blob = git_ok(
            &reader,
            &[
                "show",
                &format!(
                    "refs/satyrn/remotes/url-{}/feat/{i:03}/head:a.txt",
                    url_key(&url)
                ),
            ],
        );
        assert_eq!(blob, format!("index {i}\n"));
    }
    assert!(
        crate::support::dir_entries(&tmp).is_empty(),
        "left by the jobs: {:?}",
        crate::support::dir_entries(&tmp)
    );

    // A cancelled index leaves nothing; its requeue completes.
    let slow = "if [ \"${SLURM_RESTART_COUNT:-0}\" = 0 ]; then touch \"$MARKS/slow-started\"; sleep 60; fi; echo requeued > a.txt";
    let job_file = work.path().join("slow.sh");
    std::fs::write(
        &job_file,
        emitted(&url, "slow.yaml", "slow", "1", "120", slow),
    )
    .expect("write");
    let job = cluster.sbatch(&job_file, &out, &env);
    assert!(
        poll_until(Duration::from_secs(60), || marks
            .join("slow-started")
            .exists()),
        "the slow index never started: {}",
        cluster.states(&job)
    );
    let task = format!("{job}_1");
    assert!(
        cluster.output("scancel", &[&task]).is_some(),
        "scancel failed"
    );
    cluster.wait_done(&job, Duration::from_secs(60));
    assert!(
        cluster.states(&job).contains("CANCELLED"),
        "{}",
        cluster.states(&job)
    );
    let remote = Path::new(&served).join("remote.git");
    assert!(
        git_ok(&remote, &["for-each-ref", "refs/satyrn/candidates/slow"]).is_empty(),
        "a cancelled index left a ref"
    );
    assert!(
        poll_until(Duration::from_secs(20), || crate::support::dir_entries(
            &tmp
        )
        .is_empty()),
        "the cancelled index left {:?}",
        crate::support::dir_entries(&tmp)
    );
    assert!(
        cluster.output("scontrol", &["requeue", &task]).is_some(),
        "requeue failed"
    );
    // A requeued job waits out a begin time; the test has no need to.
    assert!(
        cluster
            .output(
                "scontrol",
                &["update", &format!("jobid={task}"), "StartTime=now"]
            )
            .is_some(),
        "update failed"
    );
    assert!(
        poll_until(Duration::from_secs(90), || cluster
            .states(&job)
            .contains(" COMPLETED")),
        "the requeued index never completed: {}",
        cluster.states(&job)
    );
    let series = view(&reader, &url, "slow", "1");
    assert_eq!(column(&series, "code"), [Some("OK")], "{series}");

    // Two arrays of one series racing: one result per index, every loser named.
    let race = "sleep 0.3; echo \"job $SLURM_ARRAY_JOB_ID\" > a.txt";
    let job_file = work.path().join("race.sh");
    std::fs::write(
        &job_file,
        emitted(&url, "race.yaml", "race", "4", "60", race),
    )
    .expect("write");
    let jobs = [
        cluster.sbatch(&job_file, &out, &env),
        cluster.sbatch(&job_file, &out, &env),
    ];
    for job in &jobs {
        cluster.wait_done(job, Duration::from_secs(180));
    }
    let heads = git_ok(
        &remote,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/satyrn/candidates/race",
        ],
    );
    assert_eq!(
        heads.lines().filter(|l| l.ends_with("/head")).count(),
        4,
        "{heads}"
    );
    for i in 1..=4 {
        let codes: Vec<String> = jobs
            .iter()
            .map(|job| {
                let line =
                    std::fs::read_to_string(out.join(format!("{job}_{i}.out"))).expect("receipt");
                let receipt: Value = serde_json::from_str(line.trim()).expect("receipt JSON");
                receipt["code"].as_str().expect("code").to_owned()
            })
            .collect();
        let mut sorted = codes.clone();
        sorted.sort();
        assert_eq!(sorted, ["CANDIDATE_EXISTS", "OK"], "index {i}: {codes:?}");
    }
    drop(daemon);
    drop(cluster);
}

/// The mirror key `candidates --remote URL` uses for a URL that is no configured remote.
fn url_key(url: &str) -> String {
    satyrn_mutator_core::revision::Revision::of(url.as_bytes()).to_hex()[..16].to_owned()
}
