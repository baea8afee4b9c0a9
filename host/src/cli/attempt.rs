//! `satyrn-host attempt [--model MODEL | --model=MODEL] [--] CONTRACT`: one Pi attempt in the
//! current worktree (see [`crate::attempt`]). The model comes from `--model`, else
//! `SATYRN_MODEL`; neither, or a value Pi could read as an option, is a usage error (exit 2).
//! After `--` every argument is the contract, even one that starts with `-`.

use std::path::PathBuf;

use crate::attempt::{self, pi};

/// `attempt`'s arguments.
#[derive(Debug, clap::Args)]
#[command(
    about = "Run one Pi attempt on a task contract in the current worktree",
    long_about = "Runs one Pi attempt on CONTRACT in the current git worktree: Pi edits \
                  through satyrn's tools only, and the declared files it changed are \
                  published (docs/attempt.md). Prints Pi's JSON transcript on stdout."
)]
pub struct Args {
    /// The model Pi uses, as PROVIDER/ID. Default: the SATYRN_MODEL environment variable;
    /// neither is a usage error (Pi's own default model is never used). A value that Pi
    /// could read as an option (empty, or starting with `-`) is refused.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The task contract (YAML). After `--` it may start with `-`.
    #[arg(value_name = "CONTRACT", value_parser = super::path())]
    pub contract: PathBuf,
}

/// Runs `attempt`.
#[must_use]
pub fn run(args: Args) -> u8 {
    let Some(model) = args.model.or_else(|| std::env::var("SATYRN_MODEL").ok()) else {
        return super::usage_error(
            "attempt",
            "attempt needs --model MODEL or SATYRN_MODEL (Pi's default model is never used)",
        );
    };
    if pi::model_is_unsafe(&model) {
        return super::usage_error(
            "attempt",
            format!("the model {model:?} could be read by pi as an option"),
        );
    }
    attempt::run(&attempt::Options {
        model,
        contract: args.contract,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command, parse};

    fn parsed(args: &[&str]) -> super::Args {
        match parse(args).map(|cli: Cli| cli.command) {
            Ok(Command::Attempt(args)) => args,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn the_model_may_be_inline_and_the_contract_may_follow_a_separator() {
        let a = parsed(&["attempt", "--model=p/m", "--", "-c.yaml"]);
        assert_eq!(a.model.as_deref(), Some("p/m"));
        assert_eq!(a.contract, std::path::PathBuf::from("-c.yaml"));
        let a = parsed(&["attempt", "c.yaml", "--model", "p/m"]);
        assert_eq!(a.model.as_deref(), Some("p/m"));
        for bad in [
            &["attempt", "--model", "a", "--model", "b", "c"][..],
            &["attempt", "--model"],
            &["attempt", "-c.yaml"],
            &["attempt", "a", "b"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
