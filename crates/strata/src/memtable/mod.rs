//! [`MemTable`]: the in-memory write buffer, an arena skiplist of internal keys, and
//! optionally a [`Side`] that keeps some entries outside the skiplist (coalesce/: small
//! puts in a coalescing buffer).
//!
//! Write path: the group-commit leader inserts each batch entry (one writer at a time). Read
//! path: `get` and iterators read concurrently without locks. A memtable is never changed after
//! it becomes immutable; the flush thread turns it into an L0 table.

mod arena;
mod filter;
mod skiplist;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub(crate) use arena::Arena;
pub use arena::ChunkPool;
use skiplist::Node;
pub use skiplist::SkipList;

use crate::error::Result;
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{self, SeqNo, ValueKind};
use crate::range_del::{Fragments, Tombstone};

/// What a point lookup found in one source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The newest visible version is a value.
    Value(Vec<u8>),
    /// The newest visible version is a tombstone.
    Deleted,
    /// The newest visible version is a value in the value store, at this encoded
    /// `ValuePointer` (docs/format/value-pointer.md).
    Pointer(Vec<u8>),
    /// The newest visible version is an expiring value, as stored (its expiry, then the
    /// value: `key::split_expiring`); the reader judges whether it has expired.
    Expiring(Vec<u8>),
}

impl Lookup {
    /// What an entry of `kind` storing `value` answers.
    pub fn of(kind: ValueKind, value: Vec<u8>) -> Lookup {
        match kind {
            ValueKind::Put => Lookup::Value(value),
            // (Never among point entries; taken as what it is, a deletion.)
            ValueKind::Delete | ValueKind::RangeDelete => Lookup::Deleted,
            ValueKind::Pointer => Lookup::Pointer(value),
            ValueKind::Expiring => Lookup::Expiring(value),
        }
    }
}

/// Entries a memtable keeps outside its skiplist, in a structure of their own (the
/// coalescing buffer, coalesce/). The memtable offers it every entry first; what it takes,
/// it answers for in `get` and `iter`, and the memtable's own answers merge both by
/// sequence, so a key's versions may be split between the two.
pub(crate) trait Side: Send + Sync {
    /// Takes the entry if it is one the side keeps. REQUIRES: one writer at a time.
    fn add(&self, seq: SeqNo, kind: ValueKind, user_key: &[u8], value: &[u8]) -> bool;
    /// Asks for the memory `add` of this entry will probe to be brought into the cache.
    /// Only a hint, given before the entry's WAL record is written, so that a cache miss
    /// overlaps the write instead of following it. Default: nothing.
    fn prefetch(&self, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        let _ = (kind, user_key, value);
    }
    /// The newest version of `user_key` visible at `seq` that the side holds, with its
    /// sequence.
    fn get(&self, user_key: &[u8], seq: SeqNo) -> Option<(SeqNo, Lookup)>;
    /// Bytes of memory its entries use.
    fn memory_usage(&self) -> usize;
    /// Entries held.
    fn len(&self) -> usize;
    /// Whether it takes no more entries (the memtable then counts as full).
    fn full(&self) -> bool;
    /// Its entries as of now, sorted by internal key.
    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator>;
}

/// An in-memory table of recent writes.
pub struct MemTable {
    list: SkipList,
    /// Entries kept outside the skiplist (`Side`), if the database keeps any.
    side: Option<Arc<dyn Side>>,
    /// Lets point lookups of keys it does not hold skip the skiplist
    /// (`Options::memtable_filter_ratio`).
    filter: Option<filter::KeyFilter>,
    /// Number of the WAL holding this memtable's writes (0 if the WAL is disabled).
    wal_number: u64,
    /// Its range tombstones, kept beside the skiplist (crate::range_del).
    ranges: Ranges,
    /// The last sequence written before this memtable took the writes: every write after
    /// it is here or in a newer memtable (0 for a memtable not made by the write path).
    after: u64,
}

/// A memtable's range tombstones: the list a flush writes out, and its pieces for readers,
/// rebuilt by the first read after an addition (rebuilt at each one, 500 deletions of
/// 1,000-key runs took 72 us each at the median; the pieces are `O(n·p)` to build).
#[derive(Default)]
struct Ranges {
    /// How many it holds (read without the lock: by `len`, on the write path, and by
    /// reads of a memtable without any, which skip the lock).
    count: AtomicUsize,
    /// The list, and its pieces (`None`: not built since the last addition).
    held: Mutex<(Vec<Tombstone>, Option<Arc<Fragments>>)>,
    bytes: AtomicUsize,
}

impl MemTable {
    /// An empty memtable whose writes go to WAL `wal_number`.
    pub fn new(wal_number: u64) -> Self {
        MemTable {
            list: SkipList::new(),
            side: None,
            filter: None,
            wal_number,
            ranges: Ranges::default(),
            after: 0,
        }
    }

    /// An empty memtable for a database's writes: a key filter of about `filter_bytes`
    /// bytes (none if 0), memory from the database's `pool` of faulted-in chunks.
    pub fn for_writes(wal_number: u64, filter_bytes: usize, pool: Arc<ChunkPool>) -> Self {
        MemTable {
            list: SkipList::with_pool(pool),
            side: None,
            filter: (filter_bytes > 0).then(|| filter::KeyFilter::new(filter_bytes)),
            wal_number,
            ranges: Ranges::default(),
            after: 0,
        }
    }

    /// This memtable, offering every entry to `side` first.
    #[must_use]
    pub(crate) fn with_side(mut self, side: Option<Arc<dyn Side>>) -> Self {
        self.side = side;
        self
    }

    /// The WAL that holds this memtable's writes.
    pub fn wal_number(&self) -> u64 {
        self.wal_number
    }

    /// This memtable, taking the writes after sequence `last` (the last one written
    /// before it).
    #[must_use]
    pub(crate) fn taking_writes_after(mut self, last: u64) -> Self {
        self.after = last;
        self
    }

    /// The last sequence written before this memtable took the writes.
    pub(crate) fn writes_after(&self) -> u64 {
        self.after
    }

    /// Adds an entry; returns whether the side took it. REQUIRES: a single writer at a time
    /// (the skiplist serializes anyway), and `seq` unique.
    pub fn add(&self, seq: SeqNo, kind: ValueKind, user_key: &[u8], value: &[u8]) -> bool {
        if kind == ValueKind::RangeDelete {
            self.add_range(Tombstone {
                start: user_key.to_vec(),
                end: value.to_vec(),
                seq,
            });
            return false;
        }
        if self
            .side
            .as_ref()
            .is_some_and(|s| s.add(seq, kind, user_key, value))
        {
            return true;
        }
        if let Some(f) = &self.filter {
            f.insert(user_key);
        }
        self.list
            .insert(user_key, key::pack_trailer(seq, kind), value);
        false
    }

    /// Whether the memtable keeps some entries outside its skiplist (`Side`).
    pub fn has_side(&self) -> bool {
        self.side.is_some()
    }

    /// `Side::prefetch` for an entry about to be added.
    pub fn prefetch(&self, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        if let Some(s) = &self.side {
            s.prefetch(kind, user_key, value);
        }
    }

    /// The newest version of `user_key` visible at `seq`, if any, with its sequence.
    pub fn get(&self, user_key: &[u8], seq: SeqNo) -> Option<(SeqNo, Lookup)> {
        let Some(side) = &self.side else {
            return self.list_get(user_key, seq);
        };
        match (side.get(user_key, seq), self.list_get(user_key, seq)) {
            (Some((a, found)), Some((b, _))) if a > b => Some((a, found)),
            (_, Some(found)) | (Some(found), None) => Some(found),
            (None, None) => None,
        }
    }

    /// The newest version of `user_key` visible at `seq` in the skiplist, with its sequence.
    fn list_get(&self, user_key: &[u8], seq: SeqNo) -> Option<(SeqNo, Lookup)> {
        if self
            .filter
            .as_ref()
            .is_some_and(|f| !f.may_contain(user_key))
        {
            return None;
        }
        let target = key::seek_key(user_key, seq);
        let node = self.list.seek(&target);
        if node.is_null() {
            return None;
        }
        // SAFETY: `node` is a published node of `self.list`, alive as long as `self`.
        let (k, v) = unsafe { (Node::key(node), Node::value(node)) };
        let p = key::parse(k)?;
        if p.user_key != user_key {
            return None;
        }
        Some((p.seq, Lookup::of(p.kind, v.to_vec())))
    }

    /// Adds a range tombstone (an empty one, which covers nothing, is left out: it took
    /// its sequence, and that is all it does).
    fn add_range(&self, t: Tombstone) {
        if t.start >= t.end {
            return;
        }
        let mut held = crate::sync::lock(&self.ranges.held);
        self.ranges
            .bytes
            .fetch_add(t.footprint(), Ordering::Relaxed);
        held.0.push(t);
        held.1 = None;
        self.ranges.count.store(held.0.len(), Ordering::Release);
    }

    /// Whether it holds a range tombstone.
    pub fn has_ranges(&self) -> bool {
        self.ranges.count.load(Ordering::Acquire) > 0
    }

    /// Its range tombstones' pieces (empty if it has none).
    pub fn range_pieces(&self) -> Arc<Fragments> {
        if !self.has_ranges() {
            return Arc::default();
        }
        let mut held = crate::sync::lock(&self.ranges.held);
        let (list, pieces) = &mut *held;
        pieces
            .get_or_insert_with(|| Arc::new(Fragments::build(list.iter())))
            .clone()
    }

    /// Its range tombstones, in the order they were added.
    pub fn range_tombstones(&self) -> Vec<Tombstone> {
        if !self.has_ranges() {
            return Vec::new();
        }
        crate::sync::lock(&self.ranges.held).0.clone()
    }

    /// Bytes of memory used.
    pub fn memory_usage(&self) -> usize {
        self.list.memory_usage()
            + self.side.as_ref().map_or(0, |s| s.memory_usage())
            + self.ranges.bytes.load(Ordering::Relaxed)
    }

    /// Number of entries (range tombstones included).
    pub fn len(&self) -> usize {
        self.list.len()
            + self.side.as_ref().map_or(0, |s| s.len())
            + self.ranges.count.load(Ordering::Acquire)
    }

    /// Whether no entry was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the memtable should be frozen: it holds `budget` bytes, or its side takes
    /// no more entries. An empty memtable is never full, however large one entry makes it.
    pub fn is_full(&self, budget: usize) -> bool {
        (self.memory_usage() >= budget || self.side.as_ref().is_some_and(|s| s.full()))
            && !self.is_empty()
    }

    /// The smallest and largest user keys held, if any. For an immutable memtable this is
    /// the key range of the tables a flush of it writes (a flush drops versions, never keys).
    pub fn user_key_range(self: &Arc<Self>) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut it = self.iter();
        it.seek_to_first();
        if !it.valid() {
            return None;
        }
        let lo = key::parse(it.key())?.user_key.to_vec();
        it.seek_to_last();
        if !it.valid() {
            return None;
        }
        let hi = key::parse(it.key())?.user_key.to_vec();
        Some((lo, hi))
    }

    /// An iterator over the entries. The skiplist's part sees entries added after its
    /// creation, too; a side's part is the side as of the call.
    pub fn iter(self: &Arc<Self>) -> MemTableIterator {
        let list = ListIterator {
            mem: self.clone(),
            node: std::ptr::null(),
        };
        MemTableIterator(match &self.side {
            None => Cursor::List(list),
            Some(side) => Cursor::Merged(MergingIterator::new(vec![
                Box::new(list),
                side.clone().iter(),
            ])),
        })
    }
}

/// Iterator over a memtable; keeps the memtable alive.
pub struct MemTableIterator(Cursor);

enum Cursor {
    List(ListIterator),
    /// The skiplist's entries merged with the side's.
    Merged(MergingIterator),
}

/// Calls `$method` on whichever cursor `$it` holds, statically (a memtable without a side,
/// the common case, pays no dynamic call per step).
macro_rules! on_cursor {
    ($it:expr, $method:ident ( $($arg:expr),* )) => {
        match $it {
            Cursor::List(l) => l.$method($($arg),*),
            Cursor::Merged(m) => m.$method($($arg),*),
        }
    };
}

impl InternalIterator for MemTableIterator {
    fn valid(&self) -> bool {
        on_cursor!(&self.0, valid())
    }
    fn seek_to_first(&mut self) {
        on_cursor!(&mut self.0, seek_to_first());
    }
    fn seek_to_last(&mut self) {
        on_cursor!(&mut self.0, seek_to_last());
    }
    fn seek(&mut self, target: &[u8]) {
        on_cursor!(&mut self.0, seek(target));
    }
    fn next(&mut self) {
        on_cursor!(&mut self.0, next());
    }
    fn prev(&mut self) {
        on_cursor!(&mut self.0, prev());
    }
    fn key(&self) -> &[u8] {
        on_cursor!(&self.0, key())
    }
    fn value(&self) -> &[u8] {
        on_cursor!(&self.0, value())
    }
    fn status(&self) -> Result<()> {
        on_cursor!(&self.0, status())
    }
}

/// Iterator over a memtable's skiplist; keeps the memtable alive.
struct ListIterator {
    mem: Arc<MemTable>,
    node: *const Node,
}

// SAFETY: `node` points into `mem`'s arena, which this iterator keeps alive; published nodes
// are immutable, so moving the cursor to another thread is sound.
unsafe impl Send for ListIterator {}

impl InternalIterator for ListIterator {
    fn valid(&self) -> bool {
        !self.node.is_null()
    }

    fn seek_to_first(&mut self) {
        self.node = self.mem.list.first();
    }

    fn seek_to_last(&mut self) {
        self.node = self.mem.list.last();
    }

    fn seek(&mut self, target: &[u8]) {
        self.node = self.mem.list.seek(target);
    }

    // NB: the trait asks callers to move and read only a valid cursor, but these are safe
    // methods: called unpositioned they must not dereference the null node. Moving stays
    // invalid; reading gives an empty slice.

    fn next(&mut self) {
        if self.node.is_null() {
            return;
        }
        // SAFETY: `node` is non-null, so it is a node of `self.mem`'s list (set only from
        // the list's own `first`/`last`/`seek`/`next_of`/`prev_of`), alive while `mem` is.
        self.node = unsafe { self.mem.list.next_of(self.node) };
    }

    fn prev(&mut self) {
        if self.node.is_null() {
            return;
        }
        // SAFETY: as in `next`.
        self.node = unsafe { self.mem.list.prev_of(self.node) };
    }

    fn key(&self) -> &[u8] {
        if self.node.is_null() {
            return &[];
        }
        // SAFETY: as in `next`; the slice lives as long as `self.mem`, which `self` holds.
        unsafe { Node::key(self.node) }
    }

    fn value(&self) -> &[u8] {
        if self.node.is_null() {
            return &[];
        }
        // SAFETY: as for `key`.
        unsafe { Node::value(self.node) }
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unpositioned_iterator_moves_and_reads_nothing() {
        let m = Arc::new(MemTable::new(0));
        m.add(SeqNo(1), ValueKind::Put, b"a", b"1");
        let mut it = m.iter();
        // Never positioned: every call is safe and the cursor stays invalid (these once
        // dereferenced a null node).
        assert_eq!((it.key(), it.value()), (&[][..], &[][..]));
        it.next();
        assert!(!it.valid());
        it.prev();
        assert!(!it.valid());
        it.seek_to_first();
        assert!(it.valid());
        it.next();
        assert!(!it.valid());
        it.next();
        it.prev();
        assert!(!it.valid());
    }

    #[test]
    fn get_respects_sequence_and_tombstones() {
        let m = MemTable::new(1);
        m.add(SeqNo(1), ValueKind::Put, b"a", b"v1");
        m.add(SeqNo(2), ValueKind::Put, b"a", b"v2");
        m.add(SeqNo(3), ValueKind::Delete, b"a", b"");
        m.add(SeqNo(4), ValueKind::Put, b"b", b"");
        assert_eq!(
            m.get(b"a", SeqNo(1)).map(|f| f.1),
            Some(Lookup::Value(b"v1".to_vec()))
        );
        assert_eq!(
            m.get(b"a", SeqNo(2)).map(|f| f.1),
            Some(Lookup::Value(b"v2".to_vec()))
        );
        assert_eq!(m.get(b"a", SeqNo(9)).map(|f| f.1), Some(Lookup::Deleted));
        assert_eq!(m.get(b"b", SeqNo(3)).map(|f| f.1), None);
        assert_eq!(
            m.get(b"b", SeqNo(4)).map(|f| f.1),
            Some(Lookup::Value(vec![]))
        );
        assert_eq!(m.get(b"", SeqNo(9)).map(|f| f.1), None);
    }

    #[test]
    fn concurrent_readers_see_consistent_order() {
        let m = Arc::new(MemTable::new(1));
        let writer = {
            let m = m.clone();
            std::thread::spawn(move || {
                for i in 0..20_000u32 {
                    m.add(
                        SeqNo(u64::from(i) + 1),
                        ValueKind::Put,
                        &i.to_be_bytes(),
                        &[7u8; 10],
                    );
                }
            })
        };
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let mut it = m.iter();
                        it.seek_to_first();
                        let mut last: Option<Vec<u8>> = None;
                        while it.valid() {
                            if let Some(l) = &last {
                                assert_eq!(key::compare(l, it.key()), std::cmp::Ordering::Less);
                            }
                            assert_eq!(it.value(), &[7u8; 10]);
                            last = Some(it.key().to_vec());
                            it.next();
                        }
                    }
                })
            })
            .collect();
        writer.join().unwrap();
        for r in readers {
            r.join().unwrap();
        }
        assert_eq!(m.len(), 20_000);
    }

    #[test]
    fn large_values_fit() {
        let m = MemTable::new(1);
        let big = vec![3u8; 5 << 20];
        m.add(SeqNo(1), ValueKind::Put, b"big", &big);
        assert_eq!(
            m.get(b"big", SeqNo(1)).map(|f| f.1),
            Some(Lookup::Value(big))
        );
    }
}
