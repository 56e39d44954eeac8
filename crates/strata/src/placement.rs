//! [`Placement`]: which directory each kind of file lives in.
//!
//! Every file strata writes has a [`FileKind`]; the placement maps the kind to a [`PathId`],
//! and the path id to a directory. The database directory holds CURRENT, LOCK and manifests;
//! `wal_dir` (default: the database directory) holds WALs; L0 tables go to the database
//! directory and tables of levels >= 1 to `level_dir` (default: the database directory).
//! This is OHDB's "two disk components" and RocksDB's `wal_dir`/`db_paths`. Each table records
//! its path id in the manifest, so a table is found where it was written even if the options
//! change later. Later techniques add kinds (value-store segments, journals, the persistent
//! memory region) and path ids here, and nowhere else. Value-store files go to `value_dir`
//! (default: the database directory). With a `pmem_dir` (persistent memory, or a tmpfs
//! emulating it), L0 tables go there instead of the database directory (MatrixKV's
//! RocksDB-L0-NVM baseline).

use std::fmt;
use std::path::{Path, PathBuf};

use crate::filename::{self, FileNumber};

/// A directory slot, as persisted per table in the manifest. On-disk format: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct PathId(pub u8);

impl PathId {
    /// The database directory.
    pub const DB: PathId = PathId(0);
    /// The directory of tables of levels >= 1 (`Options::level_dir`).
    pub const LEVELS: PathId = PathId(1);
    /// The WAL directory (`Options::wal_dir`, or `pmem_dir` with `Options::wal_in_pmem`).
    /// Not persisted: WALs are found by listing every directory of the placement.
    pub const WAL: PathId = PathId(2);
    /// The value store's directory (`Options::value_dir`).
    pub const VALUES: PathId = PathId(3);
    /// The persistent-memory directory (`Options::pmem_dir`).
    pub const PMEM: PathId = PathId(4);
}

impl fmt::Display for PathId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What a file is, for placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A write-ahead log.
    Wal,
    /// A manifest, CURRENT, LOCK and their temporaries.
    Manifest,
    /// A table of level 0.
    L0Table,
    /// A table of a level >= 1.
    LevelTable,
    /// A value store's file (a blob file).
    Value,
}

impl FileKind {
    /// The kind of a table written for `level`.
    pub fn table(level: usize) -> FileKind {
        if level == 0 {
            FileKind::L0Table
        } else {
            FileKind::LevelTable
        }
    }
}

/// Maps file kinds to directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    db_dir: PathBuf,
    wal_dir: PathBuf,
    level_dir: PathBuf,
    value_dir: PathBuf,
    pmem_dir: PathBuf,
    /// Slots whose existing files are read from a directory the manifest records and the
    /// options leave unset ([`Placement::reading_recorded`]); new files of those kinds go
    /// where the options say.
    recorded: Vec<(PathId, PathBuf)>,
}

impl Placement {
    /// Placement for a database at `db_dir` with optional separate WAL and level directories.
    pub fn new(db_dir: &Path, wal_dir: Option<&Path>, level_dir: Option<&Path>) -> Self {
        Placement {
            db_dir: db_dir.to_path_buf(),
            wal_dir: wal_dir.unwrap_or(db_dir).to_path_buf(),
            level_dir: level_dir.unwrap_or(db_dir).to_path_buf(),
            value_dir: db_dir.to_path_buf(),
            pmem_dir: db_dir.to_path_buf(),
            recorded: Vec::new(),
        }
    }

    /// The same, reading the files already written under each slot of `dirs` from the
    /// directory given there (the manifest's record, for slots the options leave unset):
    /// a table or value file is found by its slot, and a WAL by listing every directory.
    /// New files still go where the options say: a slot the options leave unset writes to
    /// the database directory (path id [`PathId::DB`]), so no slot ever names two
    /// directories.
    #[must_use]
    pub fn reading_recorded(mut self, dirs: &[(PathId, PathBuf)]) -> Self {
        self.recorded = dirs.to_vec();
        self
    }

    /// Where the database at `db_dir` keeps its files under `opts` (its WAL, level and value
    /// directories).
    pub fn of(db_dir: &Path, opts: &crate::Options) -> Self {
        let wal_dir = if opts.wal_in_pmem {
            opts.pmem_dir.as_deref().or(opts.wal_dir.as_deref())
        } else {
            opts.wal_dir.as_deref()
        };
        Placement::new(db_dir, wal_dir, opts.level_dir.as_deref())
            .with_value_dir(opts.value_dir.as_deref())
            .with_pmem_dir(opts.pmem_dir.as_deref())
    }

    /// The same, with L0 tables (and persistent-memory regions) in `pmem_dir` (default: the
    /// database directory).
    #[must_use]
    pub fn with_pmem_dir(mut self, pmem_dir: Option<&Path>) -> Self {
        self.pmem_dir = pmem_dir.unwrap_or(&self.db_dir).to_path_buf();
        self
    }

    /// The same, with value-store files in `value_dir` (default: the database directory).
    #[must_use]
    pub fn with_value_dir(mut self, value_dir: Option<&Path>) -> Self {
        self.value_dir = value_dir.unwrap_or(&self.db_dir).to_path_buf();
        self
    }

    /// The path id new files of `kind` get. A kind whose directory is the database
    /// directory gets [`PathId::DB`], so a table's record does not depend on whether a
    /// separate directory was configured but happened to be the same.
    pub fn path_id(&self, kind: FileKind) -> PathId {
        let id = match kind {
            FileKind::Manifest => PathId::DB,
            FileKind::L0Table => PathId::PMEM,
            FileKind::Wal => PathId::WAL,
            FileKind::LevelTable => PathId::LEVELS,
            FileKind::Value => PathId::VALUES,
        };
        if id != PathId::DB && self.configured(id) == self.db_dir {
            PathId::DB
        } else {
            id
        }
    }

    /// The directory files of path id `id` are read from (unknown ids: the database
    /// directory): the one the options give, or the recorded one for a slot they leave
    /// unset.
    pub fn dir(&self, id: PathId) -> &Path {
        match self.recorded.iter().find(|(i, _)| *i == id) {
            Some((_, d)) => d,
            None => self.configured(id),
        }
    }

    /// The directory the options give slot `id`: where its new files go.
    fn configured(&self, id: PathId) -> &Path {
        match id {
            PathId::LEVELS => &self.level_dir,
            PathId::WAL => &self.wal_dir,
            PathId::VALUES => &self.value_dir,
            PathId::PMEM => &self.pmem_dir,
            _ => &self.db_dir,
        }
    }

    /// The directory new files of `kind` go to.
    pub fn dir_of(&self, kind: FileKind) -> &Path {
        self.configured(self.path_id(kind))
    }

    /// The database directory (CURRENT, LOCK, manifests).
    pub fn db_dir(&self) -> &Path {
        &self.db_dir
    }

    /// The WAL directory.
    pub fn wal_dir(&self) -> &Path {
        &self.wal_dir
    }

    /// Every distinct directory the options give (where new files go): what an open
    /// creates.
    pub fn write_dirs(&self) -> Vec<&Path> {
        let mut v = vec![self.db_dir.as_path()];
        for d in [
            &self.wal_dir,
            &self.level_dir,
            &self.value_dir,
            &self.pmem_dir,
        ] {
            if !v.contains(&d.as_path()) {
                v.push(d);
            }
        }
        v
    }

    /// Every distinct directory in use (the recorded ones read from included).
    pub fn dirs(&self) -> Vec<&Path> {
        let mut v = self.write_dirs();
        for (_, d) in &self.recorded {
            if !v.contains(&d.as_path()) {
                v.push(d);
            }
        }
        v
    }

    /// Full path of table `n` stored under path id `id`.
    pub fn table_path(&self, n: FileNumber, id: PathId) -> PathBuf {
        self.dir(id).join(filename::table_name(n))
    }

    /// Full path of WAL `n`.
    pub fn wal_path(&self, n: FileNumber) -> PathBuf {
        self.dir_of(FileKind::Wal).join(filename::wal_name(n))
    }

    /// Full path of manifest `n`.
    pub fn manifest_path(&self, n: FileNumber) -> PathBuf {
        self.dir_of(FileKind::Manifest)
            .join(filename::manifest_name(n))
    }

    /// Full path of CURRENT.
    pub fn current_path(&self) -> PathBuf {
        self.dir_of(FileKind::Manifest).join(filename::CURRENT)
    }
}

/// The directories a database keeps its files in, as its manifest records them
/// (docs/format/manifest.md, "Directories"): each slot whose directory is not the database
/// directory, with where the session that wrote the manifest put its files. A directory
/// inside the database directory is recorded relative to it (the database can be moved
/// with it), any other as an absolute path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Directories(pub Vec<(PathId, PathBuf)>);

/// The directory option of `opts` that names slot `id`'s directory, if set.
pub(crate) fn option_dir(opts: &crate::Options, id: PathId) -> Option<&Path> {
    match id {
        PathId::WAL => opts.wal_dir.as_deref(),
        PathId::LEVELS => opts.level_dir.as_deref(),
        PathId::VALUES => opts.value_dir.as_deref(),
        PathId::PMEM => opts.pmem_dir.as_deref(),
        _ => None,
    }
}

/// The slots a [`Directories`] record names, in the order it names them.
const RECORDED: [PathId; 4] = [PathId::WAL, PathId::LEVELS, PathId::VALUES, PathId::PMEM];

impl Directories {
    /// The directory recorded for `id`, resolved against `db_dir` (`None`: the database
    /// directory, or a slot the record does not name).
    pub fn get(&self, id: PathId, db_dir: &Path) -> Option<PathBuf> {
        if id == PathId::DB {
            return None;
        }
        self.0
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, p)| absolute(db_dir).join(p))
    }

    /// Where the database was when the record was written (its absolute path).
    pub fn database(&self) -> Option<&Path> {
        self.0
            .iter()
            .find(|(i, _)| *i == PathId::DB)
            .map(|(_, p)| p.as_path())
    }

    /// Whether the record was written by this database at `db_dir`, not by the database a
    /// copy (or a move) of it was made from: a directory outside the database directory is
    /// used only then (a copy that took the original's directories would replay its WALs,
    /// take its file numbers and delete its files).
    /// (The same directory reached by another path, through a symbolic link, is here too:
    /// the open's path resolves to the recorded one. A copy's or a moved database's does
    /// not.)
    pub fn written_here(&self, db_dir: &Path) -> bool {
        // (The record holds the path with its links resolved, as it was when written: the
        // open's path resolved now must be it. Resolving the recorded path now instead
        // would take a copy, that a link moved to since, for the original.)
        self.database().is_none_or(|d| {
            d == absolute(db_dir) || std::fs::canonicalize(db_dir).is_ok_and(|c| c == d)
        })
    }

    /// The recorded directories an open of the database at `db_dir` may read from: each
    /// one inside the database directory, and, if the record was written here, each one
    /// outside it.
    pub fn usable(&self, db_dir: &Path) -> Vec<(PathId, PathBuf)> {
        self.usable_by(db_dir, self.written_here(db_dir))
    }

    /// As [`Directories::usable`], with whether the record was written here given (`false`
    /// for a copy not yet opened for writes, wherever it is: its record is its original's).
    pub fn usable_by(&self, db_dir: &Path, here: bool) -> Vec<(PathId, PathBuf)> {
        self.0
            .iter()
            .filter(|(id, p)| *id != PathId::DB && (p.is_relative() || here))
            .map(|(id, p)| (*id, absolute(db_dir).join(p)))
            .collect()
    }

    /// What an open or a repair of a copy (or a moved database) says of slot `id`, which
    /// the database that wrote the record kept in `dir`, outside its directory.
    pub fn left_behind(&self, id: PathId, dir: &Path) -> String {
        format!(
            "the database at {} kept its {} in {}; this one is a copy of it, or was moved: \
             name the directory that holds its own ({})",
            self.database()
                .map_or_else(String::new, |d| d.display().to_string()),
            Self::what(id),
            dir.display(),
            Self::option_name(id),
        )
    }

    /// The option that names slot `id`'s directory.
    pub fn option_name(id: PathId) -> &'static str {
        match id {
            PathId::WAL => "wal_dir",
            PathId::LEVELS => "level_dir",
            PathId::VALUES => "value_dir",
            PathId::PMEM => "pmem_dir",
            _ => "the database directory",
        }
    }

    /// What kind of file slot `id` holds, for messages.
    pub fn what(id: PathId) -> &'static str {
        match id {
            PathId::WAL => "WALs",
            PathId::LEVELS => "tables of levels >= 1",
            PathId::VALUES => "value files",
            PathId::PMEM => "persistent-memory files (L0)",
            _ => "manifests",
        }
    }

    /// Encodes the record's payload: a count, then each slot's id and path.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        crate::coding::put_varint32(dst, self.0.len() as u32);
        for (id, p) in &self.0 {
            dst.push(id.0);
            crate::coding::put_length_prefixed(dst, p.as_os_str().as_encoded_bytes());
        }
    }

    /// Decodes a payload [`Directories::encode`] wrote (`None` if malformed).
    pub fn decode(mut src: &[u8]) -> Option<Directories> {
        let n = crate::coding::get_varint32(&mut src)?;
        if n > 16 {
            return None;
        }
        let mut v = Vec::new();
        for _ in 0..n {
            let (&id, rest) = src.split_first()?;
            src = rest;
            let p = crate::coding::get_length_prefixed(&mut src)?;
            let p = std::str::from_utf8(p).ok().map(PathBuf::from).or_else(|| {
                #[cfg(unix)]
                {
                    use std::os::unix::ffi::OsStrExt;
                    Some(PathBuf::from(std::ffi::OsStr::from_bytes(p)))
                }
                #[cfg(not(unix))]
                None
            })?;
            v.push((PathId(id), p));
        }
        src.is_empty().then_some(Directories(v))
    }
}

/// `p` made absolute against the working directory, `.` and `..` resolved by name (the
/// file system is not consulted; a path that cannot be made absolute is kept as it is).
pub(crate) fn absolute(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

impl Placement {
    /// What the manifest records of this placement: where the database is, and every slot
    /// whose files are read from another directory than the database directory.
    pub fn directories(&self) -> Directories {
        self.directories_where(|_, _| true)
    }

    /// [`Placement::directories`], keeping a recorded directory this placement reads from
    /// (one the options did not give) only while `in_use(slot, directory)` says files of
    /// that slot are still there: a database that left a directory stops naming it once
    /// its files are gone (an open then neither lists nor deletes in it).
    pub fn directories_where(&self, in_use: impl Fn(PathId, &Path) -> bool) -> Directories {
        let db = absolute(&self.db_dir);
        // The database's own path with its links resolved (`Directories::written_here`);
        // as given where it cannot be resolved.
        let resolved = std::fs::canonicalize(&self.db_dir).unwrap_or_else(|_| db.clone());
        let mut v = vec![(PathId::DB, resolved)];
        let mut slots: Vec<(PathId, &Path)> = RECORDED
            .iter()
            .map(|&id| (id, self.configured(id)))
            .collect();
        for (id, d) in &self.recorded {
            if in_use(*id, d) {
                if *id == PathId::WAL {
                    // The WALs of the last session, read from where it wrote them,
                    // beside the ones this session writes.
                    slots.push((PathId::WAL, d));
                } else if let Some(s) = slots.iter_mut().find(|(i, _)| i == id) {
                    s.1 = d;
                }
            }
        }
        for (id, dir) in slots {
            let dir = absolute(dir);
            if dir == db {
                continue;
            }
            let stored = match dir.strip_prefix(&db) {
                Ok(rel) => rel.to_path_buf(),
                Err(_) => dir,
            };
            if !v.contains(&(id, stored.clone())) {
                v.push((id, stored));
            }
        }
        Directories(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_to_their_directories() {
        let p = Placement::new(
            Path::new("/a"),
            Some(Path::new("/w")),
            Some(Path::new("/l")),
        );
        assert_eq!(p.dir_of(FileKind::Wal), Path::new("/w"));
        assert_eq!(p.dir_of(FileKind::Manifest), Path::new("/a"));
        assert_eq!(p.dir_of(FileKind::L0Table), Path::new("/a"));
        assert_eq!(p.path_id(FileKind::table(3)), PathId::LEVELS);
        assert_eq!(p.dir(PathId::LEVELS), Path::new("/l"));
        assert_eq!(p.dirs().len(), 3);
        // One directory: every table is recorded under the database directory's id.
        let one = Placement::new(Path::new("/a"), None, None);
        assert_eq!(one.path_id(FileKind::table(3)), PathId::DB);
        assert_eq!(one.path_id(FileKind::table(0)), PathId::DB);
        assert_eq!(one.dirs(), vec![Path::new("/a")]);
        // A table written under id 1 is looked for in level_dir even when reopened without
        // one (which then is the database directory).
        assert_eq!(one.dir(PathId::LEVELS), Path::new("/a"));
        // Persistent memory takes L0 tables, and only those.
        let pm = Placement::new(Path::new("/a"), None, None).with_pmem_dir(Some(Path::new("/pm")));
        assert_eq!(pm.path_id(FileKind::L0Table), PathId::PMEM);
        assert_eq!(pm.dir_of(FileKind::L0Table), Path::new("/pm"));
        assert_eq!(pm.path_id(FileKind::table(1)), PathId::DB);
        assert_eq!(pm.dir_of(FileKind::Wal), Path::new("/a"));
        assert_eq!(pm.dirs(), vec![Path::new("/a"), Path::new("/pm")]);
    }
}
