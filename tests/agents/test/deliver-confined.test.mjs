// `satyrn-host deliver … -- satyrn-host confine --agent NAME …`: the documented way to run an
// agent on a task. The agent keeps every built-in; the candidate's diff is exactly satyrn's
// edit, the caller's checkout, refs, stash and config are unchanged, no process is left.
import assert from "node:assert/strict";
import { join } from "node:path";
import { afterEach, test } from "node:test";
import { A_AFTER, clientEnv, describe, git, hostBin, run } from "../lib/harness.mjs";
import { AGENTS, STRAY, assertStory, assertToldTheModel, confinedScript, makeConfinedFixture, processesWith, repoState } from "../lib/confined.mjs";
import { startScriptedModel } from "../lib/scripted-model.mjs";

const cleanups = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()();
});

/** The refs outside satyrn's own namespace (where deliver adds the candidate and receipt). */
const callerRefs = (refs) => refs.split("\n").filter((l) => l && !l.startsWith("refs/satyrn/")).join("\n");

for (const agent of Object.keys(AGENTS)) {
  test(`deliver + confine --agent ${agent}: the candidate is exactly satyrn's edit, the caller's repository unchanged`, async (t) => {
    const host = hostBin();
    const fixture = makeConfinedFixture();
    cleanups.push(async () => fixture.cleanup());
    const { repo, contract, home, dir } = fixture;
    // The caller's own `.env`: another worktree's, unreadable from the attempt's.
    const { script, expected } = confinedScript(agent, null, join(repo, ".env"));
    const model = await startScriptedModel(script);
    cleanups.push(() => model.close());
    AGENTS[agent].userConfig(home, model.url);
    const head = git(repo, "rev-parse", "HEAD").trim();
    const before = repoState(repo);

    const a = AGENTS[agent];
    const result = await run(
      host,
      ["deliver", "--repo", repo, "--timeout", "120", contract, "--", host, "confine", "--agent", agent, "--repo", ".", contract, "--", ...a.argv("Change beta in src/a.txt.")],
      { cwd: dir, env: clientEnv(home, a.env(model.url)), timeoutMs: 150_000 },
    );
    assert.equal(result.code, 0, describe(result));
    const receipt = JSON.parse(result.stdout.trim());
    assert.equal(receipt.code, "OK", describe(result));
    assert.equal(receipt.outcome, "candidate-created");
    assert.deepEqual(receipt.paths, ["src/a.txt"]);

    assertToldTheModel(model.requests);
    const refused = assertStory(model.requests, expected);
    t.diagnostic(`deliver + ${agent}: ${refused} of ${expected.filter((s) => s.refusal).length} built-in and shell writes refused`);

    const candidate = receipt.candidate_commit;
    assert.equal(git(repo, "rev-parse", `${candidate}^`).trim(), head);
    assert.equal(git(repo, "diff-tree", "-r", "--no-renames", "--name-status", head, candidate), "M\tsrc/a.txt\n");
    assert.equal(git(repo, "show", `${candidate}:src/a.txt`), A_AFTER);

    const after = repoState(repo);
    assert.deepEqual(after.files, before.files, "the caller's files changed (bytes, mode or inode)");
    assert.equal(callerRefs(after.refs), callerRefs(before.refs), "the caller's refs changed");
    assert.equal(after.stash, "", "the caller's stash changed");
    assert.equal(after.status, before.status, "the caller's checkout changed");
    assert.equal(git(repo, "rev-parse", "HEAD").trim(), head);
    assert.deepEqual(processesWith("sleep 313"), [], `a process of the run is left (${STRAY})`);
  });
}
