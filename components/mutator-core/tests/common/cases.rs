//! The property tests' case counts: each test's own default, unless `PROPTEST_CASES` is set,
//! which then sets every test's count (as proptest's own default does).

use proptest::test_runner::Config;

/// proptest's configuration with `default` cases, or `PROPTEST_CASES` when it is set.
#[must_use]
pub fn config(default: u32) -> Config {
    let base = Config::default();
    if std::env::var_os("PROPTEST_CASES").is_some() {
        base
    } else {
        Config {
            cases: default,
            ..base
        }
    }
}
