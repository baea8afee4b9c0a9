/**
 * satyrn's `tool_call` guard for Pi (lib/guard.ts), active only inside a satyrn attempt —
 * whenever `SATYRN_MUTATION_CONTEXT_FILE` is set, even to a bad file; ordinary sessions are left
 * alone. It fails closed: every tool call is blocked unless mutator.ts registered
 * satyrn's confined `read` and `edit`; then it breaks runaway repetitions of one call
 * (lib/loop.ts).
 */

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

import { guardFor } from "./lib/guard.ts";

export default function satyrnEngine(pi: ExtensionAPI): void {
  const guard = guardFor(process.env);
  if (guard === undefined) return;
  pi.on("tool_call", async (event) => {
    const reason = guard.check(event.toolName, event.input);
    if (reason !== undefined) return { block: true, reason };
    return undefined;
  });
}
