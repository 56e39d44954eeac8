//! The value store seam: values kept outside the LSM, the LSM holding key -> pointer
//! (key-value separation: WiscKey, RocksDB's BlobDB, HashKV).
//!
//! An entry of kind [`ValueKind::Pointer`](crate::key::ValueKind) carries an encoded
//! [`ValuePointer`] instead of its value; [`ValueStore::read`] turns it back into the value.
//! Reads go through one resolve step (`DbInner::resolve`), used by `get` and `DbIterator`.
//! Compactions and flushes carry pointers unchanged and report the ones they dropped
//! ([`DroppedValues`]), so a store counts its garbage without scanning.
//!
//! A store is one object behind one trait, [`Store`], listed in `registry::STORES`: its
//! files (their format, [`ValueFormat`], in `value/`: names, manifest records, records;
//! and how to walk them), how it separates (at flush,
//! [`FlushSeparator`], or at write, [`WriteSeparator`]), its GC (moved by compactions, or a
//! job of its own, [`ValueGc`], reaching the LSM through [`GcContext`]), and its recovery
//! rule. The database holds one [`Stores`]: every registered store's reader and GC,
//! whatever `Options::value_store` names now (a database keeps reading and collecting the
//! files it has), and the configured store's separator. Stores, each in its own folder:
//! `blob/` (BlobDB-class immutable blob files written by flushes,
//! `ValueStoreKind::BlobFiles`) and `vlog/` (WiscKey's value log, written as the writes
//! happen, `ValueStoreKind::VLog`). What a new store touches: docs/design/seams.md. Design:
//! docs/design/kv-separation.md; formats: docs/format/value-pointer.md,
//! docs/format/blob-file.md, docs/format/value-log.md.

pub(crate) mod blob;
mod files;
pub(crate) mod hash;
pub(crate) mod vlog;

mod collect;
mod separate;

pub use crate::value::*;
pub(crate) use collect::*;
pub(crate) use separate::*;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::filename::FileNumber;
use crate::fs::Fs;
use crate::options::Options;
use crate::placement::{PathId, Placement};
use crate::version::Version;

/// The stores a database knows, in registration order (`registry::STORES`: this module
/// lists none of them, so that a store kept in another folder, such as the coalescing
/// groups' store, is not imported from here).
pub(crate) type StoreList = &'static [&'static dyn Store];

/// `Err(InvalidArgument)` naming option `field` and why its value is refused (a store's
/// [`Store::check_options`]).
pub(crate) fn bad_option(field: &str, why: &str) -> Result<()> {
    Err(Error::invalid(format!("Options::{field}: {why}")))
}

/// The store of `stores` with id `id`.
pub(crate) fn store(stores: StoreList, id: StoreId) -> Option<&'static dyn Store> {
    stores.iter().copied().find(|s| s.id() == id)
}

/// The files of `v` that belong to `store`, in number order.
pub(crate) fn files_of(v: &Version, store: StoreId) -> impl Iterator<Item = &ValueFile> {
    v.values.values().filter(move |f| f.store() == store)
}

/// What a store is built with.
pub(crate) struct StoreEnv {
    /// Every store the database knows (`registry::STORES`).
    pub stores: StoreList,
    pub fs: Arc<dyn Fs>,
    pub placement: Placement,
    pub opts: Options,
    /// Whether separators built from it serve recovery (the flush of memtables rebuilt
    /// from WALs, whose entries no write-time separator saw in this process).
    pub recovery: bool,
}

impl StoreEnv {
    /// What recovery builds stores with (`recovery` set).
    pub fn recovering(stores: StoreList, opts: &Options, placement: &Placement) -> StoreEnv {
        StoreEnv {
            stores,
            fs: opts.fs.clone(),
            placement: placement.clone(),
            opts: opts.clone(),
            recovery: true,
        }
    }
}

/// A value store: everything the rest of the engine knows of one kind of value file. One
/// static object per store, listed in `registry::STORES`; a store's per-database state lives in
/// the separators and GC it builds.
pub(crate) trait Store: ValueFormat {
    /// Whether `opts` configure it as the store new values go to.
    fn configured(&self, opts: &Options) -> bool;
    /// The options' checks that are its own (its tunables), run by every open whatever
    /// store is configured (a database keeps reading and collecting the files of a store
    /// it no longer writes to, with these options). Default: none.
    ///
    /// # Errors
    /// `InvalidArgument` naming the first bad field.
    fn check_options(&self, _opts: &Options) -> Result<()> {
        Ok(())
    }

    // --- Its files (how they are read and recorded: [`ValueFormat`]) ---

    /// The records of a whole file's `bytes`, and where and why the walk stopped short
    /// (`check`, `value-dump`, `repair`, GC).
    fn walk<'a>(&self, bytes: &'a [u8]) -> record::Walk<'a>;
    /// A line describing file `path`, read whole as `bytes` (`value-dump`), or why it is
    /// not one of the store's files.
    ///
    /// # Errors
    /// What is wrong with the file's frame (header, footer).
    fn describe(&self, path: &std::path::Path, bytes: &[u8])
        -> std::result::Result<String, String>;
    /// The file `repair` keeps: file `number` in directory `path_id`, whose bytes `read`
    /// reads, of which kept pointers reach `reached` (records, bytes).
    ///
    /// # Errors
    /// `read`'s.
    fn rebuilt(
        &self,
        number: u64,
        path_id: PathId,
        read: &mut dyn FnMut() -> Result<Vec<u8>>,
        reached: (u64, u64),
    ) -> Result<ValueFile>;

    // --- Separation (only while configured) ---

    /// Its write-time separator for a database whose version is `v` at open, if it
    /// separates as writes happen.
    fn write_separator(&self, _env: &StoreEnv, _v: &Version) -> Option<Box<dyn WriteSeparator>> {
        None
    }
    /// Its flush-time separator, taking values of at least `min` bytes, if it separates at
    /// flush: while it is configured, or (a store that must see every flush to judge its
    /// files' liveness) while `v` holds its files. A flush runs every store's separator
    /// that answers, each seeing each entry; at most one takes a value.
    fn flush_separator(
        &self,
        _env: &StoreEnv,
        _min: usize,
        _v: &Version,
    ) -> Option<Box<dyn FlushSeparator>> {
        None
    }

    // --- GC ---

    /// Where a compaction moves the live values of collected files (with
    /// `compaction_collects`).
    fn relocation_writer(&self, _env: &StoreEnv) -> Option<Box<dyn FlushSeparator>> {
        None
    }
    /// Its GC job for a database whose version is `v` at open, if it collects on a thread
    /// of its own (the value log): whenever it is configured or `v` holds its files.
    fn background_gc(&self, _env: &StoreEnv, _v: &Version) -> Option<Box<dyn ValueGc>> {
        None
    }

    // --- What it reports ---

    /// A line on its state in `v` (`strata.value-stores`), if it has files there: the
    /// default counts files, bytes and the garbage compactions counted.
    fn state(&self, v: &Version, _opts: &Options) -> Option<String> {
        let (mut n, mut bytes, mut garbage) = (0u64, 0u64, 0u64);
        for f in files_of(v, self.id()) {
            n += 1;
            bytes += f.size;
            garbage += f.garbage_bytes;
        }
        (n > 0).then(|| format!("{n} files, {bytes} B, {garbage} B counted as garbage"))
    }

    // --- Recovery ---

    /// Why a WAL record holding pointer `p` cannot be replayed into `v`, if it cannot (the
    /// value did not reach the store before the crash). `len` gives a file's length on
    /// disk. The default: `p`'s file is in `v` and long enough.
    fn lost_value(
        &self,
        p: &ValuePointer,
        v: &Version,
        len: &mut dyn FnMut(&ValueFile) -> u64,
        placement: &Placement,
    ) -> Option<String> {
        file_reaches(self.name(), p, v, len, placement)
    }

    /// Its files of `v` that recovery names anew: files a write-time separator left open,
    /// cut after the last record the replayed writes reach (`last`: the newest sequence
    /// the WAL replay found, not the manifest's, which may belong to a write the crash
    /// lost). Named with the recovery's edit ([`reseal`]). Default: none.
    ///
    /// # Errors
    /// I/O errors reading or syncing them.
    fn recover(
        &self,
        _env: &StoreEnv,
        _v: &Version,
        _last: crate::key::SeqNo,
    ) -> Result<Vec<ValueFile>> {
        Ok(Vec::new())
    }
}

/// What every store names anew at open, after a WAL replay whose newest write was
/// sequence `last` ([`Store::recover`]), whatever is configured.
///
/// # Errors
/// A store's.
pub(crate) fn recover(
    env: &StoreEnv,
    v: &Version,
    last: crate::key::SeqNo,
) -> Result<Vec<ValueFile>> {
    let mut out = Vec::new();
    for s in env.stores {
        out.extend(s.recover(env, v, last)?);
    }
    Ok(out)
}

/// Adds to `edit` files that `v` already holds, named anew with their final extent (a
/// write-time file sealed by a flush or by recovery): each replaces its entry, keeping the
/// garbage counted against it; one without records leaves the version.
pub(crate) fn reseal(edit: &mut crate::version::VersionEdit, v: &Version, files: Vec<ValueFile>) {
    for mut f in files {
        if let Some(old) = v.values.get(&f.number) {
            f.garbage_records += old.garbage_records;
            f.garbage_bytes += old.garbage_bytes;
            edit.deleted_value_files.push(f.number);
        }
        if f.records > 0 {
            edit.new_value_files.push(f);
        }
    }
}

/// Why pointer `p` of a WAL record cannot be replayed into `v`, if its file is not in `v`
/// or too short to hold its record (`Store::lost_value`'s default; `store` names the store).
pub(crate) fn file_reaches(
    store: &str,
    p: &ValuePointer,
    v: &Version,
    len: &mut dyn FnMut(&ValueFile) -> u64,
    placement: &Placement,
) -> Option<String> {
    let Some(f) = v.values.get(&p.file) else {
        return Some(format!(
            "a WAL record points into value file {}, which is gone",
            p.file
        ));
    };
    let l = len(f);
    (p.offset.saturating_add(u64::from(p.size)) > l).then(|| {
        format!(
            "a WAL record's value did not reach the {} ({} ends at {l}, the record at {} + {})",
            store,
            f.path(placement).display(),
            p.offset,
            p.size
        )
    })
}

/// Every store of one database: reads through any of them, the configured one's
/// separation, and the GC of each that collects on its own.
pub(crate) struct Stores {
    env: StoreEnv,
    reader: files::ValueFiles,
    write: Option<Box<dyn WriteSeparator>>,
    gcs: Vec<Box<dyn ValueGc>>,
}

impl Stores {
    /// The stores of a database whose version is `v` at open, configured by `opts`.
    pub fn open(
        stores: StoreList,
        fs: Arc<dyn Fs>,
        placement: Placement,
        opts: &Options,
        v: &Version,
    ) -> Stores {
        let env = StoreEnv {
            stores,
            fs: fs.clone(),
            placement: placement.clone(),
            opts: opts.clone(),
            recovery: false,
        };
        let write = stores
            .iter()
            .filter(|s| s.configured(opts))
            .find_map(|s| s.write_separator(&env, v));
        let gcs = stores
            .iter()
            .filter_map(|s| s.background_gc(&env, v))
            .collect();
        Stores {
            reader: files::ValueFiles::new(fs, placement),
            env,
            write,
            gcs,
        }
    }

    /// Stores for a read-only open or a tool: they read, never write or collect.
    pub fn reading(
        stores: StoreList,
        fs: Arc<dyn Fs>,
        placement: Placement,
        opts: &Options,
    ) -> Stores {
        Stores {
            reader: files::ValueFiles::new(fs.clone(), placement.clone()),
            env: StoreEnv {
                stores,
                fs,
                placement,
                opts: opts.clone(),
                recovery: false,
            },
            write: None,
            gcs: Vec::new(),
        }
    }

    /// The configured store's write-time separator, if it has one.
    pub fn write_separator(&self) -> Option<&dyn WriteSeparator> {
        self.write.as_deref()
    }

    /// The flush-time separators for a flush onto `v`, taking values of at least `min`
    /// bytes (`flush_separator`).
    pub fn flush_separator(&self, min: usize, v: &Version) -> Option<Box<dyn FlushSeparator>> {
        flush_separator(&self.env, min, v)
    }

    /// Makes every value handed to the write-time separator durable.
    ///
    /// # Errors
    /// I/O errors.
    pub fn sync(&self) -> Result<()> {
        match &self.write {
            Some(w) => w.sync(),
            None => Ok(()),
        }
    }

    /// Whether the write-time separator asks for a memtable switch
    /// ([`WriteSeparator::wants_rotation`]).
    pub fn wants_rotation(&self) -> bool {
        self.write.as_ref().is_some_and(|w| w.wants_rotation())
    }

    /// Memtable `tag` was frozen ([`WriteSeparator::rotate`]).
    pub fn rotate(&self, tag: u64) {
        if let Some(w) = &self.write {
            w.rotate(tag);
        }
    }

    /// The files the flush of memtable `tag` seals ([`WriteSeparator::seal`]).
    ///
    /// # Errors
    /// I/O errors.
    pub fn seal(&self, tag: u64) -> Result<Vec<ValueFile>> {
        match &self.write {
            Some(w) => w.seal(tag),
            None => Ok(Vec::new()),
        }
    }

    /// The GC jobs that run on threads of their own.
    pub fn gcs(&self) -> &[Box<dyn ValueGc>] {
        &self.gcs
    }

    /// Whether a GC job would collect something in `v`.
    pub fn gc_due(&self, v: &Version) -> bool {
        self.gcs.iter().any(|g| g.due(v))
    }

    /// One line per store that has files in `v` or a GC job: its state and its job's
    /// counters (`strata.value-stores`).
    pub fn describe(&self, v: &Version) -> String {
        let mut out = String::new();
        for s in self.env.stores {
            let state = s.state(v, &self.env.opts);
            let counters: Vec<String> = self
                .gcs
                .iter()
                .filter(|g| g.store() == s.id())
                .flat_map(|g| g.counters())
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            if state.is_none() && counters.is_empty() {
                continue;
            }
            out.push_str(s.name());
            out.push_str(": ");
            out.push_str(state.as_deref().unwrap_or("no files"));
            if !counters.is_empty() {
                out.push_str("; GC: ");
                out.push_str(&counters.join(", "));
            }
            out.push('\n');
        }
        if out.is_empty() {
            out.push_str("none\n");
        }
        out
    }

    /// Whether writes should wait for a GC job; `version` is asked only if a job may
    /// pace writes at all.
    pub fn pace_writes(&self, version: impl FnOnce() -> Arc<Version>) -> bool {
        if !self.gcs.iter().any(|g| g.may_pace()) {
            return false;
        }
        let v = version();
        self.gcs.iter().any(|g| g.pace_writes(&v))
    }

    /// Why `batch` is refused, if a store whose GC can free nothing would take one of its
    /// values (`ValueGc::refuses`); `version` is asked only if a job may pace writes.
    /// Deletes, small values and batches without values are never refused: they are how
    /// space is freed.
    pub fn refuses(
        &self,
        batch: &crate::batch::WriteBatch,
        version: impl FnOnce() -> Arc<Version>,
    ) -> Option<String> {
        if !self.gcs.iter().any(|g| g.may_pace()) {
            return None;
        }
        let min = self.env.opts.min_blob_size;
        let adds = batch
            .iter()
            .any(|e| e.is_ok_and(|e| e.kind == crate::key::ValueKind::Put && e.value.len() >= min));
        if !adds {
            return None;
        }
        let v = version();
        self.gcs.iter().find_map(|g| g.refuses(&v))
    }

    /// Maps in the pages of a value file a flush or compaction just wrote
    /// (`ValueFiles::warm`).
    pub fn warm(&self, f: &ValueFile) {
        self.reader.warm(f);
    }

    /// What a compaction on `v` relocates: the files of the first store (in registration
    /// order) holding files compactions collect, and that store's writer for the moved
    /// values, whatever store is configured now.
    pub fn relocation(&self, v: &Version) -> Option<(BTreeSet<u64>, Box<dyn FlushSeparator>)> {
        let opts = &self.env.opts;
        self.env.stores.iter().find_map(|s| {
            let from: BTreeSet<u64> = files_of(v, s.id())
                .filter(|f| s.compaction_collects(f, opts))
                .map(|f| f.number)
                .collect();
            if from.is_empty() {
                return None;
            }
            s.relocation_writer(&self.env).map(|w| (from, w))
        })
    }
}

impl Stores {
    /// The value `p` points to in `v`'s files, written for `user_key`, read through
    /// `handles` (an iterator's: a scan reads most of its values from a few files, and
    /// finding each in the version and in the shared map of open files cost ~5 % of a
    /// scan over coalesced items).
    ///
    /// # Errors
    /// `Corruption` if `v` holds no file `p` leads into; as for [`ValueStore::read`].
    pub fn read_through(
        &self,
        handles: &mut ValueHandles,
        v: &Version,
        user_key: &[u8],
        p: &ValuePointer,
        forward: bool,
    ) -> Result<Vec<u8>> {
        let at = match handles.0.iter().position(|h| h.0.number == p.file) {
            Some(i) => i,
            None => {
                let f = file_of(v, user_key, p)?;
                let open = self.reader.file(f)?;
                handles.insert((f.clone(), open))
            }
        };
        let (f, open) = &handles.0[at];
        self.reader.read_in(user_key, p, f, open, forward)
    }
}

/// The file of `v` that `p`, a value pointer of `user_key`, leads into.
///
/// # Errors
/// `Corruption` if `v` holds no such file.
pub(crate) fn file_of<'v>(
    v: &'v Version,
    user_key: &[u8],
    p: &ValuePointer,
) -> Result<&'v ValueFile> {
    v.values.get(&p.file).ok_or_else(|| {
        Error::corrupt(format!(
            "a value pointer of key {user_key:02x?} leads into value file {}, {NOT_HELD}",
            p.file
        ))
    })
}

/// How [`file_of`]'s error ends.
const NOT_HELD: &str = "which the version does not hold";

/// Whether `e` is [`file_of`]'s: a pointer into a value file the reader's version does not
/// hold (in a read-only view, a file the writer's GC named or removed since).
pub(crate) fn is_pointer_into_unknown_file(e: &Error) -> bool {
    e.kind() == crate::error::ErrorKind::Corruption && e.message().ends_with(NOT_HELD)
}

/// The value files an iterator read last, open (`Stores::read_through`): at most
/// [`ValueHandles::MAX`], the oldest replaced first. Valid for one version.
#[derive(Default)]
pub(crate) struct ValueHandles(Vec<(ValueFile, Arc<files::OpenFile>)>, usize);

impl ValueHandles {
    const MAX: usize = 16;

    /// Adds `h`; returns its index.
    fn insert(&mut self, h: (ValueFile, Arc<files::OpenFile>)) -> usize {
        if self.0.len() < Self::MAX {
            self.0.push(h);
            return self.0.len() - 1;
        }
        let at = self.1;
        self.1 = (self.1 + 1) % Self::MAX;
        self.0[at] = h;
        at
    }
}

impl ValueStore for Stores {
    fn read(
        &self,
        user_key: &[u8],
        p: &ValuePointer,
        f: &ValueFile,
        forward: bool,
    ) -> Result<Vec<u8>> {
        self.reader.read(user_key, p, f, forward)
    }

    fn read_ahead(&self, pointers: &mut [(ValuePointer, &ValueFile)]) {
        self.reader.read_ahead(pointers);
    }

    fn evict(&self, number: u64) {
        self.reader.evict(number);
    }
}

/// The flush-time separators of every store that answers for a flush onto `v`
/// (`Store::flush_separator`), as one; `None` if none does.
pub(crate) fn flush_separator(
    env: &StoreEnv,
    min: usize,
    v: &Version,
) -> Option<Box<dyn FlushSeparator>> {
    let mut all: Vec<Box<dyn FlushSeparator>> = env
        .stores
        .iter()
        .filter_map(|s| s.flush_separator(env, min, v))
        .collect();
    match all.len() {
        0 => None,
        1 => all.pop(),
        _ => Some(Box::new(Separators(all))),
    }
}

/// Several stores' flush-time separators, each seeing every entry; the first pointer
/// returned is the entry's.
struct Separators(Vec<Box<dyn FlushSeparator>>);

impl FlushSeparator for Separators {
    fn separate(
        &mut self,
        new_file_number: &mut dyn FnMut() -> FileNumber,
        e: FlushEntry<'_>,
    ) -> Result<Option<ValuePointer>> {
        let mut taken = None;
        for s in &mut self.0 {
            let p = s.separate(new_file_number, e)?;
            taken = taken.or(p);
        }
        Ok(taken)
    }

    fn finish(&mut self) -> Result<Vec<ValueFile>> {
        let mut files = Vec::new();
        for s in &mut self.0 {
            files.extend(s.finish()?);
        }
        Ok(files)
    }
}

/// Why the WAL record `batch` cannot be replayed into `v`, if a value pointer of it leads
/// past what its store holds on disk (each store's rule, [`Store::lost_value`]). `lengths`
/// caches file lengths.
///
/// # Errors
/// A batch or pointer that does not decode.
pub(crate) fn lost_value(
    stores: StoreList,
    batch: &crate::batch::WriteBatch,
    v: &Version,
    fs: &dyn Fs,
    placement: &Placement,
    lengths: &mut HashMap<u64, u64>,
) -> Result<Option<String>> {
    for e in batch.iter() {
        let e = e?;
        if e.kind != crate::key::ValueKind::Pointer {
            continue;
        }
        let p = ValuePointer::decode(e.value)?;
        let Some(s) = store(stores, p.store) else {
            return Err(Error::corrupt(format!(
                "a WAL record holds a value pointer of unknown store {}",
                p.store.0
            )));
        };
        let mut len = |f: &ValueFile| {
            *lengths
                .entry(f.number)
                .or_insert_with(|| fs.file_size(&f.path(placement)).unwrap_or(0))
        };
        if let Some(why) = s.lost_value(&p, v, &mut len, placement) {
            return Ok(Some(why));
        }
    }
    Ok(None)
}

/// A value store, as reads see it.
pub(crate) trait ValueStore: Send + Sync {
    /// The value `p` points to in file `f`, written for `user_key`; `forward`: read by a
    /// forward scan, which reads the next key's value next (`Store::cache_ahead`).
    ///
    /// # Errors
    /// `Corruption` naming file and offset when the record fails its checksum or is not
    /// `user_key`'s; I/O errors.
    fn read(
        &self,
        user_key: &[u8],
        p: &ValuePointer,
        f: &ValueFile,
        forward: bool,
    ) -> Result<Vec<u8>>;

    /// Asks for the records `pointers` reach to be read into memory ahead of their reads,
    /// without waiting (a scan's next values; WiscKey's range-query prefetch). Only a hint:
    /// nothing fails.
    fn read_ahead(&self, pointers: &mut [(ValuePointer, &ValueFile)]);

    /// Forgets open handles to file `number` (it was deleted).
    fn evict(&self, number: u64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::STORES;

    /// A damaged pointer may hold any offset and size: every store's check refuses one past
    /// the end of the file instead of overflowing (a panic where overflow is checked).
    #[test]
    fn every_store_refuses_a_pointer_past_any_file_without_overflowing() {
        for s in STORES {
            for meta in [0, 4096, u64::MAX] {
                let mut f = ValueFile::new(Format(*s), 7, PathId(0));
                f.size = 1 << 20;
                f.meta = meta;
                for (offset, size) in [(u64::MAX - 3, 100), (u64::MAX, u32::MAX), (64, u32::MAX)] {
                    let p = ValuePointer {
                        store: s.id(),
                        file: 7,
                        offset,
                        size,
                    };
                    // (Only a store that cannot know its file's end yet may say yes.)
                    let _ = s.pointer_fits(&p, &f);
                }
            }
        }
    }

    #[test]
    fn pointers_round_trip_and_garbage_is_rejected() {
        let p = ValuePointer {
            store: blob::ID,
            file: 123_456,
            offset: 1 << 40,
            size: 70_000,
        };
        let e = p.encode();
        assert_eq!(ValuePointer::decode(&e).unwrap(), p);
        for cut in 0..e.len() {
            assert!(ValuePointer::decode(&e[..cut]).is_err(), "cut {cut}");
        }
        let mut long = e.clone();
        long.push(0);
        assert!(ValuePointer::decode(&long).is_err());
    }
}
