import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { processChannel } from "../lib/channel.ts";
import type { MutationContext } from "../lib/context.ts";
import { EditRefused, Editor } from "../lib/editor.ts";
import { fnmatchPattern, renderList, shown, Toolbox } from "../lib/toolbox.ts";
import { FakeChild, hostBin } from "./helpers.ts";

const sha = (bytes: string | Buffer) => createHash("sha256").update(bytes).digest("hex");
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const A = "export const greeting = 'hello world';\n";
const OLD = "export const old = 1;\n";

/**
 * A real git worktree: `src/a.ts` and `src/old.ts` (declared by `src/*.ts`), `notes.md`
 * (undeclared) and `.env` (private by default). The session has seen nothing.
 */
function worktree() {
  const base = mkdtempSync(join(tmpdir(), "satyrn-toolbox-"));
  dirs.push(base);
  const repo = join(base, "repo");
  mkdirSync(join(repo, "src"), { recursive: true });
  writeFileSync(join(repo, "src", "a.ts"), A);
  writeFileSync(join(repo, "src", "old.ts"), OLD);
  writeFileSync(join(repo, "notes.md"), "hello world\n");
  writeFileSync(join(repo, ".env"), "SECRET=hello world\n");
  execFileSync("git", ["init", "-q", repo]);
  const contract = join(base, "contract.yaml");
  writeFileSync(contract, "id: toolbox-test\ntask: t\nwritable_paths:\n  - 'src/*.ts'\n");
  const context = (host = hostBin()): MutationContext => ({ version: 1, repo, contract, revisions: new Map(), host });
  const tools = (host?: string) => {
    const editor = new Editor(context(host));
    return { editor, toolbox: new Toolbox(context(host), editor) };
  };
  /** Every file's bytes, mode and inode, to prove a refusal changed nothing. */
  const snapshot = () =>
    execFileSync("find", [repo, "-path", join(repo, ".git"), "-prune", "-o", "-printf", "%P %m %i %s\\n"], { encoding: "utf8" })
      .split("\n")
      .sort()
      .join("\n") +
    ["src/a.ts", "src/old.ts", "notes.md", ".env"].map((p) => (existsSync(join(repo, p)) ? readFileSync(join(repo, p), "utf8") : "-")).join("|");
  return { repo, contract, tools, snapshot };
}

async function refusal(p: Promise<unknown>): Promise<EditRefused> {
  try {
    await p;
  } catch (error) {
    assert.ok(error instanceof EditRefused, `expected EditRefused, got ${error}`);
    return error;
  }
  assert.fail("expected a refusal");
}

test("argument mapping: Pi's ls, find and grep shapes become list and search requests, absent fields omitted", () => {
  const w = worktree();
  const { toolbox } = w.tools("/bin/false");
  const base = { version: 1, repo: w.repo, contract: w.contract };
  assert.deepEqual(toolbox.lsRequest({}), { ...base, operation: "list" });
  assert.deepEqual(toolbox.lsRequest({ path: "./src", limit: 5, cursor: "src/a.ts" }), { ...base, operation: "list", path: "src", limit: 5, cursor: "src/a.ts" });
  assert.deepEqual(toolbox.lsRequest({ path: w.repo }), { ...base, operation: "list" }, "the worktree root is the default");
  assert.deepEqual(toolbox.findRequest({ pattern: "**/*.ts" }), { ...base, operation: "list", pattern: "*.ts", recursive: true });
  assert.deepEqual(toolbox.findRequest({ pattern: "lib/*.ts", path: "src", limit: 10 }), {
    ...base,
    operation: "list",
    path: "src",
    pattern: "src/lib/*.ts",
    recursive: true,
    limit: 10,
  });
  assert.deepEqual(toolbox.grepRequest({ pattern: "hello" }), { ...base, operation: "search", query: "hello", regex: true });
  assert.deepEqual(
    toolbox.grepRequest({ pattern: "a.b", path: "src", glob: "**/*.ts", ignoreCase: true, literal: true, context: 2, limit: 7, cursor: "src/a.ts" }),
    { ...base, operation: "search", query: "a.b", path: "src", regex: false, ignore_case: true, glob: "*.ts", context: 2, max_matches: 7, cursor: "src/a.ts" },
  );
  assert.equal(fnmatchPattern("src/**/x/*.ts"), "src/*x/*.ts");
});

test("argument mapping: write and delete carry the revision last seen, or null", () => {
  const w = worktree();
  const { editor, toolbox } = w.tools("/bin/false");
  const base = { version: 1, repo: w.repo, contract: w.contract };
  assert.deepEqual(toolbox.writeRequest({ path: "./src/new.ts", content: "" }), {
    ...base,
    operation: "write",
    path: "src/new.ts",
    expected_sha256: null,
    content: "",
  });
  assert.deepEqual(toolbox.deleteRequest({ path: "src/old.ts" }), { ...base, operation: "delete", path: "src/old.ts", expected_sha256: null });
  editor.hit("src/old.ts", sha(OLD));
  assert.equal(toolbox.writeRequest({ path: join(w.repo, "src/old.ts"), content: "x" }).expected_sha256, sha(OLD));
  assert.equal(toolbox.writeRequest({ path: "src/old.ts", content: "x" }).seen, "part");
  assert.equal(toolbox.deleteRequest({ path: "src/old.ts" }).expected_sha256, sha(OLD));
  assert.equal(toolbox.deleteRequest({ path: "src/old.ts" }).seen, "part");
  editor.wrote("src/old.ts", sha(OLD));
  assert.equal(toolbox.deleteRequest({ path: "src/old.ts" }).seen, "whole");
});

test("every malformed shape fails closed with INVALID_REQUEST, before anything is spawned", async () => {
  const w = worktree();
  let spawned = 0;
  const context: MutationContext = { version: 1, repo: w.repo, contract: w.contract, revisions: new Map(), host: "/bin/false" };
  const editor = new Editor(
    context,
    processChannel(context.host, {
      spawn: () => {
        spawned += 1;
        throw new Error("must not spawn");
      },
    }),
  );
  const toolbox = new Toolbox(context, editor);
  const bad: Array<[keyof Toolbox & ("ls" | "find" | "grep" | "write" | "delete"), unknown, RegExp]> = [
    ["ls", null, /must be an object/],
    ["ls", ["src"], /must be an object/],
    ["ls", { path: 3 }, /`path` must be a non-empty string/],
    ["ls", { path: "" }, /`path` must be a non-empty string/],
    ["ls", { limit: 0 }, /`limit` must be a whole number from 1 to 1000/],
    ["ls", { limit: 1.5 }, /`limit`/],
    ["ls", { limit: 1001 }, /`limit`/],
    ["ls", { recursive: true }, /unknown field `recursive`/],
    ["find", {}, /`pattern` is required/],
    ["find", { pattern: "*.ts", glob: "x" }, /unknown field `glob`/],
    ["grep", { pattern: "" }, /`pattern` must be a non-empty string/],
    ["grep", { pattern: "x", literal: "yes" }, /`literal` must be true or false/],
    ["grep", { pattern: "x", ignoreCase: 1 }, /`ignoreCase` must be true or false/],
    ["grep", { pattern: "x", context: 11 }, /`context` must be a whole number from 0 to 10/],
    ["grep", { pattern: "x", limit: 501 }, /`limit` must be a whole number from 1 to 500/],
    ["grep", { query: "x" }, /unknown field `query`/],
    ["write", { path: "src/n.ts" }, /`content` is required/],
    ["write", { path: "src/n.ts", content: 5 }, /`content` must be a string$/],
    ["write", { content: "x" }, /`path` is required/],
    ["write", { path: "src/n.ts", content: "x", expected_sha256: null }, /unknown field `expected_sha256`/],
    ["delete", {}, /`path` is required/],
    ["delete", { path: "src/old.ts", recursive: true }, /unknown field `recursive`/],
  ];
  const before = w.snapshot();
  for (const [tool, args, message] of bad) {
    const error = await refusal(toolbox[tool](args));
    assert.equal(error.code, "INVALID_REQUEST", `${tool} ${JSON.stringify(args)}`);
    assert.match(error.message, message, `${tool} ${JSON.stringify(args)}`);
  }
  assert.equal(spawned, 0);
  assert.equal(editor.poisoned, undefined, "a malformed call poisons nothing");
  assert.equal(w.snapshot(), before);
});

test("real host: ls and find show the worktree with [writable] and never a private path", async () => {
  const w = worktree();
  const { toolbox } = w.tools();
  const root = await toolbox.ls({});
  assert.match(root, /^notes\.md \(12 bytes\)$/m);
  assert.match(root, /^src\/$/m);
  assert.doesNotMatch(root, /\.env/);
  assert.match(root, /1 private entries are not shown\./);
  const src = await toolbox.ls({ path: "src" });
  assert.match(src, /^src\/a\.ts \(\d+ bytes\) \[writable\]$/m);
  const found = await toolbox.find({ pattern: "*.ts" });
  assert.deepEqual(found.split("\n").filter((l) => l.includes(".ts")).sort(), [
    `src/a.ts (${A.length} bytes) [writable]`,
    `src/old.ts (${OLD.length} bytes) [writable]`,
  ]);
  assert.equal(await toolbox.find({ pattern: "*.py" }), "(no entries)\n1 private entries are not shown.");
  const page = await toolbox.find({ pattern: "*.ts", limit: 1 });
  const next = /cursor ("[^"]+")/.exec(page);
  assert.ok(next !== null, page);
  assert.match(await toolbox.find({ pattern: "*.ts", limit: 1, cursor: JSON.parse(next[1]) }), /src\/old\.ts/);
  const outside = await refusal(toolbox.ls({ path: "../" }));
  assert.equal(outside.code, "INVALID_REQUEST");
  assert.match(outside.message, /`\.\.` segment/);
});

test("real host: grep shows matches with revisions, feeds the revision map, never searches a private file", async () => {
  const w = worktree();
  const { editor, toolbox } = w.tools();
  const text = await toolbox.grep({ pattern: "hello w.rld" });
  assert.match(text, new RegExp(`^src/a\\.ts \\[writable\\] \\(sha256 ${sha(A)}\\)\\n1: export const greeting`, "m"));
  assert.match(text, /^notes\.md \(sha256 [0-9a-f]{64}\)\n1: hello world$/m);
  assert.doesNotMatch(text, /SECRET/);
  assert.equal(editor.revision("src/a.ts"), sha(A), "a search hit records the revision");
  assert.equal(await toolbox.grep({ pattern: "w.rld", literal: true }), "No match in 3 searched files.\n1 private files were not searched.");
  // A hit shows a few lines: not enough to replace the whole file; a read of it is.
  assert.equal((await refusal(toolbox.write({ path: "src/a.ts", content: "export const x = 1;\n" }))).code, "PARTLY_SEEN");
  assert.equal(readFileSync(join(w.repo, "src", "a.ts"), "utf8"), A);
  await editor.read({ path: "src/a.ts" });
  assert.match(await toolbox.write({ path: "src/a.ts", content: "export const x = 1;\n" }), /^Wrote src\/a\.ts \(sha256 [0-9a-f]{64}\)\.$/);
  assert.equal(readFileSync(join(w.repo, "src", "a.ts"), "utf8"), "export const x = 1;\n");
});

test("real host: write creates a declared file and records its revision; a rewrite then needs no read", async () => {
  const w = worktree();
  const { editor, toolbox } = w.tools();
  const created = await toolbox.write({ path: "src/new.ts", content: "export const n = 1;\n" });
  assert.equal(created, `Created src/new.ts (sha256 ${sha("export const n = 1;\n")}).`);
  assert.equal(readFileSync(join(w.repo, "src", "new.ts"), "utf8"), "export const n = 1;\n");
  assert.equal(editor.revision("src/new.ts"), sha("export const n = 1;\n"));
  assert.match(await toolbox.write({ path: "src/new.ts", content: "export const n = 2;\n" }), /^Wrote src\/new\.ts/);
  assert.equal(readFileSync(join(w.repo, "src", "new.ts"), "utf8"), "export const n = 2;\n");
});

test("real host: write refusals (undeclared, private, unseen existing file, stale) change nothing", async () => {
  const w = worktree();
  const { editor, toolbox } = w.tools();
  const inode = lstatSync(join(w.repo, "src", "a.ts")).ino;
  const before = w.snapshot();
  assert.equal((await refusal(toolbox.write({ path: "notes.txt", content: "x" }))).code, "PATH_UNDECLARED");
  assert.equal((await refusal(toolbox.write({ path: ".env", content: "x" }))).code, "PATH_PRIVATE");
  assert.equal((await refusal(toolbox.write({ path: "src/.env", content: "x" }))).code, "PATH_PRIVATE");
  const unseen = await refusal(toolbox.write({ path: "src/a.ts", content: "x" }));
  assert.equal(unseen.code, "TARGET_EXISTS");
  assert.match(unseen.message, /read the file first, then write again/);
  // A stale revision is refused as stale, before how much of it was seen matters.
  editor.hit("src/a.ts", "b".repeat(64));
  const stale = await refusal(toolbox.write({ path: "src/a.ts", content: "x" }));
  assert.equal(stale.code, "REVISION_STALE");
  assert.match(stale.message, new RegExp(`it is now ${sha(A)}; read it again`));
  assert.equal(w.snapshot(), before);
  assert.equal(lstatSync(join(w.repo, "src", "a.ts")).ino, inode);
  assert.equal(editor.poisoned, undefined, "a refusal poisons nothing");
});

test("real host: delete removes a seen declared file and forgets it; refusals change nothing", async () => {
  const w = worktree();
  const { editor, toolbox } = w.tools();
  const before = w.snapshot();
  const unseen = await refusal(toolbox.delete({ path: "src/old.ts" }));
  assert.equal(unseen.code, "REVISION_UNAVAILABLE");
  assert.equal((await refusal(toolbox.delete({ path: "notes.md" }))).code, "PATH_UNDECLARED");
  assert.equal((await refusal(toolbox.delete({ path: ".env" }))).code, "PATH_PRIVATE");
  editor.hit("src/old.ts", "c".repeat(64));
  assert.equal((await refusal(toolbox.delete({ path: "src/old.ts" }))).code, "REVISION_STALE");
  assert.equal(w.snapshot(), before);
  // Sibling: after a read, the delete lands and the revision is forgotten.
  await editor.read({ path: "src/old.ts" });
  assert.equal(await toolbox.delete({ path: "src/old.ts" }), "Deleted src/old.ts.");
  assert.equal(existsSync(join(w.repo, "src", "old.ts")), false);
  assert.equal(editor.revision("src/old.ts"), undefined);
  // Gone: a create at the same path is a create again.
  assert.match(await toolbox.write({ path: "src/old.ts", content: OLD }), /^Created src\/old\.ts/);
});

test("real host: a file seen only in part is never overwritten or deleted whole (PARTLY_SEEN); read whole, it is", async () => {
  const w = worktree();
  const long = Array.from({ length: 3000 }, (_, i) => `line ${i + 1}\n`).join("");
  writeFileSync(join(w.repo, "src", "long.ts"), long);
  const { editor, toolbox } = w.tools();
  const before = w.snapshot();
  const inode = lstatSync(join(w.repo, "src", "long.ts")).ino;
  await editor.read({ path: "src/long.ts" });
  const write = await refusal(toolbox.write({ path: "src/long.ts", content: "the first page\n" }));
  assert.equal(write.code, "PARTLY_SEEN");
  assert.match(write.message, /`src\/long\.ts` was seen only in part/);
  assert.equal((await refusal(toolbox.delete({ path: "src/long.ts" }))).code, "PARTLY_SEEN");
  // A grep hit is part too; the attempt's starting map (never read) is not a view at all.
  await toolbox.grep({ pattern: "export", path: "src" });
  assert.equal((await refusal(toolbox.write({ path: "src/a.ts", content: "x" }))).code, "PARTLY_SEEN");
  assert.equal(w.snapshot(), before);
  assert.equal(lstatSync(join(w.repo, "src", "long.ts")).ino, inode);
  // Sibling: the rest read, the write lands.
  await editor.read({ path: "src/long.ts", offset: 2001 });
  assert.match(await toolbox.write({ path: "src/long.ts", content: "short\n" }), /^Wrote src\/long\.ts/);
  assert.equal(readFileSync(join(w.repo, "src", "long.ts"), "utf8"), "short\n");
});

test("real host: apply_patch lands several files at once with paths as models write them, and records their revisions", async () => {
  const w = worktree();
  const { editor, toolbox } = w.tools();
  await editor.read({ path: "src/a.ts" });
  await editor.read({ path: "src/old.ts" });
  const patch = [
    "*** Begin Patch",
    "*** Update File: ./src/a.ts",
    "@@",
    "-export const greeting = 'hello world';",
    "+export const greeting = 'hello satyrn';",
    `*** Delete File: ${join(w.repo, "src", "old.ts")}`,
    "*** Add File: src/deep/new.ts",
    "+export const n = 1;",
    "*** End Patch",
    "",
  ].join("\n");
  const done = await toolbox.applyPatch({ patch });
  const next = A.replace("hello world", "hello satyrn");
  assert.equal(
    done,
    `Applied the patch to 3 files:\nmodified src/a.ts (sha256 ${sha(next)})\ncreated src/deep/new.ts (sha256 ${sha("export const n = 1;\n")})\ndeleted src/old.ts`,
  );
  assert.equal(readFileSync(join(w.repo, "src", "a.ts"), "utf8"), next);
  assert.equal(existsSync(join(w.repo, "src", "old.ts")), false);
  assert.equal(readFileSync(join(w.repo, "src", "deep", "new.ts"), "utf8"), "export const n = 1;\n");
  assert.equal(editor.revision("src/a.ts"), sha(next));
  assert.equal(editor.seen("src/a.ts"), "whole", "a whole view edited stays whole");
  assert.equal(editor.revision("src/old.ts"), undefined);
  assert.equal(editor.seen("src/deep/new.ts"), "whole");
  // The map serves the next patch: no read needed.
  assert.match(await toolbox.applyPatch({ patch: "*** Begin Patch\n*** Delete File: src/deep/new.ts\n*** End Patch\n" }), /^Applied the patch to 1 file:\ndeleted src\/deep\/new\.ts$/);
});

test("real host: a refused apply_patch changes nothing and tells the model every problem, the near miss included", async () => {
  const w = worktree();
  const long = Array.from({ length: 3000 }, (_, i) => `line ${i + 1}\n`).join("");
  writeFileSync(join(w.repo, "src", "long.ts"), long);
  const { editor, toolbox } = w.tools();
  await editor.read({ path: "src/a.ts" });
  await editor.read({ path: "src/long.ts" });
  const before = w.snapshot();
  const inode = lstatSync(join(w.repo, "src", "a.ts")).ino;
  const patch = (indent: string) =>
    [
      "*** Begin Patch",
      "*** Add File: src/b.ts",
      "+export const b = 2;",
      "*** Update File: src/a.ts",
      "@@",
      `-export const greeting =${indent}'hello world';`,
      "+export const greeting = 'hello satyrn';",
      "*** End Patch",
      "",
    ].join("\n");
  const refused = await refusal(toolbox.applyPatch({ patch: patch("  ") }));
  assert.equal(refused.code, "HUNKS_REFUSED");
  assert.match(refused.message, /\n- src\/a\.ts \(patch line 4\): HUNKS_REFUSED: /);
  assert.match(refused.message, /\n {2}- hunk 1: HUNK_CONTEXT_MISSING: .*whitespace/);
  const cases: Array<[string, string]> = [
    ["*** Begin Patch\n*** Add File: notes.md\n+x\n*** End Patch\n", "PATH_UNDECLARED"],
    ["*** Begin Patch\n*** Add File: src/a.ts\n+x\n*** End Patch\n", "ADD_EXISTS"],
    ["*** Begin Patch\n*** Delete File: src/long.ts\n*** End Patch\n", "PARTLY_SEEN"],
    ["*** Begin Patch\n*** Delete File: ../repo/src/a.ts\n*** End Patch\n", "INVALID_REQUEST"],
    ["*** Begin Patch\n*** Frobnicate File: src/a.ts\n*** End Patch\n", "PATCH_INVALID"],
  ];
  for (const [bad, code] of cases) assert.equal((await refusal(toolbox.applyPatch({ patch: bad }))).code, code, bad);
  assert.equal(w.snapshot(), before);
  assert.equal(lstatSync(join(w.repo, "src", "a.ts")).ino, inode);
  assert.equal(editor.poisoned, undefined, "a refusal poisons nothing");
  // Sibling: the corrected patch lands whole.
  assert.match(await toolbox.applyPatch({ patch: patch(" ") }), /^Applied the patch to 2 files:/);
  assert.equal(readFileSync(join(w.repo, "src", "b.ts"), "utf8"), "export const b = 2;\n");
  assert.equal(readFileSync(join(w.repo, "src", "a.ts"), "utf8"), A.replace("hello world", "hello satyrn"));
});

test("real host: a file moved by apply_patch is seen as its source was", async () => {
  const w = worktree();
  const long = Array.from({ length: 3000 }, (_, i) => `line ${i + 1}\n`).join("");
  writeFileSync(join(w.repo, "src", "long.ts"), long);
  const { editor, toolbox } = w.tools();
  await editor.read({ path: "src/long.ts" });
  await editor.read({ path: "src/a.ts" });
  const move = (from: string, to: string) => `*** Begin Patch\n*** Update File: ${from}\n*** Move to: ${to}\n*** End Patch\n`;
  assert.match(await toolbox.applyPatch({ patch: move("src/long.ts", "src/moved.ts") }), /created src\/moved\.ts \(sha256 [0-9a-f]{64}, moved from src\/long\.ts\)/);
  assert.equal(editor.seen("src/moved.ts"), "part");
  const before = w.snapshot();
  assert.equal((await refusal(toolbox.write({ path: "src/moved.ts", content: "x\n" }))).code, "PARTLY_SEEN");
  assert.equal((await refusal(toolbox.applyPatch({ patch: "*** Begin Patch\n*** Delete File: src/moved.ts\n*** End Patch\n" }))).code, "PARTLY_SEEN");
  // Within one patch too: moved away, then deleted or replaced where it went.
  const away = "*** Begin Patch\n*** Update File: src/moved.ts\n*** Move to: src/tmp.ts\n*** Delete File: src/tmp.ts\n";
  assert.equal((await refusal(toolbox.applyPatch({ patch: `${away}*** End Patch\n` }))).code, "PARTLY_SEEN");
  assert.equal((await refusal(toolbox.applyPatch({ patch: `${away}*** Add File: src/moved.ts\n+x\n*** End Patch\n` }))).code, "PARTLY_SEEN");
  assert.equal(w.snapshot(), before);
  // Sibling: a file seen whole moves seen whole, and may then be overwritten.
  await toolbox.applyPatch({ patch: move("src/a.ts", "src/b.ts") });
  assert.equal(editor.seen("src/b.ts"), "whole");
  assert.match(await toolbox.write({ path: "src/b.ts", content: "b\n" }), /^Wrote src\/b\.ts/);
  assert.equal(readFileSync(join(w.repo, "src", "b.ts"), "utf8"), "b\n");
});

test("real host: a file read, then deleted by someone else, is created again by a write", async () => {
  const w = worktree();
  const { editor, toolbox } = w.tools();
  await editor.read({ path: "src/a.ts" });
  rmSync(join(w.repo, "src", "a.ts"));
  assert.match(await toolbox.write({ path: "src/a.ts", content: "again\n" }), /^Created src\/a\.ts/);
  assert.equal(readFileSync(join(w.repo, "src", "a.ts"), "utf8"), "again\n");
  // Sibling: a file that is still there is overwritten at the recorded revision.
  await editor.read({ path: "src/old.ts" });
  assert.match(await toolbox.write({ path: "src/old.ts", content: "new\n" }), /^Wrote src\/old\.ts/);
});

test("a transport failure of write or delete poisons the editor; one of ls, find, grep does not", async () => {
  const w = worktree();
  const children: FakeChild[] = [];
  const context: MutationContext = { version: 1, repo: w.repo, contract: w.contract, revisions: new Map(), host: "/satyrn-host" };
  const spawn = () => {
    const child = new FakeChild();
    children.push(child);
    setImmediate(() => child.answer("not json\n"));
    return child.asChild();
  };
  const editor = new Editor(context, processChannel(context.host, { spawn }));
  const toolbox = new Toolbox(context, editor);
  for (const call of [() => toolbox.ls({}), () => toolbox.find({ pattern: "*" }), () => toolbox.grep({ pattern: "x" })]) {
    assert.match((await refusal(call())).code, /^(LIST|SEARCH)_UNAVAILABLE$/);
  }
  assert.equal(editor.poisoned, undefined);
  const write = await refusal(toolbox.write({ path: "src/n.ts", content: "x" }));
  assert.equal(write.code, "WRITE_UNAVAILABLE");
  assert.match(write.message, /may or may not have been applied/);
  assert.ok(editor.poisoned !== undefined);
  const spawnedBefore = children.length;
  assert.equal((await refusal(toolbox.delete({ path: "src/old.ts" }))).code, "DELETE_UNAVAILABLE");
  assert.equal((await refusal(editor.edit({ path: "src/a.ts", edits: [{ oldText: "a", newText: "b" }] }))).code, "EDIT_UNAVAILABLE");
  assert.equal(children.length, spawnedBefore, "nothing is spawned once poisoned");
  // The read-only tools still answer (here: the transport failure again, not a poisoning).
  assert.equal((await refusal(toolbox.ls({}))).code, "LIST_UNAVAILABLE");
});

test("a malformed write success (wrong path) poisons the editor", async () => {
  const w = worktree();
  const context: MutationContext = { version: 1, repo: w.repo, contract: w.contract, revisions: new Map(), host: "/satyrn-host" };
  const spawn = () => {
    const child = new FakeChild();
    setImmediate(() => child.answer(`${JSON.stringify({ version: 1, ok: true, code: "OK", message: "", result: { path: "src/other.ts", sha256: "a".repeat(64), created: true } })}\n`));
    return child.asChild();
  };
  const editor = new Editor(context, processChannel(context.host, { spawn }));
  const toolbox = new Toolbox(context, editor);
  assert.equal((await refusal(toolbox.write({ path: "src/n.ts", content: "x" }))).code, "WRITE_UNAVAILABLE");
  assert.ok(editor.poisoned !== undefined);
  assert.equal(editor.revision("src/other.ts"), undefined);
});

test("names are shown as the shared cases say, and a name with a line feed stays on its line", () => {
  const fixture = JSON.parse(readFileSync(join(import.meta.dirname, "../../tests/fixtures/shown-names.json"), "utf8"));
  assert.ok(fixture.cases.length > 10);
  for (const [name, expected] of fixture.cases) assert.equal(shown(name), expected, JSON.stringify(name));
  const text = renderList({
    entries: [
      { path: "a.txt\nsecrets.txt (9 bytes) [writable]", kind: "file", size: 1, writable: false },
      { path: "b.txt", kind: "file", size: 1, writable: false },
    ],
    hidden: 0,
    unreadable: 0,
  });
  assert.equal(text, "a.txt\\u{000A}secrets.txt (9 bytes) [writable] (1 bytes)\nb.txt (1 bytes)");
});
