//! The precompiled component as the engine runs it: in place, in the binary's own read-only
//! data, never copied.
//!
//! `Component::deserialize` copies the artifact (2 MiB of machine code and tables) into a
//! fresh mapping at every start and unmaps it at the end: a third of a one-shot
//! `satyrn-host protocol`'s CPU time went to that copy, its page faults and the unmapping.
//! Here the artifact is embedded page-aligned, on pages of its own, and wasmtime is handed
//! those pages ([`Component::deserialize_raw`](wasmtime::component::Component::deserialize_raw))
//! with [`InPlace`] as its code memory: the machine code is made executable where it lies,
//! and only the pages a request runs are ever read from the page cache.

use std::sync::Arc;

use wasmtime::CustomCodeMemory;

/// The alignment of the embedded artifact, and of its end: the largest page size of the
/// supported targets (64 KiB on some aarch64 kernels), so that no other data of the binary
/// shares a page with it, and no page made executable holds anything but the artifact.
const ALIGN: usize = 1 << 16;

#[repr(C, align(65536))]
struct PageAligned<T: ?Sized>(T);

const _: () = assert!(std::mem::align_of::<PageAligned<[u8; 0]>>() == ALIGN);

static EMBEDDED: &PageAligned<[u8]> = &PageAligned(*include_bytes!(concat!(
    env!("OUT_DIR"),
    "/satyrn_mutator.cwasm"
)));

static EMBEDDED_WITHOUT_SEARCH: &PageAligned<[u8]> = &PageAligned(*include_bytes!(concat!(
    env!("OUT_DIR"),
    "/satyrn_mutator_without_search.cwasm"
)));

/// The component compiled by `build.rs`, as embedded: page-aligned, on pages of its own.
pub static COMPILED_COMPONENT: &[u8] = &EMBEDDED.0;

/// The component built without `search` ([`Build::WithoutSearch`](crate::Build)), compiled
/// and embedded like [`COMPILED_COMPONENT`].
pub static COMPILED_WITHOUT_SEARCH: &[u8] = &EMBEDDED_WITHOUT_SEARCH.0;

/// The code memory of an engine that runs [`COMPILED_COMPONENT`] and
/// [`COMPILED_WITHOUT_SEARCH`] in place.
#[must_use]
pub fn code_memory() -> Arc<dyn CustomCodeMemory> {
    Arc::new(InPlace)
}

/// Publishes code by `mprotect(2)`ing its pages readable and executable, never writable.
/// Unpublishing leaves them so: the artifacts are static, and the one component loaded
/// from each (`engine::shared`) lives as long as the process.
struct InPlace;

impl CustomCodeMemory for InPlace {
    fn required_alignment(&self) -> usize {
        rustix::param::page_size()
    }

    fn publish_executable(&self, ptr: *const u8, len: usize) -> wasmtime::Result<()> {
        if len == 0 {
            return Ok(());
        }
        // SAFETY: wasmtime hands over the text section of code it loaded, page-aligned at
        // both ends (`required_alignment`); the pages are only made executable, not
        // writable, and nothing else lives on them (see `ALIGN`).
        unsafe {
            rustix::mm::mprotect(
                ptr.cast_mut().cast(),
                len,
                rustix::mm::MprotectFlags::READ | rustix::mm::MprotectFlags::EXEC,
            )
        }
        .map_err(|e| wasmtime::Error::msg(format!("mprotect of the component's code: {e}")))
    }

    fn unpublish_executable(&self, _ptr: *const u8, _len: usize) -> wasmtime::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_artifact_is_on_pages_of_its_own() {
        for (embedded, artifact) in [
            (EMBEDDED, COMPILED_COMPONENT),
            (EMBEDDED_WITHOUT_SEARCH, COMPILED_WITHOUT_SEARCH),
        ] {
            let start = artifact.as_ptr() as usize;
            assert_eq!(start % ALIGN, 0);
            assert_eq!(std::mem::size_of_val(embedded) % ALIGN, 0);
            assert!(std::mem::size_of_val(embedded) >= artifact.len());
        }
    }
}
