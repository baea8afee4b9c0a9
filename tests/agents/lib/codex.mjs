/**
 * Codex CLI (`@openai/codex`) against the scripted model, with satyrn as its only MCP server
 * and its own exec tools switched off.
 */

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bin, clientEnv, run, SERVER } from "./harness.mjs";
import { PWNED } from "./story.mjs";

/** The Responses namespace under which Codex offers the MCP server's tools. */
export const NAMESPACE = `mcp__${SERVER}`;

/** A TOML basic string. */
const toml = (s) => JSON.stringify(s);

/**
 * Writes `CODEX_HOME/config.toml`: the scripted provider (Responses wire API), no approvals,
 * the read-only sandbox, and satyrn's MCP server (`command args`, run in `cwd`) whose tools are
 * approved up front (otherwise a tool marked destructive fails: "MCP tool call requires
 * approval").
 * @param {string} codexHome
 * @param {{ modelUrl: string, command: string, args: string[], cwd: string }} options
 */
export function writeCodexHome(codexHome, { modelUrl, command, args, cwd }) {
  mkdirSync(codexHome, { recursive: true });
  const config = [
    'model = "scripted"',
    'model_provider = "scripted"',
    'approval_policy = "never"',
    'sandbox_mode = "read-only"',
    "",
    "[model_providers.scripted]",
    'name = "scripted"',
    `base_url = ${toml(`${modelUrl}/v1`)}`,
    'wire_api = "responses"',
    "",
    `[mcp_servers.${SERVER}]`,
    `command = ${toml(command)}`,
    `args = [${args.map(toml).join(", ")}]`,
    `cwd = ${toml(cwd)}`,
    'default_tools_approval_mode = "approve"',
    "",
  ].join("\n");
  writeFileSync(join(codexHome, "config.toml"), config);
}

/** The `codex exec` arguments: no shell tool, no unified exec, non-interactive. */
export const CODEX_EXEC_ARGS = ["exec", "--disable", "shell_tool", "--disable", "unified_exec"];

/**
 * Runs `codex exec PROMPT` in `cwd` (a git repository) with `CODEX_HOME`.
 * @param {{ codexHome: string, home: string, cwd: string, prompt: string, timeoutMs?: number }} o
 */
export function codexExec({ codexHome, home, cwd, prompt, timeoutMs = 120_000 }) {
  return run(bin("codex"), [...CODEX_EXEC_ARGS, prompt], {
    cwd,
    env: clientEnv(home, { CODEX_HOME: codexHome }),
    timeoutMs,
  });
}

/**
 * Forced calls of Codex's own write/exec tools, each creating `PWNED` if it ran, and how Codex
 * words the refusal once the tool is switched off.
 */
export const CODEX_BUILTINS = [
  {
    name: "apply_patch",
    arguments: { input: `*** Begin Patch\n*** Add File: ${PWNED}\n+written by a built-in\n*** End Patch\n` },
    refusal: /^unsupported call: apply_patch/,
  },
  { name: "exec_command", arguments: { cmd: `touch ${PWNED}` }, refusal: /^unsupported call: exec_command/ },
  { name: "shell", arguments: { command: ["bash", "-lc", `touch ${PWNED}`] }, refusal: /^unsupported call: shell/ },
];

/** Codex's Responses names for an MCP tool, and one forced built-in (default `apply_patch`). */
export function codexClient(builtin = CODEX_BUILTINS[0]) {
  return {
    mcp: (name) => ({ namespace: NAMESPACE, name }),
    builtin: () => ({ name: builtin.name, arguments: builtin.arguments }),
    refusal: builtin.refusal,
  };
}
export const CODEX = codexClient();
