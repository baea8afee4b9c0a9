//! Claude Code: `CLAUDE_CONFIG_DIR` = `SCRATCH_HOME/.claude`.
//!
//! - `.claude.json`: satyrn as the only user-scope MCP server.
//! - `settings.json`: the user's (`$CLAUDE_CONFIG_DIR/settings.json`, else
//!   `~/.claude/settings.json`), with satyrn's tools and every built-in that reads, writes
//!   or runs a command allowed without a prompt ([`ALLOWED`]: the kernel decides what they
//!   may do), a `PostToolUseFailure` hook that adds one line naming satyrn's `edit` to a
//!   failed built-in's result, and `ENABLE_TOOL_SEARCH=false` (satyrn's tools are offered
//!   directly, not deferred behind a search) and `DISABLE_AUTOUPDATER=1` in its `env`.
//! - `.credentials.json`: a copy of the user's login, when there is one.
//! - `CLAUDE.md`: the note ([`super::note`]), then the user's own `CLAUDE.md`.
//!
//! The model endpoint is `ANTHROPIC_BASE_URL` (the settings' `env`, which Claude Code applies
//! over the environment, else the environment's), else `https://api.anthropic.com`.

use serde_json::{Map, Value, json};

use super::{Agent, Carrier, Context, SERVER, Setup, User, note};
use satyrn_code::Failure;

const AGENT: Agent = Agent::Claude;

/// The tools allowed without a prompt: satyrn's, and the built-ins that read, write or run
/// a command (their writes fail under the kernel's rules).
pub const ALLOWED: &[&str] = &[
    "mcp__satyrn",
    "Bash",
    "Edit",
    "Write",
    "NotebookEdit",
    "Read",
    "Glob",
    "Grep",
];

/// The built-ins whose failure gets the hint line.
const HINTED: &str = "Bash|Edit|Write|NotebookEdit|MultiEdit";

/// How Claude Code names one of satyrn's tools to the model.
fn tool(name: &str) -> String {
    format!("`mcp__{SERVER}__{name}`")
}

pub(super) fn prepare(context: &Context<'_>, user: &User<'_>) -> Result<Setup, Failure> {
    let mut setup = Setup::default();
    let dir = context.scratch_home.join(".claude");
    let mut carrier = Carrier::open(AGENT, user, dir.clone(), context)?;
    let mut settings = match carrier.read("settings.json")? {
        None => Map::new(),
        Some(bytes) => match serde_json::from_slice(&bytes) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                return Err(super::refused(
                    AGENT,
                    "the user's settings.json is not a JSON object",
                ));
            }
            Err(e) => {
                return Err(super::refused(
                    AGENT,
                    format!("the user's settings.json: {e}"),
                ));
            }
        },
    };
    carrier.copy(".credentials.json")?;
    carrier.instructions("CLAUDE.md", note::text(&tool, context.scratch_paths))?;
    // Claude Code's own installation, when it lives there (`claude migrate-installer`).
    setup.read_back.extend(
        user.in_every_home(".claude/local")
            .into_iter()
            .filter(|p| p.is_dir()),
    );
    configure(&mut settings, &note::hint(&tool));
    let endpoint = endpoint(&settings, user);
    let state = json!({
        "hasCompletedOnboarding": true,
        "mcpServers": { SERVER: {
            "type": "stdio",
            "command": context.host,
            "args": ["mcp"],
        } },
    });
    carrier.write(".claude.json", &pretty(&state))?;
    carrier.write("settings.json", &pretty(&Value::Object(settings)))?;
    setup.ports.push(super::endpoint_port(AGENT, &endpoint)?);
    setup.env.push(("CLAUDE_CONFIG_DIR".into(), dir.into()));
    setup.summary = carrier.summary(
        "CLAUDE_CONFIG_DIR",
        &format!(
            "satyrn its only MCP server, built-ins allowed without prompts); model endpoint {endpoint}"
        ),
    );
    Ok(setup)
}

fn pretty(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// The object under `key`, made one when absent or of another type.
fn object<'m>(map: &'m mut Map<String, Value>, key: &str) -> &'m mut Map<String, Value> {
    let entry = map
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    match entry {
        Value::Object(inner) => inner,
        _ => unreachable!("made an object above"),
    }
}

/// The array under `key`, made one when absent or of another type.
fn array<'m>(map: &'m mut Map<String, Value>, key: &str) -> &'m mut Vec<Value> {
    let entry = map
        .entry(key.to_owned())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !entry.is_array() {
        *entry = Value::Array(Vec::new());
    }
    match entry {
        Value::Array(inner) => inner,
        _ => unreachable!("made an array above"),
    }
}

/// The allow rules, the hint hook and the environment, added to the user's settings.
fn configure(settings: &mut Map<String, Value>, hint: &str) {
    let allow = array(object(settings, "permissions"), "allow");
    for tool in ALLOWED {
        if !allow.iter().any(|v| v.as_str() == Some(tool)) {
            allow.push(Value::from(*tool));
        }
    }
    let output = json!({ "hookSpecificOutput": {
        "hookEventName": "PostToolUseFailure",
        "additionalContext": hint,
    } })
    .to_string();
    let command = format!("printf '%s\\n' {}", shell_quote(&output));
    array(object(settings, "hooks"), "PostToolUseFailure").push(json!({
        "matcher": HINTED,
        "hooks": [{ "type": "command", "command": command }],
    }));
    let env = object(settings, "env");
    env.insert("ENABLE_TOOL_SEARCH".to_owned(), Value::from("false"));
    env.insert("DISABLE_AUTOUPDATER".to_owned(), Value::from("1"));
}

/// `text` as one single-quoted word of `sh`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The model endpoint Claude Code will call: its settings' `env` is applied over the
/// environment, so `ANTHROPIC_BASE_URL` there wins.
fn endpoint(settings: &Map<String, Value>, user: &User<'_>) -> String {
    settings
        .get("env")
        .and_then(|e| e.get("ANTHROPIC_BASE_URL"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            user.var("ANTHROPIC_BASE_URL")
                .map(|v| v.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "https://api.anthropic.com".to_owned())
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    #[test]
    fn the_user_s_settings_are_kept_and_extended() {
        let Value::Object(mut settings) = json!({
            "model": "opus",
            "permissions": { "allow": ["Bash", "WebFetch"], "deny": ["Read(./secrets/**)"] },
            "hooks": { "PostToolUseFailure": [{ "matcher": "Bash", "hooks": [] }] },
            "env": { "FOO": "1" },
        }) else {
            unreachable!()
        };
        super::configure(&mut settings, "it's a hint");
        assert_eq!(settings["model"], "opus");
        let allow: Vec<&str> = settings["permissions"]["allow"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(allow.iter().filter(|t| **t == "Bash").count(), 1);
        assert!(allow.contains(&"WebFetch") && allow.contains(&"mcp__satyrn"));
        assert_eq!(settings["permissions"]["deny"][0], "Read(./secrets/**)");
        let hooks = settings["hooks"]["PostToolUseFailure"].as_array().unwrap();
        assert_eq!(hooks.len(), 2);
        assert_eq!(settings["env"]["FOO"], "1");
        assert_eq!(settings["env"]["ENABLE_TOOL_SEARCH"], "false");
    }

    #[test]
    fn the_hook_prints_its_json_through_sh() {
        let mut settings = Map::new();
        super::configure(&mut settings, "it's a hint: `x` $HOME \"q\"");
        let command = settings["hooks"]["PostToolUseFailure"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .to_owned();
        let out = std::process::Command::new("sh")
            .args(["-c", &command])
            .output()
            .unwrap();
        let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            printed["hookSpecificOutput"]["additionalContext"],
            "it's a hint: `x` $HOME \"q\""
        );
    }
}
