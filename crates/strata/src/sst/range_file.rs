//! Range-tombstone files (`NNNNNN.rdel`, docs/format/range-tombstones.md): a table in the
//! format of every other (blocks, checksums, footer) whose entries are range tombstones,
//! keyed by (start, sequence, kind 4) with the range's end as the value. The manifest
//! holds the same tombstones; the file is what `repair` finds without a manifest, and what
//! checkpoints and backups copy.

use std::path::Path;
use std::sync::Arc;

use super::{Table, TableBuilder, TableOptions};
use crate::error::{Error, Result};
use crate::fs::{Fs, ReadAccess};
use crate::iter::InternalIterator;
use crate::key::{self, ValueKind};
use crate::range_del::{file_order, Tombstone};

/// The shape of a range-tombstone file: no filter (it is read whole), no compression.
fn options() -> TableOptions {
    TableOptions {
        bloom_bits_per_key: 0,
        ..TableOptions::default()
    }
}

/// Writes `tombstones` (any order) to `path`, synced if `sync` (else the caller syncs it
/// before anything names it). Returns the file's size.
///
/// # Errors
/// I/O errors; the file is then incomplete, for the caller to delete.
pub fn write(fs: &dyn Fs, path: &Path, tombstones: &[Tombstone], sync: bool) -> Result<u64> {
    let mut sorted: Vec<&Tombstone> = tombstones.iter().collect();
    sorted.sort_by(|a, b| file_order(a, b));
    let mut b = TableBuilder::new(fs.create(path)?, path.to_path_buf(), options());
    let mut k = Vec::new();
    for t in sorted {
        k.clear();
        key::append_internal_key(&mut k, &t.start, t.seq, ValueKind::RangeDelete);
        b.add(&k, &t.end)?;
    }
    let props = if sync {
        b.finish()?
    } else {
        b.finish_unsynced()?.0
    };
    Ok(props.file_size)
}

/// The tombstones of the file at `path`.
///
/// # Errors
/// `Corruption` naming the file for anything that is not a range-tombstone file; I/O
/// errors.
pub fn read(fs: &dyn Fs, path: &Path) -> Result<Vec<Tombstone>> {
    let file = fs.open_with(path, ReadAccess::Positional)?;
    let table = Arc::new(Table::open(file, path, None)?);
    let mut it = table.iter();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        let p = key::parse(it.key())
            .filter(|p| p.kind == ValueKind::RangeDelete)
            .ok_or_else(|| Error::corruption(path, 0, "an entry that is no range tombstone"))?;
        out.push(Tombstone {
            start: p.user_key.to_vec(),
            end: it.value().to_vec(),
            seq: p.seq,
        });
        it.next();
    }
    it.status()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;
    use crate::key::SeqNo;

    #[test]
    fn tombstones_round_trip() {
        let fs = MemFs::new();
        let p = Path::new("/db/000007.rdel");
        fs.create_dir_all(Path::new("/db")).unwrap();
        let list = vec![
            Tombstone {
                start: b"m".to_vec(),
                end: b"q".to_vec(),
                seq: SeqNo(4),
            },
            Tombstone {
                start: b"a".to_vec(),
                end: b"z".to_vec(),
                seq: SeqNo(9),
            },
            Tombstone {
                start: b"m".to_vec(),
                end: b"n".to_vec(),
                seq: SeqNo(12),
            },
        ];
        let size = write(&fs, p, &list, true).unwrap();
        assert_eq!(size, fs.file_size(p).unwrap());
        let mut want = list.clone();
        want.sort_by(file_order);
        assert_eq!(read(&fs, p).unwrap(), want);
        // A table of point entries is not one.
        let t = Path::new("/db/000008.rdel");
        let mut b = TableBuilder::new(fs.create(t).unwrap(), t.to_path_buf(), options());
        b.add(&key::internal_key(b"k", SeqNo(1), ValueKind::Put), b"v")
            .unwrap();
        b.finish().unwrap();
        assert!(read(&fs, t).is_err());
    }
}
