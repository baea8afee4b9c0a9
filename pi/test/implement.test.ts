import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { contractPath, findHost, implement, parseReceipt, relativeInside, summary, type FileId } from "../lib/implement.ts";
import { FakeChild, hostBin } from "./helpers.ts";

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function repo(): { base: string; root: string } {
  const base = mkdtempSync(join(tmpdir(), "satyrn-impl-"));
  dirs.push(base);
  const root = join(base, "repo");
  mkdirSync(join(root, "sub"), { recursive: true });
  execFileSync("git", ["init", "-q", root]);
  writeFileSync(join(root, "contract.yaml"), "id: x\ntask: t\n");
  writeFileSync(join(root, "..hidden.yaml"), "id: x\ntask: t\n");
  writeFileSync(join(base, "outside.yaml"), "id: x\ntask: t\n");
  symlinkSync(root, join(base, "alias"));
  gitIn(root, ["add", "-A"]);
  gitIn(root, ["commit", "-q", "-m", "contracts"]);
  return { base, root };
}

function gitIn(root: string, args: string[]): string {
  return execFileSync("git", args, {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.invalid", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.invalid" },
  });
}

/** The argv /implement gives deliver for `arg` from `cwd`, with a fake child that answers OK. */
async function deliveryArgs(arg: string, cwd: string): Promise<readonly string[]> {
  let seen: readonly string[] = [];
  const child = new FakeChild();
  const outcome = await implement(arg, {
    cwd,
    env: { SATYRN_MODEL: "p/m", SATYRN_HOST_BIN: "/opt/satyrn-host" },
    spawn: (_command, args) => {
      seen = args;
      setImmediate(() => {
        child.emit("spawn");
        child.answer('{"version":1,"outcome":"candidate-created","code":"OK","message":"","candidate_ref":"r","candidate_commit":"c"}\n');
      });
      return child.asChild();
    },
  });
  assert.equal(outcome.kind, "receipt");
  return seen;
}

test("a gitignored or untracked contract inside the repository is passed absolute; a committed one relative", async () => {
  const { root } = repo();
  const real = execFileSync("git", ["rev-parse", "--show-toplevel"], { cwd: root, encoding: "utf8" }).trim();
  writeFileSync(join(root, ".gitignore"), "ignored.yaml\n");
  gitIn(root, ["add", ".gitignore"]);
  gitIn(root, ["commit", "-q", "-m", "ignore"]);
  writeFileSync(join(root, "ignored.yaml"), "id: x\ntask: t\n");
  writeFileSync(join(root, "untracked.yaml"), "id: x\ntask: t\n");
  for (const name of ["ignored.yaml", "untracked.yaml"]) {
    const args = await deliveryArgs(name, root);
    assert.deepEqual(args, ["deliver", "--repo", real, join(root, name), "--", "/opt/satyrn-host", "attempt", "--model", "p/m", "--", join(root, name)]);
  }
  const committed = await deliveryArgs("contract.yaml", root);
  assert.equal(committed[3], "contract.yaml");
  assert.equal(committed.at(-1), "contract.yaml");
});

test("a contract whose name starts with `-` is spelled ./-NAME for deliver and given after `--` to attempt", async () => {
  const { root } = repo();
  writeFileSync(join(root, "-dash.yaml"), "id: x\ntask: t\n");
  gitIn(root, ["add", "--", "-dash.yaml"]);
  gitIn(root, ["commit", "-q", "-m", "dash"]);
  const args = await deliveryArgs("-dash.yaml", root);
  assert.equal(args[3], "./-dash.yaml");
  assert.deepEqual(args.slice(-4), ["--model", "p/m", "--", "./-dash.yaml"]);
});

test("real satyrn-host: a gitignored contract inside the repository reaches the attempt (any receipt but CONTRACT_UNREADABLE)", async () => {
  const { root } = repo();
  writeFileSync(join(root, ".gitignore"), "local-contract.yaml\n");
  writeFileSync(join(root, "a.txt"), "a\n");
  gitIn(root, ["add", "-A"]);
  gitIn(root, ["commit", "-q", "-m", "ignore"]);
  writeFileSync(join(root, "local-contract.yaml"), "id: ignored-contract\ntask: Change nothing.\nwritable_paths:\n  - 'a.txt'\n");
  const outcome = await implement("local-contract.yaml", {
    cwd: root,
    // A Pi that exits at once: what matters is that the attempt found and froze the contract.
    env: { ...process.env, SATYRN_MODEL: "p/m", SATYRN_HOST_BIN: hostBin(), SATYRN_PI_BIN: "/bin/true" },
  });
  assert.equal(outcome.kind, "receipt", outcome.kind === "refused" ? outcome.reason : "");
  if (outcome.kind === "receipt") {
    assert.equal(outcome.receipt.contract_id, "ignored-contract");
    assert.equal(outcome.receipt.code, "NO_CHANGE", JSON.stringify(outcome.receipt));
  }
});

test("a contract inside the repository is passed repository-relative, by identity not by prefix", () => {
  const { base, root } = repo();
  assert.equal(contractPath(root, join(root, "contract.yaml")), "contract.yaml");
  assert.equal(contractPath(root, join(root, "..hidden.yaml")), "..hidden.yaml");
  assert.equal(contractPath(root, join(base, "alias", "contract.yaml")), "contract.yaml");
  assert.equal(contractPath(root, join(root, "sub", "..", "contract.yaml")), "contract.yaml");
  assert.equal(contractPath(root, join(base, "outside.yaml")), join(base, "outside.yaml"));
  assert.equal(contractPath(root, join(base, "missing.yaml")), undefined);
  writeFileSync(join(root, "sub", "deep.yaml"), "id: x\ntask: t\n");
  assert.equal(contractPath(root, join(root, "sub", "deep.yaml")), join("sub", "deep.yaml"));
  assert.equal(contractPath(join(base, "alias"), join(root, "sub", "deep.yaml")), join("sub", "deep.yaml"));
  symlinkSync(join(base, "outside.yaml"), join(root, "link.yaml"));
  assert.equal(contractPath(root, join(root, "link.yaml")), join(root, "link.yaml"), "a symlink out is outside");
});

test("containment compares (dev, ino) of ancestors, so a case-folded spelling of the root counts", () => {
  // Stands in for a case-insensitive file system (not creatable portably here): every
  // spelling of /Base/Repo that differs only in case is the same directory.
  const root: FileId = { dev: 7n, ino: 42n };
  const stat = (path: string): FileId => {
    if (path.toLowerCase() === "/base/repo") return root;
    if (path.toLowerCase() === "/base/repo/sub") return { dev: 7n, ino: 43n };
    if (path === "/" || path.toLowerCase() === "/base") return { dev: 7n, ino: BigInt(path.length) };
    throw Object.assign(new Error("ENOENT"), { code: "ENOENT" });
  };
  assert.equal(relativeInside("/BASE/REPO/contract.yaml", root, stat), "contract.yaml");
  assert.equal(relativeInside("/base/Repo/Sub/c.yaml", root, stat), join("Sub", "c.yaml"));
  assert.equal(relativeInside("/base/repo-2/c.yaml", root, stat), undefined);
  assert.equal(relativeInside("/base/c.yaml", root, stat), undefined);
  // Same inode on another device is another directory.
  assert.equal(relativeInside("/base/repo/c.yaml", root, () => ({ dev: 8n, ino: 42n })), undefined);
});

test("the host is SATYRN_HOST_BIN when absolute, else satyrn-host on PATH", () => {
  const { base } = repo();
  assert.equal(findHost({ SATYRN_HOST_BIN: "/opt/satyrn-host" }), "/opt/satyrn-host");
  assert.equal(findHost({ SATYRN_HOST_BIN: "relative" }), undefined);
  assert.equal(findHost({ PATH: "/nonexistent" }), undefined);
  const bin = join(base, "bin");
  mkdirSync(bin);
  writeFileSync(join(bin, "satyrn-host"), "#!/bin/sh\n", { mode: 0o755 });
  assert.equal(findHost({ PATH: `/nonexistent:${bin}` }), join(bin, "satyrn-host"));
});

test("refusals before anything is spawned", async () => {
  const { base, root } = repo();
  let spawned = 0;
  const spawn = () => ((spawned += 1), new FakeChild().asChild());
  const env = { SATYRN_MODEL: "p/m", SATYRN_HOST_BIN: hostBin() };
  const cases: Array<[string, string, NodeJS.ProcessEnv, RegExp]> = [
    ["", root, env, /usage/],
    ["contract.yaml", root, { SATYRN_HOST_BIN: hostBin() }, /SATYRN_MODEL/],
    ["contract.yaml", root, { ...env, SATYRN_MODEL: "--help" }, /must not start/],
    ["contract.yaml", root, { SATYRN_MODEL: "p/m", PATH: "/nonexistent" }, /satyrn-host was not found/],
    ["contract.yaml", base, env, /not inside a git worktree/],
    ["missing.yaml", root, env, /does not exist/],
  ];
  for (const [arg, cwd, e, why] of cases) {
    const outcome = await implement(arg, { cwd, env: e, spawn });
    assert.equal(outcome.kind, "refused", arg);
    if (outcome.kind === "refused") assert.match(outcome.reason, why);
  }
  assert.equal(spawned, 0);
});

test("the delivery argv, its own process group, and the receipt", async () => {
  const { root } = repo();
  const child = new FakeChild();
  let seen: { command: string; args: readonly string[]; detached: unknown } | undefined;
  const pending = implement("sub/../contract.yaml", {
    cwd: root,
    env: { SATYRN_MODEL: "p/m", SATYRN_HOST_BIN: "/opt/satyrn-host" },
    spawn: (command, args, options) => {
      seen = { command, args, detached: options.detached };
      setImmediate(() => {
        child.emit("spawn");
        child.answer('{"version":1,"outcome":"candidate-created","code":"OK","message":"","candidate_ref":"refs/satyrn/candidates/x/head","candidate_commit":"abc"}\n');
      });
      return child.asChild();
    },
  });
  const outcome = await pending;
  const real = execFileSync("git", ["rev-parse", "--show-toplevel"], { cwd: root, encoding: "utf8" }).trim();
  assert.deepEqual(seen, {
    command: "/opt/satyrn-host",
    args: ["deliver", "--repo", real, "contract.yaml", "--", "/opt/satyrn-host", "attempt", "--model", "p/m", "--", "contract.yaml"],
    detached: true,
  });
  assert.equal(outcome.kind, "receipt");
  assert.equal(summary(outcome), "satyrn: candidate refs/satyrn/candidates/x/head at abc");
});

test("/implement from a subdirectory: a relative contract reaches deliver repository-relative, run from the root", async () => {
  const { root } = repo();
  const child = new FakeChild();
  let seen: { args: readonly string[]; cwd: unknown } | undefined;
  const outcome = await implement("../contract.yaml", {
    cwd: join(root, "sub"),
    env: { SATYRN_MODEL: "p/m", SATYRN_HOST_BIN: "/opt/satyrn-host" },
    spawn: (_command, args, options) => {
      seen = { args, cwd: options.cwd };
      setImmediate(() => {
        child.emit("spawn");
        child.answer('{"version":1,"outcome":"refused","code":"X","message":"","candidate_ref":null,"candidate_commit":null}\n', 8);
      });
      return child.asChild();
    },
  });
  assert.equal(outcome.kind, "receipt");
  const real = execFileSync("git", ["rev-parse", "--show-toplevel"], { cwd: root, encoding: "utf8" }).trim();
  assert.deepEqual(seen, {
    args: ["deliver", "--repo", real, "contract.yaml", "--", "/opt/satyrn-host", "attempt", "--model", "p/m", "--", "contract.yaml"],
    cwd: real,
  });
});

test("real satyrn-host: /implement from a subdirectory finds the contract (any receipt but CONTRACT_UNREADABLE)", async () => {
  const { root } = repo();
  const git = (args: string[]) =>
    execFileSync("git", args, {
      cwd: root,
      env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.invalid", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.invalid" },
    });
  writeFileSync(join(root, "contract.yaml"), "id: from-sub\ntask: Change nothing.\nwritable_paths:\n  - 'sub/*.txt'\n");
  writeFileSync(join(root, "sub", "a.txt"), "a\n");
  git(["add", "-A"]);
  git(["commit", "-q", "-m", "init"]);
  const outcome = await implement("../contract.yaml", {
    cwd: join(root, "sub"),
    // No Pi: the attempt fails fast; what matters is that delivery read the contract.
    env: { ...process.env, SATYRN_MODEL: "p/m", SATYRN_HOST_BIN: hostBin(), SATYRN_PI_BIN: "/nonexistent/pi" },
  });
  assert.equal(outcome.kind, "receipt", outcome.kind === "refused" ? outcome.reason : "");
  if (outcome.kind === "receipt") {
    assert.notEqual(outcome.receipt.code, "CONTRACT_UNREADABLE", JSON.stringify(outcome.receipt));
    assert.equal(outcome.receipt.contract_id, "from-sub", "delivery read the contract");
  }
});

test("a deadline sends SIGTERM (never SIGKILL) and reports only after close and an empty group", async () => {
  const { root } = repo();
  const child = new FakeChild();
  let probes = 0;
  const events: string[] = [];
  const pending = implement("contract.yaml", {
    cwd: root,
    env: { SATYRN_MODEL: "p/m", SATYRN_HOST_BIN: "/opt/satyrn-host" },
    deadlineMs: 20,
    probeMs: 5,
    probeGroup: () => {
      probes += 1;
      events.push(`probe${probes}`);
      return probes < 3;
    },
    spawn: () => {
      setImmediate(() => child.emit("spawn"));
      child.kill = (signal: string) => {
        events.push(signal);
        setTimeout(() => {
          events.push("close");
          child.answer("", 143);
        }, 30);
        return true;
      };
      return child.asChild();
    },
  });
  const outcome = await pending;
  assert.equal(outcome.kind, "refused");
  assert.deepEqual(events, ["SIGTERM", "close", "probe1", "probe2", "probe3"]);
});

test("a spawn error with no child settles at once; malformed receipts are refusals", async () => {
  const { root } = repo();
  const outcome = await implement("contract.yaml", {
    cwd: root,
    env: { SATYRN_MODEL: "p/m", SATYRN_HOST_BIN: "/nonexistent/satyrn-host" },
  });
  assert.equal(outcome.kind, "refused");
  for (const bad of ["", "not json\n", "{}\n", '{"code":"OK","outcome":"x"}\n{"code":"OK","outcome":"x"}\n']) {
    assert.equal(parseReceipt(bad, 8, "").kind, "refused", bad);
  }
});

test("real satyrn-host: /implement's delivery refuses a dirty repository with a receipt", async () => {
  const { root } = repo();
  writeFileSync(join(root, "dirt.txt"), "uncommitted\n");
  const outcome = await implement("contract.yaml", {
    cwd: root,
    env: { ...process.env, SATYRN_MODEL: "p/m", SATYRN_HOST_BIN: hostBin() },
  });
  assert.equal(outcome.kind, "receipt");
  if (outcome.kind === "receipt") {
    assert.equal(outcome.receipt.code, "REPO_DIRTY", JSON.stringify(outcome.receipt));
    assert.equal(outcome.exitCode, 8);
  }
});

/**
 * The delayed writer, for real: /implement's deadline stops the real deliver while the
 * attempt's Pi has a descendant that ignores SIGTERM and keeps writing. The outcome is
 * reported only once that whole group is gone, so nothing is written after the report; the
 * caller's checkout is untouched and no worktree stays registered.
 */
test("real deliver: a deadline with a TERM-ignoring descendant reports only after the last write", { timeout: 120_000 }, async () => {
  const { base, root } = repo();
  writeFileSync(join(root, "contract.yaml"), "id: late-writer\ntask: t\nwritable_paths:\n  - 'a.txt'\n");
  writeFileSync(join(root, "a.txt"), "a\n");
  gitIn(root, ["add", "-A"]);
  gitIn(root, ["commit", "-q", "-m", "late writer"]);
  const sentinel = join(base, "late-writes");
  const pi = join(base, "pi-with-late-writer");
  writeFileSync(
    pi,
    [
      "#!/usr/bin/env python3",
      "import os, signal, time",
      "if os.fork() == 0:",
      "    signal.signal(signal.SIGTERM, signal.SIG_IGN)",
      "    while True:",
      `        with open(${JSON.stringify(sentinel)}, 'a') as f: f.write('x')`,
      "        time.sleep(0.05)",
      "time.sleep(300)",
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
  const outcome = await implement("contract.yaml", {
    cwd: root,
    env: { ...process.env, SATYRN_MODEL: "p/m", SATYRN_HOST_BIN: hostBin(), SATYRN_PI_BIN: pi },
    deadlineMs: 1_500,
    // The writer writes outside the worktree, which a confined Pi could not: this is
    // deliver's deadline under test, not the confinement.
    unconfined: true,
  });
  assert.equal(outcome.kind, "refused");
  if (outcome.kind === "refused") assert.match(outcome.reason, /did not finish within 1500 ms/);
  const written = readFileSync(sentinel, "utf8").length;
  assert.ok(written > 0, "the descendant never wrote: the race was not exercised");
  // Ten write periods after the report: still not one more byte.
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(readFileSync(sentinel, "utf8").length, written, "a write landed after /implement reported");
  assert.equal(gitIn(root, ["status", "--porcelain=v1", "--untracked-files=all"]), "");
  const worktrees = gitIn(root, ["worktree", "list", "--porcelain"]).split("\n").filter((l) => l.startsWith("worktree "));
  assert.equal(worktrees.length, 1, worktrees.join("\n"));
});
