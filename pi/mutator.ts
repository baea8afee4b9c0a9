/**
 * satyrn's `edit` for Pi. Active only when the attempt's mutation context is present
 * (`SATYRN_MUTATION_CONTEXT` and `SATYRN_HOST_BIN`, see lib/context.ts); without it this
 * extension registers nothing and Pi keeps its built-in `edit`.
 */

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";

import { parseContext } from "./lib/context.ts";
import { Editor } from "./lib/editor.ts";

export default function satyrnMutator(pi: ExtensionAPI): void {
  const parsed = parseContext(process.env);
  if (!parsed.ok) return;
  const editor = new Editor(parsed.context);
  pi.registerTool({
    name: "edit",
    label: "Edit (satyrn)",
    description:
      "Replace one exact, unique piece of text in a file you have read. The file must be declared writable by the task contract; " +
      "you cannot create files. edits must hold exactly one {oldText, newText}: oldText must occur exactly once in the file " +
      "(byte for byte, whitespace included) and is replaced literally by newText. A refused edit changes nothing and says why.",
    promptSnippet: "Replace one exact, unique text span in a declared file",
    promptGuidelines: [
      "Use edit with exactly one {oldText, newText} per call; include enough surrounding lines in oldText to make it unique.",
      "When edit is refused with ANCHOR_MISSING or ANCHOR_AMBIGUOUS, read the file again and retry with the exact text.",
    ],
    parameters: Type.Object({
      path: Type.String({ description: "Path of the file to edit, relative to the repository root" }),
      edits: Type.Array(
        Type.Object({
          oldText: Type.String({ description: "Exact text to replace; must occur exactly once" }),
          newText: Type.String({ description: "Replacement text" }),
        }),
        { description: "Exactly one replacement" },
      ),
    }),
    async execute(_toolCallId, params) {
      // Rejects only with EditRefused, which Pi reports to the model as a tool error.
      const text = await editor.edit(params);
      return { content: [{ type: "text", text }], details: {} };
    },
  });
}
