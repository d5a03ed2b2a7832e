//! Memory for the engine's big tables, which every probe reaches with a cache miss: zero-filled
//! arrays on huge pages where the system has them (the transposition table, the play memo's
//! index), and the prefetch hint that overlaps such misses.
//!
//! With 4 KiB pages a probe of a table of tens to hundreds of MB misses the TLB as well and
//! waits for a page walk; on 2 MiB pages the whole table needs a few hundred TLB entries. On
//! Linux a `Zeroed` array is a mapping of its own, aligned to 2 MiB and advised for huge pages
//! before anything touches it (advice given after the first touch comes too late: the pages
//! are already small). Elsewhere it is an ordinary zeroed allocation.
//!
//! # Design notes
//!
//! memory for the big tables every probe reaches with a cache miss: `Zeroed`, zero-filled arrays on
//! huge pages where the system has them (on Linux a 2 MiB-aligned anonymous mapping advised
//! `MADV_HUGEPAGE` before its first touch: after it, the pages are already small), so that such a
//! probe does not also wait for a page walk; and `prefetch`, the cache hint. The engine's `unsafe`
//! lives here; `Zeroed`'s contract is that all-zero bytes are a valid element.

use std::alloc::Layout;
use std::ptr::NonNull;

/// A fixed-length array of `T`, zero-filled at creation.
pub struct Zeroed<T> {
    ptr: NonNull<T>,
    len: usize,
    /// What to give back on drop: the mapping (Linux) or the allocation's layout.
    #[cfg(target_os = "linux")]
    map: (*mut libc::c_void, usize),
    #[cfg(not(target_os = "linux"))]
    layout: Layout,
}

// SAFETY: `Zeroed<T>` owns its elements as a `Box<[T]>` does.
unsafe impl<T: Send> Send for Zeroed<T> {}
// SAFETY: as above: shared access hands out only `&[T]`.
unsafe impl<T: Sync> Sync for Zeroed<T> {}

impl<T> Zeroed<T> {
    /// `len` elements, every byte zero.
    ///
    /// # Safety
    /// The all-zero bit pattern must be a valid `T` (integers, atomics, and structs of them).
    pub unsafe fn new(len: usize) -> Self {
        let layout = Layout::array::<T>(len.max(1)).expect("table size overflows");
        #[cfg(target_os = "linux")]
        {
            const HUGE_PAGE: usize = 2 << 20;
            let size = layout.size() + HUGE_PAGE;
            // SAFETY: a new anonymous private mapping (zero-filled); checked before use.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    size,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if base == libc::MAP_FAILED {
                std::alloc::handle_alloc_error(layout);
            }
            let start = (base as usize).next_multiple_of(HUGE_PAGE);
            // SAFETY: `start..start + layout.size()` lies inside the mapping and is untouched;
            // the advice is a hint, ignored by kernels without huge pages.
            unsafe { libc::madvise(start as *mut libc::c_void, layout.size(), libc::MADV_HUGEPAGE) };
            let ptr = NonNull::new(start as *mut T).expect("a mapping is never at address 0");
            Self { ptr, len, map: (base, size) }
        }
        #[cfg(not(target_os = "linux"))]
        {
            // SAFETY: `layout` has a non-zero size.
            let raw = unsafe { std::alloc::alloc_zeroed(layout) } as *mut T;
            let ptr = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
            Self { ptr, len, layout }
        }
    }
}

impl<T> Drop for Zeroed<T> {
    fn drop(&mut self) {
        // Elements are plain data (see `new`): nothing to drop but the memory.
        #[cfg(target_os = "linux")]
        // SAFETY: `map` is the mapping made in `new`, unmapped once.
        unsafe {
            libc::munmap(self.map.0, self.map.1);
        }
        #[cfg(not(target_os = "linux"))]
        // SAFETY: allocated in `new` with this layout.
        unsafe {
            std::alloc::dealloc(self.ptr.as_ptr() as *mut u8, self.layout);
        }
    }
}

impl<T> std::ops::Deref for Zeroed<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` holds `len` initialised (zeroed, valid per `new`'s contract) elements,
        // suitably aligned, alive as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> std::ops::DerefMut for Zeroed<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

/// Start fetching `value`'s cache line, for a read soon after (a no-op off x86-64).
#[inline]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that reads nothing, here of a live reference; SSE is part
    // of every x86-64.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(value as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

#[cfg(test)]
mod tests {
    use super::Zeroed;

    #[test]
    fn starts_zeroed_and_holds_what_is_written() {
        // SAFETY: zero is a valid u64.
        let mut a = unsafe { Zeroed::<u64>::new(1 << 19) };
        assert_eq!(a.len(), 1 << 19);
        assert!(a.iter().all(|&x| x == 0));
        a[12345] = 7;
        a[(1 << 19) - 1] = 9;
        assert_eq!((a[12345], a[(1 << 19) - 1], a[0]), (7, 9, 0));
    }
}
