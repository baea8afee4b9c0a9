import assert from "node:assert/strict";
import { test } from "node:test";

import { parseContext } from "../lib/context.ts";

const SHA = "a".repeat(64);
const good = { version: 1, repo: "/w", contract: "/tmp/c.yaml", revisions: { "src/a.ts": SHA } };
const env = (context: unknown, host: string | null = "/bin/satyrn-host") => ({
  SATYRN_MUTATION_CONTEXT: typeof context === "string" ? context : JSON.stringify(context),
  ...(host === null ? {} : { SATYRN_HOST_BIN: host }),
});

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
