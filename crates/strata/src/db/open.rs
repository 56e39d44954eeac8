//! Opening a database: lock, read the manifest, replay WALs into L0 tables, start a fresh
//! WAL and manifest, delete leftovers, start the background threads. And closing it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::{lock, DbInner, SnapshotList, State, SuperVersion, WalState};
use crate::batch::WriteBatch;
use crate::error::{Error, ErrorKind, Result};
use crate::filename::{self, FileNumber, FileType};
use crate::fs;
use crate::key::{SeqNo, ValueKind};
use crate::l0::Ingest;
use crate::memtable::{ChunkPool, MemTable};
use crate::options::Options;
use crate::placement::{Directories, PathId, Placement};
use crate::sst::BlockCache;
use crate::stats::Stats;
use crate::table_cache::TableCache;
use crate::version::{VersionEdit, VersionSet};
use crate::wal::{LogEvent, LogReader, WalRecoveryMode};

pub(crate) fn open(path: &Path, opts: Options) -> Result<Arc<DbInner>> {
    opts.validate()?;
    let fs = opts.fs.clone();
    // An existing database is locked before its manifest is read for where its files are:
    // a writer closing meanwhile may still change it. (A new one is locked once its
    // directory exists, after the checks below: a refused open creates nothing.)
    let early_lock = if fs.exists(&path.join(filename::CURRENT)) {
        Some(fs.lock(&path.join(filename::LOCK))?)
    } else {
        None
    };
    let known = known_directories(path, &opts);
    refuse_borrowed_directories(path, &opts, &known)?;
    let Known {
        placement,
        record: recorded,
        ..
    } = known;
    let exists = fs.exists(&placement.current_path());
    if !exists {
        refuse_files_without_current(&*fs, path, &placement)?;
    }
    if !exists && !opts.create_if_missing {
        return Err(Error::invalid(format!(
            "{}: database does not exist (create_if_missing is false)",
            path.display()
        )));
    }
    if exists && opts.error_if_exists {
        return Err(Error::invalid(format!(
            "{}: database exists (error_if_exists is true)",
            path.display()
        )));
    }
    // An open that returns an error leaves every directory as it found it: an existing
    // database's checks (its manifest, the files it names, the configured layout, a dry
    // run of its WAL replay) all run before the first write, and directories new to it
    // are created only after them (docs/design/core-engine.md, "Where the files are, and
    // what an open checks before it writes").
    if !exists {
        for dir in placement.write_dirs() {
            fs::create_dir_durable(&*fs, dir)?;
        }
    }
    let lock_file = match early_lock {
        Some(l) => l,
        None => fs.lock(&path.join(filename::LOCK))?,
    };
    let (mut versions, tables) = version_set_and_tables(&opts, &placement);
    let mut edit = VersionEdit::default();
    let mut last_seq = SeqNo::ZERO;
    // The newest sequence of files kept unnamed for a repair (never given out again).
    let mut kept_seq = SeqNo::ZERO;
    let mut configured = None;
    if exists {
        let r = recover(&mut versions, &opts, &placement, recorded.as_ref())?;
        mark_numbers_on_disk(&fs, &placement, &versions);
        let replayed: Vec<PathBuf> = wals_on_disk(&*fs, &placement, r.log_number)?
            .into_iter()
            .map(|(_, p)| p)
            .collect();
        versions.note_session_start(&replayed);
        configured = Some(crate::l0::configured(&opts, versions.l0_context())?);
        replay_wals(&opts, &placement, &mut versions, &r, Sink::Check)?;
        for dir in placement.write_dirs() {
            fs::create_dir_durable(&*fs, dir)?;
        }
        rewrite_range_files(&opts, &placement, &versions)?;
        if let Some(dropped) = &r.dropped_tail {
            if let Some(log) = &opts.info_log {
                log(&format!(
                    "{}: recovery dropped a damaged last manifest record ({dropped}); files \
                     the manifest does not name are kept for `strata repair` \
                     (property strata.kept-files)",
                    path.display()
                ));
            }
            let (kept, newest) = kept_after_drop(&*fs, &placement, &versions.current(), dropped);
            edit.kept = Some(kept);
            kept_seq = newest;
        }
        let replayed = replay_wals(&opts, &placement, &mut versions, &r, Sink::Flush(&mut edit))?;
        last_seq = replayed.last_seq.max(kept_seq);
        if replayed.expiring && !versions.current().expiring {
            // Expiring entries the manifest does not name (a dropped last record was the
            // one that named them): named now, so that jobs go on removing them.
            edit.features
                .push(crate::version::EXPIRING_FEATURE.to_string());
        }
        if replayed.range_deletes && !versions.current().range_deletes {
            edit.features
                .push(crate::version::RANGE_DELETES_FEATURE.to_string());
        }
        // Files a write-time store left open: cut after the last replayed write and named
        // with their extent, in the edit that names the replayed writes' tables. Not
        // after `last_seq`: a flush records the newest visible sequence, which may be a
        // write of a later memtable whose WAL record the crash lost while its record in
        // an open file survived.
        let v = versions.current();
        let env = crate::vstore::StoreEnv::recovering(crate::registry::STORES, &opts, &placement);
        let sealed = crate::vstore::recover(&env, &v, replayed.last_replayed)?;
        crate::vstore::reseal(&mut edit, &v, sealed);
    }
    // A fresh WAL for this session.
    let wal_number = versions.new_file_number();
    let wal_file = fs.create_log(&placement.wal_path(wal_number))?;
    fs.sync_dir(placement.wal_dir())?;
    let wal_writer = super::write::start_wal(wal_file, last_seq)?;
    edit.log_number = Some(wal_number);
    edit.last_sequence = Some(last_seq);
    // A new database takes the configured layout. An existing one keeps the layout its
    // manifest records unless `Options::migrate_l0_layout` asks for the configured one:
    // then an empty L0 takes it at once, and one holding tables of another layout is
    // migrated below, before anything else runs. (Opening with other options never changes
    // the database's structure silently: the `strata.l0-layout` property says which
    // layout it kept.)
    let configured = match configured {
        Some(c) => c,
        None => crate::l0::configured(&opts, versions.l0_context())?,
    };
    let current = versions.current();
    let switch = !exists || opts.migrate_l0_layout;
    if switch
        && current.l0.kind() != configured.kind()
        && current.l0_is_empty()
        && edit.new_files.is_empty()
    {
        edit.set_l0_layout(configured.clone());
    }
    let version = versions.log_and_apply(edit)?;
    // What locates L0's data for a repair, as the manifest has it, before anything deletes
    // a file: a crash may have left it one edit ahead (a column whose tables the manifest
    // does not name, deleted below as unrecorded), or it may be missing.
    version
        .l0
        .write_locator()
        .map_err(|e| e.context("recording where L0 is"))?;
    tables.set_live_bytes(version.total_bytes());
    let migrate = switch && version.l0.kind() != configured.kind();
    // One memtable's worth of chunks: with the memtable being filled and the one being
    // flushed, arenas hold at most the write buffers' budget.
    let arena_pool = Arc::new(ChunkPool::new(opts.write_buffer_size));
    let mem = Arc::new(super::write::writable_memtable(
        &opts,
        wal_number.0,
        last_seq.0,
        &arena_pool,
    ));
    let wal = WalState {
        writer: Some(wal_writer),
        number: wal_number,
        unsynced: Vec::new(),
        last_logged: last_seq,
        synced: versions.synced_wals(),
        dir_unsynced: false,
    };
    let parts = Parts {
        fs,
        placement,
        tables,
        versions,
        mem,
        imms: Vec::new(),
        arena_pool,
        version,
        wal,
        last_seq,
        lock: Some(lock_file),
        read_only: false,
        view_of: None,
    };
    let db = build(parts, opts);
    delete_leftovers(&db);
    if migrate {
        migrate_l0(&db)?;
    }
    lock(&db.versions)
        .current()
        .l0
        .prepare()
        .map_err(|e| e.context("opening the L0 layout"))?;
    db.delete_obsolete_files();
    // (A directory only the replayed WALs kept in use is left now.)
    lock(&db.versions)
        .record_directories_again()
        .map_err(|e| e.context("recording the directories in use"))?;
    // (Written after it: the copy of the record in OPTIONS is the manifest's.)
    fs::write_file_atomic(
        &*db.fs,
        &path.join(filename::OPTIONS),
        options_file_text(&db.opts, lock(&db.versions).recorded()).as_bytes(),
    )
    .map_err(|e| e.context("recording the options in OPTIONS"))?;
    super::bg::start(&db);
    Ok(db)
}

/// The version set of the database at `placement` under `opts`, not yet recovered.
fn version_set(opts: &Options, placement: &Placement) -> VersionSet {
    VersionSet::new(
        opts.fs.clone(),
        placement.clone(),
        opts.num_levels,
        opts.max_manifest_file_size,
        crate::l0::L0Context::new(crate::registry::LAYOUTS, opts, placement),
        crate::registry::formats(),
    )
}

/// The version set (nothing read yet) and the table cache `opts` ask for.
fn version_set_and_tables(opts: &Options, placement: &Placement) -> (VersionSet, Arc<TableCache>) {
    let versions = version_set(opts, placement);
    let block_cache =
        (opts.block_cache_size > 0).then(|| Arc::new(BlockCache::new(opts.block_cache_size)));
    let tables = Arc::new(
        TableCache::new(
            opts.fs.clone(),
            placement.clone(),
            opts.max_open_files,
            block_cache,
        )
        .reading(
            crate::table_cache::TableReads::of(opts),
            opts.pin_table_metadata,
        ),
    );
    (versions, tables)
}

/// Where a database keeps its files, as far as an open can tell before it reads the
/// manifest: the placement to open it with and the record it follows.
pub(crate) struct Known {
    /// The options' placement, reading each recorded directory the options leave unset.
    pub placement: Placement,
    /// The record (`None`: a new database, or one no record of which is left).
    pub record: Option<Directories>,
    /// A copy (a checkpoint, a restored backup) not yet opened for writes
    /// ([`self_contained_copy`]): its record is its original's, wherever the copy is now.
    pub copy: bool,
}

/// The placement of the database at `path` under `opts`, reading the files already
/// written from the directories its manifest records for the slots `opts` leave unset
/// (docs/design/core-engine.md, "Where the files are"): an open that did not look where
/// the last session put its files found an empty database and, once it recorded a WAL of
/// its own, left the old WALs behind for good. New files still go where `opts` say. A
/// directory the options do name wins; the open's checks (`recover`) then refuse it
/// unless every file the manifest expects is found. A directory outside the database
/// directory is read only if the record was written by this database where it is now,
/// not by the one a copy was made from (`Directories::written_here`). Without a manifest
/// record (a manifest an older build wrote, or none left: repair), the record the last
/// writing open copied into the `OPTIONS` file is used the same way.
pub(crate) fn known_directories(path: &Path, opts: &Options) -> Known {
    let configured = Placement::of(path, opts);
    let record =
        crate::version::recorded_directories(&*opts.fs, &configured, crate::registry::registered())
            .or_else(|| options_file_directories(&*opts.fs, path));
    let copy = self_contained_copy(&*opts.fs, path, opts.pmem_dir.as_deref());
    let Some(rec) = record else {
        return Known {
            placement: configured,
            record: None,
            copy,
        };
    };
    let mut read: Vec<(PathId, PathBuf)> = Vec::new();
    let here = rec.written_here(path) && !copy;
    for (id, dir) in rec.usable_by(path, here) {
        let unset = id != PathId::DB && crate::placement::option_dir(opts, id).is_none();
        let here = crate::placement::absolute(configured.dir(id));
        if unset && dir != here {
            read.push((id, dir));
        }
    }
    if let Some(log) = &opts.info_log {
        for (id, dir) in &read {
            let new_ones = match configured.dir(*id) {
                d if d == path => "the database directory".to_string(),
                d => d.display().to_string(),
            };
            log(&format!(
                "{}: its {} are read from {} (recorded in the manifest; Options::{} is not \
                 set: new ones go to {new_ones})",
                path.display(),
                Directories::what(*id),
                dir.display(),
                Directories::option_name(*id),
            ));
        }
    }
    Known {
        placement: configured.reading_recorded(&read),
        record: Some(rec),
        copy,
    }
}

/// Refuses options that give a copy of a database the original's own directories: a
/// record written by the database at another path, which still holds a database, names an
/// outside directory that `opts` give (a copy made with `cp -a` opened with the options
/// its `OPTIONS` file recorded, as the `strata` tool does). Opening or repairing the copy
/// would replay the original's WALs, take its tables and delete what the copy does not
/// name. A moved database (nothing left at the recorded path) keeps its directories.
///
/// # Errors
/// `InvalidArgument` naming the directory and the original.
pub(crate) fn refuse_borrowed_directories(
    path: &Path,
    opts: &Options,
    known: &Known,
) -> Result<()> {
    let Some(rec) = &known.record else {
        return Ok(());
    };
    if known.copy {
        // A copy not yet opened (moved onto its original's path, perhaps): none of the
        // record's directories outside it is its own. One the options give may be used
        // only if the original is not at another path still using it and it holds no
        // database's files (the original's later WALs, replayed onto the copy, would bring
        // back writes with a gap before them).
        let original_elsewhere = !rec.written_here(path)
            && rec
                .database()
                .is_some_and(|d| opts.fs.exists(&d.join(filename::CURRENT)));
        let own = layouts_own_names(opts, &known.placement);
        for (id, dir) in rec
            .0
            .iter()
            .filter(|(id, d)| *id != PathId::DB && d.is_absolute())
        {
            let given = crate::placement::option_dir(opts, *id).map(crate::placement::absolute);
            if given.as_deref() != Some(dir.as_path()) {
                continue;
            }
            let why = if original_elsewhere {
                "the database this one was copied from keeps its files there"
            } else if holds_database_files(&*opts.fs, dir, &own) {
                "it holds files of the database this one was copied from"
            } else {
                continue;
            };
            return Err(Error::invalid(format!(
                "{}: this database is a copy (a checkpoint or a restored backup) not yet \
                 opened, given {} = {}, where {why} ({}): give the copy a directory of its \
                 own{}. Nothing was changed",
                path.display(),
                Directories::option_name(*id),
                dir.display(),
                Directories::what(*id),
                if original_elsewhere {
                    ""
                } else {
                    ", or empty that one"
                },
            )));
        }
        return Ok(());
    }
    if rec.written_here(path) {
        return Ok(());
    }
    let Some(original) = rec.database() else {
        return Ok(());
    };
    if !opts.fs.exists(&original.join(filename::CURRENT)) {
        return Ok(());
    }
    for (id, dir) in rec.0.iter().filter(|(_, d)| d.is_absolute()) {
        let given = crate::placement::option_dir(opts, *id).map(crate::placement::absolute);
        if given.as_deref() == Some(dir.as_path()) {
            return Err(Error::invalid(format!(
                "{}: {}. Nothing was changed",
                path.display(),
                rec.left_behind(*id, dir)
            )));
        }
    }
    Ok(())
}

/// The directories record the last writing open copied into the `OPTIONS` file, for when
/// no manifest holds one (`# directory ID (what) = PATH` lines, as [`options_file_text`]
/// writes them).
fn options_file_directories(fs: &dyn fs::Fs, path: &Path) -> Option<Directories> {
    let text = fs::read_all(fs, &path.join(filename::OPTIONS)).ok()?;
    let text = String::from_utf8(text).ok()?;
    let mut v = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# directory ") else {
            continue;
        };
        let (id, p) = rest.split_once(" = ")?;
        let id: u8 = id.split_whitespace().next()?.parse().ok()?;
        v.push((PathId(id), PathBuf::from(p)));
    }
    (!v.is_empty()).then_some(Directories(v))
}

/// The names of the files the L0 layouts keep of their own (the matrix's region and row
/// directory), as `opts` would place them.
pub(crate) fn layouts_own_names(opts: &Options, placement: &Placement) -> Vec<String> {
    crate::l0::every_layout(crate::registry::LAYOUTS, opts, placement)
        .iter()
        .flat_map(|l| l.own_files())
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect()
}

/// Whether directory `d` holds files of a database: tables, WALs, value files, or a file
/// named as one of `own` (the L0 layouts' own files: the matrix's region and row
/// directory).
pub(crate) fn holds_database_files(fs: &dyn fs::Fs, d: &Path, own: &[String]) -> bool {
    fs.list(d).unwrap_or_default().iter().any(|n| {
        matches!(
            crate::registry::parse_file_name(n),
            Some(FileType::Table(_) | FileType::Wal(_) | FileType::Value(..))
        ) || own.contains(n)
    })
}

/// How the line a copy's `OPTIONS` file (a checkpoint's, a backup's) ends with begins:
/// every file of the copy is in its directory, whatever directories outside it the record
/// names (the original's). It names the copy's manifest and the files its L0 layout keeps
/// of its own ([`copy_marker`]), and holds only while CURRENT names that manifest (a
/// writable open or a repair starts a new one) and those files are in the directory.
pub(crate) const SELF_CONTAINED_COPY: &str =
    "# a copy: every file it holds is in its directory (the directories above are its original's):";

/// The copy's line ([`SELF_CONTAINED_COPY`]) for its manifest `manifest` and its L0
/// layout's own files `layouts`.
pub(crate) fn copy_marker(manifest: &str, layouts: &[String]) -> String {
    let mut line = format!("{SELF_CONTAINED_COPY} {manifest}");
    for n in layouts {
        line.push(' ');
        line.push_str(n);
    }
    line.push('\n');
    line
}

/// Whether the database at `path` is a copy not yet opened for writes nor repaired, with
/// its L0 layout's files where the copy put them ([`SELF_CONTAINED_COPY`]). (A CURRENT
/// that is gone leaves the line standing: a repair, which rewrites OPTIONS, is then what
/// comes; a writable open rewrites OPTIONS too, as it ends.)
///
/// The layout's files may also be in `pmem_dir` (the options'): moved there before the
/// copy's first open, as checkpoints.md allows, they are still the copy's own.
pub(crate) fn self_contained_copy(fs: &dyn fs::Fs, path: &Path, pmem_dir: Option<&Path>) -> bool {
    let Some(text) = fs::read_all(fs, &path.join(filename::OPTIONS))
        .ok()
        .and_then(|t| String::from_utf8(t).ok())
    else {
        return false;
    };
    let Some(names) = text
        .lines()
        .find_map(|l| l.strip_prefix(SELF_CONTAINED_COPY))
    else {
        return false;
    };
    let mut names = names.split_whitespace();
    let Some(manifest) = names.next() else {
        return false;
    };
    let current = fs::read_all(fs, &path.join(filename::CURRENT))
        .ok()
        .and_then(|t| String::from_utf8(t).ok());
    let named = match current {
        Some(c) => c.trim_end() == manifest,
        // (Gone: and no newer manifest than the copy's, which an open or a repair since
        // would have written.)
        None => {
            let number = |n: &str| match filename::parse(n) {
                Some(filename::FileType::Manifest(m)) => Some(m.0),
                _ => None,
            };
            let ours = number(manifest);
            !fs.exists(&path.join(filename::CURRENT))
                && ours.is_some()
                && fs
                    .list(path)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|n| number(n))
                    .all(|m| Some(m) <= ours)
        }
    };
    named
        && names
            .all(|n| fs.exists(&path.join(n)) || pmem_dir.is_some_and(|d| fs.exists(&d.join(n))))
}

/// The `OPTIONS` file's text: the options of this open, then the directories record the
/// manifest starts with, as comment lines (`repair` reads them when no manifest is left).
pub(crate) fn options_file_text(opts: &Options, recorded: &Directories) -> String {
    let mut text = opts.to_text();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&directories_text(recorded));
    text
}

/// The heading of the directories record's lines in `OPTIONS`.
const DIRECTORIES_HEADING: &str =
    "# where the database keeps its files (the manifest's record; repair reads it here \
     when no manifest is left):";

/// An `OPTIONS` text `old` with its directories record replaced by `recorded` (and a
/// copy's line dropped): the options lines kept, as the last writing open wrote them (a
/// repair, whose options are its own, rewrites only the record).
pub(crate) fn with_directories(old: &str, recorded: &Directories) -> String {
    let mut text: String = old
        .lines()
        .take_while(|l| *l != DIRECTORIES_HEADING)
        .filter(|l| !l.starts_with(SELF_CONTAINED_COPY))
        .flat_map(|l| [l, "\n"])
        .collect();
    text.push_str(&directories_text(recorded));
    text
}

/// The directories record as `OPTIONS` holds it: its heading, then a line per slot.
fn directories_text(recorded: &Directories) -> String {
    let mut text = String::new();
    text.push_str(DIRECTORIES_HEADING);
    text.push('\n');
    for (id, p) in &recorded.0 {
        let what = if *id == PathId::DB {
            "the database"
        } else {
            Directories::what(*id)
        };
        text.push_str(&format!(
            "# directory {} ({what}) = {}\n",
            id.0,
            p.display()
        ));
    }
    text
}

/// Where the options send a slot the manifest records elsewhere: one line each, naming the
/// recorded directory and the option that gives it (empty when they agree).
fn recorded_elsewhere(placement: &Placement, recorded: Option<&Directories>) -> String {
    let Some(rec) = recorded else {
        return String::new();
    };
    let db = placement.db_dir();
    let here = rec.written_here(db);
    let mut lines = Vec::new();
    for id in [PathId::WAL, PathId::LEVELS, PathId::VALUES, PathId::PMEM] {
        let want = rec
            .get(id, db)
            .unwrap_or_else(|| crate::placement::absolute(db));
        let have = crate::placement::absolute(placement.dir(id));
        let have_wal = crate::placement::absolute(placement.wal_dir());
        if want == have || id == PathId::WAL && want == have_wal {
            continue;
        }
        let outside = rec.0.iter().any(|(i, p)| *i == id && p.is_absolute());
        lines.push(if outside && !here {
            rec.left_behind(id, &want)
        } else {
            format!(
                "the database keeps its {} in {} (open with {} = {})",
                Directories::what(id),
                want.display(),
                Directories::option_name(id),
                want.display(),
            )
        });
    }
    if lines.is_empty() {
        String::new()
    } else {
        format!("; {}", lines.join("; "))
    }
}

/// Writes again, from the manifest's copy, each range-tombstone file the current version
/// names that is missing or cut short: reads never use these files, but a repair, a
/// checkpoint and a backup do.
///
/// # Errors
/// I/O errors.
fn rewrite_range_files(opts: &Options, placement: &Placement, versions: &VersionSet) -> Result<()> {
    let unsound = versions.unsound_range_files()?;
    if unsound.is_empty() {
        return Ok(());
    }
    let fs = &*opts.fs;
    for (path, f) in &unsound {
        let tmp = fs::temp_path(path);
        crate::sst::range_file::write(fs, &tmp, &f.tombstones, true)?;
        fs.rename(&tmp, path)?;
        if let Some(log) = &opts.info_log {
            log(&format!(
                "{}: missing or not of its recorded size; written again from the \
                 manifest's copy of its {} range tombstone(s)",
                path.display(),
                f.tombstones.len()
            ));
        }
    }
    fs.sync_dir(placement.db_dir())
}

/// Loads the version CURRENT names and checks, before anything is written, that every
/// file it names is there and sound: its tables (present, of the recorded size), value
/// files, what its L0 layout keeps outside tables, and the WAL it expects to replay.
fn recover(
    versions: &mut VersionSet,
    opts: &Options,
    placement: &Placement,
    recorded: Option<&Directories>,
) -> Result<crate::version::Recovered> {
    let mut r = versions.recover()?;
    let elsewhere = recorded_elsewhere(placement, recorded);
    let unsound = versions.unsound_files()?;
    let resized: Vec<String> = unsound
        .iter()
        .filter_map(|(p, s)| {
            s.map(|(disk, recorded)| {
                format!(
                    "{} ({disk} bytes, the manifest says {recorded})",
                    p.display()
                )
            })
        })
        .collect();
    if !resized.is_empty() {
        return Err(Error::corrupt(format!(
            "tables named by the manifest are not the size it records (cut short or \
             overwritten): {}. Nothing was changed; `strata repair` rebuilds the database \
             from what the files still hold",
            resized.join(", ")
        )));
    }
    let missing: Vec<&PathBuf> = unsound.iter().map(|(p, _)| p).collect();
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|p| p.display().to_string()).collect();
        let blobs = missing.iter().any(|p| {
            p.file_name()
                .and_then(|f| f.to_str())
                .and_then(crate::registry::parse_file_name)
                .is_some_and(|t| matches!(t, FileType::Value(..)))
        });
        let hint = if !elsewhere.is_empty() {
            elsewhere.clone()
        } else if recorded.is_some() {
            String::new()
        } else if blobs && opts.value_dir.is_none() {
            " (value files written with a separate value_dir are looked for there: \
             was Options::value_dir set when they were written?)"
                .to_string()
        } else if !blobs && opts.level_dir.is_none() {
            " (tables of levels >= 1 written with a separate level_dir are looked for \
             there: was Options::level_dir set when they were written?)"
                .to_string()
        } else {
            String::new()
        };
        return Err(Error::corrupt(format!(
            "files named by the manifest are missing: {}{hint}. Nothing was changed",
            names.join(", ")
        )));
    }
    versions.current().l0.check_files().map_err(|e| {
        Error::new(
            e.kind(),
            format!("{}{elsewhere}. Nothing was changed", e.message()),
        )
    })?;
    // The WAL the manifest expects: every manifest this build writes names (as its log
    // number) a WAL that exists, created before the manifest named it and deleted only
    // after a later manifest record moved past it. Missing, its writes are elsewhere or
    // lost: replaying nothing and recording a new WAL would drop them for good. (A
    // manifest an older build wrote carries no directories record; repairs of older
    // builds named a WAL they never created, so those are not held to it; nor is log
    // number 0, a creation's snapshot before its first WAL was recorded; nor a manifest
    // whose damaged last record recovery dropped, which may have moved the log number on:
    // that open keeps the files for repair instead. A record copied into the OPTIONS file
    // does not count: an older build's repair may have written the manifest.)
    let in_manifest = !versions.recorded().0.is_empty();
    if in_manifest && r.log_number.0 != 0 && r.dropped_tail.is_none() {
        let wals = wals_on_disk(&*opts.fs, placement, r.log_number)?;
        if !wals.iter().any(|(n, _)| *n == r.log_number) {
            let looked: Vec<String> = placement
                .dirs()
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            return Err(Error::corrupt(format!(
                "the WAL the manifest expects to replay, {}, is missing: it is in none of \
                 the directories this open looks in ({}){elsewhere}. Nothing was changed \
                 (if it is gone for good, `strata repair` rebuilds the database from the \
                 files that are left)",
                filename::wal_name(r.log_number),
                looked.join(", "),
            )));
        }
        r.expected_wal = Some(r.log_number);
    }
    Ok(r)
}

/// What `build` assembles a database from.
struct Parts {
    fs: Arc<dyn fs::Fs>,
    placement: Placement,
    tables: Arc<TableCache>,
    versions: VersionSet,
    /// The memtable writes go to (a read-only open: the newest replayed one).
    mem: Arc<MemTable>,
    /// Older memtables, oldest first (only a read-only open has any at open).
    imms: Vec<Arc<MemTable>>,
    arena_pool: Arc<ChunkPool>,
    version: Arc<crate::version::Version>,
    wal: WalState,
    last_seq: SeqNo,
    lock: Option<Box<dyn fs::FileLock>>,
    read_only: bool,
    /// A read-only view's manifest state (`DbInner::view_of`).
    view_of: Option<ManifestState>,
}

fn build(p: Parts, opts: Options) -> Arc<DbInner> {
    let next_file = p.versions.file_number_counter();
    let now = crate::ttl::Now::new(opts.clock.clone(), p.versions.clock_high());
    let (recorded, clock) = (now.recorded(), opts.clock.now_millis());
    if recorded > clock.saturating_add(60_000) {
        if let Some(log) = &opts.info_log {
            log(&format!(
                "expiring entries are judged by the time the manifest recorded, {} s ahead \
                 of the clock: a clock that ran ahead once; entries written now expire that \
                 much later by the clock (docs/design/ttl.md)",
                (recorded - clock) / 1000
            ));
        }
    }
    let expiring = AtomicBool::new(p.version.expiring);
    let range_deletes = AtomicBool::new(p.version.range_deletes);
    // Every store's reader, and the GC of each store whose files the version holds (or
    // that is configured), whatever `Options::value_store` names now; a read-only open
    // reads and never writes or collects.
    let values = if p.read_only {
        crate::vstore::Stores::reading(
            crate::registry::STORES,
            p.fs.clone(),
            p.placement.clone(),
            &opts,
        )
    } else {
        crate::vstore::Stores::open(
            crate::registry::STORES,
            p.fs.clone(),
            p.placement.clone(),
            &opts,
            &p.version,
        )
    };
    let watch_writes = !values.gcs().is_empty();
    let read_ahead_gate = super::iter::ReadAheadGate::new(&opts, &p.version);
    let sv = Arc::new(SuperVersion {
        mem: p.mem.clone(),
        imms: p.imms.iter().rev().cloned().collect(),
        pending_compaction_bytes: crate::compaction::picker::pending_compaction_bytes(
            &p.version, &opts,
        ),
        version: p.version,
    });
    Arc::new(DbInner {
        values: Arc::new(values),
        read_ahead_gate,
        watch_writes,
        gc_watch: Mutex::new(Default::default()),
        gc_watch_from: p.versions.gc_watch_from(),
        fs: p.fs,
        placement: p.placement,
        tables: p.tables,
        versions: Mutex::new(p.versions),
        state: Mutex::new(State {
            mem: p.mem,
            imms: p.imms.into_iter().collect(),
            super_version: sv,
            busy: HashSet::new(),
            busy_levels: vec![0; opts.num_levels],
            bg_error: None,
            flush_running: false,
            compactions_running: 0,
            progress: 0,
            deletion_due: false,
        }),
        bg_cv: Condvar::new(),
        done_cv: Condvar::new(),
        wal: Mutex::new(p.wal),
        writers: Mutex::default(),
        arena_pool: p.arena_pool,
        last_sequence: AtomicU64::new(p.last_seq.0),
        next_file,
        now,
        expiring,
        range_deletes,
        snapshots: Arc::new(SnapshotList::default()),
        stats: Stats::default(),
        pacer: Mutex::new(crate::db::Pacer::default()),
        straight_reads: AtomicU64::new(0),
        read_seen: AtomicBool::new(false),
        last_write_nanos: AtomicU64::new(0),
        last_read_nanos: AtomicU64::new(0),
        opened: std::time::Instant::now(),
        opened_coarse: super::coarse_nanos(),
        shutting_down: AtomicBool::new(false),
        closed: AtomicBool::new(false),
        threads: Mutex::new(Vec::new()),
        sync_wanted: Mutex::new(false),
        sync_cv: Condvar::new(),
        obsolete: Mutex::default(),
        deletion_pass: Mutex::default(),
        _lock: Mutex::new(p.lock),
        read_only: p.read_only,
        view_of: p.view_of,
        opts,
    })
}

/// [`crate::Db::open_read_only`]: the database as its files hold it now, written to by
/// nothing: no lock taken, no directory, WAL, manifest or OPTIONS written, no flush, no
/// compaction, no layout change, no file deleted. The WALs are replayed into memtables kept
/// in memory. Another process may hold the database meanwhile: this is a view as of the
/// open (see the method's documentation for what that means for files it deletes later).
pub(crate) fn open_read_only(path: &Path, opts: Options) -> Result<Arc<DbInner>> {
    opts.validate()?;
    // A writer may meanwhile finish a flush or compaction and delete the files (or the
    // WAL) the manifest read named: an open that fails while the manifest changed under it
    // reads the newer one (up to ten times) rather than call the writer's work damage.
    let mut tries = 0;
    let mut first: Option<ManifestState> = None;
    loop {
        let before = manifest_state(&*opts.fs, path);
        first.get_or_insert_with(|| before.clone());
        match open_read_only_once(path, opts.clone(), &before) {
            Ok(db) => return Ok(db),
            Err(e)
                if tries < 10
                    && (e.kind() == ErrorKind::Stale
                        || manifest_state(&*opts.fs, path) != before) =>
            {
                tries += 1;
                if let Some(log) = &opts.info_log {
                    log(&format!(
                        "{}: the database moved on during a read-only open ({e}); reading \
                         it again",
                        path.display()
                    ));
                }
                // (A writer's flush takes tens of milliseconds: the next try after it.)
                std::thread::sleep(std::time::Duration::from_millis(5 << tries.min(4)));
            }
            // Tries spent while a writer kept changing the database: what failed is its
            // work, not damage.
            Err(e)
                if tries >= 10
                    && e.kind() != ErrorKind::Stale
                    && first.as_ref() != Some(&manifest_state(&*opts.fs, path)) =>
            {
                return Err(Error::new(
                    ErrorKind::Stale,
                    format!(
                        "{}: the database kept changing under a read-only open ({tries} \
                         tries; the last: {e}): try again, or open it for writing",
                        path.display()
                    ),
                ))
            }
            Err(e) => return Err(e),
        }
    }
}

impl DbInner {
    /// `e`, met by a read, as the user should see it: in a read-only view of a database
    /// that has moved on since the view opened, a file of the view's version gone (deleted
    /// by the writer after its jobs) or a value pointer into a file the view does not
    /// know (a writer's GC moved the value, in a write the view did not read) is
    /// `Stale`, never `Corruption`; the same error on a database that did not change, and
    /// any other error, is what it says.
    pub(crate) fn view_error(&self, e: Error) -> Error {
        let Some(opened) = &self.view_of else {
            return e;
        };
        // (Only what the writer's work leaves a view: damage is reported as damage.)
        let writers_doing = crate::vstore::is_pointer_into_unknown_file(&e)
            || (e.kind() == ErrorKind::Io && e.io_kind() == Some(std::io::ErrorKind::NotFound));
        if !writers_doing || manifest_state(&*self.fs, self.placement.db_dir()) == *opened {
            return e;
        }
        Error::new(
            ErrorKind::Stale,
            format!(
                "the database changed since this read-only view opened, and the view reached \
                 what the writer has since moved or deleted ({}): open a new view (if a new \
                 view fails the same way, `strata check` the database)",
                e.message()
            ),
        )
    }
}

/// What CURRENT names and how long that manifest is (`None` where unreadable): a writer
/// changes it with every edit.
pub(crate) type ManifestState = Option<(Vec<u8>, u64)>;

/// The [`ManifestState`] of the database at `path` now.
fn manifest_state(fs: &dyn fs::Fs, path: &Path) -> ManifestState {
    let current = fs::read_all(fs, &path.join(filename::CURRENT)).ok()?;
    let name = std::str::from_utf8(&current).ok()?.trim().to_string();
    let size = fs.file_size(&path.join(name)).ok()?;
    Some((current, size))
}

/// One attempt of [`open_read_only`]; `before`: the manifest's state when it began.
fn open_read_only_once(path: &Path, opts: Options, before: &ManifestState) -> Result<Arc<DbInner>> {
    let known = known_directories(path, &opts);
    refuse_borrowed_directories(path, &opts, &known)?;
    let Known {
        placement,
        record: recorded,
        ..
    } = known;
    let fs = opts.fs.clone();
    if !fs.exists(&placement.current_path()) {
        refuse_files_without_current(&*fs, path, &placement)?;
        return Err(Error::invalid(format!(
            "{}: database does not exist (a read-only open creates nothing)",
            path.display()
        )));
    }
    let (mut versions, tables) = version_set_and_tables(&opts, &placement);
    // What a writer may reuse under the view (persistent-memory pages its manifest still
    // names) is checked against what it was before the manifest is read.
    versions.set_view(crate::pmem::ViewStart::take(
        &fs,
        &crate::l0::persistent_dir(crate::registry::LAYOUTS, &*fs, &placement),
    ));
    let r = recover(&mut versions, &opts, &placement, recorded.as_ref())?;
    // What L0 keeps outside tables may have moved while the manifest was read (a page of
    // a row it names handed out meanwhile: every read of it would fail): read again.
    versions.current().l0.check_view()?;
    let mut kept = Vec::new();
    let replayed = replay_wals(&opts, &placement, &mut versions, &r, Sink::Keep(&mut kept))?;
    // A replay that stopped early while the writer moved on read a WAL set the writer was
    // changing (a WAL after the gap deleted first, pointers into files named after the
    // manifest read): the view would miss writes handed to the OS before it opened, and read
    // older values of their keys. Read again (`open_read_only` retries); stopped on a
    // database that did not change, it is the recovery mode's answer to damage.
    if replayed.stopped && manifest_state(&*fs, path) != *before {
        return Err(Error::corrupt(format!(
            "{}: the database changed during the read-only open",
            path.display()
        )));
    }
    // The WALs were read after the manifest: their last records may point into value
    // files a writer named since (a GC's new files, which it names before it writes a
    // pointer into them). The value files a newer read of the manifest names are added to
    // the view's version, and nothing else of it taken: a value file's bytes never change
    // under its number, while the newer tables and log number belong with WALs this view
    // did not replay (taking them with the older WALs' memtables brought back a key whose
    // delete and value a compaction dropped since). A pointer the view still cannot follow
    // reads as `Stale` (`DbInner::view_error`).
    let mut versions = versions;
    {
        let mut again = version_set(&opts, &placement);
        again.set_view(None);
        if recover(&mut again, &opts, &placement, recorded.as_ref()).is_ok() {
            let known = versions.current();
            let added: Vec<crate::vstore::ValueFile> = again
                .current()
                .values
                .values()
                .filter(|f| !known.values.contains_key(&f.number))
                .cloned()
                .collect();
            versions.adopt_value_files(added)?;
        }
    }
    let (last_seq, view_of) = (replayed.last_seq, before.clone());
    let version = versions.current();
    tables.set_live_bytes(version.total_bytes());
    let mem = kept.pop().unwrap_or_else(|| Arc::new(MemTable::new(0)));
    let parts = Parts {
        fs,
        placement,
        tables,
        versions,
        mem,
        imms: kept,
        arena_pool: Arc::new(ChunkPool::new(0)),
        version,
        wal: WalState {
            writer: None,
            number: r.log_number,
            unsynced: Vec::new(),
            last_logged: last_seq,
            synced: Default::default(),
            dir_unsynced: false,
        },
        last_seq,
        lock: None,
        read_only: true,
        view_of: Some(view_of),
    };
    Ok(build(parts, opts))
}

/// A database is created only where there is none: directories that hold tables, WALs or
/// value files but no CURRENT are a database that lost its CURRENT (or MANIFEST), and
/// creating one there would delete them all as files no manifest names (issue 29). Refused
/// whatever `create_if_missing` says; `repair` rebuilds such a database from its files.
/// Manifests and a WAL holding only its link record are the trace of a creation cut off
/// before CURRENT was written (`wal_holds_writes`): such a directory is created over.
fn refuse_files_without_current(fs: &dyn fs::Fs, path: &Path, placement: &Placement) -> Result<()> {
    let mut found: Vec<PathBuf> = Vec::new();
    let (mut tables, mut wals, mut values) = (0, 0, 0);
    for dir in placement.dirs() {
        // An absent directory holds nothing.
        for name in fs.list(dir).unwrap_or_default() {
            let counter = match crate::registry::parse_file_name(&name) {
                Some(FileType::Table(_) | FileType::Ranges(_)) => &mut tables,
                Some(FileType::Wal(_)) if wal_holds_writes(fs, &dir.join(&name)) => &mut wals,
                Some(FileType::Value(..)) => &mut values,
                _ => continue,
            };
            *counter += 1;
            found.push(dir.join(name));
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    found.sort();
    Err(Error::corrupt(format!(
        "{}: no CURRENT file, but {tables} table(s), {wals} WAL(s) and {values} value file(s) \
         are there (first: {}): a database that lost its CURRENT or MANIFEST, not a new one. \
         Nothing was changed; `strata repair --db {}` (strata::repair) rebuilds it from them",
        path.display(),
        found[0].display(),
        path.display(),
    )))
}

/// The files to keep when recovery dropped a damaged last manifest record (`dropped`):
/// every table and value file on disk that `v` does not name, with those kept before. The
/// dropped record may have been a synced flush whose WAL is gone, its table the only copy of
/// those writes: deleting unnamed files, as an open otherwise does, would lose them. They
/// wait for `repair`; `strata check` and `strata.kept-files` report them. Also returns the
/// newest sequence the unnamed tables and range-tombstone files hold: the database gives
/// out none at or below it again (a repair merges them back beside what is written from
/// now on, and a range deletion of theirs would cover a new write that reused its
/// sequence).
fn kept_after_drop(
    fs: &dyn fs::Fs,
    placement: &Placement,
    v: &crate::version::Version,
    dropped: &str,
) -> (crate::version::KeptFiles, SeqNo) {
    let mut named: HashSet<u64> = v.values.keys().copied().collect();
    named.extend(v.ranges.files().map(|f| f.number));
    for level in 0..v.num_levels() {
        named.extend(v.files(level).iter().map(|f| f.number.0));
    }
    let (mut files, mut reason) = match &v.kept {
        Some(k) => (k.files.clone(), format!("{}; ", k.reason)),
        None => (Vec::new(), String::new()),
    };
    reason.push_str(dropped);
    let mut newest = SeqNo::ZERO;
    for dir in placement.dirs() {
        for name in fs.list(dir).unwrap_or_default() {
            let Some(t @ (FileType::Table(n) | FileType::Value(n, _) | FileType::Ranges(n))) =
                crate::registry::parse_file_name(&name)
            else {
                continue;
            };
            if named.contains(&n.0) {
                continue;
            }
            files.push(n.0);
            // (A file that does not read holds nothing a repair would merge back.)
            let p = dir.join(&name);
            match t {
                FileType::Table(_) => {
                    let largest = fs
                        .open_with(&p, fs::ReadAccess::Positional)
                        .and_then(|f| crate::sst::Table::open(f, &p, None))
                        .map(|t| SeqNo(t.properties().largest_seq));
                    newest = newest.max(largest.unwrap_or(SeqNo::ZERO));
                }
                FileType::Ranges(_) => {
                    for t in crate::sst::range_file::read(fs, &p).unwrap_or_default() {
                        newest = newest.max(t.seq);
                    }
                }
                _ => {}
            }
        }
    }
    files.sort_unstable();
    files.dedup();
    (crate::version::KeptFiles { reason, files }, newest)
}

/// Whether the WAL at `path` holds anything but its link record: a creation cut off before
/// CURRENT was written leaves a WAL with nothing else (no write is taken before CURRENT
/// exists). Anything that does not read back as exactly that counts as writes.
pub(crate) fn wal_holds_writes(fs: &dyn fs::Fs, path: &Path) -> bool {
    let Ok(data) = fs::read_all(fs, path) else {
        return true;
    };
    let mut reader = LogReader::new(data);
    loop {
        match reader.next_event() {
            LogEvent::Record { data, .. } => match WriteBatch::decode(data) {
                Ok(b) if b.is_empty() => continue,
                _ => return true,
            },
            // A link record cut short by the crash that cut the creation short (a kill in
            // the middle of its copy leaves its head zeroed: damage at the tail).
            LogEvent::End | LogEvent::Torn { .. } | LogEvent::Corrupt { at_tail: true, .. } => {
                return false
            }
            LogEvent::Corrupt { .. } => return true,
        }
    }
}

/// Moves a database to the configured L0 layout: every L0 table of the recorded layout is
/// compacted into L1, then the new layout is recorded. Runs at open, before the background
/// threads start, so nothing adds to L0 meanwhile. A crash in between leaves either the old
/// layout (with or without its L0) or the new one: the next open resumes.
fn migrate_l0(db: &DbInner) -> Result<()> {
    let configured = crate::l0::configured(&db.opts, lock(&db.versions).l0_context())?;
    let from = lock(&db.versions).current().l0.kind();
    super::compact::compact_level(db, 0, None, None)
        .map_err(|e| e.context(format!("migrating L0 from {from:?}")))?;
    let mut versions = lock(&db.versions);
    if !versions.current().l0_is_empty() {
        return Err(Error::invalid(format!(
            "cannot open a database whose L0 layout is {from:?} with l0_layout = {:?}: \
             L0 still holds tables after compacting it",
            configured.kind()
        )));
    }
    let mut edit = VersionEdit::default();
    edit.set_l0_layout(configured);
    let v = versions.log_and_apply(edit)?;
    let mut st = lock(&db.state);
    db.install_super_version(&mut st, v);
    Ok(())
}

/// Moves the file-number counter past every numbered file on disk. Files the manifest's
/// counter does not cover exist after a crash: a WAL started after the last manifest write
/// (this session's WAL must be numbered above it, or a WAL that recovery skipped after a
/// hole would be replayed by the next recovery, after newer writes), or the tables of a
/// flush or compaction cut off before its edit was recorded. Recovery must not hand their
/// numbers out again, and with the counter past them the open's obsolete-file pass (which
/// spares numbers from the counter on, as a running job's outputs) deletes the unrecorded
/// tables.
fn mark_numbers_on_disk(fs: &Arc<dyn fs::Fs>, placement: &Placement, versions: &VersionSet) {
    for dir in placement.dirs() {
        for name in fs.list(dir).unwrap_or_default() {
            if let Some(
                FileType::Wal(n)
                | FileType::Table(n)
                | FileType::Ranges(n)
                | FileType::Value(n, _)
                | FileType::Manifest(n),
            ) = crate::registry::parse_file_name(&name)
            {
                versions.mark_file_number_used(n);
            }
        }
    }
}

/// Temporary files are only ever in flight while a database is open. (Only in the
/// directories the options give: one read because the manifest recorded it may be
/// another's by now.)
fn delete_leftovers(db: &DbInner) {
    for dir in db.placement.write_dirs() {
        for name in db.fs.list(dir).unwrap_or_default() {
            if crate::registry::parse_file_name(&name) == Some(FileType::Temp) {
                let _ = db.fs.remove(&dir.join(name));
            }
        }
    }
}

/// Where a WAL replay ended.
struct Replayed {
    /// The newest sequence of the database: `last_seq` given to [`replay_wals`] (the
    /// manifest's), or a replayed write's above it.
    last_seq: SeqNo,
    /// The newest sequence of a write the replay found (zero if none): every write of an
    /// unflushed memtable above it was lost.
    last_replayed: SeqNo,
    /// Whether the replay stopped before writes that came after the stop (a hole between
    /// WALs, a value its file lost, damage before a later WAL with writes): those are left
    /// out, as the recovery mode says.
    stopped: bool,
    /// Whether a replayed write holds expiring entries.
    expiring: bool,
    /// Whether a replayed write holds a range deletion.
    range_deletes: bool,
}

/// The WALs numbered >= `log_number`, oldest first, in whichever of the placement's
/// directories each is: the WAL directory is not recorded, and a database reopened with
/// another (`wal_dir`, or `wal_in_pmem` turned on or off, as the kill loop's preset
/// rotation does) must replay the WALs the last session wrote where it put them. The
/// WAL directory, if it exists, must be listable; a directory that is missing holds none.
pub(crate) fn wals_on_disk(
    fs: &dyn fs::Fs,
    placement: &Placement,
    log_number: FileNumber,
) -> Result<Vec<(FileNumber, PathBuf)>> {
    let mut wals = Vec::new();
    for dir in placement.dirs() {
        // (A WAL directory an existing database opens with for the first time is created
        // only after the open's checks.)
        let names = if dir == placement.wal_dir() && fs.exists(dir) {
            fs.list(dir)?
        } else {
            fs.list(dir).unwrap_or_default()
        };
        for name in names {
            if let Some(FileType::Wal(w)) = crate::registry::parse_file_name(&name) {
                if w >= log_number {
                    wals.push((w, dir.join(name)));
                }
            }
        }
    }
    wals.sort();
    Ok(wals)
}

/// Where a WAL replay puts the writes it finds.
enum Sink<'a> {
    /// Into L0 tables added to the edit.
    Flush(&'a mut VersionEdit),
    /// Into memtables kept here, oldest first, writing nothing (a read-only open).
    Keep(&'a mut Vec<Arc<MemTable>>),
    /// Nowhere: the replay only finds whether it would fail, writing nothing (an open runs
    /// it before its first write, so that a WAL it refuses leaves the database as it was).
    Check,
}

/// The bytes of a WAL that a writer beside a read-only open may be writing into. One read
/// of a file that grows is no snapshot of it: it may copy a record's page before the
/// writer finished that record and a later page after the writer wrote the next ones, and
/// then reads as damage with records after it. That is no damage. The writer copies one
/// record at a time, each after the one before it, and never changes a byte it wrote; so when
/// the first read holds records past damage, every byte before the end of the last one was
/// final by then, and a second read, cut there, holds that part of the file as it stays
/// (damage in it is damage, judged by the recovery mode as any other; what the cut leaves
/// out was written after the view began). Without this, a view opened in the middle of a
/// copy was refused ("zeroed header inside the log") under `TolerateTornTail`.
fn read_live_wal(fs: &dyn crate::fs::Fs, path: &Path) -> Result<Vec<u8>> {
    let mut reader = LogReader::new(fs::read_all(fs, path)?);
    let Some(end) = reader.records_end_past_damage() else {
        return Ok(reader.into_data());
    };
    drop(reader);
    let mut data = fs::read_all(fs, path)?;
    data.truncate(end as usize);
    Ok(data)
}

/// Replays the WALs the manifest recovery `r` read says to (numbered >= its log number)
/// into `sink`.
fn replay_wals(
    opts: &Options,
    placement: &Placement,
    versions: &mut VersionSet,
    r: &crate::version::Recovered,
    mut sink: Sink<'_>,
) -> Result<Replayed> {
    let (log_number, last_seq) = (r.log_number, r.last_sequence);
    let (recorded_sizes, expected_wal) = (&r.wal_sizes[..], r.expected_wal);
    let fs = &opts.fs;
    let wals = wals_on_disk(&**fs, placement, log_number)?;
    // The WAL the open's checks found: gone now, a writer beside a read-only open deleted
    // it after a flush moved its writes into tables this open's manifest does not name.
    // Its writes would be missing, and older values of their keys read instead (the
    // open of a read-only view reads the newer manifest: `open_read_only`).
    if let Some(n) = expected_wal.filter(|n| !wals.iter().any(|(w, _)| w == n)) {
        return Err(Error::corrupt(format!(
            "{}: the WAL {} went away during the open",
            placement.db_dir().display(),
            filename::wal_name(n)
        )));
    }
    // (Every WAL's number is already marked used: `mark_numbers_on_disk`.)
    // Every WAL the manifest recorded synced (a clean close, every one it left; or one
    // closed, then synced by a later synced write) must be there (the expected one's check
    // covers only the oldest; a lost newest WAL leaves no hole a later one would show).
    if let Some(&(n, _)) = recorded_sizes
        .iter()
        .find(|(n, _)| *n >= log_number.0 && !wals.iter().any(|(w, _)| w.0 == *n))
    {
        if opts.wal_recovery_mode != WalRecoveryMode::SkipAnyCorrupted {
            return Err(Error::corrupt(format!(
                "{}: the WAL {} that the manifest recorded as synced (at a clean close, or \
                 once it was closed) is missing. Nothing was changed; `strata repair` keeps \
                 what the other files hold",
                placement.db_dir().display(),
                filename::wal_name(FileNumber(n)),
            )));
        }
    }
    let mut mem = Arc::new(MemTable::new(0));
    let mut value_log_lengths: HashMap<u64, u64> = HashMap::new();
    let mut stop = false;
    // Whether it stopped before writes that came after (not at the newest writes' torn
    // tail, where `PointInTime` stops too).
    let mut early = false;
    // The last sequence replayed from any WAL so far (or vouched for by the first WAL's
    // link record): a later WAL whose link names a higher one follows a hole.
    let mut last_logged: Option<SeqNo> = None;
    let mut last_replayed = SeqNo::ZERO;
    let mut expiring = false;
    let mut range_deletes = false;
    // The newest WAL that holds writes: it, and only it, can end in a write cut short. (The
    // WALs after it hold only link records: an open or a repair killed after it created
    // its WAL, before its manifest edit moved the log number past the older ones, leaves
    // one behind the torn tail.)
    let newest_written = (1..wals.len())
        .rev()
        .find(|&j| wal_holds_writes(&**fs, &wals[j].1))
        .unwrap_or(0);
    let check = matches!(sink, Sink::Check);
    for (i, (number, path)) in wals.iter().enumerate() {
        if stop {
            break;
        }
        // Only the newest WAL can end in a write a kill cut short in the middle of its
        // copy; an older one's damage is damage to writes that were whole.
        let past_writes = i >= newest_written;
        let data = if past_writes && matches!(sink, Sink::Keep(_)) {
            read_live_wal(&**fs, path)?
        } else {
            fs::read_all(&**fs, path)?
        };
        // The bytes of records the manifest recorded for this WAL, synced (by a clean close,
        // or once it was closed): a file shorter than that was cut since, and what is
        // missing is no torn tail. (Damage within
        // the bytes is the recovery mode's to judge, as in any WAL.)
        // (A file at least that long whose records end sooner, zeroed or damaged inside,
        // is refused too, except by the modes that accept losing writes at damage.)
        if let Some(&(_, size)) = recorded_sizes.iter().find(|(n, _)| *n == number.0) {
            let len = data.len() as u64;
            let end = if len < size { len } else { records_end(&data) };
            let strict = matches!(
                opts.wal_recovery_mode,
                WalRecoveryMode::TolerateTornTail | WalRecoveryMode::AbsoluteConsistency
            );
            if end < size && (len < size || strict) {
                return Err(Error::corruption(
                    path,
                    end,
                    format!(
                        "the WAL holds {end} bytes of records, and the manifest recorded \
                         {size} for it, all synced (at a clean close, or once it was closed \
                         and a synced write synced it): cut short or damaged since. Nothing \
                         was changed; `strata repair` keeps what it still holds"
                    ),
                ));
            }
        }
        let mut reader = if past_writes {
            LogReader::new(data)
        } else {
            LogReader::strict(data)
        };
        let mut records = 0usize;
        loop {
            let (data, offset) = match reader.next_event() {
                LogEvent::Record { data, offset } => (data, offset),
                LogEvent::End => break,
                LogEvent::Torn { offset } => match opts.wal_recovery_mode {
                    WalRecoveryMode::AbsoluteConsistency => {
                        return Err(Error::corruption(path, offset, "WAL ends inside a record"));
                    }
                    WalRecoveryMode::PointInTime => {
                        stop = true;
                        early |= !past_writes;
                        break;
                    }
                    _ => break,
                },
                LogEvent::Corrupt {
                    offset,
                    reason,
                    at_tail,
                } => match opts.wal_recovery_mode {
                    WalRecoveryMode::TolerateTornTail if at_tail => break,
                    WalRecoveryMode::PointInTime => {
                        stop = true;
                        early |= !past_writes;
                        break;
                    }
                    WalRecoveryMode::SkipAnyCorrupted => {
                        early = true;
                        continue;
                    }
                    _ => {
                        return Err(Error::corruption(
                            path,
                            offset,
                            format!("WAL record: {reason}"),
                        ))
                    }
                },
            };
            let batch = match WriteBatch::decode(data) {
                Ok(b) => b,
                Err(e) => match opts.wal_recovery_mode {
                    WalRecoveryMode::SkipAnyCorrupted => {
                        early = true;
                        continue;
                    }
                    WalRecoveryMode::PointInTime => {
                        stop = true;
                        early |= !past_writes;
                        break;
                    }
                    _ => return Err(Error::corruption(path, offset, e.message())),
                },
            };
            records += 1;
            let lost = if batch
                .iter()
                .any(|e| e.is_ok_and(|e| e.kind == ValueKind::Pointer))
            {
                let v = versions.current();
                crate::vstore::lost_value(
                    crate::registry::STORES,
                    &batch,
                    &v,
                    &**fs,
                    placement,
                    &mut value_log_lengths,
                )?
            } else {
                None
            };
            if let Some(lost) = lost {
                // The WAL kept a record whose value the value log lost (no sync came
                // between them): the writes end before it.
                match opts.wal_recovery_mode {
                    WalRecoveryMode::AbsoluteConsistency => {
                        return Err(Error::corruption(path, offset, lost));
                    }
                    // (Skipped or stopped at, writes after it are missing from a view: it
                    // reads again if the database changed meanwhile.)
                    WalRecoveryMode::SkipAnyCorrupted => {
                        early = true;
                        continue;
                    }
                    _ => {
                        stop = true;
                        early = true;
                        break;
                    }
                }
            }
            if batch.is_empty() {
                // A link record: everything logged up to its sequence came before this WAL.
                let linked = batch.sequence();
                // (After WALs that lost every record, the manifest's last sequence is what
                // is known to have come before.)
                let before = last_logged.or((i > 0).then_some(last_seq));
                if before.is_some_and(|l| linked > l) {
                    early = true;
                    hole(
                        opts,
                        path,
                        "an earlier WAL lost records that this one follows",
                        &mut stop,
                    )?;
                    if stop {
                        break;
                    }
                }
                last_logged = Some(last_logged.map_or(linked, |l| l.max(linked)));
                continue;
            }
            let mut seq = batch.sequence();
            expiring |= batch.has_expiring();
            range_deletes |= batch.has_range_delete();
            for e in batch.iter() {
                let e = e?;
                if !check {
                    mem.add(seq, e.kind, e.key, e.value);
                }
                last_replayed = last_replayed.max(seq);
                seq = seq.next();
            }
            let last = SeqNo(seq.0 - 1);
            last_logged = Some(last_logged.map_or(last, |l| l.max(last)));
            if mem.memory_usage() >= opts.write_buffer_size {
                match &mut sink {
                    Sink::Keep(kept) => kept.push(mem.clone()),
                    Sink::Flush(edit) => flush_recovered(opts, placement, versions, &mem, edit)?,
                    Sink::Check => {}
                }
                mem = Arc::new(MemTable::new(0));
            }
        }
        if records == 0 && !past_writes && !stop {
            // Not even its link record survived, yet a later WAL holds writes: whatever
            // this one held is lost, so the later ones must not be replayed after it.
            early = true;
            hole(
                opts,
                path,
                "this WAL lost every record, and a later WAL exists",
                &mut stop,
            )?;
        }
    }
    let replayed = Replayed {
        last_seq: last_seq.max(last_replayed),
        last_replayed,
        stopped: early,
        expiring,
        range_deletes,
    };
    let edit = match sink {
        Sink::Keep(kept) => {
            if !mem.is_empty() {
                kept.push(mem);
            }
            return Ok(replayed);
        }
        Sink::Check => return Ok(replayed),
        Sink::Flush(edit) => edit,
    };
    if !mem.is_empty() {
        flush_recovered(opts, placement, versions, &mem, edit)?;
    }
    // The value-log bytes the replayed pointers reach may be only in the page cache (the
    // process died, the machine did not): durable before the tables naming them are.
    for &n in value_log_lengths.keys() {
        if let Some(f) = versions.current().values.get(&n) {
            fs.sync_file(&f.path(placement))?;
        }
    }
    Ok(replayed)
}

/// A WAL lost records that a later WAL follows (possible after a power cut: closed WALs
/// are synced lazily). Replaying the later WALs would leave a hole, so recovery stops here,
/// at a consistent prefix of the writes, unless the mode asks otherwise.
fn hole(opts: &Options, path: &Path, what: &str, stop: &mut bool) -> Result<()> {
    match opts.wal_recovery_mode {
        WalRecoveryMode::AbsoluteConsistency => Err(Error::corruption(path, 0, what)),
        WalRecoveryMode::SkipAnyCorrupted => Ok(()),
        WalRecoveryMode::TolerateTornTail | WalRecoveryMode::PointInTime => {
            *stop = true;
            Ok(())
        }
    }
}

/// Writes a memtable rebuilt from WALs into L0, through the recovered version's layout.
fn flush_recovered(
    opts: &Options,
    placement: &Placement,
    versions: &mut VersionSet,
    mem: &Arc<MemTable>,
    edit: &mut VersionEdit,
) -> Result<()> {
    // The layout an earlier recovered flush of this edit chose, else the recovered one; L0
    // as it will be with this edit's tables.
    let layout = match &edit.l0_layout {
        Some(rec) => crate::l0::from_record(rec, versions.l0_context())?,
        None => versions.current().l0.clone(),
    };
    let mut files: Vec<Arc<crate::file_meta::FileMeta>> = versions.current().files(0).to_vec();
    files.extend(edit.new_files.iter().map(|(_, m)| Arc::new(m.clone())));
    // The value files earlier recovery flushes of this open wrote are in `edit` only: the
    // separator must see them (a hash group that holds a key's value takes a group-local
    // tombstone for its delete; without it a group GC brought the value back).
    let values_view = versions.current_with_values_of(edit)?;
    let mut new_number = || versions.new_file_number();
    // No snapshots exist during recovery: only the newest version of each key is kept.
    let mut job = Ingest {
        fs: &*opts.fs,
        placement,
        path_id: placement.path_id(crate::placement::FileKind::L0Table),
        table_opts: crate::sst::TableOptions::from(opts),
        snapshots: Vec::new(),
        new_file_number: &mut new_number,
        values: crate::vstore::flush_separator(
            &crate::vstore::StoreEnv::recovering(crate::registry::STORES, opts, placement),
            opts.min_blob_size,
            &values_view,
        ),
        dropped_values: Default::default(),
        // (The WALs replayed stay until the open's edit names these tables.)
        stage: false,
        staged: Vec::new(),
        durable_first: None,
        // (Not at recovery: the entries are offered at their first compaction.)
        filter: None,
    };
    let ingested = layout.ingest(&mut job, mem, &files)?;
    edit.new_range_files.extend(job.write_ranges(mem)?);
    edit.new_value_files.extend(job.finish_values()?);
    // Older versions the replayed memtable held are garbage of the files their pointers
    // lead to, as a live flush counts them (entries add up when the edit is applied).
    edit.value_garbage
        .extend(job.dropped_values.take().into_records());
    if let Some(c) = ingested.change {
        edit.set_l0_layout(c.apply(&*layout)?);
    }
    edit.new_files
        .extend(ingested.tables.into_iter().map(|m| (0, m)));
    Ok(())
}

pub(crate) fn close(db: &DbInner) -> Result<()> {
    if db.closed.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    db.shutting_down.store(true, Ordering::Release);
    {
        let _st = lock(&db.state);
        db.bg_cv.notify_all();
        db.done_cv.notify_all();
    }
    {
        let _w = lock(&db.sync_wanted);
        db.sync_cv.notify_all();
    }
    let threads: Vec<_> = lock(&db.threads).drain(..).collect();
    for t in threads {
        let _ = t.join();
    }
    // Wait for the write queue to drain: a leader that began its group before
    // `shutting_down` was set finishes it (and its WAL bytes are synced below); every writer
    // after it finds the flag and fails with `Closed`. Only then may the lock go.
    while !lock(&db.writers).is_empty() {
        {
            // A leader stalled in `make_room` wakes to find `shutting_down`.
            let _st = lock(&db.state);
            db.done_cv.notify_all();
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    // A record the sync thread left (it may end before the flush thread's last hand-off):
    // synced here.
    let manifest = if std::mem::take(&mut *lock(&db.sync_wanted)) {
        lock(&db.versions).manifest_sync().wait_all()
    } else {
        Ok(())
    };
    let result = db
        .sync_values()
        .and_then(|()| lock(&db.wal).sync_all(&db.stats, &*db.fs, db.placement.wal_dir()))
        .and_then(|()| {
            if db.read_only || manifest.is_err() || lock(&db.state).bg_error.is_some() {
                Ok(())
            } else {
                record_wal_sizes(db)
            }
        });
    // The deletion thread's last pass may be owed (it runs at most every 100 ms, and jobs
    // finished while it paused or exited): what the last jobs made obsolete goes now, so
    // a closed database holds no file it no longer needs.
    if !db.read_only {
        db.delete_obsolete_files();
    }
    lock(&db._lock).take();
    manifest
        .map_err(|e| Error::new(ErrorKind::Io, format!("syncing the manifest at close: {e}")))?;
    result.map_err(|e| Error::new(ErrorKind::Io, format!("syncing the WAL at close: {e}")))
}

/// The bytes of records in the log `data` holds: the end of its last whole record.
pub(crate) fn records_end(data: &[u8]) -> u64 {
    let mut reader = LogReader::strict(data.to_vec());
    let mut end = 0;
    while let LogEvent::Record { .. } = reader.next_event() {
        end = reader.position();
    }
    end
}

/// At a clean close, every WAL synced: records in the manifest how many bytes of records
/// each WAL the database keeps holds, so that the next open refuses one cut short since
/// (a closed WAL truncated from 6.4 MB to 3 MB used to be replayed up to the cut as if a
/// crash had torn it, dropping 70,000 acknowledged writes without a word).
fn record_wal_sizes(db: &DbInner) -> Result<()> {
    let mut versions = lock(&db.versions);
    // (First, in a manifest of its own if the directories in use changed: the sizes must
    // be the last record. The record's copy in OPTIONS follows it, so that a repair with
    // no manifest left does not go by a directory the database has left.)
    if versions.record_directories_again()? {
        fs::write_file_atomic(
            &*db.fs,
            &db.placement.db_dir().join(filename::OPTIONS),
            options_file_text(&db.opts, versions.recorded()).as_bytes(),
        )?;
    }
    let wals = wals_on_disk(&*db.fs, &db.placement, versions.log_number())?;
    let mut sizes = Vec::with_capacity(wals.len());
    {
        // (`sync_all` let go of every closed WAL's writer: only the current one is held.)
        let wal = lock(&db.wal);
        for (n, path) in wals {
            let size = match wal.writer.as_ref().filter(|_| n == wal.number) {
                Some(w) => w.len(),
                // A WAL whose writer is gone: its records' end, read (its file may keep
                // a zero tail a mapped log's last truncation did not make durable).
                None => records_end(&fs::read_all(&*db.fs, &path)?),
            };
            sizes.push((n.0, size));
        }
    }
    versions
        .log_and_apply(VersionEdit {
            wal_sizes: sizes,
            ..VersionEdit::default()
        })
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use crate::batch::WriteBatch;
    use crate::filename::{self, FileNumber, FileType};
    use crate::fs::{Fs, MemFs};
    use crate::key::SeqNo;
    use crate::wal::{LogWriter, WalRecoveryMode};
    use crate::{Db, Options};

    fn opts(fs: &Arc<MemFs>, mode: WalRecoveryMode) -> Options {
        Options {
            wal_recovery_mode: mode,
            fs: fs.clone(),
            ..Options::default()
        }
    }

    /// A crash image of a database whose only WAL holds `a` at sequence 1, plus a later WAL written
    /// by hand: its link record says `linked` was logged before it, then `b` follows.
    /// `first_lost` empties the first WAL (as a power cut before its writeback would).
    fn with_second_wal(linked: u64, first_lost: bool) -> (Arc<MemFs>, PathBuf) {
        // A crash image (a clean close records its WALs' sizes, and a WAL cut short after
        // one is damage, not a hole).
        let base = MemFs::new();
        let db = Db::open(
            "/db",
            opts(&Arc::new(base.clone()), WalRecoveryMode::default()),
        )
        .unwrap();
        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        db.write(
            &crate::WriteOptions {
                sync: true,
                ..Default::default()
            },
            b,
        )
        .unwrap();
        let fs = Arc::new(base.crash_clone(crate::fs::CrashMode::DropUnsynced));
        drop(db);
        let wal = fs
            .list(Path::new("/db"))
            .unwrap()
            .into_iter()
            .filter_map(|n| match crate::registry::parse_file_name(&n) {
                Some(FileType::Wal(w)) => Some(w),
                _ => None,
            })
            .max()
            .unwrap();
        if first_lost {
            fs.truncate(&Path::new("/db").join(filename::wal_name(wal)), 0)
                .unwrap();
        }
        let later = Path::new("/db").join(filename::wal_name(FileNumber(wal.0 + 100)));
        let mut w = LogWriter::new(fs.create(&later).unwrap());
        w.add_record(WriteBatch::link(SeqNo(linked)).encoded())
            .unwrap();
        let mut b = WriteBatch::new();
        b.put(b"b", b"2");
        b.set_sequence(SeqNo(linked + 1));
        w.add_record(b.encoded()).unwrap();
        w.sync().unwrap();
        (fs, later)
    }

    type Value = Option<Vec<u8>>;

    /// Opens the database and reads `a` and `b`.
    fn get(fs: &Arc<MemFs>, mode: WalRecoveryMode) -> crate::Result<(Value, Value)> {
        let db = Db::open("/db", opts(fs, mode))?;
        Ok((db.get(b"a")?, db.get(b"b")?))
    }

    /// A creation killed while it copied its first WAL's link record (head zeroed, tail
    /// there, no CURRENT yet) is created over, as one cut off before: no write was taken.
    /// A WAL that holds a write after its link record still refuses the creation.
    #[test]
    fn a_creation_killed_in_the_copy_of_its_link_record_is_created_over() {
        for (torn, with_write) in [(true, false), (false, true)] {
            let fs = Arc::new(MemFs::new());
            fs.create_dir_all(Path::new("/db")).unwrap();
            let wal = Path::new("/db").join(filename::wal_name(FileNumber(2)));
            let mut w = LogWriter::new(fs.create(&wal).unwrap());
            w.add_record(WriteBatch::link(SeqNo(0)).encoded()).unwrap();
            if with_write {
                let mut b = WriteBatch::new();
                b.put(b"k", b"v");
                b.set_sequence(SeqNo(1));
                w.add_record(b.encoded()).unwrap();
            }
            w.sync().unwrap();
            drop(w);
            if torn {
                fs.corrupt(&wal, 0, |b| b[..16].fill(0)).unwrap();
            }
            let opened = Db::open("/db", opts(&fs, WalRecoveryMode::default()));
            assert_eq!(opened.is_ok(), torn, "torn {torn}: {:?}", opened.err());
        }
    }

    /// A WAL that lost every record, followed by one that holds only its link record (an
    /// open killed before its manifest edit): the link says writes came before it that no
    /// WAL holds any more, and `AbsoluteConsistency` says so; `TolerateTornTail` opens with
    /// what the manifest holds.
    #[test]
    fn a_lost_wal_before_a_link_only_wal_is_a_hole() {
        let (fs, later) = with_second_wal(1, true);
        // The later WAL: its link record only.
        let mut w = LogWriter::new(fs.create(&later).unwrap());
        w.add_record(WriteBatch::link(SeqNo(1)).encoded()).unwrap();
        w.sync().unwrap();
        drop(w);
        let err = get(&fs, WalRecoveryMode::AbsoluteConsistency).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Corruption, "{err}");
        assert!(err.to_string().contains("lost"), "{err}");
        assert_eq!(
            get(&fs, WalRecoveryMode::TolerateTornTail).unwrap(),
            (None, None)
        );
    }

    #[test]
    fn a_wal_that_follows_everything_logged_before_it_is_replayed() {
        let (fs, _) = with_second_wal(1, false);
        let got = get(&fs, WalRecoveryMode::TolerateTornTail).unwrap();
        assert_eq!(got, (Some(b"1".to_vec()), Some(b"2".to_vec())));
    }

    #[test]
    fn a_wal_that_follows_a_hole_is_not_replayed() {
        for first_lost in [false, true] {
            // The link says 5 sequences were logged, recovery found 1 (or none): a hole.
            let linked = if first_lost { 1 } else { 5 };
            for mode in [
                WalRecoveryMode::TolerateTornTail,
                WalRecoveryMode::PointInTime,
            ] {
                let (fs, later) = with_second_wal(linked, first_lost);
                let a = (!first_lost).then(|| b"1".to_vec());
                assert_eq!(
                    get(&fs, mode).unwrap(),
                    (a.clone(), None),
                    "{mode:?} {first_lost}"
                );
                // The skipped WAL is obsolete from now on, even after new writes (whose
                // sequences pass its link): it is gone, and later recoveries agree.
                let db = Db::open("/db", opts(&fs, mode)).unwrap();
                for i in 0..10u8 {
                    db.put([b'c', i], b"3").unwrap();
                }
                db.close().unwrap();
                drop(db);
                assert!(!fs.exists(&later), "{mode:?} {first_lost}");
                assert_eq!(get(&fs, mode).unwrap(), (a, None), "{mode:?} {first_lost}");
            }
            let (fs, later) = with_second_wal(linked, first_lost);
            let err = get(&fs, WalRecoveryMode::AbsoluteConsistency).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::Corruption, "{err}");
            assert!(err.to_string().contains("lost"), "{err}");
            if !first_lost {
                assert!(
                    err.to_string().contains(&later.display().to_string()),
                    "{err}"
                );
            }
            let (fs, _) = with_second_wal(linked, first_lost);
            let (_, b) = get(&fs, WalRecoveryMode::SkipAnyCorrupted).unwrap();
            assert_eq!(
                b,
                Some(b"2".to_vec()),
                "SkipAnyCorrupted salvages the later WAL"
            );
        }
    }
}
