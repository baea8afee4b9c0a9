/**
 * The one story every agent test tells, and the checks that prove it happened:
 *
 * 1. `read` of `src/a.txt` (records the revision in the MCP session);
 * 2. `edit` of `README.md`, outside `writable_paths` → `PATH_UNDECLARED` reaches the model;
 * 3. a call of one of the client's own write/shell tools → refused by the client, no file;
 * 4. a correct `edit` of `src/a.txt` (no `expected_sha256`: the session's recorded revision);
 * 5. a closing text.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { A_AFTER, A_BEFORE, README, snapshot, status } from "./harness.mjs";
import { toolResultsOf } from "./scripted-model.mjs";

export const sha256 = (text) => createHash("sha256").update(text).digest("hex");

/** The file the built-in write in step 3 tries to create. */
export const PWNED = "pwned.txt";

/**
 * The script for one client.
 * @param {{ mcp: (tool: string) => { name: string, namespace?: string }, builtin: (repo: string) => { name: string, arguments: Record<string, unknown> } }} client
 *   how the client names satyrn's tools, and the one built-in call it is forced to make
 * @param {string} repo the directory the client works in (for absolute paths in built-ins)
 * @returns {import("./scripted-model.mjs").Step[]}
 */
export function storyScript(client, repo) {
  return [
    { tool: { ...client.mcp("read"), arguments: { path: "src/a.txt" } } },
    {
      tool: {
        ...client.mcp("edit"),
        arguments: { path: "README.md", edits: [{ op: "replace", old_text: "# demo", new_text: "# taken over" }] },
      },
    },
    { tool: client.builtin(repo) },
    {
      tool: {
        ...client.mcp("edit"),
        arguments: {
          path: "src/a.txt",
          edits: [{ op: "replace", old_text: "beta", new_text: "BETA, edited through satyrn" }],
        },
      },
    },
  ];
}

/**
 * The logged model request that carried exactly `n` tool results (the first such).
 * @param {import("./scripted-model.mjs").Logged[]} requests
 * @param {number} n
 */
export function requestWith(requests, n) {
  const found = requests.find((r) => (r.kind === "responses" || r.kind === "messages") && r.toolResults === n);
  assert.ok(found, `no model request carried ${n} tool results; got ${JSON.stringify(requests.map((r) => [r.kind, r.toolResults]))}`);
  return found;
}

/**
 * What reached the model proves each step's outcome.
 * @param {import("./scripted-model.mjs").Logged[]} requests
 * @param {RegExp} builtinRefusal how the client words its refusal of the built-in call
 */
export function assertModelSaw(requests, builtinRefusal) {
  const afterRead = toolResultsOf(requestWith(requests, 1));
  assert.equal(afterRead.length, 1);
  assert.ok(afterRead[0].text.includes(sha256(A_BEFORE)), `read result lacks the file's sha256: ${afterRead[0].text}`);
  assert.ok(afterRead[0].text.includes("beta"), `read result lacks the text: ${afterRead[0].text}`);

  const afterReadme = toolResultsOf(requestWith(requests, 2));
  assert.match(afterReadme[1].text, /(^|\n)PATH_UNDECLARED: /, "the refusal must reach the model as PATH_UNDECLARED");
  assert.notEqual(afterReadme[1].isError, false);

  const afterBuiltin = toolResultsOf(requestWith(requests, 3));
  assert.match(afterBuiltin[2].text, builtinRefusal);

  const afterEdit = toolResultsOf(requestWith(requests, 4));
  assert.ok(afterEdit[3].text.includes(sha256(A_AFTER)), `edit result lacks the new sha256: ${afterEdit[3].text}`);
  assert.doesNotMatch(afterEdit[3].text, /^[A-Z_]+: /, "the correct edit must not be refused");
}

/**
 * The repository after the story: `src/a.txt` has the edited bytes, `README.md` is unchanged
 * (bytes, mode, inode), no file was created, and git sees exactly one modified path.
 * @param {string} repo
 * @param {ReturnType<typeof snapshot>} readmeBefore
 */
export function assertRepoAfterStory(repo, readmeBefore) {
  assert.equal(readFileSync(join(repo, "src", "a.txt"), "utf8"), A_AFTER);
  assert.deepEqual(snapshot(join(repo, "README.md")), readmeBefore);
  assert.equal(readFileSync(join(repo, "README.md"), "utf8"), README);
  assert.equal(existsSync(join(repo, PWNED)), false, "the built-in write must not create a file");
  assert.equal(status(repo), " M src/a.txt\n");
}
