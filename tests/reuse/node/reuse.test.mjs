// Runs every case of tests/fixtures/mutator-cases.json through the exported mutator
// component under Node: transpiled by @bytecodealliance/jco, run with
// @bytecodealliance/preview2-shim, with a fresh temporary worktree as the ONLY preopen
// (an isolated `createFilesystem`, never the shim's global default, which preopens `/`).
// Also runs the Node example of docs/reuse.md.
//
//   SATYRN_EXPORT=DIR node --test      (DIR from `satyrn-host component export --out DIR`)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createFilesystem } from '@bytecodealliance/preview2-shim/filesystem';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const exportDir = process.env.SATYRN_EXPORT;
assert.ok(exportDir, 'set SATYRN_EXPORT to a directory written by `satyrn-host component export`');
const wasm = path.join(exportDir, 'satyrn_mutator.wasm');
const manifest = JSON.parse(fs.readFileSync(path.join(exportDir, 'manifest.json'), 'utf8'));
const { cases } = JSON.parse(fs.readFileSync(path.join(root, 'tests/fixtures/mutator-cases.json'), 'utf8'));
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'satyrn-reuse-node-'));
process.on('exit', () => fs.rmSync(scratch, { recursive: true, force: true }));
const bin = path.join(here, 'node_modules/.bin');
const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };

// The transpile step, exactly as docs/reuse.md shows it.
function docBlock(name) {
  const text = fs.readFileSync(path.join(root, 'docs/reuse.md'), 'utf8');
  const m = text.match(new RegExp(`<!-- example: ${name} -->\\s*\`\`\`[a-z]*\\n([\\s\\S]*?)\`\`\``));
  assert.ok(m, `docs/reuse.md has no \`${name}\` example`);
  return m[1];
}
fs.copyFileSync(wasm, path.join(scratch, 'satyrn_mutator.wasm'));
fs.symlinkSync(path.join(here, 'node_modules'), path.join(scratch, 'node_modules'));
execFileSync('bash', ['-euo', 'pipefail', '-c', docBlock('node-transpile')], { cwd: scratch, env, stdio: 'inherit' });
const bindings = path.join(scratch, 'mutator-js');
const { instantiate } = await import(pathToFileURL(path.join(bindings, 'satyrn_mutator.js')).href);
const coreModules = new Map();
const getCoreModule = (name) => {
  if (!coreModules.has(name)) coreModules.set(name, WebAssembly.compile(fs.readFileSync(path.join(bindings, name))));
  return coreModules.get(name);
};

// preview2-shim has no read-only preopen: refuse, in this process, any open that could
// write (the component's only way to write would be open-at; it imports no write call).
function readOnly(filesystem) {
  const proto = filesystem.types.Descriptor.prototype;
  if (!proto.openAt.readOnlyGuard) {
    const openAt = proto.openAt;
    proto.openAt = function (pathFlags, p, openFlags, descriptorFlags) {
      if (openFlags.create || openFlags.truncate || descriptorFlags.write || descriptorFlags.mutateDirectory) {
        throw 'read-only';
      }
      return openAt.call(this, pathFlags, p, openFlags, descriptorFlags);
    };
    proto.openAt.readOnlyGuard = true;
  }
  return filesystem;
}

async function mutatorOver(worktree) {
  const filesystem = readOnly(createFilesystem({ preopens: { '.': worktree } }));
  // jco looks imports up by unversioned interface name; the two type-only imports are empty.
  const instance = await instantiate(getCoreModule, {
    'wasi:filesystem/types': filesystem.types,
    'wasi:filesystem/preopens': filesystem.preopens,
    'wasi:clocks/wall-clock': {},
    'satyrn:mutator/types': {},
  });
  return instance.mutator;
}

function makeFiles(worktree, files) {
  for (const f of files) {
    const p = path.join(worktree, f.path);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    if ('text' in f) fs.writeFileSync(p, f.text, 'utf8');
    else if ('hex' in f) fs.writeFileSync(p, Buffer.from(f.hex, 'hex'));
    else if ('symlink' in f) fs.symlinkSync(f.symlink, p);
    else if ('hardlink' in f) fs.linkSync(path.join(worktree, f.hardlink), p);
    else if (f.dir) fs.mkdirSync(p);
    else throw new Error(`unknown file kind ${JSON.stringify(f)}`);
  }
}

function snapshot(dir, out = {}, base = dir) {
  for (const name of fs.readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    const st = fs.lstatSync(p, { bigint: true });
    const rel = path.relative(base, p);
    out[rel] = [String(st.mode), String(st.ino), String(st.nlink),
      st.isSymbolicLink() ? fs.readlinkSync(p) : st.isFile() ? fs.readFileSync(p).toString('hex') : null];
    if (st.isDirectory()) snapshot(p, out, base);
  }
  return out;
}

// Runs one call and canonicalizes its result as docs/reuse.md describes.
function call(mutator, c) {
  const errorOf = (e) => {
    if (!e || typeof e !== 'object' || !('payload' in e)) throw e; // a trap: the case fails
    return e.payload;
  };
  if (c.function === 'replace') {
    try {
      const plan = mutator.replace({
        path: c.path, writablePaths: c.writable_paths, privatePaths: c.private_paths, expectedSha256: c.expected_sha256 ?? undefined,
        oldText: c.old_text, newText: c.new_text,
      });
      return { ok: { path: plan.path, base_sha256: plan.baseSha256,
        new_text: new TextDecoder('utf-8', { fatal: true }).decode(plan.newContent), next_sha256: plan.nextSha256 } };
    } catch (e) {
      const err = errorOf(e);
      if (err.tag === 'refused') return { refused: { code: err.val.code, message: err.val.message } };
      return { [err.tag.replaceAll('-', '_')]: err.val };
    }
  }
  if (c.function === 'revision') {
    try {
      return { ok: mutator.revision(c.path, c.writable_paths, c.private_paths) };
    } catch (e) {
      const err = errorOf(e);
      return { [err.tag.replaceAll('-', '_')]: err.val ?? null };
    }
  }
  if (c.function === 'matches') return { ok: mutator.matches(c.path, c.patterns) };
  throw new Error(`unknown function ${c.function}`);
}

test('the manifest describes the exported file', () => {
  assert.equal(manifest.component.sha256, createHash('sha256').update(fs.readFileSync(wasm)).digest('hex'));
  // jco's generated import object type lists exactly the manifest's imports.
  const dts = fs.readFileSync(path.join(bindings, 'satyrn_mutator.d.ts'), 'utf8');
  const imports = [...dts.matchAll(/^ {2}'([^']+)': typeof/gm)].map((m) => m[1]).filter((n) => !n.startsWith('satyrn:mutator/mutator'));
  assert.deepEqual(imports.sort(), manifest.imports.map((i) => i.name).sort());
});

test('the read-only guard refuses a write open', async () => {
  const worktree = fs.mkdtempSync(path.join(scratch, 'wt-'));
  const filesystem = readOnly(createFilesystem({ preopens: { '.': worktree } }));
  const [[dir]] = filesystem.preopens.getDirectories();
  assert.throws(() => dir.openAt({}, 'x', { create: true }, { write: true }), (e) => e === 'read-only');
  assert.deepEqual(fs.readdirSync(worktree), []);
});

for (const c of cases) {
  test(c.name, async () => {
    const worktree = fs.mkdtempSync(path.join(scratch, 'wt-'));
    makeFiles(worktree, c.files);
    const before = snapshot(worktree);
    const got = call(await mutatorOver(worktree), c.call);
    assert.deepEqual(got, c.expect);
    assert.deepEqual(snapshot(worktree), before, 'the worktree changed');
  });
}

test('the Node example of docs/reuse.md edits and publishes', () => {
  const worktree = fs.mkdtempSync(path.join(scratch, 'wt-'));
  fs.writeFileSync(path.join(worktree, 'hello.txt'), 'hello world\n', { mode: 0o640 });
  fs.chmodSync(path.join(worktree, 'hello.txt'), 0o640);
  const example = path.join(scratch, 'example.mjs');
  fs.writeFileSync(example, docBlock('node'));
  const out = execFileSync(process.execPath, [example, worktree], { cwd: scratch, env, encoding: 'utf8' });
  const next = createHash('sha256').update('hello there\n').digest('hex');
  assert.equal(out, `published hello.txt ${next}\n`);
  assert.equal(fs.readFileSync(path.join(worktree, 'hello.txt'), 'utf8'), 'hello there\n');
  assert.equal(fs.statSync(path.join(worktree, 'hello.txt')).mode & 0o777, 0o640);
  assert.deepEqual(fs.readdirSync(worktree), ['hello.txt']);
});
