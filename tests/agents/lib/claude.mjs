/**
 * Claude Code (`@anthropic-ai/claude-code`) in print mode against the scripted model, with
 * satyrn as its only MCP server and every built-in tool that can write a file or run a command
 * disallowed.
 */

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bin, clientEnv, run, SERVER } from "./harness.mjs";
import { PWNED } from "./story.mjs";

/** The name under which Claude Code offers an MCP tool to the model. */
export const tool = (name) => `mcp__${SERVER}__${name}`;

/**
 * Built-ins that can write files or run commands. `EnterWorktree` is not permission-gated, so
 * it must be disallowed explicitly.
 */
export const DISALLOWED = ["Edit", "Write", "NotebookEdit", "Bash", "EnterWorktree", "Read", "Glob", "Grep"];

/**
 * Writes an `mcp.json` naming satyrn's MCP server; Claude Code starts it in its own working
 * directory.
 * @param {string} path
 * @param {{ command: string, args: string[] }} server
 */
export function writeMcpConfig(path, { command, args }) {
  writeFileSync(path, JSON.stringify({ mcpServers: { [SERVER]: { type: "stdio", command, args } } }, null, 2));
}

/** The `claude` arguments after the prompt. */
export function claudeArgs(mcpConfig) {
  return [
    "--mcp-config",
    mcpConfig,
    "--strict-mcp-config",
    "--allowedTools",
    ["read", "edit", "list", "search", "write", "delete", "boundary"].map(tool).join(","),
    "--disallowedTools",
    DISALLOWED.join(","),
  ];
}

/** The environment: the scripted model, no updater, no other traffic, MCP tools offered directly. */
export function claudeEnv(home, configDir, modelUrl) {
  mkdirSync(configDir, { recursive: true });
  return clientEnv(home, {
    CLAUDE_CONFIG_DIR: configDir,
    ANTHROPIC_BASE_URL: modelUrl,
    ANTHROPIC_API_KEY: "scripted-key",
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    ENABLE_TOOL_SEARCH: "false",
  });
}

/**
 * Runs `claude -p PROMPT` in `cwd`.
 * @param {{ home: string, configDir: string, modelUrl: string, mcpConfig: string, cwd: string,
 *   prompt: string, timeoutMs?: number }} o
 */
export function claudePrint({ home, configDir, modelUrl, mcpConfig, cwd, prompt, timeoutMs = 120_000 }) {
  return run(bin("claude"), ["-p", prompt, ...claudeArgs(mcpConfig)], {
    cwd,
    env: claudeEnv(home, configDir, modelUrl),
    timeoutMs,
  });
}

/**
 * Forced calls of Claude Code's own write/exec tools, each creating `PWNED` if it ran, and how
 * Claude Code words the refusal of a disallowed tool.
 */
export const CLAUDE_BUILTINS = [
  {
    name: "Write",
    arguments: (repo) => ({ file_path: join(repo, PWNED), content: "written by a built-in\n" }),
    refusal: /No such tool available: Write/,
  },
  {
    name: "Bash",
    arguments: (repo) => ({ command: `touch ${join(repo, PWNED)}`, description: "create a file" }),
    refusal: /No such tool available: Bash/,
  },
];

/** Claude Code's names for an MCP tool, and one forced built-in (default `Write`). */
export function claudeClient(builtin = CLAUDE_BUILTINS[0]) {
  return {
    mcp: (name) => ({ name: tool(name) }),
    builtin: (repo) => ({ name: builtin.name, arguments: builtin.arguments(repo) }),
    refusal: builtin.refusal,
  };
}
export const CLAUDE = claudeClient();
