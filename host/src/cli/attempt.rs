//! `satyrn-host attempt [--model MODEL | --model=MODEL] [--] CONTRACT`: one Pi attempt in the
//! current worktree (see [`crate::attempt`]). The model comes from `--model`, else
//! `SATYRN_MODEL`; neither, or a value Pi could read as an option, is a usage error (exit 2).
//! After `--` every argument is the contract, even one that starts with `-`.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::attempt::{self, pi};

/// Runs `attempt`.
#[must_use]
pub fn run(args: &[OsString]) -> u8 {
    let mut model: Option<String> = None;
    let mut contract: Option<PathBuf> = None;
    let mut iter = args.iter();
    let mut options_ended = false;
    while let Some(arg) = iter.next() {
        let inline = (!options_ended)
            .then(|| arg.to_str().and_then(|a| a.strip_prefix("--model=")))
            .flatten();
        if !options_ended && (arg == "--model" || inline.is_some()) {
            let value = match inline {
                Some(value) => Some(Some(value)),
                None => iter.next().map(|v| v.to_str()),
            };
            match value {
                Some(Some(value)) if model.is_none() => model = Some(value.to_string()),
                Some(None) => return super::usage_error("--model must be UTF-8"),
                Some(Some(_)) => return super::usage_error("--model given twice"),
                None => return super::usage_error("--model needs a value"),
            }
        } else if !options_ended && arg == "--" {
            options_ended = true;
        } else if !options_ended && arg.to_string_lossy().starts_with('-') {
            return super::usage_error(&format!("attempt: unknown option {arg:?}"));
        } else if contract.is_none() {
            contract = Some(PathBuf::from(arg));
        } else {
            return super::usage_error("attempt takes one CONTRACT");
        }
    }
    let Some(contract) = contract else {
        return super::usage_error("attempt needs CONTRACT");
    };
    let model = match model.or_else(|| std::env::var("SATYRN_MODEL").ok()) {
        Some(m) => m,
        None => {
            return super::usage_error(
                "attempt needs --model MODEL or SATYRN_MODEL (Pi's default model is never used)",
            );
        }
    };
    if pi::model_is_unsafe(&model) {
        return super::usage_error(&format!(
            "the model {model:?} could be read by pi as an option"
        ));
    }
    attempt::run(&attempt::Options { model, contract })
}
