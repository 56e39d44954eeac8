//! Compaction as the database runs it: pick under the locks, merge without them, install
//! under them; `compact_range`; and deletion of files no version needs.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use super::{lock, DbInner};
use crate::compaction::job::Relocate;
use crate::compaction::picker::{self, Compaction, PickContext};
use crate::compaction::{sizing, CompactionJob};
use crate::compaction_filter::FilterReason;
use crate::error::{Error, ErrorKind, Result};
use crate::filename::{self, FileNumber, FileType};
use crate::fs::DurableFirst;
use crate::obsolete::ObsoleteList;
use crate::stats::{Stats, MAX_LEVELS};
use crate::version::set::PendingSync;
use crate::version::{Version, VersionEdit};
use crate::vstore::ValueStore;

/// The longest a compaction thread sleeps while a table will have expired entries for the
/// picker to take (`DbInner::until_expiry`).
const EXPIRY_LOOK: std::time::Duration = std::time::Duration::from_secs(10);

impl DbInner {
    /// What the picker judges expired tables by (`picker::pick_expired`): `None` for a
    /// database without expiring entries.
    pub(crate) fn expiry_clock(&self, v: &crate::version::Version) -> Option<picker::ExpiryClock> {
        v.expiring.then(|| picker::ExpiryClock {
            now: self.now.now(),
            newest_snapshot: self
                .snapshots
                .sequences()
                .last()
                .copied()
                .unwrap_or(crate::key::SeqNo::ZERO),
        })
    }

    /// How long a compaction thread with nothing to do may sleep before a table the
    /// picker takes for its expired entries may be due (`picker::next_expiry`); `None` when
    /// none will be. A table due already waits for a snapshot to go, which wakes no
    /// thread: looked at again each second. One due later: at its time, but at most
    /// [`EXPIRY_LOOK`] ahead (the clock, `Options::clock`, may be one that jumps).
    pub(crate) fn until_expiry(&self) -> Option<std::time::Duration> {
        use std::time::Duration;
        let v = lock(&self.versions).current();
        let clock = self.expiry_clock(&v)?;
        let at = picker::next_expiry(&v)?;
        Some(match at.checked_sub(clock.now) {
            Some(ms) if ms > 0 => Duration::from_millis(ms).min(EXPIRY_LOOK),
            _ => Duration::from_secs(1),
        })
    }

    /// Picks a compaction and marks its inputs busy. `None` if nothing needs doing.
    /// `idle`: no write and no read came for `Options::idle_compaction_delay`.
    pub(crate) fn pick_compaction(&self, idle: bool) -> Option<Compaction> {
        let versions = lock(&self.versions);
        let mut st = lock(&self.state);
        if st.bg_error.is_some() {
            return None;
        }
        let v = versions.current();
        let pointers: Vec<Vec<u8>> = (0..v.num_levels())
            .map(|l| versions.compact_pointer(l).to_vec())
            .collect();
        let ctx = PickContext {
            version: &v,
            opts: &self.opts,
            busy: &st.busy,
            compact_pointers: &pointers,
            placement: &self.placement,
            straight_reads: self.straight_reads.load(Ordering::Relaxed),
            idle,
            expiry: self.expiry_clock(&v),
        };
        let c = picker::pick(&ctx)?;
        st.start_compaction(&c);
        Some(c)
    }

    /// Runs and installs `c`, then releases its inputs. The caller poisons the database
    /// on error.
    pub(crate) fn run_compaction(&self, c: Compaction) -> Result<()> {
        let result = execute(self, &c);
        let mut st = lock(&self.state);
        st.end_compaction(&c);
        // NB: dropped before the waiters wake: a matrix column holds the layout it was cut
        // from, whose pages a writer stopped on the container's fullness waits for (woken
        // while they were still held, it waited for progress that never came).
        drop(c);
        st.progress += 1;
        drop(st);
        self.done_cv.notify_all();
        self.bg_cv.notify_all();
        result
    }
}

/// [`crate::Db::wait_for_compactions`]: waits until no flush or compaction runs or is due.
/// A level over its target that the picker leaves alone (every candidate waits on something
/// that is not running) would keep it waiting for ever: once nothing has run for a second,
/// that state is idle too. An idle compaction (`Options::idle_compaction_delay`) counts as
/// due while no write comes: writes that go on put it off, and the wait ends.
pub(crate) fn wait_idle(db: &DbInner) -> Result<()> {
    let mut st = lock(&db.state);
    let mut quiet_since: Option<(u64, std::time::Instant)> = None;
    let sequence = db.last_sequence.load(Ordering::Acquire);
    loop {
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        if db.shutting_down.load(Ordering::Acquire) {
            return Err(Error::new(ErrorKind::Closed, "database is closing"));
        }
        let running = !st.imms.is_empty() || st.flush_running || st.compactions_running > 0;
        if !running {
            let progress = st.progress;
            drop(st);
            let v = lock(&db.versions).current();
            let due = picker::scores(&v, &db.opts)
                .first()
                .is_some_and(|&(_, score)| score >= 1.0)
                || picker::value_gc_due(&v, &db.opts)
                || db.values.gc_due(&v);
            let idle_due = !due
                && picker::idle_due(&v, &db.opts)
                && db.last_sequence.load(Ordering::Acquire) == sequence;
            if !due && !idle_due {
                // The last job's inputs may still be on disk: the thread that ran it
                // deletes them after waking us.
                db.delete_obsolete_files();
                return Ok(());
            }
            // An idle compaction starts only once the database has been idle for its delay.
            let patience = std::time::Duration::from_secs(1)
                + db.opts
                    .idle_compaction_delay
                    .filter(|_| idle_due)
                    .unwrap_or_default();
            match quiet_since {
                Some((p, t)) if p == progress => {
                    if t.elapsed() >= patience {
                        db.delete_obsolete_files();
                        return Ok(());
                    }
                }
                _ => quiet_since = Some((progress, std::time::Instant::now())),
            }
            db.bg_cv.notify_all();
            st = lock(&db.state);
        }
        st = db
            .done_cv
            .wait_timeout(st, std::time::Duration::from_millis(20))
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
    }
}

/// What a compaction on `v` relocates: the live values in the files compactions collect
/// (their store decides which, whatever store is configured now), into that store's new
/// files.
fn relocation<'a>(db: &'a DbInner, v: &Version) -> Option<Relocate<'a>> {
    let (from, writer) = db.values.relocation(v)?;
    Some(Relocate {
        from,
        store: &*db.values,
        writer,
    })
}

fn execute(db: &DbInner, c: &Compaction) -> Result<()> {
    let out_level = c.output_level.min(MAX_LEVELS - 1);
    let in_level = c.level.min(MAX_LEVELS - 1);
    let mut edit = VersionEdit::default();
    match c.reason {
        picker::CompactionReason::Reads => Stats::add(&db.stats.read_compactions, 1),
        picker::CompactionReason::Idle => Stats::add(&db.stats.idle_compactions, 1),
        picker::CompactionReason::ValueGc => Stats::add(&db.stats.value_gc_compactions, 1),
        picker::CompactionReason::Expired => Stats::add(&db.stats.expiry_compactions, 1),
        _ => {}
    }
    for f in &c.inputs {
        edit.deleted_files.push((c.level, f.number));
    }
    if c.trivial_move {
        for f in &c.inputs {
            edit.new_files.push((c.output_level, (**f).clone()));
        }
        Stats::add(&db.stats.moves_from[in_level], 1);
        Stats::add(&db.stats.moved_files_from[in_level], c.inputs.len() as u64);
    } else {
        for f in &c.next_inputs {
            edit.deleted_files.push((c.output_level, f.number));
        }
        // The inputs durable before anything derived from them is: a flush's tables are
        // synced with its record (`DurableFirst`), which may not be yet, and outputs synced
        // before them would survive a power cut that loses them. The manifest ignores such
        // outputs (their record comes later), but `repair`, which reads every table, would
        // take an output that dropped a tombstone with the value it hid while the input
        // holding the tombstone is lost and the one holding the value is not: a deleted
        // value back beside later writes (docs/design/core-engine.md). Mostly a sync that
        // the flush's handoff has already started. (Waited for with the versions' lock
        // released: it may sync, and flushes and GC install their versions meanwhile.)
        let sync = lock(&db.versions).manifest_sync();
        sync.wait_all()?;
        let version = db.super_version().version.clone();
        let mut outputs: Vec<FileNumber> = Vec::new();
        // With a compaction filter, held until the result is installed.
        let mut snaps = db.job_snapshots();
        let _filtering = snaps.hold.take();
        let env = super::filter::JobEnv {
            db,
            version: &version,
        };
        let filter = env.filtering(
            FilterReason::Compaction {
                output_level: c.output_level,
            },
            &snaps,
        );
        let mut new_number = || {
            let n = lock(&db.versions).new_output_number();
            outputs.push(n);
            n
        };
        let stop = || db.shutting_down.load(Ordering::Acquire);
        let mut job = CompactionJob {
            compaction: c,
            version: &version,
            snapshots: snaps.seqs.clone(),
            tables: &db.tables,
            fs: &*db.fs,
            placement: &db.placement,
            table_opts: crate::sst::TableOptions::from(&db.opts),
            cut: db.opts.table_cut,
            table_sizes: sizing::table_size_range(&db.opts, c.level),
            max_grandparent_overlap: db.opts.max_grandparent_overlap_factor
                * db.opts.target_file_size_base,
            new_file_number: &mut new_number,
            should_stop: &stop,
            relocate: relocation(db, &version),
            filter,
        };
        let result = job.run().and_then(|out| {
            for f in &out.files {
                db.tables.table(f)?.verify_new()?;
            }
            Ok(out)
        });
        let out = match result {
            Ok(o) => o,
            Err(e) => {
                lock(&db.versions).release_outputs(&outputs);
                return Err(e);
            }
        };
        Stats::add(&db.stats.compaction_read[out_level], out.bytes_read);
        Stats::add(&db.stats.compaction_written[out_level], out.bytes_written);
        for f in out.files {
            edit.new_files.push((c.output_level, f));
        }
        Stats::add(&db.stats.value_bytes_relocated, out.relocated_bytes);
        Stats::add(&db.stats.filtered_entries, out.filtered);
        Stats::add(&db.stats.expired_entries, out.expired);
        let filtered = out.filtered > 0;
        let written: Vec<u64> = out.new_value_files.iter().map(|f| f.number).collect();
        edit.new_value_files = out.new_value_files;
        edit.value_garbage = out.dropped_values.into_records();
        // A filter may decide from the database's current state (strata-server's reads
        // the record of the collection an element belongs to), which may hold writes not
        // synced yet: those are made durable before the record that makes the removals
        // durable, or a power cut could keep the removals and lose the write they followed
        // from (docs/design/compaction-filters.md, "Durability of a filter's result"). Before
        // the obsolete list too: a repair after a cut takes the outputs for the inputs it
        // lists.
        if filtered {
            if let Err(e) = super::write::sync_wal_unqueued(db) {
                lock(&db.versions).release_outputs(&outputs);
                return Err(e);
            }
        }
        if c.l0_part.is_some() {
            let inputs: Vec<FileNumber> = edit.deleted_files.iter().map(|d| d.1).collect();
            if let Err(e) = db.list_before_edit(&inputs) {
                lock(&db.versions).release_outputs(&outputs);
                return Err(e);
            }
        }
        let mut versions = lock(&db.versions);
        if let Some(p) = &c.l0_part {
            // The part leaves L0 by the layout's change, applied to the layout current now
            // (flushes may have changed it meanwhile).
            match p.column.change().apply(&*versions.current().l0) {
                Ok(l) => edit.set_l0_layout(l),
                Err(e) => {
                    versions.release_outputs(&outputs);
                    return Err(e);
                }
            }
        }
        if c.level > 0 {
            if let Some(last) = c.inputs.last() {
                edit.compact_pointers.push((c.level, last.largest.clone()));
            }
        }
        // Synced after the versions' lock is let go, so that a flush (and the writers
        // behind it) need not wait for this edit's sync (docs/design/core-engine.md,
        // "Manifest syncs outside the versions' lock").
        let applied = versions.log_and_apply_unsynced(edit, DurableFirst::default(), |_| ());
        versions.release_outputs(&outputs);
        let (v, pending) = applied?;
        // A filter's removals and changes are what no read returned before: readers see
        // them only once their record is durable, or a power cut would bring back what a
        // reader saw removed while a later synced write survives (docs/design/
        // compaction-filters.md, "Durability of a filter's result"). Waited for with the
        // versions' lock held, so that no later version (a flush's, built on this one)
        // shows them first; the sync takes no lock of the set's.
        let pending = if filtered {
            pending.wait()?;
            None
        } else {
            Some(pending)
        };
        let mut st = lock(&db.state);
        db.install_super_version(&mut st, v);
        drop(st);
        drop(versions);
        if let Some(pending) = pending {
            made_durable(db, c, pending)?;
        }
        Stats::add(&db.stats.compactions[out_level], 1);
        Stats::add(&db.stats.merges_from[in_level], 1);
        db.warm_values(&written);
        return Ok(());
    }
    let mut versions = lock(&db.versions);
    let (v, pending) = versions.log_and_apply_unsynced(edit, DurableFirst::default(), |_| ())?;
    let mut st = lock(&db.state);
    db.install_super_version(&mut st, v);
    drop(st);
    drop(versions);
    made_durable(db, c, pending)?;
    Stats::add(&db.stats.compactions[out_level], 1);
    Ok(())
}

/// A compaction's edit, installed, becomes durable: a manual one's before it returns
/// (`compact_range` promises it), a background one's on the sync thread, so that the
/// compaction thread merges on meanwhile (docs/design/core-engine.md, "A compaction does
/// not wait for its record's sync"). Nothing it dropped is deleted before then either way.
fn made_durable(db: &DbInner, c: &Compaction, pending: PendingSync) -> Result<()> {
    if c.reason == picker::CompactionReason::Manual {
        return pending.wait();
    }
    db.sync_later(pending)
}

/// `Db::compact_range`: flush, then push every overlapping file down level by level to the
/// deepest populated level.
pub(crate) fn compact_range(db: &DbInner, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<()> {
    super::flush::flush_and_wait(db)?;
    let deepest = {
        let v = db.super_version().version.clone();
        (0..v.num_levels())
            .rev()
            .find(|&l| !v.files(l).is_empty())
            .unwrap_or(0)
            .max(1)
    };
    for level in 0..deepest {
        compact_level(db, level, lo, hi)?;
    }
    // With a filter, or expiring entries in the database, what is already at the deepest
    // level is offered too (RocksDB's kIfHaveCompactionFilter).
    if db.opts.compaction_filter.is_some() || db.super_version().version.expiring {
        rewrite_level(db, deepest, lo, hi, false)?;
    } else if db.super_version().version.ranges.has_live() {
        // So are its tables that may hold versions a range deletion covers: the range's
        // space comes back, and the tombstone can leave.
        rewrite_level(db, deepest, lo, hi, true)?;
    }
    // A level a background compaction emptied while this one waited returns without a job
    // of its own; that job's thread deletes its inputs only after waking us. The caller
    // expects the compacted files gone when this returns, as `wait_for_compactions` does.
    db.delete_obsolete_files();
    Ok(())
}

/// Rewrites, one at a time and in place, every table of `level` overlapping [`lo`, `hi`]
/// when the range's manual compaction began (those that a job has rewritten since are
/// left), so that the compaction filter is offered what is already at the deepest level
/// (with `only_covered`, only those that may hold versions a range deletion covers).
/// Errors poison the database.
fn rewrite_level(
    db: &DbInner,
    level: usize,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
    only_covered: bool,
) -> Result<()> {
    let tables: Vec<FileNumber> = {
        let v = db.super_version().version.clone();
        v.manual_inputs(level, lo, hi)
            .iter()
            .filter(|f| !only_covered || v.may_hold_covered(f))
            .map(|f| f.number)
            .collect()
    };
    for number in tables {
        run_manual(db, |ctx| {
            if !ctx.version.files(level).iter().any(|f| f.number == number) {
                return Manual::Nothing; // rewritten or moved meanwhile
            }
            picker::pick_rewrite(ctx, level, number).map_or(Manual::Wait, Manual::Run)
        })?;
    }
    Ok(())
}

/// Pushes every file of `level` that a manual compaction of [`lo`, `hi`] takes (for L0, as
/// its layout groups them) one level down, waiting while a background compaction holds any
/// of them. Errors poison the database.
pub(crate) fn compact_level(
    db: &DbInner,
    level: usize,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> Result<()> {
    let ran = run_manual(db, |ctx| {
        let v = ctx.version;
        if v.manual_inputs(level, lo, hi).is_empty()
            && (level > 0 || v.l0.manual_part(lo, hi, &Default::default()).is_none())
        {
            return Manual::Nothing;
        }
        picker::pick_manual(ctx, level, lo, hi).map_or(Manual::Wait, Manual::Run)
    })?;
    if ran {
        // The range's files of this level were all pushed down (picked together).
        db.delete_obsolete_files();
    }
    Ok(())
}

/// What a manual compaction's picker found ([`run_manual`]).
enum Manual {
    /// Nothing (left) to do.
    Nothing,
    /// This job.
    Run(Compaction),
    /// Its inputs are busy in a background compaction.
    Wait,
}

/// Picks a manual compaction with `pick` (under the versions' and state locks), waiting
/// for progress while its inputs are busy, and runs it. False if `pick` found nothing to
/// do. Errors poison the database.
fn run_manual(db: &DbInner, pick: impl Fn(&PickContext<'_>) -> Manual) -> Result<bool> {
    let c = loop {
        let versions = lock(&db.versions);
        let mut st = lock(&db.state);
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        if db.shutting_down.load(Ordering::Acquire) {
            return Err(Error::new(ErrorKind::Closed, "database is closing"));
        }
        let v = versions.current();
        let ctx = PickContext {
            version: &v,
            opts: &db.opts,
            busy: &st.busy,
            compact_pointers: &[],
            placement: &db.placement,
            straight_reads: 0,
            idle: false,
            expiry: None,
        };
        match pick(&ctx) {
            Manual::Nothing => return Ok(false),
            Manual::Run(c) => {
                st.start_compaction(&c);
                break c;
            }
            Manual::Wait => {
                drop(versions);
                drop(
                    db.done_cv
                        .wait(st)
                        .unwrap_or_else(std::sync::PoisonError::into_inner),
                );
            }
        }
    };
    let r = db.run_compaction(c);
    if let Err(e) = &r {
        db.poison(e);
    }
    r.map(|()| true)
}

/// What a database's obsolete list (`crate::obsolete`) holds, and the deletions it must go on
/// naming.
#[derive(Debug, Default)]
pub(crate) struct ObsoleteFiles {
    /// What the `OBSOLETE` file lists durably; `None` until this process wrote it (one an
    /// earlier process left may name files a damaged manifest record no longer obsoletes).
    listed: Option<ObsoleteList>,
    /// Tables and WALs deleted since their directory was last synced (their deletion may
    /// not be durable), and those directories.
    unsynced: ObsoleteList,
    unsynced_dirs: Vec<std::path::PathBuf>,
    /// Tables and WALs the running pass named and is deleting, outside this lock: every list
    /// written meanwhile names them too, and the pass moves them to `unsynced` when done.
    deleting: ObsoleteList,
    /// Tables named before the edit that takes them out of the current version, and WALs
    /// below the log number then ([`DbInner::list_before_edit`]): every list names them
    /// while the current version still holds them, or until a pass sees a log number above
    /// them (after that, the pass finds them obsolete by itself).
    pinned: ObsoleteList,
}

/// What an obsolete-file pass read of the versions, under their lock.
struct Seen {
    /// Files some version still in use holds (and outputs being written).
    live: HashSet<FileNumber>,
    /// Tables of the current version (and outputs being written).
    current: HashSet<FileNumber>,
    /// WALs below it are redundant.
    log_number: FileNumber,
    /// Manifests below it are old.
    manifest: FileNumber,
    /// The first file number not handed out.
    next: FileNumber,
    /// The files, by path, the open found to be the database's (`VersionSet::known_files`):
    /// in a directory the options did not give (read because the manifest recorded it),
    /// nothing else is deleted.
    known: std::sync::Arc<HashSet<std::path::PathBuf>>,
}

/// A file an obsolete-file pass deletes.
struct Doomed {
    path: std::path::PathBuf,
    file: FileType,
    /// Whether the obsolete list must name it first (tables and WALs).
    listed: bool,
}

impl ObsoleteFiles {
    /// Writes `list` as the obsolete list and syncs the directories that make it and the
    /// deletions in `unsynced` durable; on success `list` is what is listed and `unsynced`
    /// is empty (named by the list just written, deleted durably).
    fn write(&mut self, db: &DbInner, list: ObsoleteList) -> Result<()> {
        let db_dir = db.placement.db_dir();
        let mut dirs = self.unsynced_dirs.clone();
        if !dirs.iter().any(|d| d == db_dir) {
            dirs.push(db_dir.to_path_buf());
        }
        crate::obsolete::write_unsynced(&*db.fs, db_dir, &list)
            .and_then(|()| dirs.iter().try_for_each(|d| db.fs.sync_dir(d)))?;
        self.listed = Some(list);
        self.unsynced = ObsoleteList::default();
        self.unsynced_dirs.clear();
        Ok(())
    }

    /// What every list written now must name, whatever else is obsolete: deletions not yet
    /// durable, those under way, and the pinned tables.
    fn must_name(&self) -> ObsoleteList {
        let mut list = self.unsynced.clone();
        list.extend(&self.deleting);
        list.extend(&self.pinned);
        list
    }
}

impl DbInner {
    /// Deletes tables no live version needs, WALs older than the oldest needed one, value
    /// files no live version names, and old manifests. Never runs once the database is
    /// poisoned (the durable state is then unknown). One pass at a time; the obsolete
    /// list's state is locked only around the list's write, not across the deletions
    /// (an `unlink` can take milliseconds, and [`Self::list_before_edit`] waits for that
    /// lock on a compaction's way to its edit).
    ///
    /// Before a table or WAL is deleted, the obsolete list names it with every other one
    /// the current version no longer needs that is still on disk, and it stays named until
    /// its directory was synced after the deletion: a crash that undoes some deletions
    /// leaves `repair` a list of every file it must leave out (`crate::obsolete`). The
    /// directories are synced once per list written: that sync makes the new list durable
    /// and the deletions of the passes before it, which the new list still names (the
    /// list after it drops them).
    pub(crate) fn delete_obsolete_files(&self) {
        let _pass = lock(&self.deletion_pass);
        if lock(&self.state).bg_error.is_some() {
            return;
        }
        // Versions held for edits a sync has not covered yet keep what they hold live
        // (`ManifestSync`): make everything appended so far durable first, which lets them
        // go, so that this pass sees what the last jobs dropped.
        let sync = lock(&self.versions).manifest_sync();
        if sync.wait_all().is_err() {
            return;
        }
        let (seen, mark) = {
            let mut versions = lock(&self.versions);
            // NB: `next` is read with the live set: files numbered from it on may be outputs
            // of jobs that started after this point and must not be touched.
            let next = FileNumber(self.next_file.load(Ordering::SeqCst));
            let seen = Seen {
                live: versions.live_files(),
                current: versions.current_tables(),
                log_number: versions.log_number(),
                manifest: versions.manifest_number(),
                next,
                known: versions.known_files(),
            };
            (seen, sync.appended())
        };
        // What the versions say may be ahead of the durable manifest (edits are synced after
        // the versions' lock is let go): nothing they drop is deleted before it is durable.
        if sync.wait_for(mark).is_err() {
            return;
        }
        let doomed = {
            let mut ob = lock(&self.obsolete);
            self.name_obsolete_files(&mut ob, seen)
        };
        let mut removed: Vec<Doomed> = Vec::new();
        for d in doomed {
            match d.file {
                FileType::Table(n) => self.tables.evict(n),
                FileType::Value(n, _) => {
                    self.values.evict(n.0);
                }
                _ => {}
            }
            // A failed delete only wastes space; the next pass retries.
            if self.fs.remove(&d.path).is_ok() && d.listed {
                removed.push(d);
            }
        }
        let mut ob = lock(&self.obsolete);
        let db_dir = self.placement.db_dir();
        for d in removed {
            ob.unsynced.insert(d.file);
            let dir = d.path.parent().unwrap_or(db_dir).to_path_buf();
            if !ob.unsynced_dirs.contains(&dir) {
                ob.unsynced_dirs.push(dir);
            }
        }
        // What failed to delete is still on disk: the next pass finds it again.
        ob.deleting = ObsoleteList::default();
    }

    /// The first half of a pass, under the obsolete list's lock: finds what is obsolete,
    /// writes the list if it does not name all of it, and returns the files to delete,
    /// those the list names marked as being deleted.
    fn name_obsolete_files(&self, ob: &mut ObsoleteFiles, seen: Seen) -> Vec<Doomed> {
        let Seen {
            live,
            current,
            log_number,
            manifest,
            next,
            known,
        } = seen;
        let written = self.placement.write_dirs();
        // Pinned tables the current version no longer holds are obsolete like any other.
        ob.pinned
            .tables
            .retain(|&n| current.contains(&FileNumber(n)));
        // Pinned WALs below the log number this pass saw, it names by itself while on disk.
        ob.pinned.wals.retain(|&n| n >= log_number.0);
        let mut obsolete = ob.must_name();
        let mut doomed: Vec<Doomed> = Vec::new();
        // Whether the list must name a file this pass leaves.
        let mut unseen = false;
        let mut dirs: Vec<&std::path::Path> = Vec::new();
        for dir in self.placement.dirs() {
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        for &dir in &dirs {
            let Ok(names) = self.fs.list(dir) else {
                continue;
            };
            let given = written.contains(&dir);
            for name in names {
                let Some(file) = crate::registry::parse_file_name(&name) else {
                    continue;
                };
                // In a directory only the manifest's record led the open to, only the
                // files the open found to be the database's: one of ours it did not see
                // (a WAL below the log number, a crashed job's table) cannot be told apart
                // from another database's there, and is left. The list still names it if
                // it may be ours: `repair` must not take an obsolete table or WAL of ours
                // back (nor does it want another database's).
                if !given && !known.contains(&dir.join(&name)) {
                    match file {
                        FileType::Table(n) if n < next && !current.contains(&n) => {
                            obsolete.tables.insert(n.0);
                            unseen = true;
                        }
                        FileType::Wal(n) if n < log_number => {
                            obsolete.wals.insert(n.0);
                            unseen = true;
                        }
                        _ => {}
                    }
                    continue;
                }
                let listed = match file {
                    FileType::Table(n) if n < next && !current.contains(&n) => {
                        obsolete.tables.insert(n.0);
                        if live.contains(&n) {
                            continue; // an older version still reads it
                        }
                        true
                    }
                    FileType::Wal(n) if n < log_number => {
                        obsolete.wals.insert(n.0);
                        true
                    }
                    FileType::Value(n, _) if n < next && !live.contains(&n) => false,
                    // Listed with the tables (numbers are unique across kinds): `repair`
                    // must not take one back whose flush never reached the manifest.
                    FileType::Ranges(n) if n < next && !live.contains(&n) => {
                        obsolete.tables.insert(n.0);
                        true
                    }
                    FileType::Manifest(n) if n < manifest => false,
                    _ => continue,
                };
                doomed.push(Doomed {
                    path: dir.join(name),
                    file,
                    listed,
                });
            }
        }
        let lists = unseen || doomed.iter().any(|d| d.listed);
        let db_dir = self.placement.db_dir();
        let first = ob.listed.is_none() && self.fs.exists(&db_dir.join(filename::OBSOLETE));
        let covered = ob.listed.as_ref().is_some_and(|l| l.covers(&obsolete));
        if ((lists && !covered) || first) && ob.write(self, obsolete).is_err() {
            // Nothing it should name is deleted: the next pass tries again.
            doomed.retain(|d| !d.listed);
            return doomed;
        }
        // The WALs the list names no longer need a sync before a later WAL's: dropped
        // (unmapped and truncated, which takes milliseconds for a large log) outside the
        // WAL's lock.
        let listed = ob.listed.as_ref().map(|l| &l.wals);
        let done: Vec<_> = {
            let mut wal = lock(&self.wal);
            let (done, keep) = std::mem::take(&mut wal.unsynced)
                .into_iter()
                .partition(|(n, _)| listed.is_some_and(|l| l.contains(&n.0)));
            wal.unsynced = keep;
            done
        };
        drop(done);
        for d in doomed.iter().filter(|d| d.listed) {
            ob.deleting.insert(d.file);
        }
        doomed
    }

    /// Names `tables` in the obsolete list, durably, before an edit takes them out of the
    /// current version together with data outside tables that shadows them: a column
    /// compaction's L1 inputs, whose outputs may have dropped a tombstone with the values
    /// it hid while the tombstone leaves the matrix's rows by the same edit (the row
    /// directory is rewritten before it). A crash after the directory write would
    /// otherwise leave `repair` the old values in inputs no list names yet, and no
    /// tombstone. The outputs are durable already (the job synced them), so a repair that
    /// leaves the inputs out loses nothing even if the edit never lands. For the same
    /// reason the list names every WAL still on disk below the log number: a flush moved
    /// its records into rows (which the row directory lists, durably, before the edit
    /// that moved the log number), the deletion pass may not have run since, and such a
    /// WAL holds values whose tombstone this edit takes out of the rows: `repair` replayed
    /// one and brought a deleted key back (the crash test found it in about one run of
    /// three under `matrixkv-idle`).
    pub(crate) fn list_before_edit(&self, tables: &[FileNumber]) -> Result<()> {
        let mut more = ObsoleteList::default();
        more.tables.extend(tables.iter().map(|n| n.0));
        // And every WAL still on disk below the log number: their records are in the rows
        // (or in tables since), and one a pass has not deleted yet holds values whose
        // tombstone may leave the rows with this edit (the row directory no longer lists it).
        let log_number = lock(&self.versions).log_number();
        for dir in self.placement.dirs() {
            for name in self.fs.list(dir).unwrap_or_default() {
                if let Some(FileType::Wal(n)) = crate::registry::parse_file_name(&name) {
                    if n < log_number {
                        more.wals.insert(n.0);
                    }
                }
            }
        }
        if more.tables.is_empty() && more.wals.is_empty() {
            return Ok(());
        }
        let mut ob = lock(&self.obsolete);
        let mut list = ob.must_name();
        list.extend(&more);
        match &ob.listed {
            Some(l) => list.extend(l),
            // Whatever an earlier process listed, until this process's first pass replaced
            // it (a damaged list names nothing repair would trust: it reads every file).
            None => {
                let db_dir = self.placement.db_dir();
                if let Ok(Some(old)) = crate::obsolete::read(&*self.fs, db_dir) {
                    list.extend(&old);
                }
            }
        }
        if !ob.listed.as_ref().is_some_and(|l| l.covers(&list)) {
            ob.write(self, list)
                .map_err(|e| e.context("writing the obsolete list before a column edit"))?;
        }
        ob.pinned.extend(&more);
        Ok(())
    }
}
