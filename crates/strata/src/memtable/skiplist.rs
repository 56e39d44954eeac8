//! [`SkipList`]: the memtable's ordered index, a skiplist whose nodes live in an [`Arena`].
//!
//! Concurrency: one writer at a time (inserts take `writer`, a mutex the group-commit leader
//! holds uncontended), any number of lock-free readers. A node is fully written before it is
//! published with a `Release` store into its predecessors' towers; readers follow links with
//! `Acquire` loads, so they never see a half-built node. Nodes are never removed or changed
//! after publication.
//!
//! Each entry is an internal key plus a value, stored right after the node's tower.

use std::cmp::Ordering as CmpOrdering;
use std::mem::{offset_of, size_of};
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::arena::Arena;
use crate::key;

/// Tallest tower; with branching 4 this indexes ~16M entries well.
pub const MAX_HEIGHT: usize = 12;

#[repr(C)]
pub(crate) struct Node {
    key_len: u32,
    value_len: u32,
    height: u32,
    // `height` link slots follow, then key bytes, then value bytes.
    tower: [AtomicPtr<Node>; 0],
}

const TOWER_OFFSET: usize = offset_of!(Node, tower);

impl Node {
    /// # Safety
    /// `node` must point at a live node and `level < node.height`.
    #[inline]
    unsafe fn link(node: *const Node, level: usize) -> *const AtomicPtr<Node> {
        // SAFETY: per the contract, the slot lies inside the node's allocation; the pointer is
        // derived from `node` (arena provenance), not from a reference to the header.
        unsafe {
            node.cast::<u8>()
                .add(TOWER_OFFSET)
                .cast::<AtomicPtr<Node>>()
                .add(level)
        }
    }

    /// # Safety
    /// `node` must point at a live node.
    #[inline]
    unsafe fn next(node: *const Node, level: usize) -> *mut Node {
        // SAFETY: forwarded contract; the Acquire pairs with the Release in `insert`.
        unsafe { (*Node::link(node, level)).load(Ordering::Acquire) }
    }

    /// # Safety
    /// `node` must point at a live, non-head node; the returned slice lives as long as the arena.
    #[inline]
    pub(crate) unsafe fn key<'a>(node: *const Node) -> &'a [u8] {
        // SAFETY: key bytes were written before publication and are never changed.
        unsafe {
            let h = (*node).height as usize;
            let p = node
                .cast::<u8>()
                .add(TOWER_OFFSET + h * size_of::<AtomicPtr<Node>>());
            std::slice::from_raw_parts(p, (*node).key_len as usize)
        }
    }

    /// # Safety
    /// As for [`Node::key`].
    #[inline]
    pub(crate) unsafe fn value<'a>(node: *const Node) -> &'a [u8] {
        // SAFETY: value bytes follow the key and were written before publication.
        unsafe {
            let h = (*node).height as usize;
            let p = node
                .cast::<u8>()
                .add(TOWER_OFFSET + h * size_of::<AtomicPtr<Node>>() + (*node).key_len as usize);
            std::slice::from_raw_parts(p, (*node).value_len as usize)
        }
    }
}

struct Writer {
    arena: Arena,
    rng: u64,
}

/// An arena-backed concurrent skiplist of (internal key, value) entries.
pub struct SkipList {
    head: *const Node,
    max_height: AtomicUsize,
    len: AtomicUsize,
    memory: AtomicUsize,
    /// Serializes inserts; guards the arena.
    writer: Mutex<Writer>,
}

// SAFETY: nodes are immutable after publication (links are atomics), the arena is only
// touched under `writer`, and every node lives as long as the list.
unsafe impl Send for SkipList {}
// SAFETY: as above; shared access only reads published nodes or goes through `writer`.
unsafe impl Sync for SkipList {}

/// Hints the CPU to start loading `node`'s first cache line (no-op when null).
#[inline(always)]
fn prefetch(node: *const Node) {
    crate::hint::prefetch(node.cast());
}

fn node_size(height: usize, key_len: usize, value_len: usize) -> usize {
    TOWER_OFFSET + height * size_of::<AtomicPtr<Node>>() + key_len + value_len
}

impl SkipList {
    /// An empty list.
    pub fn new() -> Self {
        Self::with_arena(Arena::new())
    }

    /// An empty list whose memory comes from (and returns to) `pool`.
    pub fn with_pool(pool: std::sync::Arc<super::arena::ChunkPool>) -> Self {
        Self::with_arena(Arena::with_pool(pool))
    }

    fn with_arena(mut arena: Arena) -> Self {
        let head = Self::alloc_node(&mut arena, MAX_HEIGHT, &[], None, &[]);
        SkipList {
            head,
            max_height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            memory: AtomicUsize::new(arena.memory_usage()),
            writer: Mutex::new(Writer {
                arena,
                rng: 0x2545_f491_4f6c_dd1d,
            }),
        }
    }

    /// A node for internal key (`user_key`, `trailer`) and `value`; the head has no key at
    /// all (`trailer` None).
    fn alloc_node(
        arena: &mut Arena,
        height: usize,
        user_key: &[u8],
        trailer: Option<u64>,
        value: &[u8],
    ) -> *const Node {
        let key_len = user_key.len() + if trailer.is_some() { 8 } else { 0 };
        let p = arena
            .alloc(node_size(height, key_len, value.len()))
            .cast::<Node>();
        // SAFETY: `p` is a fresh, zeroed, 8-aligned allocation of the full node size; zeroed
        // memory is a valid null `AtomicPtr` for every link slot.
        unsafe {
            ptr::addr_of_mut!((*p).key_len).write(key_len as u32);
            ptr::addr_of_mut!((*p).value_len).write(value.len() as u32);
            ptr::addr_of_mut!((*p).height).write(height as u32);
            let data = p
                .cast::<u8>()
                .add(TOWER_OFFSET + height * size_of::<AtomicPtr<Node>>());
            ptr::copy_nonoverlapping(user_key.as_ptr(), data, user_key.len());
            if let Some(t) = trailer {
                let t = t.to_le_bytes();
                ptr::copy_nonoverlapping(t.as_ptr(), data.add(user_key.len()), 8);
            }
            ptr::copy_nonoverlapping(value.as_ptr(), data.add(key_len), value.len());
        }
        p
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Arena bytes in use.
    pub fn memory_usage(&self) -> usize {
        self.memory.load(Ordering::Relaxed)
    }

    /// Inserts the entry whose internal key is (`user_key`, `trailer`), writing the key
    /// straight into the node (no temporary key buffer on the write path).
    /// REQUIRES: no entry with an equal internal key exists (sequence numbers are unique, so
    /// the engine never inserts one twice).
    pub fn insert(&self, user_key: &[u8], trailer: u64, value: &[u8]) {
        let mut w = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut prev = [self.head; MAX_HEIGHT];
        self.find_prev_parts(user_key, trailer, &mut prev);
        let height = {
            let mut h = 1;
            while h < MAX_HEIGHT {
                w.rng ^= w.rng << 13;
                w.rng ^= w.rng >> 7;
                w.rng ^= w.rng << 17;
                if w.rng & 3 != 0 {
                    break;
                }
                h += 1;
            }
            h
        };
        let cur_max = self.max_height.load(Ordering::Relaxed);
        if height > cur_max {
            // Levels above the old max have the head as predecessor (already in `prev`).
            self.max_height.store(height, Ordering::Relaxed);
        }
        let node = Self::alloc_node(&mut w.arena, height, user_key, Some(trailer), value);
        self.memory.store(w.arena.memory_usage(), Ordering::Relaxed);
        for (level, &p) in prev.iter().enumerate().take(height) {
            // SAFETY: `node` is ours and unpublished; `p` is the head or a published node whose
            // height exceeds `level` (it was found at this level).
            unsafe {
                let next = Node::next(p, level);
                (*Node::link(node, level)).store(next, Ordering::Relaxed);
                (*Node::link(p, level)).store(node.cast_mut(), Ordering::Release);
            }
        }
        self.len.fetch_add(1, Ordering::Release);
    }

    /// First node whose key is >= `target`, or null. Fills `prev` with the last node < target
    /// at each level.
    fn find_greater_or_equal(
        &self,
        target: &[u8],
        prev: Option<&mut [*const Node; MAX_HEIGHT]>,
    ) -> *const Node {
        self.descend(|k| key::compare(k, target) == CmpOrdering::Less, prev)
    }

    /// As `find_greater_or_equal` with `prev`, for the target (`user_key`, `trailer`).
    fn find_prev_parts(&self, user_key: &[u8], trailer: u64, prev: &mut [*const Node; MAX_HEIGHT]) {
        self.descend(
            |k| key::compare_parts(k, user_key, trailer) == CmpOrdering::Less,
            Some(prev),
        );
    }

    /// The search every lookup and insert shares: first node whose key is not `before` the
    /// target, filling `prev` with the last node before it at each level.
    ///
    /// Nearly all of its time is cache misses on the nodes it visits (perf: 77 % of insert
    /// samples on the first load from the next node), so it overlaps them: while comparing the
    /// next node at this level it prefetches the node the descent visits if it drops a level.
    /// (26 % faster inserts into a 250K-entry list: `benches/micro`, memtable/insert.)
    #[inline(always)]
    fn descend(
        &self,
        mut before: impl FnMut(&[u8]) -> bool,
        mut prev: Option<&mut [*const Node; MAX_HEIGHT]>,
    ) -> *const Node {
        let mut x = self.head;
        let mut level = self.max_height.load(Ordering::Relaxed) - 1;
        // The last node found not before the target: when the descent meets it again one level
        // down it needs no second comparison.
        let mut bigger: *const Node = ptr::null();
        loop {
            // SAFETY: `x` is the head or a published node with height > level.
            let next = unsafe { Node::next(x, level) };
            if level > 0 {
                // SAFETY: as above, level - 1 < height of `x`.
                prefetch(unsafe { Node::next(x, level - 1) });
            }
            if !next.is_null() && !ptr::eq(next, bigger) {
                // SAFETY: `next` is a published node of this list.
                if before(unsafe { Node::key(next) }) {
                    x = next;
                    continue;
                }
                bigger = next;
            }
            if let Some(p) = prev.as_deref_mut() {
                p[level] = x;
            }
            if level == 0 {
                return next;
            }
            level -= 1;
        }
    }

    /// Last node whose key is < `target`, or null: the level-0 predecessor that the descent
    /// of `find_greater_or_equal` ends at.
    fn find_less_than(&self, target: &[u8]) -> *const Node {
        let mut prev = [self.head; MAX_HEIGHT];
        self.find_greater_or_equal(target, Some(&mut prev));
        if prev[0] == self.head {
            ptr::null()
        } else {
            prev[0]
        }
    }

    fn find_last(&self) -> *const Node {
        let mut x = self.head;
        let mut level = self.max_height.load(Ordering::Relaxed) - 1;
        loop {
            // SAFETY: as in `find_greater_or_equal`.
            let next = unsafe { Node::next(x, level) };
            if !next.is_null() {
                x = next;
                continue;
            }
            if level == 0 {
                return if x == self.head { ptr::null() } else { x };
            }
            level -= 1;
        }
    }

    pub(crate) fn seek(&self, target: &[u8]) -> *const Node {
        self.find_greater_or_equal(target, None)
    }

    pub(crate) fn first(&self) -> *const Node {
        // SAFETY: the head has MAX_HEIGHT link slots.
        unsafe { Node::next(self.head, 0) }
    }

    pub(crate) fn last(&self) -> *const Node {
        self.find_last()
    }

    /// # Safety
    /// `node` must be a non-null node of this list.
    pub(crate) unsafe fn next_of(&self, node: *const Node) -> *const Node {
        // SAFETY: forwarded contract.
        unsafe { Node::next(node, 0) }
    }

    /// # Safety
    /// `node` must be a non-null node of this list.
    pub(crate) unsafe fn prev_of(&self, node: *const Node) -> *const Node {
        // SAFETY: forwarded contract.
        self.find_less_than(unsafe { Node::key(node) })
    }
}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}
