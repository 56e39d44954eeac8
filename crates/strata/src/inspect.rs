//! Reading strata's files without opening the database, for tools (the `strata` command's
//! `sst-dump`, `wal-dump` and `manifest-dump`): each dump writes what a file holds as text
//! and returns the damage it met, every instance, not only the first (file and offset).
//!
//! Keys and values are written through the caller's `show` (escaped text, hex, ...).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::{Fs, ReadAccess, RealFs};
use crate::iter::InternalIterator;
use crate::key::{self, ValueKind};
use crate::sst::Table;
use crate::version::VersionEdit;
use crate::vstore::ValuePointer;
use crate::wal::{LogEvent, LogReader};
use crate::WriteBatch;

/// Damage found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file.
    pub file: PathBuf,
    /// Where in it.
    pub offset: u64,
    /// What is wrong.
    pub what: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // An engine error already names its file (and offset): name it once.
        let file = self.file.display().to_string();
        if self.what.contains(&file) {
            return f.write_str(&self.what);
        }
        write!(f, "{file} at offset {}: {}", self.offset, self.what)
    }
}

/// What a table dump shows besides its properties and block list.
#[derive(Debug, Clone, Copy, Default)]
pub struct TableDump {
    /// Every entry: user key, sequence, kind and value (reads and verifies every block).
    pub entries: bool,
    /// Read every data block and verify its checksum.
    pub verify: bool,
}

/// An error writing the dump's output (never the file being read: a closed pipe is the
/// reader's doing, not the table's).
fn io(e: std::io::Error) -> Error {
    Error::io("writing", Path::new("the output"), e)
}

fn show_value(kind: ValueKind, value: &[u8], show: &dyn Fn(&[u8]) -> String) -> String {
    match kind {
        ValueKind::Delete => String::new(),
        ValueKind::Put => show(value),
        ValueKind::RangeDelete => format!("(deletes up to {})", show(value)),
        ValueKind::Expiring => match crate::key::split_expiring(value) {
            Some((at, v)) => format!("{} (expires at {at} ms)", show(v)),
            None => "(bad expiring entry: shorter than its expiry)".to_string(),
        },
        ValueKind::Pointer => match ValuePointer::decode(value) {
            Ok(p) => format!(
                "-> value file {} offset {} size {}",
                p.file, p.offset, p.size
            ),
            Err(e) => format!("-> bad pointer ({e})"),
        },
    }
}

/// Writes table `path`'s properties, its data blocks (offset, size, index key) and, if
/// asked, its entries; with `verify` or `entries` reads every data block, verifying its
/// checksum. Returns the blocks that failed.
///
/// # Errors
/// A table that does not open (footer, index or properties damaged), or output that cannot
/// be written.
pub fn dump_table(
    path: &Path,
    what: TableDump,
    show: &dyn Fn(&[u8]) -> String,
    out: &mut dyn Write,
) -> Result<Vec<Problem>> {
    let fs = RealFs::new();
    let file = fs.open_with(path, ReadAccess::Positional)?;
    let table = Arc::new(Table::open(file, path, None)?);
    let p = table.properties();
    writeln!(out, "table {}", path.display()).map_err(io)?;
    writeln!(
        out,
        "  entries {} (deletions {}, expiring {}), keys {} B, values {} B, sequences {}..={}",
        p.num_entries,
        p.num_deletions,
        p.num_expiring,
        p.raw_key_size,
        p.raw_value_size,
        p.smallest_seq,
        p.largest_seq
    )
    .map_err(io)?;
    writeln!(
        out,
        "  file {} B: data {} B in {} blocks, index {} B, filter {} B",
        p.file_size, p.data_size, p.num_data_blocks, p.index_size, p.filter_size
    )
    .map_err(io)?;
    let mut problems = Vec::new();
    for (i, (last, h)) in table.data_blocks()?.into_iter().enumerate() {
        let last = key::parse(&last).map_or_else(|| show(&last), |k| show(k.user_key));
        writeln!(
            out,
            "  block {i} at {} size {}, index key {last}",
            h.offset, h.size
        )
        .map_err(io)?;
        if !what.entries && !what.verify {
            continue;
        }
        let block = match table.read_verified(h) {
            Ok(b) => b,
            Err(e) => {
                writeln!(out, "    DAMAGED: {e}").map_err(io)?;
                problems.push(Problem {
                    file: path.to_path_buf(),
                    offset: h.offset,
                    what: e.to_string(),
                });
                continue;
            }
        };
        if !what.entries {
            continue;
        }
        let mut it = block.iter(key::compare);
        it.seek_to_first();
        while it.valid() {
            match key::parse(it.key()) {
                Some(k) => writeln!(
                    out,
                    "    {} @ {} {:?} {}",
                    show(k.user_key),
                    k.seq.0,
                    k.kind,
                    show_value(k.kind, it.value(), show)
                ),
                None => writeln!(out, "    (bad internal key {})", show(it.key())),
            }
            .map_err(io)?;
            it.next();
        }
        if let Err(e) = it.status() {
            problems.push(Problem {
                file: path.to_path_buf(),
                offset: h.offset,
                what: e.to_string(),
            });
        }
    }
    if what.verify || what.entries {
        // (The footer, the index and the properties were verified by opening the table.)
        writeln!(
            out,
            "verified: footer, index block, properties and {} data block checksums: {} \
             damaged",
            p.num_data_blocks,
            problems.len()
        )
        .map_err(io)?;
    }
    Ok(problems)
}

/// How a log's damage is marked when no record starts after it (a write cut short).
const AT_TAIL: &str = " (at the tail: no record starts after it)";

/// Walks the records of log file `path` (a WAL or a manifest), handing each to `record`;
/// returns the damage met (a torn tail is reported too: after a crash it is expected).
fn walk_log(
    path: &Path,
    out: &mut dyn Write,
    mut record: impl FnMut(&mut dyn Write, u64, Vec<u8>) -> std::io::Result<Option<String>>,
) -> Result<Vec<Problem>> {
    let data = crate::fs::read_all(&RealFs::new(), path)?;
    let mut reader = LogReader::new(data);
    let mut problems = Vec::new();
    let problem = |offset: u64, what: String| Problem {
        file: path.to_path_buf(),
        offset,
        what,
    };
    loop {
        match reader.next_event() {
            LogEvent::Record { data, offset } => {
                if let Some(bad) = record(out, offset, data).map_err(io)? {
                    problems.push(problem(offset, bad));
                }
            }
            LogEvent::End => break,
            LogEvent::Torn { offset } => {
                writeln!(out, "offset {offset}: torn tail (a record cut short)").map_err(io)?;
                problems.push(problem(offset, "torn tail".into()));
                break;
            }
            LogEvent::Corrupt {
                offset,
                reason,
                at_tail,
            } => {
                let tail = if at_tail { AT_TAIL } else { "" };
                writeln!(out, "offset {offset}: DAMAGED: {reason}{tail}").map_err(io)?;
                problems.push(problem(offset, format!("{reason}{tail}")));
            }
        }
    }
    Ok(problems)
}

/// Writes WAL `path`'s batches in order (offset, first sequence, entries). Returns the
/// damage met.
///
/// # Errors
/// A file that cannot be read, or output that cannot be written.
pub fn dump_wal(
    path: &Path,
    show: &dyn Fn(&[u8]) -> String,
    out: &mut dyn Write,
) -> Result<Vec<Problem>> {
    // A WAL starts with a record, the first of them its link record (an empty batch): a
    // file whose start reads as neither is no WAL (a table, a manifest, anything else).
    let data = crate::fs::read_all(&RealFs::new(), path)?;
    let first = match LogReader::new(data).next_event() {
        LogEvent::Record { data, .. } => WriteBatch::decode(data).is_ok(),
        LogEvent::End => true, // empty: a WAL just created
        _ => false,
    };
    if !first {
        return Err(Error::corruption(
            path,
            0,
            "not a WAL: its start reads as no log record holding a write batch",
        ));
    }
    walk_log(path, out, |out, offset, data| {
        let batch = match WriteBatch::decode(data) {
            Ok(b) => b,
            Err(e) => {
                writeln!(out, "offset {offset}: DAMAGED batch: {e}")?;
                return Ok(Some(format!("bad batch: {e}")));
            }
        };
        if batch.is_empty() {
            writeln!(
                out,
                "offset {offset}: link record, sequence {}",
                batch.sequence().0
            )?;
            return Ok(None);
        }
        writeln!(
            out,
            "offset {offset}: batch at sequence {}, {} entries",
            batch.sequence().0,
            batch.len()
        )?;
        for e in batch.iter() {
            match e {
                Ok(e) => writeln!(
                    out,
                    "  {:?} {} {}",
                    e.kind,
                    show(e.key),
                    show_value(e.kind, e.value, show)
                )?,
                Err(e) => {
                    writeln!(out, "  DAMAGED entry: {e}")?;
                    return Ok(Some(format!("bad entry: {e}")));
                }
            }
        }
        Ok(None)
    })
}

/// Writes manifest `path`'s edits in order. Returns the damage met.
///
/// # Errors
/// A file that cannot be read, or output that cannot be written.
pub fn dump_manifest(
    path: &Path,
    show: &dyn Fn(&[u8]) -> String,
    out: &mut dyn Write,
) -> Result<Vec<Problem>> {
    walk_log(path, out, |out, offset, data| {
        match VersionEdit::decode(&data, crate::registry::registered()) {
            Ok(edit) => {
                writeln!(out, "offset {offset}:")?;
                write_edit(out, &edit, show)?;
            }
            Err(e) => {
                writeln!(out, "offset {offset}: DAMAGED edit: {e}")?;
                return Ok(Some(format!("bad edit: {e}")));
            }
        }
        Ok(None)
    })
}

/// One edit, a field per line, keys shown as `show` shows them (as `scan` does).
fn write_edit(
    out: &mut dyn Write,
    e: &VersionEdit,
    show: &dyn Fn(&[u8]) -> String,
) -> std::io::Result<()> {
    let user = |k: &[u8]| key::parse(k).map_or_else(|| show(k), |p| show(p.user_key));
    if !e.features.is_empty() {
        writeln!(out, "  features {}", e.features.join(", "))?;
    }
    if let Some(v) = e.format_version {
        writeln!(out, "  format version {v}")?;
    }
    if let Some(d) = &e.directories {
        if let Some(db) = d.database() {
            writeln!(out, "  database at {}", db.display())?;
        }
        if d.0
            .iter()
            .all(|(id, _)| *id == crate::placement::PathId::DB)
        {
            writeln!(out, "  directories: every file in the database directory")?;
        }
        for (id, p) in
            d.0.iter()
                .filter(|(id, _)| *id != crate::placement::PathId::DB)
        {
            writeln!(
                out,
                "  directory of {}: {} ({})",
                crate::placement::Directories::what(*id),
                p.display(),
                crate::placement::Directories::option_name(*id)
            )?;
        }
    }
    if let Some(l) = &e.l0_layout {
        writeln!(
            out,
            "  L0 layout {} ({} state bytes)",
            l.layout,
            l.state.len()
        )?;
    }
    for (name, v) in [
        ("log number", e.log_number.map(|n| n.0)),
        ("next file number", e.next_file_number.map(|n| n.0)),
        ("last sequence", e.last_sequence.map(|s| s.0)),
    ] {
        if let Some(v) = v {
            writeln!(out, "  {name} {v}")?;
        }
    }
    for (level, k) in &e.compact_pointers {
        writeln!(out, "  compact pointer L{level} {}", user(k))?;
    }
    for (level, n) in &e.deleted_files {
        writeln!(out, "  delete L{level} table {n}")?;
    }
    for (level, f) in &e.new_files {
        writeln!(
            out,
            "  add L{level} table {} ({} B, {} entries, {} deletions, sequences {}..={}): {} .. {}{}{}",
            f.number,
            f.size,
            f.num_entries,
            f.num_deletions,
            f.smallest_seq.0,
            f.largest_seq.0,
            user(&f.smallest),
            user(&f.largest),
            if f.oldest_value_file == 0 {
                String::new()
            } else {
                format!(", oldest value file {}", f.oldest_value_file)
            },
            if f.expiry.entries == 0 {
                String::new()
            } else {
                format!(
                    ", {} expiring (the latest at {} ms)",
                    f.expiry.entries, f.expiry.latest
                )
            }
        )?;
    }
    for f in &e.new_value_files {
        writeln!(
            out,
            "  add value file {} ({}, {} B, {} records, garbage {} records / {} B)",
            f.number,
            f.format.name(),
            f.size,
            f.records,
            f.garbage_records,
            f.garbage_bytes
        )?;
    }
    for n in &e.deleted_value_files {
        writeln!(out, "  delete value file {n}")?;
    }
    for (n, records, bytes) in &e.value_garbage {
        writeln!(
            out,
            "  garbage in value file {n}: {records} records, {bytes} B"
        )?;
    }
    if let Some(k) = &e.kept {
        writeln!(out, "  kept files {:?}: {}", k.files, k.reason)?;
    }
    Ok(())
}

/// Verifies every checksum of every live file of the database at `dir` (its directories
/// as `opts` places them) without opening it: the manifest's edits, every data block of
/// every live table, every record of every live value file, and every record of the WALs
/// recovery would replay (a torn tail of the newest WAL is what a crash leaves, and is not
/// counted). Returns every problem found; writes a line per file checked to `out`.
///
/// # Errors
/// A directory that holds no database (no `CURRENT`), or output that cannot be written.
pub fn check(dir: &Path, opts: &crate::Options, out: &mut dyn Write) -> Result<Vec<Problem>> {
    let fs = RealFs::new();
    let known = crate::db::open::known_directories(dir, opts);
    let placement = known.placement.clone();
    let raw = crate::fs::read_all(&fs, &placement.current_path())?;
    let current = String::from_utf8_lossy(&raw).trim().to_string();
    let manifest = dir.join(&current);
    let mut problems = Vec::new();
    // What an open takes CURRENT for: a manifest's name and a newline (without it the
    // write was cut short, and the open refuses it).
    let named = std::str::from_utf8(&raw)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .and_then(crate::filename::parse)
        .is_some_and(|t| matches!(t, crate::filename::FileType::Manifest(_)));
    if !named {
        problems.push(Problem {
            file: placement.current_path(),
            offset: 0,
            what: format!(
                "CURRENT is not a manifest's name and a newline (it holds {:?}): an open \
                 refuses it; `strata repair` rewrites it",
                String::from_utf8_lossy(&raw)
            ),
        });
        if current.is_empty() || !fs.exists(&manifest) {
            return Ok(problems);
        }
    }
    let live = replay_manifest(&manifest, &mut problems)?;
    writeln!(out, "manifest {}", manifest.display()).map_err(io)?;
    check_kept(&live, &manifest, &mut problems);
    check_live_files(&live, &fs, &placement, &mut problems, out)?;
    check_l0(&live, opts, &placement, &manifest, &mut problems, out)?;
    check_obsolete(&live, &fs, dir, &mut problems, out)?;
    check_wals(
        &live,
        &fs,
        &placement,
        known.record.is_some(),
        &mut problems,
        out,
    )?;
    Ok(problems)
}

/// What the manifest names, replayed edit by edit.
#[derive(Default)]
struct Live {
    tables: std::collections::BTreeMap<u64, crate::version::FileMeta>,
    values: std::collections::BTreeMap<u64, crate::vstore::ValueFile>,
    /// Range-tombstone files, with the tombstones the manifest holds for each.
    ranges: std::collections::BTreeMap<u64, crate::range_del::RangeFile>,
    /// The oldest WAL recovery replays.
    log_number: u64,
    /// Files an open kept after dropping a damaged record.
    kept: Option<crate::version::KeptFiles>,
    l0_record: Option<crate::l0::L0Record>,
    /// The last record's: the WALs synced then, every one after a clean close.
    wal_sizes: Vec<(u64, u64)>,
}

/// Replays `manifest`: the live tables and value files, the oldest WAL needed, what L0
/// keeps outside tables; each edit that does not decode is a problem.
fn replay_manifest(manifest: &Path, problems: &mut Vec<Problem>) -> Result<Live> {
    let mut live = Live::default();
    problems.extend(walk_log(
        manifest,
        &mut std::io::sink(),
        |_, offset, data| match VersionEdit::decode(&data, crate::registry::registered()) {
            Ok(e) => {
                if let Some(k) = e.kept {
                    live.kept = (!k.files.is_empty() || !k.reason.is_empty()).then_some(k);
                }
                for (_, n) in &e.deleted_files {
                    live.tables.remove(&n.0);
                }
                for (_, f) in e.new_files {
                    live.tables.insert(f.number.0, f);
                }
                for n in &e.deleted_value_files {
                    live.values.remove(n);
                }
                for f in e.new_value_files {
                    live.values.insert(f.number, f);
                }
                for n in &e.deleted_range_files {
                    live.ranges.remove(n);
                }
                for f in e.new_range_files {
                    live.ranges.insert(f.number, f);
                }
                // (A retired range file stays live for the checks: its file is kept.)
                if let Some(n) = e.log_number {
                    live.log_number = n.0;
                }
                // (The last record's: the WALs synced then, every one after a clean close.)
                live.wal_sizes = e.wal_sizes.clone();
                if e.l0_layout.is_some() {
                    live.l0_record = e.l0_layout;
                }
                Ok(None)
            }
            Err(e) => Ok(Some(format!("bad edit at {offset}: {e}"))),
        },
    )?);
    Ok(live)
}

/// Files an open kept, unnamed, after it dropped a damaged manifest record.
fn check_kept(live: &Live, manifest: &Path, problems: &mut Vec<Problem>) {
    if let Some(k) = &live.kept {
        // An open dropped a damaged manifest record: the files it may have named are kept,
        // unnamed, until a repair merges them back.
        let names: Vec<String> = k.files.iter().map(|n| format!("{n:06}")).collect();
        problems.push(Problem {
            file: manifest.to_path_buf(),
            offset: 0,
            what: format!(
                "an open dropped a damaged manifest record ({}); {} file(s) no manifest names \
                 were kept ({}): `strata repair` merges them back",
                k.reason,
                k.files.len(),
                names.join(", ")
            ),
        });
    }
}

/// Every data block of every live table, every record of every live value file.
fn check_live_files(
    live: &Live,
    fs: &RealFs,
    placement: &crate::placement::Placement,
    problems: &mut Vec<Problem>,
    out: &mut dyn Write,
) -> Result<()> {
    let show = |b: &[u8]| format!("{b:02x?}");
    for f in live.tables.values() {
        let path = placement.table_path(f.number, f.path_id);
        let what = TableDump {
            entries: false,
            verify: true,
        };
        match dump_table(&path, what, &show, &mut std::io::sink()) {
            Ok(p) => problems.extend(p),
            Err(e) => problems.push(Problem {
                file: path.clone(),
                offset: 0,
                what: e.to_string(),
            }),
        }
        writeln!(out, "table {}", path.display()).map_err(io)?;
    }
    for f in live.values.values() {
        let path = f.path(placement);
        match crate::fs::read_all(fs, &path) {
            Ok(bytes) => problems.extend(check_value_records(&path, f, &bytes)),
            Err(e) => problems.push(Problem {
                file: path.clone(),
                offset: 0,
                what: e.to_string(),
            }),
        }
        writeln!(out, "value file {}", path.display()).map_err(io)?;
    }
    for f in live.ranges.values() {
        let path =
            placement
                .db_dir()
                .join(crate::filename::ranges_name(crate::filename::FileNumber(
                    f.number,
                )));
        if let Some(what) = check_range_file(fs, &path, f) {
            problems.push(Problem {
                file: path.clone(),
                offset: 0,
                what,
            });
        }
        writeln!(out, "range tombstones {}", path.display()).map_err(io)?;
    }
    Ok(())
}

/// What is wrong with the range-tombstone file at `path`, which the manifest names as `f`:
/// unreadable, another size, or other tombstones than the manifest's (what a repair would
/// find without the manifest).
fn check_range_file(fs: &RealFs, path: &Path, f: &crate::range_del::RangeFile) -> Option<String> {
    let size = match fs.file_size(path) {
        Ok(s) => s,
        Err(e) => return Some(e.to_string()),
    };
    if size != f.size {
        return Some(format!(
            "{size} bytes where the manifest records {}",
            f.size
        ));
    }
    let order = |v: &mut Vec<crate::range_del::Tombstone>| {
        v.sort_by(|a, b| (&a.start, a.seq, &a.end).cmp(&(&b.start, b.seq, &b.end)));
    };
    match crate::sst::range_file::read(fs, path) {
        Ok(mut found) => {
            let mut named = f.tombstones.to_vec();
            order(&mut found);
            order(&mut named);
            (found != named).then(|| {
                format!(
                    "holds {} range tombstone(s) other than the manifest's {}",
                    found.len(),
                    named.len()
                )
            })
        }
        Err(e) => Some(e.to_string()),
    }
}

/// L0 kept outside tables (the matrix's rows in its region): each part's checks, and what a
/// repair with no manifest would locate.
fn check_l0(
    live: &Live,
    opts: &crate::Options,
    placement: &crate::placement::Placement,
    manifest: &Path,
    problems: &mut Vec<Problem>,
    out: &mut dyn Write,
) -> Result<()> {
    let Some(rec) = &live.l0_record else {
        return Ok(());
    };
    {
        let opts = crate::Options {
            fs: std::sync::Arc::new(RealFs::new()),
            ..opts.clone()
        };
        let ctx = crate::l0::L0Context::new(crate::registry::LAYOUTS, &opts, placement);
        match crate::l0::parts_outside_tables(rec, &ctx) {
            Ok((files, parts)) if !files.is_empty() => {
                let file = &files[0];
                let n = parts.len();
                for part in parts {
                    if let Err(e) = part {
                        problems.push(Problem {
                            file: file.clone(),
                            offset: 0,
                            what: format!("L0: {e}"),
                        });
                    }
                }
                writeln!(out, "l0 {} ({n} parts)", file.display()).map_err(io)?;
                // What a repair with no manifest would read (the matrix's row directory).
                let located = crate::l0::from_record(
                    rec,
                    &crate::l0::L0Context::new(crate::registry::LAYOUTS, &opts, placement),
                )
                .and_then(|l0| l0.located_parts());
                let damaged = match located {
                    Ok(Some(parts)) => parts.into_iter().find_map(|p| p.err()),
                    Ok(None) => None,
                    Err(e) => Some(e),
                };
                if let Some(e) = damaged {
                    problems.push(Problem {
                        file: files.last().unwrap_or(file).clone(),
                        offset: 0,
                        what: format!("L0 as repair would locate it: {e}"),
                    });
                }
            }
            Ok(_) => {}
            Err(e) => problems.push(Problem {
                file: manifest.to_path_buf(),
                offset: 0,
                what: format!("L0 layout record: {e}"),
            }),
        }
    }
    Ok(())
}

/// The obsolete list, what repair leaves out: it must read, and name no live table.
fn check_obsolete(
    live: &Live,
    fs: &RealFs,
    dir: &Path,
    problems: &mut Vec<Problem>,
    out: &mut dyn Write,
) -> Result<()> {
    let obsolete_path = dir.join(crate::filename::OBSOLETE);
    match crate::obsolete::read(fs, dir) {
        Ok(Some(list)) => {
            let live_file = |n: &u64| live.tables.contains_key(n) || live.ranges.contains_key(n);
            for n in list.tables.iter().filter(|n| live_file(n)) {
                problems.push(Problem {
                    file: obsolete_path.clone(),
                    offset: 0,
                    what: format!(
                        "names live file {n:06}: a repair would leave it out (an open \
                         rewrites the list)"
                    ),
                });
            }
            writeln!(out, "obsolete list {}", obsolete_path.display()).map_err(io)?;
        }
        Ok(None) => {}
        Err(e) => problems.push(Problem {
            file: obsolete_path,
            offset: 0,
            what: e.to_string(),
        }),
    }
    Ok(())
}

/// The WALs recovery would replay: the one the manifest expects and those it recorded as
/// synced must be there and whole; every record must decode (the newest WAL's torn tail is
/// what a crash leaves). `recorded`: the manifest carries the directories record.
fn check_wals(
    live: &Live,
    fs: &RealFs,
    placement: &crate::placement::Placement,
    recorded: bool,
    problems: &mut Vec<Problem>,
    out: &mut dyn Write,
) -> Result<()> {
    use crate::filename::FileNumber;

    let wals = crate::db::open::wals_on_disk(fs, placement, FileNumber(live.log_number))?;
    // The WAL the manifest names must be there, as an open checks (a manifest that
    // records its directories names one that exists: docs/format/manifest.md).
    if recorded && live.log_number != 0 && !wals.iter().any(|(n, _)| n.0 == live.log_number) {
        problems.push(Problem {
            file: placement.wal_path(FileNumber(live.log_number)),
            offset: 0,
            what: "the WAL the manifest expects to replay is missing (an open refuses the \
                   database)"
                .to_string(),
        });
    }
    // Every WAL the manifest recorded as synced must be there, as an open checks.
    for &(n, _) in &live.wal_sizes {
        // (The expected one, missing, is reported above.)
        let reported = n == live.log_number && recorded && live.log_number != 0;
        if n >= live.log_number && !reported && !wals.iter().any(|(w, _)| w.0 == n) {
            problems.push(Problem {
                file: placement.wal_path(FileNumber(n)),
                offset: 0,
                what: "the manifest recorded this WAL as synced (at a clean close, or once it \
                       was closed), and it is missing (an open refuses the database)"
                    .to_string(),
            });
        }
    }
    for (n, path) in &wals {
        if let Some(&(_, size)) = live.wal_sizes.iter().find(|(m, _)| *m == n.0) {
            let len = fs.file_size(path)?;
            if len < size {
                problems.push(Problem {
                    file: path.clone(),
                    offset: len,
                    what: format!(
                        "the WAL is {len} bytes long, and the manifest recorded {size} bytes \
                         of records in it, synced (at a clean close, or once it was closed): \
                         cut short since (an open refuses it)"
                    ),
                });
            }
        }
    }
    for (i, (_, path)) in wals.iter().enumerate() {
        let mut found = walk_log(path, &mut std::io::sink(), |_, offset, data| {
            Ok(WriteBatch::decode(data)
                .err()
                .map(|e| format!("bad batch at {offset}: {e}")))
        })?;
        if i + 1 == wals.len() {
            found.retain(|p| p.what != "torn tail" && !p.what.ends_with(AT_TAIL));
        }
        problems.extend(found);
        writeln!(out, "wal {}", path.display()).map_err(io)?;
    }
    Ok(())
}

/// The record of value file `f` (read as `bytes`) that fails its checksum or lengths.
fn check_value_records(path: &Path, f: &crate::vstore::ValueFile, bytes: &[u8]) -> Vec<Problem> {
    // Only the extent the manifest names: a write-time hash-store file that recovery cut
    // goes on past it with records no write reached.
    let bytes = match usize::try_from(f.size) {
        Ok(n) if n > 0 && n < bytes.len() => &bytes[..n],
        _ => bytes,
    };
    let Some(store) = crate::registry::store(f.store()) else {
        // (A manifest record is decoded by a registered store's format, so this cannot
        // happen; said rather than skipped if it does.)
        return vec![Problem {
            file: path.to_path_buf(),
            offset: 0,
            what: format!(
                "value file of store {}, which this build does not register",
                f.store().0
            ),
        }];
    };
    let (_, stop) = store.walk(bytes);
    stop.map(|(at, what)| Problem {
        file: path.to_path_buf(),
        offset: at as u64,
        what: format!("value record: {what}"),
    })
    .into_iter()
    .collect()
}

/// Writes the records of value file `path` (any store's: its extension names the store,
/// `.blob`, `.vlog`, `.hkv`, `.grp`): a line on the whole file (its footer), then each record's
/// offset, size, key, value. Returns the damage met (a record that fails its checksum ends
/// the walk: lengths past it cannot be trusted).
///
/// # Errors
/// A file that cannot be read, a name no store owns, or output that cannot be written.
pub fn dump_value_file(
    path: &Path,
    show: &dyn Fn(&[u8]) -> String,
    out: &mut dyn Write,
) -> Result<Vec<Problem>> {
    let store = path
        .extension()
        .and_then(|e| e.to_str())
        .and_then(crate::registry::store_by_extension)
        .ok_or_else(|| {
            let exts: Vec<String> = crate::registry::STORES
                .iter()
                .map(|s| format!(".{}", s.extension()))
                .collect();
            Error::invalid(format!(
                "{}: not a value file ({})",
                path.display(),
                exts.join(" or ")
            ))
        })?;
    let bytes = crate::fs::read_all(&RealFs::new(), path)?;
    let mut problems = Vec::new();
    let problem = |offset: usize, what: String| Problem {
        file: path.to_path_buf(),
        offset: offset as u64,
        what,
    };
    match store.describe(path, &bytes) {
        Ok(line) => writeln!(out, "{line}").map_err(io)?,
        Err(what) => {
            problems.push(problem(0, what));
            return Ok(problems);
        }
    }
    let (records, stop) = store.walk(&bytes);
    for (at, r) in &records {
        writeln!(
            out,
            "  offset {at} size {}: {} => {}",
            r.size,
            show(r.key),
            show(r.value)
        )
        .map_err(io)?;
    }
    if let Some((at, what)) = stop {
        writeln!(out, "  offset {at}: DAMAGED: {what}").map_err(io)?;
        problems.push(problem(at, format!("value record: {what}")));
    }
    Ok(problems)
}
