/**
 * The mutation context an attempt hands to Pi.
 *
 * `SATYRN_MUTATION_CONTEXT` holds `{"version":1,"repo":ABS,"contract":ABS,"revisions":{PATH:SHA256}}`
 * and `SATYRN_HOST_BIN` the absolute path of the `satyrn-host` binary to call. Anything
 * else — absent, malformed, another version — is "no context": the package then registers
 * nothing and an ordinary Pi session keeps its built-in tools.
 */

import { isAbsolute } from "node:path";

/** The context variable's name. */
export const CONTEXT_VAR = "SATYRN_MUTATION_CONTEXT";
/** The host binary variable's name. */
export const HOST_VAR = "SATYRN_HOST_BIN";

/** A validated mutation context. */
export interface MutationContext {
  readonly version: 1;
  /** Absolute worktree root. */
  readonly repo: string;
  /** Absolute path of the frozen contract. */
  readonly contract: string;
  /** Revision (SHA-256) of each declared file at the start of the attempt. */
  readonly revisions: ReadonlyMap<string, string>;
  /** Absolute path of `satyrn-host`. */
  readonly host: string;
}

export type ContextResult =
  | { ok: true; context: MutationContext }
  | { ok: false; reason: string };

const SHA256 = /^[0-9a-f]{64}$/;

/** Reads and validates the context from an environment. Never throws. */
export function parseContext(env: NodeJS.ProcessEnv): ContextResult {
  const raw = env[CONTEXT_VAR];
  if (raw === undefined || raw === "") return { ok: false, reason: `${CONTEXT_VAR} is not set` };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { ok: false, reason: `${CONTEXT_VAR} is not JSON` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, reason: `${CONTEXT_VAR} is not a JSON object` };
  }
  const v = value as Record<string, unknown>;
  const known = new Set(["version", "repo", "contract", "revisions"]);
  for (const key of Object.keys(v)) {
    if (!known.has(key)) return { ok: false, reason: `${CONTEXT_VAR} has an unknown field \`${key}\`` };
  }
  if (v.version !== 1) return { ok: false, reason: `${CONTEXT_VAR} has an unsupported version` };
  if (typeof v.repo !== "string" || !isAbsolute(v.repo)) {
    return { ok: false, reason: `${CONTEXT_VAR}.repo must be an absolute path` };
  }
  if (typeof v.contract !== "string" || !isAbsolute(v.contract)) {
    return { ok: false, reason: `${CONTEXT_VAR}.contract must be an absolute path` };
  }
  if (typeof v.revisions !== "object" || v.revisions === null || Array.isArray(v.revisions)) {
    return { ok: false, reason: `${CONTEXT_VAR}.revisions must be an object` };
  }
  const revisions = new Map<string, string>();
  for (const [path, sha] of Object.entries(v.revisions as Record<string, unknown>)) {
    if (path === "" || typeof sha !== "string" || !SHA256.test(sha)) {
      return { ok: false, reason: `${CONTEXT_VAR}.revisions has a malformed entry` };
    }
    revisions.set(path, sha);
  }
  const host = env[HOST_VAR];
  if (host === undefined || !isAbsolute(host)) {
    return { ok: false, reason: `${HOST_VAR} must be the absolute path of satyrn-host` };
  }
  return {
    ok: true,
    context: { version: 1, repo: v.repo, contract: v.contract, revisions, host },
  };
}

/**
 * The process-wide marker mutator.ts sets once both of its tools (`edit`, `read`) are
 * registered. engine.ts blocks every tool call of an attempt without it: Pi's
 * `--tools read,edit` allow-list would otherwise hand the model Pi's unconfined built-ins.
 * It lives on `globalThis` under a registry symbol because Pi loads each extension as its
 * own module graph (jiti, no module cache), so module state is not shared between them.
 */
const TOOLS_REGISTERED = Symbol.for("satyrn.tools.registered");

/** Records that satyrn's tools are registered in this process. */
export function markToolsRegistered(): void {
  (globalThis as Record<symbol, unknown>)[TOOLS_REGISTERED] = true;
}

/** Whether satyrn's tools are registered in this process. */
export function toolsRegistered(): boolean {
  return (globalThis as Record<symbol, unknown>)[TOOLS_REGISTERED] === true;
}
