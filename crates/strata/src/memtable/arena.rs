//! [`Arena`]: bump allocation for the memtable's skiplist nodes.
//!
//! Memory is handed out in 8-byte aligned pieces carved from large chunks and is freed only
//! when the arena drops, so pointers into it stay valid for as long as the owning memtable.
//! Allocation is single-threaded: the skiplist calls it only while holding its writer lock.
//!
//! A database's memtables share a [`ChunkPool`]: a dropped arena hands its chunks to the
//! next one, pages already faulted in, so that in steady state a write touches no fresh page
//! of the memtable (docs/design/core-engine.md, "Tail latency of a put").

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const CHUNK: usize = 256 << 10;

/// Chunks of dropped arenas, kept mapped and faulted in for the next arenas of one database,
/// up to a byte limit.
#[derive(Debug)]
pub struct ChunkPool {
    chunks: Mutex<Vec<memmap2::MmapMut>>,
    max_chunks: usize,
}

impl ChunkPool {
    /// A pool keeping at most `max_bytes` of chunks (rounded down to whole chunks), and
    /// two chunks however small that is (a small memtable's arena is one chunk: recycled
    /// too, so every test's memtables exercise recycling).
    pub fn new(max_bytes: usize) -> Self {
        ChunkPool {
            chunks: Mutex::new(Vec::new()),
            max_chunks: (max_bytes / CHUNK).max(2),
        }
    }

    fn take(&self) -> Option<memmap2::MmapMut> {
        crate::sync::lock(&self.chunks).pop()
    }

    /// Keeps what fits, unmaps the rest (outside the lock).
    fn give(&self, mut chunks: Vec<memmap2::MmapMut>) {
        {
            let mut pool = crate::sync::lock(&self.chunks);
            let keep = self.max_chunks.saturating_sub(pool.len()).min(chunks.len());
            pool.extend(chunks.drain(..keep));
        }
        drop(chunks);
    }

    /// Bytes held for the next arenas.
    pub fn bytes(&self) -> usize {
        crate::sync::lock(&self.chunks).len() * CHUNK
    }
}

/// A bump allocator. REQUIRES: `alloc` is never called concurrently (the skiplist's writer
/// mutex guarantees it).
pub struct Arena {
    /// Standard chunks (`CHUNK` bytes), returned to the pool on drop.
    chunks: Vec<memmap2::MmapMut>,
    /// Chunks of one large entry each.
    large: Vec<memmap2::MmapMut>,
    ptr: *mut u8,
    remaining: usize,
    /// The current chunk came from the pool: its bytes are zeroed as they are handed out.
    recycled: bool,
    usage: AtomicUsize,
    pool: Option<Arc<ChunkPool>>,
}

// SAFETY: the raw pointer points into `chunks`, which the arena owns; moving the arena to another
// thread moves ownership of the chunks with it.
unsafe impl Send for Arena {}

impl Arena {
    /// An empty arena with chunks of its own.
    pub fn new() -> Self {
        Arena {
            chunks: Vec::new(),
            large: Vec::new(),
            ptr: std::ptr::null_mut(),
            remaining: 0,
            recycled: false,
            usage: AtomicUsize::new(0),
            pool: None,
        }
    }

    /// An empty arena that takes chunks from `pool` and gives them back when dropped.
    pub fn with_pool(pool: Arc<ChunkPool>) -> Self {
        let mut arena = Arena::new();
        arena.pool = Some(pool);
        arena
    }

    /// Allocates `size` bytes aligned to 8. The memory is zeroed.
    pub fn alloc(&mut self, size: usize) -> *mut u8 {
        let size = (size + 7) & !7;
        if size > self.remaining {
            if size > CHUNK / 4 {
                // Large entries get a chunk of their own, so the current chunk is not wasted.
                self.usage.fetch_add(size, Ordering::Relaxed);
                let mut chunk = map_chunk(size);
                let p = chunk.as_mut_ptr();
                self.large.push(chunk);
                return p;
            }
            // The unused tail of the old chunk is lost: count it.
            self.usage.fetch_add(self.remaining, Ordering::Relaxed);
            let (mut chunk, recycled) = match self.pool.as_ref().and_then(|p| p.take()) {
                Some(chunk) => (chunk, true),
                None => (map_chunk(CHUNK), false),
            };
            self.ptr = chunk.as_mut_ptr();
            self.remaining = CHUNK;
            self.recycled = recycled;
            self.chunks.push(chunk);
        }
        self.usage.fetch_add(size, Ordering::Relaxed);
        let p = self.ptr;
        if self.recycled {
            // SAFETY: `p..p + size` lies inside the current chunk (`size <= remaining`) and
            // has not been handed out by this arena.
            unsafe { std::ptr::write_bytes(p, 0, size) };
        }
        // SAFETY: `size <= remaining`, so `p + size` stays inside the current chunk.
        self.ptr = unsafe { self.ptr.add(size) };
        self.remaining -= size;
        p
    }

    /// Bytes handed out plus chunk tails wasted (readable from any thread). Memory actually
    /// reserved is at most one chunk more.
    pub fn memory_usage(&self) -> usize {
        self.usage.load(Ordering::Relaxed)
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.give(std::mem::take(&mut self.chunks));
        }
    }
}

/// A fresh zeroed chunk of `bytes`, mapped straight from the kernel (page aligned) and
/// unmapped when dropped. Through `malloc`, freed memtables' chunks stayed in the allocator's
/// heaps (glibc raises its mmap threshold after the first free of a large block), which
/// showed as 30+ MiB of resident memory above the memtable budget. Pages fault in as they
/// are written: faulting a chunk in at once (`MAP_POPULATE`, ~80 us for 256 KiB) made one
/// 4 KiB write in 60 wait that long (issue 32, part 0), and a pool's chunks are faulted in
/// already.
///
/// # Panics
/// If the kernel refuses the mapping: out of memory, as for any allocation.
fn map_chunk(bytes: usize) -> memmap2::MmapMut {
    memmap2::MmapOptions::new()
        .len(bytes.max(1))
        .map_anon()
        .unwrap_or_else(|e| panic!("memtable arena: cannot map {bytes} bytes: {e}"))
}

impl Default for Arena {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recycled_chunks_hand_out_zeroed_memory() {
        let pool = Arc::new(ChunkPool::new(4 * CHUNK));
        {
            let mut a = Arena::with_pool(pool.clone());
            for _ in 0..(2 * CHUNK / 1024) {
                let p = a.alloc(1000);
                // SAFETY: a fresh 1000-byte allocation.
                unsafe { std::ptr::write_bytes(p, 0xab, 1000) };
            }
        }
        assert_eq!(
            pool.bytes(),
            2 * CHUNK,
            "the dropped arena's chunks were kept"
        );
        let mut b = Arena::with_pool(pool.clone());
        for _ in 0..(2 * CHUNK / 1024) {
            let p = b.alloc(1000);
            // SAFETY: a fresh 1000-byte allocation.
            let bytes = unsafe { std::slice::from_raw_parts(p, 1000) };
            assert!(
                bytes.iter().all(|&x| x == 0),
                "a recycled chunk handed out old bytes"
            );
        }
        assert_eq!(pool.bytes(), 0, "the second arena took the pooled chunks");
    }

    #[test]
    fn the_pool_keeps_no_more_than_its_limit() {
        let pool = Arc::new(ChunkPool::new(3 * CHUNK));
        {
            let mut a = Arena::with_pool(pool.clone());
            for _ in 0..(5 * CHUNK / 1024) {
                a.alloc(1000);
            }
        }
        assert_eq!(pool.bytes(), 3 * CHUNK);
        let small = Arc::new(ChunkPool::new(64 << 10));
        drop({
            let mut a = Arena::with_pool(small.clone());
            for _ in 0..(5 * CHUNK / 1024) {
                a.alloc(1000);
            }
            a
        });
        assert_eq!(
            small.bytes(),
            2 * CHUNK,
            "two chunks however small the limit"
        );
    }
}
