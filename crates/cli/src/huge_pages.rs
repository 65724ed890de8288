//! The binary's global allocator: the system allocator for small blocks; large blocks are
//! mapped directly from the kernel and advised to transparent huge pages.
//!
//! The set-up of a large run writes gigabytes of fresh memory once (numberings, element
//! maps, masses, the device layout). On 4 KiB pages every page is a fault on first touch
//! and the faults of many threads contend; unmapping at the end is again per page. 2 MiB
//! pages take 512 times fewer faults. Linux gives them to a mapping advised with
//! `MADV_HUGEPAGE` even where huge pages are not the system default (`madvise` mode). A
//! fresh mapping reads as zeros, so a zeroed large block costs nothing until it is
//! touched, as with the system allocator.

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks of at least this many bytes are mapped directly.
#[cfg(target_os = "linux")]
const LARGE: usize = 4 << 20;
/// The kernel's page.
#[cfg(target_os = "linux")]
const PAGE: usize = 4096;
/// A transparent huge page.
#[cfg(target_os = "linux")]
const HUGE: usize = 2 << 20;

/// The allocator (see the module documentation).
pub struct HugePageAlloc;

#[cfg(target_os = "linux")]
fn is_large(l: &Layout) -> bool {
    l.size() >= LARGE && l.align() <= PAGE
}

#[cfg(not(target_os = "linux"))]
fn is_large(_: &Layout) -> bool {
    false
}

/// A fresh zeroed mapping of `size` bytes starting on a huge-page boundary, advised to
/// huge pages; null when the kernel refuses.
#[cfg(target_os = "linux")]
unsafe fn map(size: usize) -> *mut u8 {
    let len = size.next_multiple_of(PAGE);
    let total = len + HUGE;
    // SAFETY: an anonymous private mapping; the parts outside the aligned block are
    // unmapped right away.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            total,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return std::ptr::null_mut();
        }
        let start = p as usize;
        let aligned = start.next_multiple_of(HUGE);
        if aligned > start {
            libc::munmap(p, aligned - start);
        }
        let tail = start + total - (aligned + len);
        if tail > 0 {
            libc::munmap((aligned + len) as *mut libc::c_void, tail);
        }
        // (advice only: where huge pages are off, the mapping keeps small ones)
        libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        aligned as *mut u8
    }
}

#[cfg(target_os = "linux")]
unsafe fn unmap(p: *mut u8, size: usize) {
    // SAFETY: `p` came from `map` (or `mremap`) with this size.
    unsafe {
        libc::munmap(p as *mut libc::c_void, size.next_multiple_of(PAGE));
    }
}

// SAFETY: small blocks are the system allocator's; large ones are whole mappings of their
// own, freed and resized only as such (the layout decides which, the same at every call).
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        #[cfg(target_os = "linux")]
        if is_large(&l) {
            return unsafe { map(l.size()) };
        }
        unsafe { System.alloc(l) }
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        #[cfg(target_os = "linux")]
        if is_large(&l) {
            return unsafe { map(l.size()) };
        }
        unsafe { System.alloc_zeroed(l) }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        #[cfg(target_os = "linux")]
        if is_large(&l) {
            return unsafe { unmap(p, l.size()) };
        }
        unsafe { System.dealloc(p, l) }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `new_size` with `l.align()` is a valid layout (the trait's contract).
        let new = unsafe { Layout::from_size_align_unchecked(new_size, l.align()) };
        match (is_large(&l), is_large(&new)) {
            (false, false) => unsafe { System.realloc(p, l, new_size) },
            #[cfg(target_os = "linux")]
            (true, true) => {
                // SAFETY: `p` is a whole mapping of the old size; the kernel moves or grows
                // it with its advice.
                let q = unsafe {
                    libc::mremap(
                        p as *mut libc::c_void,
                        l.size().next_multiple_of(PAGE),
                        new_size.next_multiple_of(PAGE),
                        libc::MREMAP_MAYMOVE,
                    )
                };
                if q == libc::MAP_FAILED {
                    std::ptr::null_mut()
                } else {
                    q as *mut u8
                }
            }
            _ => unsafe {
                let q = self.alloc(new);
                if !q.is_null() {
                    std::ptr::copy_nonoverlapping(p, q, l.size().min(new_size));
                    self.dealloc(p, l);
                }
                q
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_blocks_are_zeroed_aligned_and_keep_their_contents_when_resized() {
        let a = HugePageAlloc;
        let n = 5 << 20;
        let small = Layout::from_size_align(1 << 10, 8).unwrap();
        let large = Layout::from_size_align(n + 12_345, 8).unwrap();
        // SAFETY: every block is used within its layout and freed with it.
        unsafe {
            let p = a.alloc_zeroed(large);
            assert!(!p.is_null());
            #[cfg(target_os = "linux")]
            assert_eq!(
                p as usize % HUGE,
                0,
                "a fresh large block starts on a huge page"
            );
            let s = std::slice::from_raw_parts_mut(p, large.size());
            assert!(s.iter().all(|&b| b == 0));
            for (i, b) in s.iter_mut().enumerate() {
                *b = (i % 251) as u8;
            }
            // large to larger, then to small, then back to large
            let q = a.realloc(p, large, 2 * large.size());
            let s = std::slice::from_raw_parts(q, large.size());
            assert!(s.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
            let bigger = Layout::from_size_align(2 * large.size(), 8).unwrap();
            let r = a.realloc(q, bigger, small.size());
            let s = std::slice::from_raw_parts(r, small.size());
            assert!(s.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
            let t = a.realloc(r, small, large.size());
            let s = std::slice::from_raw_parts(t, small.size());
            assert!(s.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
            a.dealloc(t, large);
            // small blocks are the system's
            let u = a.alloc(small);
            assert!(!u.is_null());
            a.dealloc(u, small);
        }
    }

    #[test]
    fn vectors_of_any_size_work_through_the_global_allocator() {
        for n in [0usize, 1, 1000, 1 << 20, 3 << 20, 5 << 20] {
            let mut v = vec![0u32; n];
            assert!(v.iter().all(|&x| x == 0));
            v.extend(0..(n as u32 / 2 + 7));
            v.shrink_to_fit();
            assert_eq!(v.len(), n + n / 2 + 7);
            assert_eq!(v[n..].iter().map(|&x| x as u64).sum::<u64>(), {
                let m = (n / 2 + 7) as u64;
                m * (m - 1) / 2
            });
        }
    }
}
