//! Codex CLI: `CODEX_HOME` = `SCRATCH_HOME/.codex`.
//!
//! - `config.toml`: the user's (`$CODEX_HOME/config.toml`, else `~/.codex/config.toml`),
//!   without its `[projects]` trust (so no repository's own `.codex/config.toml` is read),
//!   with every `[mcp_servers]` entry replaced by satyrn's (its tools approved up front),
//!   `approval_policy = "never"` and `sandbox_mode = "danger-full-access"`: Codex's own
//!   sandbox would refuse the writes the contract allows (its scratch paths) and hide the
//!   kernel's answers behind its own; the kernel is the sandbox.
//! - `auth.json`: a copy of the user's (an API key or a ChatGPT login).
//! - `AGENTS.md`: the note ([`super::note`]), then the user's own `AGENTS.md`.
//!
//! The model endpoint is the chosen provider's `base_url` (`model_provider`, default
//! `openai`), else `OPENAI_BASE_URL`, else `https://api.openai.com`.

use std::path::Path;

use toml_edit::{Array, DocumentMut, Item, Table, value};

use super::{Agent, Carrier, Context, SERVER, Setup, User, note};
use satyrn_code::Failure;

const AGENT: Agent = Agent::Codex;

/// How Codex names one of satyrn's tools to the model: a function of the MCP server's
/// Responses namespace.
fn tool(name: &str) -> String {
    format!("`{name}` (namespace `mcp__{SERVER}`)")
}

pub(super) fn prepare(context: &Context<'_>, user: &User<'_>) -> Result<Setup, Failure> {
    let mut setup = Setup::default();
    let dir = context.scratch_home.join(".codex");
    let mut carrier = Carrier::open(AGENT, user, dir.clone(), context)?;
    let mut document = DocumentMut::new();
    if let Some(bytes) = carrier.read("config.toml")? {
        let text = String::from_utf8(bytes)
            .map_err(|_| super::refused(AGENT, "the user's config.toml is not UTF-8"))?;
        document = text
            .parse()
            .map_err(|e| super::refused(AGENT, format!("the user's config.toml: {e}")))?;
    }
    carrier.copy("auth.json")?;
    carrier.instructions("AGENTS.md", note::text(&tool, context.scratch_paths))?;
    configure(&mut document, context.host);
    let endpoint = endpoint(&document, user);
    carrier.write("config.toml", document.to_string().as_bytes())?;
    setup.ports.push(super::endpoint_port(AGENT, &endpoint)?);
    setup.env.push(("CODEX_HOME".into(), dir.into()));
    setup.summary = carrier.summary(
        "CODEX_HOME",
        &format!(
            "satyrn its only MCP server, approvals and Codex's sandbox off, no project trusted); model endpoint {endpoint}"
        ),
    );
    Ok(setup)
}

/// satyrn's server instead of the user's, no approval prompts, no second sandbox.
fn configure(document: &mut DocumentMut, host: &Path) {
    let mut server = Table::new();
    server.insert("command", value(host.to_string_lossy().as_ref()));
    let mut args = Array::new();
    args.push("mcp");
    server.insert("args", value(args));
    // Codex starts an MCP server with a filtered environment: the broker's variables must
    // be named to reach `satyrn-host mcp`.
    let mut forwarded = Array::new();
    forwarded.push(crate::broker::SOCKET_VAR);
    forwarded.push(crate::broker::SECRET_VAR);
    server.insert("env_vars", value(forwarded));
    server.insert("default_tools_approval_mode", value("approve"));
    let mut servers = Table::new();
    servers.set_implicit(true);
    servers.insert(SERVER, Item::Table(server));
    document.insert("mcp_servers", Item::Table(servers));
    document.insert("approval_policy", value("never"));
    document.insert("sandbox_mode", value("danger-full-access"));
    // No project is trusted, so Codex reads no repository's `.codex/config.toml` (whose
    // MCP servers, `notify` or model provider would act at start).
    document.remove("projects");
}

/// The model endpoint Codex will call.
fn endpoint(document: &DocumentMut, user: &User<'_>) -> String {
    let provider = document
        .get("model_provider")
        .and_then(Item::as_str)
        .unwrap_or("openai");
    let configured = document
        .get("model_providers")
        .and_then(|p| p.get(provider))
        .and_then(|p| p.get("base_url"))
        .and_then(Item::as_str);
    match configured {
        Some(url) => url.to_owned(),
        None => user
            .var("OPENAI_BASE_URL")
            .map(|v| v.to_string_lossy().into_owned())
            .unwrap_or_else(|| "https://api.openai.com/v1".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn the_user_s_servers_are_replaced_and_the_rest_is_kept() {
        let mut document: toml_edit::DocumentMut = r#"
model = "gpt-x"
model_provider = "local"
sandbox_mode = "read-only"

[model_providers.local]
base_url = "http://127.0.0.1:9999/v1"
wire_api = "responses"

[mcp_servers.other]
command = "other-server"

[projects."/work/repo"]
trust_level = "trusted"
"#
        .parse()
        .unwrap();
        super::configure(&mut document, Path::new("/opt/satyrn-host"));
        let text = document.to_string();
        let parsed: toml_edit::DocumentMut = text.parse().unwrap();
        assert_eq!(parsed["model"].as_str(), Some("gpt-x"));
        assert_eq!(parsed["sandbox_mode"].as_str(), Some("danger-full-access"));
        assert_eq!(parsed["approval_policy"].as_str(), Some("never"));
        assert!(parsed["mcp_servers"].get("other").is_none(), "{text}");
        assert!(parsed.get("projects").is_none(), "{text}");
        assert_eq!(
            parsed["mcp_servers"]["satyrn"]["command"].as_str(),
            Some("/opt/satyrn-host")
        );
        assert_eq!(
            parsed["model_providers"]["local"]["base_url"].as_str(),
            Some("http://127.0.0.1:9999/v1")
        );
    }
}
