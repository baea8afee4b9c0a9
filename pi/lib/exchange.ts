/**
 * One request to `satyrn-host protocol`, one response: the transport of the edit tool.
 *
 * The child gets the request on stdin and must answer with exactly one JSON line on
 * stdout. It runs in a process group of its own: a deadline (default 30 s) sends SIGTERM to
 * the whole group, then SIGKILL after a grace period (default 2 s), so a descendant that
 * holds the pipes cannot overrun the deadline or be orphaned. The outcome is reported only
 * after the child has closed (exited and its pipes drained), and every asynchronous
 * stdin/stdout/stderr error is contained.
 */

import { spawn as nodeSpawn, type ChildProcess, type SpawnOptions } from "node:child_process";

/** The largest response accepted by default: 1 MiB. */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

/** How a child is started; injectable for tests. */
export type Spawner = (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

export interface ExchangeOptions {
  /** Milliseconds before SIGTERM. Default 30 000. */
  deadlineMs?: number;
  /** Milliseconds between SIGTERM and SIGKILL. Default 2 000. */
  graceMs?: number;
  /** Largest stdout accepted, in bytes. Default 1 MiB. */
  maxResponseBytes?: number;
  /** Starts the child. Default `child_process.spawn` (in a new process group). */
  spawn?: Spawner;
}

/**
 * Sends `signal` to the child's process group when `ownGroup` (we started it detached, so
 * its PID is the group's ID), else to the child alone; an already-gone group or child is
 * not an error.
 */
function stop(child: ChildProcess, signal: NodeJS.Signals, ownGroup: boolean): void {
  if (ownGroup && child.pid !== undefined) {
    try {
      process.kill(-child.pid, signal);
      return;
    } catch {
      // the group is gone; fall through to the child itself
    }
  }
  try {
    child.kill(signal);
  } catch {
    // already gone
  }
}

/** A well-formed protocol response. */
export interface ProtocolResponse {
  version: 1;
  ok: boolean;
  code: string;
  message: string;
  result: Record<string, unknown> | null;
}

/** What one exchange produced. `transport` means the edit may or may not have happened. */
export type ExchangeOutcome =
  | { kind: "response"; response: ProtocolResponse; exitCode: number | null }
  | { kind: "transport"; reason: string };

/** Sends `request` to `host protocol` and waits for the child to close. Never rejects. */
export function exchange(host: string, request: unknown, options: ExchangeOptions = {}): Promise<ExchangeOutcome> {
  const deadlineMs = options.deadlineMs ?? 30_000;
  const graceMs = options.graceMs ?? 2_000;
  const maxBytes = options.maxResponseBytes ?? MAX_RESPONSE_BYTES;
  const spawn = options.spawn ?? nodeSpawn;
  // Only a child we started ourselves is known to lead its own group.
  const ownGroup = options.spawn === undefined;
  return new Promise<ExchangeOutcome>((resolve) => {
    let child: ChildProcess;
    try {
      child = spawn(host, ["protocol"], { stdio: ["pipe", "pipe", "pipe"], detached: true });
    } catch (error) {
      resolve({ kind: "transport", reason: `cannot start satyrn-host: ${describe(error)}` });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failure: string | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    const fail = (reason: string) => {
      if (failure !== undefined) return;
      failure = reason;
      stop(child, "SIGTERM", ownGroup);
      killTimer = setTimeout(() => stop(child, "SIGKILL", ownGroup), graceMs);
    };
    const deadline = setTimeout(() => fail(`satyrn-host did not answer within ${deadlineMs} ms`), deadlineMs);
    let settled = false;
    const settle = (outcome: ExchangeOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      if (killTimer !== undefined) clearTimeout(killTimer);
      resolve(outcome);
    };
    child.on("error", (error) => {
      fail(`satyrn-host failed: ${describe(error)}`);
      // No pid: the spawn itself failed, so no child exists and no `close` may follow.
      if (child.pid === undefined) settle({ kind: "transport", reason: failure ?? describe(error) });
    });
    child.stdin?.on("error", (error) => fail(`writing the request failed: ${describe(error)}`));
    child.stdout?.on("error", (error) => fail(`reading the response failed: ${describe(error)}`));
    child.stderr?.on("error", () => {
      // stderr is diagnostics only; its loss does not decide anything
    });
    child.stderr?.resume();
    child.stdout?.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        fail(`satyrn-host answered more than ${maxBytes} bytes`);
        return;
      }
      chunks.push(chunk);
    });
    child.on("close", (code, signal) => {
      if (failure !== undefined) {
        settle({ kind: "transport", reason: failure });
        return;
      }
      if (signal !== null) {
        settle({ kind: "transport", reason: `satyrn-host was killed by ${signal}` });
        return;
      }
      const parsed = parseResponse(Buffer.concat(chunks).toString("utf8"));
      if (typeof parsed === "string") {
        settle({ kind: "transport", reason: `malformed response from satyrn-host: ${parsed}` });
        return;
      }
      settle({ kind: "response", response: parsed, exitCode: code });
    });
    try {
      child.stdin?.end(JSON.stringify(request));
    } catch (error) {
      fail(`writing the request failed: ${describe(error)}`);
    }
  });
}

/** Parses exactly one response line; returns why it is malformed otherwise. */
export function parseResponse(stdout: string): ProtocolResponse | string {
  if (!stdout.endsWith("\n") || stdout.indexOf("\n") !== stdout.length - 1) {
    return "expected exactly one line";
  }
  let value: unknown;
  try {
    value = JSON.parse(stdout);
  } catch {
    return "not JSON";
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "not an object";
  const v = value as Record<string, unknown>;
  if (v.version !== 1) return "wrong version";
  if (typeof v.ok !== "boolean" || typeof v.code !== "string" || typeof v.message !== "string") {
    return "missing ok/code/message";
  }
  if (v.ok !== (v.code === "OK")) return "ok and code disagree";
  const result = v.result;
  if (result !== null && (typeof result !== "object" || Array.isArray(result))) return "malformed result";
  if (v.ok && result === null) return "a success without a result";
  return { version: 1, ok: v.ok, code: v.code, message: v.message, result: result as Record<string, unknown> | null };
}

export function describe(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
