//! The stdio framing between the client and rmcp: every line the client sends gets a
//! well-formed answer, and nothing a client sends before `initialize` ends the session.
//!
//! rmcp's own stdio transport drops what it cannot parse without a word (lines that are not
//! JSON, not UTF-8, a lone surrogate escape) and every line over 16 MiB, so a client whose
//! `write` of 16 MiB of content (documented as allowed, and larger once JSON escapes it)
//! waits forever; and a notification or a stray response before `initialize` ends the
//! server. Here one task reads stdin line by line, bounded by [`MAX_MESSAGE_BYTES`], and:
//!
//! - a line that is not UTF-8 or not JSON is answered with a JSON-RPC parse error
//!   (`-32700`, `id: null`, as JSON-RPC 2.0 says);
//! - a line over the limit (the rest of it is read and dropped, never buffered), one that is
//!   JSON but not an object (a batch, a number), or an object that is not a JSON-RPC message
//!   is answered with an invalid-request error (`-32600`, with the message's `id` when it
//!   has a usable one);
//! - a `tools/call` whose `arguments` is not an object (a string, say) is answered with an
//!   invalid-params error (`-32602`) naming it, where rmcp would say "Method not found";
//! - before the first `initialize` request, a notification or a response is dropped (there
//!   is nothing to answer, and no session yet for it to belong to);
//! - everything else goes to rmcp unchanged, through an in-process pipe.
//!
//! rmcp's output and these answers reach stdout through one writer task, whole line by whole
//! line, so they never interleave. Answering unparsable input is a decision against rmcp's
//! (which ignores it, to avoid an error storm with a peer that echoes answers back as more
//! garbage): an answer with `id: null` matches no request of a conforming client, which then
//! drops it, and the client that sent garbage learns why nothing else happens.

use std::collections::HashSet;
use std::io;
use std::sync::{Arc, Mutex};

use rmcp::model::ClientJsonRpcMessage;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::sync::{Notify, mpsc};

/// The largest message accepted: 97 MiB. The largest `write` (16 MiB of content) fits
/// however JSON escapes it: at most 6 bytes a byte (`\u0001`), plus 1 MiB for the rest.
pub const MAX_MESSAGE_BYTES: usize = 6 * (16 << 20) + (1 << 20);

/// How much one pipe between the tasks buffers.
const PIPE_BYTES: usize = 1 << 20;

/// What the reader saw by the time stdin ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    /// An `initialize` request was passed to rmcp.
    pub initialize_seen: bool,
}

/// The requests passed to rmcp that it has not answered yet: each request's `id` (as JSON
/// text) from the moment it is passed on until its response was written to the output and
/// flushed.
#[derive(Debug, Clone, Default)]
pub struct Outstanding {
    ids: Arc<Mutex<HashSet<String>>>,
    emptied: Arc<Notify>,
}

impl Outstanding {
    fn insert(&self, id: String) {
        self.lock().insert(id);
    }

    fn answered(&self, id: &str) {
        let mut ids = self.lock();
        if ids.remove(id) && ids.is_empty() {
            self.emptied.notify_waiters();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many requests wait for their response.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether every request passed to rmcp has been answered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits until every request passed to rmcp has been answered (at once when none waits).
    pub async fn all_answered(&self) {
        loop {
            let emptied = self.emptied.notified();
            tokio::pin!(emptied);
            emptied.as_mut().enable();
            if self.is_empty() {
                return;
            }
            emptied.await;
        }
    }
}

/// The pipes rmcp reads from and writes to, and the two tasks that frame them: `read`
/// ends with stdin (its result says whether `initialize` came), `write` once rmcp's output
/// and the answers both ended.
#[derive(Debug)]
pub struct Framed {
    /// What rmcp reads: the client's valid messages.
    pub to_rmcp: DuplexStream,
    /// What rmcp writes: forwarded to stdout.
    pub from_rmcp: DuplexStream,
    /// The reading task.
    pub read: tokio::task::JoinHandle<io::Result<Ended>>,
    /// The writing task.
    pub write: tokio::task::JoinHandle<io::Result<()>>,
    /// The requests rmcp has yet to answer.
    pub outstanding: Outstanding,
    /// Stops the reading task: no more of the input is passed to rmcp, whose own input stays
    /// open, so it still answers every request it already has.
    pub stop_reading: Arc<Notify>,
}

/// Starts the framing over `input` and `output` (stdin and stdout) on the current runtime.
pub fn start<R, W>(input: R, output: W) -> Framed
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (rmcp_in, mut to_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (from_rmcp, rmcp_out) = tokio::io::duplex(PIPE_BYTES);
    let (answers, answered) = mpsc::unbounded_channel::<Vec<u8>>();
    let outstanding = Outstanding::default();
    let stop_reading = Arc::new(Notify::new());
    let read = {
        let (outstanding, stop) = (outstanding.clone(), Arc::clone(&stop_reading));
        tokio::spawn(async move {
            let mut input = input;
            tokio::select! {
                ended = read_loop(&mut input, &mut to_rmcp, &answers, &outstanding) => {
                    let _ = to_rmcp.shutdown().await;
                    ended
                }
                () = stop.notified() => {
                    // rmcp's input stays open (its end of the pipe is held here) until the
                    // runtime ends, so that it answers what it already has.
                    std::future::pending::<()>().await;
                    Ok(Ended { initialize_seen: true })
                }
            }
        })
    };
    let write = tokio::spawn(write_loop(rmcp_out, answered, output, outstanding.clone()));
    Framed {
        to_rmcp: rmcp_in,
        from_rmcp,
        read,
        write,
        outstanding,
        stop_reading,
    }
}

/// One line as read: its bytes, or that it was over the limit (and dropped).
enum Line {
    Bytes(Vec<u8>),
    TooLong,
}

async fn read_loop<R: AsyncBufRead + Unpin>(
    input: &mut R,
    to_rmcp: &mut DuplexStream,
    answers: &mpsc::UnboundedSender<Vec<u8>>,
    outstanding: &Outstanding,
) -> io::Result<Ended> {
    let mut initialize_seen = false;
    loop {
        let line = match read_line(input).await? {
            None => return Ok(Ended { initialize_seen }),
            Some(Line::TooLong) => {
                answer(
                    answers,
                    &Value::Null,
                    -32600,
                    &format!(
                        "Invalid Request: the message is over {MAX_MESSAGE_BYTES} bytes (a write's content may have at most 16 MiB)"
                    ),
                );
                continue;
            }
            Some(Line::Bytes(bytes)) => bytes,
        };
        let body = line.strip_suffix(b"\r").unwrap_or(&line);
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match judge(body) {
            Verdict::Forward {
                initialize,
                request_id,
            } => {
                if !initialize_seen && !initialize && request_id.is_none() {
                    continue; // a notification or response before the session began
                }
                initialize_seen |= initialize;
                if let Some(id) = request_id {
                    outstanding.insert(id);
                }
                to_rmcp.write_all(body).await?;
                to_rmcp.write_all(b"\n").await?;
            }
            Verdict::Answer { id, code, message } => answer(answers, &id, code, &message),
        }
    }
}

/// Reads one `\n`-terminated line (or the last, unterminated one), never holding more than
/// [`MAX_MESSAGE_BYTES`] of it; `None` at end of input.
async fn read_line<R: AsyncBufRead + Unpin>(input: &mut R) -> io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (line.is_empty(), too_long) {
                (_, true) => Some(Line::TooLong),
                (true, false) => None,
                (false, false) => Some(Line::Bytes(line)),
            });
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.map_or(available.len(), |at| at + 1);
        if !too_long {
            let end = newline.unwrap_or(available.len());
            if line.len() + end > MAX_MESSAGE_BYTES {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(&available[..end]);
            }
        }
        input.consume(take);
        if newline.is_some() {
            return Ok(Some(if too_long {
                Line::TooLong
            } else {
                Line::Bytes(line)
            }));
        }
    }
}

/// What to do with one message.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Pass it to rmcp; `initialize` when it is the `initialize` request; `request_id` (as
    /// JSON text) when it is a request, which rmcp answers.
    Forward {
        initialize: bool,
        request_id: Option<String>,
    },
    /// Answer it with this error.
    Answer {
        id: Value,
        code: i64,
        message: String,
    },
}

fn judge(body: &[u8]) -> Verdict {
    let Ok(text) = std::str::from_utf8(body) else {
        return parse_error("the message is not UTF-8");
    };
    let value: Value = match satyrn_operation::strict::value(text) {
        Ok(v) => v,
        Err(e) => {
            // Valid JSON with a key given twice: `protocol` refuses it, and so does MCP,
            // rather than act on whichever of the two serde_json would keep.
            let Ok(loose) = serde_json::from_str::<Value>(text) else {
                return parse_error(&e.to_string());
            };
            return Verdict::Answer {
                id: usable_id(&loose),
                code: -32600,
                message: format!("Invalid Request: {e}"),
            };
        }
    };
    let Value::Object(object) = &value else {
        return Verdict::Answer {
            id: Value::Null,
            code: -32600,
            message: "Invalid Request: a message is one JSON object (batches are not supported)"
                .to_owned(),
        };
    };
    let id = usable_id(&value);
    let method = object.get("method").and_then(Value::as_str);
    let initialize = method == Some("initialize");
    // rmcp would answer "Method not found" for a call whose arguments are no object.
    if method == Some("tools/call")
        && let Some(arguments) = object.get("params").and_then(|p| p.get("arguments"))
        && !(arguments.is_object() || arguments.is_null())
    {
        return Verdict::Answer {
            id,
            code: -32602,
            message: "Invalid params: `arguments` must be an object of the tool's arguments"
                .to_owned(),
        };
    }
    // An id no response can carry (null, a boolean, an object): rmcp would answer with no
    // `id` member at all, which is no JSON-RPC response.
    if method.is_some()
        && object
            .get("id")
            .is_some_and(|i| !(i.is_string() || i.is_number()))
    {
        return Verdict::Answer {
            id: Value::Null,
            code: -32600,
            message: "Invalid Request: `id` must be a string or a number".to_owned(),
        };
    }
    // A request of a known method whose params do not fit it: rmcp would answer "Invalid
    // request" without the request's `id`, so the client would wait for ever.
    let params_unfit =
        object.contains_key("method") && object.get("jsonrpc") == Some(&json!("2.0"));
    let request_id = object
        .get("id")
        .filter(|id| method.is_some() && !id.is_null())
        .map(Value::to_string);
    match serde_json::from_value::<ClientJsonRpcMessage>(value) {
        Ok(_) => Verdict::Forward {
            initialize,
            request_id,
        },
        Err(e) if params_unfit => Verdict::Answer {
            id,
            code: -32602,
            message: format!("Invalid params: {e}"),
        },
        Err(e) => Verdict::Answer {
            id,
            code: -32600,
            message: format!("Invalid Request: {e}"),
        },
    }
}

/// The message's `id` when it is one a response can carry (a string or a number).
fn usable_id(message: &Value) -> Value {
    match message.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    }
}

fn parse_error(why: &str) -> Verdict {
    Verdict::Answer {
        id: Value::Null,
        code: -32700,
        message: format!("Parse error: {why}"),
    }
}

fn answer(answers: &mpsc::UnboundedSender<Vec<u8>>, id: &Value, code: i64, message: &str) {
    let mut line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        .to_string()
        .into_bytes();
    line.push(b'\n');
    let _ = answers.send(line);
}

/// Forwards rmcp's output and the answers to `output`, a whole line at a time, until both
/// have ended.
async fn write_loop<W: AsyncWrite + Unpin>(
    from_rmcp: DuplexStream,
    mut answered: mpsc::UnboundedReceiver<Vec<u8>>,
    mut output: W,
    outstanding: Outstanding,
) -> io::Result<()> {
    let mut rmcp = tokio::io::BufReader::new(from_rmcp);
    let (mut rmcp_open, mut answers_open) = (true, true);
    let mut line = Vec::new();
    while rmcp_open || answers_open {
        tokio::select! {
            read = rmcp.read_until(b'\n', &mut line), if rmcp_open => {
                if read? == 0 {
                    rmcp_open = false;
                } else {
                    output.write_all(&line).await?;
                    output.flush().await?;
                    if let Some(id) = response_id(&line) {
                        outstanding.answered(&id);
                    }
                }
                line.clear();
            }
            next = answered.recv(), if answers_open => match next {
                Some(bytes) => {
                    output.write_all(&bytes).await?;
                    output.flush().await?;
                }
                None => answers_open = false,
            },
        }
    }
    Ok(())
}

/// The `id` (as JSON text) of a response rmcp wrote: a message with an `id` and no
/// `method`. The rest of the line is skipped over, never built into values.
fn response_id(line: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Head {
        id: Option<Value>,
        method: Option<serde::de::IgnoredAny>,
    }
    let head: Head = serde_json::from_slice(line).ok()?;
    match (head.id, head.method) {
        (Some(id), None) if !id.is_null() => Some(id.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_bad_line_gets_its_error() {
        let cases: [(&[u8], i64); 6] = [
            (b"{not json}", -32700),
            (b"\xff\xfe", -32700),
            (
                br#"{"jsonrpc":"2.0","id":3,"method":"x","params":{"s":"\ud800"}}"#,
                -32700,
            ),
            (b"[1,2]", -32600),
            (b"7", -32600),
            (br#"{"id":4,"result":{}}"#, -32600),
        ];
        for (line, code) in cases {
            match judge(line) {
                Verdict::Answer { code: c, .. } => {
                    assert_eq!(c, code, "{}", String::from_utf8_lossy(line));
                }
                Verdict::Forward { .. } => panic!("forwarded {}", String::from_utf8_lossy(line)),
            }
        }
        let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let forward = |initialize, id: &str| Verdict::Forward {
            initialize,
            request_id: Some(id.to_string()),
        };
        assert_eq!(judge(init), forward(true, "0"));
        let unknown = br#"{"jsonrpc":"2.0","id":9,"method":"no/such","params":{}}"#;
        assert_eq!(judge(unknown), forward(false, "9"));
        let notification = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(
            judge(notification),
            Verdict::Forward {
                initialize: false,
                request_id: None
            }
        );
        // A key given twice is refused, with the id when the message has one.
        let twice = br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"write","arguments":{"path":"a","path":"b"}}}"#;
        match judge(twice) {
            Verdict::Answer { id, code, message } => {
                assert_eq!((id, code), (json!(12), -32600));
                assert!(message.contains("duplicate field `path`"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let string = br#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"read","arguments":"{}"}}"#;
        match judge(string) {
            Verdict::Answer { id, code, .. } => assert_eq!((id, code), (json!(10), -32602)),
            other => panic!("{other:?}"),
        }
        let object = br#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"read","arguments":{"path":"a"}}}"#;
        assert_eq!(judge(object), forward(false, "11"));
        // What rmcp would answer without an id: params of the wrong shape, an id no
        // response can carry.
        for (line, want_id, want_code) in [
            (&br#"{"jsonrpc":"2.0","id":10,"method":"ping","params":"x"}"#[..], json!(10), -32602),
            (br#"{"jsonrpc":"2.0","id":23,"method":"tools/call","params":[1]}"#, json!(23), -32602),
            (br#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"read","arguments":{}}}"#, json!(1.5), -32602),
            (br#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#, Value::Null, -32600),
            (br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#, Value::Null, -32600),
            (br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, Value::Null, -32600),
        ] {
            match judge(line) {
                Verdict::Answer { id, code, .. } => assert_eq!((id, code), (want_id, want_code), "{}", String::from_utf8_lossy(line)),
                other => panic!("{} was {other:?}", String::from_utf8_lossy(line)),
            }
        }
        assert_eq!(
            response_id(br#"{"jsonrpc":"2.0","id":11,"result":{"big":[1,2]}}"#).as_deref(),
            Some("11")
        );
        assert_eq!(
            response_id(br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#),
            None
        );
        assert_eq!(
            response_id(br#"{"jsonrpc":"2.0","method":"notifications/x"}"#),
            None
        );
    }
}
