//! [`Oracle`]: the expected state of a stress run, in a memory-mapped file outside the
//! database, so it survives `kill -9` of the process writing it (the kernel keeps the shared
//! mapping's pages).
//!
//! Layout: a 1024-byte header (`magic: u64 = "STRSTRES"`, `version: u32 = 2`, `keys: u32`,
//! then from byte 64 one `u64` write counter per writer thread, up to 120 threads), then per
//! key two `u64` slots, `committed` and `pending`. A slot is 0 (never written) or
//! `VALID | DELETED? | SYNCED? | value id (48 bits)`. Value ids come from the writing thread's
//! counter, so they order each thread's writes (across runs too). A writer sets `pending`,
//! writes, then sets `committed` and clears `pending`; one writer per key at a time. After a
//! crash the database must hold the `committed` state or, if set, the `pending` one; an
//! unsynced write may be missing only if every later write of its thread is missing too.

use std::fs::OpenOptions;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::MmapMut;

const MAGIC: u64 = u64::from_le_bytes(*b"STRSTRES");
const HEADER: usize = 1024;
/// Writer threads the header has counters for.
pub const MAX_THREADS: u32 = 120;
const VALID: u64 = 1 << 63;
const DELETED: u64 = 1 << 62;
const SYNCED: u64 = 1 << 61;
const ID_MASK: u64 = (1 << 48) - 1;

/// One key's state in the oracle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot(pub u64);

impl Slot {
    /// Never written.
    pub const EMPTY: Slot = Slot(0);

    /// A put of value `id`.
    pub fn put(id: u64, synced: bool) -> Slot {
        Slot(VALID | (id & ID_MASK) | if synced { SYNCED } else { 0 })
    }

    /// A delete (`id` still advances, so states stay distinct).
    pub fn delete(id: u64, synced: bool) -> Slot {
        Slot(VALID | DELETED | (id & ID_MASK) | if synced { SYNCED } else { 0 })
    }

    /// Whether anything was ever written.
    pub fn is_set(self) -> bool {
        self.0 & VALID != 0
    }

    /// Whether the state is "absent" (never written or deleted).
    pub fn is_absent(self) -> bool {
        !self.is_set() || self.0 & DELETED != 0
    }

    /// Whether the write was synced.
    pub fn synced(self) -> bool {
        self.0 & SYNCED != 0
    }

    /// The value id.
    pub fn id(self) -> u64 {
        self.0 & ID_MASK
    }
}

/// Of every 1,000 values, how many [`value_for`] makes large (5-65 KB); 0 unless a run
/// sets it ([`set_large_values`]).
static LARGE_PER_MILLE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Makes a `fraction` of the values [`value_for`] gives 5-65 KB long (the rest stay under
/// 140 bytes). Every process that writes or checks one oracle must set the same fraction.
pub fn set_large_values(fraction: f64) {
    let per_mille = (fraction.clamp(0.0, 1.0) * 1000.0).round() as u32;
    LARGE_PER_MILLE.store(per_mille, Ordering::Relaxed);
}

/// The smallest padding [`value_for`] gives a value that is not large (0 unless set).
static SMALL_FROM: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Makes the values that are not large at least `from` bytes of padding long (up to
/// `from + 119`): two-key batches of 100-250 B values make WAL groups of 256-512 B, the
/// ones a mapped log copies with the C library's copy. Every process that writes or checks
/// one oracle must set the same value.
pub fn set_small_values_from(from: usize) {
    SMALL_FROM.store(from, Ordering::Relaxed);
}

/// The value bytes for (key index, value id): self-describing, with a length that varies.
pub fn value_for(key: u32, id: u64) -> Vec<u8> {
    let mut v = format!("v{key}:{id}:").into_bytes();
    let mixed =
        u64::from(key).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ id.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let h = mixed >> 56;
    let large = LARGE_PER_MILLE.load(Ordering::Relaxed);
    let len = if large > 0 && (mixed >> 16) % 1000 < u64::from(large) {
        5000 + (mixed >> 24) as usize % 60_001
    } else {
        SMALL_FROM.load(Ordering::Relaxed) + h as usize % 120
    };
    v.resize(v.len() + len, b'.');
    v
}

/// The key bytes for key index `k`.
pub fn key_for(k: u32) -> Vec<u8> {
    format!("k{k:08}").into_bytes()
}

/// The key index of key bytes, if they are a stress key.
pub fn key_index(key: &[u8]) -> Option<u32> {
    std::str::from_utf8(key.strip_prefix(b"k")?)
        .ok()?
        .parse()
        .ok()
}

/// Whether `got` is what `slot` says the database holds for `key`.
pub fn matches(key: u32, slot: Slot, got: Option<&[u8]>) -> bool {
    match got {
        None => slot.is_absent(),
        Some(v) => !slot.is_absent() && v == value_for(key, slot.id()).as_slice(),
    }
}

/// The memory-mapped expected state.
pub struct Oracle {
    map: MmapMut,
    keys: u32,
}

impl Oracle {
    /// Opens `path`, creating it for `keys` keys if missing.
    ///
    /// # Errors
    /// I/O errors, or a file made for another key count or not an oracle.
    pub fn open(path: &Path, keys: u32) -> Result<Oracle, String> {
        let len = HEADER + keys as usize * 16;
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let fresh = f.metadata().map_err(|e| e.to_string())?.len() == 0;
        if fresh {
            f.set_len(len as u64).map_err(|e| e.to_string())?;
        }
        // SAFETY: the file is ours for the duration of the test; other processes only touch
        // it after this one died (the crash loop runs one stress process at a time).
        let mut map = unsafe { MmapMut::map_mut(&f) }.map_err(|e| e.to_string())?;
        if map.len() != len {
            return Err(format!(
                "{}: oracle is for a different key count",
                path.display()
            ));
        }
        // A process killed between sizing a new oracle and writing its header leaves a
        // zeroed header (and zeroed slots): still a fresh oracle, not a foreign file.
        let fresh = fresh || map[..16].iter().all(|&b| b == 0);
        if fresh {
            map[..8].copy_from_slice(&MAGIC.to_le_bytes());
            map[8..12].copy_from_slice(&2u32.to_le_bytes());
            map[12..16].copy_from_slice(&keys.to_le_bytes());
            map.flush().map_err(|e| e.to_string())?;
        } else if map[..8] != MAGIC.to_le_bytes()
            || map[8..12] != 2u32.to_le_bytes()
            || map[12..16] != keys.to_le_bytes()
        {
            return Err(format!("{}: not an oracle for {keys} keys", path.display()));
        }
        Ok(Oracle { map, keys })
    }

    /// The oracle at `path` as its writer made it, to read beside that writer; `None` if
    /// there is none yet (or not a whole one).
    pub fn open_existing(path: &Path) -> Option<Oracle> {
        let f = OpenOptions::new().read(true).write(true).open(path).ok()?;
        // SAFETY: as in `open`; this reader only loads the slots, atomically.
        let map = unsafe { MmapMut::map_mut(&f) }.ok()?;
        if map.len() < HEADER || map[..8] != MAGIC.to_le_bytes() || map[8..12] != 2u32.to_le_bytes()
        {
            return None;
        }
        let keys = u32::from_le_bytes(map[12..16].try_into().ok()?);
        (map.len() == HEADER + keys as usize * 16).then_some(Oracle { map, keys })
    }

    /// Number of keys.
    pub fn keys(&self) -> u32 {
        self.keys
    }

    fn cell(&self, k: u32, which: usize) -> &AtomicU64 {
        assert!(k < self.keys, "key {k} out of range");
        let off = HEADER + k as usize * 16 + which * 8;
        // SAFETY: `off` is 8-aligned (the map is page-aligned, HEADER and slots are multiples
        // of 8) and in bounds; AtomicU64 has the layout of u64 and the map lives as long as
        // `self`.
        unsafe { &*(self.map.as_ptr().add(off) as *const AtomicU64) }
    }

    /// The committed state of key `k`.
    pub fn committed(&self, k: u32) -> Slot {
        Slot(self.cell(k, 0).load(Ordering::SeqCst))
    }

    /// The in-flight state of key `k` (EMPTY if none).
    pub fn pending(&self, k: u32) -> Slot {
        Slot(self.cell(k, 1).load(Ordering::SeqCst))
    }

    /// Marks a write to `k` as in flight.
    pub fn begin(&self, k: u32, s: Slot) {
        self.cell(k, 1).store(s.0, Ordering::SeqCst);
    }

    /// Marks the in-flight write to `k` as acknowledged.
    pub fn commit(&self, k: u32, s: Slot) {
        self.cell(k, 0).store(s.0, Ordering::SeqCst);
        self.cell(k, 1).store(0, Ordering::SeqCst);
    }

    fn counter(&self, thread: u32) -> &AtomicU64 {
        assert!(thread < MAX_THREADS, "thread {thread} out of range");
        // SAFETY: 64 + 8 * thread < HEADER, 8-aligned, in bounds; lives as long as `self`.
        unsafe { &*(self.map.as_ptr().add(64 + thread as usize * 8) as *const AtomicU64) }
    }

    /// The next value id for key `k` written by `thread`: above the thread's previous writes
    /// and above the key's current ids. REQUIRES: `thread` is the only writer of `k`.
    pub fn next_id(&self, thread: u32, k: u32) -> u64 {
        let c = self.counter(thread);
        let id = c
            .load(Ordering::SeqCst)
            .max(self.committed(k).id())
            .max(self.pending(k).id())
            + 1;
        c.store(id, Ordering::SeqCst);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kill between sizing a new oracle and writing its header: the next run takes the
    /// zeroed file for a fresh oracle (it said "not an oracle" and stopped the crash loop).
    #[test]
    fn a_sized_oracle_with_no_header_yet_is_fresh() {
        let dir = std::env::temp_dir().join(format!("strata-oracle-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("oracle");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len((HEADER + 10 * 16) as u64).unwrap();
        drop(f);
        let o = Oracle::open(&path, 10).unwrap();
        assert_eq!(o.keys(), 10);
        drop(o);
        assert!(
            Oracle::open(&path, 10).is_ok(),
            "and reopens with its header"
        );
        std::fs::write(&path, vec![7u8; HEADER + 10 * 16]).unwrap();
        assert!(
            Oracle::open(&path, 10).is_err(),
            "a foreign file is refused"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
