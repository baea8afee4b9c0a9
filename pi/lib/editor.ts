/**
 * The bounded edit tool: Pi's `edit` shape in, one `satyrn-host protocol` replace out.
 *
 * - The host, not this code, decides which paths are declared: every request carries the
 *   revision this attempt knows for the path, or `null`.
 * - The revision map advances only on a typed success.
 * - A refusal (a well-formed response with `ok:false`) becomes a Pi tool error naming the
 *   code and message; the session goes on.
 * - A timeout, crash, malformed response or any transport failure **poisons** the editor:
 *   the edit may have been published, so every later edit is refused without spawning.
 * - No exception escapes other than the tool error itself.
 */

import { isAbsolute, relative } from "node:path";

import type { MutationContext } from "./context.ts";
import { describe, exchange, type ExchangeOptions } from "./exchange.ts";

/** Pi's own edit arguments. */
export interface EditParams {
  path: string;
  edits: Array<{ oldText: string; newText: string }>;
}

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

export class Editor {
  private readonly revisions: Map<string, string>;
  private poisonedBy: string | undefined;

  constructor(
    private readonly context: MutationContext,
    private readonly options: ExchangeOptions = {},
  ) {
    this.revisions = new Map(context.revisions);
  }

  /** The revision this attempt knows for `path`, if any. */
  revision(path: string): string | undefined {
    return this.revisions.get(path);
  }

  /** Why the editor is poisoned, if it is. */
  get poisoned(): string | undefined {
    return this.poisonedBy;
  }

  /** Builds the protocol request for one edit; throws `EditRefused` for a bad shape. */
  request(params: unknown): Record<string, unknown> {
    const { path, oldText, newText } = this.validate(params);
    return {
      version: 1,
      operation: "replace",
      repo: this.context.repo,
      contract: this.context.contract,
      path,
      expected_sha256: this.revisions.get(path) ?? null,
      old_text: oldText,
      new_text: newText,
    };
  }

  /** Performs one edit. Resolves with the text for the model; rejects only with `EditRefused`. */
  async edit(params: unknown): Promise<string> {
    try {
      if (this.poisonedBy !== undefined) {
        throw new EditRefused(
          "EDIT_UNAVAILABLE",
          `an earlier edit's outcome is unknown (${this.poisonedBy}); no further edits are possible in this attempt`,
        );
      }
      const request = this.request(params);
      const outcome = await exchange(this.context.host, request, this.options);
      if (outcome.kind === "transport") {
        this.poisonedBy = outcome.reason;
        throw new EditRefused(
          "EDIT_UNAVAILABLE",
          `${outcome.reason}; the edit may or may not have been applied, and no further edits are possible in this attempt`,
        );
      }
      const { response } = outcome;
      if (!response.ok) throw new EditRefused(response.code, response.message);
      const result = response.result ?? {};
      const path = result.path;
      const sha = result.sha256;
      if (typeof path !== "string" || typeof sha !== "string" || path !== request.path) {
        this.poisonedBy = "a success response without the edited path and revision";
        throw new EditRefused("EDIT_UNAVAILABLE", `malformed success from satyrn-host; no further edits are possible`);
      }
      this.revisions.set(path, sha);
      return `Edited ${path}. Its revision is now ${sha}.`;
    } catch (error) {
      if (error instanceof EditRefused) throw error;
      throw new EditRefused("EDIT_FAILED", `unexpected error: ${describe(error)}`);
    }
  }

  private validate(params: unknown): { path: string; oldText: string; newText: string } {
    if (typeof params !== "object" || params === null) {
      throw new EditRefused("INVALID_REQUEST", "the edit arguments must be an object {path, edits}");
    }
    const p = params as Record<string, unknown>;
    if (typeof p.path !== "string" || p.path === "") {
      throw new EditRefused("INVALID_REQUEST", "`path` must be a non-empty string");
    }
    if (!Array.isArray(p.edits) || p.edits.length !== 1) {
      throw new EditRefused("INVALID_REQUEST", "`edits` must hold exactly one {oldText, newText} entry");
    }
    const edit = p.edits[0] as Record<string, unknown> | null;
    if (typeof edit !== "object" || edit === null || typeof edit.oldText !== "string" || typeof edit.newText !== "string") {
      throw new EditRefused("INVALID_REQUEST", "each edit must be {oldText: string, newText: string}");
    }
    return { path: this.worktreePath(p.path), oldText: edit.oldText, newText: edit.newText };
  }

  /**
   * Models often pass absolute paths or `./x`: an absolute path inside the worktree becomes
   * worktree-relative and one leading `./` is dropped. Everything else goes to the host as
   * written, which refuses any unsafe shape.
   */
  private worktreePath(path: string): string {
    if (isAbsolute(path)) {
      const rel = relative(this.context.repo, path);
      if (rel !== "" && !rel.startsWith("..") && !isAbsolute(rel)) return rel;
      return path;
    }
    return path.startsWith("./") ? path.slice(2) : path;
  }
}
