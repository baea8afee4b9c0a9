/**
 * The loop breaker's rule: the **third identical consecutive** tool call (same tool name,
 * same arguments, compared as canonical JSON) is blocked, and so is every further identical
 * call; any different call resets the count. Two identical calls in a row are allowed — a
 * retry after reading is normal — a third is a runaway.
 */

/** How many identical consecutive calls are allowed before blocking. */
export const ALLOWED_REPEATS = 2;

export class LoopBreaker {
  private lastKey: string | undefined;
  private repeats = 0;

  /** Records a call; returns a reason when it must be blocked. */
  check(toolName: string, input: unknown): string | undefined {
    const key = `${toolName}\u0000${canonical(input)}`;
    if (key === this.lastKey) {
      this.repeats += 1;
    } else {
      this.lastKey = key;
      this.repeats = 1;
    }
    if (this.repeats > ALLOWED_REPEATS) {
      return (
        `Blocked by satyrn's loop breaker: this is call number ${this.repeats} of \`${toolName}\` with identical ` +
        `arguments in a row, and it will not give a different result. Read the file again, change the arguments, ` +
        `or stop if the task is done.`
      );
    }
    return undefined;
  }
}

/** JSON with object keys sorted, so argument order does not hide a repetition. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
