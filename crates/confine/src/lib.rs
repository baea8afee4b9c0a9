//! `satyrn-host confine`: runs a command so that the kernel holds it to the contract.
//!
//! Order of a run ([`run`]):
//!
//! 1. load and freeze the contract; resolve the worktree root;
//! 2. ask the kernel for its Landlock ABI ([`abi`]): below [`abi::MIN_ABI`], or Landlock
//!    absent or disabled, `CONFINE_UNAVAILABLE` and nothing runs — unless `--unconfined`;
//! 3. make the run's directory ([`scratch`]): a scratch home and temporary directory, and
//!    the broker's socket beside them; sweep the directories of killed runs; with
//!    `--agent`, prepare the agent's directory in the scratch home ([`agent`]); check each
//!    `scratch_paths` entry (a directory, ignored by git, nothing private inside; created
//!    when absent);
//! 4. compute the grants ([`rules`]) and build the ruleset ([`landlock`]); print what is
//!    enforced on stderr;
//! 5. start the broker ([`broker`]), the only writer;
//! 6. start the command in a process group of its own (the terminal's foreground group when
//!    stdin is one), restricted to the ruleset between `fork` and `exec`, with `HOME`,
//!    `TMPDIR`, `GIT_OPTIONAL_LOCKS=0`, `SATYRN_BROKER` and `SATYRN_BROKER_SECRET` set;
//!    `SIGINT`, `SIGTERM` and `SIGHUP` to `confine` are passed to that group;
//! 7. when the command ends, stop what is left of its group, stop the broker, remove the
//!    run's directory (unless `--keep-scratch`), and exit with the command's status
//!    (128 + the signal that killed it).
//!
//! See `docs/confinement.md` for every rule, what it guarantees and what it does not.

pub mod abi;
pub mod agent;
pub mod broker;
pub mod landlock;
pub mod mounts;
pub mod relay;
pub mod rules;
pub mod scratch;
pub mod seccomp;

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use rustix::process::{Pid, Signal};

use satyrn_code::{Code, Failure};
use satyrn_contract::repo::RepoRoot;
use satyrn_contract::{self as contract, Contract};
use satyrn_git::Git;
use satyrn_os::{process, signals};

/// One `confine` request, as parsed from the command line.
#[derive(Debug, Clone)]
pub struct Request {
    /// `--repo`: the worktree root.
    pub repo: PathBuf,
    /// The contract path.
    pub contract: PathBuf,
    /// `--home DIR`: the command's `HOME` (writable) instead of the scratch home.
    pub home: Option<PathBuf>,
    /// `--cwd DIR`: the command's working directory instead of the worktree root.
    pub cwd: Option<PathBuf>,
    /// `--allow-connect PORT`: TCP ports the command may connect to (then only these).
    pub allow_connect: Vec<u16>,
    /// `--deny-read PATH`: more paths the command may never read.
    pub deny_read: Vec<PathBuf>,
    /// `--keep-scratch`: leave the run's directory behind.
    pub keep_scratch: bool,
    /// `--unconfined`: run without Landlock (the broker still serves).
    pub unconfined: bool,
    /// `--agent NAME`: prepare that agent's configuration in the scratch home ([`agent`]).
    pub agent: Option<agent::Agent>,
    /// The command and its arguments.
    pub argv: Vec<OsString>,
}

pub use satyrn_os::process::CONFINED_VAR;

/// Device files a confined command may read and write (those that exist).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/pts",
    "/dev/ptmx",
];

/// Runs `request`; returns the exit status (the command's, or the refusal's).
///
/// # Process-global effects
///
/// Installs the interruption handlers ([`signals::install`]); makes this process a child
/// subreaper; gives the terminal's foreground to the command while it runs.
#[must_use]
pub fn run(request: &Request) -> u8 {
    match prepare(request) {
        Ok(prepared) => execute(request, prepared),
        Err(failure) => {
            let _ = writeln!(std::io::stderr(), "satyrn-host confine: {failure}");
            failure.code.exit_status()
        }
    }
}

struct Prepared {
    contract: Contract,
    root: PathBuf,
    run_dir: scratch::RunDir,
    ruleset: Option<(std::os::fd::OwnedFd, landlock::Enforced)>,
    /// The line printed at start (`None`: `--unconfined`).
    summary: Option<String>,
    /// What `--agent` prepared.
    agent: Option<agent::Setup>,
}

fn prepare(request: &Request) -> Result<Prepared, Failure> {
    let (contract, contract_bytes) = contract::load_with_bytes(&request.contract)?;
    let opened = RepoRoot::open(&request.repo)?;
    // Landlock rules name inodes; the walk compares absolute paths with them.
    let root = std::fs::canonicalize(opened.path()).map_err(|e| {
        Failure::new(
            Code::RepoUnavailable,
            format!("cannot resolve the worktree: {e}"),
        )
    })?;
    let probe = abi::probe();
    let abi = match probe {
        _ if request.unconfined => None,
        abi::Probe::Available(v) if v >= abi::MIN_ABI => Some(v),
        abi::Probe::Available(v) => {
            return Err(Failure::new(
                Code::ConfineUnavailable,
                format!(
                    "this kernel has Landlock ABI {v}; confine needs ABI {} (Linux 6.2) to refuse truncation; nothing was run (--unconfined runs without the kernel's boundary)",
                    abi::MIN_ABI
                ),
            ));
        }
        other => {
            return Err(Failure::new(
                Code::ConfineUnavailable,
                format!(
                    "{other}; nothing was run (--unconfined runs without the kernel's boundary)"
                ),
            ));
        }
    };
    // Before anything is created: what the writable places may not overlap.
    let layout = match abi {
        Some(_) => Some(checked_layout(request, &root)?),
        None => None,
    };
    let run_dir = scratch::RunDir::create().map_err(|e| {
        Failure::new(
            Code::ConfineUnavailable,
            format!("cannot create the run's directory: {e}"),
        )
    })?;
    let cwd = request
        .cwd
        .as_ref()
        .map(|c| std::fs::canonicalize(c).unwrap_or_else(|_| c.clone()));
    // Every refusal from here on removes the run's directory.
    let agent_and_rules = || -> Result<_, Failure> {
        let agent = request
            .agent
            .map(|a| {
                prepare_agent(
                    a,
                    &contract,
                    &contract_bytes,
                    &root,
                    cwd.as_deref(),
                    &run_dir,
                )
            })
            .transpose()?;
        // After the kernel said yes and the agent was prepared (a refusal of either leaves
        // the worktree as it was): checking the scratch paths may create them.
        check_scratch_paths(&root, &contract)?;
        let ruleset = abi
            .zip(layout.as_ref())
            .map(|(abi, layout)| {
                enforced(
                    request,
                    &contract,
                    &root,
                    &run_dir,
                    agent.as_ref(),
                    layout,
                    abi,
                )
            })
            .transpose()?;
        Ok((agent, ruleset))
    };
    let (agent, ruleset) = match agent_and_rules() {
        Ok(done) => done,
        Err(failure) => {
            run_dir.remove(false);
            return Err(failure);
        }
    };
    let (ruleset, summary) = match ruleset {
        Some((built, summary)) => {
            let _ = writeln!(std::io::stderr(), "satyrn-host confine: {summary}");
            let servers = rules::reachable_servers(
                |v| std::env::var_os(v),
                rustix::process::getuid().as_raw(),
            );
            if !servers.is_empty() {
                let _ = writeln!(
                    std::io::stderr(),
                    "satyrn-host confine: warning: the command can still reach {} by a socket's path (this kernel's Landlock does not decide connect to a named Unix socket), which would run what it is sent outside the run; run agents outside such a session, or as a user without one (docs/confinement.md, \"Named Unix sockets\")",
                    servers.join(", ")
                );
            }
            (Some(built), Some(summary))
        }
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "satyrn-host confine: --unconfined: NOTHING is enforced by the kernel; the command can write anywhere its user can"
            );
            (None, None)
        }
    };
    if let (Some(name), Some(setup)) = (request.agent, &agent) {
        let _ = writeln!(
            std::io::stderr(),
            "satyrn-host confine: --agent {}: {}",
            name.name(),
            setup.summary
        );
        for warning in &setup.warnings {
            let _ = writeln!(
                std::io::stderr(),
                "satyrn-host confine: --agent {}: warning: {warning}",
                name.name()
            );
        }
    }
    Ok(Prepared {
        contract,
        root,
        run_dir,
        ruleset,
        summary,
        agent,
    })
}

/// The repository's layout, with `--home` and the scratch's place (under `TMPDIR`) checked
/// against it: both are writable whole, so neither may overlap the worktree, another
/// worktree or the common git directory.
fn checked_layout(request: &Request, root: &Path) -> Result<Layout, Failure> {
    let layout = Layout::read(root)?;
    if let Some(home) = &request.home {
        let canonical = std::fs::canonicalize(home).map_err(|e| {
            Failure::new(
                Code::ConfineUnavailable,
                format!("--home {}: {e}", home.display()),
            )
        })?;
        check_outside("--home", &canonical, root, &layout)?;
    }
    let parent = scratch::parent_path();
    let canonical = match (parent.parent(), parent.file_name()) {
        (Some(tmp), Some(name)) => std::fs::canonicalize(tmp)
            .map(|t| t.join(name))
            .unwrap_or(parent.clone()),
        _ => parent.clone(),
    };
    check_outside(
        "the run's scratch (under TMPDIR)",
        &canonical,
        root,
        &layout,
    )?;
    Ok(layout)
}

/// `--agent`: the agent's directory in the scratch home, from the caller's environment.
fn prepare_agent(
    name: agent::Agent,
    contract: &Contract,
    contract_bytes: &[u8],
    root: &Path,
    cwd: Option<&Path>,
    run_dir: &scratch::RunDir,
) -> Result<agent::Setup, Failure> {
    let host = std::env::current_exe().map_err(|e| {
        Failure::new(
            Code::InternalError,
            format!("cannot locate satyrn-host itself: {e}"),
        )
    })?;
    let home = run_dir.home();
    let context = agent::Context {
        scratch_home: &home,
        worktree: root,
        host: &host,
        scratch_paths: &contract.scratch_paths,
        contract_bytes,
        cwd,
    };
    agent::prepare(name, &context, &|v| std::env::var_os(v))
}

/// The places the command may write: its scratch home and temporary directory, `--home`,
/// the contract's scratch paths.
fn writable(
    request: &Request,
    contract: &Contract,
    root: &Path,
    run_dir: &scratch::RunDir,
) -> Vec<PathBuf> {
    let mut write = vec![run_dir.home(), run_dir.tmp()];
    if let Some(home) = &request.home {
        write.push(home.clone());
    }
    write.extend(contract.scratch_paths.iter().map(|p| root.join(p)));
    write
}

/// The ruleset for `abi` and the line that says what it enforces.
fn enforced(
    request: &Request,
    contract: &Contract,
    root: &Path,
    run_dir: &scratch::RunDir,
    agent: Option<&agent::Setup>,
    layout: &Layout,
    abi: i32,
) -> Result<((std::os::fd::OwnedFd, landlock::Enforced), String), Failure> {
    use rules::Follow;
    let write = writable(request, contract, root, run_dir);
    let mut deny: Vec<(PathBuf, Follow)> = request
        .deny_read
        .iter()
        .map(|p| (p.clone(), Follow::Links))
        .collect();
    let mut connect = request.allow_connect.clone();
    if let Some(agent) = agent {
        deny.extend(agent.deny.iter().cloned());
        // An agent's run may connect to its model endpoint and to what --allow-connect adds.
        connect.extend(&agent.ports);
        connect.sort_unstable();
        connect.dedup();
    }
    // HOME's and the password database's home (a command may fall back to the latter).
    for home in satyrn_os::home::all(&|v| std::env::var_os(v)) {
        deny.extend(
            rules::CREDENTIAL_STORES
                .iter()
                .map(|s| (home.join(s), Follow::Links)),
        );
    }
    deny.push((run_dir.parent().to_path_buf(), Follow::No));
    let uid = rustix::process::getuid().as_raw();
    // A Kerberos ticket cache in its default place.
    deny.push((PathBuf::from(format!("/tmp/krb5cc_{uid}")), Follow::Links));
    let private = rules::private_in_worktree(root, &contract.private_paths).map_err(|e| {
        Failure::new(
            Code::ConfineUnavailable,
            format!("cannot compute the rules: {e}"),
        )
    })?;
    let Layout {
        others,
        common,
        mounts,
    } = layout;
    check_standard_streams(root, common, &contract.scratch_paths)?;
    let mut read_back = if others.iter().any(|o| common.starts_with(o)) {
        vec![common.clone()]
    } else {
        Vec::new()
    };
    if let Some(agent) = agent {
        read_back.extend(agent.read_back.iter().cloned());
    }
    deny.extend(others.iter().map(|o| (o.clone(), Follow::No)));
    let devices: Vec<PathBuf> = DEVICES.iter().map(PathBuf::from).collect();
    let inputs = rules::Inputs {
        worktree: root,
        private: &private,
        deny: &deny,
        write: &write,
        devices: &devices,
        mounts,
        scratch_parent: run_dir.parent(),
        read_back: &read_back,
    };
    let plan = rules::plan(&inputs).map_err(|e| {
        Failure::new(
            Code::ConfineUnavailable,
            format!("cannot compute the rules: {e}"),
        )
    })?;
    let built = landlock::build(abi, &plan, &connect)
        .map_err(|e| Failure::new(Code::ConfineUnavailable, e.to_string()))?;
    for warning in &plan.warnings {
        let _ = writeln!(std::io::stderr(), "satyrn-host confine: warning: {warning}");
    }
    let summary = describe(&built.1, &plan, &write);
    Ok((built, summary))
}

/// The command inherits `confine`'s standard streams: one that is a regular file of the
/// worktree (outside its scratch paths) or of the git directory, open for writing (`confine
/// … >> README.md`), would let it change that file without the broker.
fn check_standard_streams(root: &Path, common: &Path, scratch: &[String]) -> Result<(), Failure> {
    let streams = [
        (rustix::stdio::stdin(), 0, "input"),
        (rustix::stdio::stdout(), 1, "output"),
        (rustix::stdio::stderr(), 2, "error"),
    ];
    for (stream, fd, name) in streams {
        let writable = rustix::fs::fcntl_getfl(stream).is_ok_and(|flags| {
            flags.intersects(rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::RDWR)
        });
        let regular = rustix::fs::fstat(stream)
            .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_file());
        if !(writable && regular) {
            continue;
        }
        let Ok(path) = std::fs::read_link(format!("/proc/self/fd/{fd}")) else {
            continue;
        };
        let in_scratch = scratch.iter().any(|s| path.starts_with(root.join(s)));
        if (path.starts_with(root) && !in_scratch) || path.starts_with(common) {
            return Err(Failure::new(
                Code::ConfineUnavailable,
                format!(
                    "standard {name} is {}, a file of the repository open for writing: the command could change it without satyrn's gates; redirect it outside the worktree or into a scratch path",
                    path.display()
                ),
            ));
        }
    }
    Ok(())
}

/// A directory writable by the command whole (`--home`, the run's scratch) may not overlap
/// the worktree, another worktree of the repository or the common git directory (it would
/// grant writes to them).
/// `dir` must be canonical.
fn check_outside(what: &str, dir: &Path, root: &Path, layout: &Layout) -> Result<(), Failure> {
    let guarded: Vec<PathBuf> = std::iter::once(root)
        .chain(layout.others.iter().map(PathBuf::as_path))
        .chain(std::iter::once(layout.common.as_path()))
        // The same directories under another mount (a bind mount of the worktree).
        .flat_map(|p| std::iter::once(p.to_path_buf()).chain(mounts::aliases(&layout.mounts, p)))
        .collect();
    for place in &guarded {
        if dir.starts_with(place) || place.starts_with(dir) {
            return Err(Failure::new(
                Code::ConfineUnavailable,
                format!(
                    "{what} {} overlaps {}, which the command would then write without satyrn's gates; give a directory outside the repository",
                    dir.display(),
                    place.display()
                ),
            ));
        }
    }
    Ok(())
}

/// The repository around the worktree, read once before anything is created: its other
/// worktrees, its common git directory and the mount table.
struct Layout {
    others: Vec<PathBuf>,
    common: PathBuf,
    mounts: Vec<mounts::Mount>,
}

impl Layout {
    fn read(root: &Path) -> Result<Self, Failure> {
        let (others, common) = other_worktrees(root)?;
        Ok(Self {
            others,
            common,
            mounts: mounts::read(),
        })
    }
}

/// The repository's other worktrees (the caller's own checkout under `deliver`), whose
/// untracked and ignored files (a `.env` never committed) the command must not read: each
/// unreadable whole. And the common git directory, which is granted back when it lies
/// inside one of them (a main checkout's `.git`), so git still works in this worktree.
fn other_worktrees(root: &Path) -> Result<(Vec<PathBuf>, PathBuf), Failure> {
    let git = Git::at(root);
    let failed = |e: satyrn_git::GitError| {
        Failure::new(
            Code::ConfineUnavailable,
            format!("cannot list the repository's worktrees: {e}"),
        )
    };
    let others: Vec<PathBuf> = satyrn_git::worktree_paths(&git)
        .map_err(failed)?
        .into_iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .filter(|p| p != root)
        .collect();
    let common = git
        .line(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .map_err(failed)?;
    let common = std::fs::canonicalize(&common).unwrap_or_else(|_| PathBuf::from(common));
    Ok((others, common))
}

/// One line: the ABI, the rule count, the writable places, the network, the scopes.
fn describe(enforced: &landlock::Enforced, plan: &rules::Plan, write: &[PathBuf]) -> String {
    let writable: Vec<String> = write.iter().map(|p| p.display().to_string()).collect();
    let network = match (&enforced.connect_ports, enforced.bind_refused) {
        (Some(ports), _) => format!(
            "TCP bind refused, TCP connect only to port{} {}",
            if ports.len() == 1 { "" } else { "s" },
            ports
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        (None, true) => "TCP bind refused, TCP connect not restricted".to_owned(),
        (None, false) => "network not restricted (ABI < 4)".to_owned(),
    };
    format!(
        "Landlock ABI {} enforced: {} rules; writes only to {} and the terminal and null devices; {} private worktree path{} and {} other path{} unreadable (credential stores, other worktrees, other runs); {network}; {}",
        enforced.abi,
        enforced.rules,
        writable.join(", "),
        plan.private,
        if plan.private == 1 { "" } else { "s" },
        plan.outside.len(),
        if plan.outside.len() == 1 { "" } else { "s" },
        if enforced.scoped {
            "signals and abstract sockets scoped to the run"
        } else {
            "signals not scoped (ABI < 6)"
        }
    )
}

/// Each `scratch_paths` entry: not private, ignored by git (`git check-ignore`) and holding
/// no tracked file, a directory reached without a symlink; created when absent. (That
/// nothing unreadable lies inside one is checked with the rules: [`rules::plan`].)
fn check_scratch_paths(root: &Path, contract: &Contract) -> Result<(), Failure> {
    let refuse = |m: String| Failure::new(Code::ContractInvalid, m);
    for rel in &contract.scratch_paths {
        if satyrn_mutator_core::gates::is_private(rel, &contract.private_paths) {
            return Err(refuse(format!(
                "scratch path `{rel}` is private; a scratch path is readable by the command"
            )));
        }
        let git = Git::at(root);
        let ignored = git
            .output(&["check-ignore", "-q", "--no-index", "--", &format!("{rel}/")])
            .map_err(|e| {
                refuse(format!(
                    "cannot ask git whether scratch path `{rel}` is ignored: {e}"
                ))
            })?;
        if !ignored.status.success() {
            return Err(refuse(format!(
                "scratch path `{rel}` is not ignored by git: add `/{rel}/` to .gitignore, or its contents would reach a candidate"
            )));
        }
        let tracked = git
            .run(&["ls-files", "-z", "--", rel.as_str()])
            .map_err(|e| {
                refuse(format!(
                    "cannot list the tracked files of scratch path `{rel}`: {e}"
                ))
            })?;
        if !tracked.is_empty() {
            return Err(refuse(format!(
                "scratch path `{rel}` holds tracked files, which the command could then change directly; a scratch path must hold only what git ignores"
            )));
        }
        let mut at = root.to_path_buf();
        for segment in rel.split('/') {
            at.push(segment);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(refuse(format!(
                        "scratch path `{rel}`: {} is not a directory",
                        at.display()
                    )));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    std::fs::create_dir(&at)
                        .map_err(|e| refuse(format!("cannot create scratch path `{rel}`: {e}")))?;
                }
                Err(e) => return Err(refuse(format!("scratch path `{rel}`: {e}"))),
            }
        }
    }
    Ok(())
}

fn execute(request: &Request, prepared: Prepared) -> u8 {
    let Prepared {
        contract,
        root,
        run_dir,
        ruleset,
        summary,
        agent,
    } = prepared;
    if let Err(e) = signals::install() {
        let _ = writeln!(
            std::io::stderr(),
            "satyrn-host confine: cannot install the signal handlers: {e}"
        );
        run_dir.remove(request.keep_scratch);
        return Code::InternalError.exit_status();
    }
    process::become_subreaper();
    let ledger = match std::env::var_os(satyrn_publish::ledger::VAR) {
        None => None,
        Some(path) => match satyrn_publish::ledger::Ledger::open(Path::new(&path)) {
            Ok(l) => {
                if let Some(summary) = &summary {
                    l.enforced(summary);
                }
                Some(std::sync::Arc::new(l))
            }
            Err(e) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "satyrn-host confine: cannot open the ledger {}: {e}",
                    Path::new(&path).display()
                );
                run_dir.remove(request.keep_scratch);
                return Code::InternalError.exit_status();
            }
        },
    };
    let confined = ruleset.is_some();
    let broker = match run_dir
        .socket()
        .and_then(|socket| broker::Broker::start(&socket, &root, contract, ledger, confined))
    {
        Ok(b) => b,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "satyrn-host confine: cannot start the broker: {e}"
            );
            run_dir.remove(request.keep_scratch);
            return Code::InternalError.exit_status();
        }
    };
    let Some((program, args)) = request.argv.split_first() else {
        broker.stop();
        run_dir.remove(request.keep_scratch);
        return satyrn_code::USAGE_EXIT;
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(request.cwd.as_deref().unwrap_or(&root))
        .env(
            "HOME",
            request.home.clone().unwrap_or_else(|| run_dir.home()),
        )
        .env("TMPDIR", run_dir.tmp())
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove(satyrn_publish::ledger::VAR)
        .env(broker::SOCKET_VAR, broker.socket())
        .env(broker::SECRET_VAR, broker.secret())
        .envs(agent.iter().flat_map(|a| a.env.iter().map(|(k, v)| (k, v))))
        .process_group(0);
    if ruleset.is_some() {
        for var in rules::CREDENTIAL_AGENT_VARS {
            cmd.env_remove(var);
        }
        cmd.env(CONFINED_VAR, "1");
    } else {
        cmd.env_remove(CONFINED_VAR);
    }
    let terminal = foreground_terminal();
    if let Some((fd, _)) = &ruleset {
        let fd = std::os::fd::AsRawFd::as_raw_fd(fd);
        // SAFETY: only raw system calls (prctl, capset, landlock_restrict_self, seccomp,
        // close_range) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                landlock::restrict_in_child(fd)?;
                seccomp::refuse_terminal_injection()?;
                satyrn_os::fds::close_inherited_on_exec()
            });
        }
    }
    process::end_with_parent(&mut cmd, Signal::KILL);
    let status = match cmd.spawn() {
        Ok(mut child) => {
            let pgid = process::pid_of(&child).ok();
            if let (Some(pgid), Some(tty)) = (pgid, &terminal) {
                let _ = rustix::termios::tcsetpgrp(tty, pgid);
            }
            let status = wait(&mut child, pgid);
            if let Some(pgid) = pgid {
                process::stop_group(pgid);
            }
            let _ = child.wait();
            if let Some(tty) = &terminal {
                signals::ignore(&[libc::SIGTTOU]);
                let _ = rustix::termios::tcsetpgrp(tty, rustix::process::getpgrp());
            }
            status
        }
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "satyrn-host confine: cannot start {}: {e}",
                Path::new(program).display()
            );
            127
        }
    };
    // The broker first: a call in flight finishes (with the git it may run, a descendant
    // of this process too), then whatever is left of the command's tree is killed.
    let traffic = broker.stop();
    let left = process::stop_strays(None);
    if left > 0 {
        let _ = writeln!(
            std::io::stderr(),
            "satyrn-host confine: {left} process{} of the command still forking after {} s of killing; they stay confined",
            if left == 1 { "" } else { "es" },
            process::STRAYS_DEADLINE.as_secs()
        );
    }
    let _ = writeln!(std::io::stderr(), "satyrn-host confine: {traffic}");
    run_dir.remove(request.keep_scratch);
    status
}

/// stdin, when it is a terminal whose foreground group is ours.
fn foreground_terminal() -> Option<std::os::fd::BorrowedFd<'static>> {
    let stdin = rustix::stdio::stdin();
    let ours = rustix::process::getpgrp();
    (rustix::termios::isatty(stdin) && rustix::termios::tcgetpgrp(stdin).ok() == Some(ours))
        .then_some(stdin)
}

/// Waits for `child`, passing each interruption to its group; returns its exit status or
/// 128 + the signal that ended it. Sleeps in `poll` on the child's pidfd and the signal
/// self-pipe, so its end is seen at once (a poll of at most 1 s without a pidfd).
fn wait(child: &mut std::process::Child, pgid: Option<Pid>) -> u8 {
    use rustix::event::{PollFd, PollFlags, poll};
    let pidfd = process::pidfd_of(child).ok();
    loop {
        // Emptied first: a signal after `take` leaves a byte that wakes the poll below.
        signals::drain();
        if let Some(s) = signals::take()
            && let (Some(pgid), Some(signal)) = (pgid, Signal::from_named_raw(s))
        {
            let _ = rustix::process::kill_process_group(pgid, signal);
        }
        match child.try_wait() {
            Ok(Some(status)) => {
                return match (status.code(), status.signal()) {
                    (Some(code), _) => u8::try_from(code).unwrap_or(1),
                    (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(255),
                    (None, None) => 1,
                };
            }
            Ok(None) => {
                let mut fds: Vec<PollFd<'_>> = pidfd
                    .iter()
                    .map(|fd| PollFd::new(fd, PollFlags::IN))
                    .chain(signals::wake_fd().map(|fd| PollFd::from_borrowed_fd(fd, PollFlags::IN)))
                    .collect();
                let timeout = rustix::event::Timespec {
                    tv_sec: if pidfd.is_some() { 1 } else { 0 },
                    tv_nsec: if pidfd.is_some() { 0 } else { 20_000_000 },
                };
                // EINTR (a signal arrived) is a reason to look again, as is the timeout.
                let _ = poll(&mut fds, Some(&timeout));
            }
            Err(_) => return 1,
        }
    }
}
