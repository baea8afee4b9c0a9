/**
 * The real Pi under `satyrn-host confine --agent pi`, its `bash` left on, driven by the
 * scripted model: Pi's file tools are satyrn's (a write of a file it has not read is refused
 * by satyrn's gate); every shell write — `sed -i`, `echo >>` of an undeclared file, `rm`,
 * `git commit -am`, `git stash` — and `cat .env` are refused by the kernel; satyrn's `read`
 * and `edit` land; the repository's test command runs and writes only its scratch path.
 * Alone and inside `satyrn-host deliver`.
 */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { hostBin, ROOT, run } from "./helpers.ts";
import { MODEL, offeredTools, startScriptedModel, toolResults, writeAgentDir, type Step } from "./scripted-model.ts";

const PI = join(ROOT, "pi", "node_modules", ".bin", "pi");
const SECRET = "SATYRN_PI_SECRET=never-shown-to-a-model";
const NOTE_HEADING = "# satyrn: this session is confined";
const PASSED = "TESTS PASSED: beta was edited";
const BEFORE = "alpha\nbeta\ngamma\n";
const AFTER = "alpha\nBETA, edited through satyrn\ngamma\n";

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function git(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.invalid", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.invalid", ...env },
  });
}

interface Fixture {
  base: string;
  repo: string;
  contract: string;
  home: string;
}

/** A repository with a declared file, a test command, an ignored scratch path and a private `.env`. */
function fixture(): Fixture {
  const base = mkdtempSync(join(tmpdir(), "satyrn-pi-confined-"));
  dirs.push(base);
  const repo = join(base, "repo");
  mkdirSync(join(repo, "src"), { recursive: true });
  writeFileSync(join(repo, "src", "a.txt"), BEFORE);
  writeFileSync(join(repo, "README.md"), "# demo\n");
  writeFileSync(join(repo, ".gitignore"), ".env\n/target/\n");
  writeFileSync(join(repo, "test.sh"), `set -e\nmkdir -p target\ngrep -q 'BETA, edited through satyrn' src/a.txt\ndate > target/test-ran\necho '${PASSED}'\n`);
  git(repo, ["init", "-q", "-b", "main"]);
  git(repo, ["add", "-A"]);
  git(repo, ["commit", "-q", "-m", "init"]);
  writeFileSync(join(repo, ".env"), `${SECRET}\n`);
  const contract = join(base, "contract.yaml");
  writeFileSync(
    contract,
    "id: pi-confined\ntask: Change beta in src/a.txt, then run sh test.sh.\nwritable_paths:\n  - 'src/*.txt'\nprivate_paths:\n  - '.env'\nscratch_paths:\n  - target\n",
  );
  const home = join(base, "home");
  mkdirSync(home);
  return { base, repo, contract, home };
}

interface Expected {
  what: string;
  refusal?: RegExp;
}

/** The story; `secret` is the `.env` the shell tries to read (the caller's, under deliver). */
function story(secret: string): { script: Step[]; expected: Expected[] } {
  const bash = (command: string): Step => ({ toolCalls: [{ name: "bash", arguments: { command } }] });
  const steps: Array<[Step, Expected]> = [
    [
      { toolCalls: [{ name: "write", arguments: { path: "src/a.txt", content: "written without reading\n" } }] },
      { what: "Pi's write (satyrn's) of a file not read", refusal: /^[A-Z_]+: / },
    ],
    [bash("sed -i 's/beta/SED/' src/a.txt"), { what: "sed -i", refusal: /Permission denied/ }],
    [bash("echo pwned >> undeclared.txt"), { what: "echo >>", refusal: /Permission denied/ }],
    [bash("rm README.md"), { what: "rm", refusal: /Permission denied|Operation not permitted/ }],
    [bash("git commit -am 'taken over'"), { what: "git commit -am", refusal: /index\.lock'?: Permission denied/ }],
    [bash("git stash"), { what: "git stash", refusal: /could not write index|Permission denied/ }],
    [bash(`cat ${secret}`), { what: "cat .env", refusal: /Permission denied/ }],
    [bash("nohup sleep 317 >/dev/null 2>&1 &"), { what: "a background process" }],
    [{ toolCalls: [{ name: "read", arguments: { path: "src/a.txt" } }] }, { what: "read" }],
    [
      { toolCalls: [{ name: "edit", arguments: { path: "src/a.txt", edits: [{ oldText: "beta", newText: "BETA, edited through satyrn" }] } }] },
      { what: "edit" },
    ],
    [bash("sh test.sh"), { what: "the test command" }],
    [{ text: "Done." }, { what: "done" }],
  ];
  return { script: steps.map(([s]) => s), expected: steps.map(([, e]) => e).filter((e) => e.what !== "done") };
}


/** The user's environment: a home whose Pi agent directory knows the scripted model. */
function userEnv(home: string, baseUrl: string): NodeJS.ProcessEnv {
  writeAgentDir(join(home, ".pi", "agent"), baseUrl);
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, PI_OFFLINE: "1" };
  for (const key of Object.keys(env)) if (key.startsWith("GIT_") || key.startsWith("PI_CODING") || key.startsWith("SATYRN_")) delete env[key];
  if (process.env.SATYRN_TEST_HOST_BIN) env.SATYRN_TEST_HOST_BIN = process.env.SATYRN_TEST_HOST_BIN;
  return env;
}

function piArgs(): string[] {
  return [PI, "--print", "--mode", "json", "--no-session", "--model", MODEL, "Change beta in src/a.txt, then run sh test.sh."];
}

function snapshot(path: string): { bytes: string; mode: number; ino: number } | null {
  if (!existsSync(path)) return null;
  const st = lstatSync(path);
  return { bytes: readFileSync(path).toString("base64"), mode: st.mode, ino: st.ino };
}

const GUARDED = ["README.md", ".env", "test.sh", ".gitignore", ".git/HEAD", ".git/index", ".git/config"];

function state(repo: string) {
  const files = Object.fromEntries(GUARDED.map((p) => [p, snapshot(join(repo, p))]));
  const quiet = { GIT_OPTIONAL_LOCKS: "0" };
  return {
    files,
    refs: git(repo, ["for-each-ref", "--format=%(refname) %(objectname)"], quiet)
      .split("\n")
      .filter((l) => l && !l.startsWith("refs/satyrn/"))
      .join("\n"),
    stash: git(repo, ["stash", "list"], quiet),
  };
}

function sleepers(): string[] {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .flatMap((pid) => {
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
        return cmdline.includes("sleep 317") ? [`${pid}: ${cmdline}`] : [];
      } catch {
        return [];
      }
    });
}

/** What reached the model proves every step; returns the number of refusals. */
function assertStory(requests: Array<Record<string, unknown>>, expected: Expected[]): number {
  const last = requests[requests.length - 1];
  const results = toolResults(last);
  assert.equal(results.length, expected.length, JSON.stringify(results, null, 1));
  let refused = 0;
  expected.forEach((step, i) => {
    if (step.refusal) {
      assert.match(results[i], step.refusal, `${step.what} was not refused: ${results[i]}`);
      refused += 1;
    }
  });
  const at = (what: string) => results[expected.findIndex((e) => e.what === what)];
  assert.doesNotMatch(at("edit"), /^[A-Z_]+: /, `satyrn's edit was refused: ${at("edit")}`);
  assert.ok(at("the test command").includes(PASSED), at("the test command"));
  assert.ok(!JSON.stringify(requests).includes(SECRET), ".env's content reached the model");
  const tools = offeredTools(requests[0]);
  for (const name of ["bash", "read", "edit", "write", "delete"]) assert.ok(tools.has(name), `${name} not offered: ${[...tools.keys()]}`);
  assert.match(tools.get("edit") ?? "", /declared writable by the task contract/, "the edit offered is satyrn's");
  assert.ok(JSON.stringify(requests[0]).includes(NOTE_HEADING), "the note did not reach the model");
  return refused;
}

test("confine --agent pi: Pi's bash is held by the kernel, its file tools are satyrn's, the tests run", async (t) => {
  assert.ok(existsSync(PI), `pi is not installed at ${PI}: run npm ci in pi/`);
  const { repo, contract, home } = fixture();
  const { script, expected } = story(".env");
  const model = await startScriptedModel(script);
  try {
    const before = state(repo);
    const env = userEnv(home, model.baseUrl);
    const userAgent = snapshot(join(home, ".pi", "agent", "models.json"));
    const result = await run(hostBin(), ["confine", "--agent", "pi", "--repo", repo, contract, "--", ...piArgs()], repo, env);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /--agent pi: PI_CODING_AGENT_DIR=/);
    const refused = assertStory(model.requests, expected);
    t.diagnostic(`pi: ${refused} of ${expected.filter((e) => e.refusal).length} writes refused (1 by satyrn's gate, the rest by the kernel)`);
    assert.equal(readFileSync(join(repo, "src", "a.txt"), "utf8"), AFTER);
    assert.deepEqual(state(repo), before, "files, refs or stash changed");
    assert.equal(git(repo, ["status", "--porcelain", "--untracked-files=all"], { GIT_OPTIONAL_LOCKS: "0" }), " M src/a.txt\n");
    assert.ok(existsSync(join(repo, "target", "test-ran")));
    assert.ok(!existsSync(join(repo, "undeclared.txt")));
    assert.deepEqual(snapshot(join(home, ".pi", "agent", "models.json")), userAgent, "the user's agent directory was written");
    assert.deepEqual(readdirSync(join(home, ".pi", "agent")), ["models.json"], "nothing was added to the user's agent directory");
    assert.deepEqual(sleepers(), []);
  } finally {
    await model.close();
  }
});

test("deliver + confine --agent pi: the candidate is exactly satyrn's edit, the caller's repository unchanged", async (t) => {
  const { base, repo, contract, home } = fixture();
  const { script, expected } = story(join(repo, ".env"));
  const model = await startScriptedModel(script);
  try {
    const head = git(repo, ["rev-parse", "HEAD"]).trim();
    const before = state(repo);
    const host = hostBin();
    const result = await run(
      host,
      ["deliver", "--repo", repo, "--timeout", "120", contract, "--", host, "confine", "--agent", "pi", "--repo", ".", contract, "--", ...piArgs()],
      base,
      userEnv(home, model.baseUrl),
    );
    assert.equal(result.code, 0, result.stderr);
    const receipt = JSON.parse(result.stdout.toString()) as Record<string, unknown>;
    assert.equal(receipt.code, "OK", result.stderr);
    assert.deepEqual(receipt.paths, ["src/a.txt"]);
    const refused = assertStory(model.requests, expected);
    t.diagnostic(`deliver + pi: ${refused} of ${expected.filter((e) => e.refusal).length} writes refused`);
    const candidate = String(receipt.candidate_commit);
    assert.equal(git(repo, ["rev-parse", `${candidate}^`]).trim(), head);
    assert.equal(git(repo, ["diff-tree", "-r", "--no-renames", "--name-status", head, candidate]), "M\tsrc/a.txt\n");
    assert.equal(git(repo, ["show", `${candidate}:src/a.txt`]), AFTER);
    assert.deepEqual(state(repo), before, "the caller's files, refs or stash changed");
    assert.equal(readFileSync(join(repo, "src", "a.txt"), "utf8"), BEFORE);
    assert.equal(git(repo, ["status", "--porcelain", "--untracked-files=all"], { GIT_OPTIONAL_LOCKS: "0" }), "");
    assert.deepEqual(sleepers(), []);
  } finally {
    await model.close();
  }
});

test("confine --agent pi: a repository's own Pi extension never loads (.pi is unreadable, Pi names it); unconfined it does", async () => {
  const { repo, contract, home } = fixture();
  const model = await startScriptedModel([{ text: "Done." }, { text: "Done." }]);
  try {
    mkdirSync(join(repo, ".pi", "extensions"), { recursive: true });
    writeFileSync(
      join(repo, ".pi", "extensions", "evil.ts"),
      `export default function () { fetch(${JSON.stringify(`${model.baseUrl}/pi-extension-ran`)}).catch(() => {}); }\n`,
    );
    const env = userEnv(home, model.baseUrl);
    const confined = await run(hostBin(), ["confine", "--agent", "pi", "--repo", repo, contract, "--", ...piArgs()], repo, env);
    // Pi 0.73 stops at an extension it cannot read, naming it: fail closed, visibly.
    assert.match(confined.stderr, /Failed to load extension .*\.pi\/extensions\/evil\.ts.*EACCES/);
    assert.deepEqual(model.others.filter((u) => u.includes("pi-extension-ran")), [], "the repository's extension loaded under confine");
    // The sibling: Pi unconfined in the same repository loads it (so the probe works).
    const plain = await run(PI, piArgs().slice(1), repo, { ...env, PI_CODING_AGENT_DIR: join(home, ".pi", "agent") });
    assert.equal(plain.code, 0, plain.stderr);
    const deadline = Date.now() + 10_000;
    while (!model.others.some((u) => u.includes("pi-extension-ran")) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.ok(model.others.some((u) => u.includes("pi-extension-ran")), "unconfined, the extension did not load: the probe proves nothing");
  } finally {
    await model.close();
  }
});
