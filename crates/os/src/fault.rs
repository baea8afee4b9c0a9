//! Fault points: the test-only way to reach the panic path of a debug build.

/// Panics when `SATYRN_TEST_PANIC` names `point`: the test-only way to reach the panic
/// path, since no input makes satyrn panic. Compiled into debug builds only; a release
/// build never reads the variable. Points: `publish` (with the temporary written, before
/// the rename), `check` (the contract and repository check that every protocol
/// operation and the `check` subcommand start with), `deliver`, `attempt`, `component`.
#[track_caller]
pub fn trigger(point: &str) {
    #[cfg(debug_assertions)]
    if std::env::var_os("SATYRN_TEST_PANIC").is_some_and(|v| v == point) {
        panic!("SATYRN_TEST_PANIC={point}");
    }
    #[cfg(not(debug_assertions))]
    let _ = point;
}
