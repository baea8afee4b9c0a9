//! `satyrn-host man [SUBCOMMAND]`: prints the roff man page `satyrn-host(1)`, or
//! `satyrn-host-SUBCOMMAND(1)`, on stdout, made from the same definitions that parse the
//! command line (`satyrn-host man deliver | man -l -`).

/// `man`'s arguments.
#[derive(Debug, clap::Args)]
#[command(about = "Print a man page (roff) on stdout")]
pub struct Args {
    /// The subcommand whose page to print. Default: the page of satyrn-host itself, which
    /// lists the subcommands.
    #[arg(value_name = "SUBCOMMAND")]
    pub subcommand: Option<String>,
}

/// Runs `man`: exit 0; 2 for an unknown SUBCOMMAND; 1 when the page cannot be rendered or
/// stdout cannot be written.
#[must_use]
pub fn run(args: &Args) -> u8 {
    let definition = super::definition();
    let page = match &args.subcommand {
        None => definition,
        Some(name) => match definition.find_subcommand(name) {
            Some(sub) => sub.clone(),
            None => return super::usage_error("man", format!("no subcommand named {name:?}")),
        },
    };
    let mut roff = Vec::new();
    match clap_mangen::Man::new(page).render(&mut roff) {
        Ok(()) => super::write_stdout(&roff),
        Err(e) => {
            super::print_error("man", &e);
            satyrn_code::Code::InternalError.exit_status()
        }
    }
}
