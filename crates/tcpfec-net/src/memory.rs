//! Giving freed memory back to the operating system after connections close.
//!
//! A connection's buffers are large, short-lived allocations. glibc's allocator raises its
//! threshold for serving large allocations by `mmap` each time such a block is freed, so
//! after the first few connections their buffers come from the heap, and a heap whose
//! free space lies between blocks still in use is not returned: a server's resident memory
//! stayed at its peak after its connections had closed. `malloc_trim` returns the free
//! pages. It walks the heap, so it runs at most once a second.

use std::sync::atomic::{AtomicU64, Ordering};
use tcpfec_proto::Instant;

/// When memory was last trimmed, nanoseconds of the endpoint clock (0: never).
static LAST_TRIM: AtomicU64 = AtomicU64::new(0);

/// Returns freed memory to the operating system, at most once per second.
pub(crate) fn release_freed(now: Instant) {
    let last = LAST_TRIM.load(Ordering::Relaxed);
    if last != 0 && now.0.saturating_sub(last) < 1_000_000_000 {
        return;
    }
    LAST_TRIM.store(now.0.max(1), Ordering::Relaxed);
    trim();
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim only releases free pages of the allocator's heaps; it takes the
    // allocator's own locks and touches no memory in use.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}
