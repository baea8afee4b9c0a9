//! satyrn's integration tests: real git, the real `satyrn-host` binary with the real
//! embedded component, the real file system and real processes. One binary, one module
//! per area.

mod attempt;
mod candidates;
mod candidates_remote;
#[path = "../../components/mutator-core/tests/common/cases.rs"]
mod cases;
mod change_set;
mod change_set_kill;
mod change_set_records;
mod cli;
mod component;
mod confine;
mod confine_agent;
mod confine_escapes;
mod crate_graph;
mod deliver;
mod deliver_contract;
mod deliver_faults;
mod deliver_lock;
mod deliver_output;
mod deliver_repository;
mod deliver_series;
mod deliver_signals;
mod deliver_support;
mod deliver_warnings;
mod edit_component;
mod faults;
mod fnmatch_differential;
mod fuzz_inputs;
mod hot_first;
mod mcp;
mod protocol_common;
mod protocol_edit;
mod protocol_files;
mod protocol_read;
mod protocol_refusals;
mod protocol_requests;
mod protocol_toolbox;
mod publish_faults;
mod publish_kill;
mod publish_limits;
mod publish_panic;
mod race;
mod reuse;
mod revisions_component;
mod series_emit;
mod series_remote;
mod slurm;
mod support;
mod toolbox_component;
