/**
 * Run by `cargo bench -p satyrn-host --bench pi_channel` inside a real `satyrn-host confine`:
 * one edit through satyrn's Pi `edit` tool (lib/editor.ts) over the session's broker
 * connection, against the same edit through a `satyrn-host protocol` process per call
 * (which relays to the same broker), interleaved in one session. Prints one
 * `label p50_us p95_us` line per figure.
 */
import { processChannel } from "../lib/channel.ts";
import { parseContext } from "../lib/context.ts";
import { Editor } from "../lib/editor.ts";

const runs = Number(process.argv[2] ?? "100");
const parsed = parseContext(process.env);
if (!parsed.ok || parsed.context.broker === undefined) throw new Error(`not a confined context: ${parsed.ok ? "no broker" : parsed.reason}`);
const context = parsed.context;
const editors: Array<[string, Editor, string]> = [
  ["broker session", new Editor(context), "src/session.txt"],
  ["protocol process per call", new Editor(context, processChannel(context.host)), "src/process.txt"],
];
const samples = editors.map(() => [] as number[]);
for (const [, editor, path] of editors) await editor.read({ path });
for (let i = 0; i <= runs; i += 1) {
  for (const [k, [, editor, path]] of editors.entries()) {
    const started = process.hrtime.bigint();
    await editor.edit({ path, edits: [{ oldText: `v${i}`, newText: `v${i + 1}` }] });
    const us = Number(process.hrtime.bigint() - started) / 1000;
    if (i > 0) samples[k].push(us); // round 0 warms up
  }
}
const at = (s: number[], q: number) => [...s].sort((a, b) => a - b)[Math.min(s.length - 1, Math.floor(q * s.length))];
for (const [k, [label]] of editors.entries()) console.log(`${label}\t${at(samples[k], 0.5).toFixed(0)}\t${at(samples[k], 0.95).toFixed(0)}`);
