import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import type { MutationContext } from "../lib/context.ts";
import { EditRefused, Editor } from "../lib/editor.ts";
import { FakeChild, hostBin } from "./helpers.ts";

const sha = (bytes: string | Buffer) => createHash("sha256").update(bytes).digest("hex");
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A real git worktree with two files and a contract declaring `src/*.ts`. */
function worktree(): { repo: string; contract: string; context: (host?: string) => MutationContext } {
  const base = mkdtempSync(join(tmpdir(), "satyrn-pi-"));
  dirs.push(base);
  const repo = join(base, "repo");
  execFileSync("mkdir", ["-p", join(repo, "src")]);
  writeFileSync(join(repo, "src", "a.ts"), "export const greeting = 'hello world';\n");
  writeFileSync(join(repo, "notes.md"), "hello world\n");
  execFileSync("git", ["init", "-q", repo]);
  const contract = join(base, "contract.yaml");
  writeFileSync(contract, "id: pi-test\ntask: edit\nwritable_paths:\n  - 'src/*.ts'\n");
  const revisions = new Map([["src/a.ts", sha(readFileSync(join(repo, "src", "a.ts")))]]);
  return {
    repo,
    contract,
    context: (host = hostBin()) => ({ version: 1, repo, contract, revisions, host }),
  };
}

const edit = (path: string, oldText: string, newText: string) => ({ path, edits: [{ oldText, newText }] });

async function refusal(p: Promise<unknown>): Promise<EditRefused> {
  try {
    await p;
  } catch (error) {
    assert.ok(error instanceof EditRefused, `expected EditRefused, got ${error}`);
    return error;
  }
  assert.fail("expected a refusal");
}

test("request generation: the known revision, or null for an unknown path", () => {
  const w = worktree();
  const editor = new Editor(w.context("/bin/false"));
  const known = editor.request(edit("src/a.ts", "a", "b"));
  assert.deepEqual(known, {
    version: 1,
    operation: "replace",
    repo: w.repo,
    contract: w.contract,
    path: "src/a.ts",
    expected_sha256: sha(readFileSync(join(w.repo, "src", "a.ts"))),
    old_text: "a",
    new_text: "b",
  });
  assert.equal(editor.request(edit("notes.md", "a", "b")).expected_sha256, null);
  assert.equal(editor.request(edit(join(w.repo, "src/a.ts"), "a", "b")).path, "src/a.ts");
  assert.equal(editor.request(edit("./src/a.ts", "a", "b")).path, "src/a.ts");
  assert.equal(editor.request(edit("/etc/passwd", "a", "b")).path, "/etc/passwd");
});

test("argument shapes other than one {oldText,newText} are refused without spawning", async () => {
  const w = worktree();
  let spawned = 0;
  const editor = new Editor(w.context(), { spawn: () => ((spawned += 1), new FakeChild().asChild()) });
  for (const bad of [
    null,
    "x",
    { path: "src/a.ts" },
    { path: "", edits: [{ oldText: "a", newText: "b" }] },
    { path: "src/a.ts", edits: [] },
    { path: "src/a.ts", edits: [{ oldText: "a", newText: "b" }, { oldText: "c", newText: "d" }] },
    { path: "src/a.ts", edits: [{ oldText: 1, newText: "b" }] },
  ]) {
    const e = await refusal(editor.edit(bad));
    assert.equal(e.code, "INVALID_REQUEST");
  }
  assert.equal(spawned, 0);
  assert.equal(editor.poisoned, undefined);
});

test("real satyrn-host: a success advances the revision; a refusal is a tool error and changes nothing", async () => {
  const w = worktree();
  const file = join(w.repo, "src", "a.ts");
  const editor = new Editor(w.context());
  const before = readFileSync(file);
  const missing = await refusal(editor.edit(edit("src/a.ts", "no such text", "x")));
  assert.equal(missing.code, "ANCHOR_MISSING");
  assert.match(missing.message, /^ANCHOR_MISSING: /);
  assert.deepEqual(readFileSync(file), before);
  const undeclared = await refusal(editor.edit(edit("notes.md", "world", "there")));
  assert.equal(undeclared.code, "PATH_UNDECLARED");
  assert.equal(readFileSync(join(w.repo, "notes.md"), "utf8"), "hello world\n");

  const text = await editor.edit(edit("src/a.ts", "hello world", "hello there"));
  const after1 = readFileSync(file, "utf8");
  assert.equal(after1, "export const greeting = 'hello there';\n");
  assert.equal(editor.revision("src/a.ts"), sha(after1));
  assert.match(text, new RegExp(sha(after1)));
  // The advanced revision makes a second edit possible.
  await editor.edit(edit("src/a.ts", "there", "satyrn"));
  assert.equal(readFileSync(file, "utf8"), "export const greeting = 'hello satyrn';\n");
  assert.equal(editor.poisoned, undefined);
});

test("a refusal never advances the revision map", async () => {
  const w = worktree();
  const editor = new Editor(w.context());
  const known = editor.revision("src/a.ts");
  await refusal(editor.edit(edit("src/a.ts", "e", "x"))); // ambiguous
  assert.equal(editor.revision("src/a.ts"), known);
});

test("a real host that crashes or answers garbage poisons the editor; later edits do not spawn", async () => {
  for (const body of ["echo 'not json'", "kill -9 $$", "exit 0"]) {
    const script = `#!/bin/sh\necho run >> "$0.runs"\n${body}\n`;
    const w = worktree();
    const fake = join(w.repo, "..", "fake-host");
    writeFileSync(fake, script);
    chmodSync(fake, 0o755);
    const editor = new Editor(w.context(fake));
    const first = await refusal(editor.edit(edit("src/a.ts", "hello", "bye")));
    assert.equal(first.code, "EDIT_UNAVAILABLE");
    assert.notEqual(editor.poisoned, undefined);
    const second = await refusal(editor.edit(edit("src/a.ts", "hello", "bye")));
    assert.equal(second.code, "EDIT_UNAVAILABLE");
    assert.match(second.message, /no further edits/);
    assert.equal(readFileSync(`${fake}.runs`, "utf8"), "run\n", "the poisoned editor spawned again");
  }
});

test("a deadline poisons the editor (injected child that never answers)", async () => {
  const w = worktree();
  const children: FakeChild[] = [];
  const editor = new Editor(w.context(), {
    deadlineMs: 10,
    graceMs: 10,
    spawn: () => {
      const c = new FakeChild();
      c.kill = (signal: string) => {
        c.signals.push(signal);
        if (signal === "SIGKILL") c.answer("", 137);
        return true;
      };
      children.push(c);
      return c.asChild();
    },
  });
  const e = await refusal(editor.edit(edit("src/a.ts", "hello", "bye")));
  assert.equal(e.code, "EDIT_UNAVAILABLE");
  assert.deepEqual(children[0].signals, ["SIGTERM", "SIGKILL"]);
  await refusal(editor.edit(edit("src/a.ts", "hello", "bye")));
  assert.equal(children.length, 1, "a poisoned editor spawned again");
});
