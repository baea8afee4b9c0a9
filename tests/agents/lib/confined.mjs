/**
 * The confined story: an agent CLI under `satyrn-host confine --agent NAME` with every
 * built-in tool left on. The scripted model makes it try, in order, its own write/edit/patch
 * tool on a declared file, then its shell with `sed -i`, `echo >>` of an undeclared file,
 * `rm`, `git commit -am`, `git stash`, `cat .env` and a background process; then satyrn's
 * `read` and `edit`; then the shell runs the repository's test command, which writes only
 * under the contract's scratch path `target/`.
 *
 * The kernel must refuse every built-in and shell write (the tool results the model
 * received show it), leave every file as it was (bytes, mode, inode), never let `.env`'s
 * content reach the model, and let satyrn's edit and the test command through.
 */

import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { bin, clientEnv, git, hostBin, makeFixture, run, snapshot } from "./harness.mjs";
import { toolResultsOf } from "./scripted-model.mjs";

/** `.env`'s content: it must never reach the model. */
export const SECRET = "SATYRN_TEST_SECRET=4b1d-never-shown-to-a-model";
/** The first line of the note `confine --agent` writes (crates/confine/src/agent/note.rs). */
export const NOTE_HEADING = "# satyrn: this session is confined";
/** What the repository's test command prints when it passes. */
export const TESTS_PASSED = "TESTS PASSED: beta was edited";

export const CONFINED_CONTRACT = [
  "id: agents-confined",
  "task: |",
  "  Change beta in src/a.txt, then run sh test.sh.",
  "writable_paths:",
  "  - 'src/*.txt'",
  "private_paths:",
  "  - '.env'",
  "scratch_paths:",
  "  - target",
  "",
].join("\n");

/** The repository's test command: it checks the edit and writes only under `target/`. */
const TEST_SH = [
  "set -e",
  "mkdir -p target",
  "grep -q 'BETA, edited through satyrn' src/a.txt",
  "date > target/test-ran",
  `echo '${TESTS_PASSED}'`,
  "",
].join("\n");

/**
 * The basic fixture plus `.gitignore` (`.env`, `/target/`), `test.sh`, an untracked `.env`
 * holding [`SECRET`], and the confined contract.
 */
export function makeConfinedFixture() {
  const fixture = makeFixture();
  const { repo } = fixture;
  writeFileSync(join(repo, ".gitignore"), ".env\n/target/\n");
  writeFileSync(join(repo, "test.sh"), TEST_SH);
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "test command");
  writeFileSync(join(repo, ".env"), `${SECRET}\n`);
  writeFileSync(fixture.contract, CONFINED_CONTRACT);
  return fixture;
}

/** Everything the story must leave as it was, by path. */
export const GUARDED = ["README.md", "src/a.txt", ".env", "test.sh", ".gitignore", ".git/HEAD", ".git/index", ".git/config"];

/** git with `GIT_OPTIONAL_LOCKS=0`, so that `status` never rewrites the index it checks. */
function gitRead(repo, ...args) {
  const r = spawnSync("git", args, { cwd: repo, encoding: "utf8", timeout: 30_000, env: { ...process.env, GIT_OPTIONAL_LOCKS: "0" } });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout;
}

/** Snapshots of [`GUARDED`], the refs (stash included) and the status. */
export function repoState(repo) {
  return {
    files: Object.fromEntries(GUARDED.map((p) => [p, snapshot(join(repo, p))])),
    refs: gitRead(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
    stash: gitRead(repo, "stash", "list"),
    status: gitRead(repo, "status", "--porcelain", "--untracked-files=all"),
  };
}

/** A TOML basic string. */
const toml = (s) => JSON.stringify(s);

/**
 * How each agent is driven: its shell and built-in write calls, its names for satyrn's
 * tools, its command line, the user-level configuration a user would have (the model
 * endpoint), and how a model finds satyrn's `edit` in what the agent told it.
 */
export const AGENTS = {
  claude: {
    shell: (command) => ({ name: "Bash", arguments: { command, description: "run a command" } }),
    // Claude Code's file tools take absolute paths: `repo`, else the working directory its
    // system prompt names (a `deliver` worktree's path is not known in advance).
    builtins: (repo) => [
      {
        what: "Write",
        tool: (body) => ({ name: "Write", arguments: { file_path: join(repo ?? claudeCwd(body), "src", "a.txt"), content: "written by a built-in\n" } }),
        refusal: /EACCES: permission denied, open '\/.*\/src\/a\.txt/,
      },
      {
        what: "Edit",
        tool: (body) => ({ name: "Edit", arguments: { file_path: join(repo ?? claudeCwd(body), "src", "a.txt"), old_string: "beta", new_string: "BUILTIN" } }),
        refusal: /EACCES: permission denied, open '\/.*\/src\/a\.txt/,
      },
    ],
    mcp: (name) => ({ name: `mcp__satyrn__${name}` }),
    argv: (prompt) => [bin("claude"), "-p", prompt],
    env: (modelUrl) => ({
      ANTHROPIC_BASE_URL: modelUrl,
      ANTHROPIC_API_KEY: "scripted-key",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    }),
    /** Claude Code's user configuration here is its environment: nothing to write. */
    userConfig: () => [],
    /** The note names satyrn's edit as `mcp__satyrn__edit`. */
    findTool: (text, name) => {
      const m = text.match(new RegExp("`(mcp__[a-z]+__" + name + ")`"));
      return m ? { name: m[1] } : null;
    },
  },
  codex: {
    shell: (cmd) => ({ name: "exec_command", arguments: { cmd } }),
    // Codex's apply_patch reports the kernel's refusal without the errno.
    builtins: () => [
      {
        what: "apply_patch",
        tool: {
          name: "apply_patch",
          custom: true,
          input: "*** Begin Patch\n*** Update File: src/a.txt\n@@\n alpha\n-beta\n+BUILTIN\n gamma\n*** End Patch",
        },
        refusal: /Failed to write file .*src\/a\.txt/,
      },
    ],
    mcp: (name) => ({ namespace: "mcp__satyrn", name }),
    argv: (prompt) => [bin("codex"), "exec", prompt],
    env: () => ({}),
    /**
     * The user's `~/.codex/config.toml`: the scripted provider and a model whose metadata
     * Codex knows (so it offers its freeform `apply_patch`), and another MCP server that
     * `--agent codex` must not start.
     */
    userConfig: (home, modelUrl) => {
      const dir = join(home, ".codex");
      mkdirSync(dir, { recursive: true });
      const path = join(dir, "config.toml");
      writeFileSync(
        path,
        [
          'model = "gpt-5.5"',
          'model_provider = "scripted"',
          "",
          "[model_providers.scripted]",
          'name = "scripted"',
          `base_url = ${toml(`${modelUrl}/v1`)}`,
          'wire_api = "responses"',
          "",
          "[mcp_servers.other]",
          'command = "/nonexistent/other-mcp-server"',
          "",
        ].join("\n"),
      );
      return [path];
    },
    /** The note names satyrn's edit as `edit` (namespace `mcp__satyrn`). */
    findTool: (text, name) => {
      const m = text.match(new RegExp("`" + name + "` \\(namespace `(mcp__[a-z]+)`\\)"));
      return m ? { namespace: m[1], name } : null;
    },
  },
};

/** The working directory Claude Code's system prompt names. */
function claudeCwd(body) {
  const m = JSON.stringify(body ?? "").match(/[Ww]orking directory: (\/[^\s\\"]+)/);
  return m ? m[1] : "/claude-named-no-working-directory";
}

/** A step for a tool call given as a call or as a function of the request. */
export const stepOf = (tool) => (typeof tool === "function" ? { react: (body) => ({ tool: tool(body) }) } : { tool });

/**
 * The shell steps, each a write the kernel must refuse (and how the refusal reads); `.env`
 * is `secret`'s path (the caller's, under `deliver`).
 */
export const shellWrites = (secret = ".env") => [
  { cmd: "sed -i 's/beta/SED/' src/a.txt", refusal: /Permission denied/ },
  { cmd: "echo pwned >> undeclared.txt", refusal: /Permission denied/ },
  { cmd: "rm README.md", refusal: /Permission denied|Operation not permitted/ },
  { cmd: "git commit -am 'taken over'", refusal: /index\.lock'?: Permission denied/ },
  { cmd: "git stash", refusal: /could not write index|Permission denied/ },
  { cmd: `cat ${secret}`, refusal: /Permission denied/ },
];

/** A process the shell leaves running: `confine` must stop it. */
export const STRAY = "nohup sleep 313 >/dev/null 2>&1 &";

/**
 * The script of the whole story for `agent`, working in `repo` (`null`: wherever the agent
 * says it works), reading the private file at `secret`.
 * @returns {{ script: import("./scripted-model.mjs").Step[], expected: Array<{ what: string, refusal?: RegExp }> }}
 */
export function confinedScript(agent, repo, secret = ".env") {
  const a = AGENTS[agent];
  const expected = [];
  const script = [];
  for (const { what, tool, refusal } of a.builtins(repo)) {
    script.push(stepOf(tool));
    expected.push({ what: `built-in ${what}`, refusal });
  }
  for (const { cmd, refusal } of shellWrites(secret)) {
    script.push({ tool: a.shell(cmd) });
    expected.push({ what: `shell: ${cmd}`, refusal });
  }
  script.push({ tool: a.shell(STRAY) });
  expected.push({ what: "shell: a background process" });
  script.push({ tool: { ...a.mcp("read"), arguments: { path: "src/a.txt" } } });
  expected.push({ what: "satyrn read" });
  script.push({
    tool: {
      ...a.mcp("edit"),
      arguments: { path: "src/a.txt", edits: [{ op: "replace", old_text: "beta", new_text: "BETA, edited through satyrn" }] },
    },
  });
  expected.push({ what: "satyrn edit" });
  script.push({ tool: a.shell("sh test.sh") });
  expected.push({ what: "shell: the test command" });
  return { script, expected };
}

/** The logged request that carried the most tool results. */
export function lastModelRequest(requests) {
  const withTools = requests.filter((r) => r.kind === "responses" || r.kind === "messages");
  assert.ok(withTools.length > 0, "the agent sent no model request");
  return withTools.reduce((a, b) => (b.toolResults > a.toolResults ? b : a));
}

/**
 * The tool results the model received, checked step by step; returns the number of
 * refused writes.
 */
export function assertStory(requests, expected) {
  const results = toolResultsOf(lastModelRequest(requests));
  assert.equal(results.length, expected.length, `tool results: ${JSON.stringify(results, null, 1)}`);
  let refused = 0;
  expected.forEach((step, i) => {
    const text = results[i].text;
    if (step.refusal) {
      assert.match(text, step.refusal, `${step.what} was not refused: ${text}`);
      refused += 1;
    }
  });
  const byWhat = Object.fromEntries(expected.map((s, i) => [s.what, results[i].text]));
  assert.match(byWhat["satyrn read"], /"sha256":"[0-9a-f]{64}"/);
  assert.doesNotMatch(byWhat["satyrn edit"], /^[A-Z_]+: /, `satyrn's edit was refused: ${byWhat["satyrn edit"]}`);
  assert.ok(byWhat["shell: the test command"].includes(TESTS_PASSED), `the test command did not pass: ${byWhat["shell: the test command"]}`);
  assert.ok(!JSON.stringify(requests).includes(SECRET), ".env's content reached the model");
  return refused;
}

/** The agent's first request with tools: the note reached the model in its context. */
export function assertToldTheModel(requests) {
  const first = requests.find((r) => (r.kind === "responses" || r.kind === "messages") && r.body?.tools?.length);
  assert.ok(first, "no model request offered tools");
  assert.ok(JSON.stringify(first.body).includes(NOTE_HEADING), "the note did not reach the model");
}

/** Processes whose command line contains `needle` (the stray's `sleep 313`). */
export function processesWith(needle) {
  const found = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
      if (cmdline.includes(needle)) found.push(`${pid}: ${cmdline}`);
    } catch {
      // gone
    }
  }
  return found;
}

/**
 * Runs `satyrn-host confine --agent AGENT` with the agent's command in `repo`, the user's
 * environment pointing at the scripted model.
 */
export function runConfined(agent, { repo, contract, home, modelUrl, prompt, extra = [] }) {
  const a = AGENTS[agent];
  return run(hostBin(), ["confine", "--agent", agent, ...extra, "--repo", repo, contract, "--", ...a.argv(prompt)], {
    cwd: repo,
    env: clientEnv(home, a.env(modelUrl)),
    timeoutMs: 120_000,
  });
}

/** The user's files before the run, to prove none of them was written. */
export function userFiles(paths) {
  return paths.map((p) => [p, snapshot(p)]);
}
