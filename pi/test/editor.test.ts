import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { processChannel } from "../lib/channel.ts";
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
    operation: "edit",
    repo: w.repo,
    contract: w.contract,
    path: "src/a.ts",
    expected_sha256: sha(readFileSync(join(w.repo, "src", "a.ts"))),
    edits: [{ op: "replace", old_text: "a", new_text: "b", occurrence: null }],
  });
  assert.equal(editor.request(edit("notes.md", "a", "b")).expected_sha256, null);
  assert.equal(editor.request(edit(join(w.repo, "src/a.ts"), "a", "b")).path, "src/a.ts");
  assert.equal(editor.request(edit("./src/a.ts", "a", "b")).path, "src/a.ts");
  assert.equal(editor.request(edit("/etc/passwd", "a", "b")).path, "/etc/passwd");
  assert.deepEqual(editor.readRequest({ path: "./src/a.ts", offset: 3 }), {
    version: 1,
    operation: "read",
    repo: w.repo,
    contract: w.contract,
    path: "src/a.ts",
    offset: 3,
    limit: null,
  });
});

test("caller slips are normalized: edits as a JSON string, a missing op", () => {
  const w = worktree();
  const editor = new Editor(w.context("/bin/false"));
  const batch = [
    { oldText: "a", newText: "b", occurrence: 2 },
    { anchorText: "c", newText: "d" },
    { op: "insert_after", anchorText: "e", newText: "f" },
  ];
  const want = [
    { op: "replace", old_text: "a", new_text: "b", occurrence: 2 },
    { op: "insert_after", anchor_text: "c", new_text: "d", occurrence: null },
    { op: "insert_after", anchor_text: "e", new_text: "f", occurrence: null },
  ];
  assert.deepEqual(editor.request({ path: "src/a.ts", edits: batch }).edits, want);
  assert.deepEqual(editor.request({ path: "src/a.ts", edits: JSON.stringify(batch) }).edits, want);
});

test("ambiguous or malformed shapes fail closed, without spawning", async () => {
  const w = worktree();
  let spawned = 0;
  const editor = new Editor(w.context(), processChannel("/bin/false", { spawn: () => ((spawned += 1), new FakeChild().asChild()) }));
  for (const bad of [
    null,
    "x",
    { path: "src/a.ts" },
    { path: "", edits: [{ oldText: "a", newText: "b" }] },
    { path: "src/a.ts", edits: [] },
    { path: "src/a.ts", edits: "not json" },
    { path: "src/a.ts", edits: [{ oldText: "a", anchorText: "c", newText: "b" }] },
    { path: "src/a.ts", edits: [{ newText: "b" }] },
    { path: "src/a.ts", edits: [{ op: "replace", anchorText: "a", newText: "b" }] },
    { path: "src/a.ts", edits: [{ op: "insert_after", oldText: "a", newText: "b" }] },
    { path: "src/a.ts", edits: [{ op: "delete", oldText: "a", newText: "b" }] },
    { path: "src/a.ts", edits: [{ oldText: "a", newText: "b", occurrence: 0 }] },
    { path: "src/a.ts", edits: [{ oldText: "a", newText: "b", occurrence: 1.5 }] },
    { path: "src/a.ts", edits: [{ oldText: "a", newText: "b", old_text: "x" }] },
    { path: "src/a.ts", edits: [{ oldText: 1, newText: "b" }] },
  ]) {
    const e = await refusal(editor.edit(bad));
    assert.equal(e.code, "INVALID_REQUEST", JSON.stringify(bad));
  }
  for (const bad of [{ path: "" }, { path: "a", offset: 0 }, { path: "a", limit: -1 }, null]) {
    const e = await refusal(editor.read(bad));
    assert.equal(e.code, "INVALID_REQUEST", JSON.stringify(bad));
  }
  assert.equal(spawned, 0);
  assert.equal(editor.poisoned, undefined);
});

test("real satyrn-host: a success advances the revision; a refusal is a tool error and changes nothing", async () => {
  const w = worktree();
  const file = join(w.repo, "src", "a.ts");
  const editor = new Editor(w.context());
  const before = readFileSync(file);
  const missing = await refusal(editor.edit(edit("src/a.ts", "hello  world", "x")));
  assert.equal(missing.code, "ANCHOR_MISSING");
  assert.match(missing.message, /^ANCHOR_MISSING: the batch was refused/);
  assert.match(missing.message, /nearest: .*whitespace/);
  assert.deepEqual(readFileSync(file), before);
  const undeclared = await refusal(editor.edit(edit("notes.md", "world", "there")));
  assert.equal(undeclared.code, "PATH_UNDECLARED");
  assert.equal(readFileSync(join(w.repo, "notes.md"), "utf8"), "hello world\n");

  const text = await editor.edit(edit("src/a.ts", "hello world", "hello there"));
  const after1 = readFileSync(file, "utf8");
  assert.equal(after1, "export const greeting = 'hello there';\n");
  assert.equal(editor.revision("src/a.ts"), sha(after1));
  assert.match(text, new RegExp(sha(after1)));
  assert.match(text, /lines 1-1:\nexport const greeting = 'hello there';/);
  // The advanced revision makes a second edit possible: a batch of two.
  await editor.edit({
    path: "src/a.ts",
    edits: [
      { oldText: "there", newText: "satyrn" },
      { anchorText: "export ", newText: "/* batch */ " },
    ],
  });
  assert.equal(readFileSync(file, "utf8"), "export /* batch */ const greeting = 'hello satyrn';\n");
  assert.equal(editor.poisoned, undefined);
});

test("real satyrn-host: an ambiguous edit lists its matches; the retry with occurrence lands", async () => {
  const w = worktree();
  const file = join(w.repo, "src", "a.ts");
  const editor = new Editor(w.context());
  const ambiguous = await refusal(editor.edit(edit("src/a.ts", "e", "E")));
  assert.equal(ambiguous.code, "ANCHOR_AMBIGUOUS");
  assert.match(ambiguous.message, /occurrence 1: line 1: export const greeting/);
  await editor.edit({ path: "src/a.ts", edits: [{ oldText: "e", newText: "E", occurrence: 1 }] });
  assert.equal(readFileSync(file, "utf8"), "Export const greeting = 'hello world';\n");
});

test("real satyrn-host: read stays inside the worktree and records the revision it saw", async () => {
  const w = worktree();
  const editor = new Editor(w.context());
  const text = await editor.read({ path: "notes.md" });
  assert.equal(text, "hello world\n");
  assert.equal(editor.revision("notes.md"), sha("hello world\n"));
  // Reading makes the revision known, but the host still decides what is declared.
  assert.equal((await refusal(editor.edit(edit("notes.md", "world", "x")))).code, "PATH_UNDECLARED");
  symlinkSync("/etc/hostname", join(w.repo, "link.txt"));
  for (const [path, code] of [
    ["/etc/passwd", "INVALID_REQUEST"],
    ["../contract.yaml", "INVALID_REQUEST"],
    ["link.txt", "READ_UNAVAILABLE"],
    [".git/config", "READ_UNAVAILABLE"],
  ] as const) {
    const e = await refusal(editor.read({ path }));
    assert.equal(e.code, code, path);
  }
  assert.equal(editor.poisoned, undefined, "a failed read never poisons");
  // A file written after the attempt started is read with its current revision.
  writeFileSync(join(w.repo, "src", "a.ts"), "export const greeting = 'changed';\n");
  const stale = await refusal(editor.edit(edit("src/a.ts", "changed", "x")));
  assert.equal(stale.code, "REVISION_STALE");
  await editor.read({ path: "src/a.ts" });
  await editor.edit(edit("src/a.ts", "changed", "read first"));
  assert.equal(readFileSync(join(w.repo, "src", "a.ts"), "utf8"), "export const greeting = 'read first';\n");
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
  const editor = new Editor(
    w.context(),
    processChannel("/bin/false", {
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
    }),
  );
  const e = await refusal(editor.edit(edit("src/a.ts", "hello", "bye")));
  assert.equal(e.code, "EDIT_UNAVAILABLE");
  assert.deepEqual(children[0].signals, ["SIGTERM", "SIGKILL"]);
  await refusal(editor.edit(edit("src/a.ts", "hello", "bye")));
  assert.equal(children.length, 1, "a poisoned editor spawned again");
});
