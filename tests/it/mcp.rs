//! `satyrn-host mcp` driven by rmcp's own client over stdio: the real binary, the real
//! component, real git repositories. Every refusal beside its sibling success, every refusal
//! proving the file unchanged (bytes, mode, inode); a concurrent `protocol` writer and an
//! MCP writer on one file lose no update; the contract is frozen at start.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ServiceError, ServiceExt};
use serde_json::{Value, json};

use crate::support::{ContractFile, Repo, host_bin, protocol_raw, snapshot};

const A: &[u8] = b"fn main() {\n    println!(\"hello world\");\n}\n";

struct Fixture {
    repo: Repo,
    contract: ContractFile,
}

impl Fixture {
    fn new(writable: &[&str]) -> Self {
        Self {
            repo: Repo::with_files(&[("src/a.txt", A), ("README.md", b"readme\n")]),
            contract: ContractFile::new("mcp-test", writable),
        }
    }

    fn command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(host_bin());
        cmd.arg("mcp")
            .arg("--repo")
            .arg(self.repo.path())
            .arg(&self.contract.path)
            .stderr(Stdio::inherit());
        cmd
    }
}

type Client = RunningService<RoleClient, ()>;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

async fn connect(fx: &Fixture) -> Client {
    let transport = TokioChildProcess::new(fx.command()).expect("spawn satyrn-host mcp");
    ().serve(transport).await.expect("MCP handshake")
}

async fn call(
    client: &Client,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(arguments))
        .await
}

/// A successful call's structured content.
async fn ok(client: &Client, tool: &str, arguments: Value) -> Value {
    let result = call(client, tool, arguments).await.expect("call");
    assert_eq!(result.is_error, Some(false), "{tool}: {result:?}");
    result.structured_content.expect("structured content")
}

/// A refused call's text (`CODE: message ...`).
async fn refused(client: &Client, tool: &str, arguments: Value) -> String {
    let result = call(client, tool, arguments).await.expect("call");
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(result.structured_content.is_none());
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn replace_edit(old: &str, new: &str) -> Value {
    json!([{"op": "replace", "old_text": old, "new_text": new}])
}

#[test]
fn tools_are_listed_with_portable_schemas_and_annotations() {
    let fx = Fixture::new(&["src/*.txt"]);
    runtime().block_on(async {
        let client = connect(&fx).await;
        let tools = client.list_all_tools().await.expect("tools/list");
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "apply_patch",
                "boundary",
                "change_set",
                "delete",
                "edit",
                "list",
                "read",
                "search",
                "write"
            ]
        );
        for tool in &tools {
            let text = serde_json::to_string(tool).expect("json");
            assert!(
                !text.contains("\"null\""),
                "{}: a nullable union: {text}",
                tool.name
            );
            assert!(!text.contains("\"default\":null"), "{}: {text}", tool.name);
            assert!(
                tool.output_schema.is_some(),
                "{} has no output schema",
                tool.name
            );
            let annotations = tool.annotations.as_ref().expect("annotations");
            assert_eq!(annotations.open_world_hint, Some(false), "{}", tool.name);
            let writes = ["edit", "write", "delete", "apply_patch", "change_set"]
                .contains(&tool.name.as_ref());
            assert_eq!(annotations.read_only_hint, Some(!writes), "{}", tool.name);
            if writes {
                assert_eq!(annotations.destructive_hint, Some(true));
                assert_eq!(annotations.idempotent_hint, Some(false));
            }
        }
        let boundary = ok(&client, "boundary", json!({})).await;
        assert_eq!(boundary["writable_paths"], json!(["src/*.txt"]));
        assert!(
            boundary["private_paths"]
                .as_array()
                .expect("private paths")
                .contains(&json!(".env")),
            "the default private paths: {boundary}"
        );
        assert_eq!(boundary["task"], "edit the files");
        let head = crate::support::git_ok(fx.repo.path(), &["rev-parse", "HEAD"]);
        assert_eq!(boundary["head"].as_str(), Some(head.trim()));
        client.cancel().await.expect("close");
    });
}

/// Every property an output schema requires is in the structured result, at every depth
/// the schema describes (a strict client — Claude Code, the Inspector — refuses a result
/// that lacks one), and no property is `null` (the schemas say optional, never nullable).
fn assert_fits(schema: &Value, value: &Value, at: &str) {
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(_) => return,
        None => schema,
    };
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for key in required {
            let key = key.as_str().expect("a property name");
            assert!(
                value.get(key).is_some(),
                "{at}: lacks required `{key}`: {value}"
            );
        }
    }
    if let (Some(properties), Some(object)) = (
        schema.get("properties").and_then(Value::as_object),
        value.as_object(),
    ) {
        for (key, field) in object {
            assert!(!field.is_null(), "{at}.{key} is null");
            if let Some(sub) = properties.get(key) {
                assert_fits(sub, field, &format!("{at}.{key}"));
            }
        }
    }
}

#[test]
fn every_structured_result_fits_its_tools_output_schema() {
    let fx = Fixture::new(&["src/*"]);
    runtime().block_on(async {
        let client = connect(&fx).await;
        let tools = client.list_all_tools().await.expect("tools/list");
        let schema = |name: &str| -> Value {
            let tool = tools.iter().find(|t| t.name == name).expect("listed");
            serde_json::to_value(tool.output_schema.as_ref().expect("output schema")).expect("json")
        };
        let read = ok(&client, "read", json!({"path": "src/a.txt"})).await;
        assert_fits(&schema("read"), &read, "read (the whole file)");
        let page = ok(&client, "read", json!({"path": "src/a.txt", "limit": 1})).await;
        assert!(page.get("next_offset").is_some(), "{page}");
        assert_fits(&schema("read"), &page, "read (one page)");
        let edited = ok(
            &client,
            "edit",
            json!({"path": "src/a.txt", "edits": replace_edit("hello world", "hello satyrn")}),
        )
        .await;
        assert_fits(&schema("edit"), &edited, "edit");
        let listed = ok(&client, "list", json!({"recursive": true})).await;
        assert_fits(&schema("list"), &listed, "list");
        let found = ok(&client, "search", json!({"query": "satyrn"})).await;
        assert_fits(&schema("search"), &found, "search");
        let written = ok(
            &client,
            "write",
            json!({"path": "src/new.txt", "content": "new\n"}),
        )
        .await;
        assert_fits(&schema("write"), &written, "write");
        let deleted = ok(&client, "delete", json!({"path": "src/new.txt"})).await;
        assert_fits(&schema("delete"), &deleted, "delete");
        let boundary = ok(&client, "boundary", json!({})).await;
        assert_fits(&schema("boundary"), &boundary, "boundary");
        client.cancel().await.expect("close");
    });
}

#[test]
fn read_edit_then_a_stale_explicit_revision_is_refused_and_changes_nothing() {
    let fx = Fixture::new(&["src/*.txt"]);
    let file = fx.repo.file("src/a.txt");
    runtime().block_on(async {
        let client = connect(&fx).await;
        // Never read in this session: REVISION_UNAVAILABLE, nothing written.
        let before = snapshot(&file);
        let text = refused(&client, "edit", json!({"path": "src/a.txt", "edits": replace_edit("world", "satyrn")})).await;
        assert!(text.starts_with("REVISION_UNAVAILABLE: "), "{text}");
        assert_eq!(snapshot(&file), before);
        // Read, then edit without a revision: the recorded one is used.
        let page = ok(&client, "read", json!({"path": "src/a.txt"})).await;
        let first = page["sha256"].as_str().expect("sha").to_string();
        assert_eq!(page["text"], String::from_utf8(A.to_vec()).expect("utf8"));
        assert_eq!(page["writable"], true);
        let edited = ok(&client, "edit", json!({"path": "src/a.txt", "edits": replace_edit("world", "satyrn")})).await;
        assert_eq!(std::fs::read(&file).expect("read"), b"fn main() {\n    println!(\"hello satyrn\");\n}\n");
        assert_eq!(edited["sha256"], crate::support::sha256_file(&file));
        // A second edit builds on the recorded new revision.
        ok(&client, "edit", json!({"path": "src/a.txt", "edits": replace_edit("satyrn", "there")})).await;
        // An explicit old revision always wins, and is stale.
        let before = snapshot(&file);
        let text = refused(
            &client,
            "edit",
            json!({"path": "src/a.txt", "edits": replace_edit("there", "again"), "expected_sha256": first}),
        )
        .await;
        assert!(text.starts_with("REVISION_STALE: "), "{text}");
        assert!(text.contains("read it again"), "{text}");
        assert_eq!(snapshot(&file), before);
        client.cancel().await.expect("close");
    });
}

#[test]
fn undeclared_symlinked_and_git_paths_are_refused_unchanged_beside_a_declared_success() {
    let fx = Fixture::new(&["*"]);
    std::os::unix::fs::symlink("a.txt", fx.repo.file("src/link.txt")).expect("symlink");
    let narrow = Fixture::new(&["src/*.txt"]);
    runtime().block_on(async {
        let client = connect(&fx).await;
        // `.git/config` under `*`: never readable, never writable.
        let config = fx.repo.path().join(".git/config");
        let before = snapshot(&config);
        let text = refused(&client, "read", json!({"path": ".git/config"})).await;
        assert!(text.starts_with("READ_UNAVAILABLE: "), "{text}");
        let text = refused(
            &client,
            "edit",
            json!({"path": ".git/config", "edits": replace_edit("[core]", "[x]"), "expected_sha256": crate::support::sha256_file(&config)}),
        )
        .await;
        assert!(text.starts_with("PATH_UNDECLARED: "), "{text}");
        assert_eq!(snapshot(&config), before);
        // A symlink, even declared: refused, the target unchanged.
        let target = fx.repo.file("src/a.txt");
        let before = (snapshot(&target), snapshot(&fx.repo.file("src/link.txt")));
        let text = refused(&client, "read", json!({"path": "src/link.txt"})).await;
        assert!(text.starts_with("READ_UNAVAILABLE: ") && text.contains("symbolic link"), "{text}");
        let text = refused(
            &client,
            "edit",
            json!({"path": "src/link.txt", "edits": replace_edit("world", "x"), "expected_sha256": crate::support::sha256_file(&target)}),
        )
        .await;
        assert!(text.starts_with("MUTATION_FAILED: "), "{text}");
        assert_eq!((snapshot(&target), snapshot(&fx.repo.file("src/link.txt"))), before);
        // Sibling: the real file edits.
        ok(&client, "read", json!({"path": "src/a.txt"})).await;
        ok(&client, "edit", json!({"path": "src/a.txt", "edits": replace_edit("world", "satyrn")})).await;
        client.cancel().await.expect("close");

        // Undeclared under a narrow contract, even after a read.
        let client = connect(&narrow).await;
        let readme = narrow.repo.file("README.md");
        let page = ok(&client, "read", json!({"path": "README.md"})).await;
        assert_eq!(page["writable"], false);
        let before = snapshot(&readme);
        let text = refused(&client, "edit", json!({"path": "README.md", "edits": replace_edit("readme", "owned")})).await;
        assert!(text.starts_with("PATH_UNDECLARED: "), "{text}");
        assert_eq!(snapshot(&readme), before);
        client.cancel().await.expect("close");
    });
}

#[test]
fn a_rejected_batch_lists_every_problem_and_a_malformed_call_is_a_correctable_tool_error() {
    let fx = Fixture::new(&["src/*.txt"]);
    let file = fx.repo.file("src/a.txt");
    runtime().block_on(async {
        let client = connect(&fx).await;
        ok(&client, "read", json!({"path": "src/a.txt"})).await;
        let before = snapshot(&file);
        let text = refused(
            &client,
            "edit",
            json!({"path": "src/a.txt", "edits": [
                {"op": "replace", "old_text": "hello planet", "new_text": "x"},
                {"op": "replace", "old_text": "\n", "new_text": " "},
            ]}),
        )
        .await;
        assert!(text.starts_with("ANCHOR_MISSING: "), "{text}");
        assert!(text.contains("\n- ANCHOR_MISSING: ") && text.contains("\n- ANCHOR_AMBIGUOUS: "), "{text}");
        assert!(text.contains("\"problems\":["), "{text}");
        assert_eq!(snapshot(&file), before);
        for bad in [
            json!({"path": "src/a.txt"}),
            json!({"path": "src/a.txt", "edits": []}),
            json!({"path": "src/a.txt", "edits": [{"op": "replace", "anchor_text": "world", "new_text": "x"}]}),
            json!({"path": "src/a.txt", "edits": replace_edit("world", "x"), "repo": "/elsewhere"}),
            json!({"path": 7, "edits": replace_edit("world", "x")}),
        ] {
            // Arguments that do not fit the schema are tool errors the model can correct
            // (MCP 2025-11-25; rmcp reports them so), never applied.
            let text = refused(&client, "edit", bad.clone()).await;
            assert!(
                text.starts_with("failed to deserialize parameters: ")
                    || text.starts_with("INVALID_REQUEST: "),
                "{bad}: {text}"
            );
        }
        assert_eq!(snapshot(&file), before);
        // Sibling: the corrected batch lands.
        ok(&client, "edit", json!({"path": "src/a.txt", "edits": replace_edit("hello world", "hello satyrn")})).await;
        client.cancel().await.expect("close");
    });
}

#[test]
fn the_contract_is_frozen_when_the_server_starts() {
    let fx = Fixture::new(&["src/*.txt"]);
    runtime().block_on(async {
        let client = connect(&fx).await;
        std::fs::write(
            &fx.contract.path,
            "id: mcp-test\ntask: widened\nwritable_paths: ['*']\n",
        )
        .expect("widen");
        ok(&client, "read", json!({"path": "README.md"})).await;
        let text = refused(
            &client,
            "edit",
            json!({"path": "README.md", "edits": replace_edit("readme", "owned")}),
        )
        .await;
        assert!(text.starts_with("PATH_UNDECLARED: "), "{text}");
        assert_eq!(
            std::fs::read(fx.repo.file("README.md")).expect("read"),
            b"readme\n"
        );
        let boundary = ok(&client, "boundary", json!({})).await;
        assert_eq!(boundary["task"], "edit the files");
        client.cancel().await.expect("close");
    });
}

/// A `protocol` writer (one process per call) and the MCP session append to one file at
/// once, each re-reading on `REVISION_STALE`: every append survives (no lost update).
#[test]
fn a_concurrent_protocol_writer_and_an_mcp_writer_lose_no_update() {
    const ROUNDS: usize = 25;
    let fx = Fixture::new(&["src/*.txt"]);
    std::fs::write(fx.repo.file("src/log.txt"), b"log:\n").expect("write");
    let repo = fx.repo.path().to_path_buf();
    let contract = fx.contract.path.clone();
    let writer = std::thread::spawn(move || {
        let mut retries = 0;
        for i in 0..ROUNDS {
            loop {
                let sha = crate::support::sha256_file(&repo.join("src/log.txt"));
                let request = json!({"version": 1, "operation": "edit", "repo": repo, "contract": contract,
                    "path": "src/log.txt", "expected_sha256": sha,
                    "edits": [{"op": "insert_after", "anchor_text": "log:\n", "new_text": format!("protocol {i}\n")}]});
                let run = protocol_raw(request.to_string().as_bytes());
                match run.response["code"].as_str() {
                    Some("OK") => break,
                    Some("REVISION_STALE") => retries += 1,
                    other => panic!("protocol writer: {other:?}: {}", run.stdout),
                }
            }
        }
        retries
    });
    let mcp_retries = runtime().block_on(async {
        let client = connect(&fx).await;
        let mut retries = 0;
        for i in 0..ROUNDS {
            loop {
                ok(&client, "read", json!({"path": "src/log.txt"})).await;
                let result = call(
                    &client,
                    "edit",
                    json!({"path": "src/log.txt", "edits": [{"op": "insert_after", "anchor_text": "log:\n", "new_text": format!("mcp {i}\n")}]}),
                )
                .await
                .expect("call");
                if result.is_error == Some(false) {
                    break;
                }
                let text = format!("{:?}", result.content);
                assert!(text.contains("REVISION_STALE"), "{text}");
                retries += 1;
            }
        }
        client.cancel().await.expect("close");
        retries
    });
    let protocol_retries = writer.join().expect("writer");
    let text = std::fs::read_to_string(fx.repo.file("src/log.txt")).expect("read");
    for i in 0..ROUNDS {
        assert_eq!(
            text.matches(&format!("protocol {i}\n")).count(),
            1,
            "protocol {i} lost: {text}"
        );
        assert_eq!(
            text.matches(&format!("mcp {i}\n")).count(),
            1,
            "mcp {i} lost: {text}"
        );
    }
    assert_eq!(text.lines().count(), 1 + 2 * ROUNDS);
    eprintln!("retries: protocol {protocol_retries}, mcp {mcp_retries}");
}

/// Start-up refusals: the documented exit status, one line on stderr, no MCP traffic.
#[test]
fn start_up_refusals_exit_with_their_status_before_any_traffic() {
    let fx = Fixture::new(&["src/*.txt"]);
    let bad_contract = ContractFile::raw("id: x\n");
    let missing = fx.repo.path().join("no-such-contract.yaml");
    let sub = fx.repo.file("src");
    let cases: [(&Path, &Path, i32); 3] = [
        (fx.repo.path(), &missing, 3),
        (fx.repo.path(), &bad_contract.path, 5),
        (&sub, &fx.contract.path, 6),
    ];
    for (repo, contract, status) in cases {
        let out = Command::new(host_bin())
            .arg("mcp")
            .arg("--repo")
            .arg(repo)
            .arg(contract)
            .stdin(Stdio::null())
            .output()
            .expect("run");
        assert_eq!(
            out.status.code(),
            Some(status),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "MCP traffic on a refused start");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("satyrn-host mcp: "), "{stderr}");
    }
    let out = Command::new(host_bin())
        .args(["mcp", "--repo"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

/// A real `satyrn-host mcp` over `fx`, its `initialize` sent and answered.
fn initialized_server(
    fx: &Fixture,
) -> (
    std::process::Child,
    std::process::ChildStdin,
    std::io::BufReader<std::process::ChildStdout>,
) {
    use std::io::Write;
    let mut child = Command::new(host_bin())
        .arg("mcp")
        .arg("--repo")
        .arg(fx.repo.path())
        .arg(&fx.contract.path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    )
    .expect("write");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).expect("initialize answer");
    assert!(line.contains("\"serverInfo\""), "{line}");
    (child, stdin, stdout)
}

/// The server ends on stdin EOF and on SIGTERM, SIGINT or SIGHUP (exit 0), leaving no child and no
/// temporary in the worktree.
#[test]
fn the_server_ends_cleanly_on_eof_and_on_sigterm() {
    let fx = Fixture::new(&["src/*.txt"]);
    for signal in [
        None,
        Some(libc::SIGTERM),
        Some(libc::SIGINT),
        Some(libc::SIGHUP),
    ] {
        let (mut child, stdin, _stdout) = initialized_server(&fx);
        match signal {
            None => drop(stdin),
            Some(sig) => {
                let pid = i32::try_from(child.id()).expect("pid");
                // SAFETY: kill(2) of our own child.
                assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
            }
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                break status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the server did not end ({signal:?})"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(0), "{signal:?}");
    }
    let entries: Vec<PathBuf> = crate::support::dir_entries(&fx.repo.file("src"))
        .into_iter()
        .map(PathBuf::from)
        .collect();
    assert_eq!(entries, [PathBuf::from("a.txt")]);
}

/// An unknown tool is a protocol error, not a tool result.
#[test]
fn an_unknown_tool_is_a_protocol_error() {
    let fx = Fixture::new(&["src/*.txt"]);
    runtime().block_on(async {
        let client = connect(&fx).await;
        let error = call(&client, "rename", json!({"path": "src/new.txt"}))
            .await
            .expect_err("unknown tool");
        assert!(matches!(error, ServiceError::McpError(_)), "{error:?}");
        assert!(!fx.repo.file("src/new.txt").exists());
        client.cancel().await.expect("close");
    });
}

/// Many calls at once from one client: every one is answered correctly (at most eight run
/// at a time; the rest wait for a slot), and concurrent edits of different files all land.
#[test]
fn many_concurrent_calls_from_one_client_are_all_answered() {
    let fx = Fixture::new(&["src/*.txt"]);
    for i in 0..8 {
        std::fs::write(
            fx.repo.file(&format!("src/f{i}.txt")),
            format!("file {i}\n"),
        )
        .expect("write");
    }
    runtime().block_on(async {
        let client = connect(&fx).await;
        for i in 0..8 {
            ok(&client, "read", json!({"path": format!("src/f{i}.txt")})).await;
        }
        let mut calls = tokio::task::JoinSet::new();
        for n in 0..40 {
            let peer = client.peer().clone();
            calls.spawn(async move {
                let (tool, arguments) = if n < 8 {
                    ("edit", json!({"path": format!("src/f{n}.txt"), "edits": replace_edit(&format!("file {n}"), &format!("edited {n}"))}))
                } else {
                    ("read", json!({"path": "src/a.txt"}))
                };
                let Value::Object(arguments) = arguments else { unreachable!() };
                let result = peer
                    .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
                    .await
                    .expect("call");
                (n, result)
            });
        }
        let mut answered = 0;
        while let Some(joined) = calls.join_next().await {
            let (n, result) = joined.expect("task");
            assert_eq!(result.is_error, Some(false), "call {n}: {result:?}");
            answered += 1;
        }
        assert_eq!(answered, 40);
        for i in 0..8 {
            assert_eq!(
                std::fs::read_to_string(fx.repo.file(&format!("src/f{i}.txt"))).expect("read"),
                format!("edited {i}\n")
            );
        }
        client.cancel().await.expect("close");
    });
}

#[test]
fn the_toolbox_finds_creates_edits_and_deletes_with_the_sessions_revisions() {
    let fx = Fixture::new(&["src/*"]);
    std::fs::write(fx.repo.file(".env"), "TOKEN=hello\n").expect("write");
    runtime().block_on(async {
        let client = connect(&fx).await;
        let listed = ok(&client, "list", json!({"recursive": true})).await;
        let paths: Vec<&str> = listed["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| e["path"].as_str().expect("path"))
            .collect();
        assert_eq!(paths, ["README.md", "src", "src/a.txt"]);
        assert_eq!(listed["hidden"], 1);
        assert!(
            listed.get("next_cursor").is_none(),
            "absent, not null: {listed}"
        );
        // A search records the revision of each matched file: an edit needs none.
        let found = ok(&client, "search", json!({"query": "hello"})).await;
        assert_eq!(found["files"][0]["path"], "src/a.txt");
        ok(
            &client,
            "edit",
            json!({"path": "src/a.txt", "edits": replace_edit("hello world", "hello satyrn")}),
        )
        .await;
        assert!(
            std::fs::read_to_string(fx.repo.file("src/a.txt"))
                .expect("read")
                .contains("hello satyrn")
        );
        // Create; a create over a file the session never saw is refused and changes nothing.
        let created = ok(
            &client,
            "write",
            json!({"path": "src/new/b.txt", "content": "b\n"}),
        )
        .await;
        assert_eq!(created["created"], true);
        std::fs::write(fx.repo.file("src/c.txt"), "c\n").expect("write");
        let before = snapshot(&fx.repo.file("src/c.txt"));
        let text = refused(
            &client,
            "write",
            json!({"path": "src/c.txt", "content": "x\n"}),
        )
        .await;
        assert!(text.starts_with("TARGET_EXISTS: "), "{text}");
        assert_eq!(snapshot(&fx.repo.file("src/c.txt")), before);
        // The session knows b.txt's revision from its create: an absent revision overwrites.
        let overwritten = ok(
            &client,
            "write",
            json!({"path": "src/new/b.txt", "content": "d\n"}),
        )
        .await;
        assert_eq!(overwritten["created"], false);
        assert_eq!(
            std::fs::read(fx.repo.file("src/new/b.txt")).expect("read"),
            b"d\n"
        );
        // Private and undeclared paths are refused by name, and nothing changes.
        let secret = snapshot(&fx.repo.file(".env"));
        let text = refused(&client, "read", json!({"path": ".env"})).await;
        assert!(text.starts_with("PATH_PRIVATE: "), "{text}");
        let text = refused(
            &client,
            "write",
            json!({"path": "README.md", "content": "x"}),
        )
        .await;
        assert!(text.starts_with("PATH_UNDECLARED: "), "{text}");
        assert_eq!(snapshot(&fx.repo.file(".env")), secret);
        // Delete with the recorded revision; the record is gone with the file.
        ok(&client, "delete", json!({"path": "src/new/b.txt"})).await;
        assert!(!fx.repo.file("src/new/b.txt").exists());
        let text = refused(&client, "delete", json!({"path": "src/new/b.txt"})).await;
        assert!(text.starts_with("REVISION_UNAVAILABLE: "), "{text}");
        client.cancel().await.expect("close");
    });
}

/// What cannot start fails with one line on stderr and exit 1 (`INTERNAL_ERROR`), no MCP
/// traffic: a runtime the kernel refuses (`epoll_create1` or `eventfd2` failing with
/// `EMFILE`, as in a process out of descriptors), and a client that closes without a
/// handshake or sends something else first. The sibling: the same server, healthy, answers
/// `initialize`.
#[test]
fn a_server_that_cannot_start_or_gets_no_handshake_says_why_and_exits_1() {
    use crate::faults::{Fault, inject};
    use std::io::Write;
    let fx = Fixture::new(&["src/*.txt"]);
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let run = |faults: &[Fault], input: &str| {
        let mut cmd = Command::new(host_bin());
        cmd.arg("mcp")
            .arg("--repo")
            .arg(fx.repo.path())
            .arg(&fx.contract.path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        inject(&mut cmd, faults);
        let mut child = cmd.spawn().expect("spawn");
        let mut stdin = child.stdin.take().expect("stdin");
        let _ = stdin.write_all(input.as_bytes());
        drop(stdin);
        child.wait_with_output().expect("wait")
    };
    let cases: [(&[Fault], &str, &str); 2] = [
        (
            &[Fault::always(libc::SYS_epoll_create1, libc::EMFILE)],
            initialize,
            "cannot start the runtime: Too many open files",
        ),
        (
            &[Fault::always(libc::SYS_eventfd2, libc::EMFILE)],
            initialize,
            "cannot start the runtime: Too many open files",
        ),
    ];
    for (faults, input, said) in cases {
        let out = run(faults, &format!("{input}\n"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{said}: {stderr}");
        assert!(out.stdout.is_empty(), "{said}: MCP traffic");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(&format!("satyrn-host mcp: {said}")),
            "{stderr}"
        );
    }
    let healthy = run(&[], &format!("{initialize}\n"));
    assert_eq!(healthy.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&healthy.stdout).contains("\"serverInfo\""),
        "{}",
        String::from_utf8_lossy(&healthy.stdout)
    );
    // A client gone before the session began is no failure: exit 0, nothing said.
    let gone = run(&[], "");
    assert_eq!(gone.status.code(), Some(0));
    assert!(gone.stdout.is_empty() && gone.stderr.is_empty(), "{gone:?}");
    // Garbage first is answered (a parse error), then the same end. Looped: the answer
    // raced the end of input to stdout (2 of 200 were lost before the server waited for it).
    let mut lost = 0;
    for _ in 0..50 {
        let garbage = run(&[], "not json\n");
        assert_eq!(garbage.status.code(), Some(0), "{garbage:?}");
        if garbage.stdout.is_empty() {
            lost += 1;
            continue;
        }
        let answer: Value = serde_json::from_slice(&garbage.stdout).expect("one JSON answer");
        assert_eq!(answer["error"]["code"], -32700, "{answer}");
        assert_eq!(answer["id"], Value::Null);
    }
    assert_eq!(lost, 0, "answers lost at the end of input, of 50");
    // A notification and a stray response before `initialize` are dropped: the session
    // then starts as usual.
    let early = run(
        &[],
        &format!(
            "{}\n{}\n{initialize}\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":"x","result":{}}"#
        ),
    );
    assert_eq!(early.status.code(), Some(0), "{early:?}");
    assert!(
        String::from_utf8_lossy(&early.stdout).contains("\"serverInfo\""),
        "{early:?}"
    );
    assert!(early.stderr.is_empty(), "{early:?}");
}

/// Every message gets a well-formed answer: not JSON, not UTF-8, a lone surrogate escape,
/// a batch, a line over the limit (all answered by the framing), and a write of 16 MiB of
/// content however JSON escapes it (answered by the tool; 16 MiB + 1 byte is refused by
/// name). The sibling: the session goes on and answers an ordinary call after each.
#[test]
fn every_message_gets_a_well_formed_answer() {
    use std::io::{BufRead, BufReader, Write};
    let fx = Fixture::new(&["*"]);
    let mut child = Command::new(host_bin())
        .arg("mcp")
        .arg("--repo")
        .arg(fx.repo.path())
        .arg(&fx.contract.path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut exchange = |line: &[u8]| -> Value {
        stdin.write_all(line).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
        let mut answer = String::new();
        stdout.read_line(&mut answer).expect("read an answer");
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("malformed answer {answer:?}: {e}"))
    };
    let init = exchange(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#);
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    stdin_note(&mut exchange);
    let call = |id: u64, name: &str, arguments: Value| -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
            .to_string()
            .into_bytes()
    };
    let mut over = vec![b'x'; satyrn_mcp::framing::MAX_MESSAGE_BYTES + 1];
    over.extend_from_slice(b"yz");
    let bad: [(&[u8], i64); 5] = [
        (b"{not json}", -32700),
        (b"\xff\xfe", -32700),
        (br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"write","arguments":{"path":"s.txt","content":"\ud800"}}}"#, -32700),
        (b"[{},{}]", -32600),
        (&over, -32600),
    ];
    for (i, (line, code)) in bad.iter().enumerate() {
        let answer = exchange(line);
        assert_eq!(answer["error"]["code"], *code, "case {i}: {answer}");
        assert_eq!(answer["id"], Value::Null, "case {i}");
        let ok = exchange(&call(100 + i as u64, "boundary", json!({})));
        assert_eq!(
            ok["id"],
            100 + i as u64,
            "the session goes on after case {i}: {ok}"
        );
    }
    // The largest write, escaped to 6 bytes a byte, and one byte more.
    let limit = 16 << 20;
    let answer = exchange(&call(
        7,
        "write",
        json!({"path": "big.txt", "content": "\u{1}".repeat(limit)}),
    ));
    assert_eq!(
        answer["result"]["structuredContent"]["created"],
        true,
        "{}",
        &answer.to_string()[..200.min(answer.to_string().len())]
    );
    assert_eq!(
        std::fs::metadata(fx.repo.file("big.txt"))
            .expect("stat")
            .len(),
        limit as u64
    );
    let answer = exchange(&call(
        8,
        "write",
        json!({"path": "bigger.txt", "content": "a".repeat(limit + 1)}),
    ));
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(!fx.repo.file("bigger.txt").exists());
    drop(stdin);
    assert!(child.wait().expect("wait").success());
}

/// Sends `notifications/initialized` (which has no answer) through an exchange that expects
/// one, by following it with a `ping`.
fn stdin_note(exchange: &mut impl FnMut(&[u8]) -> Value) {
    let pong = exchange(
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":"ping","method":"ping"}"#,
    );
    assert_eq!(pong["id"], "ping", "{pong}");
}

/// A file seen only in part — one page of a long file, or a search hit — is never replaced
/// or removed whole on the session's record: `PARTLY_SEEN`, the file unchanged (bytes, mode,
/// inode). The siblings: an anchored edit on the same view, the rest of the file read and
/// then the write, and an explicit revision, all succeed.
#[test]
fn a_file_seen_in_part_is_never_overwritten_or_deleted_whole() {
    let fx = Fixture::new(&["src/*"]);
    let long: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(fx.repo.file("src/long.txt"), &long).expect("write");
    std::fs::write(fx.repo.file("src/hit.txt"), "needle\nrest\n").expect("write");
    runtime().block_on(async {
        let client = connect(&fx).await;
        let page = ok(&client, "read", json!({"path": "src/long.txt"})).await;
        assert_eq!(page["lines"], 2000, "{page}");
        let before = snapshot(&fx.repo.file("src/long.txt"));
        let text = refused(
            &client,
            "write",
            json!({"path": "src/long.txt", "content": "the first 2000 lines\n"}),
        )
        .await;
        assert!(
            text.starts_with("PARTLY_SEEN: `src/long.txt` was seen only in part"),
            "{text}"
        );
        let text = refused(&client, "delete", json!({"path": "src/long.txt"})).await;
        assert!(text.starts_with("PARTLY_SEEN: "), "{text}");
        assert_eq!(snapshot(&fx.repo.file("src/long.txt")), before);
        // An anchored edit needs no whole view.
        ok(
            &client,
            "edit",
            json!({"path": "src/long.txt", "edits": replace_edit("line 7\n", "line seven\n")}),
        )
        .await;
        let text = refused(
            &client,
            "write",
            json!({"path": "src/long.txt", "content": "x\n"}),
        )
        .await;
        assert!(
            text.starts_with("PARTLY_SEEN: "),
            "after the edit too: {text}"
        );
        // Every page read: a whole view, and the write goes ahead.
        ok(&client, "read", json!({"path": "src/long.txt"})).await;
        ok(
            &client,
            "read",
            json!({"path": "src/long.txt", "offset": 2001}),
        )
        .await;
        ok(
            &client,
            "write",
            json!({"path": "src/long.txt", "content": "short\n"}),
        )
        .await;
        assert_eq!(
            std::fs::read(fx.repo.file("src/long.txt")).expect("read"),
            b"short\n"
        );
        // A search hit is part; the model's own revision is its word that it knows the file.
        let found = ok(&client, "search", json!({"query": "needle"})).await;
        let sha = found["files"][0]["sha256"]
            .as_str()
            .expect("sha")
            .to_owned();
        let before = snapshot(&fx.repo.file("src/hit.txt"));
        let text = refused(
            &client,
            "write",
            json!({"path": "src/hit.txt", "content": "x\n"}),
        )
        .await;
        assert!(text.starts_with("PARTLY_SEEN: "), "{text}");
        assert_eq!(snapshot(&fx.repo.file("src/hit.txt")), before);
        ok(
            &client,
            "write",
            json!({"path": "src/hit.txt", "content": "x\n", "expected_sha256": sha}),
        )
        .await;
        assert_eq!(
            std::fs::read(fx.repo.file("src/hit.txt")).expect("read"),
            b"x\n"
        );
        client.cancel().await.expect("close");
    });
}

/// `notifications/cancelled`: a call cancelled while it waits for a slot never runs (its
/// file is never created), and one cancelled while it runs goes on but leaves nothing in the
/// session's record (a later write without a revision does not overwrite what it wrote). The
/// siblings: the calls not cancelled all land and are recorded.
#[test]
fn a_cancelled_call_never_runs_from_the_queue_and_never_enters_the_record() {
    use rmcp::model::{CallToolRequest, ClientRequest};
    use rmcp::service::PeerRequestOptions;
    use std::time::Duration;
    let fx = Fixture::new(&["src/*"]);
    runtime().block_on(async {
        let client = connect(&fx).await;
        let peer = client.peer().clone();
        // Every writing call waits for the worktree lock, holding its slot, while we hold it.
        let root = rustix::fs::open(
            fx.repo.path(),
            rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::DIRECTORY
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .expect("open root");
        rustix::fs::flock(&root, rustix::fs::FlockOperation::LockExclusive).expect("lock");
        let request = |path: &str| {
            let Value::Object(arguments) = json!({"path": path, "content": "c\n"}) else {
                unreachable!()
            };
            ClientRequest::CallToolRequest(CallToolRequest::new(
                CallToolRequestParams::new("write".to_string()).with_arguments(arguments),
            ))
        };
        let mut running = Vec::new();
        for i in 0..8 {
            let handle = peer
                .send_cancellable_request(
                    request(&format!("src/slot-{i}.txt")),
                    PeerRequestOptions::no_options(),
                )
                .await
                .expect("send");
            running.push(handle);
        }
        // All eight hold a slot once a read (which takes no lock) can no longer get one.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let probe = tokio::time::timeout(
                Duration::from_millis(200),
                call(&client, "read", json!({"path": "README.md"})),
            )
            .await;
            if probe.is_err() {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the slots never filled"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Queued behind them, then cancelled (the dropped call sends the cancellation).
        let queued = tokio::time::timeout(
            Duration::from_millis(300),
            call(
                &client,
                "write",
                json!({"path": "src/cancelled.txt", "content": "no\n"}),
            ),
        )
        .await;
        assert!(queued.is_err(), "the queued call was answered: {queued:?}");
        // One of the running eight cancelled too.
        let first = running.remove(0);
        first.cancel(Some("test".into())).await.expect("cancel");
        rustix::fs::flock(&root, rustix::fs::FlockOperation::Unlock).expect("unlock");
        for handle in running {
            handle
                .await_response()
                .await
                .expect("a running call is answered");
        }
        // Its own write landed (it was running), but the record does not know it.
        let landed = fx.repo.file("src/slot-0.txt");
        assert!(
            crate::deliver_support::poll_until(Duration::from_secs(30), || landed.exists()),
            "the running call was stopped midway"
        );
        let text = refused(
            &client,
            "write",
            json!({"path": "src/slot-0.txt", "content": "d\n"}),
        )
        .await;
        assert!(
            text.starts_with("TARGET_EXISTS: "),
            "the cancelled call's result was recorded: {text}"
        );
        ok(
            &client,
            "write",
            json!({"path": "src/slot-1.txt", "content": "d\n"}),
        )
        .await;
        assert_eq!(
            std::fs::read(fx.repo.file("src/slot-1.txt")).expect("read"),
            b"d\n"
        );
        assert!(
            !fx.repo.file("src/cancelled.txt").exists(),
            "the cancelled queued call ran"
        );
        client.cancel().await.expect("close");
    });
}

/// A file the session read and someone else then deleted is created again by a `write`
/// without a revision (the stale record is dropped), not refused for ever; the sibling: a
/// file still there is overwritten at the recorded revision.
#[test]
fn a_file_deleted_by_someone_else_is_created_again_by_a_write() {
    let fx = Fixture::new(&["src/*", "README.md"]);
    runtime().block_on(async {
        let client = connect(&fx).await;
        ok(&client, "read", json!({"path": "src/a.txt"})).await;
        std::fs::remove_file(fx.repo.file("src/a.txt")).expect("rm");
        let text = refused(&client, "read", json!({"path": "src/a.txt"})).await;
        assert!(text.starts_with("READ_UNAVAILABLE: "), "{text}");
        let created = ok(
            &client,
            "write",
            json!({"path": "src/a.txt", "content": "again\n"}),
        )
        .await;
        assert_eq!(created["created"], true, "{created}");
        assert_eq!(
            std::fs::read(fx.repo.file("src/a.txt")).expect("read"),
            b"again\n"
        );
        ok(&client, "read", json!({"path": "README.md"})).await;
        let wrote = ok(
            &client,
            "write",
            json!({"path": "README.md", "content": "new\n"}),
        )
        .await;
        assert_eq!(wrote["created"], false, "{wrote}");
        client.cancel().await.expect("close");
    });
}

/// A signal while a write is in flight: the server stops reading but answers what it
/// already received before it exits, so a write that landed is always reported (27 of 58
/// landed writes went unanswered when the signal dropped the session at once). Looped, the
/// signal sent at once or a little later, and counted.
#[test]
fn a_write_that_landed_before_a_signal_is_always_answered() {
    use std::io::{Read, Write};
    const ROUNDS: usize = 30;
    let fx = Fixture::new(&["src/*.txt"]);
    let content = "line\n".repeat(200_000);
    let (mut landed, mut lost) = (0, 0);
    for round in 0..ROUNDS {
        let (mut child, mut stdin, mut stdout) = initialized_server(&fx);
        let path = format!("src/n{round}.txt");
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "write", "arguments": {"path": path, "expected_sha256": null, "content": content}}});
        writeln!(stdin, "{call}").expect("write");
        stdin.flush().expect("flush");
        std::thread::sleep(std::time::Duration::from_millis((round % 6) as u64 * 2));
        let pid = i32::try_from(child.id()).expect("pid");
        // SAFETY: kill(2) of our own child.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let mut rest = String::new();
        stdout
            .read_to_string(&mut rest)
            .expect("the rest of stdout");
        let status = child.wait().expect("wait");
        assert_eq!(status.code(), Some(0), "round {round}");
        let answered = rest
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|m| m["id"] == 2 && m["result"].is_object());
        if fx.repo.file(&path).exists() {
            landed += 1;
            assert_eq!(
                std::fs::read_to_string(fx.repo.file(&path)).expect("read"),
                content
            );
            if !answered {
                lost += 1;
            }
        }
        drop(stdin);
    }
    eprintln!("{landed} of {ROUNDS} writes landed, {lost} unanswered");
    assert!(landed > 0, "no write ever landed before the signal");
    assert_eq!(
        lost, 0,
        "{lost} of {landed} landed writes were never answered"
    );
}

/// `apply_patch` over MCP: paths as agents write them (`./`, absolute under the worktree),
/// the session's revisions used; a patch whose last hunk does not match changes nothing and
/// the model reads the near miss, then the corrected patch lands whole.
#[test]
fn apply_patch_takes_agents_paths_and_the_sessions_revisions_all_or_nothing() {
    let fx = Fixture::new(&["src/*.txt", "src/**"]);
    std::fs::write(fx.repo.file("src/b.txt"), b"bee\n    indented\n").expect("write");
    let abs = fx.repo.path().join("src/b.txt");
    runtime().block_on(async {
        let client = connect(&fx).await;
        ok(&client, "read", json!({"path": "src/a.txt"})).await;
        ok(&client, "read", json!({"path": "src/b.txt"})).await;
        let before = crate::support::tree_state(fx.repo.path());
        let patch = |indent: &str| {
            format!(
                "*** Begin Patch\n*** Update File: ./src/a.txt\n@@\n-{}\n+changed\n*** Add File: src/new/c.txt\n+sea\n*** Update File: {}\n@@\n bee\n-{indent}indented\n+    dented\n*** End Patch\n",
                std::str::from_utf8(A).expect("utf-8").lines().next().expect("a line"),
                abs.display()
            )
        };
        let text = refused(&client, "apply_patch", json!({"patch": patch("  ")})).await;
        assert!(text.starts_with("HUNKS_REFUSED"), "{text}");
        assert!(text.contains("HUNK_CONTEXT_MISSING") && text.contains("whitespace"), "{text}");
        assert_eq!(crate::support::tree_state(fx.repo.path()), before, "a refused patch changed the tree");
        let done = ok(&client, "apply_patch", json!({"patch": patch("    ")})).await;
        let paths: Vec<&str> = done["files"].as_array().expect("files").iter().map(|f| f["path"].as_str().expect("path")).collect();
        assert_eq!(paths, ["src/a.txt", "src/b.txt", "src/new/c.txt"]);
        assert_eq!(std::fs::read(fx.repo.file("src/b.txt")).expect("read"), b"bee\n    dented\n");
        assert_eq!(std::fs::read(fx.repo.file("src/new/c.txt")).expect("read"), b"sea\n");
        // The session knows the new revisions: a change set right after needs none.
        let set = ok(&client, "change_set", json!({"ops": [
            {"op": "move", "path": "./src/new/c.txt", "to": "src/c.txt"},
            {"op": "edit", "path": "src/c.txt", "edits": replace_edit("sea", "see")},
        ]})).await;
        assert_eq!(set["files"].as_array().expect("files").len(), 2, "{set}");
        assert_eq!(std::fs::read(fx.repo.file("src/c.txt")).expect("read"), b"see\n");
        client.cancel().await.expect("close");
    });
}

/// Two conflicting change sets on the same files, one through the protocol and one through
/// MCP, raced many times: exactly one wins each round, the other is `REVISION_STALE`, and
/// the files always hold one set's content whole.
#[test]
fn of_two_conflicting_change_sets_exactly_one_wins() {
    const ROUNDS: usize = 20;
    let fx = Fixture::new(&["src/*.txt"]);
    let repo = fx.repo.path().to_path_buf();
    let contract = fx.contract.path.clone();
    let files = ["src/x.txt", "src/y.txt"];
    let set = |who: &str, shas: &[String]| {
        json!([
            {"op": "write", "path": files[0], "content": format!("{who}\n"), "expected_sha256": shas[0]},
            {"op": "write", "path": files[1], "content": format!("{who}\n"), "expected_sha256": shas[1]},
        ])
    };
    let (mut protocol_wins, mut mcp_wins) = (0, 0);
    runtime().block_on(async {
        let client = connect(&fx).await;
        for round in 0..ROUNDS {
            for f in files {
                std::fs::write(repo.join(f), format!("round {round}\n")).expect("reset");
            }
            let shas: Vec<String> = files.iter().map(|f| crate::support::sha256_file(&repo.join(f))).collect();
            let request = json!({"version": 1, "operation": "change_set", "repo": repo, "contract": contract,
                "ops": set("protocol", &shas)});
            let writer = std::thread::spawn(move || protocol_raw(request.to_string().as_bytes()));
            let mcp = call(&client, "change_set", json!({"ops": set("mcp", &shas)})).await.expect("call");
            let run = writer.join().expect("writer");
            let contents: Vec<String> = files.iter().map(|f| std::fs::read_to_string(repo.join(f)).expect("read")).collect();
            assert_eq!(contents[0], contents[1], "round {round}: a mix: {contents:?}");
            match (run.response["code"].as_str(), mcp.is_error) {
                (Some("OK"), Some(true)) => {
                    assert_eq!(contents[0], "protocol\n");
                    assert!(format!("{:?}", mcp.content).contains("REVISION_STALE"));
                    protocol_wins += 1;
                }
                (Some("REVISION_STALE"), Some(false)) => {
                    assert_eq!(contents[0], "mcp\n");
                    mcp_wins += 1;
                }
                other => panic!("round {round}: not exactly one winner: {other:?} {}", run.stdout),
            }
        }
        client.cancel().await.expect("close");
    });
    eprintln!("conflicting change sets: protocol won {protocol_wins}, mcp won {mcp_wins}");
    assert_eq!(protocol_wins + mcp_wins, ROUNDS);
}

/// A change set or patch never replaces or removes whole a file the session saw only in
/// part (one page of a long file): `write` and `delete` in a change set, `*** Delete File:`
/// and a delete-then-add in a patch are `PARTLY_SEEN`, the file unchanged (bytes, mode,
/// inode). The siblings on the same view: an anchored edit in a set, a patch's hunks, and a
/// move (the content kept whole at its destination) all land.
#[test]
fn a_change_set_never_replaces_or_removes_a_file_seen_in_part() {
    let fx = Fixture::new(&["src/*"]);
    let long: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(fx.repo.file("src/long.txt"), &long).expect("write");
    runtime().block_on(async {
        let client = connect(&fx).await;
        let page = ok(&client, "read", json!({"path": "src/long.txt"})).await;
        assert_eq!(page["lines"], 2000, "{page}");
        let before = snapshot(&fx.repo.file("src/long.txt"));
        let whole = |ops: Value| json!({"ops": ops});
        for ops in [
            json!([{"op": "write", "path": "src/long.txt", "content": "x\n"}]),
            json!([{"op": "delete", "path": "src/long.txt"}]),
            json!([
                {"op": "edit", "path": "src/long.txt", "edits": replace_edit("line 9\n", "nine\n")},
                {"op": "write", "path": "src/long.txt", "content": "x\n"},
            ]),
            // The content followed through moves (second review, round 3).
            json!([
                {"op": "move", "path": "src/long.txt", "to": "src/tmp.txt"},
                {"op": "delete", "path": "src/tmp.txt"},
            ]),
            json!([
                {"op": "move", "path": "src/long.txt", "to": "src/tmp.txt"},
                {"op": "write", "path": "src/tmp.txt", "content": "x\n"},
            ]),
            json!([
                {"op": "move", "path": "src/long.txt", "to": "src/tmp.txt"},
                {"op": "move", "path": "src/tmp.txt", "to": "src/long.txt"},
                {"op": "write", "path": "src/long.txt", "content": "x\n"},
            ]),
        ] {
            let text = refused(&client, "change_set", whole(ops.clone())).await;
            assert!(text.starts_with("PARTLY_SEEN: "), "{ops}: {text}");
            assert_eq!(snapshot(&fx.repo.file("src/long.txt")), before, "{ops}");
        }
        for patch in [
            "*** Begin Patch\n*** Delete File: src/long.txt\n*** End Patch\n",
            "*** Begin Patch\n*** Delete File: src/long.txt\n*** Add File: src/long.txt\n+x\n*** End Patch\n",
            "*** Begin Patch\n*** Update File: src/long.txt\n*** Move to: src/tmp.txt\n*** Delete File: src/tmp.txt\n*** End Patch\n",
            "*** Begin Patch\n*** Update File: src/long.txt\n*** Move to: src/tmp.txt\n*** Delete File: src/tmp.txt\n*** Add File: src/long.txt\n+x\n*** End Patch\n",
        ] {
            let text = refused(&client, "apply_patch", json!({"patch": patch})).await;
            assert!(text.starts_with("PARTLY_SEEN: "), "{patch}: {text}");
            assert_eq!(snapshot(&fx.repo.file("src/long.txt")), before, "{patch}");
        }
        ok(&client, "change_set", whole(json!([
            {"op": "edit", "path": "src/long.txt", "edits": replace_edit("line 7\n", "line seven\n")},
        ]))).await;
        ok(
            &client,
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Update File: src/long.txt\n@@\n-line 8\n+line eight\n*** End Patch\n"}),
        )
        .await;
        ok(&client, "change_set", whole(json!([
            {"op": "move", "path": "src/long.txt", "to": "src/moved.txt"},
        ]))).await;
        let moved = std::fs::read_to_string(fx.repo.file("src/moved.txt")).expect("read");
        assert_eq!(moved.lines().count(), 3000);
        assert!(moved.contains("line seven\nline eight\nline 9\n"), "the content moved whole");
        assert!(!fx.repo.file("src/long.txt").exists());
        // The destination is seen no more than the source was, through either tool.
        let moved_before = snapshot(&fx.repo.file("src/moved.txt"));
        for (tool, args) in [
            ("write", json!({"path": "src/moved.txt", "content": "x\n"})),
            ("delete", json!({"path": "src/moved.txt"})),
        ] {
            let text = refused(&client, tool, args).await;
            assert!(text.starts_with("PARTLY_SEEN: "), "{tool}: {text}");
            assert_eq!(snapshot(&fx.repo.file("src/moved.txt")), moved_before, "{tool}");
        }
        let done = ok(
            &client,
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Update File: src/moved.txt\n*** Move to: src/again.txt\n*** End Patch\n"}),
        )
        .await;
        assert!(
            done["files"].as_array().expect("files").iter().any(|f| f["path"] == "src/again.txt"
                && f["moved_from"] == "src/moved.txt"),
            "{done}"
        );
        let again_before = snapshot(&fx.repo.file("src/again.txt"));
        let text = refused(&client, "delete", json!({"path": "src/again.txt"})).await;
        assert!(text.starts_with("PARTLY_SEEN: "), "{text}");
        assert_eq!(snapshot(&fx.repo.file("src/again.txt")), again_before);
        // A file seen whole moves seen whole: its destination may then be overwritten.
        ok(&client, "read", json!({"path": "src/a.txt"})).await;
        ok(&client, "change_set", whole(json!([
            {"op": "move", "path": "src/a.txt", "to": "src/b.txt"},
        ]))).await;
        ok(&client, "write", json!({"path": "src/b.txt", "content": "b\n"})).await;
        assert_eq!(std::fs::read(fx.repo.file("src/b.txt")).expect("read"), b"b\n");
        // Reading the rest of the moved file makes it whole again.
        ok(&client, "read", json!({"path": "src/again.txt"})).await;
        ok(&client, "read", json!({"path": "src/again.txt", "offset": 2001})).await;
        ok(&client, "delete", json!({"path": "src/again.txt"})).await;
        assert!(!fx.repo.file("src/again.txt").exists());
        client.cancel().await.expect("close");
    });
}

/// Every tool takes paths as agents write them — `./`, `.`, a trailing `/`, an absolute
/// path under the worktree — and echoes the canonical path; a path the rule does not cover
/// (`..`, another absolute path, `a/./b`) is refused by the strict rules as before, the
/// tree unchanged.
#[test]
fn every_tool_takes_paths_as_agents_write_them_and_nothing_more() {
    let fx = Fixture::new(&["src/*"]);
    let root = fx.repo.path().display().to_string();
    runtime().block_on(async {
        let client = connect(&fx).await;
        let page = ok(&client, "read", json!({"path": "./src/a.txt"})).await;
        assert_eq!(page["path"], "src/a.txt", "{page}");
        let page = ok(
            &client,
            "read",
            json!({"path": format!("{root}/src/a.txt")}),
        )
        .await;
        assert_eq!(page["path"], "src/a.txt", "{page}");
        for dir in [".", "./", root.as_str()] {
            let listed = ok(&client, "list", json!({"path": dir})).await;
            let names: Vec<&str> = listed["entries"]
                .as_array()
                .expect("entries")
                .iter()
                .map(|e| e["path"].as_str().expect("path"))
                .collect();
            assert_eq!(names, ["README.md", "src"], "{dir}: {listed}");
        }
        let listed = ok(&client, "list", json!({"path": "src/"})).await;
        assert_eq!(listed["entries"][0]["path"], "src/a.txt", "{listed}");
        let found = ok(
            &client,
            "search",
            json!({"query": "hello", "path": "./src/"}),
        )
        .await;
        assert_eq!(found["files"][0]["path"], "src/a.txt", "{found}");
        let edited = ok(
            &client,
            "edit",
            json!({"path": format!("{root}/src/a.txt"), "edits": replace_edit("world", "agents")}),
        )
        .await;
        assert_eq!(edited["path"], "src/a.txt", "{edited}");
        let written = ok(
            &client,
            "write",
            json!({"path": "./src/new.txt", "content": "n\n"}),
        )
        .await;
        assert_eq!(written["path"], "src/new.txt", "{written}");
        let before = crate::support::tree_state(fx.repo.path());
        for path in [
            "../README.md",
            "/etc/hostname",
            "src/./a.txt",
            "src/../README.md",
        ] {
            let strict = |text: &str| {
                text.starts_with("INVALID_REQUEST: path: ") || text.starts_with("PATH_")
            };
            let text = refused(&client, "read", json!({"path": path})).await;
            assert!(strict(&text), "{path}: {text}");
            let text = refused(&client, "write", json!({"path": path, "content": "x\n"})).await;
            assert!(strict(&text), "{path}: {text}");
        }
        assert_eq!(
            crate::support::tree_state(fx.repo.path()),
            before,
            "a refused path changed the tree"
        );
        let deleted = ok(
            &client,
            "delete",
            json!({"path": format!("{root}/src/new.txt")}),
        )
        .await;
        assert_eq!(deleted["path"], "src/new.txt", "{deleted}");
        assert!(!fx.repo.file("src/new.txt").exists());
        client.cancel().await.expect("close");
    });
}
