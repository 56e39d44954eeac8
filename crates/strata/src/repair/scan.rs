//! Repair's first phase: where the database's files are, which are on disk, and which
//! the database no longer needed.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::{by_number, Repairer};
use crate::error::Result;
use crate::filename::{self, FileNumber, FileType};
use crate::placement::Placement;
use crate::version::VersionEdit;
use crate::wal::{LogEvent, LogReader};
use crate::Options;

/// The files a repair found, in every directory of the database.
pub(super) struct Found {
    /// Tables, by number (one path each).
    pub tables: Vec<(PathBuf, FileNumber)>,
    /// WALs, by number.
    pub wals: Vec<(PathBuf, FileNumber)>,
    /// Manifests.
    pub manifests: Vec<PathBuf>,
    /// Range-tombstone files, by number.
    pub range_files: Vec<(PathBuf, FileNumber)>,
    /// Value files by number: path, store, the directory's path id.
    pub value_files: BTreeMap<u64, (PathBuf, crate::vstore::StoreId, crate::placement::PathId)>,
    /// The highest file number seen.
    pub max_number: u64,
    /// Each table's entry count as the surviving manifests recorded it (for a table that
    /// no longer opens, the only count there is).
    pub recorded_entries: HashMap<u64, u64>,
    /// The range-tombstone files the manifests recorded, with their tombstones (the copy a
    /// repair reads when the file does not), and which of them the newest manifest that
    /// reads still names.
    pub recorded_ranges: RecordedRanges,
}

/// Range-tombstone files as the surviving manifests recorded them.
#[derive(Default)]
pub(super) struct RecordedRanges {
    /// Every one any manifest added, by number.
    pub files: HashMap<u64, crate::range_del::RangeFile>,
    /// Those the newest manifest holding any record names at its end.
    pub live: std::collections::HashSet<u64>,
}

/// The placement of the database at `dir` under `opts` (a manifest still readable, or
/// else the OPTIONS file, says where the files are where the options do not), its
/// directories made, and the database's lock.
///
/// # Errors
/// `Busy` if the database is held; `InvalidArgument` for directories that would leave
/// files of the database out (see [`refuse_other_directories`]); I/O errors.
pub(super) fn lock_and_place(
    dir: &Path,
    opts: &Options,
) -> Result<(Placement, Box<dyn crate::fs::FileLock>)> {
    let fs = opts.fs.clone();
    // (Locked first when the directory exists: a writer closing meanwhile may still change
    // the manifest read for where the files are.)
    let early_lock = if fs.exists(dir) {
        Some(fs.lock(&dir.join(filename::LOCK))?)
    } else {
        None
    };
    let known = crate::db::open::known_directories(dir, opts);
    crate::db::open::refuse_borrowed_directories(dir, opts, &known)?;
    refuse_other_directories(dir, opts, &known)?;
    let placement = known.placement;
    for d in placement.write_dirs() {
        crate::fs::create_dir_durable(&*fs, d)?;
    }
    let lock = match early_lock {
        Some(l) => l,
        None => fs.lock(&dir.join(filename::LOCK))?,
    };
    Ok((placement, lock))
}

impl Repairer<'_> {
    /// What is on disk, in every directory.
    pub(super) fn find_files(&mut self) -> Result<Found> {
        let (fs, placement) = (&self.fs, &self.placement);
        let mut found = Found {
            tables: Vec::new(),
            wals: Vec::new(),
            manifests: Vec::new(),
            range_files: Vec::new(),
            value_files: BTreeMap::new(),
            max_number: 1,
            recorded_entries: HashMap::new(),
            recorded_ranges: RecordedRanges::default(),
        };
        let mut dirs: Vec<&Path> = placement.dirs();
        dirs.dedup();
        let given = placement.write_dirs();
        for d in dirs {
            // (A recorded directory the options do not give may be gone: a tmpfs after a
            // reboot. It holds nothing then, and the report says so: its files, if it had
            // any, are not in the repaired database. One that is there and cannot be read,
            // a disk not mounted yet or a permission, stops the repair: it would drop them
            // silently.)
            let names = if given.contains(&d) || fs.exists(d) {
                fs.list(d)?
            } else {
                self.report.dropped.push(format!(
                    "{}: a directory the database recorded is gone; whatever it held is not \
                     in the repaired database",
                    d.display()
                ));
                Vec::new()
            };
            for name in names {
                let p = d.join(&name);
                let n = match crate::registry::parse_file_name(&name) {
                    Some(FileType::Table(n)) => {
                        found.tables.push((p, n));
                        n
                    }
                    Some(FileType::Wal(n)) => {
                        found.wals.push((p, n));
                        n
                    }
                    Some(FileType::Manifest(n)) => {
                        found.manifests.push(p);
                        n
                    }
                    Some(FileType::Ranges(n)) => {
                        found.range_files.push((p, n));
                        n
                    }
                    Some(FileType::Value(n, store)) => {
                        found
                            .value_files
                            .insert(n.0, (p, store, path_id_of(placement, d)));
                        n
                    }
                    _ => continue,
                };
                found.max_number = found.max_number.max(n.0);
            }
        }
        found.tables.sort_by_key(|t| t.1);
        found.tables.dedup_by_key(|t| t.1);
        found.wals.sort_by_key(|w| w.1);
        found.wals.dedup_by_key(|w| w.1);
        (found.recorded_entries, found.recorded_ranges) =
            recorded_in_manifests(&**fs, &found.manifests);
        Ok(found)
    }

    /// The files the database no longer needed when it listed them (`crate::obsolete`);
    /// a list that does not read is damage, and every table and WAL is read.
    pub(super) fn read_obsolete(&mut self) -> crate::obsolete::ObsoleteList {
        match crate::obsolete::read(&*self.fs, self.dir) {
            Ok(list) => list.unwrap_or_default(),
            Err(e) => {
                let path = self.dir.join(filename::OBSOLETE);
                self.report
                    .damaged(&path, 0, format!("{e}; every table and WAL is read"));
                crate::obsolete::ObsoleteList::default()
            }
        }
    }
}

/// A repair given a directory (`opts`) other than the one the database records for the
/// same files, while the recorded one still holds files of the database, is refused: it
/// would read only the given one and record it, leaving the others out for good.
fn refuse_other_directories(
    dir: &Path,
    opts: &Options,
    known: &crate::db::open::Known,
) -> Result<()> {
    use crate::placement::{absolute, Directories, PathId};
    let Some(rec) = &known.record else {
        return Ok(());
    };
    let own = crate::db::open::layouts_own_names(opts, &known.placement);
    for (id, recorded) in rec.usable_by(dir, rec.written_here(dir) && !known.copy) {
        let given = crate::placement::option_dir(opts, id);
        let Some(given) = given.filter(|g| absolute(g) != recorded) else {
            continue;
        };
        let holds = crate::db::open::holds_database_files(&*opts.fs, &recorded, &own);
        if holds {
            return Err(crate::error::Error::invalid(format!(
                "{}: the database records its {} in {}, which still holds some, and the \
                 options give {} = {}: repair with {} = {} (or move the files and give the \
                 new directory)",
                dir.display(),
                Directories::what(id),
                recorded.display(),
                Directories::option_name(id),
                given.display(),
                Directories::option_name(id),
                recorded.display(),
            )));
        }
    }
    // A copy (or a moved database) whose record names directories outside it that its
    // options do not give: those hold part of the database, which a repair would drop.
    // (Not a checkpoint or a restored backup never opened for writes: it holds every file
    // in its directory, and the record names its original's.)
    if !rec.written_here(dir) && !known.copy {
        for (id, p) in rec
            .0
            .iter()
            .filter(|(id, p)| *id != PathId::DB && p.is_absolute())
        {
            if crate::placement::option_dir(opts, *id).is_none() {
                return Err(crate::error::Error::invalid(format!(
                    "{}: {}",
                    dir.display(),
                    rec.left_behind(*id, p)
                )));
            }
        }
    }
    Ok(())
}

/// Each table's entry count as the manifests in `manifests` record it (a newer manifest's
/// record wins), each read up to its damage.
fn recorded_in_manifests(
    fs: &dyn crate::fs::Fs,
    manifests: &[PathBuf],
) -> (HashMap<u64, u64>, RecordedRanges) {
    let mut out = HashMap::new();
    let mut ranges = RecordedRanges::default();
    for p in by_number(manifests) {
        let Ok(bytes) = crate::fs::read_all(fs, p) else {
            continue;
        };
        let mut reader = LogReader::new(bytes);
        let mut live = std::collections::HashSet::new();
        let mut any = false;
        while let LogEvent::Record { data, .. } = reader.next_event() {
            if let Ok(e) = VersionEdit::decode(&data, crate::registry::registered()) {
                // (Only a record of files counts: a manifest whose snapshot record a crash
                // tore keeps its directories record, and must not stand for an empty list.)
                any |= e.log_number.is_some()
                    || !e.new_files.is_empty()
                    || !e.new_range_files.is_empty()
                    || !e.deleted_range_files.is_empty();
                for (_, f) in &e.new_files {
                    out.insert(f.number.0, f.num_entries);
                }
                for n in &e.deleted_range_files {
                    live.remove(n);
                }
                for f in e.new_range_files {
                    live.insert(f.number);
                    ranges.files.insert(f.number, f);
                }
            }
        }
        if any {
            ranges.live = live;
        }
    }
    (out, ranges)
}

/// The path id of directory `d` in `placement`: the database directory's, else the slot
/// whose files are read from `d` (value files live in the value directory, or where the
/// manifest recorded it; a directory shared by several slots takes the value slot's).
fn path_id_of(placement: &Placement, d: &Path) -> crate::placement::PathId {
    use crate::placement::PathId;
    if d == placement.db_dir() {
        return PathId::DB;
    }
    [PathId::VALUES, PathId::PMEM, PathId::LEVELS]
        .into_iter()
        .find(|&id| placement.dir(id) == d)
        .unwrap_or(PathId::DB)
}
