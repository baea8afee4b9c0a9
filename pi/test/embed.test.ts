import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { test } from "node:test";

import { ROOT } from "./helpers.ts";

/** The relative imports of a Pi file and of everything it imports, from pi/. */
function closure(entries: string[]): Set<string> {
  const seen = new Set<string>();
  const pending = [...entries];
  while (pending.length > 0) {
    const file = pending.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = readFileSync(join(ROOT, "pi", file), "utf8");
    for (const m of source.matchAll(/^import\s[^;]*?from\s+"(\.{1,2}\/[^"]+)";/gms)) {
      pending.push(normalize(join(dirname(file), m[1])));
    }
  }
  return seen;
}

test("satyrn-host embeds exactly the files an attempt's engine.ts and mutator.ts import (crates/attempt/src/pi.rs)", () => {
  const rust = readFileSync(join(ROOT, "crates", "attempt", "src", "pi.rs"), "utf8");
  const list = rust.slice(rust.indexOf("EXTENSION_FILES"), rust.indexOf("];", rust.indexOf("EXTENSION_FILES")));
  const embedded = new Set([...list.matchAll(/\(\s*"([^"]+)",\s*include_str!\("\.\.\/\.\.\/\.\.\/pi\/([^"]+)"\)/g)].map((m) => {
    assert.equal(m[1], m[2], "each entry is written where it was read from");
    return m[1];
  }));
  assert.deepEqual([...embedded].sort(), [...closure(["engine.ts", "mutator.ts"])].sort());
});

test("satyrn-host's `--tools` list is exactly SATYRN_TOOLS, the names the guard allows (crates/attempt/src/pi.rs)", async () => {
  const { SATYRN_TOOLS } = await import("../lib/context.ts");
  const rust = readFileSync(join(ROOT, "crates", "attempt", "src", "pi.rs"), "utf8");
  const tools = /pub const TOOLS: &str = "([^"]*)";/.exec(rust);
  assert.ok(tools !== null, "pi.rs defines TOOLS");
  assert.equal(tools[1], SATYRN_TOOLS.join(","));
});
