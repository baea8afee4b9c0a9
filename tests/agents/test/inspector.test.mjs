// The MCP Inspector's CLI against `satyrn-host mcp`: the tool schemas pass its portability
// check, and a `read` round-trips.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { A_BEFORE, bin, clientEnv, describe, hostBin, makeFixture, run, snapshot, status } from "../lib/harness.mjs";
import { sha256 } from "../lib/story.mjs";

let fixture;
before(() => {
  fixture = makeFixture();
});
after(() => fixture?.cleanup());

/** `mcp-inspector --cli ARGS… -- satyrn-host mcp --repo REPO CONTRACT` (HOME is the fixture's). */
function inspector(args) {
  const { repo, contract, home, dir } = fixture;
  return run(
    bin("mcp-inspector"),
    ["--cli", ...args, "--", hostBin(), "mcp", "--repo", repo, contract],
    { cwd: dir, env: clientEnv(home), timeoutMs: 60_000 },
  );
}

test("inspector: tools/list --strict passes and lists exactly read, edit, boundary", async () => {
  const result = await inspector(["--method", "tools/list", "--strict"]);
  assert.equal(result.code, 0, describe(result));
  // Exit 0 only rules out error-severity issues; a warning (e.g. `"type": ["integer","null"]`,
  // which single-type dialects such as Gemini's reject) is a portability bug too.
  assert.doesNotMatch(result.stderr, /^(Warning|Error): tool /m, describe(result));
  const { tools } = JSON.parse(result.stdout);
  assert.deepEqual(tools.map((t) => t.name).sort(), ["boundary", "edit", "read"]);
  for (const tool of tools) {
    assert.equal(tool.inputSchema?.type, "object", `${tool.name}: input schema must be an object`);
  }
  const read = tools.find((t) => t.name === "read");
  assert.deepEqual(read.inputSchema.required, ["path"]);
  assert.equal(read.annotations?.readOnlyHint, true, "read must be marked read-only");
});

test("inspector: tools/call read round-trips the file's text and sha256", async () => {
  const before = snapshot(join(fixture.repo, "src", "a.txt"));
  const result = await inspector(["--method", "tools/call", "--tool-name", "read", "--tool-arg", "path=src/a.txt"]);
  assert.equal(result.code, 0, describe(result));
  const answer = JSON.parse(result.stdout);
  assert.notEqual(answer.isError, true, describe(result));
  const s = answer.structuredContent;
  assert.equal(s.path, "src/a.txt");
  assert.equal(s.sha256, sha256(A_BEFORE));
  assert.equal(s.writable, true);
  assert.equal(s.text, A_BEFORE);
  assert.ok(answer.content.some((c) => c.type === "text" && c.text.includes("beta")), describe(result));
  assert.deepEqual(snapshot(join(fixture.repo, "src", "a.txt")), before, "read must not touch the file");
  assert.equal(status(fixture.repo), "");
});
