//! Flush: turns the oldest immutable memtable into an L0 table and installs it.
//!
//! Runs on the flush thread (or the shared background thread). The table is written and
//! synced, its directory synced, then the edit (new L0 file + the oldest WAL still needed)
//! is logged; only then is the memtable dropped and its WAL deleted.

use std::sync::Arc;

use super::{lock, DbInner};
use crate::compaction::job::{Verdict, VersionFilter};
use crate::error::{Error, ErrorKind, Result};
use crate::filename::FileNumber;
use crate::fs::Fs;
use crate::iter::InternalIterator;
use crate::key;
use crate::key::SeqNo;
use crate::memtable::MemTable;
use crate::placement::Placement;
use crate::sst::{TableBuilder, TableOptions};
use crate::stats::Stats;
use crate::version::{file_meta_from, FileMeta, VersionEdit};

/// Writes `mem` as one L0 table numbered `number` (dropping versions no snapshot in
/// `snapshots` needs); `None` if nothing survives. Used by flush and by WAL recovery.
pub(crate) fn build_l0_table(
    fs: &dyn Fs,
    placement: &Placement,
    table_opts: TableOptions,
    snapshots: Vec<SeqNo>,
    mem: &Arc<MemTable>,
    number: FileNumber,
) -> Result<Option<FileMeta>> {
    let path_id = placement.path_id_for_level(0);
    let path = placement.table_path(number, path_id);
    let mut filter = VersionFilter::new(snapshots);
    let mut it = mem.iter();
    it.seek_to_first();
    let mut builder: Option<TableBuilder> = None;
    while it.valid() {
        let p =
            key::parse(it.key()).ok_or_else(|| Error::corrupt("memtable holds a malformed key"))?;
        // A flush never drops tombstones: older versions may live in tables.
        if filter.judge(p.user_key, p.seq, p.kind, || false) == Verdict::Keep {
            if builder.is_none() {
                builder = Some(TableBuilder::new(
                    fs.create(&path)?,
                    path.clone(),
                    table_opts,
                ));
            }
            if let Some(b) = builder.as_mut() {
                b.add(it.key(), it.value())?;
            }
        }
        it.next();
    }
    let Some(b) = builder else { return Ok(None) };
    let (smallest, largest) = (b.first_key().to_vec(), b.last_key().to_vec());
    let props = b.finish()?;
    fs.sync_dir(placement.dir_of(path_id))?;
    Ok(Some(file_meta_from(
        number, path_id, &props, smallest, largest,
    )))
}

/// Flushes the oldest immutable memtable. REQUIRES: the caller set `flush_running`.
pub(crate) fn flush_one(db: &DbInner) -> Result<()> {
    let Some(mem) = lock(&db.state).imms.front().cloned() else {
        return Ok(());
    };
    let number = lock(&db.versions).new_output_number();
    let result = build_l0_table(
        &*db.fs,
        &db.placement,
        TableOptions::from(&db.opts),
        db.snapshots.sequences(),
        &mem,
        number,
    );
    let result = result.and_then(|m| {
        if let Some(m) = &m {
            Stats::add(&db.stats.flush_bytes, m.size);
            db.tables.table(m)?.verify_new()?;
        }
        Ok(m)
    });
    let mut versions = lock(&db.versions);
    let meta = match result {
        Ok(m) => m,
        Err(e) => {
            versions.release_outputs(&[number]);
            return Err(e);
        }
    };
    let mut edit = VersionEdit::default();
    if let Some(m) = meta {
        edit.new_files.push((0, m));
    }
    // Every WAL older than the next memtable's is now redundant.
    let next_wal = {
        let st = lock(&db.state);
        st.imms
            .get(1)
            .map_or(st.mem.wal_number(), |m| m.wal_number())
    };
    edit.log_number = Some(FileNumber(next_wal));
    edit.last_sequence = Some(db.visible_sequence());
    let applied = versions.log_and_apply(edit);
    versions.release_outputs(&[number]);
    let v = applied?;
    let mut st = lock(&db.state);
    let popped = st.imms.pop_front();
    debug_assert!(popped.is_some_and(|p| Arc::ptr_eq(&p, &mem)));
    super::DbInner::install_super_version(&mut st, v);
    st.progress += 1;
    drop(st);
    drop(versions);
    // WALs older than `next_wal` are obsolete: nothing needs them synced any more.
    lock(&db.wal).unsynced.retain(|(n, _)| n.0 >= next_wal);
    Stats::add(&db.stats.flushes, 1);
    db.done_cv.notify_all();
    db.bg_cv.notify_all();
    Ok(())
}

/// `Db::flush`: freeze the memtable, then wait until no immutable memtable is left.
pub(crate) fn flush_and_wait(db: &DbInner) -> Result<()> {
    super::write::force_switch(db)?;
    let mut st = lock(&db.state);
    loop {
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        if st.imms.is_empty() {
            return Ok(());
        }
        if db.shutting_down.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::new(ErrorKind::Closed, "database is closing"));
        }
        db.bg_cv.notify_all();
        st = db
            .done_cv
            .wait(st)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
}
