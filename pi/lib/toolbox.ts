/**
 * satyrn's `ls`, `find`, `grep`, `write`, `delete` and `apply_patch` for Pi: Pi's argument
 * shapes in (where Pi has the tool), one protocol request out (`list`, `search`, `write`,
 * `delete`, `apply_patch`) over the
 * editor's channel (lib/channel.ts), concise text back for the model, as the MCP server renders the same results
 * (crates/mcp/src/render.rs).
 *
 * - Arguments are validated strictly: an unknown field, a wrong type or a bad number is an
 *   `INVALID_REQUEST` tool error before anything is spawned.
 * - The revision map is the editor's (lib/editor.ts): `write` of an existing file and
 *   `delete` send the revision the session last saw, with how much of it was seen (`seen`:
 *   the host refuses a whole-file change of a revision seen in part), (or `null`, which the host refuses for
 *   an existing file); a `search` hit and a `write` record the file's revision, a `delete`
 *   forgets it.
 * - A refusal (`ok:false`) becomes a tool error naming the code and message.
 * - A transport failure of `write` or `delete` **poisons** the editor (the change may have
 *   been published), so every later edit, write and delete is refused without spawning;
 *   one of `ls`, `find` or `grep` is only a tool error (nothing can have been written).
 */

import { lstatSync } from "node:fs";
import { isAbsolute, join, relative } from "node:path";

import { EditRefused, type Editor } from "./editor.ts";
import type { MutationContext } from "./context.ts";
import { describe } from "./exchange.ts";

type Args = Record<string, unknown>;

/** A validated argument object: `keys` are the only fields allowed. */
function object(params: unknown, tool: string, keys: readonly string[]): Args {
  if (typeof params !== "object" || params === null || Array.isArray(params)) {
    throw new EditRefused("INVALID_REQUEST", `the ${tool} arguments must be an object {${keys.join(", ")}}`);
  }
  const p = params as Args;
  for (const key of Object.keys(p)) {
    if (!keys.includes(key)) throw new EditRefused("INVALID_REQUEST", `unknown field \`${key}\` (known: ${keys.join(", ")})`);
  }
  return p;
}

/** `p[key]` when it is a string (non-empty unless `allowEmpty`), undefined when absent or null. */
function optionalString(p: Args, key: string, allowEmpty = false): string | undefined {
  const v = p[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string" || (!allowEmpty && v === "")) {
    throw new EditRefused("INVALID_REQUEST", `\`${key}\` must be ${allowEmpty ? "a string" : "a non-empty string"}`);
  }
  return v;
}

function requiredString(p: Args, key: string, allowEmpty = false): string {
  const v = optionalString(p, key, allowEmpty);
  if (v === undefined) throw new EditRefused("INVALID_REQUEST", `\`${key}\` is required (a string)`);
  return v;
}

/** A whole number in `min..=max`, or undefined when absent or null. */
function optionalInteger(p: Args, key: string, min: number, max: number): number | undefined {
  const v = p[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    throw new EditRefused("INVALID_REQUEST", `\`${key}\` must be a whole number from ${min} to ${max}`);
  }
  return v;
}

function optionalBoolean(p: Args, key: string): boolean | undefined {
  const v = p[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw new EditRefused("INVALID_REQUEST", `\`${key}\` must be true or false`);
  return v;
}

/**
 * A Pi-style glob as satyrn's fnmatch pattern: satyrn's `*` already matches across `/`, so
 * `**` is `*` and a leading `**` + `/` is dropped (`**` + `/*.ts` finds root files too).
 */
export function fnmatchPattern(glob: string): string {
  return glob.replace(/^(\*\*\/)+/, "*").replace(/\*\*\/?/g, "*");
}

/** Sets `request[key] = value` unless value is undefined: absent optional fields are omitted. */
function put(request: Args, key: string, value: unknown): void {
  if (value !== undefined) request[key] = value;
}

const LS_KEYS = ["path", "limit", "cursor"] as const;
const FIND_KEYS = ["pattern", "path", "limit", "cursor"] as const;
const GREP_KEYS = ["pattern", "path", "glob", "ignoreCase", "literal", "context", "limit", "cursor"] as const;
const WRITE_KEYS = ["path", "content"] as const;
const DELETE_KEYS = ["path"] as const;
const PATCH_KEYS = ["patch"] as const;

/** The largest `limit` of `ls`/`find` (the host's page maximum). */
export const MAX_LIST_LIMIT = 1000;
/** The largest `limit` of `grep` (the host's `max_matches` maximum). */
export const MAX_GREP_LIMIT = 500;
/** The most context lines of `grep`. */
export const MAX_GREP_CONTEXT = 10;

export class Toolbox {
  constructor(
    private readonly context: MutationContext,
    private readonly editor: Editor,
  ) {}

  private base(operation: string): Args {
    return { version: 1, operation, repo: this.context.repo, contract: this.context.contract };
  }

  private path(p: Args, key = "path"): string | undefined {
    const v = optionalString(p, key);
    if (v === undefined) return undefined;
    // The root itself, however spelled, is the default: the field is omitted.
    if (isAbsolute(v) ? relative(this.context.repo, v) === "" : v === "." || v === "./") return undefined;
    return this.editor.worktreePath(v);
  }

  /** `ls {path?, limit?, cursor?}` → `list` of one directory. */
  lsRequest(params: unknown): Args {
    const p = object(params, "ls", LS_KEYS);
    const request = this.base("list");
    put(request, "path", this.path(p));
    put(request, "limit", optionalInteger(p, "limit", 1, MAX_LIST_LIMIT));
    put(request, "cursor", optionalString(p, "cursor"));
    return request;
  }

  /**
   * `find {pattern, path?, limit?, cursor?}` → a recursive `list` filtered by `pattern`,
   * taken relative to `path` (the pattern is matched against the path from the search
   * directory, as Pi's find does; see [`fnmatchPattern`]).
   */
  findRequest(params: unknown): Args {
    const p = object(params, "find", FIND_KEYS);
    const pattern = fnmatchPattern(requiredString(p, "pattern"));
    const dir = this.path(p);
    const request = this.base("list");
    put(request, "path", dir);
    request.pattern = dir === undefined || pattern.startsWith("*") ? pattern : `${dir}/${pattern}`;
    request.recursive = true;
    put(request, "limit", optionalInteger(p, "limit", 1, MAX_LIST_LIMIT));
    put(request, "cursor", optionalString(p, "cursor"));
    return request;
  }

  /** `grep {pattern, path?, glob?, ignoreCase?, literal?, context?, limit?, cursor?}` → `search`. */
  grepRequest(params: unknown): Args {
    const p = object(params, "grep", GREP_KEYS);
    const request = this.base("search");
    request.query = requiredString(p, "pattern");
    put(request, "path", this.path(p));
    // Pi's grep takes a regular expression unless `literal`.
    request.regex = optionalBoolean(p, "literal") !== true;
    put(request, "ignore_case", optionalBoolean(p, "ignoreCase"));
    const glob = optionalString(p, "glob");
    put(request, "glob", glob === undefined ? undefined : fnmatchPattern(glob));
    put(request, "context", optionalInteger(p, "context", 0, MAX_GREP_CONTEXT));
    put(request, "max_matches", optionalInteger(p, "limit", 1, MAX_GREP_LIMIT));
    put(request, "cursor", optionalString(p, "cursor"));
    return request;
  }

  /** `write {path, content}` → `write` with the revision last seen (null: create). */
  writeRequest(params: unknown): Args {
    const p = object(params, "write", WRITE_KEYS);
    const path = this.editor.worktreePath(requiredString(p, "path"));
    const request = this.base("write");
    request.path = path;
    // Deleted by someone else since it was seen: a write creates it again.
    if (this.editor.revision(path) !== undefined && !exists(this.context.repo, path)) this.editor.forget(path);
    request.expected_sha256 = this.editor.revision(path) ?? null;
    if (request.expected_sha256 !== null) request.seen = this.editor.seen(path);
    request.content = requiredString(p, "content", true);
    return request;
  }

  /** `delete {path}` → `delete` with the revision last seen (null: refused by the host). */
  deleteRequest(params: unknown): Args {
    const p = object(params, "delete", DELETE_KEYS);
    const path = this.editor.worktreePath(requiredString(p, "path"));
    const request = this.base("delete");
    request.path = path;
    request.expected_sha256 = this.editor.revision(path) ?? null;
    if (request.expected_sha256 !== null) request.seen = this.editor.seen(path);
    return request;
  }

  /**
   * `apply_patch {patch}` → `apply_patch` with `"paths": "agent"` (the host takes the
   * patch's paths as agents write them, by the rule its MCP server uses) and every revision
   * this session knows (the host uses those of the files the patch names), with the ones
   * seen only in part marked so (a `*** Delete File:` of one is `PARTLY_SEEN`).
   */
  patchRequest(params: unknown): Args {
    const p = object(params, "apply_patch", PATCH_KEYS);
    const request = this.base("apply_patch");
    request.paths = "agent";
    request.patch = requiredString(p, "patch");
    const expected: Record<string, string> = {};
    const seen: Record<string, string> = {};
    for (const [path, sha] of this.editor.revisions()) {
      expected[path] = sha;
      if (this.editor.seen(path) === "part") seen[path] = "part";
    }
    request.expected_sha256 = expected;
    request.seen = seen;
    return request;
  }

  /**
   * Applies a patch (several files, all together or not at all); records each changed
   * file's new revision and forgets each deleted one. Rejects only with `EditRefused`,
   * every problem of a refused patch in its text.
   */
  applyPatch(params: unknown): Promise<string> {
    return this.mutate("PATCH", () => this.patchRequest(params), (request, result) => {
      const changed = array(result.files);
      const bases = request.expected_sha256 as Record<string, string>;
      const partly = request.seen as Record<string, string>;
      const lines: string[] = [];
      for (const f of changed) {
        const { path, status, sha256, moved_from: from } = f;
        if (typeof path !== "string" || (from !== undefined && typeof from !== "string")) return undefined;
        if (status === "deleted") {
          this.editor.forget(path);
          lines.push(`deleted ${shown(path)}`);
        } else if ((status === "created" || status === "modified") && typeof sha256 === "string") {
          // A moved file is seen as its source was (the request's `seen`, taken before any
          // of these lines forgets the source).
          if (from !== undefined) this.editor.took(path, sha256, partly[from] !== "part");
          else if (status === "created") this.editor.wrote(path, sha256);
          else this.editor.edited(path, bases[path] ?? null, sha256);
          const moved = from === undefined ? "" : `, moved from ${shown(from)}`;
          lines.push(`${status} ${shown(path)} (sha256 ${sha256}${moved})`);
        } else {
          return undefined;
        }
      }
      if (lines.length === 0) return undefined;
      return `Applied the patch to ${lines.length} file${lines.length === 1 ? "" : "s"}:\n${lines.join("\n")}`;
    });
  }

  /** Lists one directory. Rejects only with `EditRefused`. */
  ls(params: unknown): Promise<string> {
    return this.query("LIST", () => this.lsRequest(params), renderList);
  }

  /** Finds files by pattern. Rejects only with `EditRefused`. */
  find(params: unknown): Promise<string> {
    return this.query("LIST", () => this.findRequest(params), renderList);
  }

  /** Searches file contents; every hit's revision is recorded. Rejects only with `EditRefused`. */
  grep(params: unknown): Promise<string> {
    return this.query("SEARCH", () => this.grepRequest(params), (result) => {
      for (const file of files(result)) {
        if (typeof file.path === "string" && typeof file.sha256 === "string") this.editor.hit(file.path, file.sha256);
      }
      return renderSearch(result);
    });
  }

  /** Creates or overwrites a file; records its new revision. Rejects only with `EditRefused`. */
  write(params: unknown): Promise<string> {
    return this.mutate("WRITE", () => this.writeRequest(params), (request, result) => {
      const { path, sha256, created } = result;
      if (path !== request.path || typeof sha256 !== "string" || typeof created !== "boolean") return undefined;
      this.editor.wrote(path, sha256);
      return `${created ? "Created" : "Wrote"} ${shown(path)} (sha256 ${sha256}).`;
    });
  }

  /** Deletes a file; forgets its revision. Rejects only with `EditRefused`. */
  delete(params: unknown): Promise<string> {
    return this.mutate("DELETE", () => this.deleteRequest(params), (request, result) => {
      if (result.path !== request.path) return undefined;
      this.editor.forget(request.path as string);
      return `Deleted ${shown(request.path as string)}.`;
    });
  }

  /** A read-only operation: a transport failure is `<kind>_UNAVAILABLE` and poisons nothing. */
  private async query(kind: string, build: () => Args, render: (result: Args) => string): Promise<string> {
    try {
      const outcome = await this.editor.channel.send(build());
      if (outcome.kind === "transport") throw new EditRefused(`${kind}_UNAVAILABLE`, outcome.reason);
      const { response } = outcome;
      if (!response.ok) throw new EditRefused(response.code, response.message);
      return render(response.result ?? {});
    } catch (error) {
      if (error instanceof EditRefused) throw error;
      throw new EditRefused(`${kind}_FAILED`, `unexpected error: ${describe(error)}`);
    }
  }

  /**
   * A mutation: refused without spawning once the editor is poisoned; a transport failure
   * or a malformed success (`render` returns undefined) poisons it.
   */
  private async mutate(kind: string, build: () => Args, render: (request: Args, result: Args) => string | undefined): Promise<string> {
    try {
      const poisoned = this.editor.poisoned;
      if (poisoned !== undefined) {
        throw new EditRefused(
          `${kind}_UNAVAILABLE`,
          `an earlier change's outcome is unknown (${poisoned}); no further changes are possible in this attempt`,
        );
      }
      const request = build();
      const outcome = await this.editor.channel.send(request);
      if (outcome.kind === "transport") {
        this.editor.poison(outcome.reason);
        throw new EditRefused(
          `${kind}_UNAVAILABLE`,
          `${outcome.reason}; the change may or may not have been applied, and no further changes are possible in this attempt`,
        );
      }
      const { response } = outcome;
      if (!response.ok) {
        // The host's advice names the protocol field; this tool passes the revision itself.
        const exists = response.code === "TARGET_EXISTS" ? " With this tool: read the file first, then write again." : "";
        throw new EditRefused(response.code, `${response.message}${exists}${problems(response.result)}`);
      }
      const text = render(request, response.result ?? {});
      if (text === undefined) {
        this.editor.poison(`a malformed ${kind.toLowerCase()} success`);
        throw new EditRefused(`${kind}_UNAVAILABLE`, "malformed success from satyrn-host; no further changes are possible");
      }
      return text;
    } catch (error) {
      if (error instanceof EditRefused) throw error;
      throw new EditRefused(`${kind}_FAILED`, `unexpected error: ${describe(error)}`);
    }
  }
}

/**
 * A refused change set's problems, one per line, as the MCP server renders them
 * (crates/mcp/src/server.rs `refused`): the operation, its path and code, each hunk's or
 * edit's problem with where the file differs. Empty for any other refusal.
 */
export function problems(result: Args | null | undefined): string {
  let text = "";
  for (const p of array(result?.problems)) {
    if (typeof p.path !== "string") continue;
    const at = typeof p.line === "number" ? ` (patch line ${p.line})` : "";
    text += `\n- ${shown(p.path)}${at}: ${p.code}: ${p.message}`;
    for (const h of array(p.hunks)) text += `\n  - hunk ${h.hunk}: ${h.code}: ${h.message}`;
    for (const e of array(p.edits)) text += `\n  - ${e.code}: ${e.message}`;
  }
  return text;
}

function array(value: unknown): Args[] {
  return Array.isArray(value) ? (value.filter((v) => typeof v === "object" && v !== null) as Args[]) : [];
}

function files(result: Args): Args[] {
  return array(result.files);
}

/** "More: call again with cursor …" when the page is not the last. */
function continuation(result: Args): string {
  return typeof result.next_cursor === "string" ? `More results: call again with cursor ${JSON.stringify(result.next_cursor)}.\n` : "";
}

function notice(result: Args): string {
  return typeof result.notice === "string" && result.notice !== "" ? `${result.notice}\n` : "";
}

/** The code points a reader could not read as they are: satyrn_mutator_core::path::unreadable. */
function unreadable(code: number): boolean {
  return (
    code <= 0x1f ||
    (code >= 0x7f && code <= 0x9f) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x061c ||
    code === 0x200e ||
    code === 0x200f ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069) ||
    code === 0x00ad ||
    code === 0x034f ||
    code === 0x115f ||
    code === 0x1160 ||
    (code >= 0x180b && code <= 0x180f) ||
    (code >= 0x200b && code <= 0x200d) ||
    (code >= 0x2060 && code <= 0x2064) ||
    code === 0x2800 ||
    code === 0x3164 ||
    (code >= 0xfe00 && code <= 0xfe0f) ||
    code === 0xfeff ||
    code === 0xffa0 ||
    (code >= 0xe0000 && code <= 0xe007f) ||
    (code >= 0xe0100 && code <= 0xe01ef)
  );
}

/**
 * A worktree name as text shows it, exactly as satyrn-host's renderings do
 * (satyrn_mutator_core::path::shown; tests/fixtures/shown-names.json holds both to the same
 * cases): a control, bidirectional or invisible character as `\u{XXXX}`, a backslash as
 * `\\`.
 */
export function shown(name: string): string {
  let out = "";
  for (const c of name) {
    const code = c.codePointAt(0) as number;
    if (c === "\\") out += "\\\\";
    else if (unreadable(code)) out += `\\u{${code.toString(16).toUpperCase().padStart(4, "0")}}`;
    else out += c;
  }
  return out;
}

/**
 * One entry per line: `path/` for a directory, `path (symlink, not followed)`, `path (N
 * bytes)` for a file, ` [writable]` when declared; then hidden and unreadable counts.
 */
export function renderList(result: Args): string {
  const entries = array(result.entries);
  let text = "";
  for (const e of entries) {
    const path = shown(String(e.path));
    const line =
      e.kind === "directory" ? `${path}/` : e.kind === "symlink" ? `${path} (symlink, not followed)` : e.kind === "file" ? `${path} (${e.size} bytes)` : `${path} (special file)`;
    text += `${line}${e.writable === true ? " [writable]" : ""}\n`;
  }
  if (entries.length === 0) text += "(no entries)\n";
  if (typeof result.hidden === "number" && result.hidden > 0) text += `${result.hidden} private entries are not shown.\n`;
  if (typeof result.unreadable === "number" && result.unreadable > 0) text += `${result.unreadable} entries could not be read.\n`;
  return (text + notice(result) + continuation(result)).trimEnd();
}

/**
 * Per matched file `path (sha256 …)`, then `N: text` for a matching line and `N- text` for
 * context, as `grep -n` prints them; then what was skipped.
 */
export function renderSearch(result: Args): string {
  const found = files(result);
  let text = "";
  for (const f of found) {
    text += `${shown(String(f.path))}${f.writable === true ? " [writable]" : ""} (sha256 ${f.sha256})\n`;
    for (const l of array(f.lines)) text += `${l.line}${l.matched === true ? ":" : "-"} ${l.text}\n`;
    if (typeof f.omitted === "number" && f.omitted > 0) text += `(${f.omitted} more matching lines not shown)\n`;
  }
  if (found.length === 0) text += `No match in ${typeof result.files_searched === "number" ? result.files_searched : 0} searched files.\n`;
  for (const s of array(result.skipped)) text += `skipped ${shown(String(s.path))} (${s.reason})\n`;
  if (typeof result.skipped_omitted === "number" && result.skipped_omitted > 0) text += `${result.skipped_omitted} more files skipped\n`;
  if (typeof result.hidden === "number" && result.hidden > 0) text += `${result.hidden} private files were not searched.\n`;
  return (text + notice(result) + continuation(result)).trimEnd();
}

/** Whether anything is at the worktree-relative `path` (the symlink itself, if one). */
function exists(repo: string, path: string): boolean {
  try {
    lstatSync(join(repo, path));
    return true;
  } catch {
    return false;
  }
}
