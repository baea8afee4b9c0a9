//! The broker: the only writer of a confined run, outside its confinement.
//!
//! It listens on a Unix socket in the run's private directory (which the command can
//! reach but not change) and serves each connection as one MCP session over the one
//! operation layer ([`satyrn_mcp::serve_stream`]): the same tools, gates, limits, codes,
//! messages and worktree lock as `satyrn-host mcp`, its own revision map, the contract
//! frozen when `confine` started. A connection must first send the run's secret and a
//! newline within [`HANDSHAKE_LIMIT`]; anything else closes it unanswered. Landlock does
//! not stop a confined process from connecting to a named socket it can reach, so the
//! secret is what keeps another run's command (or anyone else) out. Under `deliver`, every
//! publication is recorded in the run's [`Ledger`] for the provenance check.

use std::collections::HashMap;
use std::io::{self, Read};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use satyrn_contract::Contract;
use satyrn_contract::repo::RepoRoot;
use satyrn_engine::Loaded;
use satyrn_mcp::server::Session;
use satyrn_publish::ledger::Ledger;

/// The environment variable that names the broker's socket inside a confined run.
pub const SOCKET_VAR: &str = "SATYRN_BROKER";

/// The environment variable that holds the run's secret (64 hexadecimal digits).
pub const SECRET_VAR: &str = "SATYRN_BROKER_SECRET";

/// How long a new connection may take to present the secret, and a protocol frame's body
/// to arrive once its header has: 10 s in all (a deadline, not a limit per read).
pub const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

/// How many connections are served at once: 64. A further connection waits in the
/// listening socket's queue until one ends (a connection that never presents the secret
/// ends at [`HANDSHAKE_LIMIT`]), so neither descriptors nor threads grow without bound.
pub const MAX_CONNECTIONS: usize = 64;

/// A running broker.
#[derive(Debug)]
pub struct Broker {
    socket: PathBuf,
    secret: String,
    stop: Arc<AtomicBool>,
    /// The listening socket, shared with the accepting thread: shut down to wake it.
    listening: UnixListener,
    open: Arc<Open>,
    accepting: Option<JoinHandle<Vec<JoinHandle<()>>>>,
    served: Arc<Served>,
}

/// What a broker served, counted as it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// MCP sessions (`satyrn-host mcp` relays, one per agent's MCP connection).
    pub mcp_sessions: usize,
    /// Protocol sessions: one per `satyrn-host protocol` relay, or one per Pi session.
    pub protocol_sessions: usize,
    /// Protocol requests answered over all protocol sessions.
    pub protocol_requests: usize,
}

impl std::fmt::Display for Traffic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        write!(
            f,
            "the broker served {}, and {} over {}",
            plural(self.mcp_sessions, "MCP session", "MCP sessions"),
            plural(
                self.protocol_requests,
                "protocol request",
                "protocol requests"
            ),
            plural(self.protocol_sessions, "connection", "connections"),
        )
    }
}

#[derive(Debug, Default)]
struct Counts {
    mcp: AtomicUsize,
    protocol: AtomicUsize,
    requests: AtomicUsize,
}

impl Broker {
    /// Binds `socket` (which must not exist) and starts accepting connections for
    /// `worktree` under `contract`. The secret is 32 random bytes. `confined`: the command
    /// runs under the kernel's rules, which MCP sessions tell the model in their
    /// instructions.
    ///
    /// # Errors
    ///
    /// The operating-system error of `bind`, or of the random source.
    pub fn start(
        socket: &Path,
        worktree: &Path,
        contract: Contract,
        ledger: Option<Arc<Ledger>>,
        confined: bool,
    ) -> io::Result<Self> {
        let mut bytes = [0u8; 32];
        getrandom_fill(&mut bytes)?;
        let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let listener = UnixListener::bind(socket)?;
        let listening = listener.try_clone()?;
        let stop = Arc::new(AtomicBool::new(false));
        let open = Arc::new(Open::default());
        let served = Arc::new(Served {
            secret: secret.clone(),
            worktree: worktree.to_path_buf(),
            contract,
            ledger,
            confined,
            count: Counts::default(),
        });
        let accepting = {
            let (stop, open, served) = (Arc::clone(&stop), Arc::clone(&open), Arc::clone(&served));
            std::thread::Builder::new()
                .name("satyrn-broker".into())
                .spawn(move || accept_loop(&listener, &stop, &open, &served))?
        };
        Ok(Self {
            socket: socket.to_path_buf(),
            secret,
            stop,
            listening,
            open,
            accepting: Some(accepting),
            served,
        })
    }

    /// The socket's path.
    #[must_use]
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The secret a connection must send first.
    #[must_use]
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// Stops accepting, ends every session (its stream shut down: each call in flight
    /// finishes first, as a session on EOF does), waits for them, removes the socket;
    /// returns what it served.
    pub fn stop(mut self) -> Traffic {
        self.stop.store(true, Ordering::SeqCst);
        // A blocked accept(2) returns (EINVAL) once its socket is shut down.
        let _ = rustix::net::shutdown(&self.listening, rustix::net::Shutdown::Both);
        self.open.ended.notify_all();
        let sessions = self
            .accepting
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        if let Ok(streams) = self.open.streams.lock() {
            for stream in streams.values() {
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
        }
        for session in sessions {
            let _ = session.join();
        }
        let _ = std::fs::remove_file(&self.socket);
        let count = &self.served.count;
        Traffic {
            mcp_sessions: count.mcp.load(Ordering::Relaxed),
            protocol_sessions: count.protocol.load(Ordering::Relaxed),
            protocol_requests: count.requests.load(Ordering::Relaxed),
        }
    }
}

/// What every session of one broker shares.
#[derive(Debug)]
struct Served {
    secret: String,
    worktree: PathBuf,
    contract: Contract,
    ledger: Option<Arc<Ledger>>,
    confined: bool,
    count: Counts,
}

/// The connections being served: a clone of each stream (so that [`Broker::stop`] can end
/// it), removed when its session ends.
#[derive(Debug, Default)]
struct Open {
    streams: Mutex<HashMap<u64, UnixStream>>,
    /// Notified when a session ends, and at stop.
    ended: Condvar,
}

impl Open {
    /// Waits until fewer than [`MAX_CONNECTIONS`] are open, or the broker stops; whether
    /// a slot is free.
    fn wait_for_slot(&self, stop: &AtomicBool) -> bool {
        let Ok(mut streams) = self.streams.lock() else {
            return false;
        };
        while streams.len() >= MAX_CONNECTIONS {
            if stop.load(Ordering::SeqCst) {
                return false;
            }
            streams = match self.ended.wait_timeout(streams, Duration::from_millis(100)) {
                Ok((s, _)) => s,
                Err(_) => return false,
            };
        }
        !stop.load(Ordering::SeqCst)
    }

    fn insert(&self, id: u64, stream: UnixStream) {
        if let Ok(mut streams) = self.streams.lock() {
            streams.insert(id, stream);
        }
    }

    fn remove(&self, id: u64) {
        if let Ok(mut streams) = self.streams.lock() {
            streams.remove(&id);
        }
        self.ended.notify_all();
    }
}

fn accept_loop(
    listener: &UnixListener,
    stop: &AtomicBool,
    open: &Arc<Open>,
    served: &Arc<Served>,
) -> Vec<JoinHandle<()>> {
    let mut sessions: Vec<JoinHandle<()>> = Vec::new();
    for id in 0u64.. {
        if !open.wait_for_slot(stop) {
            break;
        }
        let Some(stream) = listener.incoming().next() else {
            break;
        };
        if stop.load(Ordering::SeqCst) {
            break;
        }
        // A connection that failed before it was accepted (ECONNABORTED) is no reason
        // to stop serving.
        let Ok(stream) = stream else { continue };
        let Ok(held) = stream.try_clone() else {
            continue;
        };
        // A finished session's thread has nothing left to join.
        sessions.retain(|s| !s.is_finished());
        open.insert(id, held);
        let (served, ended) = (Arc::clone(served), Arc::clone(open));
        match std::thread::Builder::new()
            .name("satyrn-broker-session".into())
            .spawn(move || {
                serve_one(stream, &served);
                ended.remove(id);
            }) {
            Ok(handle) => sessions.push(handle),
            Err(_) => open.remove(id),
        }
    }
    sessions
}

fn serve_one(mut stream: UnixStream, served: &Served) {
    let mode = if stream.set_nonblocking(false).is_ok() {
        handshake(&mut stream, &served.secret)
    } else {
        None
    };
    match mode {
        Some(Mode::Mcp) => {
            served.count.mcp.fetch_add(1, Ordering::Relaxed);
        }
        Some(Mode::Protocol) => {
            served.count.protocol.fetch_add(1, Ordering::Relaxed);
            serve_protocol(&stream, served);
            // The broker holds a clone of every stream until it stops: end this one now.
            let _ = stream.shutdown(std::net::Shutdown::Both);
            return;
        }
        None => {
            let _ = stream.shutdown(std::net::Shutdown::Both);
            return;
        }
    }
    let session = RepoRoot::open(&served.worktree)
        .map_err(|e| e.to_string())
        .and_then(|root| {
            let loaded = Loaded::new().map_err(|e| e.to_string())?;
            Session::new(root, served.contract.clone(), loaded)
                .map(|s| {
                    s.with_ledger(served.ledger.clone())
                        .confined(served.confined)
                })
                .map_err(|e| e.to_string())
        });
    match session {
        Ok(session) => {
            let _ = satyrn_mcp::serve_stream(session, stream);
        }
        Err(e) => {
            use std::io::Write;
            let _ = writeln!(
                io::stderr(),
                "satyrn-host confine: the broker cannot open a session: {e}"
            );
        }
    }
}

/// What a connection asked for in its first line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `SECRET`: an MCP session.
    Mcp,
    /// `SECRET protocol`: a session of `satyrn-host protocol` requests, each framed as
    /// its length in decimal and a newline, then that many bytes; each answered with
    /// the exit status on a line, then the response line.
    Protocol,
}

/// The longest frame header read: 20 digits and the newline.
const MAX_FRAME_HEADER: u64 = 21;

/// Serves protocol requests until the client ends the session (EOF between frames) or
/// sends what cannot be a frame: a bad header or a request over
/// [`satyrn_code::MAX_REQUEST_BYTES`] is answered with `INVALID_REQUEST` and ends the
/// session (what follows cannot be read as a frame); a body that does not arrive within
/// [`HANDSHAKE_LIMIT`] ends it unanswered. Between frames the session may stay idle as
/// long as the client likes.
fn serve_protocol(stream: &UnixStream, served: &Served) {
    use io::BufRead;
    let mut reader = io::BufReader::new(stream);
    loop {
        let mut header = Vec::new();
        if stream.set_read_timeout(None).is_err()
            || (&mut reader)
                .take(MAX_FRAME_HEADER)
                .read_until(b'\n', &mut header)
                .is_err()
            || header.is_empty()
        {
            return;
        }
        let len = match frame_len(&header) {
            Ok(len) => len,
            Err(message) => {
                let refused = satyrn_protocol::Response::failure(
                    satyrn_protocol::Shape::WithResult,
                    satyrn_code::Failure::new(satyrn_code::Code::InvalidRequest, message),
                );
                let _ = reply(stream, &refused);
                return;
            }
        };
        let mut input = vec![0u8; len];
        if !read_by(
            stream,
            &mut reader,
            &mut input,
            Instant::now() + HANDSHAKE_LIMIT,
        ) {
            return;
        }
        served.count.requests.fetch_add(1, Ordering::Relaxed);
        if reply(stream, &answer(served, &input)).is_err() {
            return;
        }
    }
}

/// Fills `buf` from `reader` (which reads `stream`) before `deadline`; whether it did.
fn read_by(stream: &UnixStream, mut reader: impl Read, buf: &mut [u8], deadline: Instant) -> bool {
    let mut filled = 0;
    while filled < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return false;
        }
        match reader.read(&mut buf[filled..]) {
            Ok(0) | Err(_) => return false,
            Ok(n) => filled += n,
        }
    }
    true
}

/// The length a frame header (`DIGITS\n`) announces, at most
/// [`satyrn_code::MAX_REQUEST_BYTES`]; otherwise the refusal's message.
fn frame_len(header: &[u8]) -> Result<usize, String> {
    use satyrn_code::MAX_REQUEST_BYTES;
    let digits = header
        .strip_suffix(b"\n")
        .filter(|h| !h.is_empty() && h.iter().all(u8::is_ascii_digit))
        .ok_or("a request frame starts with its length in bytes and a newline")?;
    // ASCII digits only, so valid UTF-8; too many of them is too large.
    let len = std::str::from_utf8(digits)
        .ok()
        .and_then(|d| d.parse::<usize>().ok())
        .unwrap_or(usize::MAX);
    if len > MAX_REQUEST_BYTES {
        return Err(format!(
            "the request is larger than {MAX_REQUEST_BYTES} bytes"
        ));
    }
    Ok(len)
}

/// One protocol request, answered in this worktree under the frozen contract
/// ([`satyrn_protocol::Place::Pinned`]); a publication it makes is recorded in the ledger.
fn answer(served: &Served, input: &[u8]) -> satyrn_protocol::Response {
    let response = satyrn_protocol::handle_in(
        input,
        satyrn_protocol::Place::Pinned {
            root: &served.worktree,
            contract: &served.contract,
        },
    );
    if let (Some(ledger), Some(payload)) = (&served.ledger, &response.result) {
        record(ledger, payload);
    }
    response
}

/// Writes the exit status on a line, then the response line.
fn reply(mut out: &UnixStream, response: &satyrn_protocol::Response) -> io::Result<()> {
    use std::io::Write;
    let framed = format!("{}\n{}\n", response.exit_status(), response.to_json());
    out.write_all(framed.as_bytes())
}

/// Records the publications a successful `replace`, `edit`, `write`, `delete`, `change_set` or
/// `apply_patch` made.
fn record(ledger: &Ledger, payload: &satyrn_protocol::Payload) {
    use satyrn_protocol::Payload;
    match payload {
        Payload::Replace(r) => ledger.record(&r.path, Some(&r.sha256)),
        Payload::Edit(r) => ledger.record(&r.path, Some(&r.sha256)),
        Payload::Write(r) => ledger.record(&r.path, Some(&r.sha256)),
        Payload::Delete(r) => ledger.record(&r.path, None),
        Payload::ChangeSet(r) => {
            for file in &r.files {
                ledger.record(&file.path, file.sha256.as_deref());
            }
        }
        Payload::Read(_) | Payload::EditRefused(_) | Payload::List(_) | Payload::Search(_) => {}
    }
}

/// Connects to the broker at `socket` and sends the first line: `secret`, then `mode`
/// (empty for an MCP session, ` protocol` for a session of protocol requests). The client side of
/// [`handshake`], for `satyrn-host mcp` and `satyrn-host protocol` inside a confined run.
///
/// # Errors
///
/// The operating-system error of `connect` or `write`.
pub fn connect(socket: &Path, secret: &str, mode: &str) -> io::Result<UnixStream> {
    use std::io::Write;
    let mut stream = UnixStream::connect(socket)?;
    writeln!(stream, "{secret}{mode}")?;
    Ok(stream)
}

/// Reads one line of at most 128 bytes before [`HANDSHAKE_LIMIT`] has passed, byte by byte
/// (nothing of what follows is consumed), and compares its secret with `secret` in
/// constant time.
fn handshake(stream: &mut UnixStream, secret: &str) -> Option<Mode> {
    let deadline = Instant::now() + HANDSHAKE_LIMIT;
    let mut line = Vec::with_capacity(secret.len() + 1);
    let mut byte = [0u8; 1];
    loop {
        if !read_by(stream, &*stream, &mut byte, deadline) {
            return None;
        }
        match byte[0] {
            b'\n' => break,
            b if line.len() < 128 => line.push(b),
            _ => return None,
        }
    }
    if stream.set_read_timeout(None).is_err() {
        return None;
    }
    let expected = secret.as_bytes();
    let (given, rest) = line.split_at(line.len().min(expected.len()));
    let matches = given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if !matches {
        return None;
    }
    match rest {
        [] => Some(Mode::Mcp),
        b" protocol" => Some(Mode::Protocol),
        _ => None,
    }
}

fn getrandom_fill(buf: &mut [u8]) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = rustix::rand::getrandom(&mut buf[filled..], rustix::rand::GetRandomFlags::empty())?;
        filled += n;
    }
    Ok(())
}
