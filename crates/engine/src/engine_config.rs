// Shared by build.rs (which precompiles the component) and the runtime (which loads the
// precompiled artifact): both engines must be configured identically, or wasmtime
// refuses the artifact.

/// The wasmtime configuration of every engine that runs the mutator.
fn engine_config() -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true);
    // No copy-on-write image of the guest's memory: at load wasmtime would write it to a
    // memfd, which a caller's file-size limit (`RLIMIT_FSIZE`) cuts short with SIGXFSZ
    // before any request is read. The guest's data is copied in at instantiation instead.
    config.memory_init_cow(false);
    config
}
