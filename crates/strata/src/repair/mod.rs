//! [`repair`]: rebuilds a database whose MANIFEST or CURRENT is lost or damaged, from the
//! files that survive (LevelDB's `RepairDB`).
//!
//! Every table that opens is read block by block (a damaged block is skipped and
//! reported), every WAL is replayed record by record (damaged records are skipped), and
//! the newest version of every key is written into new tables in one sorted run at the
//! last level, with exact value-file garbage counts (each surviving value file's records
//! that no kept pointer reaches are garbage). A new manifest names those tables and the
//! value files, and CURRENT points at it. Nothing is deleted: the files the new manifest
//! replaces (old tables, WALs, manifests, value files nothing reaches) are moved into a
//! `lost/` directory beside them, for the user to delete once the repaired database reads
//! as expected.
//!
//! L0 data a layout keeps outside tables (the matrix's RowTables in its persistent-memory
//! region) is located only by the manifest's L0 layout record: repair reads it through the
//! newest such record a surviving manifest holds (each part that verifies), and moves the
//! region aside; with no manifest left, the region's rows cannot be found, and the report
//! says so.
//!
//! Tables and WALs the database's obsolete list names (`crate::obsolete`: files it no
//! longer needed, listed before any was deleted) are left out: a crash may have undone the
//! deletion of some of a compaction's inputs and not others, and an input holding a value
//! whose tombstone the compaction dropped would bring a deleted key back. A pointer whose
//! value is lost is not its key's last word: the key's next entry takes its place (the same
//! write from a compaction's input, when the crash lost the value file its output wrote),
//! and WALs are replayed as recovery replays them: a WAL record whose value the crash cut
//! off a value file ends the replay, and so does a hole (a WAL torn before a later one
//! whose link record says it follows). A flush's tables take their names only once the
//! values they point to are durable (`l0::Ingest::publish`), and a compaction starts only
//! once its inputs are durable, so with these rules what a repair after a crash rebuilds
//! is a prefix of the writes, as an open's would be, but for one case: two flushes' tables
//! both unsynced, the later written back whole by the kernel and the earlier not
//! (docs/design/core-engine.md, "A flush's tables are synced with its record").
//!
//! A full rewrite rather than LevelDB's "every table into level 0": tables that survive
//! from both sides of an interrupted compaction hold the same entries twice and their
//! sequence ranges overlap, which L0's newest-first search would misread, and duplicate
//! pointers would count a live blob record as garbage twice.
//!
//! The phases, in the order [`repair`] runs them (as LevelDB's `Repairer`): `scan` finds
//! the files and what the database no longer needed; `sources` reads tables, WALs and the
//! L0 parts kept outside tables into one merge; `rewrite` writes the newest version of
//! each key into new tables, keeps the value files a pointer reaches, and installs the new
//! manifest with the replaced files moved aside.

mod rewrite;
mod scan;
mod sources;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::Result;
use crate::filename::{self, FileType};
use crate::fs::Fs;
use crate::placement::Placement;
use crate::version::VersionEdit;
use crate::wal::{LogEvent, LogReader};
use crate::Options;

/// What [`repair`] found and did.
#[derive(Debug, Clone, Default)]
pub struct RepairReport {
    /// Tables read (whole or in part).
    pub tables_read: usize,
    /// Tables that could not be opened at all, and why.
    pub tables_lost: Vec<(PathBuf, String)>,
    /// Damaged blocks, records and files skipped: (file, offset, what).
    pub damage: Vec<(PathBuf, u64, String)>,
    /// Tables and WALs left out because the database's obsolete list names them: files
    /// it no longer needed whose deletion a crash undid, or had not reached (read, they
    /// could bring back keys deleted since).
    pub obsolete_files: usize,
    /// WAL records replayed.
    pub wal_records: u64,
    /// Parts of L0 kept outside tables (the matrix's RowTables) read, located by the
    /// newest L0 layout record a surviving manifest holds.
    pub l0_parts_read: usize,
    /// Keys in the repaired database.
    pub keys: u64,
    /// Tables written.
    pub tables_written: usize,
    /// Value files the repaired database keeps.
    pub value_files: usize,
    /// Where the replaced files went.
    pub moved_to: PathBuf,
    /// Entries the repair knows it could not bring back: those of damaged table blocks
    /// (a table's properties count its entries) and of tables that would not open (as the
    /// newest surviving manifest that names them counts them).
    pub entries_lost: u64,
    /// Data the repair dropped, one line each: a table that would not open, damaged table
    /// blocks, damaged WAL records inside a log. Not what a crash leaves (a WAL's torn
    /// tail) nor files the database no longer needed. Empty when nothing the database held
    /// durably was dropped; the `strata` tool then exits 0, else 2.
    pub dropped: Vec<String>,
}

impl RepairReport {
    /// Whether the repair dropped data the database held (see [`RepairReport::dropped`]).
    pub fn dropped_data(&self) -> bool {
        !self.dropped.is_empty()
    }
}

/// Deletes the database at `path` (its directories as `opts` places them): every file
/// strata names there (tables, WALs, value files, manifests, CURRENT, OPTIONS, temporary
/// files, the L0 layout's own file such as the matrix's region; the lock last). Other
/// files and the directories themselves stay, `lost/` too (a repair's set-aside files are
/// the user's to judge). The database must not be open.
///
/// # Errors
/// `Busy` if the database is open (in this process or another); I/O errors.
pub fn destroy(path: impl AsRef<Path>, opts: &Options) -> Result<()> {
    let dir = path.as_ref();
    let fs = opts.fs.clone();
    if !fs.exists(dir) {
        return Ok(());
    }
    // Where the database's manifest (or the OPTIONS file) says its files are, where the
    // options do not say.
    let lock_path = dir.join(filename::LOCK);
    let lock = fs.lock(&lock_path)?;
    let placement = crate::db::open::known_directories(dir, opts).placement;
    let mut manifests = Vec::new();
    for d in placement.dirs() {
        for name in fs.list(d).unwrap_or_default() {
            if let Some(FileType::Manifest(_)) = crate::registry::parse_file_name(&name) {
                manifests.push(d.join(name));
            }
        }
    }
    let own = l0_own_files(opts, &placement, &manifests);
    // CURRENT first: from then on no open takes what is left for a database.
    if fs.exists(&placement.current_path()) {
        fs.remove(&placement.current_path())?;
        fs.sync_dir(dir)?;
    }
    for d in placement.dirs() {
        for name in fs.list(d).unwrap_or_default() {
            match crate::registry::parse_file_name(&name) {
                Some(FileType::Lock) | None => {}
                Some(_) => fs.remove(&d.join(&name))?,
            }
        }
        fs.sync_dir(d)?;
    }
    for f in own.iter().filter(|f| fs.exists(f)) {
        fs.remove(f)?;
        if let Some(d) = f.parent() {
            fs.sync_dir(d)?;
        }
    }
    drop(lock);
    fs.remove(&lock_path)
}

/// Rebuilds the database at `path` (its directories as `opts` places them) from the
/// tables, WALs and value files that survive. The database must not be open.
///
/// # Errors
/// `Busy` if another process holds the database; I/O errors. Damage inside files is not
/// an error: it is skipped and listed in the report.
pub fn repair(path: impl AsRef<Path>, opts: &Options) -> Result<RepairReport> {
    let dir = path.as_ref();
    opts.validate()?;
    let (placement, _lock) = scan::lock_and_place(dir, opts)?;
    let mut r = Repairer {
        dir,
        opts,
        fs: opts.fs.clone(),
        placement,
        report: RepairReport {
            moved_to: dir.join("lost"),
            ..RepairReport::default()
        },
    };
    let found = r.find_files()?;
    let obsolete = r.read_obsolete();
    let mut sources = r.read_tables(&found, &obsolete)?;
    let values = sources::ValueLengths::measure(&*r.fs, &found)?;
    r.replay_wals(&found, &obsolete, &values, &mut sources)?;
    let l0_files = r.read_l0_parts(&found.manifests, &mut sources.children)?;
    let rebuilt = r.write_tables(sources, &values, found.max_number)?;
    let (kept_values, unreached) = r.keep_value_files(&found, &rebuilt.referenced)?;
    let mut replaced: Vec<PathBuf> = found.tables.iter().map(|t| t.0.clone()).collect();
    replaced.extend(found.wals.iter().map(|w| w.0.clone()));
    replaced.extend(found.manifests.iter().cloned());
    replaced.extend(found.range_files.iter().map(|r| r.0.clone()));
    replaced.extend(unreached);
    replaced.extend(l0_files);
    r.install(rebuilt, kept_values, replaced)?;
    Ok(r.report)
}

/// A repair in progress: what every phase reads (the database's directory, options and
/// placement) and the report they add to.
struct Repairer<'a> {
    dir: &'a Path,
    opts: &'a Options,
    fs: Arc<dyn Fs>,
    placement: Placement,
    report: RepairReport,
}

impl RepairReport {
    /// Notes damage skipped at `offset` of `file`.
    fn damaged(&mut self, file: &Path, offset: u64, what: String) {
        self.damage.push((file.to_path_buf(), offset, what));
    }
}

/// The manifests among `manifests`, oldest (lowest-numbered) first.
fn by_number(manifests: &[PathBuf]) -> Vec<&PathBuf> {
    let mut v: Vec<(u64, &PathBuf)> = manifests
        .iter()
        .filter_map(
            |p| match crate::registry::parse_file_name(&p.file_name()?.to_string_lossy()) {
                Some(FileType::Manifest(n)) => Some((n.0, p)),
                _ => None,
            },
        )
        .collect();
    v.sort_by_key(|m| m.0);
    v.into_iter().map(|(_, p)| p).collect()
}

/// The newest L0 layout record in `manifests` (the highest-numbered manifest that holds
/// one, read up to its damage), with the manifest it came from.
fn newest_l0_record(
    fs: &dyn crate::fs::Fs,
    manifests: &[PathBuf],
) -> Option<(PathBuf, crate::l0::L0Record)> {
    for p in by_number(manifests).into_iter().rev() {
        let Ok(bytes) = crate::fs::read_all(fs, p) else {
            continue;
        };
        let mut record = None;
        let mut reader = LogReader::new(bytes);
        while let LogEvent::Record { data, .. } = reader.next_event() {
            if let Some(r) = VersionEdit::decode(&data, crate::registry::registered())
                .ok()
                .and_then(|e| e.l0_layout)
            {
                record = Some((p.clone(), r));
            }
        }
        if record.is_some() {
            return record;
        }
    }
    None
}

/// The files a database's L0 layouts keep outside tables (the matrix's region and row
/// directory): the layout the newest manifest record names, and every layout this build
/// knows (the configured one first).
fn l0_own_files(opts: &Options, placement: &Placement, manifests: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some((_, rec)) = newest_l0_record(&*opts.fs, manifests) {
        let ctx = crate::l0::L0Context::new(crate::registry::LAYOUTS, opts, placement);
        if let Ok(l0) = crate::l0::from_record(&rec, &ctx) {
            out.extend(l0.own_files());
        }
    }
    for l0 in crate::l0::every_layout(crate::registry::LAYOUTS, opts, placement) {
        out.extend(l0.own_files());
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(p.clone()));
    out
}
