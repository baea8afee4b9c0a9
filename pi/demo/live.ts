/**
 * The gated live check: one delivered attempt against a REAL model. Never run by CI.
 *
 *   SATYRN_LIVE=1 SATYRN_MODEL=provider/model bash scripts/live.sh
 *
 * Uses your ordinary Pi configuration and credentials (PI_CODING_AGENT_DIR or ~/.pi/agent).
 * Passes when delivery creates a candidate whose only changed path is the declared file
 * and the caller's checkout stays clean.
 */

import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

if (process.env.SATYRN_LIVE !== "1" || !process.env.SATYRN_MODEL) {
  process.stderr.write("live check: set SATYRN_LIVE=1 and SATYRN_MODEL=provider/model (and the provider's credentials)\n");
  process.exit(2);
}
const root = resolve(import.meta.dirname, "..", "..");
const host = process.env.SATYRN_HOST_BIN ?? join(root, "target", "release", "satyrn-host");
const base = mkdtempSync(join(tmpdir(), "satyrn-live-"));
try {
  const repo = join(base, "repo");
  mkdirSync(join(repo, "src"), { recursive: true });
  writeFileSync(join(repo, "src", "math.py"), "def add(a, b):\n    return a - b\n");
  writeFileSync(join(repo, "README.md"), "A tiny library.\n");
  const git = (args: string[]) => execFileSync("git", args, { cwd: repo, encoding: "utf8" });
  git(["init", "-q", "-b", "main"]);
  git(["add", "-A"]);
  git(["-c", "user.name=live", "-c", "user.email=live@example.invalid", "commit", "-q", "-m", "init"]);
  const contract = join(base, "contract.yaml");
  writeFileSync(contract, "id: live-add\ntask: Fix the bug in add() in src/math.py so it returns the sum.\nwritable_paths:\n  - src/math.py\n");
  const run = spawnSync(host, ["deliver", "--repo", repo, "--timeout", "600", contract, "--", host, "attempt", "--model", process.env.SATYRN_MODEL, contract], {
    cwd: repo,
    env: { ...process.env, SATYRN_PI_BIN: process.env.SATYRN_PI_BIN ?? join(root, "pi", "node_modules", ".bin", "pi") },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  process.stdout.write(`receipt: ${run.stdout}`);
  const receipt = JSON.parse(run.stdout) as { code: string; paths: string[]; candidate_commit: string };
  if (receipt.code !== "OK") throw new Error(`no candidate: ${receipt.code}`);
  if (JSON.stringify(receipt.paths) !== '["src/math.py"]') throw new Error(`unexpected paths ${receipt.paths}`);
  if (git(["status", "--porcelain"]) !== "") throw new Error("the caller's checkout changed");
  process.stdout.write(git(["show", "--stat", "-p", receipt.candidate_commit]));
  process.stdout.write("live check passed\n");
} finally {
  rmSync(base, { recursive: true, force: true });
}
