//! What a `no_std` guest on `wasm32-wasip2` must define itself: the allocator, the
//! canonical ABI's `cabi_realloc`, and the panic handler.

use core::alloc::Layout;

#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

/// A panic is a bug in the component; it traps, and the host reports an internal error.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

/// The canonical ABI's allocation entry point. wit-bindgen provides it only for other
/// targets, so a `no_std` guest on `wasm32-wasip2` exports its own (same contract:
/// allocate when `old_len` is 0, otherwise grow or shrink; trap when memory is exhausted).
///
/// # Safety
///
/// Called by the component model's lowering code with a pointer it got from this
/// function (or null with `old_len` 0) and a valid power-of-two `align`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cabi_realloc(
    old_ptr: *mut u8,
    old_len: usize,
    align: usize,
    new_len: usize,
) -> *mut u8 {
    let ptr = if old_len == 0 {
        if new_len == 0 {
            return align as *mut u8;
        }
        // SAFETY: `align` is a power of two (caller contract) and `new_len` is non-zero.
        unsafe { alloc::alloc::alloc(Layout::from_size_align_unchecked(new_len, align)) }
    } else {
        // SAFETY: `old_ptr` was allocated with this layout by a previous call.
        unsafe {
            alloc::alloc::realloc(
                old_ptr,
                Layout::from_size_align_unchecked(old_len, align),
                new_len,
            )
        }
    };
    if ptr.is_null() {
        core::arch::wasm32::unreachable();
    }
    ptr
}
