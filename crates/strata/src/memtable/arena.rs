//! [`Arena`]: bump allocation for the memtable's skiplist nodes.
//!
//! Memory is handed out in 8-byte aligned pieces carved from large chunks and is freed only
//! when the arena drops, so pointers into it stay valid for as long as the owning memtable.
//! Allocation is single-threaded: the skiplist calls it only while holding its writer lock.

use std::sync::atomic::{AtomicUsize, Ordering};

const CHUNK: usize = 256 << 10;

/// A bump allocator. REQUIRES: `alloc` is never called concurrently (the skiplist's writer
/// mutex guarantees it).
pub struct Arena {
    chunks: Vec<memmap2::MmapMut>,
    ptr: *mut u8,
    remaining: usize,
    usage: AtomicUsize,
}

// SAFETY: the raw pointer points into `chunks`, which the arena owns; moving the arena to another
// thread moves ownership of the chunks with it.
unsafe impl Send for Arena {}

impl Arena {
    /// An empty arena.
    pub fn new() -> Self {
        Arena {
            chunks: Vec::new(),
            ptr: std::ptr::null_mut(),
            remaining: 0,
            usage: AtomicUsize::new(0),
        }
    }

    /// Allocates `size` bytes aligned to 8. The memory is zeroed.
    pub fn alloc(&mut self, size: usize) -> *mut u8 {
        let size = (size + 7) & !7;
        if size > self.remaining {
            if size > CHUNK / 4 {
                // Large entries get a chunk of their own, so the current chunk is not wasted.
                self.usage.fetch_add(size, Ordering::Relaxed);
                return self.new_chunk(size);
            }
            // The unused tail of the old chunk is lost: count it.
            self.usage.fetch_add(self.remaining, Ordering::Relaxed);
            self.ptr = self.new_chunk(CHUNK);
            self.remaining = CHUNK;
        }
        self.usage.fetch_add(size, Ordering::Relaxed);
        let p = self.ptr;
        // SAFETY: `size <= remaining`, so `p + size` stays inside the current chunk.
        self.ptr = unsafe { self.ptr.add(size) };
        self.remaining -= size;
        p
    }

    /// A fresh zeroed chunk of `bytes`, mapped straight from the kernel (page aligned) and
    /// unmapped when the arena drops. Through `malloc`, freed memtables' chunks stayed in the
    /// allocator's heaps (glibc raises its mmap threshold after the first free of a large
    /// block), which showed as 30+ MiB of resident memory above the memtable budget.
    ///
    /// # Panics
    /// If the kernel refuses the mapping: out of memory, as for any allocation.
    fn new_chunk(&mut self, bytes: usize) -> *mut u8 {
        let mut chunk = memmap2::MmapOptions::new()
            .len(bytes.max(1))
            .populate()
            .map_anon()
            .unwrap_or_else(|e| panic!("memtable arena: cannot map {bytes} bytes: {e}"));
        let p = chunk.as_mut_ptr();
        self.chunks.push(chunk);
        p
    }

    /// Bytes handed out plus chunk tails wasted (readable from any thread). Memory actually
    /// reserved is at most one chunk more.
    pub fn memory_usage(&self) -> usize {
        self.usage.load(Ordering::Relaxed)
    }
}

impl Default for Arena {
    fn default() -> Self {
        Self::new()
    }
}
