/**
 * The demo's stand-in for an LLM (scripts/demo.sh): starts the scripted model on
 * 127.0.0.1, writes a Pi agent directory whose only model is it, prints
 * `MODEL AGENT_DIR` on one line, and serves until stdin closes.
 *
 * Usage: node --import tsx demo/scripted-model-server.ts AGENT_DIR
 */

import { MODEL, startScriptedModel, writeAgentDir, type Step } from "../test/scripted-model.ts";

const script: Step[] = [
  { toolCalls: [{ name: "read", arguments: { path: "src/greeting.rs" } }] },
  // A slip a real model makes: the anchor is not in the file. satyrn refuses it.
  { toolCalls: [{ name: "edit", arguments: { path: "src/greeting.rs", edits: [{ oldText: "\"hello planet\"", newText: "\"hello satyrn\"" }] } }] },
  // A forbidden edit: config.toml is not declared writable.
  { toolCalls: [{ name: "edit", arguments: { path: "config.toml", edits: [{ oldText: "secret = 1", newText: "secret = 0" }] } }] },
  { toolCalls: [{ name: "edit", arguments: { path: "src/greeting.rs", edits: [{ oldText: "\"hello world\"", newText: "\"hello satyrn\"" }] } }] },
  { text: "The greeting now says hello satyrn." },
];

const agentDir = process.argv[2];
if (agentDir === undefined) {
  process.stderr.write("usage: scripted-model-server.ts AGENT_DIR\n");
  process.exit(2);
}
const model = await startScriptedModel(script);
writeAgentDir(agentDir, model.baseUrl);
process.stdout.write(`${MODEL} ${agentDir}\n`);
process.stdin.resume();
process.stdin.on("end", () => {
  void model.close().then(() => process.exit(0));
});
