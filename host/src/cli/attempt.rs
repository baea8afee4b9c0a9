//! `satyrn-host attempt [--model MODEL]... [--] CONTRACT`: one Pi attempt in the current
//! worktree (see [`satyrn_attempt`]). The model comes from `--model`, else `SATYRN_MODEL`;
//! neither, or a value Pi could read as an option, is a usage error (exit 2). After `--`
//! every argument is the contract, even one that starts with `-`.
//!
//! Several `--model`s are a list, one per attempt of a series (`deliver --attempts N … --
//! satyrn-host attempt --model A --model B …`): attempt `I` uses the `I`-th, read from the
//! `SATYRN_ATTEMPT_INDEX` (1-based) and `SATYRN_ATTEMPTS` that `deliver` gives each attempt
//! ([`select`]). A list without them, or whose length is not `SATYRN_ATTEMPTS`, is a usage
//! error before anything runs.

use std::io::Write;
use std::path::PathBuf;

use satyrn_attempt::{self as attempt, pi};
use satyrn_deliver::series::{COUNT_VAR, INDEX_VAR};

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
    /// could read as an option (empty, or starting with `-`) is refused. Given several
    /// times, a list with one model per attempt of `deliver --attempts N`: attempt I uses
    /// the I-th (from SATYRN_ATTEMPT_INDEX); the list must have SATYRN_ATTEMPTS entries.
    #[arg(long, value_name = "MODEL", action = clap::ArgAction::Append)]
    pub model: Vec<String>,
    /// Run Pi WITHOUT `satyrn-host confine` (the kernel's boundary): an explicit opt-out,
    /// said on stderr. By default Pi runs confined, its satyrn tools served by the broker.
    #[arg(long)]
    pub unconfined: bool,
    /// The task contract (YAML). After `--` it may start with `-`.
    #[arg(value_name = "CONTRACT", value_parser = super::path())]
    pub contract: PathBuf,
}

/// The model of this attempt among `models`: none → `SATYRN_MODEL` (`env_model`); one →
/// it, whatever the attempt index; several → the `index`-th (1-based), where `index` and
/// `count` are `SATYRN_ATTEMPT_INDEX` and `SATYRN_ATTEMPTS` as read from the environment.
///
/// # Errors
///
/// Why not, as a usage message: no model at all; a list without a valid index and count;
/// a list whose length is not the count; an index outside `1..=count`.
pub fn select(
    models: &[String],
    env_model: Option<String>,
    index: Option<&str>,
    count: Option<&str>,
) -> Result<String, String> {
    match models {
        [] => env_model.ok_or_else(|| {
            "attempt needs --model MODEL or SATYRN_MODEL (Pi's default model is never used)"
                .to_owned()
        }),
        [one] => Ok(one.clone()),
        list => {
            let number = |name: &str, value: Option<&str>| {
                value
                    .and_then(|v| v.parse::<usize>().ok())
                    .filter(|n| *n > 0)
                    .ok_or_else(|| {
                        format!(
                            "{} models were given, one per attempt, but {name} is {} (deliver --attempts N sets it)",
                            list.len(),
                            value.map_or_else(|| "not set".to_owned(), |v| format!("{v:?}"))
                        )
                    })
            };
            let count = number(COUNT_VAR, count)?;
            let index = number(INDEX_VAR, index)?;
            if list.len() != count {
                return Err(format!(
                    "{} models were given but there are {count} attempts ({COUNT_VAR}); give one model per attempt",
                    list.len()
                ));
            }
            list.get(index - 1)
                .cloned()
                .ok_or_else(|| format!("{INDEX_VAR} is {index}, past the {count} attempts"))
        }
    }
}

/// Runs `attempt`.
#[must_use]
pub fn run(args: Args) -> u8 {
    let index = std::env::var(INDEX_VAR).ok();
    let count = std::env::var(COUNT_VAR).ok();
    let model = match select(
        &args.model,
        std::env::var("SATYRN_MODEL").ok(),
        index.as_deref(),
        count.as_deref(),
    ) {
        Ok(model) => model,
        Err(message) => return super::usage_error("attempt", message),
    };
    if let Some(unsafe_model) = args
        .model
        .iter()
        .chain(std::iter::once(&model))
        .find(|m| pi::model_is_unsafe(m))
    {
        return super::usage_error(
            "attempt",
            format!("the model {unsafe_model:?} could be read by pi as an option"),
        );
    }
    if args.model.len() > 1 {
        let _ = writeln!(
            std::io::stderr(),
            "satyrn-host attempt: attempt {} of {} uses model {model}",
            index.unwrap_or_default(),
            count.unwrap_or_default()
        );
    }
    attempt::run(&attempt::Options {
        model,
        contract: args.contract,
        unconfined: args.unconfined,
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
        assert_eq!(a.model, ["p/m"]);
        assert_eq!(a.contract, std::path::PathBuf::from("-c.yaml"));
        let a = parsed(&["attempt", "c.yaml", "--model", "p/m"]);
        assert_eq!(a.model, ["p/m"]);
        let a = parsed(&["attempt", "--model", "a", "--model=b", "c"]);
        assert_eq!(a.model, ["a", "b"], "repeated: a list, in order");
        for bad in [
            &["attempt", "--model"][..],
            &["attempt", "-c.yaml"],
            &["attempt", "a", "b"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_list_of_models_gives_each_attempt_its_own_and_refuses_a_wrong_length() {
        use super::select;
        let list = ["p/a".to_owned(), "p/b".to_owned()];
        assert_eq!(
            select(&list, None, Some("1"), Some("2")),
            Ok("p/a".to_owned())
        );
        assert_eq!(
            select(&list, None, Some("2"), Some("2")),
            Ok("p/b".to_owned())
        );
        let one = ["p/only".to_owned()];
        assert_eq!(
            select(&one, None, Some("3"), Some("5")),
            Ok("p/only".to_owned()),
            "one model: every attempt"
        );
        assert_eq!(
            select(&[], Some("env/m".to_owned()), None, None),
            Ok("env/m".to_owned())
        );
        assert!(select(&[], None, Some("1"), Some("1")).is_err());
        for (index, count, says) in [
            (
                Some("1"),
                Some("3"),
                "2 models were given but there are 3 attempts",
            ),
            (None, None, "SATYRN_ATTEMPTS is not set"),
            (Some("1"), Some("x"), "SATYRN_ATTEMPTS is \"x\""),
            (None, Some("2"), "SATYRN_ATTEMPT_INDEX is not set"),
            (Some("0"), Some("2"), "SATYRN_ATTEMPT_INDEX is \"0\""),
            (
                Some("3"),
                Some("2"),
                "SATYRN_ATTEMPT_INDEX is 3, past the 2 attempts",
            ),
        ] {
            let refused = select(&list, None, index, count).expect_err(says);
            assert!(refused.contains(says), "{refused}");
        }
    }
}
