//! [`checkpoint`]: a consistent, openable copy of a live database in a new directory, as of
//! one instant (docs/design/checkpoints.md).
//!
//! The memtables are flushed first, so that the version current after the flush holds
//! every write acknowledged before the call; that version is pinned (its files stay while
//! the copy is made), and its tables and value files are linked (copied where the file
//! system makes no links) into a temporary directory beside the target, all in the one
//! directory whatever directories the database spreads its files over. A manifest naming
//! exactly those files, an empty WAL, CURRENT and OPTIONS follow, everything is synced,
//! and the temporary directory takes the target's name: a crash leaves either no target
//! or a complete one (and a temporary directory the next checkpoint to that target clears).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::DbInner;
use crate::error::{Error, ErrorKind, Result};
use crate::filename::{self, FileNumber};
use crate::fs::Fs;
use crate::placement::{PathId, Placement};
use crate::value::CheckpointCopy;
use crate::version::VersionEdit;
use crate::wal::LogWriter;

/// Bytes copied per read where a file is copied.
const COPY_CHUNK: usize = 1 << 20;

/// A database's files as of one instant, pinned while they are copied (a checkpoint's, a
/// backup's): the data files to link or copy, and what a copy of them needs of its own to
/// open (an empty WAL, a manifest naming exactly those files in the copy's one directory,
/// CURRENT, OPTIONS), written by [`Frozen::write_own_files`].
pub(crate) struct Frozen {
    /// Holds every file `files` names until the copy is made.
    version: Arc<crate::version::Version>,
    /// The data files: where each is now, its name in the copy, and whether it may be
    /// linked (a file that takes no more appends) or must be copied as it is now.
    pub files: Vec<FrozenFile>,
    edit: VersionEdit,
    record: crate::placement::Directories,
    manifest_number: FileNumber,
    wal_number: FileNumber,
    options: String,
    sequence: u64,
}

/// One data file of a [`Frozen`] set.
pub(crate) struct FrozenFile {
    pub from: PathBuf,
    pub name: String,
    pub link: bool,
}

/// Freezes `db`'s files as of now: flushes, pins the version after the flush, and waits
/// until its manifest records (and so its tables) are durable.
///
/// # Errors
/// `NotSupported` for a database whose files cannot be copied yet (see the design page)
/// or one opened read-only; the flush's errors.
pub(crate) fn freeze(db: &Arc<DbInner>) -> Result<Frozen> {
    db.check_writable()?;
    // Held until the version is pinned: a value store's GC step that moves values after
    // the flush (into the next memtable, which the copy leaves out) cannot remove the
    // files the flushed tables point into before the pin, since its removals wait for every
    // older snapshot.
    // (Refused before the flush too: a refused copy holds nothing.)
    refuse_unsupported(&super::lock(&db.versions).current())?;
    let hold = db.snapshot();
    super::flush::flush_and_wait(db)?;
    // The version after the flush, pinned, with what a manifest of it says; and the file
    // numbers the copy's own manifest and WAL take (from the database's counter).
    // With them, the newest write the copy holds: every write before the oldest memtable
    // not yet flushed is in the version, none after it. (Read under the versions' lock: a
    // flush installs its version and hands its memtable over within one hold of it. Not
    // from the version's files alone: the matrix's rows name no sequences, and the
    // memtable the flush took holds writes made after this call began.)
    let (version, mut edit, manifest_number, wal_number, flushed) = {
        let versions = super::lock(&db.versions);
        let version = versions.current();
        let flushed = {
            let st = super::lock(&db.state);
            st.imms.front().unwrap_or(&st.mem).writes_after()
        };
        let edit = versions.snapshot_edit();
        let m = versions.new_file_number();
        let w = versions.new_file_number();
        (version, edit, m, w, flushed)
    };
    // (At least every write the tables hold and every write acknowledged before the call:
    // a deletion a compaction dropped leaves no entry.)
    let sequence = (0..version.num_levels())
        .flat_map(|l| version.files(l).iter().map(|f| f.largest_seq.0))
        .max()
        .unwrap_or(0)
        .max(
            version
                .ranges
                .files()
                .flat_map(|f| f.tombstones.iter().map(|t| t.seq.0))
                .max()
                .unwrap_or(0),
        )
        .max(hold.sequence().0)
        .max(flushed);
    drop(hold);
    refuse_unsupported(&version)?;
    // A flush's tables are synced with its manifest record, by the sync thread, after the
    // version naming them is installed: every record up to the pinned version durable, its
    // tables are (a linked table shares their bytes, synced or not).
    let sync = super::lock(&db.versions).manifest_sync();
    sync.wait_all()?;
    let name_of = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let mut files = Vec::new();
    // Every file in the copy's one directory.
    for (_, f) in &mut edit.new_files {
        let from = db.placement.table_path(f.number, f.path_id);
        f.path_id = PathId::DB;
        files.push(FrozenFile {
            name: name_of(&from),
            from,
            link: true,
        });
    }
    // Range-tombstone files are written whole and never change: linked.
    for f in &edit.new_range_files {
        let from = db
            .placement
            .db_dir()
            .join(crate::filename::ranges_name(FileNumber(f.number)));
        files.push(FrozenFile {
            name: name_of(&from),
            from,
            link: true,
        });
    }
    edit.new_value_files
        .retain(|f| f.format.checkpoint_copy(f) != CheckpointCopy::LeaveOut);
    for f in &mut edit.new_value_files {
        let from = f.path(&db.placement);
        f.path_id = PathId::DB;
        files.push(FrozenFile {
            name: name_of(&from),
            from,
            link: matches!(f.format.checkpoint_copy(f), CheckpointCopy::Link),
        });
    }
    edit.kept = None;
    edit.log_number = Some(wal_number);
    edit.next_file_number = Some(FileNumber(wal_number.0 + 1));
    let record = original_directories(db);
    let mut opts = db.opts.clone();
    (opts.wal_dir, opts.level_dir, opts.value_dir, opts.pmem_dir) = (None, None, None, None);
    opts.wal_in_pmem = false;
    let options = super::open::options_file_text(&opts, &record);
    Ok(Frozen {
        version,
        files,
        edit,
        record,
        manifest_number,
        wal_number,
        options,
        sequence,
    })
}

impl Frozen {
    /// Writes the copy's own files into `dir`: an empty WAL, the manifest and CURRENT, what
    /// L0 keeps outside tables (the matrix's region), and OPTIONS, each synced (not the
    /// directory).
    ///
    /// # Errors
    /// I/O errors.
    pub fn write_own_files(&self, fs: &Arc<dyn Fs>, dir: &Path) -> Result<()> {
        let staging = Placement::new(dir, None, None);
        // (A plain empty file, synced: a log file made for appends takes room ahead that
        // its close gives back without a sync, and a copy must be of the size it records.)
        let mut wal = fs.create(&staging.wal_path(self.wal_number))?;
        wal.sync()?;
        drop(wal);
        write_manifest(
            &**fs,
            &self.record,
            &staging,
            self.manifest_number,
            &self.edit,
        )?;
        // What L0 keeps outside tables (the matrix's rows), as the pinned version names it.
        let before = fs.list(dir)?;
        self.version.l0.write_copy(fs, dir)?;
        let mut layouts: Vec<String> = fs
            .list(dir)?
            .into_iter()
            .filter(|n| !before.contains(n))
            .collect();
        layouts.sort();
        // The copy's OPTIONS says it holds every file in its directory, for as long as
        // CURRENT names this manifest and the layout's files are there.
        let mut options = self.options.clone();
        options.push_str(&super::open::copy_marker(
            &filename::manifest_name(self.manifest_number),
            &layouts,
        ));
        crate::fs::write_file_atomic(&**fs, &dir.join(filename::OPTIONS), options.as_bytes())
    }

    /// The last sequence the copy holds: every write up to it is in the copy, none after
    /// it. (Not the manifest's last sequence: a flush records the newest visible one,
    /// which may be a write of the next memtable, left out.)
    pub fn last_sequence(&self) -> u64 {
        self.sequence
    }
}

/// Writes a checkpoint of `db` to `dir`, which must not exist (its parent must).
///
/// # Errors
/// `InvalidArgument` if `dir` exists or has no parent; `NotSupported` for a database whose
/// files a checkpoint cannot copy yet (see the design page) or one opened read-only; the
/// flush's and the copies' I/O errors (the target is then not created).
pub(crate) fn checkpoint(db: &Arc<DbInner>, dir: &Path) -> Result<()> {
    // One at a time in a process: two checkpoints to one target share its temporary
    // directory (between processes, its lock: `claim_staging`).
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _one = crate::sync::lock(&ONE_AT_A_TIME);
    db.check_writable()?;
    let dir = &crate::placement::absolute(dir);
    let fs = &*db.fs;
    let parent = new_directory(fs, dir, "checkpoint")?;
    // (Refused before anything is made; `freeze` asks again once the version is pinned.)
    refuse_unsupported(&super::lock(&db.versions).current())?;
    let tmp = beside(dir, ".checkpoint-tmp");
    let claim = claim_staging(fs, &tmp, dir, "checkpoint")?;
    let frozen = freeze(db)?;
    let made = (|| -> Result<()> {
        for f in &frozen.files {
            let to = tmp.join(&f.name);
            if f.link {
                link_or_copy(fs, &f.from, &to)?;
            } else {
                copy(fs, &f.from, &to)?;
            }
        }
        frozen.write_own_files(&db.fs, &tmp)?;
        fs.sync_dir(&tmp)
    })();
    if let Err(e) = made {
        clear_staged(fs, &tmp).ok();
        return Err(e.context(format!("checkpoint {}", dir.display())));
    }
    drop(frozen);
    // (A rename onto a directory another process filled meanwhile fails, and the copy is
    // not taken for its. What is staged is cleared while the claim is held: once let go,
    // another process's copy may be staged there.)
    if let Err(e) = fs.rename(&tmp, dir) {
        clear_staged(fs, &tmp).ok();
        drop(claim);
        return Err(e.context(format!("checkpoint {}", dir.display())));
    }
    drop(claim);
    match parent {
        Some(p) => fs.sync_dir(&p),
        None => Ok(()),
    }
}

/// The file in a staging directory ([`claim_staging`]) that says whose it is: held
/// locked while the copy is made, it goes with the directory into the copy, where the
/// database takes it for its own lock.
const STAGING_LOCK: &str = "LOCK";

/// Claims the staging directory `tmp` of a copy into `dir` (a checkpoint, a restore),
/// for this process alone until the returned lock is dropped: made if missing, its lock
/// taken, what an earlier attempt that stopped left in it removed. A directory by that
/// name that holds files but no lock is no leftover of ours: refused, left as it is.
///
/// # Errors
/// `Busy` while another process makes a copy into `dir`; `InvalidArgument` for a
/// directory that is not a leftover; I/O errors.
pub(crate) fn claim_staging(
    fs: &dyn Fs,
    tmp: &Path,
    dir: &Path,
    what: &str,
) -> Result<Box<dyn crate::fs::FileLock>> {
    match fs.list(tmp) {
        Ok(names) if !names.is_empty() && !names.iter().any(|n| n == STAGING_LOCK) => {
            return Err(Error::invalid(format!(
                "{what} {}: {} exists and is not what an earlier {what} left (no {STAGING_LOCK} \
                 in it): left as it is; move it away or choose another target",
                dir.display(),
                tmp.display()
            )));
        }
        Ok(_) => {}
        Err(_) if fs.exists(tmp) => {
            return Err(Error::invalid(format!(
                "{what} {}: {} is a file, where the {what} would stage its copy",
                dir.display(),
                tmp.display()
            )));
        }
        Err(_) => fs.create_dir_all(tmp)?,
    }
    let lock = fs
        .lock(&tmp.join(STAGING_LOCK))
        .map_err(|e| match e.kind() {
            ErrorKind::Busy => Error::new(
                ErrorKind::Busy,
                format!(
                    "{what} {}: another {what} to it is under way",
                    dir.display()
                ),
            ),
            _ => e.context(format!("{what} {}", dir.display())),
        })?;
    clear_staged(fs, tmp)?;
    Ok(lock)
}

/// Removes what a copy staged in `tmp` (every file but its lock).
///
/// # Errors
/// `InvalidArgument` if it holds a directory (not ours); I/O errors.
pub(crate) fn clear_staged(fs: &dyn Fs, tmp: &Path) -> Result<()> {
    clear_files(fs, tmp, Some(STAGING_LOCK))
}

/// Where a copy into `dir` is made until it is whole: `dir`'s name and `suffix`, beside it.
pub(crate) fn beside(dir: &Path, suffix: &str) -> PathBuf {
    let mut n = dir.file_name().unwrap_or_default().to_os_string();
    n.push(suffix);
    dir.with_file_name(n)
}

/// Checks that `dir` (absolute) is a new directory whose parent exists, for a `what`
/// (a checkpoint, a restore); returns the parent.
///
/// # Errors
/// `InvalidArgument` naming what is wrong.
pub(crate) fn new_directory(fs: &dyn Fs, dir: &Path, what: &str) -> Result<Option<PathBuf>> {
    if fs.exists(dir) || fs.list(dir).is_ok() {
        return Err(Error::invalid(format!(
            "{what} {}: it exists ({what} goes to a new directory)",
            dir.display()
        )));
    }
    if dir.file_name().is_none() {
        return Err(Error::invalid(format!(
            "{what} {}: not a directory name",
            dir.display()
        )));
    }
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(p) = parent {
        if fs.list(p).is_err() {
            return Err(Error::invalid(format!(
                "{what} {}: its parent {} {}",
                dir.display(),
                p.display(),
                if fs.exists(p) {
                    "is not a directory"
                } else {
                    "does not exist"
                }
            )));
        }
    }
    // Not inside a database's directory: its repair would take the copy's files for its
    // own, and the copy is lost with it.
    if let Some(db) = dir
        .ancestors()
        .skip(1)
        .find(|a| fs.exists(&a.join(filename::CURRENT)))
    {
        return Err(Error::invalid(format!(
            "{what} {}: it is inside the database directory {}; {what} to a directory of \
             its own",
            dir.display(),
            db.display()
        )));
    }
    Ok(parent.map(Path::to_path_buf))
}

/// What a checkpoint cannot copy, refused before anything is written: an L0 whose layout
/// keeps data outside tables that it does not copy (`Level0::copies_own_files`; every
/// layout built copies its own), value files their store refuses
/// (`ValueFormat::checkpoint_copy`; a store that does not say how its files copy).
fn refuse_unsupported(v: &crate::version::Version) -> Result<()> {
    if !v.l0.copies_own_files() {
        return Err(Error::new(
            ErrorKind::NotSupported,
            format!(
                "checkpoint: the {:?} L0 layout keeps its data outside tables (in persistent \
                 memory), which a checkpoint does not copy yet",
                v.l0.kind()
            ),
        ));
    }
    for f in v.values.values() {
        if let CheckpointCopy::Refuse(why) = f.format.checkpoint_copy(f) {
            return Err(Error::new(
                ErrorKind::NotSupported,
                format!(
                    "checkpoint: the database holds files of the {}, which a checkpoint \
                     does not copy yet: {why}",
                    f.format.name()
                ),
            ));
        }
    }
    Ok(())
}

/// The directories record a checkpoint's manifest starts with: the original's, every
/// directory its options give named by its absolute path. The checkpoint is then, to an
/// open, a copy of the database that wrote the record: it reads nothing from those
/// directories (its files are all in its own), and an open that gives it one of them
/// while the original is still there is refused (`open::refuse_borrowed_directories`),
/// instead of writing its own files there under numbers the original uses, and deleting
/// the original's as files its manifest does not name.
fn original_directories(db: &DbInner) -> crate::placement::Directories {
    let rec = db.placement.directories();
    let base = crate::placement::absolute(db.placement.db_dir());
    crate::placement::Directories(
        rec.0
            .into_iter()
            .map(|(id, d)| {
                let d = if d.is_relative() { base.join(d) } else { d };
                (id, d)
            })
            .collect(),
    )
}

/// Writes the checkpoint's manifest (its directories `record`, then `edit`) and CURRENT,
/// synced, into `staging`.
fn write_manifest(
    fs: &dyn Fs,
    record: &crate::placement::Directories,
    staging: &Placement,
    number: FileNumber,
    edit: &VersionEdit,
) -> Result<()> {
    let mut w = LogWriter::new(fs.create(&staging.manifest_path(number))?);
    w.add_record(&crate::version::directories_record(record.clone()))?;
    w.add_record(&edit.encode())?;
    w.sync()?;
    let name = format!("{}\n", filename::manifest_name(number));
    crate::fs::write_file_atomic(fs, &staging.current_path(), name.as_bytes())
}

/// Links `from` as `to`, or copies it (synced) where the file system makes no link.
pub(crate) fn link_or_copy(fs: &dyn Fs, from: &Path, to: &Path) -> Result<()> {
    if fs.link(from, to).is_ok() {
        return Ok(());
    }
    copy(fs, from, to)
}

/// Copies `from` to `to` as it is now, synced.
pub(crate) fn copy(fs: &dyn Fs, from: &Path, to: &Path) -> Result<()> {
    let src = fs.open(from)?;
    let size = src.size();
    let mut out = fs.create(to)?;
    let mut at = 0u64;
    while at < size {
        let n = usize::try_from(size - at)
            .unwrap_or(COPY_CHUNK)
            .min(COPY_CHUNK);
        out.append(&src.read_at(at, n)?)?;
        at += n as u64;
    }
    out.sync()
}

/// Removes what an earlier checkpoint to the same target left in its temporary
/// directory `tmp` (a crash, or a failed copy); the directory itself stays, empty.
pub(crate) fn clear_stale(fs: &dyn Fs, tmp: &Path) -> Result<()> {
    clear_files(fs, tmp, None)
}

/// Removes every file in `tmp` but `keep`; refuses (`InvalidArgument`) a `tmp` that holds
/// a directory: no copy stages one, so it is no leftover of ours.
fn clear_files(fs: &dyn Fs, tmp: &Path, keep: Option<&str>) -> Result<()> {
    let Ok(names) = fs.list(tmp) else {
        return Ok(());
    };
    for n in names {
        let p: PathBuf = tmp.join(&n);
        if fs.list(&p).is_ok() {
            return Err(Error::invalid(format!(
                "{} holds a directory ({n}): not what a copy stages, left as it is",
                tmp.display()
            )));
        }
        if keep != Some(n.as_str()) {
            fs.remove(&p)?;
        }
    }
    Ok(())
}
