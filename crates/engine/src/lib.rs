//! Runs the embedded mutator component.
//!
//! The component is built from source and precompiled by `build.rs`; the runtime carries
//! no compiler and never compiles. Each [`Mutator`] is one store and one instance whose
//! only capability is a single **read-only** preopen of the worktree; the linker provides
//! `wasi:filesystem` (types, preopens) and the `wasi:io` interfaces those refer to, and
//! nothing else, so a component that imported anything more would fail to instantiate.

use std::os::fd::{AsRawFd, OwnedFd};

use wasmtime::component::{Component, HasData, Linker, ResourceTable};
use wasmtime::{Engine, ResourceLimiter, Store};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

include!("engine_config.rs");

mod builds;
mod codes;
pub mod cpu;
mod in_place;
mod instances;
mod open_at;
#[cfg(test)]
mod test_support;

pub use builds::Build;
pub use instances::{Instances, Lent, REUSE_MAX_MEMORY};

// The generated types carry the WIT package's own documentation (`wit/mutator.wit`).
#[allow(missing_docs)]
mod bindings {
    wasmtime::component::bindgen!({
        world: "mutator-component",
        path: "../../wit",
        with: {
            "wasi": wasmtime_wasi::p2::bindings::sync,
        },
    });
}

pub use bindings::satyrn::mutator::types::{
    Plan, Refusal, RefusalCode, ReplaceError, ReplaceRequest, RevisionError,
};

// The `read` and `edit` operations' types (see `wit/mutator.wit`).
pub use bindings::satyrn::mutator::types::{
    EditError, EditOp, EditPlan, EditRequest, InsertAfterEdit, LineRange, NearMiss, PreviewHunk,
    Problem, ProblemCode, ReadCode, ReadError, ReadPage, ReadRequest, ReplaceEdit, SelectorMatch,
};

// The change sets' types: `change-set`, `apply-patch`.
pub use bindings::satyrn::mutator::types::{
    ChangeDelete, ChangeEdit, ChangeMove, ChangeOp, ChangeSetError, ChangeSetRejection,
    ChangeSetRequest, ChangeWrite, FileChange, HunkCode, HunkProblem, OpCode, OpProblem,
    PatchInvalid, PatchRequest, Rejection,
};

// The toolbox operations' types: `list`, `search`, `write`, `delete-file`.
pub use bindings::satyrn::mutator::types::{
    CreatedFile, DeletePlan, DeleteRequest, EntryKind, ListEntry, ListPage, ListRequest,
    SearchFile, SearchLine, SearchPage, SearchRequest, SkipReason, SkippedFile, WritePlan,
    WriteRequest,
};

/// The most bytes one call of the component may hand back to the host (wasmtime's
/// per-store "hostcall fuel", 128 MiB by default, which a plan for a file near the
/// documented 256 MiB limit exceeds). Derived from the documented limits, not unlimited:
/// the largest result is a `replace` plan, whose new content is at most the largest file
/// ([`MAX_FILE_BYTES`](satyrn_mutator_core::replace::MAX_FILE_BYTES)) plus a `new_text` of
/// at most one request ([`MAX_REQUEST_BYTES`](satyrn_code::MAX_REQUEST_BYTES)); an
/// `edit` plan is at most a 16 MiB file plus every new text of a request doubled by the
/// LF-to-CRLF normalization, which is smaller. One more request's worth covers that
/// doubling, and 1 MiB the path, the revisions and the other small fields.
pub const HOSTCALL_FUEL: usize = {
    let file = satyrn_mutator_core::replace::MAX_FILE_BYTES as usize;
    let request = satyrn_code::MAX_REQUEST_BYTES;
    file + 2 * request + (1 << 20)
};

pub use in_place::{COMPILED_COMPONENT, COMPILED_WITHOUT_SEARCH};

/// The portable component (`satyrn_mutator.wasm`), as other WASI hosts use it.
pub static COMPONENT_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/satyrn_mutator.wasm"));

/// A failure of the engine itself (not a decision): loading, instantiating or a trap.
/// Always a bug or a broken installation; reported as `INTERNAL_ERROR`. Its message is
/// what was being done and the cause with its chain; the cause stays its source.
#[derive(Debug, thiserror::Error)]
#[error("{context}{}", source.as_ref().map(|s| format!(": {s}")).unwrap_or_default())]
pub struct EngineError {
    /// What the engine was doing, e.g. "the component trapped in replace".
    pub context: String,
    /// The cause: wasmtime's error (its whole chain), or the operating system's; none
    /// when the engine itself refused (an instance discarded after a failed call).
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl EngineError {
    /// An engine failure while doing `context`, caused by `source`.
    pub fn new(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        Self {
            context: context.into(),
            source: Some(source.into()),
        }
    }

    /// An engine failure with no cause beyond `context`.
    #[must_use]
    pub fn plain(context: impl Into<String>) -> Self {
        Self {
            context: context.into(),
            source: None,
        }
    }

    /// An engine failure while doing `context`, caused by wasmtime's `error`: its whole
    /// chain in the message (wasmtime's alternate form), the error itself as the source.
    fn wasmtime(context: impl Into<String>, error: wasmtime::Error) -> Self {
        let chain = format!("{error:#}");
        let source = error.into_boxed_dyn_error();
        if chain == source.to_string() {
            Self::new(context, source)
        } else {
            Self::new(context, Chained { chain, source })
        }
    }
}

/// wasmtime's error shown with its whole chain, keeping the error itself as the source.
#[derive(Debug, thiserror::Error)]
#[error("{chain}")]
struct Chained {
    chain: String,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync + 'static>,
}

/// Why [`Loaded::of`] (or [`Loaded::new`]) could not load a component.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// This CPU lacks features the component was precompiled for (`CPU_UNSUPPORTED`).
    #[error("{0}")]
    Cpu(#[source] cpu::CpuUnsupported),
    /// The engine failed (`INTERNAL_ERROR`).
    #[error("{0}")]
    Engine(#[from] EngineError),
}

impl From<LoadError> for satyrn_code::Failure {
    fn from(e: LoadError) -> Self {
        let code = match e {
            LoadError::Cpu(_) => satyrn_code::Code::CpuUnsupported,
            LoadError::Engine(_) => satyrn_code::Code::InternalError,
        };
        Self::new(code, e.to_string())
    }
}

fn engine_error(context: &str) -> impl FnOnce(wasmtime::Error) -> EngineError + '_ {
    move |e| EngineError::wasmtime(context, e)
}

/// The engine and the deserialized component, linked once: what every [`Mutator`] is
/// made from.
#[derive(Clone)]
pub struct Loaded {
    build: Build,
    engine: Engine,
    component: Component,
    /// The component with its imports resolved and type-checked, so that each
    /// instantiation only allocates and initializes.
    pre: bindings::MutatorComponentPre<State>,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded").finish_non_exhaustive()
    }
}

impl Loaded {
    /// Links the embedded precompiled component, [`Build::Full`]: [`Loaded::of`].
    ///
    /// # Errors
    ///
    /// As [`Loaded::of`].
    pub fn new() -> Result<Self, LoadError> {
        Self::of(Build::Full)
    }

    /// Links the embedded precompiled component of `build`. The first call of a process
    /// creates the engine, and the first call for a build loads its component in place
    /// (no copy: [`in_place`]); later calls share them (process-global, never freed).
    ///
    /// # Errors
    ///
    /// [`LoadError::Cpu`] when this CPU lacks a feature the artifact was compiled for
    /// (checked before anything is loaded); [`LoadError::Engine`] when this wasmtime build
    /// cannot run it.
    pub fn of(build: Build) -> Result<Self, LoadError> {
        cpu::check_this_cpu().map_err(LoadError::Cpu)?;
        let (engine, component) = shared(build)?;
        let mut linker = Linker::new(&engine);
        add_filesystem_to_linker(&mut linker).map_err(engine_error("linking wasi:filesystem"))?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(bindings::MutatorComponentPre::new)
            .map_err(engine_error("linking the component"))?;
        Ok(Self {
            build,
            engine,
            component,
            pre,
        })
    }

    /// The component's imports, from its real type (not a list kept by hand): each
    /// interface's name and the functions and resources the component takes from it.
    #[must_use]
    pub fn imports(&self) -> Vec<InterfaceItems> {
        let ty = self.component.component_type();
        ty.imports(&self.engine)
            .map(|(name, item)| interface_items(&self.engine, name, item.ty))
            .collect()
    }

    /// The component's exports, like [`Loaded::imports`].
    #[must_use]
    pub fn exports(&self) -> Vec<InterfaceItems> {
        let ty = self.component.component_type();
        ty.exports(&self.engine)
            .map(|(name, item)| interface_items(&self.engine, name, item.ty))
            .collect()
    }

    /// Instantiates the component with `worktree` as its only, read-only, preopen, and a
    /// store that accepts results of up to [`HOSTCALL_FUEL`] bytes.
    ///
    /// The preopen is opened through `/proc/self/fd`, so it is the very directory the
    /// caller holds (and has locked), not whatever its path names by now.
    ///
    /// # Errors
    ///
    /// [`EngineError`] when the preopen or the instantiation fails.
    pub fn instantiate(&self, worktree: &OwnedFd) -> Result<Mutator, EngineError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .map_err(|e| EngineError::new("creating the runtime", e))?;
        let entered = runtime.enter();
        let mut wasi = WasiCtxBuilder::new();
        // Before the preopen, which captures it: run file operations on this thread
        // instead of a thread pool (one short synchronous call; threads only cost time).
        wasi.allow_blocking_current_thread(true);
        wasi.preopened_dir(
            format!("/proc/self/fd/{}", worktree.as_raw_fd()),
            ".",
            FsPerms::ReadOnly,
        )
        .map_err(engine_error("preopening the worktree"))?;
        let state = State {
            ctx: wasi.build(),
            table: ResourceTable::new(),
            memory: MemoryWatermark::default(),
        };
        let mut store = Store::new(&self.engine, state);
        store.set_hostcall_fuel(HOSTCALL_FUEL);
        store.limiter(|state| &mut state.memory);
        let instance = self
            .pre
            .instantiate(&mut store)
            .map_err(engine_error("instantiating the component"))?;
        drop(entered);
        Ok(Mutator {
            build: self.build,
            store,
            instance,
            runtime,
        })
    }
}

/// The process's one engine and its component of each [`Build`], made by the first
/// [`Loaded::of`] that needs them: a component runs in place ([`in_place`]), and wasmtime
/// registers a code image by its address, process-wide, so an artifact can be loaded only
/// once at a time. Engines and components are shared handles; every [`Loaded`] builds its
/// own linker and stores.
static SHARED: std::sync::Mutex<Shared> = std::sync::Mutex::new(Shared {
    engine: None,
    full: None,
    without_search: None,
});

struct Shared {
    engine: Option<Engine>,
    full: Option<Component>,
    without_search: Option<Component>,
}

/// The shared engine and `build`'s component, made now if no call made them before.
fn shared(build: Build) -> Result<(Engine, Component), LoadError> {
    let mut shared = SHARED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let engine = match &shared.engine {
        Some(engine) => engine.clone(),
        None => {
            let mut config = engine_config();
            config.with_custom_code_memory(Some(in_place::code_memory()));
            let engine = Engine::new(&config).map_err(engine_error("creating the engine"))?;
            shared.engine = Some(engine.clone());
            engine
        }
    };
    let slot = match build {
        Build::Full => &mut shared.full,
        Build::WithoutSearch => &mut shared.without_search,
    };
    if let Some(component) = slot {
        return Ok((engine, component.clone()));
    }
    // SAFETY: the bytes were produced by `Engine::precompile_component` in build.rs, with
    // this same wasmtime version and `engine_config()`, and are embedded in the binary's
    // read-only data, so nothing outside the build can alter them; they are static, so
    // they outlive the component.
    let component = unsafe {
        Component::deserialize_raw(&engine, std::ptr::NonNull::from(build.artifact()))
    }
    .map_err(|e| EngineError::wasmtime(format!("loading {} (precompiled)", build.name()), e))?;
    *slot = Some(component.clone());
    Ok((engine, component))
}

/// One import or export of the component: an interface name such as
/// `wasi:filesystem/types@0.2.12`, and the names of the functions and resources it
/// carries, sorted. An interface imported only for its types has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceItems {
    /// The interface's full name, with its version.
    pub name: String,
    /// Its functions and resources (not its plain types), sorted.
    pub items: Vec<String>,
}

fn interface_items(
    engine: &Engine,
    name: &str,
    item: wasmtime::component::types::ComponentItem,
) -> InterfaceItems {
    use wasmtime::component::types::ComponentItem;
    let mut items: Vec<String> = match item {
        ComponentItem::ComponentInstance(instance) => instance
            .exports(engine)
            .filter(|(_, e)| !matches!(e.ty, ComponentItem::Type(_)))
            .map(|(n, _)| n.to_string())
            .collect(),
        _ => vec![name.to_string()],
    };
    items.sort();
    InterfaceItems {
        name: name.to_string(),
        items,
    }
}

/// One instance of the component over one worktree.
pub struct Mutator {
    build: Build,
    store: Store<State>,
    instance: bindings::MutatorComponent,
    /// wasmtime-wasi runs file operations "in tokio": a current-thread runtime entered for
    /// every call keeps it from starting a multi-threaded one of its own. With
    /// `allow_blocking_current_thread` the operations run right here; no thread is started.
    runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for Mutator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mutator").finish_non_exhaustive()
    }
}

impl Mutator {
    /// The largest size the instance's linear memory has had, in bytes.
    fn peak_memory(&self) -> usize {
        self.store.data().memory.peak_bytes
    }

    /// The one call path of every export: enters the instance's runtime, calls `export`
    /// through `call` and names the export in the [`EngineError`] of a trap.
    fn call<T>(
        &mut self,
        export: &str,
        call: impl FnOnce(
            &bindings::exports::satyrn::mutator::mutator::Guest,
            &mut Store<State>,
        ) -> wasmtime::Result<T>,
    ) -> Result<T, EngineError> {
        let _entered = self.runtime.enter();
        call(self.instance.satyrn_mutator_mutator(), &mut self.store)
            .map_err(|e| EngineError::wasmtime(format!("the component trapped in {export}"), e))
    }

    /// Asks the component to decide one replacement (see the WIT `replace`).
    ///
    /// # Errors
    ///
    /// [`EngineError`] on a trap; decisions are in the inner `Result`.
    pub fn replace(
        &mut self,
        request: &ReplaceRequest,
    ) -> Result<Result<Plan, ReplaceError>, EngineError> {
        self.call("replace", |guest, store| guest.call_replace(store, request))
    }

    /// Asks the component for a declared file's revision (see the WIT `revision`).
    ///
    /// # Errors
    ///
    /// [`EngineError`] on a trap.
    pub fn revision(
        &mut self,
        path: &str,
        writable_paths: &[String],
        private_paths: &[String],
    ) -> Result<Result<String, RevisionError>, EngineError> {
        self.call("revision", |guest, store| {
            guest.call_revision(store, path, writable_paths, private_paths)
        })
    }

    /// Asks the component for the revisions of many paths in one call (see the WIT
    /// `revisions`): the result at index `i` is what [`Mutator::revision`] gives for
    /// `paths[i]`.
    ///
    /// # Errors
    ///
    /// [`EngineError`] on a trap.
    pub fn revisions(
        &mut self,
        paths: &[&str],
        writable_paths: &[String],
        private_paths: &[String],
    ) -> Result<Vec<Result<String, RevisionError>>, EngineError> {
        let paths: Vec<String> = paths.iter().map(|p| (*p).to_string()).collect();
        self.call("revisions", |guest, store| {
            guest.call_revisions(store, &paths, writable_paths, private_paths)
        })
    }

    /// Asks the component whether `path` matches one of `patterns`.
    ///
    /// # Errors
    ///
    /// [`EngineError`] on a trap.
    pub fn matches(&mut self, path: &str, patterns: &[String]) -> Result<bool, EngineError> {
        self.call("matches", |guest, store| {
            guest.call_matches(store, path, patterns)
        })
    }

    /// Asks the component for one page of a file (see the WIT `read`).
    ///
    /// # Errors
    ///
    /// [`EngineError`] on a trap; decisions are in the inner `Result`.
    pub fn read(
        &mut self,
        request: &ReadRequest,
    ) -> Result<Result<ReadPage, ReadError>, EngineError> {
        self.call("read", |guest, store| guest.call_read(store, request))
    }

    /// Asks the component to decide a batch of edits (see the WIT `edit`).
    ///
    /// # Errors
    ///
    /// [`EngineError`] on a trap; decisions are in the inner `Result`.
    pub fn edit(
        &mut self,
        request: &EditRequest,
    ) -> Result<Result<EditPlan, EditError>, EngineError> {
        self.call("edit", |guest, store| guest.call_edit(store, request))
    }

    /// Asks the component for one page of a directory's entries (see the WIT `list`).
    ///
    /// # Errors
    ///
    /// [`EngineError`] on a trap; decisions are in the inner `Result`.
    pub fn list(
        &mut self,
        request: &ListRequest,
    ) -> Result<Result<ListPage, ReadError>, EngineError> {
        self.call("list", |guest, store| guest.call_list(store, request))
    }

    /// Asks the component for one page of a search (see the WIT `search`).
    ///
    /// # Errors
    ///
    /// [`EngineError`] on a trap, or without calling when the instance is of
    /// [`Build::WithoutSearch`] (a bug of the caller, which chose the build); decisions
    /// are in the inner `Result`.
    pub fn search(
        &mut self,
        request: &SearchRequest,
    ) -> Result<Result<SearchPage, ReadError>, EngineError> {
        if self.build == Build::WithoutSearch {
            return Err(EngineError::plain(
                "search was asked of the component built without search; it needs Build::Full",
            ));
        }
        self.call("search", |guest, store| guest.call_search(store, request))
    }

    /// Asks the component to decide a whole-file write (see the WIT `write`).
    ///
    /// # Errors
    ///
    /// [`EngineError`] on a trap; decisions are in the inner `Result`.
    pub fn write(
        &mut self,
        request: &WriteRequest,
    ) -> Result<Result<WritePlan, ReplaceError>, EngineError> {
        self.call("write", |guest, store| guest.call_write(store, request))
    }

    /// Asks the component to decide the removal of a file (see the WIT `delete-file`).
    ///
    /// # Errors
    ///
    /// [`EngineError`] on a trap; decisions are in the inner `Result`.
    pub fn delete_file(
        &mut self,
        request: &DeleteRequest,
    ) -> Result<Result<DeletePlan, ReplaceError>, EngineError> {
        self.call("delete-file", |guest, store| {
            guest.call_delete_file(store, request)
        })
    }

    /// Decides a change set.
    ///
    /// # Errors
    ///
    /// [`EngineError`] on a trap; decisions are in the inner `Result`.
    pub fn change_set(
        &mut self,
        request: &ChangeSetRequest,
    ) -> Result<Result<Vec<FileChange>, ChangeSetError>, EngineError> {
        self.call("change-set", |guest, store| {
            guest.call_change_set(store, request)
        })
    }

    /// Parses and decides a patch as a change set.
    ///
    /// # Errors
    ///
    /// [`EngineError`] on a trap; decisions are in the inner `Result`.
    pub fn apply_patch(
        &mut self,
        request: &PatchRequest,
    ) -> Result<Result<Vec<FileChange>, ChangeSetError>, EngineError> {
        self.call("apply-patch", |guest, store| {
            guest.call_apply_patch(store, request)
        })
    }
}

struct State {
    ctx: WasiCtx,
    table: ResourceTable,
    memory: MemoryWatermark,
}

/// Records the largest size the instance's memories and tables asked for, and limits
/// nothing: [`Instances`] reads it to decide whether an instance is small enough to keep.
#[derive(Debug, Default)]
struct MemoryWatermark {
    /// The largest `desired` size of a linear memory, in bytes.
    peak_bytes: usize,
}

impl ResourceLimiter for MemoryWatermark {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.peak_bytes = self.peak_bytes.max(desired);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        _desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(true)
    }
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

struct HasIo;

impl HasData for HasIo {
    type Data<'a> = &'a mut ResourceTable;
}

/// `wasi:filesystem/{types,preopens}` and the `wasi:io` interfaces they refer to: the
/// whole of what the component may import. `open-at` is the host's own ([`open_at`]):
/// it never blocks and never follows a symbolic link.
fn add_filesystem_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    use wasmtime_wasi::filesystem::WasiFilesystem;
    use wasmtime_wasi::p2::bindings::sync;
    sync::filesystem::types::add_to_linker::<State, WasiFilesystem>(linker, |s| {
        wasmtime_wasi::filesystem::WasiFilesystemView::filesystem(s)
    })?;
    open_at::add_to_linker(linker)?;
    wasmtime_wasi::p2::bindings::filesystem::preopens::add_to_linker::<State, WasiFilesystem>(
        linker,
        <State as wasmtime_wasi::filesystem::WasiFilesystemView>::filesystem,
    )?;
    wasmtime_wasi_io::bindings::wasi::io::error::add_to_linker::<State, HasIo>(linker, |s| {
        &mut s.table
    })?;
    sync::io::poll::add_to_linker::<State, HasIo>(linker, |s| &mut s.table)?;
    sync::io::streams::add_to_linker::<State, HasIo>(linker, |s| &mut s.table)?;
    Ok(())
}
