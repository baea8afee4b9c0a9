// Codex CLI with satyrn as its MCP server: every change goes through satyrn's gates, and
// Codex's own exec/patch tools are off.
import assert from "node:assert/strict";
import { join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import { CODEX_BUILTINS, codexClient, codexExec, NAMESPACE, writeCodexHome } from "../lib/codex.mjs";
import { describe, hostBin, makeFixture, snapshot } from "../lib/harness.mjs";
import { startScriptedModel } from "../lib/scripted-model.mjs";
import { assertModelSaw, assertRepoAfterStory, storyScript } from "../lib/story.mjs";

/** Tools that would let Codex write or run anything itself. */
const EXEC_TOOLS = ["shell", "exec_command", "write_stdin", "apply_patch", "local_shell", "unified_exec"];

let fixture;
beforeEach(() => {
  fixture = makeFixture();
});
afterEach(() => fixture?.cleanup());

for (const builtin of CODEX_BUILTINS) {
  test(`codex: read, PATH_UNDECLARED reaches the model, ${builtin.name} refused, the declared edit lands`, async () => {
    const client = codexClient(builtin);
    const host = hostBin();
    const { repo, contract, home, dir } = fixture;
    const readme = snapshot(join(repo, "README.md"));
    const model = await startScriptedModel(storyScript(client, repo));
    try {
      const codexHome = join(dir, "codex-home");
      writeCodexHome(codexHome, { modelUrl: model.url, command: host, args: ["mcp", "--repo", repo, contract], cwd: repo });
      const result = await codexExec({ codexHome, home, cwd: repo, prompt: "Change beta in src/a.txt." });
      assert.equal(result.code, 0, describe(result));

      const first = model.requests.find((r) => r.kind === "responses");
      assert.ok(first, "codex sent no Responses request");
      const offered = first.body.tools.map((t) => t.name);
      for (const name of EXEC_TOOLS) assert.ok(!offered.includes(name), `codex offered ${name}: ${offered}`);
      const satyrn = first.body.tools.find((t) => t.type === "namespace" && t.name === NAMESPACE);
      assert.ok(satyrn, `satyrn's tools were not offered: ${offered}`);
      assert.deepEqual(satyrn.tools.map((t) => t.name).sort(), ["apply_patch", "boundary", "change_set", "delete", "edit", "list", "read", "search", "write"]);

      assertModelSaw(model.requests, client.refusal);
      assertRepoAfterStory(repo, readme);
    } finally {
      await model.close();
    }
  });
}
