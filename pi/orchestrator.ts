/**
 * `/implement CONTRACT`: delivers one satyrn attempt for the repository Pi works in and
 * reports the receipt (code, candidate ref and commit). Needs `SATYRN_MODEL` and
 * `satyrn-host` (`SATYRN_HOST_BIN` or PATH). The attempt's own Pi child does not load this
 * extension, so /implement cannot recurse.
 */

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

import { implement, summary } from "./lib/implement.ts";

export default function satyrnOrchestrator(pi: ExtensionAPI): void {
  pi.registerCommand("implement", {
    description: "Run one satyrn attempt for CONTRACT and create a candidate ref",
    handler: async (args, ctx) => {
      try {
        const outcome = await implement(args ?? "", { cwd: ctx.cwd, env: process.env });
        const ok = outcome.kind === "receipt" && outcome.receipt.code === "OK";
        ctx.ui.notify(summary(outcome), ok ? "info" : "error");
      } catch {
        // implement() never rejects; a failing notify has nowhere else to go
      }
    },
  });
}
