//! [`Buffer`]: a memtable's coalescing buffer, the small puts it keeps beside its skiplist.
//!
//! Items are appended to an arena in arrival order and found through a hash index, so a
//! put costs an append and one or two index probes instead of a sorted insert into a
//! million-entry skiplist (docs/design/cleveldb.md, "Where a 50 B item's cost goes").
//! Order is made only when it is asked for: a sorted view, built by the first iterator
//! (or flush) that needs it and extended by later ones.
//!
//! Concurrency as the skiplist's: one writer at a time (the memtable's; `add` takes a
//! mutex that is uncontended), lock-free readers. An item is fully written before it is
//! published (a `Release` store into its index slot, its predecessor's `next` link and the
//! item count); readers load with `Acquire`. Items are never changed after publication,
//! except `next`, which goes from null to an item once.
//!
//! Item layout (8-byte aligned, in the arena):
//! ```text
//! prev: u64      the older item of the same user key in this buffer (0: none)
//! next: u64      the next item in arrival order (0: none yet)
//! key_len: u32   internal key length (user key + 8-byte trailer)
//! value_len: u32
//! internal key, value
//! ```

use std::cmp::Ordering as CmpOrdering;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueKind};
use crate::memtable::{Arena, ChunkPool, Lookup, Side};

const HEADER: usize = 24;
/// Index slots hold an item's address in the low 48 bits and a tag (16 more bits of the
/// key's hash) above it, so most probes of other keys are rejected without reading them.
const ADDR_BITS: u32 = 48;
const ADDR_MASK: u64 = (1 << ADDR_BITS) - 1;

/// An item's address; 0 is none.
type Item = *const u8;

/// The coalescing buffer of one memtable.
pub(crate) struct Buffer {
    /// Puts whose user key + value are shorter than this are taken.
    threshold: usize,
    /// Most items the index takes (7/10 of its slots).
    max_items: usize,
    /// Open addressing, linear probing; one slot per distinct user key.
    slots: memmap2::MmapMut,
    mask: u64,
    writer: Mutex<Writer>,
    /// The first item in arrival order (0 while empty).
    first: AtomicU64,
    /// Items published.
    count: AtomicUsize,
    /// Distinct user keys in the index (the tests' check of the index).
    #[cfg(test)]
    keys: AtomicUsize,
    usage: AtomicUsize,
    /// The last sorted view built, for the next to extend.
    sorted: Mutex<Option<Arc<SortedView>>>,
}

// SAFETY: items live in the arena owned by `writer` (freed only when the buffer drops) and
// are immutable once published but for their atomic `next` link; the index is atomics.
unsafe impl Send for Buffer {}
// SAFETY: as above: shared access reads published items and atomics only.
unsafe impl Sync for Buffer {}

struct Writer {
    arena: Arena,
    /// The last item appended (0 while empty).
    last: u64,
}

/// The items of a buffer up to a point, sorted by internal key.
struct SortedView {
    items: Vec<u64>,
    /// The last item in arrival order it covers (0: none).
    tail: u64,
}

/// A zeroed mapping of `len` bytes for the index, in huge pages where the kernel gives them
/// for the asking (transparent huge pages in `madvise` mode or `always`). In 4 KiB pages,
/// each page of a 16 MiB index faulted twice (a probe mapped the zero page, the put after
/// it copied it, with a TLB shootdown sent to the other core): an eighth of the writer's
/// time in a 50-byte fill, and p99.9 14 us. In huge pages it faults eight times per index
/// (each zeroes 2 MiB), p99.9 4 us, and random probes miss the TLB less. Not faulted in
/// when made: that put the whole index's zeroing (and the kernel's compaction of memory
/// for huge pages) inside one put at the memtable switch, 40-50 ms.
fn index_map(len: usize) -> memmap2::MmapMut {
    let map = memmap2::MmapOptions::new()
        .len(len)
        .map_anon()
        .unwrap_or_else(|e| panic!("coalescing buffer: cannot map its index: {e}"));
    // Only a hint: without huge pages the index faults in 4 KiB pages as it is used.
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    map
}

impl Buffer {
    /// A buffer taking puts shorter than `threshold` (user key + value), with an index of a
    /// slot per 64 bytes of `write_buffer_size` (a power of two), filled to at most 7/10:
    /// past that many items, `add` declines and the memtable reports itself full. (Items of
    /// 50-byte puts take 88 bytes of arena, so a 64 MiB memtable's 56 MiB hold ~670K, a
    /// load of 0.64 over its 1M slots; half as many slots cost 8 MiB more of index and
    /// zeroing for the same items.)
    pub(crate) fn new(threshold: usize, write_buffer_size: usize, pool: Arc<ChunkPool>) -> Self {
        let slots = (write_buffer_size / 64).max(64).next_power_of_two();
        let max_items = slots / 10 * 7;
        Buffer {
            threshold,
            max_items,
            slots: index_map(slots * 8),
            mask: slots as u64 - 1,
            writer: Mutex::new(Writer {
                arena: Arena::with_pool(pool),
                last: 0,
            }),
            first: AtomicU64::new(0),
            count: AtomicUsize::new(0),
            #[cfg(test)]
            keys: AtomicUsize::new(0),
            usage: AtomicUsize::new(0),
            sorted: Mutex::new(None),
        }
    }

    fn slot(&self, i: u64) -> &AtomicU64 {
        // SAFETY: the mapping is `mask + 1` 8-byte slots, page aligned, zero-initialised
        // (an empty slot), and lives as long as `self`; `i` is masked into range.
        unsafe {
            &*self
                .slots
                .as_ptr()
                .cast::<AtomicU64>()
                .add((i & self.mask) as usize)
        }
    }

    /// The slot index to start probing at for `user_key`, and its tag.
    fn hash(user_key: &[u8]) -> (u64, u64) {
        let h = xxhash_rust::xxh3::xxh3_64(user_key);
        (h, h >> ADDR_BITS)
    }

    /// Whether `add` keeps this entry (a small put).
    fn takes(&self, kind: ValueKind, user_key: &[u8], value: &[u8]) -> bool {
        kind == ValueKind::Put && user_key.len() + value.len() < self.threshold
    }

    /// The newest item of `user_key` and the slot holding it, or the empty slot where it
    /// would go, with the key's tag.
    fn find(&self, user_key: &[u8]) -> (u64, u64, u64) {
        let (h, tag) = Self::hash(user_key);
        let mut i = h;
        loop {
            let s = self.slot(i).load(Ordering::Acquire);
            if s == 0 {
                return (i, 0, tag);
            }
            if s >> ADDR_BITS == tag {
                let item = s & ADDR_MASK;
                // SAFETY: a non-empty slot holds a published item of this buffer.
                if unsafe { user_key_of(item as Item) } == user_key {
                    return (i, item, tag);
                }
            }
            i = i.wrapping_add(1);
        }
    }

    fn sorted_view(&self) -> Arc<SortedView> {
        let mut cached = crate::sync::lock(&self.sorted);
        let n = self.count.load(Ordering::Acquire);
        let old = match cached.as_ref() {
            Some(v) if v.items.len() == n => return v.clone(),
            other => other.cloned(),
        };
        let (sorted, tail) = old
            .as_ref()
            .map_or((&[][..], 0), |v| (&v.items[..], v.tail));
        let mut fresh = Vec::with_capacity(n - sorted.len());
        let mut at = if tail == 0 {
            self.first.load(Ordering::Acquire)
        } else {
            // SAFETY: `tail` is a published item; its `next` was published before `count`
            // covered the item after it.
            unsafe { next_of(tail as Item) }
        };
        while sorted.len() + fresh.len() < n {
            // SAFETY: `at` is a published item of this buffer.
            fresh.push((key_prefix(unsafe { user_key_of(at as Item) }), at));
            if sorted.len() + fresh.len() < n {
                // SAFETY: as above: fewer than `n` items walked, so `at` has a published
                // successor.
                at = unsafe { next_of(at as Item) };
            }
        }
        // The last in arrival order: where the next view goes on from.
        let tail = fresh.last().map_or(tail, |&(_, at)| at);
        // By the keys' first 8 bytes, and only where those tie by the items' internal keys:
        // most comparisons then read no item (sorted by internal key alone, the flush of a
        // 50-byte fill spent a third of a microsecond per item here, each comparison two
        // cache misses).
        fresh.sort_unstable_by(|&(pa, a), &(pb, b)| {
            pa.cmp(&pb).then_with(|| {
                // SAFETY: every entry is a published item of this buffer.
                let (a, b) = unsafe { (ikey_of(a as Item), ikey_of(b as Item)) };
                key::compare(a, b)
            })
        });
        let fresh: Vec<u64> = fresh.into_iter().map(|(_, at)| at).collect();
        let items = if sorted.is_empty() {
            fresh
        } else {
            merge_sorted(sorted, &fresh)
        };
        let view = Arc::new(SortedView { items, tail });
        *cached = Some(view.clone());
        view
    }
}

/// The first 8 bytes of `user_key`, big-endian, zero-padded: ordered as the keys are
/// wherever they differ (two keys whose prefixes tie are compared whole).
fn key_prefix(user_key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = user_key.len().min(8);
    b[..n].copy_from_slice(&user_key[..n]);
    u64::from_be_bytes(b)
}

/// The sorted merge of two sorted lists of items.
fn merge_sorted(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        // SAFETY: both hold published items.
        let (x, y) = unsafe { (ikey_of(a[i] as Item), ikey_of(b[j] as Item)) };
        if key::compare(x, y) != CmpOrdering::Greater {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// # Safety
/// `item` is a published item of a live buffer.
unsafe fn header(item: Item) -> (u64, usize, usize) {
    // SAFETY: the header's 24 bytes were written before publication; 8-byte aligned.
    unsafe {
        let prev = *item.cast::<u64>();
        let key_len = *item.add(16).cast::<u32>() as usize;
        let value_len = *item.add(20).cast::<u32>() as usize;
        (prev, key_len, value_len)
    }
}

/// # Safety
/// As `header`.
unsafe fn next_of(item: Item) -> u64 {
    // SAFETY: 8-byte aligned word of the item, only ever accessed atomically after
    // publication.
    unsafe { (*item.add(8).cast::<AtomicU64>()).load(Ordering::Acquire) }
}

/// # Safety
/// As `header`; the slice lives as long as the buffer.
unsafe fn ikey_of<'a>(item: Item) -> &'a [u8] {
    // SAFETY: forwarded; the key follows the header.
    unsafe {
        let (_, key_len, _) = header(item);
        std::slice::from_raw_parts(item.add(HEADER), key_len)
    }
}

/// # Safety
/// As `ikey_of`.
unsafe fn user_key_of<'a>(item: Item) -> &'a [u8] {
    // SAFETY: forwarded.
    let k = unsafe { ikey_of(item) };
    &k[..k.len() - 8]
}

/// # Safety
/// As `ikey_of`.
unsafe fn value_of<'a>(item: Item) -> &'a [u8] {
    // SAFETY: forwarded; the value follows the key.
    unsafe {
        let (_, key_len, value_len) = header(item);
        std::slice::from_raw_parts(item.add(HEADER + key_len), value_len)
    }
}

/// # Safety
/// As `ikey_of`.
unsafe fn trailer_of(item: Item) -> u64 {
    // SAFETY: forwarded.
    let k = unsafe { ikey_of(item) };
    u64::from_le_bytes(k[k.len() - 8..].try_into().expect("8-byte trailer"))
}

impl Side for Buffer {
    fn add(&self, seq: SeqNo, kind: ValueKind, user_key: &[u8], value: &[u8]) -> bool {
        if !self.takes(kind, user_key, value) {
            return false;
        }
        let n = self.count.load(Ordering::Relaxed);
        if n >= self.max_items {
            return false;
        }
        let mut w = crate::sync::lock(&self.writer);
        let (slot, older, tag) = self.find(user_key);
        let ikey_len = user_key.len() + 8;
        let size = HEADER + ikey_len + value.len();
        let p = w.arena.alloc(size);
        // SAFETY: `p` is a fresh, zeroed, 8-byte aligned allocation of `size` bytes that no
        // reader can reach before the stores below publish it.
        unsafe {
            p.cast::<u64>().write(older);
            p.add(16).cast::<u32>().write(ikey_len as u32);
            p.add(20).cast::<u32>().write(value.len() as u32);
            let k = p.add(HEADER);
            std::ptr::copy_nonoverlapping(user_key.as_ptr(), k, user_key.len());
            let trailer = key::pack_trailer(seq, kind).to_le_bytes();
            std::ptr::copy_nonoverlapping(trailer.as_ptr(), k.add(user_key.len()), 8);
            std::ptr::copy_nonoverlapping(value.as_ptr(), k.add(ikey_len), value.len());
        }
        let addr = p as u64;
        debug_assert_eq!(addr & !ADDR_MASK, 0, "item address beyond 48 bits");
        if w.last == 0 {
            self.first.store(addr, Ordering::Release);
        } else {
            // SAFETY: `last` is an item of this buffer; its `next` word is atomic.
            unsafe {
                (*(w.last as *const u8).add(8).cast::<AtomicU64>()).store(addr, Ordering::Release)
            };
        }
        w.last = addr;
        self.slot(slot)
            .store((tag << ADDR_BITS) | addr, Ordering::Release);
        #[cfg(test)]
        if older == 0 {
            self.keys.fetch_add(1, Ordering::Relaxed);
        }
        self.usage.store(w.arena.memory_usage(), Ordering::Relaxed);
        self.count.store(n + 1, Ordering::Release);
        true
    }

    fn prefetch(&self, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        if !self.takes(kind, user_key, value) {
            return;
        }
        // The probe's first slot: a cache miss into an index of megabytes, 85 % of
        // `find`'s time and a fifth of a 50-byte put's before this hint (issue 33).
        let slot = self.slot(Self::hash(user_key).0);
        crate::hint::prefetch(std::ptr::from_ref(slot).cast());
    }

    fn get(&self, user_key: &[u8], seq: SeqNo) -> Option<(SeqNo, Lookup)> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        let (_, mut item, _) = self.find(user_key);
        while item != 0 {
            // SAFETY: `item` is a published item (from the index or a `prev` link).
            let (t, prev) = unsafe { (trailer_of(item as Item), header(item as Item).0) };
            if SeqNo(t >> 8) <= seq {
                // SAFETY: as above.
                let v = unsafe { value_of(item as Item) };
                return Some((SeqNo(t >> 8), Lookup::Value(v.to_vec())));
            }
            item = prev;
        }
        None
    }

    /// Its items' arena and its index (mapped whole at creation; its pages fault in as
    /// keys land on them, nearly all once a memtable is a few hundred thousand items in):
    /// counted against `write_buffer_size`, so the memtables' budget bounds the buffer's
    /// memory (not counting the index let a database under a 256 MiB limit be killed).
    fn memory_usage(&self) -> usize {
        self.usage.load(Ordering::Relaxed) + self.slots.len()
    }

    fn len(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    fn full(&self) -> bool {
        self.count.load(Ordering::Relaxed) >= self.max_items
    }

    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        let view = self.sorted_view();
        Box::new(BufferIterator {
            _buffer: self,
            view,
            at: usize::MAX,
        })
    }
}

/// A sorted view of a buffer's items as it was when the iterator was made; keeps the
/// buffer alive.
struct BufferIterator {
    /// Keeps the items the view names alive.
    _buffer: Arc<Buffer>,
    view: Arc<SortedView>,
    /// `usize::MAX`: not positioned.
    at: usize,
}

impl BufferIterator {
    fn item(&self) -> Option<Item> {
        self.view.items.get(self.at).map(|&a| a as Item)
    }
}

impl InternalIterator for BufferIterator {
    fn valid(&self) -> bool {
        self.at < self.view.items.len()
    }

    fn seek_to_first(&mut self) {
        self.at = 0;
    }

    fn seek_to_last(&mut self) {
        self.at = self.view.items.len().wrapping_sub(1);
    }

    fn seek(&mut self, target: &[u8]) {
        self.at = self.view.items.partition_point(|&a| {
            // SAFETY: the view holds published items of `self._buffer`, which it keeps.
            let k = unsafe { ikey_of(a as Item) };
            key::compare(k, target) == CmpOrdering::Less
        });
    }

    fn next(&mut self) {
        if self.valid() {
            self.at += 1;
        }
    }

    fn prev(&mut self) {
        if self.valid() {
            self.at = self.at.wrapping_sub(1);
        }
    }

    fn key(&self) -> &[u8] {
        // SAFETY: an item of the view, alive while `self._buffer` is.
        self.item().map_or(&[], |i| unsafe { ikey_of(i) })
    }

    fn value(&self) -> &[u8] {
        // SAFETY: as in `key`.
        self.item().map_or(&[], |i| unsafe { value_of(i) })
    }

    fn status(&self) -> crate::error::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memtable::MemTable;

    fn buffer(threshold: usize, write_buffer_size: usize) -> Arc<Buffer> {
        Arc::new(Buffer::new(
            threshold,
            write_buffer_size,
            Arc::new(ChunkPool::new(1 << 20)),
        ))
    }

    fn entries(it: &mut dyn InternalIterator) -> Vec<(Vec<u8>, u64, Vec<u8>)> {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            let p = key::parse(it.key()).unwrap();
            out.push((p.user_key.to_vec(), p.seq.0, it.value().to_vec()));
            it.next();
        }
        out
    }

    #[test]
    fn takes_small_puts_only() {
        let b = buffer(16, 1 << 20);
        assert!(b.add(SeqNo(1), ValueKind::Put, b"k", b"small"));
        assert!(!b.add(SeqNo(2), ValueKind::Put, b"k", &[0; 15]), "16 bytes");
        assert!(!b.add(SeqNo(3), ValueKind::Delete, b"k", b""));
        assert!(!b.add(SeqNo(4), ValueKind::Pointer, b"k", b"p"));
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn get_walks_back_to_the_version_a_sequence_sees() {
        let b = buffer(64, 1 << 20);
        for (seq, v) in [(3, "a3"), (5, "a5"), (9, "a9")] {
            assert!(b.add(SeqNo(seq), ValueKind::Put, b"a", v.as_bytes()));
        }
        assert!(b.add(SeqNo(6), ValueKind::Put, b"b", b"b6"));
        let got = |k: &[u8], s| b.get(k, SeqNo(s)).map(|(s, l)| (s.0, l));
        assert_eq!(got(b"a", 2), None);
        assert_eq!(got(b"a", 4), Some((3, Lookup::Value(b"a3".to_vec()))));
        assert_eq!(got(b"a", 8), Some((5, Lookup::Value(b"a5".to_vec()))));
        assert_eq!(got(b"a", 99), Some((9, Lookup::Value(b"a9".to_vec()))));
        assert_eq!(got(b"b", 99), Some((6, Lookup::Value(b"b6".to_vec()))));
        assert_eq!(got(b"c", 99), None);
        assert_eq!(got(b"", 99), None);
    }

    #[test]
    fn iterators_see_items_sorted_and_views_extend() {
        let b = buffer(64, 1 << 20);
        let mut want = Vec::new();
        let mut seq = 0;
        for round in 0..3u64 {
            for i in (0..200u32).rev() {
                seq += 1;
                let k = format!("k{:04}", (i * 7919) % 1000).into_bytes();
                let v = format!("v{round}").into_bytes();
                assert!(b.add(SeqNo(seq), ValueKind::Put, &k, &v));
                want.push((k, seq, v));
            }
            // A view per round: the next one extends it with the round's items.
            want.sort_by(|a, c| a.0.cmp(&c.0).then(c.1.cmp(&a.1)));
            assert_eq!(entries(&mut *b.clone().iter()), want);
        }
        let mut it = b.clone().iter();
        it.seek(&key::seek_key(b"k0500", SeqNo::MAX));
        assert!(it.valid());
        assert!(key::parse(it.key()).unwrap().user_key >= &b"k0500"[..]);
        it.seek_to_last();
        let last = key::parse(it.key()).unwrap();
        assert_eq!(
            (last.user_key, last.seq.0),
            (&want.last().unwrap().0[..], want.last().unwrap().1)
        );
        it.prev();
        assert!(it.valid());
        it.seek_to_first();
        it.prev();
        assert!(!it.valid());
    }

    #[test]
    fn a_full_index_declines_and_freezes_its_memtable() {
        // 64 KiB / 64: 1,024 slots, filled to 7/10: 714 items.
        let b = buffer(64, 64 << 10);
        let mut taken = 0;
        for i in 0..2000u32 {
            if b.add(
                SeqNo(u64::from(i) + 1),
                ValueKind::Put,
                &i.to_be_bytes(),
                b"v",
            ) {
                taken += 1;
            }
        }
        assert_eq!(taken, 714);
        assert!(b.full());
        let m = MemTable::new(1).with_side(Some(b.clone()));
        assert!(m.is_full(usize::MAX), "a full side freezes the memtable");
        // What the side declines, the skiplist takes.
        m.add(SeqNo(5000), ValueKind::Put, b"late", b"v");
        assert_eq!(
            m.get(b"late", SeqNo::MAX).map(|f| f.1),
            Some(Lookup::Value(b"v".to_vec()))
        );
        assert_eq!(m.len(), 715);
    }

    #[test]
    fn a_memtable_merges_its_side_and_skiplist_by_sequence() {
        let m = Arc::new(MemTable::new(1).with_side(Some(buffer(8, 1 << 20))));
        m.add(SeqNo(1), ValueKind::Put, b"a", b"1");
        m.add(SeqNo(2), ValueKind::Put, b"a", b"a large value");
        m.add(SeqNo(3), ValueKind::Put, b"a", b"3");
        m.add(SeqNo(4), ValueKind::Delete, b"a", b"");
        m.add(SeqNo(5), ValueKind::Put, b"b", b"5");
        let got = |s| m.get(b"a", SeqNo(s)).map(|f| f.1);
        assert_eq!(got(1), Some(Lookup::Value(b"1".to_vec())));
        assert_eq!(got(2), Some(Lookup::Value(b"a large value".to_vec())));
        assert_eq!(got(3), Some(Lookup::Value(b"3".to_vec())));
        assert_eq!(got(4), Some(Lookup::Deleted));
        assert_eq!(
            m.get(b"b", SeqNo(9)).map(|f| f.1),
            Some(Lookup::Value(b"5".to_vec()))
        );
        let seen: Vec<_> = entries(&mut m.iter())
            .into_iter()
            .map(|(k, s, _)| (k, s))
            .collect();
        let want: Vec<(Vec<u8>, u64)> = vec![
            (b"a".to_vec(), 4),
            (b"a".to_vec(), 3),
            (b"a".to_vec(), 2),
            (b"a".to_vec(), 1),
            (b"b".to_vec(), 5),
        ];
        assert_eq!(seen, want);
        assert_eq!(m.len(), 5);
    }

    #[test]
    fn readers_see_published_items_while_the_writer_appends() {
        let b = buffer(64, 16 << 20);
        let writer = {
            let b = b.clone();
            std::thread::spawn(move || {
                for i in 0..50_000u32 {
                    let k = (i % 5000).to_be_bytes();
                    assert!(b.add(
                        SeqNo(u64::from(i) + 1),
                        ValueKind::Put,
                        &k,
                        &i.to_le_bytes()
                    ));
                }
            })
        };
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || {
                    for round in 0..20u32 {
                        // Gets: a key's newest item, whatever has been published.
                        for k in 0..5000u32 {
                            if let Some((s, Lookup::Value(v))) = b.get(&k.to_be_bytes(), SeqNo::MAX)
                            {
                                let i = u32::from_le_bytes(v.try_into().unwrap());
                                assert_eq!((i % 5000, u64::from(i) + 1), (k, s.0));
                            }
                        }
                        // Iterators: sorted, every value matching its key.
                        let mut it = b.clone().iter();
                        it.seek_to_first();
                        let mut last: Option<Vec<u8>> = None;
                        while it.valid() {
                            if let Some(l) = &last {
                                assert_eq!(
                                    key::compare(l, it.key()),
                                    CmpOrdering::Less,
                                    "round {round}"
                                );
                            }
                            let p = key::parse(it.key()).unwrap();
                            let i = u32::from_le_bytes(it.value().try_into().unwrap());
                            assert_eq!(u64::from(i) + 1, p.seq.0);
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
        assert_eq!(b.len(), 50_000);
        assert_eq!(b.keys.load(Ordering::Relaxed), 5000);
    }
}
