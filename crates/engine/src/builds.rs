//! The two builds of the component the binary embeds (docs/architecture.md, "Two builds of
//! the component"): the full one, and one without `search` for the processes that never
//! search.

use crate::{COMPILED_COMPONENT, COMPILED_WITHOUT_SEARCH};

/// Which build of the component a [`Loaded`](crate::Loaded) runs. Both are built from the
/// same source, export the same WIT world and decide everything else identically.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    /// Every operation ([`COMPILED_COMPONENT`]): what
    /// [`Loaded::new`](crate::Loaded::new) loads.
    Full,
    /// Built without the `search` feature ([`COMPILED_WITHOUT_SEARCH`]), for a process
    /// that never searches (a one-shot `protocol` request of any other operation):
    /// `search`'s regular-expression engine and Unicode tables are most of the guest's
    /// data, which every instantiation copies. [`Mutator::search`](crate::Mutator::search)
    /// on it fails with an [`EngineError`](crate::EngineError) without calling the
    /// component (whose own `search` export refuses every request as invalid).
    WithoutSearch,
}

impl Build {
    /// The name the engine's errors give this build.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Full => "the component",
            Self::WithoutSearch => "the component built without search",
        }
    }

    /// The precompiled artifact of this build, embedded in the binary.
    pub(crate) fn artifact(self) -> &'static [u8] {
        match self {
            Self::Full => COMPILED_COMPONENT,
            Self::WithoutSearch => COMPILED_WITHOUT_SEARCH,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Build;
    use crate::test_support::{instance, read, worktree};
    use crate::{
        DeleteRequest, EditOp, EditRequest, ListRequest, ReadError, ReplaceEdit, ReplaceRequest,
        SearchRequest, WriteRequest,
    };

    fn search(query: &str) -> SearchRequest {
        SearchRequest {
            path: None,
            query: query.into(),
            regex: true,
            ignore_case: false,
            glob: None,
            context: None,
            max_matches: None,
            cursor: None,
            writable_paths: vec!["*".into()],
            private_paths: Vec::new(),
        }
    }

    #[test]
    fn search_runs_in_the_full_build_and_is_refused_by_name_without_it() {
        let (_dir, fd) = worktree(&[("a.txt", "alpha\n\u{e9}t\u{e9}\n".as_bytes())]);
        let mut full = instance(Build::Full, &fd);
        let page = full
            .search(&search(r"\p{Letter}+\n"))
            .expect("no engine failure")
            .expect("a page");
        assert_eq!(page.files.len(), 1);
        assert_eq!(page.files[0].matches, 2, "{page:?}");

        let mut without = instance(Build::WithoutSearch, &fd);
        let refused = without
            .search(&search(r"\p{Letter}+\n"))
            .expect_err("no search in this build");
        assert!(refused.to_string().contains("Build::Full"), "{refused}");
        // The host did not call the component, so the instance is as good as new.
        let page = without
            .read(&read("a.txt"))
            .expect("no engine failure")
            .expect("a page");
        assert_eq!(page.text, "alpha\n\u{e9}t\u{e9}\n");
    }

    /// What another WASI host would get, or this one without its guard: the component's
    /// own `search` export refuses every request as invalid, by name.
    #[test]
    fn the_component_without_search_refuses_a_search_it_is_called_for() {
        let (_dir, fd) = worktree(&[("a.txt", b"alpha\n")]);
        let mut without = instance(Build::WithoutSearch, &fd);
        let request = search("alpha");
        let answer = without
            .call("search", |guest, store| guest.call_search(store, &request))
            .expect("no trap");
        match answer {
            Err(ReadError::InvalidRequest(message)) => {
                assert!(
                    message.contains("without the `search` feature"),
                    "{message}"
                );
            }
            other => panic!("expected the build's refusal, got {other:?}"),
        }
    }

    /// Every operation but `search` decides alike in both builds: the same pages, plans and
    /// refusals, each success beside a refusal.
    #[test]
    fn both_builds_decide_every_other_operation_alike() {
        let (_dir, fd) = worktree(&[("a.txt", b"one\ntwo\nthree\ntwo\n"), ("b.txt", b"bee\n")]);
        let writable = || vec!["*.txt".to_string()];
        let answers = [Build::Full, Build::WithoutSearch].map(|build| {
            let mut m = instance(build, &fd);
            let page = m.read(&read("a.txt")).expect("no engine failure");
            let sha = page.as_ref().expect("a page").sha256.clone();
            let replace = |expected: &str, old: &str| ReplaceRequest {
                path: "a.txt".into(),
                writable_paths: writable(),
                private_paths: Vec::new(),
                expected_sha256: Some(expected.into()),
                old_text: old.into(),
                new_text: "2".into(),
            };
            let edit = |old: &str, occurrence| EditRequest {
                path: "a.txt".into(),
                writable_paths: writable(),
                private_paths: Vec::new(),
                expected_sha256: Some(sha.clone()),
                edits: vec![EditOp::Replace(ReplaceEdit {
                    old_text: old.into(),
                    new_text: "2".into(),
                    occurrence,
                })],
            };
            let list = ListRequest {
                path: None,
                pattern: None,
                recursive: true,
                cursor: None,
                limit: None,
                writable_paths: writable(),
                private_paths: Vec::new(),
            };
            let write = |path: &str| WriteRequest {
                path: path.into(),
                writable_paths: writable(),
                private_paths: Vec::new(),
                expected_sha256: None,
                content: "new\n".into(),
            };
            let delete = |expected: Option<String>| DeleteRequest {
                path: "b.txt".into(),
                writable_paths: writable(),
                private_paths: Vec::new(),
                expected_sha256: expected,
            };
            let bee = m
                .revision("b.txt", &writable(), &[])
                .expect("no engine failure");
            vec![
                format!("{page:?}"),
                format!("{:?}", m.replace(&replace(&sha, "three"))),
                format!("{:?}", m.replace(&replace(&sha, "two"))),
                format!("{:?}", m.replace(&replace(&"0".repeat(64), "three"))),
                format!("{:?}", m.edit(&edit("two", Some(2)))),
                format!("{:?}", m.edit(&edit("two", None))),
                format!("{:?}", m.list(&list)),
                format!("{:?}", m.write(&write("c.txt"))),
                format!("{:?}", m.write(&write("b.txt"))),
                format!("{:?}", m.delete_file(&delete(bee.ok()))),
                format!("{:?}", m.delete_file(&delete(None))),
            ]
        });
        assert_eq!(answers[0], answers[1]);
        for (answer, expected) in answers[0].iter().zip([
            "Ok(ReadPage",
            "Ok(Ok(Plan",
            "AnchorAmbiguous",
            "RevisionStale",
            "Ok(Ok(EditPlan",
            "Ok(Err(",
            "Ok(Ok(ListPage",
            "Ok(Ok(WritePlan::Create(",
            "TargetExists",
            "Ok(Ok(DeletePlan",
            "RevisionUnavailable",
        ]) {
            assert!(answer.contains(expected), "{expected}: {answer}");
        }
    }

    /// `component export` hands other WASI hosts `COMPONENT_WASM`; it, and the artifact
    /// [`Build::Full`] runs, are the build with `search`, and only the other one carries
    /// the refusal of a build without it.
    #[test]
    fn each_artifact_is_the_build_it_is_named() {
        let refusal: &[u8] = b"built without the `search` feature";
        let holds = |bytes: &[u8]| bytes.windows(refusal.len()).any(|w| w == refusal);
        assert!(!holds(crate::COMPONENT_WASM));
        assert!(!holds(Build::Full.artifact()));
        assert!(holds(Build::WithoutSearch.artifact()));
    }
}
