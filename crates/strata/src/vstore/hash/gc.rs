//! The hash store's GC: one segment group at a time, without LSM lookups.
//!
//! A step: pick the group with the most log bytes (the paper's greedy: the most writes
//! since its last GC); start the user-write watch, then take a view (memtables + version:
//! every write before the watch is in one of them); read the group's files in that version;
//! for each key keep its newest record (by sequence); a key whose newest record is a value
//! is live unless the view's memtables hold a newer entry for it (the paper's write-cache
//! check: an entry there is newer than anything flushed, unless it is the pointer to that
//! very record). Configured, the live records are written to a new main segment (spilling
//! into log segments past `hash_main_segment_size`), named in the manifest, and the moved
//! pointers written through the write path (skipping keys users wrote since the watch);
//! not configured (the database was reopened with another store), the live values are
//! written again as puts, leaving the store. Once no snapshot older than that write
//! remains, the group's old files leave the version.
//!
//! Crash at any point: before the moves are durable, the old files still serve every
//! pointer and the next GC reads old and new (equal records, equal sequences); after, only
//! the removal is missing and the next GC of the group does it again. Nothing is
//! overwritten, so no journal is needed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::separator::GroupWriter;
use super::{group_of, groups_in, kind_of, record, reserve, reserve_used, SegmentKind, ID};
use crate::error::Result;
use crate::filename::FileNumber;
use crate::fs::Fs;
use crate::key::SeqNo;
use crate::memtable::Lookup;
use crate::placement::Placement;
use crate::stats::Stats;
use crate::version::{Version, VersionEdit};
use crate::vstore::{
    files_of, GcContext, Relocated, Store, StoreEnv, ValueFile, ValueGc, ValuePointer,
};

/// GC starts when the reserve in use passes this fraction of the reserve.
const TRIGGER: f64 = 0.9;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The hash store's GC job of one database.
pub(super) struct HashGc {
    fs: Arc<dyn Fs>,
    placement: Placement,
    opts: crate::options::Options,
    configured: bool,
    reserve: u64,
    /// The files a GC replaced, and the sequence after its moves: removed once no snapshot
    /// below that sequence remains.
    collected: Mutex<Option<(Vec<u64>, SeqNo)>>,
}

/// What collecting a group gives: the moves, the files they replace, the value bytes
/// moved.
type Collected = (Vec<Relocated>, Vec<u64>, u64);

/// A key's newest record in the group being collected.
struct Newest {
    seq: SeqNo,
    kind: record::Kind,
    file: u64,
    offset: usize,
    size: usize,
}

impl HashGc {
    pub fn new(env: &StoreEnv) -> HashGc {
        HashGc {
            fs: env.fs.clone(),
            placement: env.placement.clone(),
            opts: env.opts.clone(),
            configured: super::HashStore.configured(&env.opts),
            reserve: reserve(&env.opts),
            collected: Mutex::new(None),
        }
    }

    /// The group to collect in `v`: configured, the one with the most log bytes, that is
    /// the most writes since its last GC (none if no group has any: collecting a group
    /// of main segments alone frees nothing); otherwise any group with files (the store
    /// drains).
    fn victim(&self, v: &Version) -> Option<u32> {
        let mut log_bytes: HashMap<u32, u64> = HashMap::new();
        for f in files_of(v, ID) {
            let e = log_bytes.entry(group_of(f)).or_default();
            if !self.configured || kind_of(f) == SegmentKind::Log {
                *e += f.size.max(1);
            }
        }
        log_bytes
            .into_iter()
            .filter(|&(_, b)| b > 0)
            .max_by_key(|&(g, b)| (b, std::cmp::Reverse(g)))
            .map(|(g, _)| g)
    }

    /// Removes the files the last GC replaced, once no snapshot may still read them.
    /// `None` if none wait; `Some(false)` if they wait for a snapshot.
    fn remove_collected(&self, ctx: &dyn GcContext) -> Result<Option<bool>> {
        let Some((files, moved_at)) = lock(&self.collected).clone() else {
            return Ok(None);
        };
        if ctx.snapshot_below(moved_at) {
            return Ok(Some(false));
        }
        ctx.apply(VersionEdit {
            deleted_value_files: files,
            ..VersionEdit::default()
        })?;
        *lock(&self.collected) = None;
        Ok(Some(true))
    }

    /// Collects group `g` of `view`'s version; returns the moves and the old files, or
    /// `None` if the database is closing.
    fn collect(
        &self,
        ctx: &dyn GcContext,
        view: &dyn crate::vstore::GcView,
        g: u32,
    ) -> Result<Option<Collected>> {
        let v = view.version();
        let files: Vec<ValueFile> = files_of(v, ID)
            .filter(|f| group_of(f) == g)
            .cloned()
            .collect();
        let mut contents: HashMap<u64, Vec<u8>> = HashMap::new();
        let mut newest: HashMap<Vec<u8>, Newest> = HashMap::new();
        for f in &files {
            let bytes = crate::fs::read_all(&*self.fs, &f.path(&self.placement))?;
            Stats::add(&ctx.stats().value_gc_bytes_read, bytes.len() as u64);
            let (records, stop) = record::walk(&bytes);
            if let Some((at, what)) = stop {
                return Err(crate::error::Error::corruption(
                    &f.path(&self.placement),
                    at as u64,
                    format!("hash record: {what}"),
                ));
            }
            for (offset, r) in records {
                let n = Newest {
                    seq: r.seq,
                    kind: r.kind,
                    file: f.number,
                    offset,
                    size: r.size,
                };
                match newest.get_mut(r.key) {
                    Some(old) if old.seq >= r.seq => {}
                    Some(old) => *old = n,
                    None => {
                        newest.insert(r.key.to_vec(), n);
                    }
                }
            }
            contents.insert(f.number, bytes);
        }
        // In key order: the moves reach the memtable in key order, and the new main holds
        // its records in key order (a scan's next values are neighbours).
        let mut live: Vec<(Vec<u8>, Newest)> = newest
            .into_iter()
            .filter(|(_, n)| n.kind == record::Kind::Value)
            .collect();
        live.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut encoded = Vec::with_capacity(16);
        let mut moves = Vec::new();
        let mut moved_bytes = 0u64;
        let groups = groups_in(v, &self.opts);
        let mut out: Option<GroupWriter> = None;
        let mut written: Vec<ValueFile> = Vec::new();
        let mut reserved: Vec<u64> = Vec::new();
        let result = (|| -> Result<bool> {
            for (key, n) in &live {
                if ctx.closing() {
                    return Ok(false);
                }
                let here = ValuePointer {
                    store: ID,
                    file: n.file,
                    offset: n.offset as u64,
                    size: n.size as u32,
                };
                match view.memtable_entry(key) {
                    None => {}
                    Some(Lookup::Pointer(p)) => {
                        encoded.clear();
                        here.encode_to(&mut encoded);
                        if p != encoded {
                            continue;
                        }
                    }
                    Some(_) => continue,
                }
                let bytes = &contents[&n.file][n.offset..n.offset + n.size];
                let r = record::parse(bytes).map_err(|what| {
                    crate::error::Error::corrupt(format!("hash record on re-read: {what}"))
                })?;
                moved_bytes += r.value.len() as u64;
                if !self.configured {
                    moves.push(Relocated {
                        key: key.clone(),
                        value: r.value.to_vec(),
                        pointer: false,
                    });
                    continue;
                }
                if out
                    .as_ref()
                    .is_some_and(|w| w.len() >= self.opts.hash_main_segment_size)
                {
                    written.push(out.take().expect("checked").finish(SegmentKind::Main)?);
                }
                if out.is_none() {
                    let number = ctx.files().reserve();
                    reserved.push(number);
                    out = Some(GroupWriter::create(
                        &*self.fs,
                        &self.placement,
                        FileNumber(number),
                        g,
                        groups,
                    )?);
                }
                let w = out.as_mut().expect("just made");
                let p = w.add(record::Kind::Value, r.seq, key, r.value)?;
                encoded.clear();
                p.encode_to(&mut encoded);
                moves.push(Relocated {
                    key: key.clone(),
                    value: encoded.clone(),
                    pointer: true,
                });
            }
            if let Some(w) = out.take() {
                written.push(w.finish(SegmentKind::Main)?);
            }
            if let Some(f) = written.first() {
                self.fs.sync_dir(self.placement.dir(f.path_id))?;
            }
            Ok(true)
        })();
        if !matches!(result, Ok(true)) {
            for n in reserved {
                ctx.files().release(n);
            }
            return result.map(|_| None);
        }
        // Named before any pointer into them is written: a crash after this keeps them
        // with the old files, and the next GC reads both. (Each file's number is the one
        // reserved for it, in order; naming releases it.)
        for (i, f) in written.into_iter().enumerate() {
            if let Err(e) = ctx.files().name(f) {
                for &n in &reserved[i + 1..] {
                    ctx.files().release(n);
                }
                return Err(e);
            }
        }
        let old = files.iter().map(|f| f.number).collect();
        Ok(Some((moves, old, moved_bytes)))
    }
}

impl ValueGc for HashGc {
    fn thread_name(&self) -> &'static str {
        "strata-hash-gc"
    }

    /// Configured: the reserve in use past 90 % of the reserve, and a group with log
    /// segments. Otherwise: any file left (the store drains into the configured one).
    fn due(&self, v: &Version) -> bool {
        if !self.configured {
            return files_of(v, ID).next().is_some();
        }
        reserve_used(v, self.opts.hash_main_segment_size) as f64 > TRIGGER * self.reserve as f64
            && self.victim(v).is_some()
    }

    fn step(&self, ctx: &dyn GcContext) -> Result<bool> {
        if let Some(done) = self.remove_collected(ctx)? {
            return Ok(done);
        }
        if !self.due(&ctx.version()) {
            return Ok(false);
        }
        // The watch first, then the view: every user write is in the view or watched.
        ctx.watch();
        let view = ctx.view();
        let Some(g) = self.victim(view.version()) else {
            ctx.unwatch();
            return Ok(false);
        };
        let (moves, old, moved_bytes) = match self.collect(ctx, &*view, g) {
            Ok(Some(m)) => m,
            other => {
                ctx.unwatch();
                return other.map(|_| false);
            }
        };
        drop(view);
        let at = ctx.write_relocated(moves)?;
        Stats::add(&ctx.stats().value_bytes_relocated, moved_bytes);
        Stats::add(&ctx.stats().value_gc_runs, 1);
        *lock(&self.collected) = Some((old, at));
        self.remove_collected(ctx)?;
        Ok(true)
    }

    fn may_pace(&self) -> bool {
        self.configured
    }

    /// While the reserve in use passes the reserve, unless replaced files wait for a
    /// snapshot (GC can free nothing until it is released).
    fn pace_writes(&self, v: &Version) -> bool {
        reserve_used(v, self.opts.hash_main_segment_size) > self.reserve
            && lock(&self.collected).is_none()
    }
}
