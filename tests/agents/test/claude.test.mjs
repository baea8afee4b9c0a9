// Claude Code with satyrn as its MCP server: every change goes through satyrn's gates, and
// the built-ins that write files or run commands are disallowed.
import assert from "node:assert/strict";
import { join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import { CLAUDE_BUILTINS, DISALLOWED, claudeClient, claudePrint, tool, writeMcpConfig } from "../lib/claude.mjs";
import { describe, hostBin, makeFixture, snapshot } from "../lib/harness.mjs";
import { startScriptedModel } from "../lib/scripted-model.mjs";
import { assertModelSaw, assertRepoAfterStory, storyScript } from "../lib/story.mjs";

let fixture;
beforeEach(() => {
  fixture = makeFixture();
});
afterEach(() => fixture?.cleanup());

for (const builtin of CLAUDE_BUILTINS) {
  test(`claude code: read, PATH_UNDECLARED reaches the model, ${builtin.name} refused, the declared edit lands`, async () => {
    const client = claudeClient(builtin);
    const host = hostBin();
    const { repo, contract, home, dir } = fixture;
    const readme = snapshot(join(repo, "README.md"));
    const model = await startScriptedModel(storyScript(client, repo));
    try {
      const mcpConfig = join(dir, "mcp.json");
      writeMcpConfig(mcpConfig, { command: host, args: ["mcp", "--repo", repo, contract] });
      const result = await claudePrint({
        home,
        configDir: join(dir, "claude-config"),
        modelUrl: model.url,
        mcpConfig,
        cwd: repo,
        prompt: "Change beta in src/a.txt.",
      });
      assert.equal(result.code, 0, describe(result));

      const main = model.requests.filter((r) => r.kind === "messages" && Array.isArray(r.body?.tools) && r.body.tools.length > 0);
      assert.ok(main.length >= 5, `expected the five story turns, got ${main.length}`);
      const offered = main[0].body.tools.map((t) => t.name);
      for (const name of DISALLOWED) assert.ok(!offered.includes(name), `claude offered ${name}: ${offered}`);
      for (const name of ["read", "edit", "list", "search", "write", "delete", "boundary"]) assert.ok(offered.includes(tool(name)), `${tool(name)} not offered: ${offered}`);

      assertModelSaw(model.requests, client.refusal);
      assertRepoAfterStory(repo, readme);
    } finally {
      await model.close();
    }
  });
}
