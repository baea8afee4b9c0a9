//! `series emit kubernetes`: the Indexed Job is validated against Kubernetes' own `batch/v1`
//! Job schema (1.31, strict: no unknown field; `kubernetes-validate`, installed by
//! `scripts/setup.sh`), and its container's shell runs here as a pod would run it (its
//! environment, `JOB_COMPLETION_INDEX`), delivering to a real bare remote. No cluster runs
//! it in the test suite (`docs/delivery.md` says so). `series emit slurm` is run on a real
//! Slurm cluster in `tests/it/slurm.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::deliver_support::FixedRepo;
use crate::support::{git_ok, host_bin};

fn emit(args: &[&str]) -> std::process::Output {
    Command::new(host_bin())
        .args(["series", "emit"])
        .args(args)
        .output()
        .expect("series emit")
}

fn validator() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/k8s-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup.sh, which installs kubernetes-validate",
        python.display()
    );
    python
}

/// `kubernetes-validate --strict` against Kubernetes 1.31: `Ok` or its message.
fn validate(manifest: &Value) -> Result<(), String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("job.json");
    std::fs::write(&file, manifest.to_string()).expect("write");
    let out = Command::new(validator())
        .args(["-m", "kubernetes_validate", "--strict", "-k", "1.31.0"])
        .arg(&file)
        .output()
        .expect("kubernetes-validate");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() && text.contains("passed") {
        Ok(())
    } else {
        Err(text)
    }
}

/// The repository of contract `kube`, which declares `a.txt`.
fn kube_origin() -> FixedRepo {
    FixedRepo::with_files(&[
        ("a.txt", b"a\n"),
        ("task.yaml", b"id: kube\ntask: t\nwritable_paths: [a.txt]\n"),
    ])
}

/// A bare clone of `origin`: its directory (kept while the test runs), path and URL.
fn bare_clone(origin: &FixedRepo) -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let bare = dir.path().join("remote.git");
    git_ok(
        dir.path(),
        &[
            "clone",
            "-q",
            "--bare",
            &origin.path().to_string_lossy(),
            &bare.to_string_lossy(),
        ],
    );
    let url = bare.to_string_lossy().into_owned();
    (dir, bare, url)
}

/// The container's command of `manifest`'s pod, set up here as the kubelet would run it: its
/// environment, `JOB_COMPLETION_INDEX`, and `TMPDIR`.
fn pod_command(manifest: &Value, index: &str, tmp: &Path) -> Command {
    let container = &manifest["spec"]["template"]["spec"]["containers"][0];
    let argv: Vec<&str> = container["command"]
        .as_array()
        .expect("command")
        .iter()
        .chain(container["args"].as_array().expect("args"))
        .map(|v| v.as_str().expect("string"))
        .collect();
    let mut cmd = Command::new(argv[0]);
    cmd.args(&argv[1..])
        .env("JOB_COMPLETION_INDEX", index)
        .env("TMPDIR", tmp);
    for var in container["env"].as_array().expect("env") {
        cmd.env(
            var["name"].as_str().expect("name"),
            var["value"].as_str().expect("value"),
        );
    }
    cmd
}

#[test]
fn the_indexed_job_passes_the_batch_v1_schema_and_its_shell_delivers_as_a_pod_would() {
    let origin = kube_origin();
    let (_dir, bare, url) = bare_clone(&origin);
    let script = "printf '%s|%s\\n' \"$1\" \"$SATYRN_ATTEMPT_INDEX\" > a.txt";
    let out = emit(&[
        "kubernetes",
        "--id",
        "kube",
        "--repo-url",
        &url,
        "--contract",
        "task.yaml",
        "--attempts",
        "8",
        "--parallelism",
        "3",
        "--push",
        &url,
        "--timeout",
        "60",
        "--image",
        "registry.example/agent:1",
        "--host-bin",
        &host_bin().to_string_lossy(),
        "--",
        "sh",
        "-c",
        script,
        "sh",
        "it's \"quoted\" $HOME",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    validate(&manifest).expect("the emitted Job is a valid batch/v1 Job");
    let spec = &manifest["spec"];
    assert_eq!(manifest["kind"], "Job");
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 8);
    assert_eq!(spec["parallelism"], 3);
    assert_eq!(spec["backoffLimitPerIndex"], 1);
    let rules = spec["podFailurePolicy"]["rules"].as_array().expect("rules");
    assert!(
        rules
            .iter()
            .any(|r| r["action"] == "FailIndex"
                && r["onExitCodes"]["values"] == serde_json::json!([8])),
        "an outcome without a candidate is never retried: {rules:?}"
    );
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    // The validator refuses what Kubernetes refuses (the check can fail).
    let mut bad = manifest.clone();
    bad["spec"]["template"]["spec"]["containers"][0]["imagee"] = Value::from("x");
    assert!(validate(&bad).is_err(), "a misspelt field passed");
    let mut bad = manifest.clone();
    bad["spec"]["completions"] = Value::from("eight");
    assert!(validate(&bad).is_err(), "a string count passed");

    // The container's command, run here as the kubelet would: its env, the Job's index.
    let tmp = tempfile::tempdir().expect("tempdir");
    let done = pod_command(&manifest, "2", tmp.path())
        .output()
        .expect("the pod's shell");
    let receipt: Value = serde_json::from_slice(&done.stdout).expect("one receipt");
    assert_eq!(
        receipt["code"],
        "OK",
        "{receipt} {}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(
        receipt["attempt"]["index"], 3,
        "JOB_COMPLETION_INDEX 2 is attempt 3"
    );
    assert_eq!(receipt["published"]["pushed"], true);
    let blob = git_ok(
        &bare,
        &["show", "refs/satyrn/candidates/kube/003/head:a.txt"],
    );
    assert_eq!(
        blob, "it's \"quoted\" $HOME|3\n",
        "the command's words arrive exactly"
    );
    assert!(
        crate::support::dir_entries(tmp.path()).is_empty(),
        "the pod's directory is left"
    );
}

#[test]
fn emit_refuses_what_it_cannot_write_by_name() {
    let base = [
        "--id",
        "x",
        "--repo-url",
        "u",
        "--contract",
        "c.yaml",
        "--attempts",
        "2",
        "--push",
        "u",
    ];
    for (extra, named) in [
        (vec!["kubernetes", "--", "true"], "--image"),
        (
            vec!["slurm", "--attempts-bogus", "--", "true"],
            "--attempts-bogus",
        ),
    ] {
        let mut args: Vec<&str> = extra[..1].to_vec();
        args.extend_from_slice(&base);
        args.extend_from_slice(&extra[1..]);
        let out = emit(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(named),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for id in ["a/b", "a b", "", "a\nb"] {
        let out = emit(&[
            "slurm",
            "--id",
            id,
            "--repo-url",
            "u",
            "--contract",
            "c",
            "--attempts",
            "2",
            "--push",
            "u",
            "--",
            "true",
        ]);
        assert_eq!(out.status.code(), Some(2), "{id:?}");
        assert!(out.stdout.is_empty(), "{id:?}");
    }
    for attempts in ["0", "1000", "x"] {
        let out = emit(&[
            "slurm",
            "--id",
            "x",
            "--repo-url",
            "u",
            "--contract",
            "c",
            "--attempts",
            attempts,
            "--push",
            "u",
            "--",
            "true",
        ]);
        assert_eq!(out.status.code(), Some(2), "{attempts}");
    }
    // Sibling: the same arguments, well formed, print a script the shell parses.
    let out = emit(&[
        "slurm",
        "--id",
        "x",
        "--repo-url",
        "u",
        "--contract",
        "c",
        "--attempts",
        "2",
        "--push",
        "u",
        "--",
        "true",
    ]);
    assert!(out.status.success());
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("job.sh");
    std::fs::write(&file, &out.stdout).expect("write");
    assert!(
        Command::new("sh")
            .arg("-n")
            .arg(&file)
            .status()
            .expect("sh")
            .success()
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(
        text.contains("#SBATCH --array=1-2\n") && text.contains("#SBATCH --requeue\n"),
        "{text}"
    );
}

/// A kubelet signals only the container's first process, the shell: the shell passes
/// `SIGTERM` on to `deliver`, which stops the command, cleans up and pushes nothing, so the
/// retried pod can run the index. `--rev` may name a tag.
#[test]
fn the_pods_shell_passes_a_termination_on_to_deliver_and_takes_a_tag_for_rev() {
    let origin = kube_origin();
    git_ok(&origin.path(), &["tag", "v1"]);
    std::fs::write(origin.path().join("a.txt"), "moved on\n").expect("write");
    git_ok(&origin.path(), &["commit", "-qam", "after the tag"]);
    let (_dir, bare, url) = bare_clone(&origin);
    let marks = tempfile::tempdir().expect("tempdir");
    let script = format!(
        "if [ \"$SATYRN_ATTEMPT_INDEX\" = 1 ]; then touch '{}/started'; sleep 60; fi; echo tagged >> a.txt",
        marks.path().display()
    );
    let out = emit(&[
        "kubernetes",
        "--id",
        "kube",
        "--repo-url",
        &url,
        "--rev",
        "v1",
        "--contract",
        "task.yaml",
        "--attempts",
        "2",
        "--push",
        &url,
        "--image",
        "i",
        "--host-bin",
        &host_bin().to_string_lossy(),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert!(out.status.success());
    let manifest: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let pod = |index: &str, tmp: &Path| {
        let mut cmd = pod_command(&manifest, index, tmp);
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let shell = pod("0", tmp.path()).spawn().expect("the pod's shell");
    assert!(
        crate::deliver_support::poll_until(std::time::Duration::from_secs(30), || marks
            .path()
            .join("started")
            .exists()),
        "the command never started"
    );
    // SIGTERM to the shell alone, as a kubelet sends it.
    let pid = rustix::process::Pid::from_child(&shell);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    let done = shell.wait_with_output().expect("wait");
    let receipt: Value = serde_json::from_slice(&done.stdout).expect("one receipt");
    assert_eq!(receipt["code"], "INTERRUPTED", "{receipt}");
    assert!(receipt.get("published").is_none(), "{receipt}");
    assert!(
        git_ok(&bare, &["for-each-ref", "refs/satyrn"]).is_empty(),
        "an interrupted pod left a ref"
    );
    assert!(
        crate::support::dir_entries(tmp.path()).is_empty(),
        "the clone is left"
    );
    // The other index runs on the tag's commit.
    let done = pod("1", tmp.path()).output().expect("the pod's shell");
    let receipt: Value = serde_json::from_slice(&done.stdout).expect("one receipt");
    assert_eq!(
        receipt["code"],
        "OK",
        "{receipt} {}",
        String::from_utf8_lossy(&done.stderr)
    );
    let tagged = git_ok(&bare, &["rev-parse", "v1^{commit}"]);
    assert_eq!(
        receipt["base_commit"].as_str(),
        Some(tagged.trim()),
        "the tag's commit is the base"
    );
    let blob = git_ok(
        &bare,
        &["show", "refs/satyrn/candidates/kube/002/head:a.txt"],
    );
    assert_eq!(blob, "a\ntagged\n", "the index ran on the tag's tree");
}
