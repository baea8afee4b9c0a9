#!/usr/bin/env node
// Time to first tool call of each agent, confined (`satyrn-host confine --agent NAME`) against
// unconfined (the same agent started directly with satyrn's MCP server, `satyrn-host mcp`),
// with the same scripted model, interleaved rounds in one run: from spawning the command to
// the model receiving the agent's first request that offers tools (the request the model
// answers with its first tool call). Prints the median and the spread of each, and the ratio.
// Pi has two baselines: plain Pi, and Pi with satyrn's package loaded (which `--agent pi`
// adds besides the kernel's rules; Pi compiles its TypeScript at every start).
//
//   node tests/agents/bench/first-call.mjs [--runs N] [--agents claude,codex,pi]
//
// The satyrn-host binary: SATYRN_TEST_HOST_BIN, default target/release/satyrn-host (built by
// `cargo build --release -p satyrn-host`). Pi comes from pi/node_modules (`cd pi && npm ci`).
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
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

/**
 * What `confine --agent pi` prepares (the agent directory with satyrn's package, the
 * context), made once by a kept run and copied, for Pi with satyrn's package unconfined.
 */
function piWithPackage(fixture, env) {
  const out = spawnSync(host, ["confine", "--agent", "pi", "--keep-scratch", "--repo", fixture.repo, fixture.contract, "--", "true"], { env, encoding: "utf8" });
  const kept = out.stderr.match(/scratch kept at (\S+)/);
  if (out.status !== 0 || !kept) throw new Error(`confine --agent pi --keep-scratch: ${out.stderr}`);
  const pi = join(fixture.dir, "pi-package");
  cpSync(join(kept[1], "home", ".pi"), pi, { recursive: true });
  rmSync(kept[1], { recursive: true, force: true });
  return {
    ...env,
    PI_CODING_AGENT_DIR: join(pi, "agent"),
    SATYRN_MUTATION_CONTEXT_FILE: join(pi, "context.json"),
    SATYRN_HOST_BIN: host,
    JITI_FS_CACHE: "false",
  };
}

/** The command line and environment of one agent in `mode`, in a fresh fixture. */
function command(agent, mode, fixture, url) {
  const confined = mode === "confined";
  const { repo, contract, home, dir } = fixture;
  if (agent === "pi") {
    piAgentDir(join(home, ".pi", "agent"), url);
    const env = { ...clientEnv(home), PI_OFFLINE: "1" };
    if (confined) return { program: host, args: ["confine", "--agent", "pi", "--repo", repo, contract, "--", PI, ...piArgs], env };
    if (mode === "package") return { program: PI, args: piArgs, env: piWithPackage(fixture, env) };
    return { program: PI, args: piArgs, env };
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
async function once(agent, mode) {
  const fixture = makeConfinedFixture();
  const model = await startScriptedModel([{ text: "Nothing to do." }]);
  try {
    const { program, args, env } = command(agent, mode, fixture, model.url);
    const started = Date.now();
    const result = await run(program, args, { cwd: fixture.repo, env, timeoutMs: 120_000 });
    const first = model.requests.find((r) => (r.body?.tools?.length ?? 0) > 0);
    if (result.code !== 0 || !first) throw new Error(`${agent} ${mode}: ${describe(result)}`);
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
console.log("| agent | baseline | baseline (median, min–max) | confined (median, min–max) | ratio |");
console.log("|---|---|---|---|---|");
for (const agent of agents) {
  // Pi's baselines: plain Pi, and Pi with satyrn's package (what --agent pi adds besides the kernel).
  const baselines = agent === "pi" ? ["unconfined", "package"] : ["unconfined"];
  const modes = [...baselines, "confined"];
  const times = Object.fromEntries(modes.map((m) => [m, []]));
  for (const mode of modes) await once(agent, mode); // warm the page cache and first-run work
  for (let i = 0; i < runs; i++) {
    for (const mode of i % 2 ? [...modes].reverse() : modes) times[mode].push(await once(agent, mode));
  }
  const cell = (xs) => `${median(xs).toFixed(0)} ms (${Math.min(...xs)}–${Math.max(...xs)})`;
  for (const base of baselines) {
    const name = base === "package" ? `${agent} with satyrn's package, unconfined` : `${agent} unconfined`;
    console.log(`| ${agent} | ${name} | ${cell(times[base])} | ${cell(times.confined)} | ${(median(times.confined) / median(times[base])).toFixed(2)}× |`);
  }
}
