/**
 * satyrn's `edit` and `read` for Pi. Active only when the attempt's mutation context is
 * present (`SATYRN_MUTATION_CONTEXT_FILE` and `SATYRN_HOST_BIN`, see lib/context.ts); without
 * it this extension registers nothing and Pi keeps its built-in tools. Once both tools are
 * registered it sets the process-wide marker (lib/context.ts) without which engine.ts
 * blocks every tool call of an attempt.
 *
 * - `edit` sends one all-or-nothing batch to the sandboxed mutator. Besides Pi's own
 *   `{oldText, newText}` entries it takes `occurrence` (which match, 1-indexed) and
 *   `{op: "insert_after", anchorText, newText}`.
 * - `read` is served by the mutator too: confined to the worktree, never through a
 *   symlink, paginated with Pi's `offset`/`limit`. Pi's built-in `read` opens any path the
 *   process can (`~/.ssh`, cloud credentials); this one cannot leave the worktree.
 */

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";

import { markToolsRegistered, parseContext } from "./lib/context.ts";
import { Editor, prepareEditArguments } from "./lib/editor.ts";

export default function satyrnMutator(pi: ExtensionAPI): void {
  const parsed = parseContext(process.env);
  if (!parsed.ok) return;
  const editor = new Editor(parsed.context);
  pi.registerTool({
    name: "edit",
    label: "Edit (satyrn)",
    description:
      "Edit a file you have read with exact-text edits, applied all together or not at all. The file must be declared " +
      "writable by the task contract; you cannot create files. Each entry of edits is either {oldText, newText} " +
      "(replace oldText, which must occur in the file, with newText) or {op: \"insert_after\", anchorText, newText} " +
      "(insert newText right after anchorText). Text is matched byte for byte, whitespace included, against the file " +
      "as you read it; every entry is resolved against that same original. When the text occurs more than once, add " +
      "occurrence (1 = the first) to choose. A refused batch changes nothing and lists every problem with line numbers.",
    promptSnippet: "Exact-text edits to a declared file (replace, insert_after; occurrence to choose a match)",
    promptGuidelines: [
      "Use edit for every change to a file; read the file first. Put all changes to one file in one edit call.",
      "When edit reports ANCHOR_AMBIGUOUS, retry with occurrence set to the match you mean (the refusal lists each match and its line).",
      "When edit reports ANCHOR_MISSING, use the nearest text the refusal quotes, or read the file again.",
      "Use read to look at files; it only reads inside the repository.",
    ],
    parameters: Type.Object({
      path: Type.String({ description: "Path of the file to edit, relative to the repository root" }),
      edits: Type.Array(
        Type.Object({
          op: Type.Optional(Type.Union([Type.Literal("replace"), Type.Literal("insert_after")], { description: "Default: replace (or insert_after when anchorText is given)" })),
          oldText: Type.Optional(Type.String({ description: "replace: the exact text to replace" })),
          anchorText: Type.Optional(Type.String({ description: "insert_after: the exact text after which newText is inserted" })),
          newText: Type.String({ description: "The replacement or the inserted text" }),
          occurrence: Type.Optional(Type.Integer({ minimum: 1, description: "Which occurrence of the text (1 = first); needed when it occurs more than once" })),
        }),
        { description: "One or more edits, applied together against the original file" },
      ),
    }),
    prepareArguments: (args: unknown) => prepareEditArguments(args) as never,
    async execute(_toolCallId, params) {
      // Rejects only with EditRefused, which Pi reports to the model as a tool error.
      const text = await editor.edit(params);
      return { content: [{ type: "text", text }], details: {} };
    },
  });
  pi.registerTool({
    name: "read",
    label: "Read (satyrn)",
    description:
      "Read a text file inside the repository, at most 2000 lines or 50 KB per call; the result says how to continue. " +
      "Paths are relative to the repository root; files outside it, symbolic links and binary files cannot be read.",
    parameters: Type.Object({
      path: Type.String({ description: "Path of the file, relative to the repository root" }),
      offset: Type.Optional(Type.Integer({ minimum: 1, description: "First line to read (1-indexed)" })),
      limit: Type.Optional(Type.Integer({ minimum: 1, description: "Most lines to read" })),
    }),
    async execute(_toolCallId, params) {
      const text = await editor.read(params);
      return { content: [{ type: "text", text }], details: {} };
    },
  });
  // Only now may engine.ts let tool calls through (lib/guard.ts): without both tools, Pi's
  // `--tools read,edit` would hand the model its own unconfined built-ins.
  markToolsRegistered();
}
