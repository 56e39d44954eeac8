//! File names inside the database directories (docs/format/filenames.md).
//!
//! `NNNNNN.log` (WAL), `NNNNNN.sst` (table), `NNNNNN.rdel` (range tombstones), `NNNNNN.blob` (blob file), `NNNNNN.vlog` (value-log segment), `MANIFEST-NNNNNN`, `CURRENT`, `LOCK`, `OPTIONS`, `OBSOLETE`,
//! `*.dbtmp` (temporary, deleted at open). Numbers come from one counter, so a number names
//! exactly one file whatever its kind.

use std::fmt;

/// A file number: unique per database across all file kinds. Persisted in the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FileNumber(pub u64);

impl fmt::Display for FileNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:06}", self.0)
    }
}

/// Which value store a value file or pointer belongs to: the store's tag, as pointers and
/// manifest records carry it (docs/format/value-pointer.md). Never renumbered. Which stores
/// exist, and the extension of each one's files, is the store registry's (`vstore`): a
/// value file's name is parsed there (`vstore::parse_file_name`), above this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StoreId(pub u8);

/// What a file in a database directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileType {
    /// A write-ahead log.
    Wal(FileNumber),
    /// A table.
    Table(FileNumber),
    /// A range-tombstone file (`crate::range_del`).
    Ranges(FileNumber),
    /// A value store's file (`NNNNNN.<extension>`, the extension naming the store: `.blob`,
    /// `.vlog`).
    Value(FileNumber, StoreId),
    /// A manifest.
    Manifest(FileNumber),
    /// The pointer to the live manifest.
    Current,
    /// The lock file.
    Lock,
    /// The options of the most recent open (informational; docs/format/options.md).
    Options,
    /// The tables and WALs no longer live that may still be on disk, for `repair`
    /// (docs/format/obsolete.md).
    Obsolete,
    /// A temporary file.
    Temp,
}

/// The WAL file name for `n`.
pub fn wal_name(n: FileNumber) -> String {
    format!("{n}.log")
}

/// The table file name for `n`.
pub fn table_name(n: FileNumber) -> String {
    format!("{n}.sst")
}

/// The range-tombstone file name for `n`.
pub fn ranges_name(n: FileNumber) -> String {
    format!("{n}.rdel")
}

/// The name of a value store's file `n` whose store's files end in `.ext`.
pub fn value_name(n: FileNumber, ext: &str) -> String {
    format!("{n}.{ext}")
}

/// The manifest file name for `n`.
pub fn manifest_name(n: FileNumber) -> String {
    format!("MANIFEST-{n}")
}

/// Name of the file that names the live manifest.
pub const CURRENT: &str = "CURRENT";
/// Name of the lock file.
pub const LOCK: &str = "LOCK";
/// Name of the file recording the options of the most recent open.
pub const OPTIONS: &str = "OPTIONS";
/// Name of the obsolete list (`crate::obsolete`).
pub const OBSOLETE: &str = "OBSOLETE";

/// Parses a file name of a kind every database has (all but value files: `parse_with`
/// takes the stores' extensions); `None` for others.
pub fn parse(name: &str) -> Option<FileType> {
    parse_with(name, &|_| None)
}

/// Parses a file name, a value file's through `store_of` (the store whose files end in the
/// extension given); `None` for names strata does not own.
pub fn parse_with(name: &str, store_of: &dyn Fn(&str) -> Option<StoreId>) -> Option<FileType> {
    let num = |s: &str| {
        s.parse::<u64>()
            .ok()
            .filter(|_| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .map(FileNumber)
    };
    match name {
        CURRENT => return Some(FileType::Current),
        LOCK => return Some(FileType::Lock),
        OPTIONS => return Some(FileType::Options),
        OBSOLETE => return Some(FileType::Obsolete),
        _ => {}
    }
    if name.ends_with(".dbtmp") {
        return Some(FileType::Temp);
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return num(n).map(FileType::Manifest);
    }
    if let Some(n) = name.strip_suffix(".log") {
        return num(n).map(FileType::Wal);
    }
    if let Some(n) = name.strip_suffix(".sst") {
        return num(n).map(FileType::Table);
    }
    if let Some(n) = name.strip_suffix(".rdel") {
        return num(n).map(FileType::Ranges);
    }
    let (n, ext) = name.rsplit_once('.')?;
    let store = store_of(ext)?;
    num(n).map(|n| FileType::Value(n, store))
}

/// The number of a numbered file of any extension (`NNNNNN.ext`): what a value file's name
/// gives without knowing the stores.
pub fn number_of(name: &str) -> Option<FileNumber> {
    let (n, _) = name.split_once('.')?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .then(|| n.parse().ok().map(FileNumber))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let n = FileNumber(42);
        assert_eq!(parse(&wal_name(n)), Some(FileType::Wal(n)));
        assert_eq!(parse(&table_name(n)), Some(FileType::Table(n)));
        assert_eq!(parse(&manifest_name(n)), Some(FileType::Manifest(n)));
        assert_eq!(parse("CURRENT"), Some(FileType::Current));
        assert_eq!(parse("OBSOLETE"), Some(FileType::Obsolete));
        assert_eq!(parse("CURRENT.dbtmp"), Some(FileType::Temp));
        assert_eq!(parse("OPTIONS"), Some(FileType::Options));
        assert_eq!(parse("OPTIONS.dbtmp"), Some(FileType::Temp));
        assert_eq!(parse("x.sst"), None);
        assert_eq!(parse(".log"), None);
        assert_eq!(parse("+1.log"), None);
        assert_eq!(wal_name(FileNumber(1234567)), "1234567.log");
        // A value file's extension names its store (the registry's, given).
        let store_of = |ext: &str| (ext == "blob").then_some(StoreId(1));
        assert_eq!(
            parse_with("000042.blob", &store_of),
            Some(FileType::Value(n, StoreId(1)))
        );
        assert_eq!(parse("000042.blob"), None);
        assert_eq!(parse_with("000042.nosuchstore", &store_of), None);
        assert_eq!(number_of("000042.blob"), Some(n));
        assert_eq!(number_of("x42.blob"), None);
    }
}
