/**
 * What every agent test shares: the satyrn-host binary under test, a fresh git repository
 * with a contract, bounded child processes, and byte-level snapshots of files.
 */

import { spawn, spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** This package's directory (`tests/agents`). */
export const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** The satyrn repository root. */
export const ROOT = resolve(PACKAGE_DIR, "..", "..");
/** A client binary installed by `npm ci` in this package. */
export const bin = (name) => join(PACKAGE_DIR, "node_modules", ".bin", name);

/** The MCP server name every client is configured with. */
export const SERVER = "satyrn";

/** `src/a.txt` before and after the story's one allowed edit. */
export const A_BEFORE = "alpha\nbeta\ngamma\n";
export const A_AFTER = "alpha\nBETA, edited through satyrn\ngamma\n";
export const README = "# demo\n\nNot writable by the contract.\n";
/** The contract every test uses. */
export const CONTRACT_YAML = [
  "id: agents-demo",
  "task: |",
  "  Change beta in src/a.txt.",
  "writable_paths:",
  "  - 'src/*.txt'",
  "",
].join("\n");

/**
 * The satyrn-host binary: `SATYRN_TEST_HOST_BIN`, else `<root>/target/debug/satyrn-host`.
 * Throws (the test fails) when it does not exist: no test is skipped silently.
 */
export function hostBin() {
  const path = resolve(process.env.SATYRN_TEST_HOST_BIN ?? join(ROOT, "target", "debug", "satyrn-host"));
  if (!existsSync(path)) {
    throw new Error(`satyrn-host not found at ${path} (build it, or set SATYRN_TEST_HOST_BIN)`);
  }
  return path;
}

/**
 * Runs a program to completion within a deadline, in its own process group; on the deadline
 * the whole group gets SIGKILL and the promise rejects. After a normal exit, whatever is left
 * in the group (an MCP server a client failed to stop) is killed too.
 * @param {string} program
 * @param {string[]} args
 * @param {{ cwd?: string, env?: NodeJS.ProcessEnv, timeoutMs?: number, input?: string }} [options]
 * @returns {Promise<{ code: number | null, signal: string | null, stdout: string, stderr: string }>}
 */
export function run(program, args, options = {}) {
  const { cwd, env = process.env, timeoutMs = 120_000, input } = options;
  return new Promise((resolvePromise, reject) => {
    const child = spawn(program, args, {
      cwd,
      env,
      detached: true,
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    const out = [];
    const err = [];
    child.stdout.on("data", (c) => out.push(c));
    child.stderr.on("data", (c) => err.push(c));
    if (input !== undefined) child.stdin.end(input);
    let timedOut = false;
    const killGroup = () => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // the group is already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutMs);
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      killGroup();
      const result = {
        code,
        signal,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
      };
      if (timedOut) {
        reject(new Error(`${program} ${args.join(" ")}: no exit within ${timeoutMs} ms\n${describe(result)}`));
      } else {
        resolvePromise(result);
      }
    });
  });
}

/** A run's result as text for an assertion message. */
export function describe(result) {
  return `exit ${result.code} signal ${result.signal}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`;
}

/** Runs git synchronously in `cwd`, returning stdout; throws on failure. */
export function git(cwd, ...args) {
  const r = spawnSync("git", args, { cwd, encoding: "utf8", timeout: 30_000 });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout;
}

/**
 * A fresh temporary directory with a git repository (`repo/`: `src/a.txt`, `README.md`, one
 * commit) and the contract beside it (`contract.yaml`, outside the repository so the checkout
 * stays clean). `cleanup()` removes everything.
 */
export function makeFixture() {
  const dir = mkdtempSync(join(tmpdir(), "satyrn-agents-"));
  const repo = join(dir, "repo");
  mkdirSync(join(repo, "src"), { recursive: true });
  writeFileSync(join(repo, "src", "a.txt"), A_BEFORE);
  writeFileSync(join(repo, "README.md"), README);
  git(repo, "init", "-q", "-b", "main");
  git(repo, "config", "user.name", "satyrn tests");
  git(repo, "config", "user.email", "tests@satyrn.invalid");
  git(repo, "config", "commit.gpgsign", "false");
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "fixture");
  const contract = join(dir, "contract.yaml");
  writeFileSync(contract, CONTRACT_YAML);
  const home = join(dir, "home");
  mkdirSync(home);
  return {
    dir,
    repo,
    contract,
    /** A private HOME for the clients, so nothing lands in the real one. */
    home,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Bytes, mode and inode of a path (`null` when it does not exist), for unchanged-proofs. */
export function snapshot(path) {
  if (!existsSync(path)) return null;
  const st = lstatSync(path);
  return { bytes: readFileSync(path).toString("base64"), mode: st.mode, ino: st.ino };
}

/** `git status --porcelain` (untracked files included). */
export function status(repo) {
  return git(repo, "status", "--porcelain", "--untracked-files=all");
}

/** The environment for a client: the machine's, with a private HOME and no git overrides. */
export function clientEnv(home, extra = {}) {
  const env = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, ".config") };
  for (const key of Object.keys(env)) if (key.startsWith("GIT_")) delete env[key];
  return { ...env, ...extra };
}
