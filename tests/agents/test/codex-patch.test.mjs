// Codex CLI under `satyrn-host deliver`, with satyrn's `apply_patch` MCP tool: a three-file
// patch whose last hunk does not match changes nothing and the model reads where the file
// differs; the corrected patch lands whole, and the candidate is exactly that change.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, test } from "node:test";
import { A_BEFORE, PACKAGE_DIR, clientEnv, describe, git, hostBin, makeFixture, run, status } from "../lib/harness.mjs";
import { NAMESPACE } from "../lib/codex.mjs";
import { startScriptedModel, toolResultsOf } from "../lib/scripted-model.mjs";
import { requestWith, sha256 } from "../lib/story.mjs";

const B_BEFORE = "names:\n    world\n";
const patch = (indent) =>
  [
    "*** Begin Patch",
    "*** Update File: src/a.txt",
    "@@",
    " alpha",
    "-beta",
    "+BETA, patched through satyrn",
    "*** Add File: src/c.txt",
    "+sea",
    "*** Update File: ./src/b.txt",
    "@@ names:",
    `-${indent}world`,
    `+${indent}satyrn`,
    "*** End Patch",
    "",
  ].join("\n");
const mcp = (name, args) => ({ tool: { namespace: NAMESPACE, name, arguments: args } });

const cleanups = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()();
});

test("deliver + codex: satyrn's apply_patch refuses a patch whose last hunk misses, with the near miss; the retry is the candidate", async () => {
  const host = hostBin();
  const fixture = makeFixture();
  cleanups.push(async () => fixture.cleanup());
  const { repo, contract, dir } = fixture;
  writeFileSync(join(repo, "src", "b.txt"), B_BEFORE);
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "b");
  const head = git(repo, "rev-parse", "HEAD").trim();
  const state = join(dir, "agent-state");
  mkdirSync(state);
  const model = await startScriptedModel([
    mcp("read", { path: "src/a.txt" }),
    mcp("read", { path: "src/b.txt" }),
    mcp("apply_patch", { patch: patch("  ") }),
    // After the refusal: the file is as it was.
    mcp("read", { path: "src/a.txt" }),
    mcp("apply_patch", { patch: patch("    ") }),
  ]);
  cleanups.push(() => model.close());
  const result = await run(
    host,
    ["deliver", "--repo", repo, "--timeout", "120", contract, "--", process.execPath, join(PACKAGE_DIR, "fixtures", "run-agent.mjs"), "codex"],
    {
      cwd: dir,
      env: clientEnv(fixture.home, {
        SATYRN_AGENT_HOST: host,
        SATYRN_AGENT_CONTRACT: contract,
        SATYRN_AGENT_MODEL_URL: model.url,
        SATYRN_AGENT_STATE: state,
      }),
      timeoutMs: 150_000,
    },
  );
  assert.equal(result.code, 0, describe(result));
  const receipt = JSON.parse(result.stdout.trim());
  assert.equal(receipt.code, "OK", describe(result));
  assert.deepEqual(receipt.paths, ["src/a.txt", "src/b.txt", "src/c.txt"]);

  const refused = toolResultsOf(requestWith(model.requests, 3))[2].text;
  assert.match(refused, /(^|\n)HUNKS_REFUSED: /, refused);
  assert.match(refused, /\n- src\/b\.txt \(patch line 9\): HUNKS_REFUSED: /, refused);
  assert.match(refused, /\n {2}- hunk 1: HUNK_CONTEXT_MISSING: .*whitespace/, refused);
  const reread = toolResultsOf(requestWith(model.requests, 4))[3].text;
  assert.ok(reread.includes(sha256(A_BEFORE)) && reread.includes("beta"), `the refused patch changed src/a.txt: ${reread}`);
  const applied = toolResultsOf(requestWith(model.requests, 5))[4].text;
  assert.doesNotMatch(applied, /^[A-Z_]+: /, applied);

  const candidate = receipt.candidate_commit;
  assert.equal(git(repo, "rev-parse", `${candidate}^`).trim(), head);
  assert.equal(git(repo, "diff-tree", "-r", "--no-renames", "--name-status", head, candidate), "M\tsrc/a.txt\nM\tsrc/b.txt\nA\tsrc/c.txt\n");
  assert.equal(git(repo, "show", `${candidate}:src/a.txt`), "alpha\nBETA, patched through satyrn\ngamma\n");
  assert.equal(git(repo, "show", `${candidate}:src/b.txt`), "names:\n    satyrn\n");
  assert.equal(git(repo, "show", `${candidate}:src/c.txt`), "sea\n");
  assert.equal(status(repo), "", "the caller's checkout must be untouched");
});
