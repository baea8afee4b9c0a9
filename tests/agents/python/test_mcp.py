"""`satyrn-host mcp` driven by the official Python MCP SDK (`mcp`, pinned in requirements.txt)
over stdio: the tool list, read → edit, a stale explicit revision, and the refusals
(undeclared path, the repository's `.git/config`, a symlink), each refusal with the file left
byte-for-byte unchanged and a sibling call that succeeds.

Run: `python -m unittest tests/agents/python/test_mcp.py` (from the venv that
scripts/test-agents.sh creates). The binary is `SATYRN_TEST_HOST_BIN`, else
`<repo root>/target/debug/satyrn-host`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import subprocess
import tempfile
import unittest
from contextlib import asynccontextmanager
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

ROOT = Path(__file__).resolve().parents[3]
A_BEFORE = b"alpha\nbeta\ngamma\n"
README = b"# demo\n\nNot writable by the contract.\n"
CONTRACT = "id: agents-demo\ntask: |\n  Change beta in src/a.txt.\nwritable_paths:\n  - 'src/*.txt'\n"
# Everything matches `*` (fnmatch's `*` crosses `/`), so only satyrn's own rules protect `.git`.
CONTRACT_ALL = "id: agents-all\ntask: |\n  Anything.\nwritable_paths:\n  - '*'\n"
DEADLINE = 60  # seconds for one whole MCP session


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def host_bin() -> str:
    path = Path(os.environ.get("SATYRN_TEST_HOST_BIN", ROOT / "target" / "debug" / "satyrn-host")).resolve()
    if not path.is_file():
        raise RuntimeError(f"satyrn-host not found at {path} (build it, or set SATYRN_TEST_HOST_BIN)")
    return str(path)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=30).stdout


def snapshot(path: Path) -> tuple[bytes, int, int] | None:
    """Bytes, mode and inode of a path (not following a symlink), or None."""
    if not os.path.lexists(path):
        return None
    st = os.lstat(path)
    data = os.readlink(path).encode() if os.path.islink(path) else path.read_bytes()
    return (data, st.st_mode, st.st_ino)


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


class McpTest(unittest.TestCase):
    contract_text = CONTRACT

    def setUp(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="satyrn-agents-py-"))
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.repo = self.dir / "repo"
        (self.repo / "src").mkdir(parents=True)
        (self.repo / "src" / "a.txt").write_bytes(A_BEFORE)
        (self.repo / "README.md").write_bytes(README)
        self.outside = self.dir / "outside.txt"
        self.outside.write_bytes(b"outside the repository\n")
        os.symlink("a.txt", self.repo / "src" / "link.txt")
        os.symlink(str(self.outside), self.repo / "src" / "out.txt")
        git(self.repo, "init", "-q", "-b", "main")
        git(self.repo, "config", "user.name", "satyrn tests")
        git(self.repo, "config", "user.email", "tests@satyrn.invalid")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "--no-gpg-sign", "-m", "fixture")
        self.contract = self.dir / "contract.yaml"
        self.contract.write_text(self.contract_text)

    @asynccontextmanager
    async def session(self):
        params = StdioServerParameters(
            command=host_bin(), args=["mcp", "--repo", str(self.repo), str(self.contract)], cwd=str(self.dir)
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session

    def run_session(self, body) -> None:
        async def main():
            async with self.session() as session:
                await body(session)

        try:
            asyncio.run(asyncio.wait_for(main(), DEADLINE))
        except BaseExceptionGroup as group:
            # anyio's task groups wrap a failed assertion; report the assertion itself.
            leaf: BaseException = group
            while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
                leaf = leaf.exceptions[0]
            raise leaf from group

    def assert_refused(self, result, code: str | None = None) -> str:
        text = text_of(result)
        self.assertTrue(result.is_error, f"expected a refusal, got {result}")
        if code is None:
            self.assertRegex(text, r"^[A-Z][A-Z_]+: ", "a refusal's text starts with its code")
        else:
            self.assertTrue(text.startswith(f"{code}: "), f"expected {code}, got {text!r}")
        return text

    def assert_ok(self, result):
        self.assertFalse(result.is_error, f"expected success, got {text_of(result)!r}")
        return result.structured_content


class Tools(McpTest):
    def test_lists_read_edit_boundary_and_boundary_names_the_contract(self) -> None:
        head = git(self.repo, "rev-parse", "HEAD").strip()

        async def body(s: ClientSession) -> None:
            tools = (await s.list_tools()).tools
            self.assertEqual(sorted(t.name for t in tools), ["apply_patch", "boundary", "change_set", "delete", "edit", "list", "read", "search", "write"])
            read = next(t for t in tools if t.name == "read")
            self.assertEqual(read.input_schema.get("required"), ["path"])
            b = self.assert_ok(await s.call_tool("boundary", {}))
            self.assertEqual(b["contract_id"], "agents-demo")
            self.assertEqual(b["writable_paths"], ["src/*.txt"])
            self.assertEqual(b["head"], head)

        self.run_session(body)


class ReadEdit(McpTest):
    def test_read_then_edit_then_the_old_explicit_revision_is_stale(self) -> None:
        a = self.repo / "src" / "a.txt"
        after_first = b"alpha\nBETA\ngamma\n"

        async def body(s: ClientSession) -> None:
            r = self.assert_ok(await s.call_tool("read", {"path": "src/a.txt"}))
            self.assertEqual(r["path"], "src/a.txt")
            self.assertEqual(r["sha256"], sha256(A_BEFORE))
            self.assertIs(r["writable"], True)
            self.assertEqual(r["text"], A_BEFORE.decode())
            old = r["sha256"]

            e = self.assert_ok(
                await s.call_tool(
                    "edit",
                    {
                        "path": "src/a.txt",
                        "expected_sha256": old,
                        "edits": [{"op": "replace", "old_text": "beta", "new_text": "BETA"}],
                    },
                )
            )
            self.assertEqual(e["changed"], [{"start_line": 2, "end_line": 2}])
            self.assertEqual(e["sha256"], sha256(after_first))
            self.assertEqual(a.read_bytes(), after_first)
            before = snapshot(a)

            stale = await s.call_tool(
                "edit",
                {
                    "path": "src/a.txt",
                    "expected_sha256": old,
                    "edits": [{"op": "replace", "old_text": "gamma", "new_text": "GAMMA"}],
                },
            )
            self.assert_refused(stale, "REVISION_STALE")
            self.assertEqual(snapshot(a), before)

        self.run_session(body)
        self.assertEqual(git(self.repo, "status", "--porcelain"), " M src/a.txt\n")

    def test_edit_of_a_path_never_read_is_revision_unavailable(self) -> None:
        a = self.repo / "src" / "a.txt"
        before = snapshot(a)

        async def body(s: ClientSession) -> None:
            edit = {"path": "src/a.txt", "edits": [{"op": "replace", "old_text": "beta", "new_text": "BETA"}]}
            self.assert_refused(await s.call_tool("edit", edit), "REVISION_UNAVAILABLE")
            self.assertEqual(snapshot(a), before)
            self.assert_ok(await s.call_tool("read", {"path": "src/a.txt"}))
            self.assert_ok(await s.call_tool("edit", edit))

        self.run_session(body)
        self.assertEqual(a.read_bytes(), b"alpha\nBETA\ngamma\n")

    def test_a_malformed_call_is_a_correctable_tool_error(self) -> None:
        """Arguments that do not fit the schema come back as a tool result with isError (MCP
        2025-11-25, as rmcp reports them; docs/mcp.md), so the model can correct the call;
        nothing is applied and the session goes on."""
        a = self.repo / "src" / "a.txt"
        before = snapshot(a)
        malformed = [
            ("read", {"path": 7}),
            ("read", {"path": "src/a.txt", "bogus": 1}),
            ("edit", {"path": "src/a.txt", "edits": [{"op": "frobnicate"}]}),
            ("edit", {"path": "src/a.txt", "edits": [{"op": "replace", "anchor_text": "beta", "new_text": "x"}]}),
        ]

        async def body(s: ClientSession) -> None:
            for name, arguments in malformed:
                with self.subTest(tool=name, arguments=arguments):
                    result = await s.call_tool(name, arguments)
                    self.assertTrue(result.is_error, f"{name} {arguments}: {result}")
                    text = text_of(result)
                    self.assertTrue(
                        text.startswith("failed to deserialize parameters: ") or text.startswith("INVALID_REQUEST: "),
                        text,
                    )
            self.assertEqual(snapshot(a), before)
            # An unknown tool is a protocol error.
            with self.assertRaises(MCPError):
                await s.call_tool("rename", {"path": "src/new.txt"})
            self.assertFalse((self.repo / "src" / "new.txt").exists())
            # The session survives the bad calls.
            self.assert_ok(await s.call_tool("read", {"path": "src/a.txt"}))

        self.run_session(body)


class Refusals(McpTest):
    def test_path_undeclared_leaves_readme_unchanged_and_the_declared_edit_succeeds(self) -> None:
        readme = self.repo / "README.md"
        before = snapshot(readme)

        async def body(s: ClientSession) -> None:
            r = self.assert_ok(await s.call_tool("read", {"path": "README.md"}))
            self.assertIs(r["writable"], False)
            refused = await s.call_tool(
                "edit",
                {
                    "path": "README.md",
                    "expected_sha256": r["sha256"],
                    "edits": [{"op": "replace", "old_text": "# demo", "new_text": "# taken over"}],
                },
            )
            self.assert_refused(refused, "PATH_UNDECLARED")
            self.assertEqual(snapshot(readme), before)

            self.assert_ok(await s.call_tool("read", {"path": "src/a.txt"}))
            ok = self.assert_ok(
                await s.call_tool(
                    "edit", {"path": "src/a.txt", "edits": [{"op": "replace", "old_text": "beta", "new_text": "BETA"}]}
                )
            )
            self.assertTrue(ok["changed"], "the declared edit reports its changed lines")

        self.run_session(body)
        self.assertEqual(snapshot(readme), before)
        self.assertEqual(git(self.repo, "status", "--porcelain"), " M src/a.txt\n")

    def test_a_symlinked_path_is_refused_and_its_target_unchanged(self) -> None:
        a = self.repo / "src" / "a.txt"
        link = self.repo / "src" / "link.txt"
        out = self.repo / "src" / "out.txt"
        before = {p: snapshot(p) for p in (a, link, out, self.outside)}

        async def body(s: ClientSession) -> None:
            for path in ("src/link.txt", "src/out.txt"):
                self.assert_refused(await s.call_tool("read", {"path": path}), "READ_UNAVAILABLE")
                edit = {
                    "path": path,
                    "expected_sha256": sha256(A_BEFORE),
                    "edits": [{"op": "replace", "old_text": "beta", "new_text": "BETA"}],
                }
                self.assert_refused(await s.call_tool("edit", edit))
                self.assertEqual({p: snapshot(p) for p in before}, before, path)
            # The sibling: the real file, by its own name, is editable.
            self.assert_ok(await s.call_tool("read", {"path": "src/a.txt"}))
            self.assert_ok(
                await s.call_tool(
                    "edit", {"path": "src/a.txt", "edits": [{"op": "replace", "old_text": "beta", "new_text": "BETA"}]}
                )
            )

        self.run_session(body)
        self.assertEqual(a.read_bytes(), b"alpha\nBETA\ngamma\n")
        self.assertTrue(link.is_symlink() and out.is_symlink())
        self.assertEqual(snapshot(self.outside), before[self.outside])


    def test_paths_outside_the_repository_are_refused(self) -> None:
        before = snapshot(self.outside)

        async def body(s: ClientSession) -> None:
            for path in ("../outside.txt", str(self.outside), "src/../../outside.txt"):
                self.assert_refused(await s.call_tool("read", {"path": path}))
                edit = {
                    "path": path,
                    "expected_sha256": sha256(self.outside.read_bytes()),
                    "edits": [{"op": "replace", "old_text": "outside", "new_text": "taken"}],
                }
                self.assert_refused(await s.call_tool("edit", edit))
                self.assertEqual(snapshot(self.outside), before, path)
            # The sibling: a path inside the repository reads fine in the same session.
            self.assert_ok(await s.call_tool("read", {"path": "src/a.txt"}))

        self.run_session(body)
        self.assertEqual(git(self.repo, "status", "--porcelain"), "")


class GitDirectory(McpTest):
    contract_text = CONTRACT_ALL

    def test_git_config_is_refused_even_when_every_path_is_writable(self) -> None:
        config = self.repo / ".git" / "config"
        before = snapshot(config)

        async def body(s: ClientSession) -> None:
            self.assert_refused(await s.call_tool("read", {"path": ".git/config"}), "READ_UNAVAILABLE")
            edit = {
                "path": ".git/config",
                "expected_sha256": sha256(config.read_bytes()),
                "edits": [{"op": "insert_after", "anchor_text": "[core]\n", "new_text": "\thooksPath = /tmp/x\n"}],
            }
            self.assert_refused(await s.call_tool("edit", edit), "PATH_UNDECLARED")
            self.assertEqual(snapshot(config), before)
            # The sibling: under the same contract an ordinary file is editable.
            self.assert_ok(await s.call_tool("read", {"path": "README.md"}))
            self.assert_ok(
                await s.call_tool(
                    "edit", {"path": "README.md", "edits": [{"op": "replace", "old_text": "# demo", "new_text": "# Demo"}]}
                )
            )

        self.run_session(body)
        self.assertEqual(snapshot(config), before)
        self.assertEqual(git(self.repo, "status", "--porcelain"), " M README.md\n")


if __name__ == "__main__":
    unittest.main()
