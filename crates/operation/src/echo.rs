//! What a message repeats of the request: never more than a short, bounded echo of any text
//! the request spelled, however long it was or however JSON escapes it.

/// The most characters of the request's own text that a message repeats.
pub const MAX_ECHO_CHARS: usize = 64;

/// `s` for a message: cut to [`MAX_ECHO_CHARS`] characters, so that no input, however
/// long (or made of characters JSON escapes to six bytes), makes a long response.
pub fn echo(s: &str) -> String {
    match s.char_indices().nth(MAX_ECHO_CHARS) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}… ({} bytes)", &s[..cut], s.len()),
    }
}

/// Where in the arguments a deserialization failed, e.g. `edits[2].new_text`, each key cut
/// like [`echo`]; without its last segment when `parent`.
pub fn field_path(path: &serde_path_to_error::Path, parent: bool) -> String {
    use serde_path_to_error::Segment;
    let segments: Vec<&Segment> = path.iter().collect();
    let keep = if parent {
        segments.len().saturating_sub(1)
    } else {
        segments.len()
    };
    let mut out = String::new();
    for segment in &segments[..keep] {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&echo(key));
            }
            Segment::Unknown => out.push_str(".?"),
        }
    }
    out
}

/// `message` with each part serde quotes in backticks (an unknown field or variant, as the
/// request spelled it) cut like [`echo`].
pub fn echo_quoted(message: &str) -> String {
    message
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                echo(part)
            } else {
                part.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("`")
}

/// serde_json's explanation, whose quoted value (written with Rust's escapes, up to ten
/// bytes per input byte) is cut like [`echo`]; the position is kept.
pub fn json_error(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    let what = full.strip_suffix(&position).unwrap_or(&full);
    format!(
        "{}{}",
        echo_long(what),
        if e.line() == 0 { "" } else { &position }
    )
}

/// Like [`echo`], but keeping both ends ([`MAX_ECHO_CHARS`] × 2 characters each), so
/// serde_json's own words around the value (`invalid type: …, expected …`) survive.
pub fn echo_long(s: &str) -> String {
    let keep = 2 * MAX_ECHO_CHARS;
    let count = s.chars().count();
    if count <= 2 * keep {
        return s.to_string();
    }
    let head: String = s.chars().take(keep).collect();
    let tail: String = s.chars().skip(count - keep).collect();
    format!("{head} … {tail}")
}
