// Shared by build.rs (which precompiles the component) and the runtime (which loads the
// precompiled artifact): both engines must be configured identically, or wasmtime
// refuses the artifact.

/// The wasmtime configuration of every engine that runs the mutator.
fn engine_config() -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true);
    config
}
