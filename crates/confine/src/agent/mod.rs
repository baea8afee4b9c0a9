//! `confine --agent NAME`: what one agent CLI needs to run well inside a confined run, made
//! in the run's scratch home and never in the user's own configuration.
//!
//! For each agent ([`Agent`]) [`prepare`] writes, under the scratch home:
//!
//! - the agent's configuration, in its own format, with satyrn's MCP server (`satyrn-host
//!   mcp`, which relays to the run's broker) as its only MCP server, and the agent's own
//!   approval prompts and sandbox switched off: the kernel is the boundary, so the agent
//!   keeps every built-in tool and its shell;
//! - copies (mode 0600) of the user's model settings and credentials, and nothing else of
//!   the user's agent directory;
//! - the note that tells the model which tools change files ([`note`]), in the file the
//!   agent reads as its user-level instructions (`AGENTS.md`, `CLAUDE.md`).
//!
//! It returns the variables that point the agent there, the ports of its model endpoint
//! (the only TCP ports the command may then connect to, with `--allow-connect`'s), and the
//! user's real agent directory, which the command may then not read (it holds other
//! sessions' transcripts and the credentials' originals).
//!
//! The user's agent directory is found as the agent finds it (its variable, else under
//! `HOME`); one inside the worktree is refused, since the model endpoint could then come
//! from the repository. See `docs/mcp-clients.md` for each agent's exact command.

mod claude;
mod codex;
pub mod note;
mod pi;

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::rules::Follow;
use satyrn_code::{Code, Failure};

/// The agents `confine --agent` prepares for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code (`claude`): `CLAUDE_CONFIG_DIR` in the scratch home.
    Claude,
    /// Codex CLI (`codex`): `CODEX_HOME` in the scratch home.
    Codex,
    /// Pi (`pi`): `PI_CODING_AGENT_DIR` in the scratch home, with satyrn's Pi package.
    Pi,
}

impl Agent {
    /// The agent's name as `--agent` spells it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Pi => "pi",
        }
    }

    /// Where the user's directory of the agent is: its variable, else this path under the
    /// home.
    #[must_use]
    pub fn user_dir(self) -> (&'static str, &'static str) {
        match self {
            Self::Claude => ("CLAUDE_CONFIG_DIR", ".claude"),
            Self::Codex => ("CODEX_HOME", ".codex"),
            Self::Pi => (satyrn_attempt::pi::AGENT_DIR_VAR, ".pi/agent"),
        }
    }
}

/// The name satyrn's MCP server has in every configuration written here.
pub const SERVER: &str = "satyrn";

/// What [`prepare`] needs to know.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    /// The run's scratch home (exists, mode 0700); the agent's directory goes beneath it.
    pub scratch_home: &'a Path,
    /// The worktree root (canonical).
    pub worktree: &'a Path,
    /// The `satyrn-host` binary the agent starts as its MCP server (absolute).
    pub host: &'a Path,
    /// The contract's scratch paths, named in the note.
    pub scratch_paths: &'a [String],
    /// The contract's bytes as read at start (Pi's tools get a frozen copy).
    pub contract_bytes: &'a [u8],
    /// `--cwd`, when given: the agent reads its project configuration there too.
    pub cwd: Option<&'a Path>,
}

/// What an agent's preparation adds to the run.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// Variables set in the command's environment.
    pub env: Vec<(OsString, OsString)>,
    /// The TCP ports of the model endpoint.
    pub ports: Vec<u16>,
    /// The user's own agent files and the repository's configuration of the agent,
    /// unreadable by the command, each with how far its symlinks are followed.
    pub deny: Vec<(PathBuf, Follow)>,
    /// What to tell the user at start (a configuration of the repository's that is not read).
    pub warnings: Vec<String>,
    /// Directories under [`Setup::deny`] the command may read (and run programs from): an
    /// agent installed inside its own directory (`~/.claude/local`).
    pub read_back: Vec<PathBuf>,
    /// One line for the start-up summary: where the configuration is, what was carried.
    pub summary: String,
}

/// Prepares `agent`'s directory under `context.scratch_home`, reading the user's agent
/// configuration through `var` (the caller's environment).
///
/// # Errors
///
/// `CONFINE_UNAVAILABLE` when the user's agent directory lies inside the worktree or is
/// relative, when a carried file is not a regular file or cannot be read, when the user's
/// configuration does not parse, or on a failed write.
pub fn prepare(
    agent: Agent,
    context: &Context<'_>,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Setup, Failure> {
    // Every configuration names satyrn-host in text (JSON, TOML).
    if context.host.to_str().is_none() {
        return Err(refused(
            agent,
            format!(
                "satyrn-host lies at a path that is not UTF-8 ({}), which the agent's configuration cannot name",
                context.host.display()
            ),
        ));
    }
    let homes = satyrn_os::home::all(var);
    let user = User {
        home: homes.first().cloned(),
        homes,
        var,
    };
    let mut setup = match agent {
        Agent::Claude => claude::prepare(context, &user),
        Agent::Codex => codex::prepare(context, &user),
        Agent::Pi => pi::prepare(context, &user),
    }?;
    // Every agent's directory of the user, not only this agent's: they hold other logins
    // and other sessions' transcripts.
    setup.deny.extend(
        every_agent_dir(&user)
            .into_iter()
            .map(|p| (p, Follow::LinksButPrograms)),
    );
    // The repository's own configuration of the agent that runs code or redirects it at
    // start (hooks, extensions, MCP servers, a model endpoint), unreadable to it in every
    // directory from the worktree's root to the working directory (the agent reads each),
    // and wherever a symlink there leads.
    for dir in project_dirs(context.worktree, context.cwd) {
        for rel in repository_config(agent) {
            let path = dir.join(rel);
            if std::fs::symlink_metadata(&path).is_ok() {
                setup.warnings.push(format!(
                    "the repository's {} is not read by the agent (it could run code or redirect the agent at start){}",
                    path.display(),
                    if agent == Agent::Pi && rel == &".pi" && path.join("extensions").exists() {
                        "; Pi stops at an extension it cannot read: move what you need to your own agent directory"
                    } else {
                        ""
                    }
                ));
            }
            setup.deny.push((path, Follow::Links));
        }
    }
    if setup.ports.is_empty() {
        return Err(refused(agent, "no model endpoint port could be derived"));
    }
    Ok(setup)
}

/// The files and directories of a repository (in each directory from its root to the
/// working directory) through which it would configure `agent` at start: made unreadable
/// to the agent. Codex's is not listed: Codex reads a project's `.codex/` only for a
/// project the user's configuration trusts, and `--agent codex` carries no trust ([`codex`]);
/// an unreadable one would stop Codex.
#[must_use]
pub fn repository_config(agent: Agent) -> &'static [&'static str] {
    match agent {
        Agent::Claude => &[
            ".claude/settings.json",
            ".claude/settings.local.json",
            ".mcp.json",
        ],
        Agent::Codex => &[],
        Agent::Pi => &[".pi"],
    }
}

/// The worktree's root and every directory down to `cwd` (when it lies inside).
fn project_dirs(worktree: &Path, cwd: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = vec![worktree.to_path_buf()];
    if let Some(rel) = cwd.and_then(|c| c.strip_prefix(worktree).ok()) {
        let mut at = worktree.to_path_buf();
        for part in rel.components() {
            at.push(part);
            dirs.push(at.clone());
        }
    }
    dirs
}

/// Every agent's directory the user may have: each agent's variable when set, and its
/// default place in every home (with `~/.claude.json`).
fn every_agent_dir(user: &User<'_>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for agent in <Agent as clap::ValueEnum>::value_variants() {
        let (var, default) = agent.user_dir();
        dirs.extend(user.dir(var, default));
        dirs.extend(user.in_every_home(default));
    }
    dirs.extend(user.in_every_home(".claude.json"));
    dirs
}

/// The caller's environment, as the agent would read it.
struct User<'a> {
    /// Where `~` of the agent's default directory is: `HOME`, else the passwd entry's.
    home: Option<PathBuf>,
    /// Every home of the caller ([`satyrn_os::home::all`]).
    homes: Vec<PathBuf>,
    var: &'a dyn Fn(&str) -> Option<OsString>,
}

impl User<'_> {
    /// A non-empty variable.
    fn var(&self, name: &str) -> Option<OsString> {
        (self.var)(name).filter(|v| !v.is_empty())
    }

    /// The agent's directory: `$VAR` when set (a leading `~/` means `HOME`), else
    /// `HOME/default`; `None` when neither can be known.
    fn dir(&self, var: &str, default: &str) -> Option<PathBuf> {
        match self.var(var) {
            Some(dir) => {
                let text = dir.to_string_lossy();
                match (text.strip_prefix("~/"), &self.home) {
                    (Some(rest), Some(home)) => Some(home.join(rest)),
                    _ => Some(PathBuf::from(dir)),
                }
            }
            None => self.home.as_ref().map(|h| h.join(default)),
        }
    }

    /// `rel` under every home of the caller: the agent's default places, unreadable to it.
    fn in_every_home(&self, rel: &str) -> Vec<PathBuf> {
        self.homes.iter().map(|h| h.join(rel)).collect()
    }
}

/// The user's agent directory, read once into the agent's own: every file carried is
/// named in the start-up summary.
struct Carrier<'a> {
    agent: Agent,
    /// The user's directory (`None`: neither its variable nor a home is known).
    from: Option<PathBuf>,
    /// The agent's directory in the scratch home (created).
    to: PathBuf,
    worktree: &'a Path,
    carried: Vec<&'static str>,
}

impl<'a> Carrier<'a> {
    /// The user's directory as the agent finds it ([`Agent::user_dir`]), refused when
    /// relative or inside the worktree (it is made unreadable with every agent's, by
    /// [`prepare`]); `to` is created.
    fn open(
        agent: Agent,
        user: &User<'_>,
        to: PathBuf,
        context: &Context<'a>,
    ) -> Result<Self, Failure> {
        private_dir(agent, &to)?;
        let (var, default) = agent.user_dir();
        let from = user.dir(var, default);
        if let Some(dir) = &from {
            check_user_dir(agent, dir, context.worktree)?;
        }
        Ok(Self {
            agent,
            from,
            to,
            worktree: context.worktree,
            carried: Vec::new(),
        })
    }

    /// The user's file `name`, not counted as carried.
    fn peek(&self, name: &str) -> Result<Option<Vec<u8>>, Failure> {
        match &self.from {
            Some(dir) => read_user_file(self.agent, &dir.join(name), self.worktree),
            None => Ok(None),
        }
    }

    /// The user's file `name`, carried (the caller writes what it makes of it).
    fn read(&mut self, name: &'static str) -> Result<Option<Vec<u8>>, Failure> {
        let bytes = self.peek(name)?;
        if bytes.is_some() {
            self.carried.push(name);
        }
        Ok(bytes)
    }

    /// The user's file `name` copied as it is, when there is one.
    fn copy(&mut self, name: &'static str) -> Result<(), Failure> {
        if let Some(bytes) = self.read(name)? {
            private_file(self.agent, &self.to.join(name), &bytes)?;
        }
        Ok(())
    }

    /// Writes `name`: `note`, then the user's own file of that name.
    fn instructions(&mut self, name: &'static str, note: String) -> Result<(), Failure> {
        let mut bytes = note.into_bytes();
        if let Some(own) = self.read(name)? {
            bytes.push(b'\n');
            bytes.extend_from_slice(&own);
        }
        private_file(self.agent, &self.to.join(name), &bytes)
    }

    /// Writes `name` in the agent's directory.
    fn write(&self, name: &str, bytes: &[u8]) -> Result<(), Failure> {
        private_file(self.agent, &self.to.join(name), bytes)
    }

    /// `VAR=DIR (carried …; what)`.
    fn summary(&self, var: &str, what: &str) -> String {
        let carried = if self.carried.is_empty() {
            String::new()
        } else {
            format!("carried {}; ", self.carried.join(", "))
        };
        format!("{var}={} ({carried}{what})", self.to.display())
    }
}

/// A refusal of the agent's preparation.
fn refused(agent: Agent, message: impl std::fmt::Display) -> Failure {
    Failure::new(
        Code::ConfineUnavailable,
        format!("--agent {}: {message}", agent.name()),
    )
}

/// Refuses a user agent directory that is relative or lies inside the worktree.
fn check_user_dir(agent: Agent, dir: &Path, worktree: &Path) -> Result<(), Failure> {
    if !dir.is_absolute() {
        return Err(refused(
            agent,
            format!("the agent directory {} must be absolute", dir.display()),
        ));
    }
    let resolved = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if resolved.starts_with(worktree) {
        return Err(refused(
            agent,
            format!(
                "the agent directory {} lies inside the worktree, so the model endpoint could come from the repository; keep it elsewhere",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// The largest user file carried or parsed (configuration, credentials).
const MAX_CARRIED_BYTES: u64 = 4 * 1024 * 1024;

/// The bytes of a user file, `None` when it does not exist. A file that is (or resolves
/// through a symlink to) a file of the worktree is refused: its content would come from
/// the repository, or be a private file made readable by the copy.
fn read_user_file(agent: Agent, path: &Path, worktree: &Path) -> Result<Option<Vec<u8>>, Failure> {
    if let Ok(real) = std::fs::canonicalize(path)
        && real.starts_with(worktree)
    {
        return Err(refused(
            agent,
            format!(
                "{} resolves to {}, inside the worktree; keep the agent's files outside it",
                path.display(),
                real.display()
            ),
        ));
    }
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(refused(
                agent,
                format!("cannot inspect {}: {e}", path.display()),
            ));
        }
    };
    if !meta.is_file() {
        return Err(refused(
            agent,
            format!("{} is not a regular file", path.display()),
        ));
    }
    if meta.len() > MAX_CARRIED_BYTES {
        return Err(refused(
            agent,
            format!(
                "{} is larger than {MAX_CARRIED_BYTES} bytes",
                path.display()
            ),
        ));
    }
    std::fs::read(path)
        .map(Some)
        .map_err(|e| refused(agent, format!("cannot read {}: {e}", path.display())))
}

/// Creates a directory (and its parents under the scratch home), mode 0700.
fn private_dir(agent: Agent, dir: &Path) -> Result<(), Failure> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| refused(agent, format!("cannot create {}: {e}", dir.display())))
}

/// Writes a new private file (mode 0600); an existing one is an error.
fn private_file(agent: Agent, path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(|e| refused(agent, format!("cannot write {}: {e}", path.display())))
}

/// The TCP port an `http` or `https` URL connects to, read the way a WHATWG URL parser
/// (Node's, Rust's `url`) reads it: leading and trailing spaces and control characters
/// dropped, tabs and newlines removed, `\\` as `/`, the slashes after the scheme optional,
/// userinfo up to the last `@`; the explicit port (digits only, at most 65535, not 0), else
/// 80 or 443. `None` for another scheme or what such a parser would reject.
#[must_use]
pub fn url_port(url: &str) -> Option<u16> {
    let cleaned: String = url
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let (scheme, rest) = cleaned.split_once(':')?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let rest = rest.trim_start_matches(['/', '\\']);
    let authority = rest.split(['/', '\\', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let port = if let Some(bracketed) = host_port.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']')?;
        if host.is_empty() {
            return None;
        }
        match after {
            "" => None,
            other => Some(other.strip_prefix(':')?),
        }
    } else {
        let (host, port) = match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        };
        if host.is_empty() {
            return None;
        }
        port
    };
    match port {
        None | Some("") => Some(default),
        Some(p) if p.bytes().all(|b| b.is_ascii_digit()) => {
            // Leading zeros are allowed; what remains is at most five digits.
            let significant = p.trim_start_matches('0');
            if significant.is_empty() || significant.len() > 5 {
                return None;
            }
            significant.parse::<u16>().ok()
        }
        Some(_) => None,
    }
}

/// [`url_port`], or a refusal naming the URL: with `--agent`, TCP connect is limited to
/// the model endpoint, and a port that cannot be derived must not leave it unlimited.
fn endpoint_port(agent: Agent, url: &str) -> Result<u16, Failure> {
    url_port(url).ok_or_else(|| {
        refused(
            agent,
            format!(
                "cannot tell the TCP port of the model endpoint {url:?} (an http or https URL, port 1 to 65535), so the network rule cannot be limited to it; correct the URL"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::url_port;

    #[test]
    fn a_url_names_its_port_or_its_scheme_s() {
        assert_eq!(url_port("http://127.0.0.1:4242/v1"), Some(4242));
        assert_eq!(url_port("https://api.anthropic.com"), Some(443));
        assert_eq!(url_port("HTTP://example.com/x"), Some(80));
        assert_eq!(url_port("http://[::1]:8080/v1"), Some(8080));
        assert_eq!(url_port("https://[::1]/v1"), Some(443));
        assert_eq!(url_port("https://user:pw@host:9000/"), Some(9000));
        assert_eq!(url_port("http://host:/"), Some(80));
        assert_eq!(url_port("ftp://host"), None);
        assert_eq!(url_port("host:80"), None);
        assert_eq!(url_port("http://host:99999"), None);
        assert_eq!(url_port("http://host:0"), None);
        // As a WHATWG parser (Node's, the agents') reads them.
        assert_eq!(url_port(" http://127.0.0.1:4242/v1 "), Some(4242));
        assert_eq!(url_port("\thttp://127.0.0.1:4242/v1\n"), Some(4242));
        assert_eq!(url_port("http://127.0.0.1:42\t42/v1"), Some(4242));
        assert_eq!(url_port("http://127.0.0.1:4242\\@x:5555/"), Some(4242));
        assert_eq!(url_port("http://u@127.0.0.1:4242@x:5555/"), Some(5555));
        assert_eq!(url_port("http:127.0.0.1:4242"), Some(4242));
        assert_eq!(url_port("http:\\\\127.0.0.1:4242"), Some(4242));
        assert_eq!(url_port("http://h:0080/"), Some(80));
        assert_eq!(url_port("http://h:00000000000000000000443/"), Some(443));
        assert_eq!(url_port("http://h:4242x/"), None);
        assert_eq!(url_port("http://h:+80/"), None);
        assert_eq!(url_port("http://:80/"), None);
        assert_eq!(url_port("http://[]:80/"), None);
        assert_eq!(url_port("http://[::1]x/"), None);
        assert_eq!(url_port("http://h:65535"), Some(65535));
        assert_eq!(url_port("http://h:65536"), None);
        assert_eq!(url_port(""), None);
    }
}
