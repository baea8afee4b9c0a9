import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";

import { exchange, parseResponse } from "../lib/exchange.ts";
import { FakeChild } from "./helpers.ts";

const OK = '{"version":1,"ok":true,"code":"OK","message":"","result":{"path":"a","sha256":"' + "b".repeat(64) + '"}}\n';

test("a well-formed response is returned after the child closes", async () => {
  const child = new FakeChild();
  const pending = exchange("/host", { hello: 1 }, { spawn: () => child.asChild() });
  setImmediate(() => child.answer(OK));
  const outcome = await pending;
  assert.equal(outcome.kind, "response");
  assert.equal(child.input, '{"hello":1}');
});

test("malformed responses are transport failures", () => {
  for (const bad of [
    "",
    "{}\n",
    "not json\n",
    OK + OK,
    OK.trimEnd(),
    '{"version":1,"ok":true,"code":"NOPE","message":"","result":{}}\n',
    '{"version":1,"ok":true,"code":"OK","message":"","result":null}\n',
    '{"version":2,"ok":false,"code":"X","message":"","result":null}\n',
    '{"version":1,"ok":false,"code":"X","message":"","result":[]}\n',
  ]) {
    assert.equal(typeof parseResponse(bad), "string", JSON.stringify(bad));
  }
  assert.equal(typeof parseResponse('{"version":1,"ok":false,"code":"X","message":"m","result":null}\n'), "object");
});

test("the deadline sends SIGTERM, then SIGKILL, and reports only after close", async () => {
  const child = new FakeChild();
  let closed = false;
  const pending = exchange("/host", {}, { spawn: () => child.asChild(), deadlineMs: 20, graceMs: 20 });
  setTimeout(() => {
    assert.deepEqual(child.signals, ["SIGTERM", "SIGKILL"]);
    closed = true;
    child.answer("", 1);
  }, 120);
  const outcome = await pending;
  assert.equal(closed, true, "reported before the child closed");
  assert.equal(outcome.kind, "transport");
  if (outcome.kind === "transport") assert.match(outcome.reason, /did not answer within 20 ms/);
});

test("stdin errors are contained", async () => {
  const child = new FakeChild();
  const pending = exchange("/host", {}, { spawn: () => child.asChild() });
  setImmediate(() => {
    child.stdin.emit("error", Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
    child.answer(OK);
  });
  const outcome = await pending;
  assert.equal(outcome.kind, "transport");
});

test("a real missing executable is a transport failure, without hanging", async () => {
  const outcome = await exchange("/nonexistent/satyrn-host", {});
  assert.equal(outcome.kind, "transport");
});

test("a real child killed by a signal is a transport failure", async () => {
  const outcome = await exchange("/bin/sh", {}, {
    spawn: (_command, _args, options) => spawn("/bin/sh", ["-c", "cat > /dev/null; kill -9 $$"], options),
  });
  assert.equal(outcome.kind, "transport");
  if (outcome.kind === "transport") assert.match(outcome.reason, /SIGKILL/);
});
