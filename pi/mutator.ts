/**
 * satyrn's tools for Pi: `read`, `edit`, `ls`, `find`, `grep`, `write`, `delete` and
 * `apply_patch`
 * (lib/context.ts's `SATYRN_TOOLS`), each one protocol request (lib/channel.ts: over the confined run's broker
 * connection, else one `satyrn-host protocol` process). Active only when the attempt's mutation context is
 * present (`SATYRN_MUTATION_CONTEXT_FILE` and `SATYRN_HOST_BIN`, see lib/context.ts); without
 * it this extension registers nothing and Pi keeps its built-in tools. Once every tool is
 * registered it sets the process-wide marker (lib/context.ts) without which engine.ts
 * blocks every tool call of an attempt.
 *
 * - `edit` sends one all-or-nothing batch to the sandboxed mutator. Besides Pi's own
 *   `{oldText, newText}` entries it takes `occurrence` (which match, 1-indexed) and
 *   `{op: "insert_after", anchorText, newText}`.
 * - `read` is served by the mutator too: confined to the worktree, never through a
 *   symlink, paginated with Pi's `offset`/`limit`. Pi's built-in `read` opens any path the
 *   process can (`~/.ssh`, cloud credentials); this one cannot leave the worktree.
 * - `ls`, `find`, `grep` take Pi's arguments (plus `cursor` for the next page) and never
 *   show a private path's name or content; `write` (Pi's `{path, content}`) creates a file
 *   or replaces one the session has seen, `delete {path}` removes one it has seen — both
 *   only where the contract declares the path writable (lib/toolbox.ts).
 */

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";

import { markToolsRegistered, parseContext } from "./lib/context.ts";
import { Editor, prepareEditArguments } from "./lib/editor.ts";
import { MAX_GREP_CONTEXT, MAX_GREP_LIMIT, MAX_LIST_LIMIT, Toolbox } from "./lib/toolbox.ts";

/** A tool result carrying `text` for the model. */
const reply = (text: string) => ({ content: [{ type: "text" as const, text }], details: {} });
const cursor = Type.Optional(Type.String({ description: "Continue after this path: the cursor the previous page ended with" }));

export default function satyrnMutator(pi: ExtensionAPI): void {
  const parsed = parseContext(process.env);
  if (!parsed.ok) return;
  const editor = new Editor(parsed.context);
  const toolbox = new Toolbox(parsed.context, editor);
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
      "Use read to look at files; it only reads inside the repository. Use ls, find and grep to find files.",
      "Use write only to create a new file or to rewrite a whole file you have read; use delete to remove a file you have read.",
      "Use apply_patch for a change that spans several files: it lands whole or not at all.",
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
  pi.registerTool({
    name: "ls",
    label: "ls (satyrn)",
    description:
      `List one directory of the repository: \`name/\` for a directory, a file's size, [writable] when the task contract declares it. ` +
      `At most ${MAX_LIST_LIMIT} entries per call; the result says how to continue. Private files are not shown.`,
    promptSnippet: "List a directory of the repository",
    parameters: Type.Object({
      path: Type.Optional(Type.String({ description: "Directory to list, relative to the repository root (default: the root)" })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIST_LIMIT, description: `Most entries (default and maximum ${MAX_LIST_LIMIT})` })),
      cursor,
    }),
    execute: async (_id, params) => reply(await toolbox.ls(params)),
  });
  pi.registerTool({
    name: "find",
    label: "find (satyrn)",
    description:
      "Find files and directories of the repository whose path matches an fnmatch pattern, where `*` also matches `/`: " +
      "`*.ts` finds every .ts file at any depth, `src/*.test.ts` every test beneath src. The pattern is matched against " +
      `the path from \`path\` (default: the root). At most ${MAX_LIST_LIMIT} results per call; private files are not shown.`,
    promptSnippet: "Find files by fnmatch pattern (`*` matches across `/`)",
    parameters: Type.Object({
      pattern: Type.String({ description: "fnmatch pattern, e.g. '*.ts' or 'src/*.spec.ts'" }),
      path: Type.Optional(Type.String({ description: "Directory to search in (default: the repository root)" })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIST_LIMIT, description: `Most results (default and maximum ${MAX_LIST_LIMIT})` })),
      cursor,
    }),
    execute: async (_id, params) => reply(await toolbox.find(params)),
  });
  pi.registerTool({
    name: "grep",
    label: "grep (satyrn)",
    description:
      "Search the contents of the repository's text files for a regular expression (Rust syntax) or, with literal, a plain " +
      "string. Prints each matching file with its revision, then `N: line` for a match and `N- line` for context. " +
      `At most ${MAX_GREP_LIMIT} matching lines per call; the result says how to continue. Private files are not searched.`,
    promptSnippet: "Search file contents (regex or literal)",
    parameters: Type.Object({
      pattern: Type.String({ description: "Search pattern (regex, or a literal string with literal: true)" }),
      path: Type.Optional(Type.String({ description: "Directory or file to search (default: the repository root)" })),
      glob: Type.Optional(Type.String({ description: "Only files whose path matches this fnmatch pattern, e.g. '*.ts'" })),
      ignoreCase: Type.Optional(Type.Boolean({ description: "Case-insensitive search (default: false)" })),
      literal: Type.Optional(Type.Boolean({ description: "Treat pattern as a literal string instead of a regex (default: false)" })),
      context: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_GREP_CONTEXT, description: "Lines to show before and after each match (default 0)" })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_GREP_LIMIT, description: "Most matching lines (default 100)" })),
      cursor,
    }),
    execute: async (_id, params) => reply(await toolbox.grep(params)),
  });
  pi.registerTool({
    name: "write",
    label: "Write (satyrn)",
    description:
      "Create a file, or replace the whole content of a file you have read, at a path the task contract declares writable. " +
      "Parent directories are created. Writing to an existing file you have not read, or that changed since you read it, is refused.",
    promptSnippet: "Create a file, or rewrite a whole file you have read (declared paths only)",
    parameters: Type.Object({
      path: Type.String({ description: "Path of the file, relative to the repository root" }),
      content: Type.String({ description: "The file's whole content" }),
    }),
    execute: async (_id, params) => reply(await toolbox.write(params)),
  });
  pi.registerTool({
    name: "delete",
    label: "Delete (satyrn)",
    description:
      "Delete a file you have read, at a path the task contract declares writable. A file you have not read, or that changed since, " +
      "is refused; directories cannot be deleted.",
    promptSnippet: "Delete a file you have read (declared paths only)",
    parameters: Type.Object({
      path: Type.String({ description: "Path of the file, relative to the repository root" }),
    }),
    execute: async (_id, params) => reply(await toolbox.delete(params)),
  });
  pi.registerTool({
    name: "apply_patch",
    label: "Apply patch (satyrn)",
    description:
      "Change several files at once with a patch, applied all together or not at all. Format:\n" +
      "*** Begin Patch\n*** Update File: src/app.py\n@@ def greet():\n-    print(\"hi\")\n+    print(\"hello\")\n" +
      "*** Add File: src/new.py\n+x = 1\n*** Delete File: src/old.py\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n" +
      " context line\n-old line\n+new line\n*** End Patch\n" +
      "Hunk lines start with a space (context), - (removed) or + (added); context and removed lines must match the file " +
      "exactly and once (an @@ line's text narrows the search to after that exact line). Add refuses an existing file, " +
      "Move to an existing destination; every path must be declared writable by the task contract. Read a file before " +
      "you update, move or delete it (delete only one you have read in full). A refused patch changes nothing and names " +
      "every problem (for a hunk that does not match: where the file differs).",
    promptSnippet: "A multi-file patch (*** Begin Patch … *** End Patch), all files or none",
    parameters: Type.Object({
      patch: Type.String({ description: "The whole patch, from *** Begin Patch to *** End Patch" }),
    }),
    execute: async (_id, params) => reply(await toolbox.applyPatch(params)),
  });
  // Only now may engine.ts let tool calls through (lib/guard.ts): without all of satyrn's
  // tools, Pi's `--tools` allow-list would hand the model its own unconfined built-ins.
  markToolsRegistered();
}
