//! What the target is on disk: symlinks anywhere, escapes, hard links, FIFOs,
//! directories, missing and non-UTF-8 files; what a success preserves (mode, bytes
//! outside the span, literal replacement); and a real write failure during publish.

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::os::unix::process::CommandExt;
use std::time::Duration;

use crate::protocol_common::{
    Fixture, assert_invalid, assert_ok, assert_refused, mode_of, protocol_timeout, temporaries,
};
use crate::support::{dir_entries, protocol, sha256_hex, snapshot};

const HELLO: &[u8] = b"hello world\n";
const THERE: &[u8] = b"hello there\n";

#[test]
fn symlinked_leaf_is_refused_target_is_editable() {
    let fx = Fixture::new(&[("real.txt", HELLO)], &["*.txt"]);
    symlink("real.txt", fx.file("link.txt")).expect("symlink");
    let request = fx.request("link.txt", Some(&sha256_hex(HELLO)), "world", "there");
    fx.refuse(
        &request,
        "MUTATION_FAILED",
        &["real.txt", "link.txt"],
        &[""],
    );
    assert!(
        fx.file("link.txt").is_symlink(),
        "the symlink is still a symlink"
    );
    fx.succeed(&fx.fresh("real.txt", "world", "there"), "real.txt", THERE);
}

#[test]
fn symlinked_intermediate_directory_is_refused() {
    let fx = Fixture::new(&[("real/a.txt", HELLO)], &["*"]);
    symlink("real", fx.file("alias")).expect("symlink");
    let request = fx.request("alias/a.txt", Some(&sha256_hex(HELLO)), "world", "there");
    fx.refuse(
        &request,
        "MUTATION_FAILED",
        &["real/a.txt", "alias"],
        &["", "real"],
    );
    // A deeper chain: a symlink in the middle of three segments.
    std::fs::create_dir_all(fx.file("top/real2")).expect("mkdir");
    std::fs::write(fx.file("top/real2/b.txt"), HELLO).expect("write");
    symlink("real2", fx.file("top/mid")).expect("symlink");
    let request = fx.request("top/mid/b.txt", Some(&sha256_hex(HELLO)), "world", "there");
    fx.refuse(
        &request,
        "MUTATION_FAILED",
        &["top/real2/b.txt"],
        &["top", "top/real2"],
    );
    fx.succeed(
        &fx.fresh("real/a.txt", "world", "there"),
        "real/a.txt",
        THERE,
    );
    fx.succeed(
        &fx.fresh("top/real2/b.txt", "world", "there"),
        "top/real2/b.txt",
        THERE,
    );
}

#[test]
fn in_tree_alias_of_an_undeclared_file_is_refused() {
    let fx = Fixture::new(
        &[("secret.txt", b"token = world\n"), ("ok.txt", HELLO)],
        &["public.txt", "ok.txt"],
    );
    symlink("secret.txt", fx.file("public.txt")).expect("symlink");
    // The caller even knows the secret's revision: still refused, since the declared
    // path is only an alias.
    let request = fx.request(
        "public.txt",
        Some(&sha256_hex(b"token = world\n")),
        "world",
        "there",
    );
    fx.refuse(
        &request,
        "MUTATION_FAILED",
        &["secret.txt", "public.txt"],
        &[""],
    );
    // The target itself is undeclared.
    fx.refuse(
        &fx.fresh("secret.txt", "world", "there"),
        "PATH_UNDECLARED",
        &["secret.txt"],
        &[""],
    );
    fx.succeed(&fx.fresh("ok.txt", "world", "there"), "ok.txt", THERE);
}

#[test]
fn escaping_symlinks_are_refused_and_outside_is_untouched() {
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("victim.txt"), HELLO).expect("write");
    let fx = Fixture::new(&[("ok.txt", HELLO)], &["*"]);
    symlink(outside.path().join("victim.txt"), fx.file("abs.txt")).expect("symlink");
    symlink(outside.path(), fx.file("outdir")).expect("symlink");
    let rel_target = format!(
        "../{}/victim.txt",
        outside.path().file_name().expect("name").to_string_lossy()
    );
    symlink(&rel_target, fx.file("rel.txt")).expect("symlink");
    // Each link really does lead outside (both temporary directories share a parent).
    for link in ["abs.txt", "outdir/victim.txt", "rel.txt"] {
        assert_eq!(std::fs::read(fx.file(link)).expect("read through"), HELLO);
    }
    let victim = outside.path().join("victim.txt");
    let before = snapshot(&victim);
    let sha = sha256_hex(HELLO);
    for path in ["abs.txt", "outdir/victim.txt", "rel.txt"] {
        fx.refuse(
            &fx.request(path, Some(&sha), "world", "there"),
            "MUTATION_FAILED",
            &["abs.txt", "outdir", "rel.txt"],
            &[""],
        );
        assert_eq!(snapshot(&victim), before, "{path} reached outside");
        assert_eq!(dir_entries(outside.path()), ["victim.txt"]);
    }
    fx.succeed(&fx.fresh("ok.txt", "world", "there"), "ok.txt", THERE);
}

#[test]
fn parent_and_absolute_paths_are_invalid_requests() {
    let fx = Fixture::new(&[("a.txt", HELLO), ("sub/b.txt", HELLO)], &["*"]);
    let repo_name = fx
        .repo
        .path()
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let absolute = fx.file("a.txt").to_string_lossy().into_owned();
    let sha = sha256_hex(HELLO);
    // Each of these would name an existing file if it were resolved.
    for path in [
        "sub/../a.txt".to_string(),
        format!("../{repo_name}/a.txt"),
        absolute,
        "..".to_string(),
    ] {
        let before = (snapshot(&fx.file("a.txt")), snapshot(&fx.file("sub/b.txt")));
        let run = protocol(&fx.request(&path, Some(&sha), "world", "there"));
        assert_invalid(&run);
        assert_eq!(
            (snapshot(&fx.file("a.txt")), snapshot(&fx.file("sub/b.txt"))),
            before,
            "{path}"
        );
    }
    fx.succeed(&fx.fresh("a.txt", "world", "there"), "a.txt", THERE);
}

/// Decision (docs): a file with more than one hard link aliases another path, possibly
/// an undeclared one, so it is refused as `MUTATION_FAILED`.
#[test]
fn hard_linked_file_is_refused_until_unlinked() {
    let fx = Fixture::new(&[("a.txt", HELLO)], &["a.txt"]);
    std::fs::hard_link(fx.file("a.txt"), fx.file("undeclared.txt")).expect("link");
    assert_eq!(snapshot(&fx.file("a.txt")).nlink, 2);
    let run = fx.refuse(
        &fx.fresh("a.txt", "world", "there"),
        "MUTATION_FAILED",
        &["a.txt", "undeclared.txt"],
        &[""],
    );
    assert!(
        run.response["message"]
            .as_str()
            .expect("message")
            .contains("hard link"),
        "{run:?}"
    );
    std::fs::remove_file(fx.file("undeclared.txt")).expect("unlink");
    fx.succeed(&fx.fresh("a.txt", "world", "there"), "a.txt", THERE);
}

#[test]
fn fifo_is_refused_without_hanging() {
    let fx = Fixture::new(&[("ok.txt", HELLO)], &["*"]);
    let fifo = fx.file("pipe.txt");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("cstring");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
    let before = snapshot(&fifo);
    let entries = dir_entries(fx.repo.path());
    let request = fx.request("pipe.txt", Some(&sha256_hex(b"")), "a", "b");
    let run = protocol_timeout(
        request.to_string().as_bytes(),
        Duration::from_secs(10),
        |_| {},
    );
    assert_refused(&run, "MUTATION_FAILED");
    assert_eq!(snapshot(&fifo), before);
    assert_eq!(dir_entries(fx.repo.path()), entries);
    fx.succeed(&fx.fresh("ok.txt", "world", "there"), "ok.txt", THERE);
}

#[test]
fn directory_is_refused() {
    let fx = Fixture::new(&[("d/inner.txt", HELLO)], &["*"]);
    fx.refuse(
        &fx.request("d", Some(&sha256_hex(b"")), "a", "b"),
        "MUTATION_FAILED",
        &["d", "d/inner.txt"],
        &["", "d"],
    );
    // A file used as a directory.
    fx.refuse(
        &fx.request("d/inner.txt/x", Some(&sha256_hex(b"")), "a", "b"),
        "MUTATION_FAILED",
        &["d/inner.txt"],
        &["", "d"],
    );
    fx.succeed(
        &fx.fresh("d/inner.txt", "world", "there"),
        "d/inner.txt",
        THERE,
    );
}

#[test]
fn missing_file_and_missing_directory_are_refused() {
    let fx = Fixture::new(&[("a.txt", HELLO)], &["*"]);
    for path in ["missing.txt", "nodir/missing.txt"] {
        fx.refuse(
            &fx.request(path, Some(&sha256_hex(b"")), "a", "b"),
            "MUTATION_FAILED",
            &["a.txt"],
            &[""],
        );
    }
    assert!(!fx.file("missing.txt").exists() && !fx.file("nodir").exists());
    fx.succeed(&fx.fresh("a.txt", "world", "there"), "a.txt", THERE);
}

#[test]
fn non_utf8_target_is_refused() {
    let bad: &[u8] = b"hello world \xff\xfe\n";
    let fx = Fixture::new(&[("bad.txt", bad), ("good.txt", HELLO)], &["*.txt"]);
    fx.refuse(
        &fx.fresh("bad.txt", "world", "there"),
        "MUTATION_FAILED",
        &["bad.txt", "good.txt"],
        &[""],
    );
    fx.succeed(&fx.fresh("good.txt", "world", "there"), "good.txt", THERE);
}

#[test]
fn mode_is_preserved_and_the_file_is_replaced_by_rename() {
    let fx = Fixture::new(&[("run.sh", b"#!/bin/sh\necho world\n")], &["*.sh"]);
    let path = fx.file("run.sh");
    let steps: [(u32, &str, &str, &[u8]); 2] = [
        (0o755, "world", "x", b"#!/bin/sh\necho x\n"),
        (0o640, "x", "there", b"#!/bin/sh\necho there\n"),
    ];
    for (mode, old, new, expected) in steps {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let before = snapshot(&path);
        fx.succeed(&fx.fresh("run.sh", old, new), "run.sh", expected);
        let after = snapshot(&path);
        assert_eq!(after.mode, before.mode, "mode {mode:o} preserved");
        assert_eq!(after.mode & 0o7777, mode);
        assert_ne!(after.ino, before.ino, "published by rename: a new inode");
        assert_eq!(after.nlink, 1);
    }
}

#[test]
fn set_id_bits_are_dropped_by_an_edit_like_any_write_drops_them() {
    let fx = Fixture::new(&[("tool.sh", b"echo world\n")], &["*.sh"]);
    let path = fx.file("tool.sh");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o6755)).expect("chmod");
    fx.succeed(
        &fx.fresh("tool.sh", "world", "there"),
        "tool.sh",
        b"echo there\n",
    );
    assert_eq!(
        snapshot(&path).mode & 0o7777,
        0o755,
        "setuid/setgid removed"
    );
    // The sticky bit and the permission bits are kept.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o1700)).expect("chmod");
    fx.succeed(
        &fx.fresh("tool.sh", "there", "again"),
        "tool.sh",
        b"echo again\n",
    );
    assert_eq!(snapshot(&path).mode & 0o7777, 0o1700);
}

#[test]
fn a_terminating_signal_mid_publish_never_leaves_a_temporary_or_a_torn_file() {
    // SIGTERM at many points of a large edit: the process may die before or after the
    // rename, but the temporary is always gone and the file is the old or the new bytes.
    let mut old: Vec<u8> = b"HEADER\n".to_vec();
    old.extend(b"0123456789abcdef".repeat(512 * 1024));
    let mut new = old.clone();
    new.splice(0..6, b"HEADXX".iter().copied());
    let fx = Fixture::new(&[("big.txt", &old)], &["*.txt"]);
    let path = fx.file("big.txt");
    // The publish (temporary written, fsynced, renamed) is the last part of a run: time an
    // undisturbed run, then send SIGTERM at points spread over its second half.
    let request = fx.request(
        "big.txt",
        Some(&crate::support::sha256_hex(&old)),
        "HEADER",
        "HEADXX",
    );
    let started = std::time::Instant::now();
    crate::support::protocol(&request);
    let whole = started.elapsed();
    let mut outcomes = std::collections::BTreeSet::new();
    const ROUNDS: u32 = 40;
    for round in 0..ROUNDS {
        std::fs::write(&path, &old).expect("reset");
        let mut child = std::process::Command::new(crate::support::host_bin())
            .arg("protocol")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("stdin");
            stdin
                .write_all(request.to_string().as_bytes())
                .expect("write");
        }
        std::thread::sleep(whole / 2 + whole * round / (2 * ROUNDS));
        // SAFETY: kill(2) on our own child.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let status = child.wait().expect("wait");
        outcomes.insert(status.code() == Some(0));
        let bytes = std::fs::read(&path).expect("read");
        assert!(bytes == old || bytes == new, "round {round}: torn file");
        assert_eq!(
            temporaries(fx.repo.path()),
            Vec::<String>::new(),
            "round {round}: temporary left"
        );
    }
    assert!(
        outcomes.contains(&false),
        "no round was interrupted: the test proves nothing"
    );
    // Sibling: undisturbed, the same edit lands.
    std::fs::write(&path, &old).expect("reset");
    fx.succeed(&fx.fresh("big.txt", "HEADER", "HEADXX"), "big.txt", &new);
}

#[test]
fn replacement_is_literal() {
    let fx = Fixture::new(&[("a.txt", b"x = a.*b;\n")], &["a.txt"]);
    let new_text = "$1 \\0 & ${1} \\1 $& $$ \\n";
    let expected = format!("x = {new_text};\n");
    // The anchor is literal too: `a.*b` is not a pattern.
    fx.succeed(
        &fx.fresh("a.txt", "a.*b", new_text),
        "a.txt",
        expected.as_bytes(),
    );
    // And a NUL character in the replacement is kept as a byte.
    let with_nul = "\0";
    let expected2 = expected.replace("$&", "\0");
    fx.succeed(
        &fx.fresh("a.txt", "$&", with_nul),
        "a.txt",
        expected2.as_bytes(),
    );
}

#[test]
fn empty_new_text_deletes_the_anchor() {
    let fx = Fixture::new(&[("a.txt", b"keep DELETE-ME keep\n")], &["a.txt"]);
    fx.succeed(
        &fx.fresh("a.txt", "DELETE-ME ", ""),
        "a.txt",
        b"keep keep\n",
    );
    // Deleting everything leaves an empty file, not a missing one.
    fx.succeed(&fx.fresh("a.txt", "keep keep\n", ""), "a.txt", b"");
    assert_eq!(std::fs::metadata(fx.file("a.txt")).expect("stat").len(), 0);
}

#[test]
fn crlf_and_bytes_outside_the_span_are_preserved() {
    let original: &[u8] = b"line1\r\nhello world\r\n\tmixed\nend \xc3\xa9\r\n\r\n  ";
    let fx = Fixture::new(&[("a.txt", original)], &["a.txt"]);
    let run = fx.succeed(
        &fx.fresh("a.txt", "world\r\n\tmixed", "there\n\tMIXED"),
        "a.txt",
        b"line1\r\nhello there\n\tMIXED\nend \xc3\xa9\r\n\r\n  ",
    );
    assert_ok(
        &run,
        "a.txt",
        b"line1\r\nhello there\n\tMIXED\nend \xc3\xa9\r\n\r\n  ",
    );
    // No trailing newline is added, no whitespace normalized.
    let bytes = std::fs::read(fx.file("a.txt")).expect("read");
    assert!(bytes.ends_with(b"\r\n\r\n  "));
}

/// Sets `RLIMIT_FSIZE` to `limit` bytes in the child, as `prlimit --fsize` does, leaving
/// `SIGXFSZ` at its default (which kills the process): satyrn itself must turn the limit
/// into a failed write.
fn limit_file_size(cmd: &mut std::process::Command, limit: u64) {
    // SAFETY: only async-signal-safe calls (signal, setrlimit) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::signal(libc::SIGXFSZ, libc::SIG_DFL) == libc::SIG_ERR {
                return Err(std::io::Error::last_os_error());
            }
            let rl = libc::rlimit {
                rlim_cur: limit as libc::rlim_t,
                rlim_max: limit as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &rl) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A file-size limit (`RLIMIT_FSIZE`) below the new content is a failed publish, not a
/// death by `SIGXFSZ`: `MUTATION_FAILED` naming `EFBIG`, the file unchanged (bytes, mode,
/// inode), no temporary — with the anonymous temporary and with the named fallback.
#[test]
fn failed_publish_removes_the_temporary_and_keeps_the_file() {
    for named in [false, true] {
        let mut big = Vec::new();
        for i in 0..131_072 {
            big.extend_from_slice(format!("line {i:05} of a file that is large\n").as_bytes());
        }
        big.extend_from_slice(b"ANCHOR\n");
        let fx = Fixture::new(&[("dir/big.txt", &big)], &["dir/*"]);
        let limit = 1024 * 1024;
        assert!(big.len() as u64 > 2 * limit);
        let path = fx.file("dir/big.txt");
        let before = snapshot(&path);
        let entries = dir_entries(&fx.file("dir"));
        let request = fx.fresh("dir/big.txt", "ANCHOR", "CHANGED");
        let run = protocol_timeout(
            request.to_string().as_bytes(),
            Duration::from_secs(30),
            |cmd| {
                limit_file_size(cmd, limit);
                if named {
                    cmd.env("SATYRN_TEST_PUBLISH_FALLBACK", "1");
                }
            },
        );
        assert_refused(&run, "MUTATION_FAILED");
        let message = run.response["message"].as_str().expect("message");
        assert!(message.contains("writing the temporary"), "{message}");
        assert!(message.contains("File too large"), "{message}");
        assert!(!message.contains("could not be removed"), "{message}");
        assert_eq!(snapshot(&path), before, "the file is unchanged");
        assert!(
            temporaries(&fx.file("dir")).is_empty(),
            "temporary left behind"
        );
        assert_eq!(dir_entries(&fx.file("dir")), entries);
        // Sibling: the same request without the limit succeeds.
        let mut expected = big.clone();
        let at = expected.len() - "ANCHOR\n".len();
        expected.truncate(at);
        expected.extend_from_slice(b"CHANGED\n");
        fx.succeed(&request, "dir/big.txt", &expected);
        assert!(temporaries(&fx.file("dir")).is_empty());
        assert_eq!(mode_of(&path) & 0o777, before.mode & 0o777);
        assert_ne!(std::fs::metadata(&path).expect("stat").ino(), before.ino);
    }
}

#[test]
fn unusual_but_valid_names_are_editable() {
    let long = format!("{}.txt", "n".repeat(250));
    assert_eq!(long.len(), 254);
    let long_utf8 = format!("{}.txt", "é".repeat(125));
    assert_eq!(long_utf8.len(), 254);
    let names = [
        long.as_str(),
        long_utf8.as_str(),
        "with space/ünïcødé name.txt",
        "a[1].txt",
        "*",
        "-dash",
        "line\nbreak.txt",
        ".hidden",
        "..dots",
    ];
    let files: Vec<(&str, &[u8])> = names.iter().map(|n| (*n, HELLO)).collect();
    let fx = Fixture::new(&files, &["*"]);
    for name in names {
        fx.succeed(&fx.fresh(name, "world", "there"), name, THERE);
        let dir = fx.file(name).parent().expect("parent").to_path_buf();
        assert!(temporaries(&dir).is_empty(), "{name}");
    }
    // Bracket and star names are matched by fnmatch rules, literally when escaped in a set.
    let strict = Fixture::new(&[("a[1].txt", HELLO), ("a1.txt", HELLO)], &["a[[]1].txt"]);
    strict.succeed(
        &strict.fresh("a[1].txt", "world", "there"),
        "a[1].txt",
        THERE,
    );
    strict.refuse(
        &strict.fresh("a1.txt", "world", "there"),
        "PATH_UNDECLARED",
        &["a1.txt"],
        &[""],
    );
}

/// A file-size limit smaller than the engine would once write to a memory-image memfd
/// (64 KiB): the request is still answered — a small edit is `OK`, a write over the limit
/// is `MUTATION_FAILED` naming `EFBIG` with the file unchanged and no temporary — never a
/// death by `SIGXFSZ` before the request is read.
#[test]
fn a_small_file_size_limit_never_kills_protocol_before_it_answers() {
    let fx = Fixture::new(&[("dir/a.txt", b"hello world\n")], &["dir/*"]);
    let limit = 64 * 1024;
    let run = protocol_timeout(
        fx.fresh("dir/a.txt", "world", "there")
            .to_string()
            .as_bytes(),
        Duration::from_secs(30),
        |cmd| limit_file_size(cmd, limit),
    );
    assert_ok(&run, "dir/a.txt", b"hello there\n");
    let path = fx.file("dir/a.txt");
    let before = snapshot(&path);
    let request = serde_json::json!({
        "version": 1, "operation": "write",
        "repo": fx.repo.path(), "contract": fx.contract.path,
        "path": "dir/a.txt", "expected_sha256": sha256_hex(b"hello there\n"),
        "content": "x".repeat(2 * 64 * 1024),
    });
    let run = protocol_timeout(
        request.to_string().as_bytes(),
        Duration::from_secs(30),
        |cmd| limit_file_size(cmd, limit),
    );
    assert_refused(&run, "MUTATION_FAILED");
    assert!(
        run.response["message"]
            .as_str()
            .expect("message")
            .contains("File too large"),
        "{run:?}"
    );
    assert_eq!(snapshot(&path), before);
    assert!(temporaries(&fx.file("dir")).is_empty());
}
