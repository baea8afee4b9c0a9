// Claude Code with satyrn as its MCP server: every change goes through satyrn's gates, and
// the built-ins that write files or run commands are disallowed.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { CLAUDE, DISALLOWED, claudePrint, tool, writeMcpConfig } from "../lib/claude.mjs";
import { describe, hostBin, makeFixture, snapshot } from "../lib/harness.mjs";
import { startScriptedModel } from "../lib/scripted-model.mjs";
import { assertModelSaw, assertRepoAfterStory, storyScript } from "../lib/story.mjs";

let fixture;
before(() => {
  fixture = makeFixture();
});
after(() => fixture?.cleanup());

test("claude code: read, PATH_UNDECLARED reaches the model, Write refused, the declared edit lands", async () => {
  const host = hostBin();
  const { repo, contract, home, dir } = fixture;
  const readme = snapshot(join(repo, "README.md"));
  const model = await startScriptedModel(storyScript(CLAUDE, repo));
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
    for (const name of ["read", "edit", "boundary"]) assert.ok(offered.includes(tool(name)), `${tool(name)} not offered: ${offered}`);

    assertModelSaw(model.requests, /No such tool available: Write/);
    assertRepoAfterStory(repo, readme);
  } finally {
    await model.close();
  }
});
