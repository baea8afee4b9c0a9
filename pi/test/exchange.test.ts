import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
  let signalsBeforeClose: string[] = [];
  setTimeout(() => {
    // Recorded, not asserted here: a failed assertion in a timer would leave the exchange
    // waiting for a close that never comes.
    signalsBeforeClose = [...child.signals];
    closed = true;
    child.answer("", 1);
  }, 120);
  const outcome = await pending;
  assert.deepEqual(signalsBeforeClose, ["SIGTERM", "SIGKILL"]);
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

/** Whether a process exists (signal 0); a zombie still counts until it is reaped. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test("a real child whose descendant holds the pipes: the deadline stops the whole group, nothing is orphaned", async () => {
  const dir = mkdtempSync(join(tmpdir(), "satyrn-exchange-"));
  try {
    const pidFile = join(dir, "descendant.pid");
    const hostPid = join(dir, "host.pid");
    const host = join(dir, "host.sh");
    // A host that never answers and leaves a background descendant holding stdout/stderr.
    writeFileSync(host, `#!/bin/sh\necho $$ > '${hostPid}'\nsleep 300 &\necho $! > '${pidFile}'\nexec sleep 300\n`);
    chmodSync(host, 0o755);
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      exchange(host, {}, { deadlineMs: 300, graceMs: 300 }),
      new Promise<"hung">((r) => {
        timer = setTimeout(() => r("hung"), 20_000);
      }),
    ]);
    clearTimeout(timer);
    if (outcome === "hung") {
      // Fail, not hang: stop what the exchange left running.
      for (const file of [pidFile, hostPid]) {
        try {
          process.kill(Number(readFileSync(file, "utf8").trim()), "SIGKILL");
        } catch {
          // gone
        }
      }
      assert.fail("the exchange waited for the descendant holding its pipes");
    }
    assert.equal(outcome.kind, "transport");
    if (outcome.kind === "transport") assert.match(outcome.reason, /did not answer within 300 ms/);
    const descendant = Number(readFileSync(pidFile, "utf8").trim());
    const deadline = Date.now() + 10_000;
    while (alive(descendant) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(alive(descendant), false, `descendant ${descendant} outlived the exchange`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a real child that answers in time: the response, no signal needed (sibling)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "satyrn-exchange-"));
  try {
    const host = join(dir, "host.sh");
    writeFileSync(host, `#!/bin/sh\ncat > /dev/null\nprintf '%s' '${OK.trimEnd()}'\necho\n`);
    chmodSync(host, 0o755);
    const outcome = await exchange(host, {}, { deadlineMs: 30_000 });
    assert.equal(outcome.kind, "response", JSON.stringify(outcome));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
