//! The two builds of the component the binary embeds (docs/architecture.md, "Two builds of
//! the component"): the full one, and one without `search` for the processes that never
//! search.

use crate::{COMPILED_COMPONENT, COMPILED_WITHOUT_SEARCH};

/// Which build of the component a [`Loaded`](crate::Loaded) runs. Both are built from the same source,
/// export the same WIT world and decide everything else identically.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    /// Every operation ([`COMPILED_COMPONENT`]): what [`Loaded::new`](crate::Loaded::new) loads.
    Full,
    /// Built without the `search` feature ([`COMPILED_WITHOUT_SEARCH`]), for a process
    /// that never searches (a one-shot `protocol` request of any other operation):
    /// `search`'s regular-expression engine and Unicode tables are most of the guest's
    /// data, which every instantiation copies. [`Mutator::search`](crate::Mutator::search) on it fails
    /// with an [`EngineError`](crate::EngineError) without calling the component (whose own `search` export refuses
    /// every request as invalid).
    WithoutSearch,
}

impl Build {
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
    use crate::test_support::worktree;
    use crate::{Loaded, ReadError, ReadRequest, ReplaceRequest, SearchRequest};

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
        let mut full = Loaded::of(Build::Full)
            .expect("load")
            .instantiate(&fd)
            .expect("instance");
        let page = full
            .search(&search(r"\p{Letter}+\n"))
            .expect("no engine failure")
            .expect("a page");
        assert_eq!(page.files.len(), 1);
        assert_eq!(page.files[0].matches, 2, "{page:?}");

        let mut without = Loaded::of(Build::WithoutSearch)
            .expect("load")
            .instantiate(&fd)
            .expect("instance");
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
        let mut without = Loaded::of(Build::WithoutSearch)
            .expect("load")
            .instantiate(&fd)
            .expect("instance");
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

    /// Every operation but `search` decides alike in both builds: the same revision, the
    /// same plan, the same refusal.
    #[test]
    fn both_builds_decide_the_same_replace_and_read() {
        let (_dir, fd) = worktree(&[("a.txt", b"one\ntwo\nthree\n")]);
        let answers = [Build::Full, Build::WithoutSearch].map(|build| {
            let mut mutator = Loaded::of(build)
                .expect("load")
                .instantiate(&fd)
                .expect("instance");
            let page = mutator
                .read(&read("a.txt"))
                .expect("no engine failure")
                .expect("a page");
            let replace = |expected: &str| ReplaceRequest {
                path: "a.txt".into(),
                writable_paths: vec!["*".into()],
                private_paths: Vec::new(),
                expected_sha256: Some(expected.into()),
                old_text: "two".into(),
                new_text: "2".into(),
            };
            let plan = mutator
                .replace(&replace(&page.sha256))
                .expect("no engine failure")
                .expect("a plan");
            let stale = mutator
                .replace(&replace(&"0".repeat(64)))
                .expect("no engine failure")
                .expect_err("stale");
            (
                page.sha256,
                plan.new_content,
                plan.next_sha256,
                format!("{stale:?}"),
            )
        });
        assert_eq!(answers[0], answers[1]);
        assert_eq!(answers[0].1, b"one\n2\nthree\n");
    }

    fn read(path: &str) -> ReadRequest {
        ReadRequest {
            path: path.into(),
            writable_paths: vec!["*".into()],
            private_paths: Vec::new(),
            offset: None,
            limit: None,
        }
    }
}
