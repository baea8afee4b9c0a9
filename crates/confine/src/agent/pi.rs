//! Pi: `PI_CODING_AGENT_DIR` = `SCRATCH_HOME/.pi/agent`.
//!
//! - `models.json`, `auth.json`: copies of the user's ([`CARRIED_AGENT_FILES`], from
//!   `PI_CODING_AGENT_DIR`, else `~/.pi/agent`); nothing else of it (no `settings.json`
//!   packages, extensions, skills or prompts).
//! - `extensions/`: satyrn's Pi package ([`EXTENSION_FILES`]), which Pi discovers there.
//!   Its tools `read`, `edit`, `write`, `ls`, `find`, `grep` replace Pi's built-ins of the
//!   same names and `delete` is added; Pi keeps its `bash`, which the kernel holds.
//! - `AGENTS.md`: the note ([`super::note`]), then the user's own `AGENTS.md`.
//! - the mutation context satyrn's tools need (`SATYRN_MUTATION_CONTEXT_FILE`: the
//!   worktree, the frozen contract, no starting revisions: the tools learn each revision
//!   from a read) and `SATYRN_HOST_BIN`.
//!
//! The model endpoints are the `baseUrl`s of the providers in `models.json`, and 443 for
//! Pi's built-in providers.

use serde_json::Value;

use super::{Agent, Carrier, Context, Setup, User, note};
use satyrn_attempt::context::{CONTEXT_FILE_VAR, encode};
use satyrn_attempt::pi::{AGENT_DIR_VAR, CARRIED_AGENT_FILES, EXTENSION_FILES};
use satyrn_code::Failure;

const AGENT: Agent = Agent::Pi;

/// How Pi names one of satyrn's tools to the model.
fn tool(name: &str) -> String {
    format!("`{name}`")
}

pub(super) fn prepare(context: &Context<'_>, user: &User<'_>) -> Result<Setup, Failure> {
    let mut setup = Setup::default();
    let pi = context.scratch_home.join(".pi");
    let dir = pi.join("agent");
    let mut carrier = Carrier::open(AGENT, user, dir.clone(), context)?;
    for name in CARRIED_AGENT_FILES {
        carrier.copy(name)?;
    }
    let models = carrier.peek("models.json")?;
    carrier.instructions("AGENTS.md", note::text(&tool, context.scratch_paths))?;
    let extensions = dir.join("extensions");
    for (rel, contents) in EXTENSION_FILES {
        let path = extensions.join(rel);
        if let Some(parent) = path.parent() {
            super::private_dir(AGENT, parent)?;
        }
        super::private_file(AGENT, &path, contents.as_bytes())?;
    }
    let contract = pi.join("contract.yaml");
    super::private_file(AGENT, &contract, context.contract_bytes)?;
    let context_file = pi.join("context.json");
    let bytes = encode(
        context.worktree,
        &contract,
        &std::collections::BTreeMap::new(),
    )
    .map_err(|e| super::refused(AGENT, format!("cannot encode the context: {e}")))?;
    super::private_file(AGENT, &context_file, &bytes)?;

    setup.ports = endpoints(models.as_deref())?;
    setup.env.extend([
        (AGENT_DIR_VAR.into(), dir.into()),
        (CONTEXT_FILE_VAR.into(), context_file.into()),
        ("SATYRN_HOST_BIN".into(), context.host.into()),
        // jiti (Pi's TypeScript loader) would cache compiled extensions on disk.
        ("JITI_FS_CACHE".into(), "false".into()),
    ]);
    setup.summary = carrier.summary(
        AGENT_DIR_VAR,
        "satyrn's Pi package in extensions/, its tools replacing Pi's file tools; Pi keeps bash",
    );
    Ok(setup)
}

/// The ports of every provider's `baseUrl` in `models.json`, and 443. A `models.json`
/// that does not parse, or a `baseUrl` whose port cannot be derived, is refused (the
/// network rule would otherwise be decided on a guess).
fn endpoints(models: Option<&[u8]>) -> Result<Vec<u16>, Failure> {
    let mut ports = vec![443];
    let Some(bytes) = models else {
        return Ok(ports);
    };
    let parsed: Value = serde_json::from_slice(bytes)
        .map_err(|e| super::refused(AGENT, format!("models.json: {e}")))?;
    if let Some(providers) = parsed.get("providers").and_then(Value::as_object) {
        for provider in providers.values() {
            match provider.get("baseUrl") {
                None => {}
                Some(Value::String(url)) => ports.push(super::endpoint_port(AGENT, url)?),
                Some(other) => {
                    return Err(super::refused(
                        AGENT,
                        format!("models.json: a baseUrl that is not a string: {other}"),
                    ));
                }
            }
        }
    }
    ports.sort_unstable();
    ports.dedup();
    Ok(ports)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_provider_s_port_and_443_or_a_refusal() {
        let models = br#"{"providers":{"a":{"baseUrl":"http://127.0.0.1:7000/v1"},"b":{"baseUrl":"https://x.example"},"c":{}}}"#;
        assert_eq!(super::endpoints(Some(models)).unwrap(), vec![443, 7000]);
        assert_eq!(super::endpoints(None).unwrap(), vec![443]);
        assert!(super::endpoints(Some(b"not json")).is_err());
        assert!(super::endpoints(Some(br#"{"providers":{"a":{"baseUrl":"ftp://x"}}}"#)).is_err());
        assert!(super::endpoints(Some(br#"{"providers":{"a":{"baseUrl":7}}}"#)).is_err());
    }
}
