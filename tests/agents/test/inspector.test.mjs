// The MCP Inspector's CLI against `satyrn-host mcp`: the tool schemas pass its portability
// check, and a `read` round-trips.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import { A_BEFORE, README, bin, clientEnv, describe, hostBin, makeFixture, run, snapshot, status } from "../lib/harness.mjs";
import { sha256 } from "../lib/story.mjs";

let fixture;
beforeEach(() => {
  fixture = makeFixture();
});
afterEach(() => fixture?.cleanup());

/** `mcp-inspector --cli ARGS… -- satyrn-host mcp --repo REPO CONTRACT` (HOME is the fixture's). */
function inspector(args) {
  const { repo, contract, home, dir } = fixture;
  return run(
    bin("mcp-inspector"),
    ["--cli", ...args, "--", hostBin(), "mcp", "--repo", repo, contract],
    { cwd: dir, env: clientEnv(home), timeoutMs: 60_000 },
  );
}

test("inspector: tools/list --strict passes and lists exactly the nine tools", async () => {
  const result = await inspector(["--method", "tools/list", "--strict"]);
  assert.equal(result.code, 0, describe(result));
  // Exit 0 only rules out error-severity issues; a warning (e.g. `"type": ["integer","null"]`,
  // which single-type dialects such as Gemini's reject) is a portability bug too.
  assert.doesNotMatch(result.stderr, /^(Warning|Error): tool /m, describe(result));
  const { tools } = JSON.parse(result.stdout);
  assert.deepEqual(tools.map((t) => t.name).sort(), ["apply_patch", "boundary", "change_set", "delete", "edit", "list", "read", "search", "write"]);
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

/** `--tool-arg` pairs for an edit of `path` with an explicit revision (each CLI call is a new session). */
function editArgs(path, sha, oldText, newText) {
  return [
    "--method", "tools/call", "--tool-name", "edit",
    "--tool-arg", `path=${path}`, `expected_sha256=${sha}`,
    `edits=${JSON.stringify([{ op: "replace", old_text: oldText, new_text: newText }])}`,
  ];
}

test("inspector: an edit outside writable_paths is PATH_UNDECLARED (exit 5), README.md unchanged", async () => {
  const readme = join(fixture.repo, "README.md");
  const before = snapshot(readme);
  const result = await inspector(editArgs("README.md", sha256(README), "# demo", "# taken over"));
  assert.equal(result.code, 5, describe(result)); // the Inspector's exit status for a tool result with isError
  // On exit 5 the tool result is on stdout and the CLI's own verdict on stderr.
  const answer = JSON.parse(result.stdout);
  assert.equal(JSON.parse(result.stderr.trim().split("\n").pop()).error.code, "tool_is_error", describe(result));
  assert.equal(answer.isError, true);
  assert.match(answer.content[0].text, /^PATH_UNDECLARED: /);
  assert.deepEqual(snapshot(readme), before);
  assert.equal(status(fixture.repo), "");
});

test("inspector: an edit of src/a.txt with its explicit revision lands", async () => {
  const result = await inspector(editArgs("src/a.txt", sha256(A_BEFORE), "beta", "BETA"));
  assert.equal(result.code, 0, describe(result));
  const answer = JSON.parse(result.stdout);
  assert.notEqual(answer.isError, true, describe(result));
  assert.equal(answer.structuredContent.sha256, sha256("alpha\nBETA\ngamma\n"));
  assert.equal(readFileSync(join(fixture.repo, "src", "a.txt"), "utf8"), "alpha\nBETA\ngamma\n");
  assert.equal(status(fixture.repo), " M src/a.txt\n");
});
