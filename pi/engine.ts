/**
 * satyrn's loop breaker for Pi: blocks a runaway repetition of one tool call (rule in
 * lib/loop.ts). Active only inside a satyrn attempt (when the mutation context is
 * present); ordinary sessions are left alone.
 */

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

import { parseContext } from "./lib/context.ts";
import { LoopBreaker } from "./lib/loop.ts";

export default function satyrnEngine(pi: ExtensionAPI): void {
  if (!parseContext(process.env).ok) return;
  const breaker = new LoopBreaker();
  pi.on("tool_call", async (event) => {
    const reason = breaker.check(event.toolName, event.input);
    if (reason !== undefined) return { block: true, reason };
    return undefined;
  });
}
