//! `satyrn-host protocol`: reads exactly one JSON request from stdin, writes exactly one
//! JSON response line to stdout, and exits with the response code's status.

use std::io::Read;

use satyrn_code::{Code, Failure};
use satyrn_protocol::{self as protocol, MAX_REQUEST_BYTES, Response, Shape};

/// `protocol`'s arguments: none, the request is read from stdin.
#[derive(Debug, clap::Args)]
#[command(
    about = "Answer one JSON request from stdin with one JSON response line",
    long_about = "Reads exactly one JSON request (check, read, replace or edit; at most \
                  64 MiB) from stdin, writes exactly one JSON response line to \
                  stdout and exits with the response code's status (docs/protocol.md, \
                  docs/exit-codes.md). Takes no arguments."
)]
pub struct Args {}

/// Runs `protocol`.
#[must_use]
pub fn run(_: &Args) -> u8 {
    let mut input = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(MAX_REQUEST_BYTES as u64 + 1)
        .read_to_end(&mut input);
    if let (Ok(_), Some(socket)) = (&read, std::env::var_os(satyrn_confine::broker::SOCKET_VAR)) {
        return relay(std::path::Path::new(&socket), &input);
    }
    let response = match read {
        Ok(_) => {
            super::panic::catch(|| protocol::handle(&input)).unwrap_or_else(|message| Response {
                shape: shape_of(&input),
                code: Code::InternalError,
                message,
                result: None,
            })
        }
        Err(e) => Response {
            shape: Shape::WithResult,
            code: Code::InvalidRequest,
            message: Failure::new(Code::InvalidRequest, format!("cannot read stdin: {e}")).message,
            result: None,
        },
    };
    super::print_json_line(&response.to_json());
    response.exit_status()
}

/// Inside a confined run (`SATYRN_BROKER` set): the request goes to the run's broker,
/// which answers it in its worktree under its frozen contract; its response line and exit
/// status are ours. A broker that cannot be reached is `INTERNAL_ERROR`, one JSON line.
fn relay(socket: &std::path::Path, input: &[u8]) -> u8 {
    use std::io::{BufRead, Write};
    let failed = |message: String| {
        let response = Response {
            shape: shape_of(input),
            code: Code::InternalError,
            message,
            result: None,
        };
        super::print_json_line(&response.to_json());
        response.exit_status()
    };
    let secret = std::env::var(satyrn_confine::broker::SECRET_VAR).unwrap_or_default();
    let mut stream = match satyrn_confine::broker::connect(socket, &secret, " protocol") {
        Ok(stream) => stream,
        Err(e) => {
            return failed(format!(
                "cannot reach the confined run's broker at {}: {e}",
                socket.display()
            ));
        }
    };
    // A broker that refused the first line closes the connection, and the rest of the
    // request may then fail to send (EPIPE): what it answered, if anything, is the truth.
    let _ = writeln!(stream, "{}", input.len())
        .and_then(|()| stream.write_all(input))
        .and_then(|()| stream.shutdown(std::net::Shutdown::Write));
    let mut reader = std::io::BufReader::new(stream);
    let (mut status, mut line) = (String::new(), String::new());
    let read = reader
        .read_line(&mut status)
        .and_then(|_| reader.read_line(&mut line));
    match (read, status.trim().parse::<u8>()) {
        (Ok(_), Ok(status)) if line.ends_with('\n') => {
            super::print_json_line(line.trim_end_matches('\n'));
            status
        }
        _ => failed(
            "the broker closed the connection without an answer (a wrong SATYRN_BROKER_SECRET?)"
                .to_owned(),
        ),
    }
}

/// The response shape for `input` when its handling panicked: `check`'s four fields for a
/// request whose `operation` is `check`, else five.
fn shape_of(input: &[u8]) -> Shape {
    let operation = serde_json::from_slice::<serde_json::Value>(input)
        .ok()
        .and_then(|v| {
            v.get("operation")
                .and_then(|o| o.as_str().map(str::to_owned))
        });
    if operation.as_deref() == Some("check") {
        Shape::Check
    } else {
        Shape::WithResult
    }
}
