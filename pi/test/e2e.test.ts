/**
 * The real Pi CLI (pinned, installed by npm from the registry) end to end, with the
 * scripted model on 127.0.0.1 standing in for the LLM: read → a refused edit → a correct
 * edit → a final message, through `satyrn-host attempt` alone and through
 * `satyrn-host deliver … -- satyrn-host attempt …`.
 */

import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { SATYRN_TOOLS } from "../lib/context.ts";
import { hostBin, ROOT, run } from "./helpers.ts";
import { MODEL, MODEL_ID, PROVIDER, offeredTools, startScriptedModel, toolResults, writeAgentDir, type Step } from "./scripted-model.ts";

const PI = join(ROOT, "pi", "node_modules", ".bin", "pi");
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "satyrn-e2e-"));
  dirs.push(d);
  return d;
}

function git(cwd: string, args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.invalid", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.invalid" },
  });
}

const GREETING = "export function greeting(): string {\n  return \"hello world\";\n}\n";

function repository(): { base: string; repo: string; contract: string } {
  const base = tempDir();
  const repo = join(base, "repo");
  mkdirSync(join(repo, "src"), { recursive: true });
  writeFileSync(join(repo, "src", "greeting.ts"), GREETING);
  writeFileSync(join(repo, "README.md"), "hello world\n");
  git(repo, ["init", "-q", "-b", "main"]);
  git(repo, ["add", "-A"]);
  git(repo, ["commit", "-q", "-m", "init"]);
  const contract = join(base, "contract.yaml");
  writeFileSync(contract, "id: e2e-greeting\ntask: Make the greeting say hello satyrn.\nwritable_paths:\n  - 'src/*.ts'\n");
  return { base, repo, contract };
}

const SCRIPT: Step[] = [
  { toolCalls: [{ name: "read", arguments: { path: "src/greeting.ts" } }] },
  { toolCalls: [{ name: "edit", arguments: { path: "src/greeting.ts", edits: [{ oldText: "hello planet", newText: "hello satyrn" }] } }] },
  { toolCalls: [{ name: "edit", arguments: { path: "src/greeting.ts", edits: [{ oldText: "hello world", newText: "hello satyrn" }] } }] },
  { text: "Done: the greeting now says hello satyrn." },
];


function attemptEnv(agentDir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PI_CODING_AGENT_DIR: agentDir,
    PI_OFFLINE: "1",
    SATYRN_PI_BIN: PI,
    ...extra,
  };
}

function assertScriptedConversation(requests: Array<Record<string, unknown>>): void {
  assert.equal(requests.length, 4, "the model was asked four times");
  const tools = offeredTools(requests[0]);
  assert.deepEqual([...tools.keys()].sort(), [...SATYRN_TOOLS].sort(), "exactly satyrn's tools are offered");
  assert.match(tools.get("edit") ?? "", /declared writable by the task contract/);
  assert.match(tools.get("read") ?? "", /inside the repository/, "satyrn's read replaces Pi's");
  const afterRefusal = toolResults(requests[2]).join("\n");
  assert.match(afterRefusal, /ANCHOR_MISSING/, "the refusal reached the model");
  const afterSuccess = toolResults(requests[3]).join("\n");
  assert.match(afterSuccess, /Edited src\/greeting\.ts/);
}

test("satyrn-host attempt runs the real Pi: refused edit reaches the model, the correct edit lands", async () => {
  assert.ok(existsSync(PI), `pi is not installed at ${PI}: run npm ci in pi/`);
  const { base, repo, contract } = repository();
  const model = await startScriptedModel(SCRIPT);
  try {
    const transcript = join(base, "transcript.jsonl");
    const patch = join(base, "attempt.patch");
    const result = await run(
      hostBin(),
      ["attempt", "--model", MODEL, contract],
      repo,
      attemptEnv(writeAgentDir(join(base, "agent"), model.baseUrl), {
        SATYRN_ATTEMPT_TRANSCRIPT: transcript,
        SATYRN_ATTEMPT_PATCH: patch,
      }),
    );
    assert.equal(result.code, 0, result.stderr);
    assert.equal(readFileSync(join(repo, "src", "greeting.ts"), "utf8"), GREETING.replace("hello world", "hello satyrn"));
    assert.equal(readFileSync(join(repo, "README.md"), "utf8"), "hello world\n");
    assertScriptedConversation(model.requests);
    // The transcript: Pi's exact stdout, on our stdout and at the destination.
    assert.deepEqual(readFileSync(transcript), result.stdout);
    const events = result.stdout.toString("utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    const edits = events.filter((e) => e.type === "tool_execution_end" && e.toolName === "edit");
    assert.deepEqual(edits.map((e) => e.isError), [true, false]);
    // Confined by default: every tool call of the session went over one broker connection.
    const calls = events.filter((e) => e.type === "tool_execution_end").length;
    assert.match(result.stderr, new RegExp(`the broker served 0 MCP sessions, and ${calls} protocol requests over 1 connection\n`));
    const patchText = readFileSync(patch, "utf8");
    assert.match(patchText, /^diff --git a\/src\/greeting\.ts b\/src\/greeting\.ts/m);
    assert.match(patchText, /\+  return "hello satyrn";/);
  } finally {
    await model.close();
  }
});

test("deliver + attempt + real Pi: a candidate ref with only the declared file, the caller's checkout untouched", async () => {
  const { base, repo, contract } = repository();
  const model = await startScriptedModel(SCRIPT);
  try {
    const head = git(repo, ["rev-parse", "HEAD"]).trim();
    const host = hostBin();
    const result = await run(
      host,
      ["deliver", "--repo", repo, "--timeout", "120", contract, "--", host, "attempt", "--model", MODEL, contract],
      repo,
      attemptEnv(writeAgentDir(join(base, "agent"), model.baseUrl)),
    );
    const receipt = JSON.parse(result.stdout.toString("utf8")) as Record<string, unknown>;
    assert.equal(receipt.code, "OK", result.stderr);
    assert.equal(result.code, 0);
    assert.equal(receipt.candidate_ref, "refs/satyrn/candidates/e2e-greeting/head");
    assert.deepEqual(receipt.paths, ["src/greeting.ts"]);
    const candidate = String(receipt.candidate_commit);
    assert.equal(git(repo, ["rev-parse", `${candidate}^`]).trim(), head, "the candidate's parent is the base");
    assert.equal(git(repo, ["show", `${candidate}:src/greeting.ts`]), GREETING.replace("hello world", "hello satyrn"));
    assert.equal(git(repo, ["diff", "--name-only", head, candidate]).trim(), "src/greeting.ts");
    // The caller's checkout is untouched.
    assert.equal(git(repo, ["status", "--porcelain=v1", "--untracked-files=all"]), "");
    assert.equal(git(repo, ["rev-parse", "HEAD"]).trim(), head);
    assert.equal(readFileSync(join(repo, "src", "greeting.ts"), "utf8"), GREETING);
    assert.equal(git(repo, ["worktree", "list", "--porcelain"]).split("\n").filter((l) => l.startsWith("worktree ")).length, 1);
    assertScriptedConversation(model.requests);
  } finally {
    await model.close();
  }
});

/**
 * A series with one model per attempt: `deliver --attempts 2 --jobs 1 … -- satyrn-host attempt
 * --model A --model B`: the real Pi of attempt 1 asks for A, that of attempt 2 for B (the
 * scripted server's log), and each attempt's candidate holds its own model's edit.
 */
test("deliver --attempts 2 + attempt with two models + real Pi: each attempt asks its own model", async () => {
  const { base, repo, contract } = repository();
  const second = `${MODEL_ID}-second`;
  const editTo = (text: string): Step[] => [
    { toolCalls: [{ name: "edit", arguments: { path: "src/greeting.ts", edits: [{ oldText: "hello world", newText: text }] } }] },
    { text: "Done." },
  ];
  const model = await startScriptedModel([...editTo("hello first"), ...editTo("hello second")]);
  try {
    const host = hostBin();
    const result = await run(
      host,
      ["deliver", "--repo", repo, "--timeout", "120", "--attempts", "2", "--jobs", "1", contract, "--",
        host, "attempt", "--model", MODEL, "--model", `${PROVIDER}/${second}`, contract],
      repo,
      attemptEnv(writeAgentDir(join(base, "agent"), model.baseUrl, [second])),
    );
    const summary = JSON.parse(result.stdout.toString("utf8")) as { code: string; attempts: Array<{ receipt: Record<string, unknown> }> };
    assert.equal(summary.code, "OK", result.stderr);
    assert.equal(result.code, 0);
    const asked = model.requests.map((r) => r.model);
    assert.deepEqual(asked, [MODEL_ID, MODEL_ID, second, second], "attempt 1 asks the first model, attempt 2 the second");
    assert.match(result.stderr, new RegExp(`attempt 1 of 2 uses model ${MODEL}\\n`));
    assert.match(result.stderr, new RegExp(`attempt 2 of 2 uses model ${PROVIDER}/${second}\\n`));
    // Pi's transcript (forwarded to deliver's stderr) names the model of each reply.
    assert.ok(result.stderr.includes(`"provider":"${PROVIDER}","model":"${second}"`), "the second model's replies in the transcript");
    for (const [i, said] of [[0, "hello first"], [1, "hello second"]] as const) {
      const receipt = summary.attempts[i].receipt;
      assert.equal(receipt.code, "OK");
      assert.equal(receipt.candidate_ref, `refs/satyrn/candidates/e2e-greeting/00${i + 1}/head`);
      assert.equal(git(repo, ["show", `${String(receipt.candidate_commit)}:src/greeting.ts`]), GREETING.replace("hello world", said));
    }
    assert.equal(git(repo, ["status", "--porcelain=v1", "--untracked-files=all"]), "");
  } finally {
    await model.close();
  }
});

/**
 * The toolbox through deliver: the real Pi finds files, greps, creates a test file, deletes
 * an obsolete one and edits a third; a write to an undeclared path and one to a private path
 * (matched by a writable pattern too: private wins) are refused in the same run. The
 * candidate holds exactly A/D/M of the three files, the refused paths nowhere.
 */
test("deliver + attempt + real Pi: the toolbox adds, deletes and edits files; undeclared and private writes are refused", async () => {
  const base = tempDir();
  const repo = join(base, "repo");
  mkdirSync(join(repo, "src"), { recursive: true });
  writeFileSync(join(repo, "src", "greeting.ts"), GREETING);
  writeFileSync(join(repo, "src", "obsolete.ts"), "export const legacy = true;\n");
  writeFileSync(join(repo, "README.md"), "hello world\n");
  git(repo, ["init", "-q", "-b", "main"]);
  git(repo, ["add", "-A"]);
  git(repo, ["commit", "-q", "-m", "init"]);
  const contract = join(base, "contract.yaml");
  writeFileSync(contract, "id: e2e-toolbox\ntask: Test the greeting, drop the obsolete module.\nwritable_paths:\n  - 'src/*.ts'\n  - 'test/*'\n");
  const TEST = 'import { greeting } from "../src/greeting.ts";\nif (greeting() !== "hello satyrn") throw new Error("wrong");\n';
  const model = await startScriptedModel([
    { toolCalls: [{ name: "find", arguments: { pattern: "**/*.ts" } }] },
    { toolCalls: [{ name: "grep", arguments: { pattern: "hello world", literal: true } }] },
    { toolCalls: [{ name: "write", arguments: { path: "test/greeting.test.ts", content: TEST } }] },
    { toolCalls: [{ name: "write", arguments: { path: "docs/notes.md", content: "undeclared\n" } }] },
    { toolCalls: [{ name: "write", arguments: { path: "test/fixture.key", content: "private\n" } }] },
    // Never read: deleting it would drop what the model never saw.
    { toolCalls: [{ name: "delete", arguments: { path: "src/obsolete.ts" } }] },
    { toolCalls: [{ name: "read", arguments: { path: "src/obsolete.ts" } }] },
    { toolCalls: [{ name: "delete", arguments: { path: "src/obsolete.ts" } }] },
    { toolCalls: [{ name: "edit", arguments: { path: "src/greeting.ts", edits: [{ oldText: "hello world", newText: "hello satyrn" }] } }] },
    { text: "Done." },
  ]);
  try {
    const head = git(repo, ["rev-parse", "HEAD"]).trim();
    const host = hostBin();
    const result = await run(
      host,
      ["deliver", "--repo", repo, "--timeout", "120", contract, "--", host, "attempt", "--model", MODEL, contract],
      repo,
      attemptEnv(writeAgentDir(join(base, "agent"), model.baseUrl)),
    );
    const receipt = JSON.parse(result.stdout.toString("utf8")) as Record<string, unknown>;
    assert.equal(receipt.code, "OK", result.stderr);
    assert.equal(result.code, 0);
    assert.deepEqual(receipt.paths, ["src/greeting.ts", "src/obsolete.ts", "test/greeting.test.ts"], "added and deleted paths are changed paths");
    const candidate = String(receipt.candidate_commit);
    assert.equal(git(repo, ["rev-parse", `${candidate}^`]).trim(), head, "the candidate's parent is the base");
    assert.equal(
      git(repo, ["diff", "--name-status", head, candidate]),
      "M\tsrc/greeting.ts\nD\tsrc/obsolete.ts\nA\ttest/greeting.test.ts\n",
    );
    assert.equal(git(repo, ["show", `${candidate}:test/greeting.test.ts`]), TEST);
    assert.equal(git(repo, ["show", `${candidate}:src/greeting.ts`]), GREETING.replace("hello world", "hello satyrn"));
    assert.deepEqual(git(repo, ["ls-tree", "-r", "--name-only", candidate]).trim().split("\n"), ["README.md", "src/greeting.ts", "test/greeting.test.ts"]);
    // What the model was told, step by step.
    assert.equal(model.requests.length, 10);
    const seen = model.requests.map((r) => toolResults(r).at(-1) ?? "");
    assert.match(seen[1], /^src\/greeting\.ts \(\d+ bytes\) \[writable\]$/m);
    assert.match(seen[1], /^src\/obsolete\.ts \(\d+ bytes\) \[writable\]$/m);
    assert.match(seen[2], /^src\/greeting\.ts \[writable\] \(sha256 [0-9a-f]{64}\)\n2: {3}return "hello world";$/m);
    assert.match(seen[2], /^README\.md \(sha256 [0-9a-f]{64}\)\n1: hello world$/m);
    assert.match(seen[3], /^Created test\/greeting\.test\.ts \(sha256 [0-9a-f]{64}\)\.$/);
    assert.match(seen[4], /PATH_UNDECLARED/);
    assert.match(seen[5], /PATH_PRIVATE/);
    assert.match(seen[6], /PARTLY_SEEN: `src\/obsolete\.ts` was seen only in part/);
    assert.match(seen[7], /export const legacy = true;/);
    assert.equal(seen[8], "Deleted src/obsolete.ts.");
    assert.match(seen[9], /^Edited src\/greeting\.ts/);
    // The caller's checkout is untouched.
    assert.equal(git(repo, ["status", "--porcelain=v1", "--untracked-files=all"]), "");
    assert.equal(git(repo, ["rev-parse", "HEAD"]).trim(), head);
    assert.equal(readFileSync(join(repo, "src", "obsolete.ts"), "utf8"), "export const legacy = true;\n");
  } finally {
    await model.close();
  }
});

/**
 * apply_patch through deliver with the real Pi: a three-file patch whose last hunk does not
 * match changes nothing and the model reads where the file differs; the corrected patch lands
 * whole, and the candidate is exactly that change.
 */
test("deliver + attempt + real Pi: a refused patch changes nothing and names the near miss; the retry's three files are the candidate", async () => {
  const { base, repo, contract } = repository();
  writeFileSync(join(repo, "src", "names.ts"), "export const names = [\n  \"world\",\n];\n");
  git(repo, ["add", "-A"]);
  git(repo, ["commit", "-q", "-m", "names"]);
  const patch = (indent: string) =>
    [
      "*** Begin Patch",
      "*** Update File: ./src/greeting.ts",
      "@@",
      '-  return "hello world";',
      '+  return "hello satyrn";',
      "*** Add File: src/farewell.ts",
      '+export const farewell = "bye";',
      "*** Update File: src/names.ts",
      "@@",
      `-${indent}"world",`,
      `+${indent}"satyrn",`,
      "*** End Patch",
      "",
    ].join("\n");
  const model = await startScriptedModel([
    { toolCalls: [{ name: "read", arguments: { path: "src/greeting.ts" } }] },
    { toolCalls: [{ name: "read", arguments: { path: "src/names.ts" } }] },
    { toolCalls: [{ name: "apply_patch", arguments: { patch: patch("    ") } }] },
    { toolCalls: [{ name: "apply_patch", arguments: { patch: patch("  ") } }] },
    { text: "Done." },
  ]);
  try {
    const head = git(repo, ["rev-parse", "HEAD"]).trim();
    const host = hostBin();
    const result = await run(
      host,
      ["deliver", "--repo", repo, "--timeout", "120", contract, "--", host, "attempt", "--model", MODEL, contract],
      repo,
      attemptEnv(writeAgentDir(join(base, "agent"), model.baseUrl)),
    );
    const receipt = JSON.parse(result.stdout.toString("utf8")) as Record<string, unknown>;
    assert.equal(receipt.code, "OK", result.stderr);
    const seen = model.requests.map((r) => toolResults(r).at(-1) ?? "");
    assert.match(seen[3], /HUNKS_REFUSED/);
    assert.match(seen[3], /- src\/names\.ts \(patch line 8\): HUNKS_REFUSED: /);
    assert.match(seen[3], /hunk 1: HUNK_CONTEXT_MISSING: .*whitespace/);
    assert.match(seen[4], /^Applied the patch to 3 files:/);
    const candidate = String(receipt.candidate_commit);
    assert.equal(
      git(repo, ["diff", "--name-status", head, candidate]),
      "A\tsrc/farewell.ts\nM\tsrc/greeting.ts\nM\tsrc/names.ts\n",
    );
    assert.equal(git(repo, ["show", `${candidate}:src/names.ts`]), "export const names = [\n  \"satyrn\",\n];\n");
    assert.equal(git(repo, ["show", `${candidate}:src/greeting.ts`]), GREETING.replace("hello world", "hello satyrn"));
    assert.equal(git(repo, ["status", "--porcelain=v1", "--untracked-files=all"]), "");
  } finally {
    await model.close();
  }
});

/**
 * A hostile repository and a hostile user agent directory, and no PI_OFFLINE: Pi must load
 * nothing from either except the user's model definitions. The repository's `.pi/settings.json`
 * declares a package and an `npmCommand` (which Pi would run at start-up), and extensions,
 * skills, prompts, SYSTEM.md, APPEND_SYSTEM.md and AGENTS.md try to change what the model is
 * told; the user's agent directory tries the same. The model's first request shows the exact
 * system prompt and user prompt; no command ran; the candidate holds only the model's edit.
 */
test("deliver + attempt + real Pi without PI_OFFLINE: a hostile repository's and user's Pi configuration is never loaded", async () => {
  const { base, repo, contract } = repository();
  const sentinels = join(base, "sentinels");
  mkdirSync(sentinels);
  const ran = (what: string) => join(sentinels, what);
  const command = (what: string) => ["sh", "-c", `echo ran >> '${ran(what)}'; echo owned > README.md; echo x > pwned.txt`, "npm"];
  const extension = (what: string) =>
    `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(ran(what))}, "loaded");\nexport default function () {}\n`;
  const skill = (name: string) => `---\nname: ${name}\ndescription: HOSTILE SKILL ${name}\n---\nHOSTILE SKILL BODY\n`;
  const hostile: Record<string, string> = {
    ".pi/settings.json": JSON.stringify({
      packages: ["npm:left-pad", "./local-package"],
      npmCommand: command("repo-npm"),
      extensions: ["./evil-settings.ts"],
      skills: ["./skills-extra"],
      prompts: ["./prompts-extra"],
    }),
    ".pi/evil-settings.ts": extension("repo-settings-extension"),
    ".pi/local-package/package.json": JSON.stringify({ name: "local", keywords: ["pi-package"], pi: { extensions: ["./index.ts"] } }),
    ".pi/local-package/index.ts": extension("repo-package-extension"),
    ".pi/extensions/evil.ts": extension("repo-auto-extension"),
    ".pi/SYSTEM.md": "HOSTILE REPOSITORY SYSTEM PROMPT\n",
    ".pi/APPEND_SYSTEM.md": "HOSTILE REPOSITORY APPEND\n",
    ".pi/skills/evil/SKILL.md": skill("repo-skill"),
    ".pi/prompts/evil.md": "HOSTILE PROMPT TEMPLATE\n",
    ".agents/skills/evil/SKILL.md": skill("agents-skill"),
    "AGENTS.md": "HOSTILE AGENTS.md\n",
    "CLAUDE.md": "HOSTILE CLAUDE.md\n",
  };
  for (const [path, text] of Object.entries(hostile)) {
    mkdirSync(join(repo, path, ".."), { recursive: true });
    writeFileSync(join(repo, path), text);
  }
  git(repo, ["add", "-A"]);
  git(repo, ["commit", "-q", "-m", "hostile pi configuration"]);
  const model = await startScriptedModel(SCRIPT);
  try {
    const agent = writeAgentDir(join(base, "agent"), model.baseUrl);
    writeFileSync(join(agent, "settings.json"), JSON.stringify({ packages: ["npm:left-pad"], npmCommand: command("user-npm"), extensions: [join(agent, "evil-user.ts")] }));
    writeFileSync(join(agent, "evil-user.ts"), extension("user-settings-extension"));
    mkdirSync(join(agent, "extensions"));
    writeFileSync(join(agent, "extensions", "evil.ts"), extension("user-auto-extension"));
    writeFileSync(join(agent, "SYSTEM.md"), "HOSTILE USER SYSTEM PROMPT\n");
    writeFileSync(join(agent, "APPEND_SYSTEM.md"), "HOSTILE USER APPEND\n");
    writeFileSync(join(agent, "AGENTS.md"), "HOSTILE USER AGENTS.md\n");
    // A temporary directory of its own: nothing of the attempt (jiti's cache of compiled
    // extensions included) may be left in a directory other users could share.
    const sharedTmp = join(base, "shared-tmp");
    mkdirSync(sharedTmp);
    const env = attemptEnv(agent, { TMPDIR: sharedTmp });
    delete env.PI_OFFLINE;
    const head = git(repo, ["rev-parse", "HEAD"]).trim();
    const host = hostBin();
    const result = await run(
      host,
      ["deliver", "--repo", repo, "--timeout", "120", contract, "--", host, "attempt", "--model", MODEL, contract],
      repo,
      env,
    );
    const receipt = JSON.parse(result.stdout.toString("utf8")) as Record<string, unknown>;
    assert.equal(receipt.code, "OK", result.stderr);
    assert.deepEqual(receipt.paths, ["src/greeting.ts"], "the candidate holds only the model's edit");
    const candidate = String(receipt.candidate_commit);
    assert.equal(git(repo, ["diff", "--name-only", head, candidate]).trim(), "src/greeting.ts");
    assert.deepEqual(readdirSync(sentinels), [], "a command or extension from the repository or the user's agent directory ran");
    assert.deepEqual(readdirSync(sharedTmp), [], "the attempt left files in the shared temporary directory");
    assertScriptedConversation(model.requests);

    const messages = model.requests[0].messages as Array<{ role: string; content: unknown }>;
    const text = (m: { content: unknown }) =>
      typeof m.content === "string"
        ? m.content
        : (m.content as Array<{ type: string; text?: string }>).map((part) => (part.type === "text" ? (part.text ?? "") : `[${part.type}]`)).join("");
    const system = messages.filter((m) => m.role === "system").map(text);
    const systemPrompt = readFileSync(join(ROOT, "crates", "attempt", "src", "system_prompt.md"), "utf8");
    assert.equal(system.length, 1, JSON.stringify(system));
    assert.match(
      system[0],
      new RegExp(`^${escapeRegExp(systemPrompt)}\nCurrent date: \\d{4}-\\d{2}-\\d{2}\nCurrent working directory: /[^\n]*/satyrn-attempt-[^/\n]+/cwd$`),
      "the system prompt is satyrn's, exactly",
    );
    const user = messages.filter((m) => m.role === "user").map(text);
    assert.equal(user.length, 1);
    // The prompt file, exactly (Pi trims the trailing newline of its standard input).
    assert.equal(
      user[0],
      "Task:\nMake the greeting say hello satyrn.\n\nFiles you may edit (every other file is read-only):\n- src/greeting.ts\n\n" +
        "Writable patterns of the task contract (fnmatch; `*` matches across `/`):\n- src/*.ts\n\nRules:\n" +
        "- You may read any file in the repository with the read tool, and find files with ls, find and grep.\n" +
        "- To change a file use the edit tool; to create a file, or rewrite a whole file you have read, use write; " +
        "to remove a file you have read, use delete. There is no other way to write.\n" +
        "- You may create, change and delete only files whose path matches a writable pattern below; every other path is read-only, " +
        "and private files (secrets) are never shown.\n" +
        "- Read a file before editing it. An edit names exact text of the file: it replaces it, or inserts after it; " +
        "when the text occurs more than once, say which occurrence. All edits of one call apply together or not at all.\n" +
        "- A refused edit changes nothing and says why, with line numbers; fix the edit (or read the file again) and retry.\n" +
        "- Stop when the task is done.",
    );
    const everything = JSON.stringify(model.requests);
    for (const marker of ["HOSTILE", "repo-skill", "agents-skill"]) {
      assert.ok(!everything.includes(marker), `${marker} reached the model`);
    }
    assert.deepEqual([...offeredTools(model.requests[0]).keys()].sort(), [...SATYRN_TOOLS].sort());
    // The caller's checkout is untouched, and nothing was written beside the hostile files.
    assert.equal(git(repo, ["status", "--porcelain=v1", "--untracked-files=all"]), "");
    assert.equal(readFileSync(join(repo, "README.md"), "utf8"), "hello world\n");
  } finally {
    await model.close();
  }
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * A real-size repository: 20 000 tracked files in 100 directories, `writable_paths: ["*"]`.
 * The attempt starts (no limit from the number of writable files), the prompt stays small
 * and says how many files there are, the real Pi edits one deep file, and deliver makes a
 * candidate with exactly that change.
 */
test("deliver + attempt + real Pi on 20 000 writable files and a 100 KiB task: the prompt stays small, one deep edit lands", async () => {
  const base = tempDir();
  const repo = join(base, "repo");
  const deep = "d42/sub/deeper/f19999.ts";
  for (let d = 0; d < 100; d++) mkdirSync(join(repo, `d${d}`), { recursive: true });
  for (let i = 0; i < 19_999; i++) writeFileSync(join(repo, `d${i % 100}`, `f${String(i).padStart(5, "0")}.ts`), `export const v${i} = ${i};\n`);
  mkdirSync(join(repo, "d42", "sub", "deeper"), { recursive: true });
  writeFileSync(join(repo, deep), "export const deep = \"before\";\n");
  git(repo, ["init", "-q", "-b", "main"]);
  git(repo, ["add", "-A"]);
  git(repo, ["commit", "-q", "-m", "20000 files"]);
  const contract = join(base, "contract.yaml");
  // The task at its documented limit: exactly 100 KiB (docs/attempt.md).
  const lead = "Make the deep constant say after.";
  const task = lead + " " + "x".repeat(100 * 1024 - lead.length - 1);
  writeFileSync(contract, `id: big-repo\ntask: ${task}\nwritable_paths: ['*']\n`);
  const model = await startScriptedModel([
    { toolCalls: [{ name: "read", arguments: { path: deep } }] },
    { toolCalls: [{ name: "edit", arguments: { path: deep, edits: [{ oldText: "before", newText: "after" }] } }] },
    { text: "Done." },
  ]);
  try {
    const head = git(repo, ["rev-parse", "HEAD"]).trim();
    const host = hostBin();
    const result = await run(
      host,
      ["deliver", "--repo", repo, "--timeout", "300", contract, "--", host, "attempt", "--model", MODEL, contract],
      repo,
      attemptEnv(writeAgentDir(join(base, "agent"), model.baseUrl)),
    );
    const receipt = JSON.parse(result.stdout.toString("utf8")) as Record<string, unknown>;
    assert.equal(receipt.code, "OK", result.stderr);
    assert.deepEqual(receipt.paths, [deep]);
    const candidate = String(receipt.candidate_commit);
    assert.equal(git(repo, ["diff", "--name-only", head, candidate]).trim(), deep);
    assert.equal(git(repo, ["show", `${candidate}:${deep}`]), "export const deep = \"after\";\n");
    assert.equal(model.requests.length, 3);
    const first = model.requests[0].messages as Array<{ role: string; content: unknown }>;
    const user = JSON.stringify(first.filter((m) => m.role === "user"));
    assert.match(user, /and 19800 more: 20000 files in all/);
    assert.ok(user.includes(task), "the whole 100 KiB task reached the model");
    assert.ok(user.length - task.length < 16 * 1024, `the prompt beyond the task is ${user.length - task.length} bytes`);
    assert.match(toolResults(model.requests[2]).join("\n"), /Edited d42\/sub\/deeper\/f19999\.ts/);
  } finally {
    await model.close();
  }
});

test("pi install loads the package; an ordinary session keeps Pi's built-in edit", async () => {
  const { base, repo } = repository();
  const agent = writeAgentDir(join(base, "agent"), "http://127.0.0.1:9/v1");
  const env = { ...process.env, PI_CODING_AGENT_DIR: agent, PI_OFFLINE: "1" };
  for (const key of ["SATYRN_MUTATION_CONTEXT_FILE", "SATYRN_MUTATION_CONTEXT", "SATYRN_HOST_BIN", "SATYRN_MODEL"]) delete env[key];
  const installed = await run(PI, ["install", join(ROOT, "pi")], repo, env);
  assert.equal(installed.code, 0, installed.stderr);
  const model = await startScriptedModel([
    { toolCalls: [{ name: "edit", arguments: { path: "README.md", edits: [{ oldText: "hello world", newText: "hello built-in" }] } }] },
    { text: "Done." },
  ]);
  try {
    writeAgentDir(agent, model.baseUrl);
    const result = await run(PI, ["--print", "--mode", "json", "--no-session", "--model", MODEL, "Edit the readme."], repo, env);
    assert.equal(result.code, 0, result.stderr);
    const edit = offeredTools(model.requests[0]).get("edit") ?? "";
    assert.ok(edit !== "" && !/declared writable by the task contract/.test(edit), `built-in edit expected, got: ${edit}`);
    assert.equal(readFileSync(join(repo, "README.md"), "utf8"), "hello built-in\n");
  } finally {
    await model.close();
  }
});

test("/implement in a real Pi session (RPC mode) delivers a candidate through the installed package", async () => {
  const { base, repo, contract } = repository();
  const agent = writeAgentDir(join(base, "agent"), "http://127.0.0.1:9/v1");
  const env: NodeJS.ProcessEnv = { ...process.env, PI_CODING_AGENT_DIR: agent, PI_OFFLINE: "1" };
  delete env.SATYRN_MUTATION_CONTEXT_FILE;
  delete env.SATYRN_MUTATION_CONTEXT;
  const installed = await run(PI, ["install", join(ROOT, "pi")], repo, env);
  assert.equal(installed.code, 0, installed.stderr);
  const model = await startScriptedModel(SCRIPT);
  try {
    writeAgentDir(agent, model.baseUrl);
    const pi = spawn(PI, ["--mode", "rpc", "--no-session", "--model", MODEL], {
      cwd: repo,
      env: { ...env, SATYRN_MODEL: MODEL, SATYRN_HOST_BIN: hostBin(), SATYRN_PI_BIN: PI },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const events: Array<Record<string, unknown>> = [];
    let buffer = "";
    const waiters: Array<() => void> = [];
    pi.stdout.on("data", (chunk: Buffer) => {
      buffer += chunk.toString("utf8");
      let nl: number;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        try {
          events.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          // not an event
        }
        for (const w of waiters.splice(0)) w();
      }
    });
    const waitFor = async (pred: (e: Record<string, unknown>) => boolean, ms: number) => {
      const deadline = Date.now() + ms;
      for (;;) {
        const found = events.find(pred);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`timed out; events: ${JSON.stringify(events).slice(0, 2000)}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 200);
        });
      }
    };
    try {
      pi.stdin.write(`${JSON.stringify({ id: "c1", type: "get_commands" })}\n`);
      const commands = await waitFor((e) => e.type === "response" && e.command === "get_commands", 30_000);
      const names = ((commands.data as { commands: Array<{ name: string }> }).commands ?? []).map((c) => c.name);
      assert.ok(names.includes("implement"), `commands: ${names}`);
      pi.stdin.write(`${JSON.stringify({ id: "p1", type: "prompt", message: `/implement ${contract}` })}\n`);
      const notify = await waitFor((e) => e.type === "extension_ui_request" && e.method === "notify", 120_000);
      assert.match(String(notify.message), /^satyrn: candidate refs\/satyrn\/candidates\/e2e-greeting\/head at [0-9a-f]{40}$/);
    } finally {
      pi.stdin.end();
      pi.kill("SIGTERM");
    }
    const candidate = git(repo, ["rev-parse", "refs/satyrn/candidates/e2e-greeting/head"]).trim();
    assert.equal(git(repo, ["show", `${candidate}:src/greeting.ts`]), GREETING.replace("hello world", "hello satyrn"));
    assert.equal(git(repo, ["status", "--porcelain=v1", "--untracked-files=all"]), "");
    assertScriptedConversation(model.requests);
  } finally {
    await model.close();
  }
});

test("real Pi: an ambiguous edit is refused with the match list, the retry with occurrence lands; reads stay inside", async () => {
  const { base, repo, contract } = repository();
  writeFileSync(join(repo, "src", "twice.ts"), "let a = 1;\nlet b = 1;\n");
  git(repo, ["add", "-A"]);
  git(repo, ["commit", "-q", "-m", "twice"]);
  const secret = join(base, "secret.txt");
  writeFileSync(secret, "TOP SECRET\n");
  symlinkSync(secret, join(repo, "leak.txt"));
  const model = await startScriptedModel([
    { toolCalls: [{ name: "read", arguments: { path: secret } }] },
    { toolCalls: [{ name: "read", arguments: { path: "../secret.txt" } }] },
    { toolCalls: [{ name: "read", arguments: { path: "leak.txt" } }] },
    { toolCalls: [{ name: "read", arguments: { path: "src/twice.ts" } }] },
    { toolCalls: [{ name: "edit", arguments: { path: "src/twice.ts", edits: [{ oldText: " = 1;", newText: " = 2;" }] } }] },
    { toolCalls: [{ name: "edit", arguments: { path: "src/twice.ts", edits: [{ oldText: " = 1;", newText: " = 2;", occurrence: 2 }] } }] },
    { text: "Done." },
  ]);
  try {
    const result = await run(hostBin(), ["attempt", "--model", MODEL, contract], repo, attemptEnv(writeAgentDir(join(base, "agent"), model.baseUrl)));
    assert.equal(result.code, 0, result.stderr);
    assert.equal(model.requests.length, 7);
    const seen = model.requests.map((r) => toolResults(r).at(-1) ?? "");
    for (const i of [1, 2, 3]) assert.doesNotMatch(seen[i], /TOP SECRET/, `request ${i} leaked the secret`);
    assert.match(seen[1], /INVALID_REQUEST/);
    assert.match(seen[2], /INVALID_REQUEST/);
    assert.match(seen[3], /READ_UNAVAILABLE: .*symbolic link/);
    assert.equal(seen[4], "let a = 1;\nlet b = 1;\n");
    assert.match(seen[5], /ANCHOR_AMBIGUOUS/);
    assert.match(seen[5], /occurrence 1: line 1: let a = 1;/);
    assert.match(seen[5], /occurrence 2: line 2: let b = 1;/);
    assert.match(seen[6], /Edited src\/twice\.ts/);
    assert.equal(readFileSync(join(repo, "src", "twice.ts"), "utf8"), "let a = 1;\nlet b = 2;\n");
  } finally {
    await model.close();
  }
});

/**
 * Pi as `satyrn-host attempt` starts it (crates/attempt/src/pi.rs), with the given extensions;
 * the prompt is an argument here rather than standard input.
 */
function attemptPiArgs(extensions: string[]): string[] {
  return [
    "--print", "--mode", "json", "--no-session", "--model", MODEL,
    "--system-prompt", readFileSync(join(ROOT, "crates", "attempt", "src", "system_prompt.md"), "utf8"), "--no-extensions",
    ...extensions.flatMap((e) => ["--extension", join(ROOT, "pi", e)]),
    "--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files", "--tools", SATYRN_TOOLS.join(","),
    "Task: read the readme.",
  ];
}

/**
 * Fail closed: inside an attempt, Pi's `--tools` allow-list also enables Pi's own unconfined
 * `read` and `write`. When satyrn's tools are not registered, engine.ts must block every call,
 * so the file's content never reaches the model and nothing is written. (The sibling — both extensions, the read
 * succeeds — is every attempt above; the previous test asserts satyrn's read returns src/twice.ts.)
 */
for (const [label, extensions, context] of [
  ["engine.ts without mutator.ts, valid context", ["engine.ts"], "valid"],
  ["both extensions, malformed context", ["engine.ts", "mutator.ts"], "{\"version\":1}"],
] as const) {
  test(`real Pi, ${label}: every tool call is blocked, Pi's built-in read never runs`, async () => {
    const { base, repo } = repository();
    writeFileSync(join(repo, "README.md"), "CONTENT THAT MUST NOT LEAK\n");
    const model = await startScriptedModel([
      { toolCalls: [{ name: "read", arguments: { path: "README.md" } }, { name: "write", arguments: { path: "pwned.txt", content: "x" } }] },
      { text: "Done." },
    ]);
    try {
      const value =
        context === "valid"
          ? JSON.stringify({ version: 1, repo, contract: join(base, "contract.yaml"), revisions: { "src/greeting.ts": "a".repeat(64) } })
          : context;
      const contextFile = join(base, "context.json");
      writeFileSync(contextFile, value);
      const env = attemptEnv(writeAgentDir(join(base, "agent"), model.baseUrl), {
        SATYRN_MUTATION_CONTEXT_FILE: contextFile,
        SATYRN_HOST_BIN: hostBin(),
      });
      const result = await run(PI, attemptPiArgs(extensions), repo, env);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(model.requests.length, 2);
      const offered = offeredTools(model.requests[0]);
      assert.ok(offered.has("read") && offered.has("write"), "Pi offers its built-ins: the guard is what stands in the way");
      const seen = toolResults(model.requests[1]);
      assert.equal(seen.length, 2);
      for (const text of seen) assert.match(text, /Blocked by satyrn: this attempt's confined tools are not registered/);
      assert.equal(existsSync(join(repo, "pwned.txt")), false, "Pi's built-in write ran");
      assert.doesNotMatch(seen.join("\n"), /MUST NOT LEAK/);
      assert.doesNotMatch(result.stdout.toString("utf8"), /MUST NOT LEAK/);
    } finally {
      await model.close();
    }
  });
}

test("real Pi: an extension that fails to load stops Pi before any model call (the fail-closed assumption)", async () => {
  const { base, repo } = repository();
  const broken = join(base, "broken.ts");
  writeFileSync(broken, 'import missing from "./no-such-module.ts";\nexport default function (pi: unknown) { missing(pi); }\n');
  const model = await startScriptedModel([{ text: "should never be asked" }]);
  try {
    const agent = writeAgentDir(join(base, "agent"), model.baseUrl);
    const args = ["--print", "--mode", "json", "--no-session", "--model", MODEL, "--no-extensions"];
    const tools = ["--tools", "read,edit", "Read README.md."];
    const broke = await run(PI, [...args, "--extension", broken, ...tools], repo, attemptEnv(agent));
    assert.notEqual(broke.code, 0);
    assert.match(broke.stderr, /Failed to load extension/);
    assert.equal(model.requests.length, 0, "the model was asked despite a failed extension");
    // Sibling: without the broken extension the same Pi run reaches the model.
    const fine = await run(PI, [...args, ...tools], repo, attemptEnv(agent));
    assert.equal(fine.code, 0, fine.stderr);
    assert.equal(model.requests.length, 1);
  } finally {
    await model.close();
  }
});
