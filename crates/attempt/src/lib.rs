//! `satyrn-host attempt`: one Pi process in the current worktree, every edit through the
//! sandboxed mutator.
//!
//! 1. Check the contract and the repository (the current directory); require a readable
//!    `HEAD`; freeze the contract's exact bytes in a private temporary directory outside
//!    the worktree, so editing the contract file cannot widen permissions mid-run.
//! 2. Check and pin the artifact destinations ([`artifacts`]).
//! 3. Build the revision map ([`revisions`]); none → `ATTEMPT_FAILED`. Write the mutation
//!    context ([`context`]) and the prompt ([`prompt`]) to private files.
//! 4. Run Pi once ([`pi`]) in its private home ([`pi::Home`]), the prompt on its stdin, the
//!    context file named in its environment, its stdout spooled to a regular file; a
//!    termination signal is forwarded to it ([`child`]).
//! 5. After Pi is reaped: sweep stale publish temporaries and, at the same time, compute
//!    the patch (`git diff --binary` against the captured `HEAD`); copy the transcript to
//!    stdout and publish it; publish the patch when non-empty.
//! 6. Remove the temporary directory. A cleanup failure is a visible `ATTEMPT_FAILED`
//!    naming what was retained; a secondary error never hides the primary one.
//!
//! Exit 0 when Pi exited zero and every artifact was published; 2 usage; 3–6 the check's
//! refusals; 10 `ATTEMPT_FAILED` otherwise. Messages go to stderr; stdout carries Pi's
//! transcript bytes only.

pub mod artifacts;
pub mod child;
pub mod context;
pub mod error;
pub mod pi;
pub mod prompt;
pub mod revisions;

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use artifacts::Destination;
pub use error::AttemptError;
use satyrn_code::Failure;
use satyrn_contract as contract;
use satyrn_contract::repo::RepoRoot;
use satyrn_git::{self as git, Git};
use satyrn_os::fsid;
use satyrn_os::{owned_dir, signals};

/// Where the transcript is published, when set.
pub const TRANSCRIPT_VAR: &str = "SATYRN_ATTEMPT_TRANSCRIPT";
/// Where a non-empty patch is published, when set.
pub const PATCH_VAR: &str = "SATYRN_ATTEMPT_PATCH";

/// What `attempt` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// The model, passed to Pi as `--model MODEL`.
    pub model: String,
    /// The contract, relative to the current directory or absolute.
    pub contract: PathBuf,
    /// Run Pi without `satyrn-host confine`.
    pub unconfined: bool,
}

/// Runs one attempt in the current directory and returns the exit status.
#[must_use]
pub fn run(options: &Options) -> u8 {
    // From the start: SIGTERM/SIGINT (which `deliver` sends to the whole group) must not
    // kill the attempt before its private directory is removed. Pi gets the signal too;
    // the attempt waits for it and still publishes what it produced.
    let _ = signals::install();
    let mut cleanup = Cleanup::default();
    let result = attempt(options, &mut cleanup);
    let cleaned = cleanup.finish();
    let failure = match (result, cleaned) {
        (Ok(()), Ok(())) => return 0,
        (Err(primary), Ok(())) => Failure::from(primary),
        (Ok(()), Err(retained)) => Failure::from(retained),
        (Err(primary), Err(retained)) => {
            Failure::new(primary.code(), format!("{primary}; also, {retained}"))
        }
    };
    let _ = writeln!(std::io::stderr(), "satyrn-host attempt: {failure}");
    failure.code.exit_status()
}

fn attempt(options: &Options, cleanup: &mut Cleanup) -> Result<(), AttemptError> {
    let cwd =
        std::env::current_dir().map_err(AttemptError::io("cannot read the current directory"))?;
    let contract_path = cwd.join(&options.contract);
    let (contract, contract_bytes) = contract::load_with_bytes(&contract_path)?;
    let root = RepoRoot::open(&cwd).map_err(Failure::from)?;
    let git = Git::at(&cwd);
    let located = locate(&git)?;
    let head = located.head;
    let host =
        std::env::current_exe().map_err(AttemptError::io("cannot locate satyrn-host itself"))?;
    if fsid::is_within(&contract_path, &cwd).unwrap_or(false) {
        let _ = writeln!(
            std::io::stderr(),
            "satyrn-host attempt: contract read from the repository and frozen"
        );
    }

    let forbidden = forbidden_roots(&git, located.git_dirs)?;
    let transcript_dest = destination(TRANSCRIPT_VAR, &forbidden)?;
    let patch_dest = destination(PATCH_VAR, &forbidden)?;
    if let (Some(transcript), Some(patch)) = (&transcript_dest, &patch_dest)
        && transcript.same_target(patch)
    {
        return Err(AttemptError::SameArtifact(patch.path().to_path_buf()));
    }

    let private = cleanup.private_dir(&cwd)?;
    let frozen = private.join("contract.yaml");
    private_file(&frozen)
        .and_then(|mut file| file.write_all(&contract_bytes))
        .map_err(AttemptError::io("cannot freeze the contract"))?;

    let revisions = revisions::map(&root, &contract.writable_paths, &contract.private_paths)
        .map_err(AttemptError::Revisions)?;
    if revisions.is_empty() {
        return Err(AttemptError::NothingWritable(revisions::describe_empty(
            &cwd,
        )));
    }
    let writable: Vec<&str> = revisions.keys().map(String::as_str).collect();
    let prompt = prompt::build(&contract.task, &contract.writable_paths, &writable)
        .map_err(AttemptError::Prompt)?;
    let context_path = private.join("context.json");
    context::encode(&cwd, &frozen, &revisions)
        .and_then(|bytes| context::write(&context_path, &bytes))
        .map_err(AttemptError::Context)?;
    let prompt_path = private.join("prompt.md");
    private_file(&prompt_path)
        .and_then(|mut file| file.write_all(prompt.as_bytes()))
        .map_err(AttemptError::io("cannot write the prompt"))?;
    let (engine, mutator) = pi::write_extensions(&private.join("pi"))
        .map_err(AttemptError::io("cannot write the Pi extensions"))?;

    let spool_path = private.join("transcript.jsonl");
    let spool = private_file(&spool_path)
        .map_err(AttemptError::io("cannot create the transcript spool"))?;
    let program = pi::executable().map_err(AttemptError::Pi)?;
    let home = pi::prepare_home(&private, &cwd).map_err(AttemptError::Pi)?;
    let pi_args = pi::args(&options.model, &engine, &mutator);
    let mut cmd = if options.unconfined {
        let _ = writeln!(
            std::io::stderr(),
            "satyrn-host attempt: --unconfined: Pi runs without the kernel's boundary"
        );
        let mut cmd = Command::new(&program);
        cmd.args(&pi_args);
        cmd
    } else {
        // Pi, confined: its satyrn tools reach the broker (`satyrn-host protocol` relays),
        // its agent directory is its writable home, it runs in its own empty directory.
        let mut cmd = Command::new(&host);
        cmd.arg("confine")
            .arg("--repo")
            .arg(&cwd)
            .arg("--home")
            .arg(&home.agent_dir)
            .arg("--cwd")
            .arg(&home.cwd)
            .arg(&frozen)
            .arg("--")
            .arg(&program)
            .args(&pi_args);
        cmd
    };
    let prompt_input =
        File::open(&prompt_path).map_err(AttemptError::io("cannot open the prompt"))?;
    cmd.stdin(prompt_input)
        .stdout(
            spool
                .try_clone()
                .map_err(AttemptError::io("cannot share the spool"))?,
        )
        .stderr(Stdio::inherit());
    pi::environment(&mut cmd, &context_path, &host, &home)
        .map_err(AttemptError::git("cannot prepare pi's environment"))?;
    if let Some(signal) = signals::received() {
        return Err(AttemptError::Interrupted(signal));
    }
    satyrn_os::process::end_with_parent(&mut cmd, rustix::process::Signal::TERM);
    let mut pi_child = cmd.spawn().map_err(|source| AttemptError::Spawn {
        program: PathBuf::from(&program),
        source,
    })?;
    let ended = child::wait(&mut pi_child)
        .map_err(AttemptError::io("cannot wait for pi (it was killed)"))?;

    // Everything below runs whatever Pi's outcome: artifacts are preserved on failure too.
    let mut errors: Vec<String> = Vec::new();
    if let Some(signal) = ended.interrupted {
        errors.push(format!(
            "interrupted by {}: the signal was forwarded to pi",
            signals::name(signal)
        ));
    }
    if !ended.status.success() {
        errors.push(format!("pi exited unsuccessfully ({})", ended.status));
    }
    // Both scans run under the worktree lock, so a publish still in flight (a protocol child
    // that outlived Pi) has finished before either looks. They run at once: the patch is of
    // tracked files only, and the temporaries the sweep removes are never tracked, so neither
    // sees the other's work.
    let lock = satyrn_os::lock::WorktreeLock::acquire(root.dir());
    let (swept, patched) = std::thread::scope(|scope| {
        let patching = scope.spawn(|| patch(&git, &head));
        let swept = match &lock {
            Ok(_) => {
                satyrn_publish::sweep(root.dir());
                Ok(())
            }
            Err(e) => Err(format!(
                "cannot lock the worktree to sweep temporaries: {e}"
            )),
        };
        (swept, patching.join())
    });
    drop(lock);
    if let Err(e) = swept {
        errors.push(e);
    }
    let transcript =
        read_spool(spool).map_err(AttemptError::io("cannot read the transcript spool"))?;
    {
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(&transcript).and_then(|()| out.flush()) {
            errors.push(format!("writing the transcript to stdout failed: {e}"));
        }
    }
    if let Some(Err(e)) = transcript_dest
        .as_ref()
        .map(|dest| dest.publish(&transcript))
    {
        errors.push(e.to_string());
    }
    match patched {
        Ok(Ok(bytes)) if bytes.is_empty() => {}
        Ok(Ok(bytes)) => {
            if let Some(Err(e)) = patch_dest.as_ref().map(|dest| dest.publish(&bytes)) {
                errors.push(e.to_string());
            }
        }
        Ok(Err(e)) => errors.push(format!("computing the patch failed: {e}")),
        Err(_) => errors.push("computing the patch failed: its thread panicked".to_string()),
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(AttemptError::After(errors))
    }
}

/// `HEAD` and git's administrative and common directories, from one `rev-parse`.
struct Located {
    head: String,
    git_dirs: [PathBuf; 2],
}

fn locate(git: &Git) -> Result<Located, AttemptError> {
    let out = git
        .line(&[
            "rev-parse",
            "--path-format=absolute",
            "--absolute-git-dir",
            "--git-common-dir",
            "--verify",
            "--quiet",
            "HEAD^{commit}",
        ])
        .map_err(AttemptError::git("HEAD is not a readable commit"))?;
    match out.lines().collect::<Vec<_>>()[..] {
        [git_dir, common_dir, head] => Ok(Located {
            head: head.to_string(),
            git_dirs: [PathBuf::from(git_dir), PathBuf::from(common_dir)],
        }),
        _ => Err(AttemptError::Located(out)),
    }
}

/// Registered worktrees plus git's administrative and common directories.
fn forbidden_roots(git: &Git, git_dirs: [PathBuf; 2]) -> Result<Vec<PathBuf>, AttemptError> {
    let mut roots =
        git::worktree_paths(git).map_err(AttemptError::git("listing worktrees failed"))?;
    roots.extend(git_dirs);
    Ok(roots)
}

fn destination(
    variable: &'static str,
    forbidden: &[PathBuf],
) -> Result<Option<Destination>, AttemptError> {
    match std::env::var_os(variable) {
        None => Ok(None),
        Some(value) => Destination::prepare(variable, Path::new(&value), forbidden)
            .map(Some)
            .map_err(AttemptError::Artifact),
    }
}

/// Creates a new file readable and writable by the owner only (mode 0600, whatever the
/// umask).
fn private_file(path: &Path) -> std::io::Result<File> {
    File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

fn read_spool(mut spool: File) -> std::io::Result<Vec<u8>> {
    spool.rewind()?;
    let mut bytes = Vec::new();
    spool.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The binary-capable diff of the worktree against the captured `HEAD`.
fn patch(git: &Git, head: &str) -> Result<Vec<u8>, git::GitError> {
    git.run(&[
        "diff",
        "--binary",
        "--no-ext-diff",
        "--no-textconv",
        "--no-color",
        "--full-index",
        // Whatever diff.noprefix, diff.mnemonicPrefix or diff.srcPrefix say: `git apply`
        // expects a/ and b/.
        "--src-prefix=a/",
        "--dst-prefix=b/",
        head,
        "--",
    ])
}

/// The attempt's private temporary directory, removed at the end.
#[derive(Debug, Default)]
struct Cleanup {
    dir: Option<PathBuf>,
}

impl Cleanup {
    /// Sweeps the private directories of killed attempts from `TMPDIR`, then creates this
    /// one's (mode `0700` whatever the umask, owner-marked: [`owned_dir::ATTEMPT`]) and
    /// checks that it lies outside the worktree `cwd`.
    fn private_dir(&mut self, cwd: &Path) -> Result<PathBuf, AttemptError> {
        let base = std::env::temp_dir();
        for note in owned_dir::sweep(&base, owned_dir::ATTEMPT) {
            let _ = writeln!(std::io::stderr(), "satyrn-host attempt: {note}");
        }
        let dir = owned_dir::create(&base, owned_dir::ATTEMPT)
            .map_err(AttemptError::io("cannot create a temporary directory"))?;
        self.dir = Some(dir.clone());
        if fsid::is_within(&dir, cwd).unwrap_or(true) {
            return Err(AttemptError::PrivateInside(dir));
        }
        Ok(dir)
    }

    /// Removes the private directory; one that cannot be removed is reported as retained
    /// and loses its owner marker, so no later attempt sweeps what the report names.
    fn finish(self) -> Result<(), AttemptError> {
        let Some(dir) = self.dir else { return Ok(()) };
        std::fs::remove_dir_all(&dir).map_err(|source| {
            owned_dir::forget(&dir, owned_dir::ATTEMPT);
            AttemptError::Cleanup { dir, source }
        })
    }
}
