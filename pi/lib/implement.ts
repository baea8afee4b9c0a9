/**
 * `/implement CONTRACT`: one delivered attempt for the repository Pi is working in.
 *
 * Runs `satyrn-host deliver --repo ROOT CONTRACT -- satyrn-host attempt --model MODEL CONTRACT`
 * from ROOT, in its own process group, and reports the one receipt. A contract inside the
 * repository (decided by file-system identity) is passed repository-relative (so the
 * attempt reads it from the exact detached base); a contract outside stays absolute. On a
 * deadline or transport failure, delivery is sent SIGTERM (it owns its teardown, so its
 * group is never SIGKILLed), and the outcome is reported only once the direct child has
 * closed and a signal-0 probe of the group reports ESRCH. Nothing here throws.
 */

import { execFile, spawn as nodeSpawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { accessSync, constants, realpathSync, statSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join, relative, resolve } from "node:path";

import { describe } from "./exchange.ts";

export type Spawner = (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

/** The receipt fields /implement reports. */
export interface Receipt {
  outcome: string;
  code: string;
  message: string;
  candidate_ref: string | null;
  candidate_commit: string | null;
  [key: string]: unknown;
}

export type ImplementOutcome =
  | { kind: "receipt"; receipt: Receipt; exitCode: number | null }
  | { kind: "refused"; reason: string };

export interface ImplementOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Milliseconds before delivery is sent SIGTERM. Default: 1 hour. */
  deadlineMs?: number;
  /** Milliseconds between group probes while waiting for teardown. Default 100. */
  probeMs?: number;
  spawn?: Spawner;
  /** Probes a process group with signal 0; default `process.kill(-pgid, 0)`. */
  probeGroup?: (pgid: number) => boolean;
  /**
   * Run the attempt's Pi WITHOUT `satyrn-host confine` (`attempt --unconfined`): an explicit
   * opt-out of the kernel's boundary. Default false: Pi runs confined.
   */
  unconfined?: boolean;
}

/** Runs one /implement. Resolves with a receipt or a refusal; never rejects. */
export async function implement(contractArg: string, options: ImplementOptions): Promise<ImplementOutcome> {
  try {
    const arg = contractArg.trim();
    if (arg === "") return refused("usage: /implement CONTRACT");
    const model = options.env.SATYRN_MODEL;
    if (model === undefined || model === "") return refused("SATYRN_MODEL is not set: /implement needs a reproducible model");
    if (model.startsWith("-")) return refused("SATYRN_MODEL must not start with `-`");
    const host = findHost(options.env);
    if (host === undefined) return refused("satyrn-host was not found: set SATYRN_HOST_BIN or put satyrn-host on PATH");
    const root = await repositoryRoot(options.cwd, options.env);
    if (root === undefined) return refused(`${options.cwd} is not inside a git worktree`);
    const found = contractPath(root, resolve(options.cwd, arg));
    if (found === undefined) return refused(`contract ${arg} does not exist`);
    // Repository-relative only when the detached base has it (a gitignored or untracked
    // contract is not in the attempt's worktree): then absolute, frozen from the caller's.
    const relativeInBase = !isAbsolute(found) && (await inHead(root, found, options.env));
    const contract = relativeInBase ? found : resolve(options.cwd, arg);
    // `./` keeps a name that starts with `-` from being read as an option by deliver.
    const spelled = contract.startsWith("-") ? `./${contract}` : contract;
    const attempt = options.unconfined === true ? ["attempt", "--unconfined"] : ["attempt"];
    const args = ["deliver", "--repo", root, spelled, "--", host, ...attempt, "--model", model, "--", spelled];
    // From the root: a repository-relative contract resolves there, whatever Pi's directory.
    return await runDelivery(host, args, root, options);
  } catch (error) {
    return refused(`unexpected error: ${describe(error)}`);
  }
}

function refused(reason: string): ImplementOutcome {
  return { kind: "refused", reason };
}

/** `SATYRN_HOST_BIN` when absolute, else the first executable `satyrn-host` on PATH. */
export function findHost(env: NodeJS.ProcessEnv): string | undefined {
  const explicit = env.SATYRN_HOST_BIN;
  if (explicit !== undefined && explicit !== "") return isAbsolute(explicit) ? explicit : undefined;
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (dir === "" || !isAbsolute(dir)) continue;
    const candidate = join(dir, "satyrn-host");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** `env` without git's routing variables, with stable messages. */
function gitEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = { ...env, LC_ALL: "C" };
  for (const key of Object.keys(clean)) {
    if (/^GIT_(DIR|WORK_TREE|INDEX_FILE|NAMESPACE|COMMON_DIR|OBJECT_DIRECTORY|ALTERNATE_OBJECT_DIRECTORIES|CEILING_DIRECTORIES|PREFIX)$/.test(key)) {
      delete clean[key];
    }
  }
  return clean;
}

/** The worktree root containing `cwd`, asked of git with routing variables removed. */
function repositoryRoot(cwd: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  return new Promise((done) => {
    execFile("git", ["rev-parse", "--show-toplevel"], { cwd, env: gitEnv(env) }, (error, stdout) => {
      if (error) return done(undefined);
      const root = stdout.replace(/\n$/, "");
      done(root === "" ? undefined : root);
    });
  });
}

/** Whether `HEAD` has the repository-relative file `path` (what a detached worktree of it holds). */
function inHead(root: string, path: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  return new Promise((done) => {
    execFile(
      "git",
      ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "cat-file", "-e", `HEAD:./${path}`],
      { cwd: root, env: gitEnv(env) },
      (error) => done(error === null),
    );
  });
}

/** A file's identity: device and inode. */
export interface FileId {
  dev: bigint;
  ino: bigint;
}

/** Identity of an existing path (following symlinks); throws when it cannot be stat'ed. */
export type StatId = (path: string) => FileId;

const statId: StatId = (path) => {
  const st = statSync(path, { bigint: true });
  return { dev: st.dev, ino: st.ino };
};

/**
 * Repository-relative when the contract is inside the repository, absolute otherwise;
 * undefined when it is missing. Inside is decided by file-system identity, never by string
 * prefix: the canonical contract path's ancestors are compared with the root by (device,
 * inode), so symlinked, bind-mounted and case-folded spellings count, and `..hidden.yaml`
 * is an ordinary name.
 */
export function contractPath(root: string, contract: string): string | undefined {
  let real: string;
  let rootId: FileId;
  try {
    real = realpathSync(contract);
    rootId = statId(root);
  } catch {
    return undefined;
  }
  return relativeInside(real, rootId, statId) ?? contract;
}

/**
 * The path of `real` (canonical, absolute) below the nearest ancestor that is the directory
 * `root` identifies, or undefined when no ancestor is. An ancestor that cannot be stat'ed
 * is not the root.
 */
export function relativeInside(real: string, root: FileId, stat: StatId = statId): string | undefined {
  let ancestor = real;
  for (;;) {
    const parent = dirname(ancestor);
    if (parent === ancestor) return undefined;
    ancestor = parent;
    let id: FileId;
    try {
      id = stat(ancestor);
    } catch {
      continue;
    }
    if (id.dev === root.dev && id.ino === root.ino) return relative(ancestor, real);
  }
}

function runDelivery(host: string, args: string[], root: string, options: ImplementOptions): Promise<ImplementOutcome> {
  const spawn = options.spawn ?? nodeSpawn;
  const deadlineMs = options.deadlineMs ?? 60 * 60 * 1000;
  const probeMs = options.probeMs ?? 100;
  const probeGroup =
    options.probeGroup ??
    ((pgid: number) => {
      try {
        process.kill(-pgid, 0);
        return true;
      } catch (error) {
        return (error as NodeJS.ErrnoException).code !== "ESRCH";
      }
    });
  return new Promise((resolveOutcome) => {
    let child: ChildProcess;
    try {
      child = spawn(host, args, { cwd: root, env: options.env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    } catch (error) {
      resolveOutcome(refused(`cannot start satyrn-host deliver: ${describe(error)}`));
      return;
    }
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let failure: string | undefined;
    let spawned = false;
    let closed: { code: number | null } | undefined;
    let settled = false;
    const settle = (outcome: ImplementOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolveOutcome(outcome);
    };
    const finish = () => {
      if (closed === undefined) return;
      if (failure === undefined) {
        settle(parseReceipt(Buffer.concat(stdout).toString("utf8"), closed.code, Buffer.concat(stderr).toString("utf8")));
        return;
      }
      const pid = child.pid;
      const reason = failure;
      const wait = () => {
        if (pid === undefined || !probeGroup(pid)) settle(refused(reason));
        else setTimeout(wait, probeMs);
      };
      wait();
    };
    const fail = (reason: string) => {
      if (failure !== undefined) return;
      failure = reason;
      if (spawned) {
        try {
          child.kill("SIGTERM");
        } catch {
          // already gone
        }
      }
    };
    const deadline = setTimeout(() => fail(`delivery did not finish within ${deadlineMs} ms`), deadlineMs);
    child.on("spawn", () => {
      spawned = true;
      if (failure !== undefined) {
        try {
          child.kill("SIGTERM");
        } catch {
          // already gone
        }
      }
    });
    child.on("error", (error) => {
      fail(`satyrn-host deliver failed: ${describe(error)}`);
      // Only a spawn error with no pid proves that no child exists.
      if (!spawned && child.pid === undefined) settle(refused(failure ?? describe(error)));
    });
    child.stdout?.on("error", (error) => fail(`reading the receipt failed: ${describe(error)}`));
    child.stderr?.on("error", () => {
      // diagnostics only
    });
    child.stdout?.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr.push(chunk);
      while (stderr.length > 64) stderr.shift();
    });
    child.on("close", (code) => {
      closed = { code };
      finish();
    });
  });
}

/** Reads the one receipt line. */
export function parseReceipt(stdout: string, exitCode: number | null, stderr: string): ImplementOutcome {
  const lines = stdout.split("\n").filter((line) => line !== "");
  if (lines.length !== 1) {
    const tail = stderr.trim().split("\n").slice(-5).join("\n");
    return refused(`satyrn-host deliver printed no receipt (exit ${exitCode})${tail ? `:\n${tail}` : ""}`);
  }
  try {
    const value = JSON.parse(lines[0]) as Receipt;
    if (typeof value !== "object" || value === null || typeof value.code !== "string" || typeof value.outcome !== "string") {
      return refused("satyrn-host deliver printed a malformed receipt");
    }
    return { kind: "receipt", receipt: value, exitCode };
  } catch {
    return refused("satyrn-host deliver printed a receipt that is not JSON");
  }
}

/** One line for the user. */
export function summary(outcome: ImplementOutcome): string {
  if (outcome.kind === "refused") return `satyrn /implement refused: ${outcome.reason}`;
  const r = outcome.receipt;
  if (r.code === "OK") return `satyrn: candidate ${r.candidate_ref} at ${r.candidate_commit}`;
  return `satyrn: ${r.outcome} ${r.code}${r.message ? `: ${r.message}` : ""}`;
}
