//! [`MemTable`]: the in-memory write buffer, an arena skiplist of internal keys.
//!
//! Write path: the group-commit leader inserts each batch entry (one writer at a time). Read
//! path: `get` and iterators read concurrently without locks. A memtable is never changed after
//! it becomes immutable; the flush thread turns it into an L0 table.

mod arena;
mod filter;
mod skiplist;

use std::sync::Arc;

pub use arena::ChunkPool;
use skiplist::Node;
pub use skiplist::SkipList;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueKind};

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
}

/// An in-memory table of recent writes.
pub struct MemTable {
    list: SkipList,
    /// Lets point lookups of keys it does not hold skip the skiplist
    /// (`Options::memtable_filter_ratio`).
    filter: Option<filter::KeyFilter>,
    /// Number of the WAL holding this memtable's writes (0 if the WAL is disabled).
    wal_number: u64,
}

impl MemTable {
    /// An empty memtable whose writes go to WAL `wal_number`.
    pub fn new(wal_number: u64) -> Self {
        MemTable {
            list: SkipList::new(),
            filter: None,
            wal_number,
        }
    }

    /// An empty memtable for a database's writes: a key filter of about `filter_bytes`
    /// bytes (none if 0), memory from the database's `pool` of faulted-in chunks.
    pub fn for_writes(wal_number: u64, filter_bytes: usize, pool: Arc<ChunkPool>) -> Self {
        MemTable {
            list: SkipList::with_pool(pool),
            filter: (filter_bytes > 0).then(|| filter::KeyFilter::new(filter_bytes)),
            wal_number,
        }
    }

    /// The WAL that holds this memtable's writes.
    pub fn wal_number(&self) -> u64 {
        self.wal_number
    }

    /// Adds an entry. REQUIRES: a single writer at a time (the skiplist serializes anyway),
    /// and `seq` unique.
    pub fn add(&self, seq: SeqNo, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        if let Some(f) = &self.filter {
            f.insert(user_key);
        }
        self.list
            .insert(user_key, key::pack_trailer(seq, kind), value);
    }

    /// The newest version of `user_key` visible at `seq`, if any.
    pub fn get(&self, user_key: &[u8], seq: SeqNo) -> Option<Lookup> {
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
        Some(match p.kind {
            ValueKind::Put => Lookup::Value(v.to_vec()),
            ValueKind::Delete => Lookup::Deleted,
            ValueKind::Pointer => Lookup::Pointer(v.to_vec()),
        })
    }

    /// Bytes of memory used.
    pub fn memory_usage(&self) -> usize {
        self.list.memory_usage()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether no entry was added.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
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

    /// An iterator over the entries (sees entries added after its creation, too).
    pub fn iter(self: &Arc<Self>) -> MemTableIterator {
        MemTableIterator {
            mem: self.clone(),
            node: std::ptr::null(),
        }
    }
}

/// Iterator over a memtable; keeps the memtable alive.
pub struct MemTableIterator {
    mem: Arc<MemTable>,
    node: *const Node,
}

// SAFETY: `node` points into `mem`'s arena, which this iterator keeps alive; published nodes
// are immutable, so moving the cursor to another thread is sound.
unsafe impl Send for MemTableIterator {}

impl InternalIterator for MemTableIterator {
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
        assert_eq!(m.get(b"a", SeqNo(1)), Some(Lookup::Value(b"v1".to_vec())));
        assert_eq!(m.get(b"a", SeqNo(2)), Some(Lookup::Value(b"v2".to_vec())));
        assert_eq!(m.get(b"a", SeqNo(9)), Some(Lookup::Deleted));
        assert_eq!(m.get(b"b", SeqNo(3)), None);
        assert_eq!(m.get(b"b", SeqNo(4)), Some(Lookup::Value(vec![])));
        assert_eq!(m.get(b"", SeqNo(9)), None);
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
        assert_eq!(m.get(b"big", SeqNo(1)), Some(Lookup::Value(big)));
    }
}
