/**
 * engine.ts's `tool_call` guard inside an attempt. An attempt is recognised by
 * `SATYRN_MUTATION_CONTEXT_FILE` (or the older inline `SATYRN_MUTATION_CONTEXT`) being set
 * at all — even to a missing or malformed file — because that is exactly
 * when Pi runs with `--tools read,edit`, and in Pi 0.73.1 that allow-list also enables Pi's
 * built-in `read` and `edit`, which are not confined to the worktree. So the guard fails
 * closed: until mutator.ts has registered satyrn's tools (lib/context.ts's marker), every
 * tool call is blocked. Once they are, the loop breaker (lib/loop.ts) decides.
 */

import { inAttempt, toolsRegistered } from "./context.ts";
import { LoopBreaker } from "./loop.ts";

/** The reason given for every call while satyrn's tools are not registered. */
export const UNREGISTERED_REASON =
  "Blocked by satyrn: this attempt's confined read and edit tools are not registered " +
  "(the mutation context is missing or malformed, or the satyrn mutator extension did not load), " +
  "so no tool may run. Stop: the attempt cannot proceed.";

export class AttemptGuard {
  private readonly breaker = new LoopBreaker();

  /** `registered` is asked at every call (default: the process-wide marker). */
  constructor(private readonly registered: () => boolean = toolsRegistered) {}

  /** Returns a reason when the call must be blocked. */
  check(toolName: string, input: unknown): string | undefined {
    if (!this.registered()) return UNREGISTERED_REASON;
    return this.breaker.check(toolName, input);
  }
}

/** The guard for an attempt, or undefined outside one (the context variable is unset). */
export function guardFor(env: NodeJS.ProcessEnv, registered: () => boolean = toolsRegistered): AttemptGuard | undefined {
  if (!inAttempt(env)) return undefined;
  return new AttemptGuard(registered);
}
