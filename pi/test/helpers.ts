import { EventEmitter } from "node:events";
import { PassThrough } from "node:stream";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (pi/..). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The satyrn-host binary the test suite runs against (built by scripts/test.sh). */
export function hostBin(): string {
  const path = process.env.SATYRN_TEST_HOST_BIN ?? join(ROOT, "target", "debug", "satyrn-host");
  if (!existsSync(path)) throw new Error(`satyrn-host not built at ${path}: run cargo build -p satyrn-host`);
  return path;
}

/** A scripted child process for an injected spawner. */
export class FakeChild extends EventEmitter {
  stdin = new PassThrough();
  stdout = new PassThrough();
  stderr = new PassThrough();
  pid: number | undefined = 4242;
  signals: string[] = [];
  input = "";
  constructor() {
    super();
    this.stdin.on("data", (c: Buffer) => {
      this.input += c.toString();
    });
  }
  kill(signal: string): boolean {
    this.signals.push(signal);
    return true;
  }
  /** Answers and closes like a real child: output, then `close`. */
  answer(stdout: string, code = 0): void {
    this.stdout.end(stdout);
    this.stderr.end();
    setImmediate(() => this.emit("close", code, null));
  }
  asChild(): ChildProcess {
    return this as unknown as ChildProcess;
  }
}

/** A finished child process: its exit code, its stdout bytes and its stderr text. */
export interface Run {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

/** Runs `command` in `cwd` with `env` (stdin closed) and waits for it. */
export function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (c: Buffer) => out.push(c));
    child.stderr.on("data", (c: Buffer) => err.push(c));
    child.on("error", reject);
    child.on("close", (code) => resolvePromise({ code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString() }));
  });
}
