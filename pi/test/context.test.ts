import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { inAttempt, MAX_CONTEXT_BYTES, parseContext } from "../lib/context.ts";

const SHA = "a".repeat(64);
const good = { version: 1, repo: "/w", contract: "/tmp/c.yaml", revisions: { "src/a.ts": SHA } };
const dir = mkdtempSync(join(tmpdir(), "satyrn-context-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
/** An environment whose context file holds `context` (a string as is, anything else as JSON). */
const env = (context: unknown, host: string | null = "/bin/satyrn-host") => {
  const file = join(dir, `context-${(files += 1)}.json`);
  writeFileSync(file, typeof context === "string" ? context : JSON.stringify(context));
  return { SATYRN_MUTATION_CONTEXT_FILE: file, ...(host === null ? {} : { SATYRN_HOST_BIN: host }) };
};

test("a valid context parses", () => {
  const r = parseContext(env(good));
  assert.equal(r.ok, true);
  if (!r.ok) return;
  assert.equal(r.context.repo, "/w");
  assert.equal(r.context.contract, "/tmp/c.yaml");
  assert.equal(r.context.host, "/bin/satyrn-host");
  assert.deepEqual([...r.context.revisions], [["src/a.ts", SHA]]);
});

test("every malformed context is no context", () => {
  const cases: unknown[] = [
    "",
    "not json",
    "[]",
    "null",
    { ...good, version: 2 },
    { ...good, version: "1" },
    { ...good, repo: "relative" },
    { ...good, contract: 7 },
    { ...good, revisions: [] },
    { ...good, revisions: { "a.ts": "ABC" } },
    { ...good, revisions: { "": SHA } },
    { ...good, extra: true },
  ];
  for (const c of cases) assert.equal(parseContext(env(c)).ok, false, JSON.stringify(c));
  assert.equal(parseContext({}).ok, false);
  assert.equal(parseContext(env(good, null)).ok, false);
  assert.equal(parseContext(env(good, "satyrn-host")).ok, false);
});

test("the context file must be absolute, readable, regular and at most 64 MiB", () => {
  const host = { SATYRN_HOST_BIN: "/bin/satyrn-host" };
  const ok = env(good);
  assert.equal(parseContext(ok).ok, true);
  assert.equal(parseContext({ ...host, SATYRN_MUTATION_CONTEXT_FILE: "relative.json" }).ok, false);
  assert.equal(parseContext({ ...host, SATYRN_MUTATION_CONTEXT_FILE: join(dir, "missing.json") }).ok, false);
  assert.equal(parseContext({ ...host, SATYRN_MUTATION_CONTEXT_FILE: dir }).ok, false);
  const fifo = join(dir, "context.fifo");
  execFileSync("mkfifo", [fifo]);
  const r = parseContext({ ...host, SATYRN_MUTATION_CONTEXT_FILE: fifo });
  assert.equal(r.ok, false, "a FIFO is refused, without blocking");
  if (!r.ok) assert.match(r.reason, /not a regular file/);
  // At the limit it is read (and here rejected only as JSON); one byte over, it is not read.
  const big = join(dir, "big.json");
  writeFileSync(big, "");
  truncateSync(big, MAX_CONTEXT_BYTES);
  const at = parseContext({ ...host, SATYRN_MUTATION_CONTEXT_FILE: big });
  assert.equal(at.ok, false);
  if (!at.ok) assert.match(at.reason, /not JSON/);
  truncateSync(big, MAX_CONTEXT_BYTES + 1);
  const over = parseContext({ ...host, SATYRN_MUTATION_CONTEXT_FILE: big });
  assert.equal(over.ok, false);
  if (!over.ok) assert.match(over.reason, /larger than 67108864 bytes/);
});

test("an attempt is recognised by either context variable, even to a bad file", () => {
  assert.equal(inAttempt({}), false);
  assert.equal(inAttempt({ SATYRN_MUTATION_CONTEXT_FILE: "" }), true);
  assert.equal(inAttempt({ SATYRN_MUTATION_CONTEXT: "{}" }), true);
});

test("a confined run's broker is part of the context; a broker without a well-formed secret is no context", () => {
  const secret = "0123456789abcdef".repeat(4);
  const r = parseContext({ ...env(good), SATYRN_BROKER: "/run/b.sock", SATYRN_BROKER_SECRET: secret });
  assert.equal(r.ok, true);
  if (r.ok) assert.deepEqual(r.context.broker, { socket: "/run/b.sock", secret });
  const outside = parseContext(env(good));
  assert.equal(outside.ok && outside.context.broker, undefined, "no broker outside a confined run");
  for (const bad of [
    { SATYRN_BROKER: "/run/b.sock" },
    { SATYRN_BROKER: "/run/b.sock", SATYRN_BROKER_SECRET: "" },
    { SATYRN_BROKER: "/run/b.sock", SATYRN_BROKER_SECRET: secret.toUpperCase() },
    { SATYRN_BROKER: "/run/b.sock", SATYRN_BROKER_SECRET: `${secret}0` },
    { SATYRN_BROKER: "b.sock", SATYRN_BROKER_SECRET: secret },
  ]) {
    const parsed = parseContext({ ...env(good), ...bad });
    assert.equal(parsed.ok, false, JSON.stringify(bad));
    if (!parsed.ok) assert.match(parsed.reason, /SATYRN_BROKER/);
  }
});
