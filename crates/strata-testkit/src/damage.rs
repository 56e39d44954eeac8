//! Damage a test does to a database's files on the real file system, as a crash or a disk
//! would.

use std::path::{Path, PathBuf};

use strata::internals::wal::{LogEvent, LogReader};

/// The manifest in `db_dir` (the first found: the tests that call this have one).
///
/// # Panics
/// If the directory has none.
pub fn manifest(db_dir: &Path) -> PathBuf {
    std::fs::read_dir(db_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("MANIFEST-")
        })
        .expect("a manifest")
}

/// Makes the last manifest record that adds tables (a flush's edit) the manifest's last
/// record, and flips a bit in the middle of its payload: a synced edit damaged since, which
/// an open drops, keeping the files it may have named.
///
/// # Panics
/// If no record adds tables, or on I/O errors.
pub fn last_flush_record(db_dir: &Path) {
    let manifest = manifest(db_dir);
    let mut bytes = std::fs::read(&manifest).unwrap();
    let mut last = None;
    let mut reader = LogReader::new(bytes.clone());
    while let LogEvent::Record { offset, data } = reader.next_event() {
        let edit = strata::internals::version::decode_edit(&data).unwrap();
        if !edit.new_files.is_empty() {
            last = Some((offset as usize, data.len()));
        }
    }
    let (offset, len) = last.expect("a record adding tables");
    // (The records after it, cut off, as a crash right after the flush would have left it.)
    bytes.truncate(offset + 7 + len);
    bytes[offset + 7 + len / 2] ^= 0x20;
    std::fs::write(&manifest, &bytes).unwrap();
}
