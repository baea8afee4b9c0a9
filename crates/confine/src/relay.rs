//! `satyrn-host mcp` inside a confined run: a relay to the run's broker
//! ([`crate::broker`]), so an agent's MCP configuration is the same line inside
//! and outside. It connects to the socket named by `SATYRN_BROKER` (or `--broker`), sends
//! `SATYRN_BROKER_SECRET` and a newline, then copies stdin to the socket and the socket to
//! stdout, byte for byte, until the broker ends the session. The broker's worktree and
//! frozen contract serve it; the `--repo` and contract given to `mcp` are not consulted.

use std::io::{self, Read, Write};
use std::path::Path;

use satyrn_code::{Code, Failure};

/// Relays stdio to the broker at `socket`; returns the exit status (0 when the session
/// ended, 1 when the transport failed).
///
/// # Errors
///
/// `INTERNAL_ERROR` when the broker cannot be reached or no secret is set.
pub fn relay(socket: &Path, secret: Option<&str>) -> Result<u8, Failure> {
    let secret = secret.ok_or_else(|| {
        Failure::new(
            Code::InternalError,
            format!(
                "{} is not set: only a command confine started can reach its broker",
                crate::broker::SECRET_VAR
            ),
        )
    })?;
    let mut stream = crate::broker::connect(socket, secret, "").map_err(|e| {
        Failure::new(
            Code::InternalError,
            format!("cannot reach the broker at {}: {e}", socket.display()),
        )
    })?;
    let mut upstream = stream
        .try_clone()
        .map_err(|e| Failure::new(Code::InternalError, format!("cannot relay: {e}")))?;
    std::thread::spawn(move || {
        let _ = io::copy(&mut io::stdin().lock(), &mut upstream);
        let _ = upstream.shutdown(std::net::Shutdown::Write);
    });
    let mut out = io::stdout().lock();
    let mut buf = [0u8; 64 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Ok(0),
            Ok(n) => {
                if out.write_all(&buf[..n]).and_then(|()| out.flush()).is_err() {
                    return Ok(1);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Ok(1),
        }
    }
}
