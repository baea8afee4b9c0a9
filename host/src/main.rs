//! `satyrn-host`: a thin binary over the `satyrn_host` library.
fn main() -> std::process::ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    std::process::ExitCode::from(satyrn_host::cli::run(&args))
}
