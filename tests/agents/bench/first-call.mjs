#!/usr/bin/env node
// Time to first tool call of each agent, confined (`satyrn-host confine --agent NAME`) against
// unconfined (the same agent started directly with satyrn's MCP server, `satyrn-host mcp`),
// with the same scripted model, interleaved rounds in one run: from spawning the command to
// the model receiving the agent's first request that offers tools (the request the model
// answers with its first tool call). Prints the median and the spread of each, and the ratio.
//
//   node tests/agents/bench/first-call.mjs [--runs N] [--agents claude,codex,pi]
//
// The satyrn-host binary: SATYRN_TEST_HOST_BIN, default target/release/satyrn-host (built by
// `cargo build --release -p satyrn-host`). Pi comes from pi/node_modules (`cd pi && npm ci`).
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { claudeEnv, writeMcpConfig } from "../lib/claude.mjs";
import { writeCodexHome } from "../lib/codex.mjs";
import { AGENTS, makeConfinedFixture } from "../lib/confined.mjs";
import { bin, clientEnv, describe, ROOT, run } from "../lib/harness.mjs";
import { startScriptedModel } from "../lib/scripted-model.mjs";

const { values } = parseArgs({
  options: { runs: { type: "string", default: "10" }, agents: { type: "string", default: "claude,codex,pi" } },
});
const runs = Number(values.runs);
const agents = values.agents.split(",");
const host = process.env.SATYRN_TEST_HOST_BIN ?? join(ROOT, "target", "release", "satyrn-host");
if (!existsSync(host)) throw new Error(`no satyrn-host at ${host}: cargo build --release -p satyrn-host`);
process.env.SATYRN_TEST_HOST_BIN = host;
const PI = join(ROOT, "pi", "node_modules", ".bin", "pi");
const PROMPT = "Change beta in src/a.txt.";

/** The Pi agent directory a user would have: one provider, the scripted model. */
function piAgentDir(dir, url) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "models.json"),
    JSON.stringify({
      providers: {
        scripted: {
          baseUrl: `${url}/v1`,
          api: "openai-completions",
          apiKey: "scripted",
          compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
          models: [{ id: "scripted-model", name: "scripted" }],
        },
      },
    }),
  );
}

const piArgs = ["--print", "--mode", "json", "--no-session", "--model", "scripted/scripted-model", PROMPT];

/** The command line and environment of one agent, confined or not, in a fresh fixture. */
function command(agent, confined, fixture, url) {
  const { repo, contract, home, dir } = fixture;
  if (agent === "pi") {
    piAgentDir(join(home, ".pi", "agent"), url);
    const env = { ...clientEnv(home), PI_OFFLINE: "1" };
    return confined
      ? { program: host, args: ["confine", "--agent", "pi", "--repo", repo, contract, "--", PI, ...piArgs], env }
      : { program: PI, args: piArgs, env };
  }
  const a = AGENTS[agent];
  a.userConfig(home, url);
  if (confined) {
    return { program: host, args: ["confine", "--agent", agent, "--repo", repo, contract, "--", ...a.argv(PROMPT)], env: clientEnv(home, a.env(url)) };
  }
  const server = { command: host, args: ["mcp", "--repo", repo, contract] };
  if (agent === "codex") {
    const codexHome = join(dir, "codex-home");
    writeCodexHome(codexHome, { modelUrl: url, ...server, cwd: repo });
    return { program: bin("codex"), args: ["exec", PROMPT], env: clientEnv(home, { CODEX_HOME: codexHome }) };
  }
  const mcp = join(dir, "mcp.json");
  writeMcpConfig(mcp, server);
  return { program: bin("claude"), args: ["-p", PROMPT, "--mcp-config", mcp, "--strict-mcp-config"], env: claudeEnv(home, join(dir, "claude-config"), url) };
}

/** Milliseconds from spawn to the first model request that offers tools. */
async function once(agent, confined) {
  const fixture = makeConfinedFixture();
  const model = await startScriptedModel([{ text: "Nothing to do." }]);
  try {
    const { program, args, env } = command(agent, confined, fixture, model.url);
    const started = Date.now();
    const result = await run(program, args, { cwd: fixture.repo, env, timeoutMs: 120_000 });
    const first = model.requests.find((r) => (r.body?.tools?.length ?? 0) > 0);
    if (result.code !== 0 || !first) throw new Error(`${agent} ${confined ? "confined" : "unconfined"}: ${describe(result)}`);
    return first.at - started;
  } finally {
    await model.close();
    fixture.cleanup();
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

console.log(`time to first tool call, ${runs} interleaved runs each, satyrn-host ${host}`);
console.log("| agent | unconfined (median, min–max) | confined (median, min–max) | ratio |");
console.log("|---|---|---|---|");
for (const agent of agents) {
  const times = { false: [], true: [] };
  await once(agent, false); // warm the page cache and the agents' first-run work
  await once(agent, true);
  for (let i = 0; i < runs; i++) {
    for (const confined of i % 2 ? [true, false] : [false, true]) times[confined].push(await once(agent, confined));
  }
  const row = (xs) => `${median(xs).toFixed(0)} ms (${Math.min(...xs)}–${Math.max(...xs)})`;
  console.log(`| ${agent} | ${row(times.false)} | ${row(times.true)} | ${(median(times.true) / median(times.false)).toFixed(2)}× |`);
}
