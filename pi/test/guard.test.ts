import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, test } from "node:test";

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

import satyrnEngine from "../engine.ts";
import satyrnMutator from "../mutator.ts";
import { markToolsRegistered, SATYRN_TOOLS, toolsRegistered } from "../lib/context.ts";
import { AttemptGuard, guardFor, UNREGISTERED_REASON, unknownToolReason } from "../lib/guard.ts";

const MARKER = Symbol.for("satyrn.tools.registered");
const SHA = "a".repeat(64);
const CONTEXT_DIR = mkdtempSync(join(tmpdir(), "satyrn-guard-"));
after(() => rmSync(CONTEXT_DIR, { recursive: true, force: true }));
/** A context file holding a valid context. */
const CONTEXT = join(CONTEXT_DIR, "context.json");
writeFileSync(CONTEXT, JSON.stringify({ version: 1, repo: "/w", contract: "/tmp/c.yaml", revisions: { "src/a.ts": SHA } }));
/** A context file holding garbage. */
const BAD_CONTEXT = join(CONTEXT_DIR, "bad.json");
writeFileSync(BAD_CONTEXT, "not json");

afterEach(() => {
  delete (globalThis as Record<symbol, unknown>)[MARKER];
  delete process.env.SATYRN_MUTATION_CONTEXT_FILE;
  delete process.env.SATYRN_MUTATION_CONTEXT;
  delete process.env.SATYRN_HOST_BIN;
});

test("the guard exists whenever the context variable is set, even malformed; never outside an attempt", () => {
  assert.equal(guardFor({}), undefined);
  assert.equal(guardFor({ SATYRN_HOST_BIN: "/bin/satyrn-host" }), undefined);
  for (const value of [CONTEXT, BAD_CONTEXT, "/nonexistent/context.json", "relative", ""]) {
    assert.ok(guardFor({ SATYRN_MUTATION_CONTEXT_FILE: value }) instanceof AttemptGuard, JSON.stringify(value));
  }
  // The inline variable of earlier versions still marks an attempt (and is never read).
  assert.ok(guardFor({ SATYRN_MUTATION_CONTEXT: "{}" }) instanceof AttemptGuard);
});

test("without satyrn's tools every call is blocked, the first included", () => {
  const guard = new AttemptGuard(() => false);
  for (const name of [...SATYRN_TOOLS, "bash"]) {
    assert.equal(guard.check(name, { path: "a" }), UNREGISTERED_REASON, name);
  }
  assert.match(UNREGISTERED_REASON, /not registered/);
});

test("once satyrn's tools are registered, calls pass and the loop breaker still applies", () => {
  let registered = false;
  const guard = new AttemptGuard(() => registered);
  assert.equal(guard.check("read", { path: "a" }), UNREGISTERED_REASON);
  registered = true; // asked at every call, so extension load order does not matter
  assert.equal(guard.check("read", { path: "a" }), undefined);
  assert.equal(guard.check("read", { path: "a" }), undefined);
  assert.match(guard.check("read", { path: "a" }) ?? "", /loop breaker.*call number 3/);
  assert.equal(guard.check("read", { path: "b" }), undefined);
});

test("once registered, exactly satyrn's tools pass; every other name is blocked", () => {
  assert.deepEqual([...SATYRN_TOOLS].sort(), ["apply_patch", "delete", "edit", "find", "grep", "ls", "read", "write"]);
  const guard = new AttemptGuard(() => true);
  for (const name of SATYRN_TOOLS) assert.equal(guard.check(name, { path: name }), undefined, name);
  for (const name of ["bash", "Read", "read ", "", "multi_edit", "ls,find", "toString", "__proto__"]) {
    const reason = guard.check(name, { path: "a" });
    assert.equal(reason, unknownToolReason(name), JSON.stringify(name));
    assert.match(reason ?? "", /is not one of this attempt's tools \(read, edit, ls, find, grep, write, delete, apply_patch\)/);
  }
});

test("under the kernel's rules (SATYRN_CONFINED=1) Pi's other tools pass once satyrn's are registered", () => {
  const confined = guardFor({ SATYRN_MUTATION_CONTEXT_FILE: CONTEXT, SATYRN_CONFINED: "1" }, () => true);
  assert.equal(confined?.check("edit", { path: "a" }), undefined);
  assert.equal(confined?.check("bash", { command: "make test" }), undefined);
  // The loop breaker still applies to them.
  assert.equal(confined?.check("bash", { command: "make test" }), undefined);
  assert.match(confined?.check("bash", { command: "make test" }) ?? "", /loop breaker/);
  // Not registered yet: still blocked, confined or not.
  const early = guardFor({ SATYRN_MUTATION_CONTEXT_FILE: CONTEXT, SATYRN_CONFINED: "1" }, () => false);
  assert.equal(early?.check("bash", { command: "ls" }), UNREGISTERED_REASON);
  // Any other value is not confinement: bash stays blocked.
  for (const value of ["", "0", "true", "yes", " 1"]) {
    const guard = guardFor({ SATYRN_MUTATION_CONTEXT_FILE: CONTEXT, SATYRN_CONFINED: value }, () => true);
    assert.equal(guard?.check("bash", { command: "ls" }), unknownToolReason("bash"), JSON.stringify(value));
  }
});

test("the default guard reads the process-wide marker, defined once in lib/context.ts", () => {
  const guard = guardFor({ SATYRN_MUTATION_CONTEXT_FILE: CONTEXT });
  assert.equal(toolsRegistered(), false);
  assert.equal(guard?.check("read", { path: "a" }), UNREGISTERED_REASON);
  markToolsRegistered();
  assert.equal((globalThis as Record<symbol, unknown>)[MARKER], true);
  assert.equal(guard?.check("read", { path: "a" }), undefined);
});

/** A recording stand-in for Pi's ExtensionAPI; the real Pi runs both extensions in e2e.test.ts. */
function fakePi(failOnTool?: string) {
  const tools: string[] = [];
  const handlers = new Map<string, (event: unknown) => Promise<unknown>>();
  const api = {
    registerTool(tool: { name: string }) {
      if (tool.name === failOnTool) throw new Error(`cannot register ${tool.name}`);
      tools.push(tool.name);
    },
    on(event: string, handler: (event: unknown) => Promise<unknown>) {
      handlers.set(event, handler);
    },
  };
  return { api: api as unknown as ExtensionAPI, tools, handlers };
}

test("mutator.ts sets the marker only after all of satyrn's tools are registered", () => {
  process.env.SATYRN_MUTATION_CONTEXT_FILE = CONTEXT;
  process.env.SATYRN_HOST_BIN = "/bin/satyrn-host";
  for (const name of SATYRN_TOOLS) {
    const failing = fakePi(name);
    assert.throws(() => satyrnMutator(failing.api), new RegExp(`cannot register ${name}`));
    assert.ok(!failing.tools.includes(name));
    assert.equal(toolsRegistered(), false, `marker set although ${name} failed`);
  }
  const ok = fakePi();
  satyrnMutator(ok.api);
  assert.deepEqual([...ok.tools].sort(), [...SATYRN_TOOLS].sort());
  assert.equal(toolsRegistered(), true);
});

test("mutator.ts without a valid context registers nothing and sets no marker", () => {
  process.env.SATYRN_MUTATION_CONTEXT_FILE = BAD_CONTEXT;
  process.env.SATYRN_HOST_BIN = "/bin/satyrn-host";
  const pi = fakePi();
  satyrnMutator(pi.api);
  assert.deepEqual(pi.tools, []);
  assert.equal(toolsRegistered(), false);
});

test("engine.ts installs the guard for a malformed context too, and none outside an attempt", async () => {
  const outside = fakePi();
  satyrnEngine(outside.api);
  assert.equal(outside.handlers.size, 0);
  process.env.SATYRN_MUTATION_CONTEXT_FILE = BAD_CONTEXT;
  const inside = fakePi();
  satyrnEngine(inside.api);
  const handler = inside.handlers.get("tool_call");
  assert.ok(handler !== undefined, "the tool_call guard is installed");
  assert.deepEqual(await handler({ type: "tool_call", toolName: "read", toolCallId: "c", input: { path: "a" } }), {
    block: true,
    reason: UNREGISTERED_REASON,
  });
});
