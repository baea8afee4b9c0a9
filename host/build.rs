//! Relinks `satyrn-host` when what its release link reads changes: the hot-function list and
//! the linker wrapper that reads it (scripts/build-release.sh, scripts/link-hot-first.sh).
//! Cargo tracks neither on its own.
fn main() {
    println!("cargo:rerun-if-changed=hot-functions.txt");
    println!("cargo:rerun-if-changed=../scripts/link-hot-first.sh");
}
