//! The protocol request parser, through `satyrn_protocol::handle` (its public
//! entry point): any bytes give one well-formed response, never a panic.
//!
//! Checked for every input: the response renders as one JSON object with the fields of
//! its shape, in order; its code is one of the table's, with that code's exit status; a
//! refusal explains itself; bytes that are not one JSON value are `INVALID_REQUEST`; and
//! the message is never much longer than the input, nor than two 4096-byte paths and the
//! words around them (nothing is echoed unbounded, however the input is escaped).
//!
//! `handle` goes on to the contract and the repository once a request parses. An input
//! naming an existing contract file is skipped, so the fuzzer can never reach a publish
//! (it would need a real contract too); every other path it names is only read.
use serde_json::Value;

/// Two paths of at most 4096 bytes (repo and contract) and the words around them.
const MAX_MESSAGE: usize = 3 * 4096;

/// The target's checks on one input; panics on a violation.
pub fn check(data: &[u8]) {
    if names_an_existing_contract(data) {
        return;
    }
    let response = satyrn_protocol::handle(data);
    let line = response.to_json();
    let value: Value = serde_json::from_str(&line).expect("the response is JSON");
    let object = value.as_object().expect("the response is an object");
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert!(
        sorted == ["code", "message", "ok", "version"]
            || sorted == ["code", "message", "ok", "result", "version"],
        "fields: {keys:?}"
    );
    assert!(
        line.starts_with("{\"version\":1,\"ok\":"),
        "field order: {line}"
    );
    let code = object["code"].as_str().expect("code is a string");
    let ok = object["ok"].as_bool().expect("ok is a boolean");
    assert_eq!(ok, code == "OK", "{line}");
    let message = object["message"].as_str().expect("message is a string");
    assert_eq!(message.is_empty(), ok, "{line}");
    assert!(
        message.len() <= (data.len() + 512).min(MAX_MESSAGE),
        "a {}-byte message for a {}-byte input",
        message.len(),
        data.len()
    );
    let status = response.exit_status();
    let expected = match code {
        "OK" => 0,
        "CONTRACT_UNREADABLE" => 3,
        "CONTRACT_INVALID" => 4,
        "CONTRACT_MISSING_FIELD" => 5,
        "REPO_UNAVAILABLE" => 6,
        "INVALID_REQUEST" => 7,
        other => panic!("code {other} for a request that names no contract: {line}"),
    };
    assert_eq!(status, expected, "{line}");
    if serde_json::from_slice::<Value>(data).is_err() {
        assert_eq!(code, "INVALID_REQUEST", "{line}");
    }
}

/// Whether `data` is a JSON object whose `contract` names an existing file.
fn names_an_existing_contract(data: &[u8]) -> bool {
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(data) else {
        return false;
    };
    object
        .get("contract")
        .and_then(Value::as_str)
        .is_some_and(|path| std::path::Path::new(path).exists())
}
