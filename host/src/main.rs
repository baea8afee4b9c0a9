//! `satyrn-host`: a thin binary over the satyrn crates.
mod cli;

fn main() -> std::process::ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    std::process::ExitCode::from(crate::cli::run(&args))
}
