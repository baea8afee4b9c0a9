//! A single-node Slurm cluster started in private directories on its own ports: `munged`,
//! `slurmctld` and `slurmd`, stopped by their own pids when dropped. Shared by
//! `tests/it/slurm.rs` and `host/benches/slurm.rs` (included by path); needs Debian's
//! `slurm-wlm` and `munge` (`scripts/setup.sh`).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Polls `cond` every 20 ms until it holds or `limit` passes.
pub fn poll_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A single-node cluster: `munged`, `slurmctld` and `slurmd`, each with its state, sockets,
/// logs and pid file under one private directory.
#[derive(Debug)]
pub struct Cluster {
    dir: tempfile::TempDir,
    pid_files: Vec<PathBuf>,
}

/// Two distinct free ports of 127.0.0.1 (both bound at once, then released).
fn free_ports() -> (u16, u16) {
    let bind = || TcpListener::bind("127.0.0.1:0").expect("bind");
    let (a, b) = (bind(), bind());
    let port = |l: &TcpListener| l.local_addr().expect("addr").port();
    (port(&a), port(&b))
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
    pub fn start() -> Self {
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
        let ports = free_ports();
        let d = cluster.dir.path().to_path_buf();
        let conf = format!(
            "ClusterName=satyrntest\nSlurmctldHost={host}(127.0.0.1)\nSlurmctldPort={}\nSlurmdPort={}\n\
             SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nCredType=cred/munge\n\
             AuthInfo=socket={}\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/run/slurmctld.pid\nSlurmdPidFile={d}/run/slurmd.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\nSlurmdLogFile={d}/log/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\nMpiDefault=none\nReturnToService=2\n\
             SchedulerType=sched/backfill\nJobCompType=jobcomp/none\n\
             AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none\n\
             InactiveLimit=0\nKillWait=5\nMinJobAge=600\n\
             NodeName={host} NodeAddr=127.0.0.1 CPUs=2 RealMemory=4000 State=UNKNOWN\n\
             PartitionName=main Nodes={host} Default=YES MaxTime=INFINITE State=UP\n",
            ports.0,
            ports.1,
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

    pub fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    pub fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("SLURM_CONF", self.conf()).stdin(Stdio::null());
        cmd
    }

    pub fn output(&self, program: &str, args: &[&str]) -> Option<String> {
        let out = self.command(Path::new(program)).args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    pub fn logs(&self) -> String {
        ["log/slurmctld.log", "log/slurmd.log"]
            .iter()
            .map(|f| std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Submits `script`, its output under `out`; returns the job id.
    pub fn sbatch(&self, script: &Path, out: &Path, env: &[(&str, &Path)]) -> String {
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
    pub fn states(&self, job: &str) -> String {
        self.output("squeue", &["-h", "-t", "all", "-j", job, "-o", "%i %T"])
            .unwrap_or_default()
    }

    /// Waits until no task of `job` is pending or running.
    pub fn wait_done(&self, job: &str, limit: Duration) {
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

pub fn short_hostname() -> String {
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
