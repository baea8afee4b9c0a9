/**
 * satyrn's `edit` and `read` for Pi: Pi's argument shapes in, one protocol `edit` (a batch,
 * all-or-nothing) or `read` out, over the session's channel (lib/channel.ts: the confined
 * run's broker connection, else one `satyrn-host protocol` process per request).
 *
 * - The host, not this code, decides which paths are declared: every request carries the
 *   revision this attempt knows for the path, or `null`.
 * - The revision map advances only on a typed success: an edit's, or a read's (the agent
 *   has then seen the file's current bytes). It also knows how much of each revision the
 *   agent saw (read pages add up; a search hit or the attempt's starting map is part; a
 *   write is whole; an edit keeps what its base was), so a `write` over or a `delete` of
 *   a file seen only in part says so (`seen: "part"`) and the host refuses it
 *   (`PARTLY_SEEN`): the same rule as `satyrn-host mcp`'s (crates/mcp/src/seen.rs).
 * - A refusal (a well-formed response with `ok:false`) becomes a Pi tool error naming the
 *   code and message; the session goes on.
 * - A timeout, crash, malformed response or any transport failure **poisons** the editor:
 *   the edit may have been published, so every later edit is refused without sending anything.
 * - No exception escapes other than the tool error itself.
 */

import { isAbsolute, relative } from "node:path";

import type { MutationContext } from "./context.ts";
import { openChannel, type Channel } from "./channel.ts";
import { describe } from "./exchange.ts";

/** One edit of a batch, as the protocol's `edit` operation takes it. */
export type ProtocolEdit =
  | { op: "replace"; old_text: string; new_text: string; occurrence: number | null }
  | { op: "insert_after"; anchor_text: string; new_text: string; occurrence: number | null };

/** A tool error with the text the model receives. */
export class EditRefused extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(`${code}: ${message}`);
    this.name = "EditRefused";
  }
}

/**
 * Normalizes two deterministic caller slips before validation, as Pi's own `edit` does:
 * `edits` sent as a JSON string, and a missing `op` when exactly one of `oldText` /
 * `anchorText` is present. Anything else is returned unchanged (and validated strictly).
 */
export function prepareEditArguments(input: unknown): unknown {
  if (typeof input !== "object" || input === null) return input;
  const args = { ...(input as Record<string, unknown>) };
  if (typeof args.edits === "string") {
    try {
      const parsed: unknown = JSON.parse(args.edits);
      if (Array.isArray(parsed)) args.edits = parsed;
    } catch {
      // left as is: validation refuses it
    }
  }
  if (Array.isArray(args.edits)) {
    args.edits = args.edits.map((edit: unknown) => {
      if (typeof edit !== "object" || edit === null) return edit;
      const e = edit as Record<string, unknown>;
      if (e.op !== undefined) return e;
      const hasOld = e.oldText !== undefined;
      const hasAnchor = e.anchorText !== undefined;
      if (hasOld && !hasAnchor) return { ...e, op: "replace" };
      if (hasAnchor && !hasOld) return { ...e, op: "insert_after" };
      return e;
    });
  }
  return args;
}

/** What the agent saw of one revision of a file. */
interface View {
  sha: string;
  /** Line ranges seen, 1-based and inclusive, sorted and disjoint. */
  lines: Array<[number, number]>;
  whole: boolean;
}

/** Adds `[start, end]` to sorted, disjoint `ranges`, merging what touches it. */
function addRange(ranges: Array<[number, number]>, start: number, end: number): Array<[number, number]> {
  const kept: Array<[number, number]> = [];
  for (const [a, b] of ranges) {
    if (b + 1 < start || end + 1 < a) kept.push([a, b]);
    else {
      start = Math.min(start, a);
      end = Math.max(end, b);
    }
  }
  kept.push([start, end]);
  return kept.sort((x, y) => x[0] - y[0]);
}

export class Editor {
  private readonly views = new Map<string, View>();
  private poisonedBy: string | undefined;

  constructor(
    private readonly context: MutationContext,
    /** Where this session's requests go; the toolbox (lib/toolbox.ts) shares it. */
    readonly channel: Channel = openChannel(context),
  ) {
    // The attempt's starting map: known revisions, none of them seen.
    for (const [path, sha] of context.revisions) this.views.set(path, { sha, lines: [], whole: false });
  }

  /** The revision this attempt knows for `path`, if any. */
  revision(path: string): string | undefined {
    return this.views.get(path)?.sha;
  }

  /** How much of that revision the agent saw: the protocol's `seen` of a write or delete. */
  seen(path: string): "whole" | "part" {
    return this.views.get(path)?.whole === true ? "whole" : "part";
  }

  /** A read page of `sha`: its lines are now seen, added to what was seen of that revision. */
  private page(path: string, sha: string, offset: number, lines: number, total: number): void {
    let view = this.views.get(path);
    if (view === undefined || view.sha !== sha) view = { sha, lines: [], whole: false };
    if (lines > 0) view.lines = addRange(view.lines, offset, offset + lines - 1);
    const first = view.lines[0];
    view.whole = view.whole || total === 0 || (first !== undefined && first[0] <= 1 && first[1] >= total);
    this.views.set(path, view);
  }

  /** Every revision this attempt knows, by path. */
  revisions(): Array<[string, string]> {
    return [...this.views].map(([path, view]) => [path, view.sha]);
  }

  /** An edit from `base` to `sha`: whole if the view of `base` was. */
  edited(path: string, base: string | null, sha: string): void {
    const view = this.views.get(path);
    const whole = view !== undefined && view.whole && view.sha === base;
    this.views.set(path, { sha, lines: [], whole });
  }

  /** Why the editor is poisoned, if it is. */
  get poisoned(): string | undefined {
    return this.poisonedBy;
  }

  /** A search hit: `sha` is known, a few of its lines seen (a whole view of it is kept). */
  hit(path: string, sha: string): void {
    if (this.views.get(path)?.sha !== sha) this.views.set(path, { sha, lines: [], whole: false });
  }

  /** A write: every byte of `sha` is the agent's. */
  wrote(path: string, sha: string): void {
    this.took(path, sha, true);
  }

  /** `path` now holds `sha`, seen whole or not (a moved file is seen as its source was). */
  took(path: string, sha: string, whole: boolean): void {
    this.views.set(path, { sha, lines: [], whole });
  }

  /** Forgets the revision of `path` (it was deleted). */
  forget(path: string): void {
    this.views.delete(path);
  }

  /**
   * Poisons the editor: a mutation's outcome is unknown (it may have been published), so
   * every later edit, write and delete of this attempt is refused without spawning. The
   * first reason is kept.
   */
  poison(reason: string): void {
    this.poisonedBy ??= reason;
  }

  /** Builds the protocol `edit` request; throws `EditRefused` for a bad shape. */
  request(params: unknown): Record<string, unknown> {
    const { path, edits } = this.validate(prepareEditArguments(params));
    return {
      version: 1,
      operation: "edit",
      repo: this.context.repo,
      contract: this.context.contract,
      path,
      expected_sha256: this.revision(path) ?? null,
      edits,
    };
  }

  /** Builds the protocol `read` request; throws `EditRefused` for a bad shape. */
  readRequest(params: unknown): Record<string, unknown> {
    if (typeof params !== "object" || params === null) {
      throw new EditRefused("INVALID_REQUEST", "the read arguments must be an object {path, offset?, limit?}");
    }
    const p = params as Record<string, unknown>;
    if (typeof p.path !== "string" || p.path === "") {
      throw new EditRefused("INVALID_REQUEST", "`path` must be a non-empty string");
    }
    for (const key of ["offset", "limit"] as const) {
      const v = p[key];
      if (v !== undefined && v !== null && !(Number.isInteger(v) && (v as number) >= 1)) {
        throw new EditRefused("INVALID_REQUEST", `\`${key}\` must be a positive integer`);
      }
    }
    return {
      version: 1,
      operation: "read",
      repo: this.context.repo,
      contract: this.context.contract,
      path: this.worktreePath(p.path),
      offset: p.offset ?? null,
      limit: p.limit ?? null,
    };
  }

  /**
   * Reads a page of a file inside the worktree (never through a symlink, never outside).
   * A read records the file's revision: the agent has now seen its current bytes. A failed
   * read never poisons the editor (nothing can have been written).
   */
  async read(params: unknown): Promise<string> {
    try {
      const request = this.readRequest(params);
      const outcome = await this.channel.send(request);
      if (outcome.kind === "transport") throw new EditRefused("READ_UNAVAILABLE", outcome.reason);
      const { response } = outcome;
      if (!response.ok) throw new EditRefused(response.code, response.message);
      const r = response.result ?? {};
      if (typeof r.text !== "string" || typeof r.sha256 !== "string" || typeof r.path !== "string") {
        throw new EditRefused("READ_UNAVAILABLE", "malformed read result from satyrn-host");
      }
      const count = (v: unknown): number => (typeof v === "number" && Number.isInteger(v) && v >= 0 ? v : 0);
      this.page(r.path, r.sha256, count(r.offset), count(r.lines), count(r.total_lines));
      const notice = typeof r.notice === "string" && r.notice !== "" ? `\n\n${r.notice}` : "";
      return `${r.text}${notice}`;
    } catch (error) {
      if (error instanceof EditRefused) throw error;
      throw new EditRefused("READ_FAILED", `unexpected error: ${describe(error)}`);
    }
  }

  /** Performs one batch. Resolves with the text for the model; rejects only with `EditRefused`. */
  async edit(params: unknown): Promise<string> {
    try {
      if (this.poisonedBy !== undefined) {
        throw new EditRefused(
          "EDIT_UNAVAILABLE",
          `an earlier edit's outcome is unknown (${this.poisonedBy}); no further edits are possible in this attempt`,
        );
      }
      const request = this.request(params);
      const outcome = await this.channel.send(request);
      if (outcome.kind === "transport") {
        this.poisonedBy = outcome.reason;
        throw new EditRefused(
          "EDIT_UNAVAILABLE",
          `${outcome.reason}; the edit may or may not have been applied, and no further edits are possible in this attempt`,
        );
      }
      const { response } = outcome;
      if (!response.ok) throw new EditRefused(response.code, diagnostics(response.message, response.result));
      const result = response.result ?? {};
      const path = result.path;
      const sha = result.sha256;
      if (typeof path !== "string" || typeof sha !== "string" || path !== request.path) {
        this.poisonedBy = "a success response without the edited path and revision";
        throw new EditRefused("EDIT_UNAVAILABLE", "malformed success from satyrn-host; no further edits are possible");
      }
      this.edited(path, (request.expected_sha256 as string | null) ?? null, sha);
      return `Edited ${path}. Its revision is now ${sha}.${preview(result)}`;
    } catch (error) {
      if (error instanceof EditRefused) throw error;
      throw new EditRefused("EDIT_FAILED", `unexpected error: ${describe(error)}`);
    }
  }

  private validate(params: unknown): { path: string; edits: ProtocolEdit[] } {
    if (typeof params !== "object" || params === null) {
      throw new EditRefused("INVALID_REQUEST", "the edit arguments must be an object {path, edits}");
    }
    const p = params as Record<string, unknown>;
    if (typeof p.path !== "string" || p.path === "") {
      throw new EditRefused("INVALID_REQUEST", "`path` must be a non-empty string");
    }
    if (!Array.isArray(p.edits) || p.edits.length === 0) {
      throw new EditRefused("INVALID_REQUEST", "`edits` must be a non-empty array");
    }
    const edits = p.edits.map((edit: unknown, index: number) => toProtocolEdit(edit, index));
    return { path: this.worktreePath(p.path), edits };
  }

  /** `path` as the host expects it (see [`worktreePath`]). */
  worktreePath(path: string): string {
    return worktreePath(this.context.repo, path);
  }
}

/**
 * Models often pass absolute paths or `./x`: an absolute path inside the worktree becomes
 * worktree-relative and one leading `./` is dropped. Everything else goes to the host as
 * written, which refuses any unsafe shape.
 */
export function worktreePath(repo: string, path: string): string {
  if (isAbsolute(path)) {
    const rel = relative(repo, path);
    if (rel !== "" && !rel.startsWith("..") && !isAbsolute(rel)) return rel;
    return path;
  }
  return path.startsWith("./") ? path.slice(2) : path;
}

const EDIT_KEYS = new Set(["op", "oldText", "anchorText", "newText", "occurrence"]);

/** One tool edit to a protocol edit; every ambiguous or malformed shape fails closed. */
function toProtocolEdit(edit: unknown, index: number): ProtocolEdit {
  const bad = (why: string) => new EditRefused("INVALID_REQUEST", `edits[${index}]: ${why}`);
  if (typeof edit !== "object" || edit === null || Array.isArray(edit)) throw bad("must be an object");
  const e = edit as Record<string, unknown>;
  for (const key of Object.keys(e)) {
    if (!EDIT_KEYS.has(key)) throw bad(`unknown field \`${key}\` (known: op, oldText, anchorText, newText, occurrence)`);
  }
  if (typeof e.newText !== "string") throw bad("`newText` must be a string");
  const occurrence = e.occurrence ?? null;
  if (occurrence !== null && !(Number.isInteger(occurrence) && (occurrence as number) >= 1)) {
    throw bad("`occurrence` must be a positive integer (1 is the first occurrence)");
  }
  const occ = occurrence as number | null;
  if (e.op === "replace") {
    if (e.anchorText !== undefined) throw bad("a replace edit takes `oldText`, not `anchorText`");
    if (typeof e.oldText !== "string") throw bad("`oldText` must be a string");
    return { op: "replace", old_text: e.oldText, new_text: e.newText, occurrence: occ };
  }
  if (e.op === "insert_after") {
    if (e.oldText !== undefined) throw bad("an insert_after edit takes `anchorText`, not `oldText`");
    if (typeof e.anchorText !== "string") throw bad("`anchorText` must be a string");
    return { op: "insert_after", anchor_text: e.anchorText, new_text: e.newText, occurrence: occ };
  }
  if (e.op === undefined) throw bad("give `op`, or exactly one of `oldText` (replace) and `anchorText` (insert_after)");
  throw bad("`op` must be \"replace\" or \"insert_after\"");
}

/** The refusal's message with each problem's diagnostics, for the model. */
export function diagnostics(message: string, result: Record<string, unknown> | null): string {
  const problems = Array.isArray(result?.problems) ? (result.problems as Array<Record<string, unknown>>) : [];
  if (problems.length === 0) {
    const current = typeof result?.current_sha256 === "string" ? ` Read the file again (its revision is now ${result.current_sha256}).` : "";
    return `${message}${current}`;
  }
  const omitted = typeof result?.problems_omitted === "number" ? result.problems_omitted : 0;
  const total = problems.length + omitted;
  const lines = [`the batch was refused and nothing was applied (${total} problem${total === 1 ? "" : "s"}):`];
  for (const p of problems) {
    lines.push(`- [${p.code}] ${p.message}`);
    const matches = Array.isArray(p.matches) ? (p.matches as Array<Record<string, unknown>>) : [];
    for (const m of matches) lines.push(`    occurrence ${m.occurrence}: line ${m.line}: ${m.text}`);
    const near = p.near_miss as Record<string, unknown> | null | undefined;
    if (near && typeof near === "object") lines.push(`    nearest: ${JSON.stringify(near)}`);
  }
  if (omitted > 0) lines.push(`(${omitted} more problems not shown)`);
  lines.push("Fix every problem and send the whole batch again.");
  return lines.join("\n");
}

/** The success preview, for the model. */
function preview(result: Record<string, unknown>): string {
  const regions = Array.isArray(result.preview) ? (result.preview as Array<Record<string, unknown>>) : [];
  if (regions.length === 0) return "";
  const parts = regions.map((r) => `lines ${r.start_line}-${r.end_line}:\n${r.text}`);
  const omitted = typeof result.preview_omitted_lines === "number" && result.preview_omitted_lines > 0
    ? `\n(${result.preview_omitted_lines} more changed lines not shown)`
    : "";
  return `\n\n${parts.join("\n")}${omitted}`;
}
