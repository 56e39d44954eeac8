//! HashKV's hash-partitioned value store (store [`ID`] 3, `ValueStoreKind::Hash`, preset
//! `hashkv`): a key's hash picks one of `hash_groups` segment groups, and every version of
//! the key's value goes to that group, so a group's GC judges liveness from the group
//! alone (the newest record of a key wins), without a lookup in the LSM.
//!
//! How the paper's structures map here (docs/design/hashkv.md says why):
//! - The write cache is the memtable and the write journal is the WAL: values reach the
//!   store when a flush writes them (like blob files), grouped by segment group, one new
//!   file per group the flush touches (a *log segment*; files are never appended to after
//!   they are named, so no journal is needed for them).
//! - A group's *main segment* is what its last GC wrote: its live records, up to
//!   `hash_main_segment_size` (more spills into log segments the GC writes).
//! - The reserve is `hash_reserve_ratio` x the main space (`hash_groups` x main size). A
//!   group's files count against its main segment's room first; only its bytes past the
//!   main segment's size take reserve (so a load that fits the main space runs no GC, as in
//!   the paper). GC runs when the reserve in use passes 90 %, on the group past its main
//!   segment with the most log bytes (the paper's greedy: the most writes since its last
//!   GC), and writes wait for it past 100 %.
//! - The segment table is the version's value files of this store: each names its group
//!   and kind (`ValueFile::meta`), recorded in the manifest with the flush or GC that wrote
//!   it. GC swaps a group's files atomically: the new main is named, the moved pointers are
//!   written through the write path, the old files leave the version once no snapshot can
//!   read them. No GC journal is needed: nothing is overwritten in place.
//! - Deletes, values kept inline and values another store took are noted in the key's
//!   group as tombstone records (the flush sees every entry it keeps, with its sequence),
//!   so GC never brings an older value back.
//!
//! With `hash_write_time` (preset `hashkv-wt`, not the paper's) values reach their group
//! as they are written, before the WAL record, which then holds a pointer (as WiscKey's
//! value log does): each group has one open file per memtable (`SegmentKind::Open`, named
//! when created, before any pointer into it exists), sealed by that memtable's flush
//! (its extent named with the flush's tables); a crash leaves open files that recovery
//! cuts after the last replayed write (`write.rs`).
//!
//! Formats: docs/format/hash-store.md.

mod gc;
pub(crate) mod record;
mod separator;
mod write;

use crate::error::Result;
use crate::options::{Options, ValueStoreKind};
use crate::placement::{PathId, Placement};
use crate::version::Version;
use crate::vstore::{
    files_of, FlushSeparator, Store, StoreEnv, StoreId, ValueFile, ValueFormat, ValueGc,
    ValuePointer,
};

/// The store's id: the tag of its pointers (docs/format/value-pointer.md).
pub(crate) const ID: StoreId = StoreId(3);
/// Its files' format, as each of them carries it.
pub(crate) const FORMAT: crate::value::Format = crate::value::Format(&HashStore);

/// The format feature a database with hash-store files names in its manifest.
pub(crate) const FEATURE: &str = "hash-store";

/// The format feature a database with write-time files (version 2, `SegmentKind::Open`,
/// [`WRITE_TIME`]) names besides [`FEATURE`]: a binary that reads only whole files would
/// take them for damaged ones.
pub(crate) const FEATURE_WRITE_TIME: &str = "hash-store-write-time";

/// The format feature a database with files `repair` rebuilt ([`REPAIRED`]) names besides
/// [`FEATURE`]: a binary that collected them without LSM lookups could bring back a value
/// the repaired database no longer holds.
pub(crate) const FEATURE_REPAIRED: &str = "hash-store-repaired";

/// Manifest tag of `new_hash_segment`, the record naming a file (docs/format/manifest.md).
const TAG_NEW_SEGMENT: u32 = 16;

/// Seed of the hash that picks a key's group (not the filters' hash, so the two stay
/// independent).
const GROUP_SEED: u64 = 0x6861_7368_6b76_0031;

/// What a file of a group is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SegmentKind {
    /// Written by the group's last GC: its live records (the paper's main segment; past
    /// `hash_main_segment_size` they spill into more main files, whose excess takes
    /// reserve as the paper's overflowing log segments do).
    Main = 0,
    /// Written by a flush: the group's writes since its last GC; takes reserve.
    Log = 1,
    /// The cold log (hot/cold separation): values a group GC found cold, in files of no
    /// group ([`COLD_GROUP`]); collected from its oldest file with LSM lookups, as a value
    /// log is. Takes no reserve (the paper does not bound it).
    Cold = 2,
    /// A write-time file still appended to (`hash_write_time`): its records belong to
    /// memtables not yet flushed; its extent is unknown until the flush seals it (it is
    /// then a log segment). Not collected, takes no reserve.
    Open = 3,
}

/// The group field of cold-log files.
pub(crate) const COLD_GROUP: u32 = 0xff_ffff;

/// `ValueFile::meta` of a file of `group` (of `groups`) of `kind`: group in bits 0..24,
/// the group count in bits 24..48, the kind in bits 48..56, bit 56 set for a file written
/// as writes happen (format version 2, no footer) (docs/format/manifest.md).
pub(crate) fn meta(group: u32, groups: u32, kind: SegmentKind) -> u64 {
    u64::from(group) | u64::from(groups) << 24 | (kind as u64) << 48
}

/// `ValueFile::meta`'s bit for a write-time file.
pub(crate) const WRITE_TIME: u64 = 1 << 56;

/// `ValueFile::meta`'s bit for a file `repair` kept: its group's records may not agree
/// with the repaired LSM (records of writes the WAL never logged, or of tables repair lost;
/// tombstones in files it did not keep; deletes it replayed from WALs, which never reached
/// the group), so the group's next GC keeps only the records the LSM points to.
pub(crate) const REPAIRED: u64 = 1 << 57;

/// Whether `repair` kept `f` (its group's next GC looks its keys up).
pub(crate) fn is_repaired(f: &ValueFile) -> bool {
    f.meta & REPAIRED != 0
}

/// Whether `f` was written as writes happen (no footer; its extent is its `size`).
pub(crate) fn is_write_time(f: &ValueFile) -> bool {
    f.meta & WRITE_TIME != 0
}

/// The group of a file of this store.
pub(crate) fn group_of(f: &ValueFile) -> u32 {
    (f.meta & 0xff_ffff) as u32
}

/// The group count the database's keys were hashed with when `f` was written.
pub(crate) fn groups_of(f: &ValueFile) -> u32 {
    ((f.meta >> 24) & 0xff_ffff) as u32
}

/// The kind of a file of this store.
pub(crate) fn kind_of(f: &ValueFile) -> SegmentKind {
    match (f.meta >> 48) & 0xff {
        0 => SegmentKind::Main,
        2 => SegmentKind::Cold,
        3 => SegmentKind::Open,
        _ => SegmentKind::Log,
    }
}

/// Whether `f` is one of its group's collectable segments (main or log; not the cold
/// log, not a write-time file still open).
pub(crate) fn is_group_segment(f: &ValueFile) -> bool {
    matches!(kind_of(f), SegmentKind::Main | SegmentKind::Log)
}

/// The group count keys are hashed with: the one the version's files were written with
/// (a key's group never changes while it may have records), else `opts.hash_groups`.
pub(crate) fn groups_in(v: &Version, opts: &Options) -> u32 {
    files_of(v, ID)
        .next()
        .map_or(opts.hash_groups, groups_of)
        .max(1)
}

/// The group `user_key` belongs to among `groups`.
pub(crate) fn group(user_key: &[u8], groups: u32) -> u32 {
    (xxhash_rust::xxh3::xxh3_64_with_seed(user_key, GROUP_SEED) % u64::from(groups.max(1))) as u32
}

/// What the store's files in a version add up to: one pass over them, which the GC keeps
/// per set of files (a pass per question was several passes per step, a twentieth of the
/// CPU with 640 groups' thousands of files).
#[derive(Debug, Default)]
pub(crate) struct Sizes {
    /// Per group, by number (the cold log excluded): (bytes of all its files, bytes of its
    /// log segments: its writes since its last GC).
    pub groups: Vec<(u64, u64)>,
    /// Bytes of the cold log's files.
    pub cold: u64,
    /// The group count keys are hashed with ([`groups_in`]).
    pub count: u32,
}

impl Sizes {
    /// The sizes of `v`'s files but those numbered in `except`.
    pub fn of(v: &Version, opts: &Options, except: &std::collections::HashSet<u64>) -> Sizes {
        let mut s = Sizes {
            count: groups_in(v, opts),
            ..Sizes::default()
        };
        for f in files_of(v, ID).filter(|f| !except.contains(&f.number)) {
            let kind = kind_of(f);
            if kind == SegmentKind::Cold {
                s.cold += f.size;
            }
            if !is_group_segment(f) {
                continue;
            }
            let g = group_of(f) as usize;
            if s.groups.len() <= g {
                s.groups.resize(g + 1, (0, 0));
            }
            s.groups[g].0 += f.size;
            if kind == SegmentKind::Log {
                s.groups[g].1 += f.size;
            }
        }
        s
    }

    /// The room a group's files have before they take reserve: its main segment, and
    /// with `hash_cold_takes_main` less its share of the cold log (hot/cold separation
    /// moves cold values out of the main space; counted against it, the room they leave
    /// does not fill with log segments no GC is due to collect; the paper's store does not
    /// count it).
    pub fn room(&self, opts: &Options) -> u64 {
        if !opts.hash_cold_takes_main {
            return opts.hash_main_segment_size;
        }
        opts.hash_main_segment_size
            .saturating_sub(self.cold / u64::from(self.count.max(1)))
    }

    /// The reserve in use: per group, the bytes of its files (main and log segments) past
    /// its [`Sizes::room`]. As in the paper, a group's writes fill its main segment first
    /// (here: its log segments count against the main segment's room while the group fits
    /// in it) and only what overflows takes reserve; so a load that fits the main space
    /// runs no GC.
    pub fn reserve_used(&self, opts: &Options) -> u64 {
        let room = self.room(opts);
        self.groups
            .iter()
            .map(|&(all, _)| all.saturating_sub(room))
            .sum()
    }

    /// The groups with files, as (group, bytes of all its files, bytes of its log
    /// segments).
    pub fn with_files(&self) -> impl Iterator<Item = (u32, u64, u64)> + '_ {
        (0u32..)
            .zip(&self.groups)
            .filter(|(_, &(all, _))| all > 0)
            .map(|(g, &(all, logs))| (g, all, logs))
    }
}

/// The reserve `opts` give: `hash_reserve_ratio` of the main space.
pub(crate) fn reserve(opts: &Options) -> u64 {
    (opts.hash_reserve_ratio * f64::from(opts.hash_groups) * opts.hash_main_segment_size as f64)
        as u64
}

/// HashKV's store, as the engine sees it (one static object, registered in
/// `registry::STORES`).
pub(crate) struct HashStore;

impl ValueFormat for HashStore {
    fn checkpoint_copy(&self, f: &ValueFile) -> crate::value::CheckpointCopy {
        match kind_of(f) {
            // A write-time file still open belongs to a memtable not flushed in the version
            // (each memtable's values go to files of their own, sealed by its flush): it
            // holds nothing the copy's tables point to, and its records would be live to
            // the copy's GC, which judges liveness from its own records.
            SegmentKind::Open => crate::value::CheckpointCopy::LeaveOut,
            // Written whole, or sealed: never appended to again (bytes past a sealed
            // file's extent are never read).
            _ => crate::value::CheckpointCopy::Link,
        }
    }

    fn id(&self) -> StoreId {
        ID
    }

    fn filtered_by_own_gc(&self) -> bool {
        true
    }

    fn judges_by_own_records(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "hash store"
    }

    fn feature(&self) -> &'static str {
        FEATURE
    }

    fn extension(&self) -> &'static str {
        "hkv"
    }

    fn more_features(&self) -> &'static [&'static str] {
        &[FEATURE_WRITE_TIME, FEATURE_REPAIRED]
    }

    fn file_features(&self, f: &ValueFile) -> &'static [&'static str] {
        match (is_write_time(f), is_repaired(f)) {
            (false, false) => &[],
            (true, false) => &[FEATURE_WRITE_TIME],
            (false, true) => &[FEATURE_REPAIRED],
            (true, true) => &[FEATURE_WRITE_TIME, FEATURE_REPAIRED],
        }
    }

    /// A file still appended to is read with positional reads that see every byte
    /// appended before them.
    fn read_access(&self, f: &ValueFile) -> crate::fs::ReadAccess {
        if kind_of(f) == SegmentKind::Open {
            crate::fs::ReadAccess::Growing
        } else {
            crate::fs::ReadAccess::default()
        }
    }

    fn pointer_fits(&self, p: &ValuePointer, f: &ValueFile) -> bool {
        let end = p.offset.saturating_add(u64::from(p.size));
        p.offset >= record::HEADER_LEN
            && match (kind_of(f), is_write_time(f)) {
                // Its extent is not known yet: a read past it fails.
                (SegmentKind::Open, _) => true,
                (_, true) => end <= f.size,
                (_, false) => end.saturating_add(record::FOOTER_LEN) <= f.size,
            }
    }

    fn value_of<'a>(
        &self,
        bytes: &'a [u8],
        user_key: &[u8],
        path: &std::path::Path,
        p: &ValuePointer,
    ) -> Result<&'a [u8]> {
        let bad = |what: &str| {
            crate::error::Error::corruption(path, p.offset, format!("hash record: {what}"))
        };
        let r = record::parse(bytes).map_err(bad)?;
        if r.size != bytes.len() {
            return Err(bad("lengths do not add up to the record size"));
        }
        if r.kind != record::Kind::Value {
            return Err(bad("a pointer leads to a record without a value"));
        }
        if r.key != user_key {
            return Err(bad("the record belongs to another key"));
        }
        Ok(r.value)
    }

    fn manifest_tags(&self) -> &'static [u32] {
        &[TAG_NEW_SEGMENT]
    }

    fn encode_file(&self, f: &ValueFile, dst: &mut Vec<u8>) {
        let fields = [
            f.meta,
            f.size,
            f.records,
            f.record_bytes,
            f.garbage_records,
            f.garbage_bytes,
        ];
        crate::vstore::put_file_record(dst, TAG_NEW_SEGMENT, f, &fields);
    }

    fn decode_file(&self, _tag: u32, src: &mut &[u8]) -> Option<ValueFile> {
        crate::vstore::get_file_record(src, FORMAT, |f| {
            vec![
                &mut f.meta,
                &mut f.size,
                &mut f.records,
                &mut f.record_bytes,
                &mut f.garbage_records,
                &mut f.garbage_bytes,
            ]
        })
    }
}

impl Store for HashStore {
    fn check_options(&self, o: &Options) -> Result<()> {
        use crate::vstore::bad_option as bad;
        if !(1..=65535).contains(&o.hash_groups) {
            return bad("hash_groups", "must be between 1 and 65535");
        }
        if o.hash_main_segment_size < 4 << 10 {
            return bad("hash_main_segment_size", "must be at least 4 KiB");
        }
        if !(o.hash_reserve_ratio > 0.0 && o.hash_reserve_ratio <= 100.0) {
            return bad("hash_reserve_ratio", "must be in (0, 100]");
        }
        if o.hash_gc_candidates == 0 {
            return bad("hash_gc_candidates", "must be at least 1");
        }
        if o.hash_gc_memory < 4 << 10 {
            return bad("hash_gc_memory", "must be at least 4 KiB");
        }
        if !(o.hash_cold_gc_ratio > 0.0 && o.hash_cold_gc_ratio <= 1.0) {
            return bad("hash_cold_gc_ratio", "must be in (0, 1]");
        }
        Ok(())
    }

    fn configured(&self, opts: &Options) -> bool {
        opts.value_store == ValueStoreKind::Hash
    }

    fn walk<'a>(&self, bytes: &'a [u8]) -> crate::vstore::record::Walk<'a> {
        let (records, stop) = record::walk(bytes);
        let records = records
            .into_iter()
            .map(|(at, r)| {
                (
                    at,
                    crate::vstore::record::Parsed {
                        key: r.key,
                        value: r.value,
                        size: r.size,
                    },
                )
            })
            .collect();
        (records, stop)
    }

    fn describe(
        &self,
        path: &std::path::Path,
        bytes: &[u8],
    ) -> std::result::Result<String, String> {
        let (h, f) = (record::HEADER_LEN as usize, record::FOOTER_LEN as usize);
        let (g, groups) = record::header_group(bytes).unwrap_or((0, 0));
        let group = format!("{g} of {groups}");
        if record::header_version(bytes) == Some(record::VERSION_WRITE_TIME) {
            let (records, _) = record::walk(bytes);
            let end = record::records_end(&records);
            return Ok(format!(
                "hash-store file {} (written as writes happened): group {group}, {} B, {} \
                 records up to {end}",
                path.display(),
                bytes.len(),
                records.len(),
            ));
        }
        if bytes.len() < h + f || &bytes[..8] != record::MAGIC {
            return Err("not a complete hash-store file (header or footer)".into());
        }
        let foot = &bytes[bytes.len() - f..];
        let n = u64::from_le_bytes(foot[..8].try_into().expect("8 bytes"));
        let b = u64::from_le_bytes(foot[8..16].try_into().expect("8 bytes"));
        let (records, _) = record::walk(bytes);
        let count = |k| records.iter().filter(|(_, r)| r.kind == k).count();
        let (tombstones, tags) = (count(record::Kind::Tombstone), count(record::Kind::ColdTag));
        Ok(format!(
            "hash-store file {}: group {group}, {} B, footer says {n} records ({tombstones} \
             tombstones, {tags} cold tags), {b} B",
            path.display(),
            bytes.len()
        ))
    }

    fn rebuilt(
        &self,
        number: u64,
        path_id: PathId,
        read: &mut dyn FnMut() -> Result<Vec<u8>>,
        _reached: (u64, u64),
    ) -> Result<ValueFile> {
        let bytes = read()?;
        let (records, _) = record::walk(&bytes);
        let (group, groups) = record::header_group(&bytes).unwrap_or((0, 1));
        let mut f = ValueFile::new(FORMAT, number, path_id);
        f.size = bytes.len() as u64;
        f.records = records.len() as u64;
        f.record_bytes = records.iter().map(|(_, r)| r.size as u64).sum();
        // A repaired group's files are all log segments: its next GC writes its main,
        // keeping only the records the repaired LSM points to (`REPAIRED`). Cold-log files
        // stay cold (their GC looks keys up anyway).
        let kind = if group == COLD_GROUP {
            SegmentKind::Cold
        } else {
            SegmentKind::Log
        };
        f.meta = meta(group, groups.max(1), kind) | REPAIRED;
        if record::header_version(&bytes) == Some(record::VERSION_WRITE_TIME) {
            // Up to its last whole record.
            f.size = record::records_end(&records) as u64;
            f.meta |= WRITE_TIME;
        }
        Ok(f)
    }

    fn state(&self, v: &Version, opts: &Options) -> Option<String> {
        files_of(v, ID).next()?;
        let sizes = Sizes::of(v, opts, &Default::default());
        let (mut files, mut bytes, mut garbage, mut cold_files) = (0, 0, 0, 0);
        for f in files_of(v, ID) {
            files += 1;
            bytes += f.size;
            garbage += f.garbage_bytes;
            cold_files += u32::from(kind_of(f) == SegmentKind::Cold);
        }
        let cold_bytes = sizes.cold;
        let logs: u64 = sizes.groups.iter().map(|&(_, l)| l).sum();
        Some(format!(
            "{files} files, {bytes} B ({} of {} groups with files; {logs} B in log segments; \
             reserve in use {} B of {} B; cold log {cold_files} files, {cold_bytes} B), \
             {garbage} B counted as garbage",
            sizes.with_files().count(),
            sizes.count,
            sizes.reserve_used(opts),
            reserve(opts),
        ))
    }

    /// While configured (taking values), and while `v` holds its files whatever is
    /// configured (noting in their groups what supersedes their records).
    fn flush_separator(
        &self,
        env: &StoreEnv,
        min: usize,
        v: &Version,
    ) -> Option<Box<dyn FlushSeparator>> {
        let take = self.configured(&env.opts);
        if take && env.opts.hash_write_time && !env.recovery {
            // Every entry of a live memtable went through the write-time separator, which
            // wrote its value or its tombstone.
            return None;
        }
        let groups = groups_in(v, &env.opts);
        let mut active = vec![false; groups as usize];
        let mut any = false;
        for f in files_of(v, ID) {
            if let Some(a) = active.get_mut(group_of(f) as usize) {
                *a = true;
                any = true;
            }
        }
        (take || any).then(|| {
            Box::new(separator::HashSeparator::new(
                env, min, take, groups, active,
            )) as Box<dyn FlushSeparator>
        })
    }

    fn write_separator(
        &self,
        env: &StoreEnv,
        v: &Version,
    ) -> Option<Box<dyn crate::vstore::WriteSeparator>> {
        env.opts.hash_write_time.then(|| {
            Box::new(write::HashWriter::new(env, v)) as Box<dyn crate::vstore::WriteSeparator>
        })
    }

    fn recover(
        &self,
        env: &StoreEnv,
        v: &Version,
        last: crate::key::SeqNo,
    ) -> Result<Vec<ValueFile>> {
        write::recover(env, v, last)
    }

    fn background_gc(&self, env: &StoreEnv, v: &Version) -> Option<Box<dyn ValueGc>> {
        (self.configured(&env.opts) || files_of(v, ID).next().is_some())
            .then(|| Box::new(gc::HashGc::new(env)) as Box<dyn ValueGc>)
    }

    /// A pointer into a file the version no longer holds was moved by the file's GC, in a
    /// write the WAL replays after this one (a GC names its files before it writes a
    /// pointer into them, and flushes write none to the WAL): skipped, not lost.
    fn lost_value(
        &self,
        p: &ValuePointer,
        v: &Version,
        len: &mut dyn FnMut(&ValueFile) -> u64,
        placement: &Placement,
    ) -> Option<String> {
        if !v.values.contains_key(&p.file) {
            return None;
        }
        crate::vstore::file_reaches(self.name(), p, v, len, placement)
    }
}
