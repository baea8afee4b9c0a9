//! `satyrn-host mcp --repo WORKTREE CONTRACT`: satyrn's tools for every agent that speaks
//! the Model Context Protocol (stdio transport), with the gates of `protocol`.
//!
//! The repository and the contract are fixed when the server starts and are never tool
//! arguments; the contract is read once and frozen, so editing the contract file later
//! cannot widen a running session, and MCP roots sent by a client change nothing. The tools
//! ([`server`]) are thin adapters over the operation layer: the same decisions, codes and
//! messages as `protocol`. A per-session revision map lets the model edit what it read
//! without copying revisions. Logs go to stderr; stdout carries only MCP messages.
//!
//! Lifetime: the server ends on stdin EOF, `SIGTERM`, `SIGINT` or `SIGHUP`, after the
//! calls in flight have finished (each is one bounded operation), leaving no temporary and no
//! child. On a signal it stops reading and answers every request it already received before
//! it exits (within [`SHUTDOWN_GRACE`]): a write that landed is always reported. Process-global effects: tokio's handlers for those three signals are installed
//! for the server's lifetime.

pub mod args;
pub mod framing;
pub mod output;
mod render;
pub mod seen;
pub mod server;
pub mod workers;

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;

use satyrn_code::{Code, Failure};
use satyrn_contract as contract;
use satyrn_contract::repo::RepoRoot;
use satyrn_engine::Loaded;
use server::{Server, Session};

/// How long the end of a session waits for the last answers to reach stdout: 5 s.
pub const FLUSH_GRACE: Duration = Duration::from_secs(5);

/// How long shutdown waits for calls in flight: 60 s.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(60);

/// Opens the session: the contract (frozen), the worktree root, the engine.
///
/// # Errors
///
/// The contract's or repository's refusal (`CONTRACT_*`, `REPO_UNAVAILABLE`), or
/// `INTERNAL_ERROR` when the engine cannot load.
pub fn open(repo: &Path, contract_path: &Path) -> Result<Session, Failure> {
    let contract = contract::load(contract_path)?;
    let root = RepoRoot::open(repo)?;
    let engine_failure =
        |e: satyrn_engine::EngineError| Failure::new(Code::InternalError, e.to_string());
    let loaded = Loaded::new()?;
    Session::new(root, contract, loaded).map_err(engine_failure)
}

/// Serves `session` on stdin/stdout until EOF or a termination signal; returns the exit
/// status (0, or 1 when the transport failed).
#[must_use]
pub fn serve(session: Session) -> u8 {
    serve_with(
        session,
        || {
            Ok((
                tokio::io::BufReader::new(tokio::io::stdin()),
                tokio::io::stdout(),
            ))
        },
        true,
    )
}

/// Serves `session` on one connected stream (a confined run's broker connection,
/// `satyrn_confine::broker`) until its end; returns 0, or 1 when the transport failed.
/// No signal is handled: the broker's owner ends it by shutting the stream down.
#[must_use]
pub fn serve_stream(session: Session, stream: std::os::unix::net::UnixStream) -> u8 {
    serve_with(
        session,
        move || {
            stream.set_nonblocking(true)?;
            let stream = tokio::net::UnixStream::from_std(stream)?;
            let (read, write) = stream.into_split();
            Ok((tokio::io::BufReader::new(read), write))
        },
        false,
    )
}

fn serve_with<R, W>(
    session: Session,
    io: impl FnOnce() -> std::io::Result<(R, W)>,
    on_signals: bool,
) -> u8
where
    R: tokio::io::AsyncBufRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return fail(&format!("cannot start the runtime: {e}")),
    };
    let server = Server::new(session);
    let session = std::sync::Arc::clone(server.session());
    let status = runtime.block_on(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let signals = if on_signals {
            let (Ok(term), Ok(int), Ok(hup)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
                signal(SignalKind::hangup()),
            ) else {
                return fail("cannot install the signal handlers");
            };
            Some((term, int, hup))
        } else {
            None
        };
        let stop = async move {
            let Some((mut term, mut int, mut hup)) = signals else {
                return std::future::pending::<()>().await;
            };
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
                _ = hup.recv() => {}
            }
        };
        let (input, output) = match io() {
            Ok(io) => io,
            Err(e) => return fail(&format!("cannot open the transport: {e}")),
        };
        let framed = framing::start(input, output);
        let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(
            framed.to_rmcp,
            framed.from_rmcp,
        )
        .with_max_line_length(framing::MAX_MESSAGE_BYTES + 1);
        let (reader, writer) = (framed.read, framed.write);
        let (outstanding, stop_reading) = (framed.outstanding, framed.stop_reading);
        let session_ended = async {
            let service = match server.serve(transport).await {
                Ok(service) => service,
                Err(e) => {
                    // The answers to what came before it are still on their way to stdout.
                    let _ = tokio::time::timeout(FLUSH_GRACE, writer).await;
                    // Input that ended before any `initialize`: a client that went away
                    // before the session began, which is no failure.
                    return match reader.await {
                        Ok(Ok(framing::Ended {
                            initialize_seen: false,
                        })) => Ok(()),
                        _ => Err(format!("the MCP handshake failed: {e}")),
                    };
                }
            };
            let ended = service
                .waiting()
                .await
                .map(|_| ())
                .map_err(|e| format!("the MCP session failed: {e}"));
            // rmcp has dropped its end: what it wrote last is still on its way to stdout.
            let _ = tokio::time::timeout(FLUSH_GRACE, writer).await;
            ended
        };
        tokio::pin!(session_ended);
        let ended = tokio::select! {
            ended = &mut session_ended => Some(ended),
            () = stop => None,
        };
        match ended {
            Some(Ok(())) => 0,
            Some(Err(message)) => fail(&message),
            None => {
                // A signal: no further request is read; the session goes on until each one
                // already received is answered (its response written and flushed), then it
                // is dropped, which closes the transport.
                stop_reading.notify_one();
                tokio::select! {
                    _ = &mut session_ended => {}
                    _ = tokio::time::timeout(SHUTDOWN_GRACE, outstanding.all_answered()) => {}
                }
                0
            }
        }
    });
    // Not a plain drop: tokio's stdin reader is a blocking thread that would hold the drop
    // until the client writes again.
    runtime.shutdown_background();
    let deadline = Instant::now() + SHUTDOWN_GRACE;
    while session.in_flight() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    status
}

fn fail(message: &str) -> u8 {
    let _ = writeln!(std::io::stderr(), "satyrn-host mcp: {message}");
    Code::InternalError.exit_status()
}
