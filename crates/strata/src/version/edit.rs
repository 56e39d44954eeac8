//! [`VersionEdit`]: one change to the set of live files, as logged in the manifest.
//!
//! Encoding (docs/format/manifest.md): a sequence of `tag: varint32` + fields. Tags below 64
//! must be understood; tags >= 64 carry a length-prefixed payload and may be skipped by older
//! readers (forward compatibility). On-disk format: never renumber tags.

use crate::coding::{
    get_length_prefixed, get_varint32, get_varint64, put_length_prefixed, put_varint32,
    put_varint64,
};
use crate::error::{Error, Result};
use crate::filename::FileNumber;
use crate::key::SeqNo;

pub use crate::l0::L0Record;

use crate::error::ErrorKind;
use crate::file_meta::FileMeta;
use crate::placement::PathId;
use crate::value::{Formats, ValueFile};

const TAG_LOG_NUMBER: u32 = 1;
const TAG_NEXT_FILE_NUMBER: u32 = 2;
const TAG_LAST_SEQUENCE: u32 = 3;
const TAG_COMPACT_POINTER: u32 = 4;
const TAG_DELETED_FILE: u32 = 5;
const TAG_NEW_FILE: u32 = 6;
const TAG_FORMAT_VERSION: u32 = 7;
const TAG_L0_LAYOUT: u32 = 8;
const TAG_FEATURE: u32 = 9;
// Tag 10 (`new_value_file`): a blob file, owned by `vstore/blob`.
const TAG_VALUE_GARBAGE: u32 = 11;
/// `new_file` followed by the table's oldest value file (tables holding value pointers).
const TAG_NEW_FILE_WITH_VALUES: u32 = 12;
// Tag 13 (`new_vlog_segment`): a value-log segment, owned by `vstore/vlog`. Value stores
// own the tags their file records use (`Store::manifest_tags`); docs/format/manifest.md
// lists which tag is whose.
const TAG_DELETED_VALUE_FILE: u32 = 14;
/// The files kept after an open dropped a damaged manifest record (`KeptFiles`).
const TAG_KEPT_FILES: u32 = 15;
/// A range-tombstone file added, with its tombstones (`RangeFile`).
const TAG_RANGE_FILE: u32 = 20;
/// A range-tombstone file removed (every key it covers gone from the tables).
const TAG_DELETED_RANGE_FILE: u32 = 21;
/// Tags at or above this carry a length-prefixed payload and may be ignored.
const TAG_SAFE_TO_IGNORE: u32 = 64;
/// Where the database keeps its files (`Directories`): ignorable, so a build that does
/// not know it opens the database as before.
const TAG_DIRECTORIES: u32 = 64;
/// The WALs synced whole and how many bytes of records each holds (`wal_sizes`: every WAL a
/// clean close leaves, or the closed WALs synced since they were closed): ignorable, a
/// build that does not know it reads the WALs as before.
const TAG_WAL_SIZES: u32 = 65;
/// A table's `range_clean` (the range tombstones it holds nothing of), after the record
/// adding it: ignorable, a build that does not know it keeps those tombstones longer.
const TAG_RANGE_CLEAN: u32 = 67;
/// The largest time (ms since the Unix epoch) expiring entries have been judged by, so that
/// an open after the clock went back does not bring back what had expired: ignorable.
const TAG_CLOCK: u32 = 66;
/// A table's expiring entries (`FileMeta::expiry`), after the record of its table: a build
/// that does not know it never compacts the table for its expired entries alone.
const TAG_TABLE_EXPIRY: u32 = 68;
/// A range-tombstone file retired (docs/format/manifest.md): its number and the file
/// number below which a value store's file may still hold a record it covers. Safe to
/// ignore: a build that does not know it keeps applying the file, which hides nothing.
const TAG_RETIRED_RANGE_FILE: u32 = 69;

/// Format features the manifest itself adds beside the L0 layouts' and the value stores'
/// (each registered one names its own). A manifest names every feature its database uses
/// (in the first edit of each manifest, and in the edit that starts using one); a build
/// that meets a feature it does not support refuses the database, naming the feature.
pub const SUPPORTED_FEATURES: &[&str] =
    &[KEPT_FILES_FEATURE, EXPIRING_FEATURE, RANGE_DELETES_FEATURE];

/// The format feature of a database that has written range deletions (entry kind 4 in its
/// WALs, range-tombstone files: docs/design/range-deletes.md): a build that did not read
/// them would bring back every key they delete. Named before the first one is written, for
/// good.
pub const RANGE_DELETES_FEATURE: &str = "range-deletes";

/// The format feature of a database that has written expiring entries (entry kind 3,
/// docs/design/ttl.md): a build that read them as plain values would return expired data
/// with eight bytes of expiry in front. Named from the first such write on, for good.
pub const EXPIRING_FEATURE: &str = "expiring-entries";

/// What a build registers, as the manifest's reader needs it: the L0 layouts and the value
/// stores' formats (`registry::registered()`, handed down: the version names none).
#[derive(Clone, Copy)]
pub(crate) struct Registered {
    pub layouts: crate::l0::LayoutList,
    pub formats: Formats,
}

/// Whether a build registering `reg` reads format feature `f`.
fn supported(reg: Registered, f: &str) -> bool {
    SUPPORTED_FEATURES.contains(&f)
        || crate::l0::features(reg.layouts).any(|l| l == f)
        || crate::value::is_feature(reg.formats, f)
}

/// The format feature of a manifest that records kept files: a build that would delete them
/// as unnamed must refuse the database instead.
pub const KEPT_FILES_FEATURE: &str = "kept-files";

/// Files no version names that must not be deleted: an open dropped a damaged last manifest
/// record (which may have named them: a flush whose WAL is gone holds the only copy of its
/// writes), so they wait for `repair` to merge them back. Carried by every later manifest
/// until a repair writes a new one from scratch (docs/format/manifest.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeptFiles {
    /// What was dropped: manifest, offset, reason.
    pub reason: String,
    /// The kept files' numbers (tables, blob files, value-log segments).
    pub files: Vec<u64>,
}

/// A change to the version: files added and removed, counters advanced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VersionEdit {
    /// Format features the database uses from this edit on (encoded first).
    pub features: Vec<String>,
    /// The L0 layout and its persistent state, from this edit on.
    pub l0_layout: Option<L0Record>,
    /// WALs numbered below this are no longer needed.
    pub log_number: Option<FileNumber>,
    /// The next file number to hand out.
    pub next_file_number: Option<FileNumber>,
    /// The last sequence number used.
    pub last_sequence: Option<SeqNo>,
    /// The manifest format version (written in each manifest's first edit).
    pub format_version: Option<u32>,
    /// Per level, where round-robin compaction resumes.
    pub compact_pointers: Vec<(usize, Vec<u8>)>,
    /// Files removed: (level, number).
    pub deleted_files: Vec<(usize, FileNumber)>,
    /// Files added: (level, metadata).
    pub new_files: Vec<(usize, FileMeta)>,
    /// Value files added (with the garbage they hold already, in a manifest's snapshot).
    pub new_value_files: Vec<ValueFile>,
    /// Garbage found in value files: (number, records, bytes), added to their counts.
    pub value_garbage: Vec<(u64, u64, u64)>,
    /// Value files removed (value-log segments the value log's GC emptied).
    pub deleted_value_files: Vec<u64>,
    /// Range-tombstone files added (a flush of a memtable holding range deletions).
    pub new_range_files: Vec<crate::range_del::RangeFile>,
    /// Range-tombstone files removed.
    pub deleted_range_files: Vec<u64>,
    /// Range-tombstone files retired: number, and the file number below which a value
    /// store's file may still hold a record they cover (`RangeSet`).
    pub retired_range_files: Vec<(u64, u64)>,
    /// From this edit on, the kept files (replacing any earlier record).
    pub kept: Option<KeptFiles>,
    /// From this edit on, the directories the database keeps its files in (the first
    /// record of every manifest this build writes).
    pub directories: Option<crate::placement::Directories>,
    /// WALs synced whole, each with the bytes of records it holds (every WAL at a clean
    /// close; during a session the closed WALs synced since they were closed): the next
    /// open refuses one that holds fewer (docs/format/manifest.md, "WAL sizes").
    pub wal_sizes: Vec<(u64, u64)>,
    /// The largest time expiring entries have been judged by (ms since the Unix epoch).
    pub clock: Option<u64>,
    /// The layout `l0_layout` records, as the change that made it built it: applying the
    /// edit takes it instead of decoding the record again (a matrix's record names every
    /// row and its pages, and decoding it held them all anew at every flush). Never
    /// encoded: `None` in an edit read from a manifest.
    pub l0_built: Option<BuiltLayout>,
}

impl VersionEdit {
    /// Records `layout` as L0's from this edit on, and carries it so that applying the edit
    /// takes it rather than decoding its record ([`VersionEdit::l0_built`]).
    pub(crate) fn set_l0_layout(&mut self, layout: std::sync::Arc<dyn crate::l0::Level0>) {
        self.l0_layout = Some(layout.record());
        self.l0_built = Some(BuiltLayout(layout));
    }
}

/// A layout built by a change, carried by the edit that records it ([`VersionEdit::l0_built`]).
#[derive(Debug, Clone)]
pub struct BuiltLayout(pub(crate) std::sync::Arc<dyn crate::l0::Level0>);

impl PartialEq for BuiltLayout {
    /// The same layout object: two edits that carry different objects for one record are
    /// different edits in memory, whatever they encode to.
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl VersionEdit {
    /// Encodes the edit.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        for f in &self.features {
            put_varint32(&mut b, TAG_FEATURE);
            put_length_prefixed(&mut b, f.as_bytes());
        }
        if let Some(v) = self.format_version {
            put_varint32(&mut b, TAG_FORMAT_VERSION);
            put_varint32(&mut b, v);
        }
        if let Some(d) = &self.directories {
            put_varint32(&mut b, TAG_DIRECTORIES);
            let mut payload = Vec::new();
            d.encode(&mut payload);
            put_length_prefixed(&mut b, &payload);
        }
        if let Some(n) = self.log_number {
            put_varint32(&mut b, TAG_LOG_NUMBER);
            put_varint64(&mut b, n.0);
        }
        if let Some(n) = self.next_file_number {
            put_varint32(&mut b, TAG_NEXT_FILE_NUMBER);
            put_varint64(&mut b, n.0);
        }
        if let Some(s) = self.last_sequence {
            put_varint32(&mut b, TAG_LAST_SEQUENCE);
            put_varint64(&mut b, s.0);
        }
        if let Some(r) = &self.l0_layout {
            put_varint32(&mut b, TAG_L0_LAYOUT);
            put_varint32(&mut b, r.layout);
            put_length_prefixed(&mut b, &r.state);
        }
        for (level, key) in &self.compact_pointers {
            put_varint32(&mut b, TAG_COMPACT_POINTER);
            put_varint32(&mut b, *level as u32);
            put_length_prefixed(&mut b, key);
        }
        for (level, n) in &self.deleted_files {
            put_varint32(&mut b, TAG_DELETED_FILE);
            put_varint32(&mut b, *level as u32);
            put_varint64(&mut b, n.0);
        }
        for (level, f) in &self.new_files {
            put_varint32(
                &mut b,
                if f.oldest_value_file == 0 {
                    TAG_NEW_FILE
                } else {
                    TAG_NEW_FILE_WITH_VALUES
                },
            );
            put_varint32(&mut b, *level as u32);
            put_varint64(&mut b, f.number.0);
            b.push(f.path_id.0);
            put_varint64(&mut b, f.size);
            put_length_prefixed(&mut b, &f.smallest);
            put_length_prefixed(&mut b, &f.largest);
            put_varint64(&mut b, f.smallest_seq.0);
            put_varint64(&mut b, f.largest_seq.0);
            put_varint64(&mut b, f.num_entries);
            put_varint64(&mut b, f.num_deletions);
            if f.oldest_value_file != 0 {
                put_varint64(&mut b, f.oldest_value_file);
            }
            if f.range_clean > SeqNo::ZERO {
                put_varint32(&mut b, TAG_RANGE_CLEAN);
                let mut payload = Vec::new();
                put_varint64(&mut payload, f.number.0);
                put_varint64(&mut payload, f.range_clean.0);
                put_length_prefixed(&mut b, &payload);
            }
            if f.expiry.entries > 0 {
                put_varint32(&mut b, TAG_TABLE_EXPIRY);
                let mut payload = Vec::new();
                put_varint64(&mut payload, f.number.0);
                put_varint64(&mut payload, f.expiry.entries);
                put_varint64(&mut payload, f.expiry.latest);
                put_length_prefixed(&mut b, &payload);
            }
        }
        for f in &self.new_value_files {
            // Each store encodes its files' records (tag and fields).
            f.format.encode_file(f, &mut b);
        }
        for &n in &self.deleted_value_files {
            put_varint32(&mut b, TAG_DELETED_VALUE_FILE);
            put_varint64(&mut b, n);
        }
        for f in &self.new_range_files {
            put_varint32(&mut b, TAG_RANGE_FILE);
            put_varint64(&mut b, f.number);
            put_varint64(&mut b, f.size);
            put_varint64(&mut b, f.tombstones.len() as u64);
            for t in f.tombstones.iter() {
                put_length_prefixed(&mut b, &t.start);
                put_length_prefixed(&mut b, &t.end);
                put_varint64(&mut b, t.seq.0);
            }
        }
        for &n in &self.deleted_range_files {
            put_varint32(&mut b, TAG_DELETED_RANGE_FILE);
            put_varint64(&mut b, n);
        }
        for &(n, until) in &self.retired_range_files {
            put_varint32(&mut b, TAG_RETIRED_RANGE_FILE);
            let mut payload = Vec::new();
            put_varint64(&mut payload, n);
            put_varint64(&mut payload, until);
            put_length_prefixed(&mut b, &payload);
        }
        if let Some(c) = self.clock {
            put_varint32(&mut b, TAG_CLOCK);
            let mut payload = Vec::new();
            put_varint64(&mut payload, c);
            put_length_prefixed(&mut b, &payload);
        }
        if !self.wal_sizes.is_empty() {
            put_varint32(&mut b, TAG_WAL_SIZES);
            let mut payload = Vec::new();
            put_varint64(&mut payload, self.wal_sizes.len() as u64);
            for &(n, size) in &self.wal_sizes {
                put_varint64(&mut payload, n);
                put_varint64(&mut payload, size);
            }
            put_length_prefixed(&mut b, &payload);
        }
        for &(n, records, bytes) in &self.value_garbage {
            put_varint32(&mut b, TAG_VALUE_GARBAGE);
            put_varint64(&mut b, n);
            put_varint64(&mut b, records);
            put_varint64(&mut b, bytes);
        }
        if let Some(k) = &self.kept {
            put_varint32(&mut b, TAG_KEPT_FILES);
            put_length_prefixed(&mut b, k.reason.as_bytes());
            put_varint64(&mut b, k.files.len() as u64);
            for &n in &k.files {
                put_varint64(&mut b, n);
            }
        }
        b
    }

    /// Decodes an edit.
    ///
    /// # Errors
    /// `NotSupported` naming a feature this build lacks (features come first, so this is
    /// reported before any field the feature may have added); otherwise `Corruption`
    /// describing the first malformed field (the caller adds file and offset).
    pub(crate) fn decode(mut src: &[u8], reg: Registered) -> Result<VersionEdit> {
        let mut e = VersionEdit::default();
        let bad = |what: &str| Error::corrupt(format!("version edit: {what}"));
        while !src.is_empty() {
            let tag = get_varint32(&mut src).ok_or_else(|| bad("bad tag"))?;
            match tag {
                TAG_FEATURE => {
                    let f = get_length_prefixed(&mut src).ok_or_else(|| bad("feature"))?;
                    let f = String::from_utf8_lossy(f).into_owned();
                    if !supported(reg, &f) {
                        return Err(Error::new(
                            ErrorKind::NotSupported,
                            format!("the database uses format feature {f:?}, which this build does not support"),
                        ));
                    }
                    e.features.push(f);
                }
                TAG_L0_LAYOUT => {
                    let layout = get_varint32(&mut src).ok_or_else(|| bad("L0 layout id"))?;
                    let state =
                        get_length_prefixed(&mut src).ok_or_else(|| bad("L0 layout state"))?;
                    e.l0_layout = Some(L0Record {
                        layout,
                        state: state.to_vec(),
                    });
                }
                TAG_FORMAT_VERSION => {
                    e.format_version =
                        Some(get_varint32(&mut src).ok_or_else(|| bad("format version"))?)
                }
                TAG_LOG_NUMBER => {
                    e.log_number = Some(FileNumber(
                        get_varint64(&mut src).ok_or_else(|| bad("log number"))?,
                    ))
                }
                TAG_NEXT_FILE_NUMBER => {
                    e.next_file_number = Some(FileNumber(
                        get_varint64(&mut src).ok_or_else(|| bad("next file number"))?,
                    ));
                }
                TAG_LAST_SEQUENCE => {
                    e.last_sequence = Some(SeqNo(
                        get_varint64(&mut src).ok_or_else(|| bad("last sequence"))?,
                    ))
                }
                TAG_COMPACT_POINTER => {
                    let level = get_varint32(&mut src)
                        .ok_or_else(|| bad("compact pointer level"))?
                        as usize;
                    let key =
                        get_length_prefixed(&mut src).ok_or_else(|| bad("compact pointer key"))?;
                    e.compact_pointers.push((level, key.to_vec()));
                }
                TAG_DELETED_FILE => {
                    let level =
                        get_varint32(&mut src).ok_or_else(|| bad("deleted file level"))? as usize;
                    let n = get_varint64(&mut src).ok_or_else(|| bad("deleted file number"))?;
                    e.deleted_files.push((level, FileNumber(n)));
                }
                TAG_NEW_FILE | TAG_NEW_FILE_WITH_VALUES => {
                    let f = (|| {
                        let level = get_varint32(&mut src)? as usize;
                        let number = FileNumber(get_varint64(&mut src)?);
                        let (&path_id, rest) = src.split_first()?;
                        src = rest;
                        let size = get_varint64(&mut src)?;
                        let smallest = get_length_prefixed(&mut src)?.to_vec();
                        let largest = get_length_prefixed(&mut src)?.to_vec();
                        let smallest_seq = SeqNo(get_varint64(&mut src)?);
                        let largest_seq = SeqNo(get_varint64(&mut src)?);
                        let num_entries = get_varint64(&mut src)?;
                        let num_deletions = get_varint64(&mut src)?;
                        let oldest_value_file = if tag == TAG_NEW_FILE_WITH_VALUES {
                            get_varint64(&mut src).filter(|&n| n != 0)?
                        } else {
                            0
                        };
                        if smallest.len() < 8 || largest.len() < 8 {
                            return None;
                        }
                        Some((
                            level,
                            FileMeta {
                                number,
                                path_id: PathId(path_id),
                                size,
                                smallest,
                                largest,
                                smallest_seq,
                                largest_seq,
                                num_entries,
                                num_deletions,
                                oldest_value_file,
                                range_clean: SeqNo::ZERO,
                                expiry: Default::default(),
                                read_charges: Default::default(),
                            },
                        ))
                    })()
                    .ok_or_else(|| bad("new file record"))?;
                    e.new_files.push(f);
                }
                TAG_DELETED_VALUE_FILE => {
                    e.deleted_value_files
                        .push(get_varint64(&mut src).ok_or_else(|| bad("deleted value file"))?);
                }
                TAG_VALUE_GARBAGE => {
                    let g = (|| {
                        Some((
                            get_varint64(&mut src)?,
                            get_varint64(&mut src)?,
                            get_varint64(&mut src)?,
                        ))
                    })()
                    .ok_or_else(|| bad("value garbage record"))?;
                    e.value_garbage.push(g);
                }
                TAG_KEPT_FILES => {
                    let k = (|| {
                        let reason = get_length_prefixed(&mut src)?;
                        let reason = String::from_utf8_lossy(reason).into_owned();
                        let n = get_varint64(&mut src)?;
                        if n > 1 << 24 {
                            return None;
                        }
                        let files = (0..n)
                            .map(|_| get_varint64(&mut src))
                            .collect::<Option<Vec<u64>>>()?;
                        Some(KeptFiles { reason, files })
                    })()
                    .ok_or_else(|| bad("kept files record"))?;
                    e.kept = Some(k);
                }
                t if crate::value::by_manifest_tag(reg.formats, t).is_some() => {
                    let store = crate::value::by_manifest_tag(reg.formats, t).expect("just found");
                    let f = store.decode_file(t, &mut src).ok_or_else(|| {
                        bad(&format!("value file record of the {}", store.name()))
                    })?;
                    e.new_value_files.push(f);
                }
                TAG_RANGE_FILE => {
                    let f = (|| {
                        let number = get_varint64(&mut src)?;
                        let size = get_varint64(&mut src)?;
                        let n = get_varint64(&mut src)?;
                        if n > 1 << 24 {
                            return None;
                        }
                        let tombstones = (0..n)
                            .map(|_| {
                                Some(crate::range_del::Tombstone {
                                    start: get_length_prefixed(&mut src)?.to_vec(),
                                    end: get_length_prefixed(&mut src)?.to_vec(),
                                    seq: SeqNo(get_varint64(&mut src)?),
                                })
                            })
                            .collect::<Option<Vec<_>>>()?;
                        Some(crate::range_del::RangeFile {
                            number,
                            size,
                            tombstones: tombstones.into(),
                        })
                    })()
                    .ok_or_else(|| bad("range-tombstone file record"))?;
                    e.new_range_files.push(f);
                }
                TAG_DELETED_RANGE_FILE => {
                    let n = get_varint64(&mut src).ok_or_else(|| bad("deleted range file"))?;
                    e.deleted_range_files.push(n);
                }
                TAG_RANGE_CLEAN => {
                    let mut payload =
                        get_length_prefixed(&mut src).ok_or_else(|| bad("range clean"))?;
                    let (n, seq) =
                        (|| Some((get_varint64(&mut payload)?, get_varint64(&mut payload)?)))()
                            .ok_or_else(|| bad("range clean record"))?;
                    // (It follows the record of its table: a search of every table a
                    // snapshot names, per record, was quadratic in them.)
                    if let Some((_, f)) = e.new_files.last_mut().filter(|(_, f)| f.number.0 == n) {
                        f.range_clean = SeqNo(seq);
                    }
                }
                TAG_RETIRED_RANGE_FILE => {
                    let mut payload =
                        get_length_prefixed(&mut src).ok_or_else(|| bad("retired range file"))?;
                    let r = (|| Some((get_varint64(&mut payload)?, get_varint64(&mut payload)?)))()
                        .ok_or_else(|| bad("retired range file record"))?;
                    e.retired_range_files.push(r);
                }
                TAG_TABLE_EXPIRY => {
                    let mut payload =
                        get_length_prefixed(&mut src).ok_or_else(|| bad("table expiry"))?;
                    let (n, entries, latest) = (|| {
                        Some((
                            get_varint64(&mut payload)?,
                            get_varint64(&mut payload)?,
                            get_varint64(&mut payload)?,
                        ))
                    })()
                    .ok_or_else(|| bad("table expiry record"))?;
                    if let Some((_, f)) = e.new_files.last_mut().filter(|(_, f)| f.number.0 == n) {
                        f.expiry = crate::file_meta::TableExpiry { entries, latest };
                    }
                }
                TAG_CLOCK => {
                    let mut payload = get_length_prefixed(&mut src).ok_or_else(|| bad("clock"))?;
                    e.clock = Some(get_varint64(&mut payload).ok_or_else(|| bad("clock record"))?);
                }
                TAG_WAL_SIZES => {
                    let mut payload =
                        get_length_prefixed(&mut src).ok_or_else(|| bad("WAL sizes"))?;
                    let sizes = (|| {
                        let n = get_varint64(&mut payload)?;
                        if n > 1 << 20 {
                            return None;
                        }
                        (0..n)
                            .map(|_| {
                                Some((get_varint64(&mut payload)?, get_varint64(&mut payload)?))
                            })
                            .collect::<Option<Vec<_>>>()
                    })()
                    .ok_or_else(|| bad("WAL sizes record"))?;
                    e.wal_sizes = sizes;
                }
                TAG_DIRECTORIES => {
                    let payload =
                        get_length_prefixed(&mut src).ok_or_else(|| bad("directories"))?;
                    e.directories = Some(
                        crate::placement::Directories::decode(payload)
                            .ok_or_else(|| bad("directories record"))?,
                    );
                }
                t if t >= TAG_SAFE_TO_IGNORE => {
                    get_length_prefixed(&mut src).ok_or_else(|| bad("ignorable field"))?;
                }
                t => return Err(bad(&format!("unknown tag {t}"))),
            }
        }
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{internal_key, ValueKind};

    #[test]
    fn value_stores_own_distinct_tags_and_names() {
        // The tags this file decodes itself; a store's file records must use others.
        let core = [
            TAG_LOG_NUMBER,
            TAG_NEXT_FILE_NUMBER,
            TAG_LAST_SEQUENCE,
            TAG_COMPACT_POINTER,
            TAG_DELETED_FILE,
            TAG_NEW_FILE,
            TAG_FORMAT_VERSION,
            TAG_L0_LAYOUT,
            TAG_FEATURE,
            TAG_VALUE_GARBAGE,
            TAG_NEW_FILE_WITH_VALUES,
            TAG_DELETED_VALUE_FILE,
            TAG_KEPT_FILES,
            TAG_RANGE_FILE,
            TAG_DELETED_RANGE_FILE,
        ];
        let mut tags = std::collections::HashSet::new();
        let mut names = std::collections::HashSet::new();
        for s in crate::registry::STORES {
            for &t in s.manifest_tags() {
                assert!(
                    t < TAG_SAFE_TO_IGNORE && !core.contains(&t),
                    "{}: tag {t}",
                    s.name()
                );
                assert!(tags.insert(t), "{}: tag {t} taken twice", s.name());
            }
            assert!(names.insert(("id", s.id().0.to_string())), "{}", s.name());
            assert!(
                names.insert(("ext", s.extension().to_string())),
                "{}",
                s.name()
            );
            assert!(
                names.insert(("feature", s.feature().to_string())),
                "{}",
                s.name()
            );
            assert!(!SUPPORTED_FEATURES.contains(&s.feature()), "{}", s.name());
            assert_ne!(s.extension(), "sst");
            assert_ne!(s.extension(), "log");
            // Each file record decodes to what was encoded.
            let mut f = ValueFile::new(crate::value::Format(*s), 77, PathId(3));
            f.garbage_records = 5;
            f.garbage_bytes = 500;
            let e = VersionEdit {
                new_value_files: vec![f],
                ..VersionEdit::default()
            };
            assert_eq!(
                VersionEdit::decode(&e.encode(), crate::registry::registered()).unwrap(),
                e,
                "{}",
                s.name()
            );
        }
    }

    #[test]
    fn round_trip_and_truncation() {
        let e = VersionEdit {
            log_number: Some(FileNumber(7)),
            next_file_number: Some(FileNumber(12)),
            last_sequence: Some(SeqNo(999)),
            format_version: Some(1),
            features: Vec::new(),
            l0_layout: Some(L0Record {
                layout: 0,
                state: b"state".to_vec(),
            }),
            compact_pointers: vec![(2, internal_key(b"m", SeqNo(3), ValueKind::Put))],
            deleted_files: vec![(1, FileNumber(4))],
            new_files: vec![(
                3,
                FileMeta {
                    number: FileNumber(11),
                    path_id: PathId::LEVELS,
                    size: 4096,
                    smallest: internal_key(b"a", SeqNo(5), ValueKind::Put),
                    largest: internal_key(b"z", SeqNo(6), ValueKind::Delete),
                    smallest_seq: SeqNo(5),
                    largest_seq: SeqNo(6),
                    num_entries: 10,
                    num_deletions: 1,
                    oldest_value_file: 13,
                    range_clean: SeqNo(4),
                    expiry: crate::file_meta::TableExpiry {
                        entries: 7,
                        latest: 1_700_000_000_123,
                    },
                    read_charges: Default::default(),
                },
            )],
            new_value_files: vec![ValueFile {
                meta: 0,
                format: crate::vstore::blob::FORMAT,
                number: 13,
                path_id: PathId::VALUES,
                size: 5000,
                records: 40,
                record_bytes: 4900,
                garbage_records: 3,
                garbage_bytes: 300,
            }],
            value_garbage: vec![(13, 2, 250)],
            deleted_value_files: vec![9],
            new_range_files: vec![crate::range_del::RangeFile {
                number: 14,
                size: 300,
                tombstones: vec![crate::range_del::Tombstone {
                    start: b"b".to_vec(),
                    end: b"d".to_vec(),
                    seq: SeqNo(77),
                }]
                .into(),
            }],
            deleted_range_files: vec![8],
            retired_range_files: vec![(14, 30)],
            kept: Some(KeptFiles {
                reason: "MANIFEST-000004 at offset 812: checksum mismatch".into(),
                files: vec![21, 22],
            }),
            directories: Some(crate::placement::Directories(vec![
                (PathId::WAL, "/fast/wal".into()),
                (PathId::LEVELS, "deep".into()),
            ])),
            wal_sizes: vec![(7, 4096), (9, 123)],
            clock: Some(1_780_000_000_000),
            l0_built: None,
        };
        let enc = e.encode();
        assert_eq!(
            VersionEdit::decode(&enc, crate::registry::registered()).unwrap(),
            e
        );
        for cut in 1..enc.len() {
            // Any strict prefix either fails or decodes to something different.
            if let Ok(d) = VersionEdit::decode(&enc[..cut], crate::registry::registered()) {
                assert_ne!(d, e);
            }
        }
        // Unknown must-understand tag is refused; unknown ignorable tag is skipped.
        assert!(VersionEdit::decode(&[40, 0], crate::registry::registered()).is_err());
        let mut ign = vec![70, 2, 9, 9];
        ign.extend_from_slice(&enc);
        assert_eq!(
            VersionEdit::decode(&ign, crate::registry::registered()).unwrap(),
            e
        );
    }

    #[test]
    fn an_unknown_feature_is_refused_by_name() {
        let e = VersionEdit {
            features: vec!["from-the-future".into()],
            ..Default::default()
        };
        let err = VersionEdit::decode(&e.encode(), crate::registry::registered()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotSupported);
        assert!(err.message().contains("from-the-future"), "{err}");
    }
}
