import assert from "node:assert/strict";
import { test } from "node:test";

import { LoopBreaker, canonical } from "../lib/loop.ts";

test("the third identical consecutive call is blocked, and every further one", () => {
  const b = new LoopBreaker();
  const args = { path: "a", edits: [{ oldText: "x", newText: "y" }] };
  assert.equal(b.check("edit", args), undefined);
  assert.equal(b.check("edit", { edits: [{ newText: "y", oldText: "x" }], path: "a" }), undefined);
  const reason = b.check("edit", args);
  assert.match(reason ?? "", /loop breaker.*call number 3/);
  assert.notEqual(b.check("edit", args), undefined);
});

test("a different call resets the count", () => {
  const b = new LoopBreaker();
  assert.equal(b.check("read", { path: "a" }), undefined);
  assert.equal(b.check("read", { path: "a" }), undefined);
  assert.equal(b.check("read", { path: "b" }), undefined);
  assert.equal(b.check("read", { path: "a" }), undefined);
  assert.equal(b.check("read", { path: "a" }), undefined);
  assert.equal(b.check("edit", { path: "a" }), undefined);
});

test("canonical JSON sorts keys at every depth", () => {
  assert.equal(canonical({ b: 1, a: [{ d: 2, c: 3 }] }), '{"a":[{"c":3,"d":2}],"b":1}');
});
