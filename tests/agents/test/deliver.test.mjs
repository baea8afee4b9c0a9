// The whole slice: `satyrn-host deliver` runs a real agent CLI in a detached worktree, the
// agent changes files only through `satyrn-host mcp`, and the result is a candidate ref whose
// diff is exactly the declared change, with the caller's checkout untouched.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, test } from "node:test";
import { A_AFTER, A_BEFORE, PACKAGE_DIR, clientEnv, describe, git, hostBin, makeFixture, run, snapshot, status } from "../lib/harness.mjs";
import { startScriptedModel } from "../lib/scripted-model.mjs";
import { PWNED, assertModelSaw, storyScript } from "../lib/story.mjs";
import { CLAUDE } from "../lib/claude.mjs";
import { CODEX } from "../lib/codex.mjs";

const cleanups = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()();
});

for (const [client, script] of [
  ["codex", CODEX],
  ["claude", CLAUDE],
]) {
  test(`deliver + ${client}: OK receipt, the candidate's diff is exactly src/a.txt, the checkout untouched`, async () => {
    const host = hostBin();
    const fixture = makeFixture();
    cleanups.push(async () => fixture.cleanup());
    const { repo, contract, dir } = fixture;
    const state = join(dir, "agent-state");
    mkdirSync(state);
    const before = { a: snapshot(join(repo, "src", "a.txt")), readme: snapshot(join(repo, "README.md")) };
    const head = git(repo, "rev-parse", "HEAD").trim();
    // Claude's Write aims at the caller's checkout (absolute path); Codex's patch at the worktree.
    const model = await startScriptedModel(storyScript(script, repo));
    cleanups.push(() => model.close());

    const result = await run(
      host,
      ["deliver", "--repo", repo, "--timeout", "120", contract, "--", process.execPath, join(PACKAGE_DIR, "fixtures", "run-agent.mjs"), client],
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
    const lines = result.stdout.split("\n").filter((l) => l !== "");
    assert.equal(lines.length, 1, `stdout must be exactly one receipt line: ${result.stdout}`);
    const receipt = JSON.parse(lines[0]);
    assert.equal(receipt.code, "OK", describe(result));
    assert.equal(receipt.outcome, "candidate-created");
    assert.equal(receipt.contract_id, "agents-demo");
    assert.equal(receipt.base_commit, head);
    assert.equal(receipt.candidate_ref, "refs/satyrn/candidates/agents-demo/head");
    assert.deepEqual(receipt.paths, ["src/a.txt"]);
    assert.equal(receipt.exit_code, 0);

    assertModelSaw(model.requests, script.refusal);

    const candidate = git(repo, "rev-parse", receipt.candidate_ref).trim();
    assert.equal(candidate, receipt.candidate_commit);
    assert.equal(git(repo, "rev-parse", `${candidate}^`).trim(), head, "the candidate's only parent is the base");
    assert.equal(git(repo, "rev-list", "--count", "--parents", "-n1", candidate).trim(), "1");
    assert.equal(git(repo, "diff-tree", "-r", "--no-renames", "--name-status", head, candidate), "M\tsrc/a.txt\n");
    assert.equal(git(repo, "show", `${candidate}:src/a.txt`), A_AFTER);
    const patch = git(repo, "diff", "--no-ext-diff", "--no-color", "--no-renames", head, candidate).split("\n");
    assert.match(patch[1], /^index [0-9a-f]+\.\.[0-9a-f]+ 100644$/, "same mode, one blob changed");
    assert.deepEqual(
      [patch[0], ...patch.slice(2)],
      [
        "diff --git a/src/a.txt b/src/a.txt",
        "--- a/src/a.txt",
        "+++ b/src/a.txt",
        "@@ -1,3 +1,3 @@",
        " alpha",
        "-beta",
        "+BETA, edited through satyrn",
        " gamma",
        "",
      ],
      "the candidate's diff is exactly the declared change",
    );
    assert.equal(git(repo, "show", `${head}:src/a.txt`), A_BEFORE);

    assert.equal(status(repo), "", "the caller's checkout must be untouched");
    assert.deepEqual(snapshot(join(repo, "src", "a.txt")), before.a);
    assert.deepEqual(snapshot(join(repo, "README.md")), before.readme);
    assert.equal(snapshot(join(repo, PWNED)), null);
    assert.equal(git(repo, "rev-parse", "HEAD").trim(), head);
    assert.equal(git(repo, "worktree", "list", "--porcelain").split("\n").filter((l) => l.startsWith("worktree ")).length, 1);
  });
}
