//! [`BackupEngine`]: incremental backups of live databases in a directory of their own
//! (docs/design/backups.md; the directory's format: docs/format/backup.md).
//!
//! A backup is the files of a checkpoint (`db/checkpoint.rs`, [`freeze`]): the data files
//! (tables, value files) go to `shared/`, each under its name, size and CRC-32C, so that a
//! file already there from an earlier backup is not copied again; the files a copy needs of
//! its own (manifest, CURRENT, OPTIONS, an empty WAL) go to `private/`, named after the
//! backup. The backup exists once its description, `meta/ID`, is in place: written last,
//! under a temporary name, synced, renamed. A crash before that leaves files no
//! description names, which the next open of the directory removes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::db::checkpoint::{self, Frozen};
use crate::error::{Error, ErrorKind, Result};
use crate::fs::{FileLock, Fs};

const SHARED: &str = "shared";
const PRIVATE: &str = "private";
const META: &str = "meta";
/// In `meta/`: the largest id a deleted backup had, so that no later backup takes it again.
const LAST_ID: &str = "LAST";
/// In `meta/`: the checksums the newest backup computed of the files it took, by the
/// source file's identity (`Fs::file_identity`), so that the next backup does not read
/// an unchanged file again (docs/format/backup.md).
const DIGESTS: &str = "DIGESTS";
/// A file being written; removed at open.
const TMP: &str = ".tmp";
/// Bytes read or copied at a time.
const CHUNK: usize = 1 << 20;

/// One backup, as its description says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupInfo {
    /// Its number: 1 for a directory's first backup, then one more than the largest ever
    /// given (in use, or deleted: `meta/LAST`).
    pub id: u64,
    /// When it was taken, seconds since the Unix epoch.
    pub created: u64,
    /// The last sequence number it holds.
    pub sequence: u64,
    /// The files a restore writes.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Of those, what this backup added to the directory (the rest it shares with
    /// earlier backups).
    pub copied_files: usize,
    pub copied_bytes: u64,
}

/// One file of a backup.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    shared: bool,
    /// Its name under `shared/` or `private/`.
    stored: String,
    /// Its name in a restored database.
    name: String,
    size: u64,
    crc: u32,
}

/// A backup's description (`meta/ID`).
#[derive(Debug, Clone)]
struct Meta {
    info: BackupInfo,
    /// The database's directory when it was taken (a restore there is refused).
    source: PathBuf,
    entries: Vec<Entry>,
}

/// A directory of backups (RocksDB's `BackupEngine`). One engine at a time uses a
/// directory (it holds the directory's `LOCK`).
pub struct BackupEngine {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    /// Held by every operation: one at a time (a purge's garbage collection must not meet
    /// a backup being written, nor two backups take one id).
    busy: std::sync::Mutex<()>,
    _lock: Box<dyn FileLock>,
}

impl std::fmt::Debug for BackupEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BackupEngine({})", self.dir.display())
    }
}

impl BackupEngine {
    /// Opens (creating it if needed) the backup directory `dir` on the real file system.
    ///
    /// # Errors
    /// As [`BackupEngine::open_in`].
    pub fn open(dir: impl AsRef<Path>) -> Result<BackupEngine> {
        BackupEngine::open_in(dir, Arc::new(crate::fs::RealFs))
    }

    /// Opens (creating it if needed) the backup directory `dir` on `fs`, and removes what
    /// an interrupted backup, restore or purge left there: files being written, and files
    /// no backup's description names.
    ///
    /// # Errors
    /// `Busy` if another engine holds the directory; I/O errors. (While a description is
    /// damaged, only files being written are removed.)
    pub fn open_in(dir: impl AsRef<Path>, fs: Arc<dyn Fs>) -> Result<BackupEngine> {
        if dir.as_ref().as_os_str().is_empty() {
            return Err(Error::invalid(
                "backup directory: an empty path names no directory",
            ));
        }
        let dir = crate::placement::absolute(dir.as_ref());
        // Not a database's directory (they would share its LOCK), nor a new one inside a
        // database's (a repair of it would take the backups' files for its own; one made
        // there before is still opened, to be moved).
        let new = !fs.exists(&dir.join(META));
        if let Some(db) = dir
            .ancestors()
            .find(|a| fs.exists(&a.join(crate::filename::CURRENT)))
            .filter(|db| *db == dir || new)
        {
            return Err(Error::invalid(format!(
                "backup directory {}: {} a database directory ({}); keep backups in a \
                 directory of their own",
                dir.display(),
                if db == dir { "it is" } else { "it is inside" },
                db.display()
            )));
        }
        // The directories durable before any backup is written in them (every open: an
        // earlier one may have stopped between making and syncing them).
        crate::fs::create_dir_durable(&*fs, &dir)?;
        for d in [SHARED, PRIVATE, META] {
            fs.create_dir_all(&dir.join(d))?;
        }
        fs.sync_dir(&dir)?;
        if let Some(p) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs.sync_dir(p)?;
        }
        let lock = fs.lock(&dir.join("LOCK")).map_err(|e| {
            Error::new(
                e.kind(),
                if e.kind() == ErrorKind::Busy {
                    format!(
                        "backup directory {}: in use by another backup engine (its LOCK is \
                         held)",
                        dir.display()
                    )
                } else {
                    format!("backup directory {}: {}", dir.display(), e.message())
                },
            )
        })?;
        let engine = BackupEngine {
            fs,
            dir,
            busy: std::sync::Mutex::new(()),
            _lock: lock,
        };
        engine.collect_garbage()?;
        Ok(engine)
    }

    /// Backs `db` up: its state as of one instant during the call (every write
    /// acknowledged before the call is in it), sharing the files earlier backups hold.
    ///
    /// # Errors
    /// `NotSupported` where a checkpoint is (a database opened read-only); I/O errors (the backup is then not made; what it wrote
    /// goes at the next open).
    pub fn create_backup(&self, db: &crate::Db) -> Result<BackupInfo> {
        let _one = crate::sync::lock(&self.busy);
        let fs = &*self.fs;
        let id = match self.ids()?.last().copied().max(self.last_deleted_id()?) {
            None => 1,
            Some(l) => l.checked_add(1).ok_or_else(|| {
                Error::invalid(format!(
                    "backup directory {}: no backup id is left after {l}",
                    self.dir.display()
                ))
            })?,
        };
        let frozen: Frozen = checkpoint::freeze(&db.inner)?;
        let src_fs = &*db.inner.fs;
        let mut entries = Vec::new();
        let (mut copied_files, mut copied_bytes) = (0, 0);
        let shared = self.dir.join(SHARED);
        let have: BTreeSet<String> = fs.list(&shared)?.into_iter().collect();
        let known = self.read_digests();
        let mut digests = Vec::new();
        for f in &frozen.files {
            // (Only a file that takes no more writes, whose identity then stands for its
            // bytes; asked before it is read.)
            let identity = if f.link {
                src_fs.file_identity(&f.from)
            } else {
                None
            };
            let from = f.from.to_string_lossy().into_owned();
            // (Opened only to be read: a file whose checksums are known is not, unless it
            // must be copied.)
            let mut opened = None;
            let mut src = || -> Result<Arc<dyn crate::fs::RandomAccessFile>> {
                if opened.is_none() {
                    opened = Some(src_fs.open_with(&f.from, crate::fs::ReadAccess::default())?);
                }
                Ok(opened.clone().expect("opened above"))
            };
            let cached = identity
                .and_then(|i| known.get(&(i, from.clone())))
                .copied()
                .filter(|&(s, _, _)| src_fs.file_size(&f.from).is_ok_and(|now| now == s));
            let (size, crc, digest) = match cached {
                Some(c) => c,
                None => {
                    let file = src()?;
                    let size = file.size();
                    let (crc, digest) = digests_of(&*file, size)?;
                    (size, crc, digest)
                }
            };
            if let Some(i) = identity {
                digests.push((i, size, crc, digest, from));
            }
            // (Shared by name, size and two checksums: files of another database in the
            // same directory may have the same name and size.)
            let stored = format!("{}.{size}.{crc:08x}.{digest:016x}", f.name);
            if !have.contains(&stored) {
                let to = shared.join(&stored);
                copy_checked(&*src()?, size, crc, fs, &to, &f.from)?;
                copied_files += 1;
                copied_bytes += size;
            }
            entries.push(Entry {
                shared: true,
                stored,
                name: f.name.clone(),
                size,
                crc,
            });
        }
        // The copy's own files, written in a directory of their own first (they are made
        // by name), then moved under the backup's names.
        let own = self.dir.join(format!("staging{TMP}"));
        checkpoint::clear_stale(fs, &own)?;
        fs.create_dir_all(&own)?;
        frozen.write_own_files(&self.fs, &own)?;
        let mut names = fs.list(&own)?;
        names.sort();
        for name in names {
            let from = own.join(&name);
            let file = fs.open(&from)?;
            let size = file.size();
            let crc = crc_of(&*file, size)?;
            drop(file);
            let stored = format!("{id}-{name}");
            fs.rename(&from, &self.dir.join(PRIVATE).join(&stored))?;
            copied_files += 1;
            copied_bytes += size;
            entries.push(Entry {
                shared: false,
                stored,
                name,
                size,
                crc,
            });
        }
        fs.sync_dir(&shared)?;
        fs.sync_dir(&self.dir.join(PRIVATE))?;
        let info = BackupInfo {
            id,
            created: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            sequence: frozen.last_sequence(),
            files: entries.len(),
            bytes: entries.iter().fold(0u64, |a, e| a.saturating_add(e.size)),
            copied_files,
            copied_bytes,
        };
        let meta = Meta {
            info: info.clone(),
            source: crate::placement::absolute(db.inner.placement.db_dir()),
            entries,
        };
        let path = self.meta_path(id);
        let tmp = path.with_file_name(format!("{id}{TMP}"));
        let mut w = fs.create(&tmp)?;
        w.append(meta.encode().as_bytes())?;
        w.sync()?;
        drop(w);
        fs.rename(&tmp, &path)?;
        fs.sync_dir(&self.dir.join(META))?;
        drop(frozen);
        // (Only a hint for the next backup: one lost or not written makes it read.)
        self.write_digests(&digests).ok();
        Ok(info)
    }

    /// What `meta/DIGESTS` holds: by source identity and path, the size and checksums
    /// the newest backup took; empty if missing or damaged.
    #[allow(clippy::type_complexity)]
    fn read_digests(&self) -> std::collections::HashMap<(u128, String), (u64, u32, u64)> {
        let mut out = std::collections::HashMap::new();
        let Ok(bytes) = crate::fs::read_all(&*self.fs, &self.dir.join(META).join(DIGESTS)) else {
            return out;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            return out;
        };
        // The last line: `end CRC`, the CRC-32C of every byte before it.
        let Some((body, last)) = text.trim_end_matches('\n').rsplit_once('\n') else {
            return out;
        };
        let whole = last
            .strip_prefix("end ")
            .and_then(|c| u32::from_str_radix(c, 16).ok())
            .is_some_and(|c| c == crc32c::crc32c(body.as_bytes()));
        if !whole {
            return out;
        }
        for line in body.lines().skip(1) {
            let mut it = line.splitn(5, ' ');
            let parsed = (|| {
                let identity = u128::from_str_radix(it.next()?, 16).ok()?;
                let size = it.next()?.parse().ok()?;
                let crc = u32::from_str_radix(it.next()?, 16).ok()?;
                let digest = u64::from_str_radix(it.next()?, 16).ok()?;
                let path = it.next()?.to_string();
                Some(((identity, path), (size, crc, digest)))
            })();
            match parsed {
                Some((k, v)) => {
                    out.insert(k, v);
                }
                None => return std::collections::HashMap::new(),
            }
        }
        out
    }

    /// Writes `meta/DIGESTS` whole (under a temporary name, then renamed; not synced: a
    /// copy a power cut damaged reads as none).
    fn write_digests(&self, digests: &[(u128, u64, u32, u64, String)]) -> Result<()> {
        let mut body = String::from("strata backup digests\n");
        for (identity, size, crc, digest, path) in digests {
            if path.contains('\n') {
                continue;
            }
            body.push_str(&format!(
                "{identity:032x} {size} {crc:08x} {digest:016x} {path}\n"
            ));
        }
        let body = body.trim_end_matches('\n').to_string();
        let text = format!("{body}\nend {:08x}\n", crc32c::crc32c(body.as_bytes()));
        let path = self.dir.join(META).join(DIGESTS);
        let tmp = path.with_file_name(format!("{DIGESTS}{TMP}"));
        let mut w = self.fs.create(&tmp)?;
        w.append(text.as_bytes())?;
        w.flush()?;
        drop(w);
        self.fs.rename(&tmp, &path)
    }

    /// Every backup whose description reads, oldest first (those whose description is
    /// damaged: [`BackupEngine::damaged`]).
    ///
    /// # Errors
    /// I/O errors.
    pub fn list(&self) -> Result<Vec<BackupInfo>> {
        let _one = crate::sync::lock(&self.busy);
        let mut out = Vec::new();
        for id in self.ids()? {
            match self.meta(id) {
                Ok(m) => out.push(m.info),
                Err(e) if e.kind() == ErrorKind::Corruption => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The backups whose description does not read, with why: no restore can use them,
    /// and while one is there an open removes no file no readable description names (the
    /// damaged one may name it). `delete` removes one.
    ///
    /// # Errors
    /// I/O errors.
    pub fn damaged(&self) -> Result<Vec<(u64, Error)>> {
        let _one = crate::sync::lock(&self.busy);
        let mut out = Vec::new();
        for id in self.ids()? {
            match self.meta(id) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Corruption => out.push((id, e)),
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Checks backup `id`: every file it names is there, of its size and CRC-32C (each is
    /// read whole).
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown backup; `Corruption` naming the first file missing,
    /// short, long or damaged; I/O errors.
    pub fn verify(&self, id: u64) -> Result<()> {
        let _one = crate::sync::lock(&self.busy);
        let meta = self.meta(id)?;
        for e in &meta.entries {
            let (path, f) = self.open_stored(id, e)?;
            if crc_of(&*f, e.size)? != e.crc {
                return Err(Error::new(
                    ErrorKind::Corruption,
                    format!(
                        "backup {id}: {} ({}) is damaged: its whole-file checksum does not \
                         match",
                        e.name,
                        path.display()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Restores backup `id` into `target`, a new directory (its parent must exist): a
    /// database that opens as the backed-up one was at the backup's instant, all its files
    /// in `target` (open it without directory options). Each file is checked against its
    /// size and CRC-32C as it is copied; a crash leaves either no `target` or a whole one.
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown backup, a `target` that exists, or the directory
    /// the backed-up database was in (its other directories may hold newer files that an
    /// open there would read: restore elsewhere); `Corruption` for a damaged file; I/O
    /// errors.
    pub fn restore(&self, id: u64, target: impl AsRef<Path>) -> Result<()> {
        let _one = crate::sync::lock(&self.busy);
        let fs = &*self.fs;
        let meta = self.meta(id)?;
        let target = crate::placement::absolute(target.as_ref());
        if target == meta.source {
            return Err(Error::invalid(format!(
                "restore {}: backup {id} was taken of the database there, whose other \
                 directories (WALs, levels, values) may hold files newer than the backup \
                 that an open there would read: restore to a new directory",
                target.display()
            )));
        }
        if target.starts_with(&self.dir) {
            return Err(Error::invalid(format!(
                "restore {}: inside the backup directory {}",
                target.display(),
                self.dir.display()
            )));
        }
        let parent = checkpoint::new_directory(fs, &target, "restore")?;
        let tmp = checkpoint::beside(&target, ".restore-tmp");
        let claim = checkpoint::claim_staging(fs, &tmp, &target, "restore")?;
        let made = (|| -> Result<()> {
            for e in &meta.entries {
                let (from, src) = self.open_stored(id, e)?;
                copy_checked(&*src, e.size, e.crc, fs, &tmp.join(&e.name), &from)?;
            }
            fs.sync_dir(&tmp)
        })();
        // (What is staged is cleared while the claim is held: once let go, another
        // process's restore may be staged there.)
        let made = made.and_then(|()| fs.rename(&tmp, &target));
        if let Err(e) = made {
            checkpoint::clear_staged(fs, &tmp).ok();
            drop(claim);
            return Err(e.context(format!("restore of backup {id} to {}", target.display())));
        }
        drop(claim);
        match parent {
            Some(p) => fs.sync_dir(&p),
            None => Ok(()),
        }
    }

    /// Deletes backup `id`, and the files no other backup shares.
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown backup; I/O errors.
    pub fn delete(&self, id: u64) -> Result<()> {
        let _one = crate::sync::lock(&self.busy);
        if !self.ids()?.contains(&id) {
            return Err(Error::invalid(format!(
                "no backup {id} in {}",
                self.dir.display()
            )));
        }
        self.note_deleted(&[id])?;
        // The description first: from then on the backup is gone, and what it alone held
        // is garbage (removed now, or by the next open should this stop halfway).
        self.fs.remove(&self.meta_path(id))?;
        self.fs.sync_dir(&self.dir.join(META))?;
        self.collect_garbage()
    }

    /// Deletes every backup but the newest `keep`; returns how many it deleted.
    ///
    /// # Errors
    /// As [`BackupEngine::delete`].
    pub fn purge(&self, keep: usize) -> Result<usize> {
        let _one = crate::sync::lock(&self.busy);
        // (Counting the backups whose description reads: a damaged one is no backup to
        // keep in place of a good one.)
        let ids: Vec<u64> = self
            .ids()?
            .into_iter()
            .filter(|&id| self.meta(id).is_ok())
            .collect();
        let old = ids.len().saturating_sub(keep);
        self.note_deleted(&ids[..old])?;
        for &id in &ids[..old] {
            self.fs.remove(&self.meta_path(id))?;
        }
        if old > 0 {
            self.fs.sync_dir(&self.dir.join(META))?;
            self.collect_garbage()?;
        }
        Ok(old)
    }

    /// The largest id a deleted backup had (`meta/LAST`), if one was ever deleted that
    /// was the largest then.
    ///
    /// # Errors
    /// `Corruption` for a damaged record (no id could then be known to be free); I/O errors.
    fn last_deleted_id(&self) -> Result<Option<u64>> {
        let path = self.dir.join(META).join(LAST_ID);
        if !self.fs.exists(&path) {
            return Ok(None);
        }
        let text = crate::fs::read_all(&*self.fs, &path)?;
        // `ID CRC\n`: the id in decimal and the CRC-32C of those digits (a flipped digit
        // still parses, and would give an id out again).
        std::str::from_utf8(&text)
            .ok()
            .and_then(|t| t.strip_suffix('\n'))
            .and_then(|t| t.split_once(' '))
            .filter(|(id, crc)| {
                u32::from_str_radix(crc, 16).ok() == Some(crc32c::crc32c(id.as_bytes()))
            })
            .and_then(|(id, _)| id.parse().ok())
            .map(Some)
            .ok_or_else(|| {
                Error::corruption(
                    &path,
                    0,
                    "damaged record of the largest id a deleted backup had: no new backup \
                     id is known to be free (write in its place an id larger than any this \
                     directory ever gave, and its CRC-32C: `ID CRC\\n`)",
                )
            })
    }

    /// Before the descriptions of `ids` are removed: when the largest id in use is among
    /// them, records it (`meta/LAST`, written whole under a temporary name, synced,
    /// renamed), so that the next backup does not take it again.
    ///
    /// # Errors
    /// I/O errors (nothing is deleted then).
    fn note_deleted(&self, ids: &[u64]) -> Result<()> {
        let Some(&largest) = self.ids()?.last() else {
            return Ok(());
        };
        if !ids.contains(&largest) || self.last_deleted_id()? >= Some(largest) {
            return Ok(());
        }
        let meta = self.dir.join(META);
        let tmp = meta.join(format!("{LAST_ID}{TMP}"));
        let mut w = self.fs.create(&tmp)?;
        let id = largest.to_string();
        let crc = crc32c::crc32c(id.as_bytes());
        w.append(format!("{id} {crc:08x}\n").as_bytes())?;
        w.sync()?;
        drop(w);
        self.fs.rename(&tmp, &meta.join(LAST_ID))?;
        self.fs.sync_dir(&meta)
    }

    /// The backups' ids, ascending.
    fn ids(&self) -> Result<Vec<u64>> {
        let mut ids: Vec<u64> = self
            .fs
            .list(&self.dir.join(META))?
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn meta_path(&self, id: u64) -> PathBuf {
        self.dir.join(META).join(id.to_string())
    }

    /// Backup `id`'s file `e`, opened: `Corruption` if it is missing or not of its size.
    fn open_stored(
        &self,
        id: u64,
        e: &Entry,
    ) -> Result<(PathBuf, Arc<dyn crate::fs::RandomAccessFile>)> {
        let path = self.stored_path(e);
        let f = self.fs.open(&path).map_err(|err| {
            Error::corruption(
                &path,
                0,
                format!("backup {id}: {} is missing ({})", e.name, err.message()),
            )
        })?;
        if f.size() != e.size {
            return Err(Error::corruption(
                &path,
                0,
                format!(
                    "backup {id}: {} holds {} bytes, not {}",
                    e.name,
                    f.size(),
                    e.size
                ),
            ));
        }
        Ok((path, f))
    }

    fn stored_path(&self, e: &Entry) -> PathBuf {
        self.dir
            .join(if e.shared { SHARED } else { PRIVATE })
            .join(&e.stored)
    }

    fn meta(&self, id: u64) -> Result<Meta> {
        let path = self.meta_path(id);
        if !self.fs.exists(&path) {
            return Err(Error::invalid(format!(
                "no backup {id} in {}",
                self.dir.display()
            )));
        }
        let text = crate::fs::read_all(&*self.fs, &path)?;
        Meta::decode(&text)
            .filter(|m| m.info.id == id)
            .ok_or_else(|| Error::corruption(&path, 0, "damaged backup description"))
    }

    /// Removes files being written, and files no description names (none of the latter
    /// while a description cannot be read: it might name them).
    fn collect_garbage(&self) -> Result<()> {
        let fs = &*self.fs;
        let mut shared = BTreeSet::new();
        let mut private = BTreeSet::new();
        let mut damaged = None;
        for id in self.ids()? {
            match self.meta(id) {
                Ok(m) => {
                    for e in m.entries {
                        if e.shared {
                            shared.insert(e.stored);
                        } else {
                            private.insert(e.stored);
                        }
                    }
                }
                Err(e) => damaged = Some(e),
            }
        }
        checkpoint::clear_stale(fs, &self.dir.join(format!("staging{TMP}"))).ok();
        for (d, names) in [
            (META, None),
            (SHARED, Some(&shared)),
            (PRIVATE, Some(&private)),
        ] {
            let dir = self.dir.join(d);
            for n in fs.list(&dir)? {
                let p = dir.join(&n);
                if n.ends_with(TMP) {
                    if fs.list(&p).is_ok() {
                        // (One holding a directory is not ours: left as it is.)
                        checkpoint::clear_stale(fs, &p).ok();
                    } else {
                        fs.remove(&p)?;
                    }
                } else if damaged.is_none()
                    && names.is_some_and(|s| !s.contains(&n))
                    && fs.list(&p).is_err()
                {
                    // (A directory here is not ours: left as it is.)
                    fs.remove(&p)?;
                }
            }
        }
        // (A damaged description is reported by `list` and `verify`; `delete` removes it.)
        let _ = damaged;
        Ok(())
    }
}

impl Meta {
    fn encode(&self) -> String {
        use std::fmt::Write as _;
        let i = &self.info;
        let mut s = String::from("strata backup\nformat 1\n");
        let _ = writeln!(s, "id {}", i.id);
        let _ = writeln!(s, "created {}", i.created);
        let _ = writeln!(s, "sequence {}", i.sequence);
        let _ = writeln!(s, "copied {} {}", i.copied_files, i.copied_bytes);
        let _ = writeln!(
            s,
            "source {}",
            hex(self.source.to_string_lossy().as_bytes())
        );
        for e in &self.entries {
            let _ = writeln!(
                s,
                "file {} {} {} {} {:08x}",
                if e.shared { "shared" } else { "private" },
                e.stored,
                e.name,
                e.size,
                e.crc
            );
        }
        let crc = crc32c::crc32c(s.as_bytes());
        let _ = writeln!(s, "crc32c {crc:08x}");
        s
    }

    fn decode(bytes: &[u8]) -> Option<Meta> {
        let text = std::str::from_utf8(bytes).ok()?;
        let text = text.strip_suffix('\n')?;
        let body_end = text.rfind('\n')? + 1;
        let (body, last) = text.split_at(body_end);
        let crc = u32::from_str_radix(last.strip_prefix("crc32c ")?, 16).ok()?;
        if crc32c::crc32c(body.as_bytes()) != crc {
            return None;
        }
        let mut lines = body.lines();
        if lines.next()? != "strata backup" || lines.next()? != "format 1" {
            return None;
        }
        let mut fields: BTreeMap<&str, &str> = BTreeMap::new();
        let mut entries = Vec::new();
        for l in lines {
            let (k, v) = l.split_once(' ')?;
            if k == "file" {
                let p: Vec<&str> = v.split(' ').collect();
                let [kind, stored, name, size, crc] = p[..] else {
                    return None;
                };
                entries.push(Entry {
                    shared: match kind {
                        "shared" => true,
                        "private" => false,
                        _ => return None,
                    },
                    stored: plain_name(stored)?.to_string(),
                    name: plain_name(name)?.to_string(),
                    size: size.parse().ok()?,
                    crc: u32::from_str_radix(crc, 16).ok()?,
                });
            } else {
                fields.insert(k, v);
            }
        }
        let num = |k: &str| fields.get(k)?.parse::<u64>().ok();
        let (cf, cb) = fields.get("copied")?.split_once(' ')?;
        let source = String::from_utf8(unhex(fields.get("source")?)?).ok()?;
        Some(Meta {
            info: BackupInfo {
                id: num("id")?,
                created: num("created")?,
                sequence: num("sequence")?,
                files: entries.len(),
                bytes: entries
                    .iter()
                    .try_fold(0u64, |a, e| a.checked_add(e.size))?,
                copied_files: cf.parse().ok()?,
                copied_bytes: cb.parse().ok()?,
            },
            source: PathBuf::from(source),
            entries,
        })
    }
}

/// `n` if it names a file in one directory (no separator, not `.` or `..`): a damaged or
/// crafted description must not make a restore write or read outside its directories.
fn plain_name(n: &str) -> Option<&str> {
    (!n.is_empty() && n != "." && n != ".." && !n.contains(['/', '\\', '\0'])).then_some(n)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The CRC-32C of the first `size` bytes of `f`.
fn crc_of(f: &dyn crate::fs::RandomAccessFile, size: u64) -> Result<u32> {
    digests_of(f, size).map(|(crc, _)| crc)
}

/// The CRC-32C and the XXH3-64 of the first `size` bytes of `f`.
fn digests_of(f: &dyn crate::fs::RandomAccessFile, size: u64) -> Result<(u32, u64)> {
    let mut crc = 0u32;
    let mut xxh = xxhash_rust::xxh3::Xxh3::new();
    let mut at = 0u64;
    while at < size {
        let n = usize::try_from(size - at).unwrap_or(CHUNK).min(CHUNK);
        f.read_with(at, n, &mut |b| {
            crc = crc32c::crc32c_append(crc, b);
            xxh.update(b);
        })?;
        at += n as u64;
    }
    Ok((crc, xxh.digest()))
}

/// Copies the first `size` bytes of `src` (read from `from`) to `to` on `fs`, synced,
/// under a temporary name until whole; `Corruption` if they do not have the CRC-32C
/// `crc` (nothing is left at `to` then).
fn copy_checked(
    src: &dyn crate::fs::RandomAccessFile,
    size: u64,
    crc: u32,
    fs: &dyn Fs,
    to: &Path,
    from: &Path,
) -> Result<()> {
    let mut tmp = to.as_os_str().to_os_string();
    tmp.push(TMP);
    let tmp = PathBuf::from(tmp);
    let mut out = fs.create(&tmp)?;
    let mut got = 0u32;
    let mut at = 0u64;
    while at < size {
        let n = usize::try_from(size - at).unwrap_or(CHUNK).min(CHUNK);
        let b = src.read_at(at, n)?;
        got = crc32c::crc32c_append(got, &b);
        out.append(&b)?;
        at += n as u64;
    }
    out.sync()?;
    drop(out);
    if got != crc {
        fs.remove(&tmp).ok();
        return Err(Error::new(
            ErrorKind::Corruption,
            format!(
                "{}: its bytes do not have the whole-file checksum recorded for it (damaged \
                 where it is, or changed while it was copied)",
                from.display()
            ),
        ));
    }
    fs.rename(&tmp, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_round_trips_and_damage_is_refused() {
        let m = Meta {
            info: BackupInfo {
                id: 7,
                created: 1_780_000_000,
                sequence: 42,
                files: 2,
                bytes: 150,
                copied_files: 1,
                copied_bytes: 50,
            },
            source: PathBuf::from("/data/db one"),
            entries: vec![
                Entry {
                    shared: true,
                    stored: "000012.sst.100.0000abcd".into(),
                    name: "000012.sst".into(),
                    size: 100,
                    crc: 0xabcd,
                },
                Entry {
                    shared: false,
                    stored: "7-CURRENT".into(),
                    name: "CURRENT".into(),
                    size: 50,
                    crc: 0x1234_5678,
                },
            ],
        };
        let text = m.encode();
        let back = Meta::decode(text.as_bytes()).unwrap();
        assert_eq!(back.info, m.info);
        assert_eq!(back.entries, m.entries);
        assert_eq!(back.source, m.source);
        for cut in 0..text.len() {
            assert!(
                Meta::decode(&text.as_bytes()[..cut]).is_none(),
                "cut at {cut}"
            );
        }
        let evil = text.replace("7-CURRENT", "../CURRENT");
        assert!(Meta::decode(evil.as_bytes()).is_none());
        let mut flipped = text.into_bytes();
        flipped[30] ^= 1;
        assert!(Meta::decode(&flipped).is_none());
    }
}
