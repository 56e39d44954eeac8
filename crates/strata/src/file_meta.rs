//! [`FileMeta`]: one table as the manifest describes it (number, directory, size, key and
//! sequence ranges), and [`FileList`], a level's shared list of them.
//!
//! Below every structure that arranges tables (versions, L0 layouts, the table cache), so
//! that none of them has to depend on another to name a table.

use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

use crate::filename::FileNumber;
use crate::key::{self, SeqNo};
use crate::placement::PathId;
use crate::sst::TableProperties;

/// One table file as the manifest describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// The file number (names the file).
    pub number: FileNumber,
    /// Which directory the file lives in (see [`crate::placement`]).
    pub path_id: PathId,
    /// File size in bytes.
    pub size: u64,
    /// Smallest internal key.
    pub smallest: Vec<u8>,
    /// Largest internal key.
    pub largest: Vec<u8>,
    /// Smallest sequence number inside.
    pub smallest_seq: SeqNo,
    /// Largest sequence number inside.
    pub largest_seq: SeqNo,
    /// Entries inside.
    pub num_entries: u64,
    /// Tombstones inside.
    pub num_deletions: u64,
    /// The lowest-numbered value file a value pointer inside leads to (0: no pointer). Blob
    /// garbage collection compacts the tables that still reach an old file.
    pub oldest_value_file: u64,
    /// Range tombstones up to this sequence hide no version inside: the flush or compaction
    /// that wrote the table dropped every version they covered (it applied them all, and
    /// no snapshot kept one). 0: none known. A tombstone leaves the version once no table
    /// may hold a version it covers (`Version::spent_range_files`).
    pub range_clean: SeqNo,
    /// Its expiring entries: how many, and the latest expiry among them (a table of
    /// mostly expiring entries that have all expired is compacted at rest:
    /// `picker::pick_expired`). Zero when unknown (a table written before it was recorded).
    pub expiry: TableExpiry,
    /// Reads that consulted this file in vain (not persisted; see [`ReadCharges`]).
    pub read_charges: ReadCharges,
}

/// A table's expiring entries, as its properties count them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableExpiry {
    /// Expiring entries.
    pub entries: u64,
    /// The latest expiry among them, ms since the Unix epoch.
    pub latest: u64,
}

/// How many reads consulted a table of a sorted level and then had to go on to a deeper
/// level: the count behind read-triggered compaction (docs/design/core-engine.md,
/// "Read-triggered compaction"). Runtime state, not part of the manifest: a clone (a file
/// moved to another level) and a reopened database start from zero, and two metas that
/// differ only here are equal.
#[derive(Default)]
pub struct ReadCharges(AtomicU64);

impl ReadCharges {
    /// Adds one charge; returns the new total.
    pub fn add(&self) -> u64 {
        self.0.fetch_add(1, AtomicOrdering::Relaxed) + 1
    }

    /// The charges so far.
    pub fn get(&self) -> u64 {
        self.0.load(AtomicOrdering::Relaxed)
    }
}

impl Clone for ReadCharges {
    fn clone(&self) -> Self {
        ReadCharges::default()
    }
}

impl PartialEq for ReadCharges {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ReadCharges {}

impl std::fmt::Debug for ReadCharges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.get())
    }
}

impl FileMeta {
    /// Metadata of a table just written as `number` under `path_id`, from its properties and
    /// its first and last internal keys.
    pub fn from_properties(
        number: FileNumber,
        path_id: PathId,
        props: &TableProperties,
        smallest: Vec<u8>,
        largest: Vec<u8>,
    ) -> FileMeta {
        FileMeta {
            number,
            path_id,
            size: props.file_size,
            smallest,
            largest,
            smallest_seq: SeqNo(props.smallest_seq),
            largest_seq: SeqNo(props.largest_seq),
            num_entries: props.num_entries,
            num_deletions: props.num_deletions,
            oldest_value_file: 0,
            range_clean: SeqNo::ZERO,
            expiry: TableExpiry {
                entries: props.num_expiring,
                latest: props.latest_expiry,
            },
            read_charges: ReadCharges::default(),
        }
    }

    /// Smallest user key.
    pub fn smallest_user_key(&self) -> &[u8] {
        key::user_key(&self.smallest)
    }

    /// Largest user key.
    pub fn largest_user_key(&self) -> &[u8] {
        key::user_key(&self.largest)
    }

    /// Whether the table may hold a version of a key in `[start, end)` of the kind `held`
    /// asks for.
    pub fn may_hold(&self, start: &[u8], end: &[u8], held: Held) -> bool {
        self.smallest_user_key() < end
            && self.largest_user_key() >= start
            && match held {
                Held::Older(s) => self.smallest_seq < s && self.range_clean < s,
                Held::Newer(s) => self.largest_seq > s,
            }
    }

    /// Whether the file's user-key range intersects [`lo`, `hi`] (`None` = unbounded).
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        !(lo.is_some_and(|lo| self.largest_user_key() < lo)
            || hi.is_some_and(|hi| self.smallest_user_key() > hi))
    }
}

/// Which versions of a key range a question about tables asks for (range deletions).
#[derive(Debug, Clone, Copy)]
pub enum Held {
    /// Older than this sequence, that a range tombstone at it could still have to hide
    /// (a range tombstone leaves only once no table or part may hold one).
    Older(SeqNo),
    /// Newer than this sequence (an iterator seeks past a covered run only if none can be
    /// there).
    Newer(SeqNo),
}

/// One level's files, shared: versions that did not change a level share its list, and an
/// iterator over a level holds the list without copying it (copying a 1,000-file level for
/// every `Db::iter` was a quarter of a seekrandom profile).
pub type FileList = Arc<Vec<Arc<FileMeta>>>;

/// A table of `size` bytes numbered `n`, holding user keys `lo..=hi` at sequence `seq`: for
/// unit tests of pickers and layouts.
#[cfg(test)]
pub(crate) fn test_table(n: u64, lo: &str, hi: &str, size: u64, seq: u64) -> Arc<FileMeta> {
    test_table_bytes(n, lo.as_bytes(), hi.as_bytes(), size, seq)
}

/// [`test_table`] with keys of any bytes.
#[cfg(test)]
pub(crate) fn test_table_bytes(n: u64, lo: &[u8], hi: &[u8], size: u64, seq: u64) -> Arc<FileMeta> {
    use crate::key::{internal_key, ValueKind};
    Arc::new(FileMeta {
        number: FileNumber(n),
        path_id: PathId::DB,
        size,
        smallest: internal_key(lo, SeqNo(seq), ValueKind::Put),
        largest: internal_key(hi, SeqNo(seq), ValueKind::Put),
        smallest_seq: SeqNo(seq),
        largest_seq: SeqNo(seq),
        num_entries: 1,
        num_deletions: 0,
        oldest_value_file: 0,
        range_clean: SeqNo::ZERO,
        expiry: TableExpiry::default(),
        read_charges: ReadCharges::default(),
    })
}
