//! The contract parser (`satyrn_contract::parse`): any bytes give a contract or a
//! named refusal, never a panic, in time linear in the input (libFuzzer's `-timeout`
//! catches a slow one).
//!
//! A contract that parses has a non-empty `id` and `task` and non-empty patterns, and
//! survives a round trip: written back as YAML with every value double-quoted (escaping
//! what is not printable), it parses to the same contract.
use satyrn_contract::{self as contract, Contract};

/// The target's checks on one input; panics on a violation.
pub fn check(data: &[u8]) {
    let Ok(parsed) = contract::parse(data) else {
        return;
    };
    assert!(!parsed.id.is_empty() && !parsed.task.is_empty());
    assert!(parsed.writable_paths.iter().all(|p| !p.is_empty()));
    let written = write(&parsed);
    match contract::parse(written.as_bytes()) {
        Ok(again) => assert_eq!(again, parsed, "round trip through {written:?}"),
        Err(e) => panic!("{written:?} does not parse back: {e}"),
    }
}

fn write(c: &Contract) -> String {
    let mut out = format!("id: {}\ntask: {}\n", quote(&c.id), quote(&c.task));
    if c.writable_paths.is_empty() {
        out.push_str("writable_paths: []\n");
    }
    for (i, p) in c.writable_paths.iter().enumerate() {
        if i == 0 {
            out.push_str("writable_paths:\n");
        }
        out.push_str(&format!("  - {}\n", quote(p)));
    }
    out
}

/// A YAML double-quoted scalar: printable ASCII and non-ASCII as is, the rest escaped.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            '\u{a0}'..='\u{2027}' | '\u{202a}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' => {
                out.push(c)
            }
            c if u32::from(c) <= 0xffff => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push_str(&format!("\\U{:08x}", u32::from(c))),
        }
    }
    out.push('"');
    out
}
