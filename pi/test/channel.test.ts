/**
 * lib/channel.ts: satyrn's Pi tools inside a real `satyrn-host confine` (real kernel
 * Landlock, the real broker, real git) send every request of the session over one broker
 * connection; a wrong secret, a dropped connection, a hung or garbled peer are transport
 * outcomes that change nothing. The hung and garbled peers are a plain Unix socket server
 * (a broker cannot be made to hang or garble for real), beside the real broker's tests.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { BrokerSession } from "../lib/channel.ts";
import { hostBin, ROOT } from "./helpers.ts";

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const A = "export const greeting = 'hello world';\n";

/** A real worktree (`src/*.ts` declared, `notes.md` not) and the context file Pi would get. */
function worktree() {
  const base = mkdtempSync(join(tmpdir(), "satyrn-channel-"));
  dirs.push(base);
  const repo = join(base, "repo");
  mkdirSync(join(repo, "src"), { recursive: true });
  writeFileSync(join(repo, "src", "a.ts"), A);
  writeFileSync(join(repo, "src", "old.ts"), "export const old = 1;\n");
  writeFileSync(join(repo, "notes.md"), "hello world\n");
  execFileSync("git", ["init", "-q", repo]);
  const contract = join(base, "contract.yaml");
  writeFileSync(contract, "id: channel-test\ntask: t\nwritable_paths:\n  - 'src/*.ts'\n");
  const context = join(base, "context.json");
  writeFileSync(context, JSON.stringify({ version: 1, repo, contract, revisions: {} }), { mode: 0o600 });
  return { repo, contract, context };
}

/** The child's `NAME JSON` lines, by name. */
function steps(stdout: string): Map<string, unknown> {
  const lines = stdout.split("\n").filter((l) => l !== "");
  return new Map(lines.map((l) => [l.slice(0, l.indexOf(" ")), JSON.parse(l.slice(l.indexOf(" ") + 1))]));
}

/** fixtures/broker-child.ts `scenario` under a real `satyrn-host confine`. */
function confined(scenario: string) {
  const w = worktree();
  const notes = statSync(join(w.repo, "notes.md"));
  const result = spawnSync(
    hostBin(),
    ["confine", "--repo", w.repo, "--cwd", join(ROOT, "pi"), w.contract, "--",
      process.execPath, "--import", "tsx", join(ROOT, "pi", "test", "fixtures", "broker-child.ts"), scenario],
    { encoding: "utf8", env: { ...process.env, SATYRN_MUTATION_CONTEXT_FILE: w.context, SATYRN_HOST_BIN: hostBin() }, timeout: 60_000 },
  );
  assert.equal(result.status, 0, `${result.stdout}\n${result.stderr}`);
  const after = statSync(join(w.repo, "notes.md"));
  assert.equal(readFileSync(join(w.repo, "notes.md"), "utf8"), "hello world\n", "the undeclared file is unchanged");
  assert.deepEqual([after.ino, after.mode, after.mtimeMs], [notes.ino, notes.mode, notes.mtimeMs]);
  return { ...w, steps: steps(result.stdout), stderr: result.stderr };
}

test("inside a confined run the tools use one broker connection for the whole session", () => {
  const run = confined("session");
  const s = run.steps;
  assert.equal(s.get("broker"), true, "the session's channel is the broker's");
  assert.match((s.get("read") as { ok: string }).ok, /hello world/);
  assert.match((s.get("edit") as { ok: string }).ok, /src\/a\.ts/);
  assert.match((s.get("undeclared") as { code: string }).code, /^PATH_/, "the broker's gate refuses the undeclared write");
  assert.match((s.get("ls") as { ok: string }).ok, /a\.ts/);
  const parallel = s.get("parallel") as { grep: string; read: string };
  assert.match(parallel.grep, /src\/a\.ts/);
  assert.match(parallel.read, /old = 1/);
  assert.equal(readFileSync(join(run.repo, "src", "a.ts"), "utf8"), "export const greeting = 'bye world';\n");
  assert.match(run.stderr, /the broker served 0 MCP sessions, and 6 protocol requests over 1 connection\n/);
});

test("a closed session opens a new connection at the next request", () => {
  const run = confined("reconnect");
  assert.match((run.steps.get("ls") as { ok: string }).ok, /a\.ts/);
  assert.match(run.stderr, /and 6 protocol requests over 2 connections\n/);
});

test("a wrong secret reaches nothing: every call is a transport refusal and nothing changes", () => {
  const run = confined("wrong-secret");
  assert.equal(run.steps.get("broker"), true);
  for (const name of ["read", "edit", "undeclared", "ls"]) {
    const step = run.steps.get(name) as { code: string; message: string };
    assert.match(step.code, /_UNAVAILABLE$/, name);
  }
  assert.match((run.steps.get("read") as { message: string }).message, /closed the connection without an answer/);
  assert.equal(readFileSync(join(run.repo, "src", "a.ts"), "utf8"), A, "src/a.ts unchanged");
  assert.match(run.stderr, /and 0 protocol requests over 0 connections\n/);
});

/** A Unix socket peer that records what it got and answers with `answer` (or never). */
async function peer(answer: (conn: Socket, received: string) => void) {
  const path = join(mkdtempSync(join(tmpdir(), "satyrn-peer-")), "s");
  dirs.push(join(path, ".."));
  const conns: Socket[] = [];
  const server = createServer((conn) => {
    conns.push(conn);
    let received = "";
    conn.on("data", (c) => {
      received += c.toString();
      answer(conn, received);
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  const stop = () => {
    for (const c of conns) c.destroy();
    server.close();
  };
  return { path, stop, connections: () => conns.length };
}

const request = { version: 1, operation: "list", repo: "/r", contract: "/c" };
const OK = `0\n${JSON.stringify({ version: 1, ok: true, code: "OK", message: "", result: { entries: [] } })}\n`;

test("a peer that never answers is a transport outcome at the deadline, and the next request reconnects", async () => {
  const p = await peer(() => {});
  const session = new BrokerSession(p.path, "s".repeat(64), { deadlineMs: 100 });
  const first = await session.send(request);
  assert.deepEqual(first, { kind: "transport", reason: "the broker did not answer within 100 ms" });
  await session.send(request);
  assert.equal(p.connections(), 2, "a timed-out connection is never reused");
  p.stop();
});

test("a garbled or oversized answer is a transport outcome; a well-formed one is a response", async () => {
  const answers = [
    "0\nnot json\n",
    "x\n{}\n",
    `${OK}${OK}`,
    `0\n${"y".repeat(2048)}\n`,
  ];
  for (const garbled of answers) {
    const p = await peer((conn, received) => {
      if (received.includes("}")) conn.write(garbled);
    });
    const session = new BrokerSession(p.path, "s".repeat(64), { maxResponseBytes: 1024 });
    const outcome = await session.send(request);
    assert.equal(outcome.kind, "transport", JSON.stringify(garbled.slice(0, 40)));
    p.stop();
  }
  const p = await peer((conn, received) => {
    const [hello, frame] = received.split("\n");
    if (frame !== undefined && received.endsWith("}")) {
      assert.equal(hello, `${"s".repeat(64)} protocol`);
      assert.equal(Number(frame), received.length - hello.length - frame.length - 2);
      conn.write(OK);
    }
  });
  const outcome = await new BrokerSession(p.path, "s".repeat(64)).send(request);
  assert.equal(outcome.kind, "response");
  if (outcome.kind === "response") assert.deepEqual([outcome.response.code, outcome.exitCode], ["OK", 0]);
  p.stop();
});
