"""Runs every case of tests/fixtures/mutator-cases.json through the exported mutator
component with the `wasmtime` package from PyPI (its component API, WASIp2, one
read-only preopen: a fresh temporary worktree), and runs the Python example of
docs/reuse.md.

    python3 test_reuse.py EXPORT_DIR

EXPORT_DIR is what `satyrn-host component export --out EXPORT_DIR` wrote. Prints one
line per failure and, last, `N passed, M failed`; exits 1 when anything failed.
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from wasmtime import Engine, Store, WasiConfig
from wasmtime.component import Component, Linker, Record, Variant

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "mutator-cases.json"
DOC = ROOT / "docs" / "reuse.md"
INTERFACE = "satyrn:mutator/mutator@0.5.0"


def make_files(worktree, files):
    for f in files:
        path = Path(worktree, f["path"])
        path.parent.mkdir(parents=True, exist_ok=True)
        if "text" in f:
            path.write_bytes(f["text"].encode("utf-8"))
        elif "hex" in f:
            path.write_bytes(bytes.fromhex(f["hex"]))
        elif "symlink" in f:
            os.symlink(f["symlink"], path)
        elif "hardlink" in f:
            os.link(Path(worktree, f["hardlink"]), path)
        elif f.get("dir"):
            path.mkdir()
        else:
            raise ValueError(f"unknown file kind: {f}")


def snapshot(worktree):
    """Every entry beneath the worktree: type, bytes or link target, mode, inode, links."""
    entries = {}
    for dirpath, dirnames, filenames in os.walk(worktree):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            content = os.readlink(p) if os.path.islink(p) else (
                Path(p).read_bytes() if os.path.isfile(p) else None)
            entries[os.path.relpath(p, worktree)] = (st.st_mode, st.st_ino, st.st_nlink, content)
    return entries


class Mutator:
    """One instance of the component over one worktree, preopened read-only and alone."""

    def __init__(self, engine, component, worktree):
        self.store = Store(engine)
        wasi = WasiConfig()  # no arguments, environment, stdio or other directories
        wasi.preopen_dir(str(worktree), ".", fs_mutable=False)
        self.store.set_wasi(wasi)
        linker = Linker(engine)
        linker.add_wasip2()
        self.instance = linker.instantiate(self.store, component)
        self.iface = self.instance.get_export_index(self.store, INTERFACE)

    def call(self, name, *args):
        index = self.instance.get_export_index(self.store, name, self.iface)
        func = self.instance.get_func(self.store, index)
        result = func(self.store, *args)
        func.post_return(self.store)
        return result


def field(record, name):
    return getattr(record, name)


def canonical_replace_error(err):
    # replace-error's cases have distinct Python types, so wasmtime-py lifts it untagged:
    # a str is invalid-request, a Record is a refusal. A tagged Variant is accepted too.
    if isinstance(err, Variant):
        err = err.payload if err.tag == "refused" or err.tag == "invalid-request" else err
    if isinstance(err, str):
        return {"invalid_request": err}
    if isinstance(err, Record):
        return {"refused": {"code": field(err, "code"), "message": field(err, "message")}}
    raise TypeError(f"unexpected replace error {err!r}")


def run_case(mutator, call):
    fn = call["function"]
    if fn == "replace":
        request = Record()
        request.path = call["path"]
        setattr(request, "writable-paths", call["writable_paths"])
        setattr(request, "private-paths", call["private_paths"])
        setattr(request, "expected-sha256", call["expected_sha256"])
        setattr(request, "old-text", call["old_text"])
        setattr(request, "new-text", call["new_text"])
        out = mutator.call("replace", request)
        # result<plan, replace-error>: both sides may hold a Record, so it is tagged.
        if not isinstance(out, Variant) or out.tag not in ("ok", "err"):
            raise TypeError(f"unexpected replace result {out!r}")
        if out.tag == "err":
            return canonical_replace_error(out.payload)
        plan = out.payload
        return {"ok": {
            "path": field(plan, "path"),
            "base_sha256": field(plan, "base-sha256"),
            "new_text": bytes(field(plan, "new-content")).decode("utf-8"),
            "next_sha256": field(plan, "next-sha256"),
        }}
    if fn == "revision":
        out = mutator.call("revision", call["path"], call["writable_paths"], call["private_paths"])
        # result<string, revision-error>: a str is the revision, a Variant the error.
        if isinstance(out, str):
            return {"ok": out}
        if isinstance(out, Variant) and out.tag in ("ok", "err"):
            out = out.payload
            if isinstance(out, str):
                return {"ok": out}
        if isinstance(out, Variant):
            return {out.tag.replace("-", "_"): out.payload}
        raise TypeError(f"unexpected revision result {out!r}")
    if fn == "matches":
        return {"ok": mutator.call("matches", call["path"], call["patterns"])}
    raise ValueError(f"unknown function {fn}")


def doc_block(name):
    """The fenced code block that follows `<!-- example: NAME -->` in docs/reuse.md."""
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"<!-- example: " + re.escape(name) + r" -->\s*```[a-z]*\n(.*?)```", text, re.S)
    if not m:
        raise ValueError(f"docs/reuse.md has no `{name}` example")
    return m.group(1)


def check_doc_example(wasm):
    """Runs the Python example of docs/reuse.md: it must edit and publish hello.txt."""
    with tempfile.TemporaryDirectory() as tmp:
        worktree = Path(tmp, "worktree")
        worktree.mkdir()
        (worktree / "hello.txt").write_text("hello world\n")
        os.chmod(worktree / "hello.txt", 0o640)
        script = Path(tmp, "example.py")
        script.write_text(doc_block("python"))
        run = subprocess.run([sys.executable, str(script), str(wasm), str(worktree)],
                             capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            return f"exit {run.returncode}: {run.stderr}"
        new = b"hello there\n"
        expected_out = f"published hello.txt {hashlib.sha256(new).hexdigest()}\n"
        if run.stdout != expected_out:
            return f"stdout {run.stdout!r}, expected {expected_out!r}"
        if (worktree / "hello.txt").read_bytes() != new:
            return "hello.txt does not hold the edited bytes"
        if (os.stat(worktree / "hello.txt").st_mode & 0o777) != 0o640:
            return "the publish did not keep the mode"
        if sorted(os.listdir(worktree)) != ["hello.txt"]:
            return f"temporary left behind: {os.listdir(worktree)}"
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    export = Path(sys.argv[1])
    wasm = export / "satyrn_mutator.wasm"
    manifest = json.loads((export / "manifest.json").read_text())
    cases = json.loads(FIXTURES.read_text(encoding="utf-8"))["cases"]
    engine = Engine()
    component = Component.from_file(engine, str(wasm))
    failures = []
    passed = 0

    # The manifest describes this very file, and its imports are what wasmtime-py sees.
    if manifest["component"]["sha256"] != hashlib.sha256(wasm.read_bytes()).hexdigest():
        failures.append("manifest: sha256 does not match satyrn_mutator.wasm")
    else:
        passed += 1
    seen = sorted(component.type.imports(engine).keys())
    listed = sorted(i["name"] for i in manifest["imports"])
    if seen != listed:
        failures.append(f"manifest: imports {listed} but wasmtime-py sees {seen}")
    else:
        passed += 1

    for case in cases:
        with tempfile.TemporaryDirectory() as tmp:
            worktree = Path(tmp, "worktree")
            worktree.mkdir()
            make_files(worktree, case["files"])
            before = snapshot(worktree)
            try:
                got = run_case(Mutator(engine, component, worktree), case["call"])
            except Exception as e:  # a trap or a binding error fails the case
                got = {"exception": repr(e)}
            problems = []
            if got != case["expect"]:
                problems.append(f"got {json.dumps(got, ensure_ascii=False)}, "
                                f"expected {json.dumps(case['expect'], ensure_ascii=False)}")
            if snapshot(worktree) != before:
                problems.append("the worktree changed")
            if problems:
                failures.append(f"{case['name']}: {'; '.join(problems)}")
            else:
                passed += 1

    try:
        problem = check_doc_example(wasm)
    except Exception as e:  # a missing block or a hung example fails the check
        problem = repr(e)
    if problem:
        failures.append(f"docs/reuse.md python example: {problem}")
    else:
        passed += 1

    for f in failures:
        print(f"FAIL {f}")
    print(f"{passed} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
