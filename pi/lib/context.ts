/**
 * The mutation context an attempt hands to Pi.
 *
 * `SATYRN_MUTATION_CONTEXT_FILE` names a private file (written by `satyrn-host attempt`,
 * mode 0600) holding `{"version":1,"repo":ABS,"contract":ABS,"revisions":{PATH:SHA256}}`,
 * and `SATYRN_HOST_BIN` the absolute path of the `satyrn-host` binary to call. A file, not
 * an environment string: the revision map of a large repository is far over the kernel's
 * 128 KiB limit of one environment string. Anything else — absent, unreadable, not a
 * regular file, over 64 MiB, malformed, another version — is "no context": the package then
 * registers nothing and an ordinary Pi session keeps its built-in tools.
 *
 * Inside a confined run (`satyrn-host confine`, as `attempt` runs Pi by default)
 * `SATYRN_BROKER` names the run's broker and `SATYRN_BROKER_SECRET` holds its secret: the
 * tools then send their requests over one broker connection (lib/channel.ts). A broker
 * without a well-formed secret is "no context" too, so the guard (lib/guard.ts) blocks
 * every tool call rather than let one reach Pi's built-ins.
 */

import { closeSync, constants, fstatSync, openSync, readFileSync } from "node:fs";
import { isAbsolute } from "node:path";

/** The context file variable's name. */
export const CONTEXT_VAR = "SATYRN_MUTATION_CONTEXT_FILE";
/** The inline context of earlier versions: never read, but it still marks an attempt. */
export const LEGACY_CONTEXT_VAR = "SATYRN_MUTATION_CONTEXT";
/** The host binary variable's name. */
export const HOST_VAR = "SATYRN_HOST_BIN";
/** The confined run's broker socket variable (crates/confine/src/broker.rs). */
export const BROKER_VAR = "SATYRN_BROKER";
/** The confined run's broker secret variable: 64 hexadecimal digits. */
export const BROKER_SECRET_VAR = "SATYRN_BROKER_SECRET";
/** The largest context file read: 64 MiB, as `satyrn-host attempt` writes at most. */
export const MAX_CONTEXT_BYTES = 64 * 1024 * 1024;

/** Whether `env` is an attempt's (a context variable is set at all, even malformed). */
export function inAttempt(env: NodeJS.ProcessEnv): boolean {
  return env[CONTEXT_VAR] !== undefined || env[LEGACY_CONTEXT_VAR] !== undefined;
}

/** Reads a regular file of at most `max` bytes without blocking on a FIFO; throws otherwise. */
export function readBounded(path: string, max: number): string {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error("not a regular file");
    if (st.size > max) throw new Error(`larger than ${max} bytes`);
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}

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
  /** The confined run's broker, when there is one. */
  readonly broker?: { readonly socket: string; readonly secret: string };
}

export type ContextResult =
  | { ok: true; context: MutationContext }
  | { ok: false; reason: string };

const SHA256 = /^[0-9a-f]{64}$/;

/** Reads and validates the context named by an environment. Never throws. */
export function parseContext(env: NodeJS.ProcessEnv): ContextResult {
  const file = env[CONTEXT_VAR];
  if (file === undefined || file === "") return { ok: false, reason: `${CONTEXT_VAR} is not set` };
  if (!isAbsolute(file)) return { ok: false, reason: `${CONTEXT_VAR} must be an absolute path` };
  let raw: string;
  try {
    raw = readBounded(file, MAX_CONTEXT_BYTES);
  } catch (error) {
    return { ok: false, reason: `${CONTEXT_VAR}: cannot read ${file}: ${error instanceof Error ? error.message : String(error)}` };
  }
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
  const socket = env[BROKER_VAR];
  if (socket === undefined || socket === "") {
    return { ok: true, context: { version: 1, repo: v.repo, contract: v.contract, revisions, host } };
  }
  const secret = env[BROKER_SECRET_VAR];
  if (!isAbsolute(socket)) return { ok: false, reason: `${BROKER_VAR} must be an absolute path` };
  if (secret === undefined || !/^[0-9a-f]{64}$/.test(secret)) {
    return { ok: false, reason: `${BROKER_VAR} is set but ${BROKER_SECRET_VAR} is not 64 hexadecimal digits` };
  }
  return {
    ok: true,
    context: { version: 1, repo: v.repo, contract: v.contract, revisions, host, broker: { socket, secret } },
  };
}

/**
 * satyrn's tools, exactly the names `satyrn-host attempt` passes to Pi's `--tools`
 * (crates/attempt/src/pi.rs). Inside an attempt engine.ts blocks every other tool name, and
 * every call at all until mutator.ts has registered all of these.
 */
export const SATYRN_TOOLS: readonly string[] = ["read", "edit", "ls", "find", "grep", "write", "delete", "apply_patch"];

/**
 * The process-wide marker mutator.ts sets once all of its tools ([`SATYRN_TOOLS`]) are
 * registered. engine.ts blocks every tool call of an attempt without it: Pi's `--tools`
 * allow-list would otherwise hand the model Pi's unconfined built-ins (`read`, `edit`,
 * `ls`, `find`, `grep`, `write`).
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
