//! The obsolete list (`OBSOLETE`, docs/format/obsolete.md): the tables and WALs the
//! current version no longer needs that may still be on disk, written durably before any
//! of them is deleted.
//!
//! Open never reads it: the manifest says which files are live. It is for `repair`, which
//! has no manifest to go by. Deleting a compaction's inputs is not atomic: a crash can
//! undo some deletions and not others (a directory synced by another job in between, or
//! inputs in two directories). A compaction at the last level drops a deleted key's
//! tombstone together with the older values it hid; if the table with the tombstone is
//! gone and one with an older value survives, a repair that reads every table brings the
//! key back. With the list written before the first deletion and kept naming every file
//! until its deletion is durable, repair leaves out exactly the files a crash may have left
//! half-deleted, and reads the current version's tables, plus whatever newer tables the
//! crash left unnamed (a flush's or a compaction's outputs, whose inputs are then read too:
//! the same entries twice). LevelDB's and RocksDB's repairers have no such list ("not time
//! consistent").

use std::collections::BTreeSet;
use std::path::Path;

use crate::coding::{get_varint64, masked_crc, put_varint64};
use crate::error::{Error, Result};
use crate::fs::Fs;

/// The list's format version.
const VERSION: u8 = 1;

/// Tables and WALs by number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ObsoleteList {
    pub tables: BTreeSet<u64>,
    pub wals: BTreeSet<u64>,
}

impl ObsoleteList {
    /// Whether every file of `other` is in this list.
    pub fn covers(&self, other: &ObsoleteList) -> bool {
        other.tables.is_subset(&self.tables) && other.wals.is_subset(&self.wals)
    }

    /// Adds every file of `other`.
    pub fn extend(&mut self, other: &ObsoleteList) {
        self.tables.extend(&other.tables);
        self.wals.extend(&other.wals);
    }

    /// Adds `file` if it is a table or a WAL (the kinds a list names; a range-tombstone
    /// file is named with the tables).
    pub fn insert(&mut self, file: crate::filename::FileType) {
        use crate::filename::FileType;
        match file {
            FileType::Table(n) | FileType::Ranges(n) => self.tables.insert(n.0),
            FileType::Wal(n) => self.wals.insert(n.0),
            _ => false,
        };
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![VERSION];
        for set in [&self.tables, &self.wals] {
            put_varint64(&mut b, set.len() as u64);
            let mut prev = 0;
            for &n in set {
                put_varint64(&mut b, n - prev);
                prev = n;
            }
        }
        let crc = masked_crc(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes `bytes`; on damage, the offset where it was found and what it is.
    pub fn decode(bytes: &[u8]) -> std::result::Result<ObsoleteList, (u64, String)> {
        let Some(body_len) = bytes.len().checked_sub(4) else {
            return Err((
                0,
                format!("{} bytes: shorter than its checksum", bytes.len()),
            ));
        };
        let (body, crc) = bytes.split_at(body_len);
        let stored = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
        if masked_crc(body) != stored {
            return Err((body_len as u64, "checksum mismatch".into()));
        }
        let mut src = body;
        let bad = |src: &[u8], what: &str| ((body.len() - src.len()) as u64, what.to_string());
        match src.split_first() {
            Some((&VERSION, rest)) => src = rest,
            Some((v, _)) => return Err((0, format!("unknown format version {v}"))),
            None => return Err((0, "empty".into())),
        }
        let mut list = ObsoleteList::default();
        for set in [&mut list.tables, &mut list.wals] {
            let count = get_varint64(&mut src).ok_or_else(|| bad(src, "bad count"))?;
            let mut n = 0u64;
            for _ in 0..count {
                let delta = get_varint64(&mut src).ok_or_else(|| bad(src, "bad number"))?;
                n = n
                    .checked_add(delta)
                    .ok_or_else(|| bad(src, "number overflows"))?;
                set.insert(n);
            }
        }
        if !src.is_empty() {
            return Err(bad(src, "bytes after the list"));
        }
        Ok(list)
    }
}

/// Writes `list` as the obsolete list of the database in `dir`: a temporary file, synced,
/// renamed over the old list. Durable once `dir` is synced (the caller's); until then a
/// crash leaves the old list or the new one.
///
/// # Errors
/// I/O errors.
pub(crate) fn write_unsynced(fs: &dyn Fs, dir: &Path, list: &ObsoleteList) -> Result<()> {
    crate::fs::replace_file(fs, &dir.join(crate::filename::OBSOLETE), &list.encode())
}

/// The obsolete list of the database in `dir`, if it has one.
///
/// # Errors
/// I/O errors; `Corruption` (with file and offset) if it is damaged.
pub(crate) fn read(fs: &dyn Fs, dir: &Path) -> Result<Option<ObsoleteList>> {
    let path = dir.join(crate::filename::OBSOLETE);
    if !fs.exists(&path) {
        return Ok(None);
    }
    let bytes = crate::fs::read_all(fs, &path)?;
    ObsoleteList::decode(&bytes)
        .map(Some)
        .map_err(|(at, what)| Error::corruption(&path, at, format!("obsolete list: {what}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let list = ObsoleteList {
            tables: [3, 7, 1 << 40].into_iter().collect(),
            wals: [5].into_iter().collect(),
        };
        let b = list.encode();
        assert_eq!(ObsoleteList::decode(&b), Ok(list.clone()));
        assert_eq!(
            ObsoleteList::decode(&ObsoleteList::default().encode()),
            Ok(ObsoleteList::default())
        );
        // Every flipped byte and every cut is refused, never misread.
        for i in 0..b.len() {
            let mut d = b.clone();
            d[i] ^= 0x41;
            assert!(ObsoleteList::decode(&d).is_err(), "flip at {i}");
            assert!(ObsoleteList::decode(&b[..i]).is_err(), "cut at {i}");
        }
        assert!(list.covers(&ObsoleteList {
            tables: [7].into_iter().collect(),
            ..ObsoleteList::default()
        }));
        assert!(!list.covers(&ObsoleteList {
            wals: [6].into_iter().collect(),
            ..ObsoleteList::default()
        }));
    }
}
