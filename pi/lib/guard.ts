/**
 * engine.ts's `tool_call` guard inside an attempt. An attempt is recognised by
 * `SATYRN_MUTATION_CONTEXT_FILE` (or the older inline `SATYRN_MUTATION_CONTEXT`) being set
 * at all — even to a missing or malformed file — because that is exactly when Pi runs with
 * `--tools read,edit,ls,find,grep,write,delete,apply_patch`, and in Pi 0.73.1 that allow-list also
 * enables Pi's built-in `read`, `edit`, `ls`, `find`, `grep` and `write`, which are not
 * confined to the worktree. So the guard fails closed: until mutator.ts has registered
 * satyrn's tools (lib/context.ts's marker), every tool call is blocked; after that, a call
 * of any tool not in [`SATYRN_TOOLS`] is blocked. Then the loop breaker (lib/loop.ts)
 * decides.
 *
 * Under the kernel's rules (`satyrn-host confine` sets `SATYRN_CONFINED=1` exactly when
 * Landlock holds the run, as with `confine --agent pi`), Pi's other tools — its `bash` —
 * may run too: the kernel refuses their writes, so the guard need not. satyrn's tools must
 * still be registered first, and the loop breaker still applies.
 */

import { inAttempt, SATYRN_TOOLS, toolsRegistered } from "./context.ts";

/** Set to `1` by `satyrn-host confine` when the kernel's rules hold the run (and removed otherwise). */
export const CONFINED_VAR = "SATYRN_CONFINED";
import { LoopBreaker } from "./loop.ts";

/** The reason given for every call while satyrn's tools are not registered. */
export const UNREGISTERED_REASON =
  "Blocked by satyrn: this attempt's confined tools are not registered " +
  "(the mutation context is missing or malformed, or the satyrn mutator extension did not load), " +
  "so no tool may run. Stop: the attempt cannot proceed.";

/** The reason given for a call of a tool that is not one of satyrn's. */
export function unknownToolReason(toolName: string): string {
  return `Blocked by satyrn: \`${toolName}\` is not one of this attempt's tools (${SATYRN_TOOLS.join(", ")}).`;
}

export class AttemptGuard {
  private readonly breaker = new LoopBreaker();

  /**
   * `registered` is asked at every call (default: the process-wide marker); `confined`: the
   * kernel's rules hold the run, so tools other than satyrn's may run.
   */
  constructor(
    private readonly registered: () => boolean = toolsRegistered,
    private readonly confined = false,
  ) {}

  /** Returns a reason when the call must be blocked. */
  check(toolName: string, input: unknown): string | undefined {
    if (!this.registered()) return UNREGISTERED_REASON;
    if (!this.confined && !SATYRN_TOOLS.includes(toolName)) return unknownToolReason(toolName);
    return this.breaker.check(toolName, input);
  }
}

/** The guard for an attempt, or undefined outside one (the context variable is unset). */
export function guardFor(env: NodeJS.ProcessEnv, registered: () => boolean = toolsRegistered): AttemptGuard | undefined {
  if (!inAttempt(env)) return undefined;
  return new AttemptGuard(registered, env[CONFINED_VAR] === "1");
}
