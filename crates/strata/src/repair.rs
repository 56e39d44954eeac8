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

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::Result;
use crate::filename::{self, FileNumber, FileType};
use crate::fs::ReadAccess;
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{self, SeqNo, ValueKind};
use crate::memtable::MemTable;
use crate::placement::{FileKind, Placement};
use crate::sst::{Table, TableBuilder, TableOptions};
use crate::version::{FileMeta, VersionEdit};
use crate::vstore::ValuePointer;
use crate::wal::{LogEvent, LogReader, LogWriter};
use crate::{Options, WriteBatch};

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
    // A manifest still readable (or else the OPTIONS file) says where the files are,
    // where the options do not.
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
    let _lock = match early_lock {
        Some(l) => l,
        None => fs.lock(&dir.join(filename::LOCK))?,
    };
    let mut report = RepairReport {
        moved_to: dir.join("lost"),
        ..RepairReport::default()
    };
    let mut damage = |file: &Path, offset: u64, what: String| {
        report.damage.push((file.to_path_buf(), offset, what));
    };

    // What is on disk, in every directory.
    let mut tables: Vec<(PathBuf, FileNumber)> = Vec::new();
    let mut wals: Vec<(PathBuf, FileNumber)> = Vec::new();
    let mut manifests: Vec<PathBuf> = Vec::new();
    let mut value_files: BTreeMap<
        u64,
        (PathBuf, crate::vstore::StoreId, crate::placement::PathId),
    > = BTreeMap::new();
    let mut max_number = 1u64;
    let mut dirs: Vec<&Path> = placement.dirs();
    dirs.dedup();
    let given = placement.write_dirs();
    for d in dirs {
        // (A recorded directory the options do not give may be gone: a tmpfs after a
        // reboot. It holds nothing then, and the report says so: its files, if it had any,
        // are not in the repaired database. One that is there and cannot be read, a disk
        // not mounted yet or a permission, stops the repair: it would drop them silently.)
        let names = if given.contains(&d) || fs.exists(d) {
            fs.list(d)?
        } else {
            report.dropped.push(format!(
                "{}: a directory the database recorded is gone; whatever it held is not in \
                 the repaired database",
                d.display()
            ));
            Vec::new()
        };
        for name in names {
            let p = d.join(&name);
            match crate::registry::parse_file_name(&name) {
                Some(FileType::Table(n)) => tables.push((p, n)),
                Some(FileType::Wal(n)) => wals.push((p, n)),
                Some(FileType::Manifest(n)) => {
                    manifests.push(p);
                    max_number = max_number.max(n.0);
                    continue;
                }
                Some(FileType::Value(n, store)) => {
                    value_files.insert(n.0, (p, store, path_id_of(&placement, d)));
                }
                _ => continue,
            }
            if let Some(FileType::Table(n) | FileType::Wal(n) | FileType::Value(n, _)) =
                crate::registry::parse_file_name(&name)
            {
                max_number = max_number.max(n.0);
            }
        }
    }
    tables.sort_by_key(|t| t.1);
    tables.dedup_by_key(|t| t.1);
    wals.sort_by_key(|w| w.1);
    wals.dedup_by_key(|w| w.1);

    // Files the database no longer needed when it listed them (`crate::obsolete`).
    let obsolete_path = dir.join(filename::OBSOLETE);
    let obsolete = match crate::obsolete::read(&*fs, dir) {
        Ok(list) => list.unwrap_or_default(),
        Err(e) => {
            damage(
                &obsolete_path,
                0,
                format!("{e}; every table and WAL is read"),
            );
            crate::obsolete::ObsoleteList::default()
        }
    };

    // How many entries each table held, as the surviving manifests recorded them (for a
    // table that no longer opens, the only count there is).
    let recorded_entries = recorded_table_entries(&*fs, &manifests);
    // Sources: every table that opens (damaged ones through a memtable of the blocks that
    // read back), and the WALs' records.
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    let mut last_seq = SeqNo::ZERO;
    for (p, n) in &tables {
        let opened = fs
            .open_with(p, ReadAccess::Positional)
            .and_then(|f| Table::open(f, p, None));
        if obsolete.tables.contains(&n.0) {
            // Left out; its sequences are still never reused.
            if let Ok(t) = opened {
                last_seq = last_seq.max(SeqNo(t.properties().largest_seq));
            }
            report.obsolete_files += 1;
            continue;
        }
        let t = match opened {
            Ok(t) => Arc::new(t),
            Err(e) => {
                let counted = recorded_entries.get(&n.0).copied();
                report.entries_lost += counted.unwrap_or(0);
                report.dropped.push(format!(
                    "{}: the table would not open ({}), {}",
                    p.display(),
                    e,
                    counted.map_or_else(
                        || "its entries unknown (no surviving manifest names it)".to_string(),
                        |c| format!("{c} entries as the manifest counted them"),
                    )
                ));
                report.tables_lost.push((p.clone(), e.to_string()));
                continue;
            }
        };
        report.tables_read += 1;
        last_seq = last_seq.max(SeqNo(t.properties().largest_seq));
        let salvage = Arc::new(MemTable::new(0));
        let (mut whole, mut salvaged, mut bad_blocks) = (true, 0u64, 0usize);
        for (_, h) in t.data_blocks()? {
            match t.read_verified(h) {
                Ok(b) => {
                    let mut it = b.iter(key::compare);
                    it.seek_to_first();
                    while it.valid() {
                        if let Some(k) = key::parse(it.key()) {
                            salvage.add(k.seq, k.kind, k.user_key, it.value());
                            salvaged += 1;
                        }
                        it.next();
                    }
                }
                Err(e) => {
                    whole = false;
                    bad_blocks += 1;
                    damage(p, h.offset, e.to_string());
                }
            }
        }
        if !whole {
            let lost = t.properties().num_entries.saturating_sub(salvaged);
            report.entries_lost += lost;
            report.dropped.push(format!(
                "{}: {bad_blocks} damaged block(s), {lost} of its {} entries",
                p.display(),
                t.properties().num_entries
            ));
        }
        if whole {
            drop(salvage);
            children.push(Box::new(t.iter()));
        } else {
            children.push(Box::new(salvage.iter()));
        }
    }
    let mut value_lengths: HashMap<u64, u64> = HashMap::new();
    for (&n, (p, _, _)) in &value_files {
        value_lengths.insert(n, fs.file_size(p)?);
    }
    // Whether encoded pointer `p` ends inside its value file (`Some(true)`) or past the end
    // of it (`Some(false)`: a value appended as it was written that the crash cut off);
    // `None` for a damaged pointer or a file that is gone (a value a GC moved since: a
    // later entry of its key points to it).
    let fits = |p: &[u8]| {
        ValuePointer::decode(p).ok().and_then(|p| {
            value_lengths
                .get(&p.file)
                .map(|&len| p.offset.saturating_add(u64::from(p.size)) <= len)
        })
    };
    let wal_mem = Arc::new(MemTable::new(0));
    // Why the replay stopped, if it did, as recovery stops: at a WAL record whose value its
    // value file lost (a store that takes values as they are written: the crash kept the
    // record and not its value), or at a hole (a WAL torn before a later one that its
    // link record says follows it). That record and every later one are left out, so the
    // writes kept are a prefix.
    let mut stopped: Option<&str> = None;
    // The last sequence the WALs replayed so far reach (their records and link records);
    // none after a WAL the obsolete list names (its writes are in tables).
    let mut logged: Option<SeqNo> = None;
    let newest_written = (1..wals.len())
        .rev()
        .find(|&j| crate::db::open::wal_holds_writes(&*fs, &wals[j].0))
        .unwrap_or(0);
    for (i, (p, n)) in wals.iter().enumerate() {
        if let Some(why) = stopped {
            damage(p, 0, format!("follows {why}: left out"));
            continue;
        }
        if obsolete.wals.contains(&n.0) {
            report.obsolete_files += 1;
            logged = None;
            continue;
        }
        // As recovery reads them: only the newest WAL that holds writes may end in a write
        // cut short in the middle of its copy.
        let data = crate::fs::read_all(&*fs, p)?;
        let mut reader = if i >= newest_written {
            LogReader::new(data)
        } else {
            LogReader::strict(data)
        };
        let mut records = 0usize;
        loop {
            match reader.next_event() {
                LogEvent::Record { data, offset } => match WriteBatch::decode(data) {
                    Ok(b) if b.is_empty() => {
                        records += 1;
                        // A link record: everything logged up to its sequence came first.
                        let linked = b.sequence();
                        if let Some(l) = logged.filter(|&l| linked > l) {
                            damage(
                                p,
                                offset,
                                format!(
                                    "follows writes up to sequence {} that the WALs before \
                                     it lost (they end at {}): it and every later WAL are \
                                     left out",
                                    linked.0, l.0
                                ),
                            );
                            stopped = Some("a WAL that lost writes a later one follows");
                            break;
                        }
                        logged = Some(logged.map_or(linked, |l| l.max(linked)));
                    }
                    Ok(b)
                        if b.iter().flatten().any(|e| {
                            e.kind == ValueKind::Pointer && fits(e.value) == Some(false)
                        }) =>
                    {
                        damage(
                            p,
                            offset,
                            "a WAL record's value lies past the end of its value file (cut \
                             off by the crash): it and every later record are left out"
                                .into(),
                        );
                        stopped = Some("a WAL record whose value was lost");
                        break;
                    }
                    Ok(b) => {
                        records += 1;
                        let mut seq = b.sequence();
                        for e in b.iter().flatten() {
                            wal_mem.add(seq, e.kind, e.key, e.value);
                            last_seq = last_seq.max(seq);
                            seq = seq.next();
                        }
                        let last = SeqNo(seq.0 - 1);
                        logged = Some(logged.map_or(last, |l| l.max(last)));
                        report.wal_records += 1;
                    }
                    Err(e) => {
                        report.dropped.push(format!(
                            "{} at offset {offset}: a damaged WAL batch",
                            p.display()
                        ));
                        damage(p, offset, format!("WAL batch: {e}"))
                    }
                },
                LogEvent::End => break,
                LogEvent::Torn { offset } => {
                    damage(p, offset, "WAL ends inside a record".into());
                    break;
                }
                LogEvent::Corrupt {
                    offset,
                    reason,
                    at_tail,
                } => {
                    if !at_tail {
                        report.dropped.push(format!(
                            "{} at offset {offset}: a damaged WAL record",
                            p.display()
                        ));
                        damage(p, offset, format!("WAL record: {reason}"));
                    }
                }
            }
        }
        if records == 0 && stopped.is_none() && i < newest_written {
            // Not even its link record survived, and a later WAL with writes follows it.
            stopped = Some("a WAL that lost every record");
        }
    }
    children.push(Box::new(wal_mem.iter()));
    let (l0_files, l0_parts_read) =
        read_l0_parts(opts, &placement, &manifests, &mut children, &mut damage)?;

    // The newest version of each key, written into one sorted run at the last level.
    let level = opts.num_levels - 1;
    let path_id = placement.path_id(FileKind::table(level));
    let table_opts = TableOptions::from(opts);
    let mut next_number = max_number + 1;
    let mut new_files: Vec<FileMeta> = Vec::new();
    let mut referenced: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut out: Option<(TableBuilder, FileNumber, crate::vstore::OldestValueFile)> = None;
    let mut merged = MergingIterator::new(children);
    merged.seek_to_first();
    let mut last_user_key: Option<Vec<u8>> = None;
    while merged.valid() {
        let ikey = merged.key();
        let Some(k) = key::parse(ikey) else {
            merged.next();
            continue;
        };
        // (L0 parts outside tables may hold the newest writes: their WALs are gone.)
        last_seq = last_seq.max(k.seq);
        if last_user_key.as_deref() == Some(k.user_key) {
            merged.next(); // an older version (or the same entry again)
            continue;
        }
        last_user_key = Some(k.user_key.to_vec());
        if k.kind == ValueKind::Delete {
            merged.next(); // nothing below the last level for it to hide
            continue;
        }
        let mut pointer_file = None;
        if k.kind == ValueKind::Pointer {
            let Some((file, size)) = ValuePointer::decode(merged.value())
                .ok()
                .filter(|_| fits(merged.value()) == Some(true))
                .map(|p| (p.file, u64::from(p.size)))
            else {
                // Not the key's last word: the next entry of it decides. That is the same
                // write from another source where one survives (a compaction's output whose
                // new value file the crash lost, beside its inputs; a table beside the WAL
                // it was flushed from), else the version before it.
                let whence = match ValuePointer::decode(merged.value()) {
                    Ok(p) => match value_lengths.get(&p.file) {
                        Some(len) => format!(
                            "value file {} ends at {len}, before {}",
                            p.file,
                            p.offset.saturating_add(u64::from(p.size))
                        ),
                        None => format!("value file {} is not there", p.file),
                    },
                    Err(e) => format!("its pointer is damaged: {e}"),
                };
                let what = format!(
                    "key {:02x?}: its value at sequence {} is lost ({whence}); the key's \
                     next entry takes its place (none: the key is dropped)",
                    k.user_key, k.seq.0
                );
                damage(dir, 0, what);
                last_user_key = None;
                merged.next();
                continue;
            };
            let r = referenced.entry(file).or_default();
            r.0 += 1;
            r.1 += size;
            pointer_file = Some(file);
        }
        if out.is_none() {
            let n = FileNumber(next_number);
            next_number += 1;
            let p = placement.table_path(n, path_id);
            out = Some((
                TableBuilder::new(fs.create(&p)?, p, table_opts),
                n,
                crate::vstore::OldestValueFile::default(),
            ));
        }
        let (b, _, oldest) = out.as_mut().expect("just made");
        if let Some(file) = pointer_file {
            oldest.note(file);
        }
        b.add(ikey, merged.value())?;
        report.keys += 1;
        if b.estimated_size() >= opts.target_file_size_base {
            new_files.push(finish(out.take().expect("open"), path_id)?);
        }
        merged.next();
    }
    merged.status()?;
    drop(merged); // (it holds the L0 layout's file open)
    if let Some(o) = out.take() {
        new_files.push(finish(o, path_id)?);
    }
    report.tables_written = new_files.len();

    // Value files: those a kept pointer reaches, with what it does not reach as garbage.
    let mut kept_values = Vec::new();
    let mut unreached: Vec<PathBuf> = Vec::new();
    for (&n, (p, store, id)) in &value_files {
        let Some(&(refs, ref_bytes)) = referenced.get(&n) else {
            unreached.push(p.clone());
            continue;
        };
        let Some(store) = crate::registry::store(*store) else {
            continue;
        };
        // The pointers kept were checked against the file as the OS holds it: after a
        // process kill its tail may be in no sync yet, and a power cut after the repair
        // would cut it from under the tables (the manifest names both).
        fs.sync_file(p)?;
        let f = store.rebuilt(
            n,
            *id,
            &mut || crate::fs::read_all(&*fs, p),
            (refs, ref_bytes),
        )?;
        kept_values.push(f);
    }
    report.value_files = kept_values.len();
    report.l0_parts_read = l0_parts_read;

    // The new manifest, then CURRENT; then the replaced files out of the way.
    let features = crate::value::features(crate::registry::formats(), &kept_values);
    let manifest_number = FileNumber(next_number);
    let log_number = FileNumber(next_number + 1);
    let edit = VersionEdit {
        features,
        l0_layout: Some(
            crate::l0::configured(
                opts,
                &crate::l0::L0Context::new(crate::registry::LAYOUTS, opts, &placement),
            )?
            .record(),
        ),
        format_version: Some(crate::version::MANIFEST_FORMAT_VERSION),
        log_number: Some(log_number),
        next_file_number: Some(FileNumber(next_number + 2)),
        last_sequence: Some(last_seq),
        new_files: new_files.into_iter().map(|m| (level, m)).collect(),
        new_value_files: kept_values,
        ..VersionEdit::default()
    };
    // The WAL the manifest names, empty, before the manifest: a manifest this build
    // writes names a WAL that exists (an open refuses one whose WAL is missing).
    let wal = fs.create_log(&placement.wal_path(log_number))?;
    drop(wal);
    fs.sync_file(&placement.wal_path(log_number))?;
    fs.sync_dir(placement.wal_dir())?;
    let manifest = placement.manifest_path(manifest_number);
    let mut w = LogWriter::new(fs.create(&manifest)?);
    w.add_record(&crate::version::directories_record(placement.directories()))?;
    w.add_record(&edit.encode())?;
    w.sync()?;
    drop(w);
    for d in placement.dirs() {
        if fs.exists(d) {
            fs.sync_dir(d)?;
        }
    }
    // Each replaced file goes to `lost/` in its own directory (a rename cannot cross
    // devices).
    let lost_of = |p: &Path| p.parent().unwrap_or(dir).join("lost");
    let mut replaced: Vec<&PathBuf> = tables.iter().map(|t| &t.0).collect();
    replaced.extend(wals.iter().map(|w| &w.0));
    replaced.extend(manifests.iter());
    replaced.extend(unreached.iter());
    replaced.extend(l0_files.iter());
    if fs.exists(&obsolete_path) {
        replaced.push(&obsolete_path);
    }
    for p in &replaced {
        crate::fs::create_dir_durable(&*fs, &lost_of(p))?;
    }
    let current = placement.current_path();
    if fs.exists(&current) {
        crate::fs::create_dir_durable(&*fs, &lost_of(&current))?;
        fs.rename(&current, &lost_of(&current).join(filename::CURRENT))?;
    }
    let name = format!("{}\n", filename::manifest_name(manifest_number));
    crate::fs::write_file_atomic(&*fs, &current, name.as_bytes())?;
    for p in replaced {
        let Some(name) = p.file_name() else { continue };
        fs.rename(p, &lost_of(p).join(name))?;
    }
    let mut synced: Vec<PathBuf> = Vec::new();
    for d in placement.dirs() {
        for d in [d.to_path_buf(), d.join("lost")] {
            if !synced.contains(&d) && fs.exists(&d) {
                fs.sync_dir(&d)?;
                synced.push(d);
            }
        }
    }
    Ok(report)
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
    let own: Vec<String> =
        crate::l0::every_layout(crate::registry::LAYOUTS, opts, &known.placement)
            .iter()
            .flat_map(|l| l.own_files())
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
    for (id, recorded) in rec.usable(dir) {
        let given = crate::placement::option_dir(opts, id);
        let Some(given) = given.filter(|g| absolute(g) != recorded) else {
            continue;
        };
        let holds = holds_database_files(&*opts.fs, &recorded, &own);
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
    if !rec.written_here(dir) {
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

/// Whether directory `d` holds files of a database: tables, WALs, value files, or a file
/// named as one of `own` (the L0 layouts' own files: the matrix's region and row
/// directory).
fn holds_database_files(fs: &dyn crate::fs::Fs, d: &Path, own: &[String]) -> bool {
    fs.list(d).unwrap_or_default().iter().any(|n| {
        matches!(
            crate::registry::parse_file_name(n),
            Some(FileType::Table(_) | FileType::Wal(_) | FileType::Value(..))
        ) || own.contains(n)
    })
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

/// Each table's entry count as the manifests in `manifests` record it (a newer manifest's
/// record wins), each read up to its damage.
fn recorded_table_entries(fs: &dyn crate::fs::Fs, manifests: &[PathBuf]) -> HashMap<u64, u64> {
    let mut out = HashMap::new();
    for p in by_number(manifests) {
        let Ok(bytes) = crate::fs::read_all(fs, p) else {
            continue;
        };
        let mut reader = LogReader::new(bytes);
        while let LogEvent::Record { data, .. } = reader.next_event() {
            if let Ok(e) = VersionEdit::decode(&data, crate::registry::registered()) {
                for (_, f) in &e.new_files {
                    out.insert(f.number.0, f.num_entries);
                }
            }
        }
    }
    out
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

/// Adds to `children` the parts of L0 a layout keeps outside tables (the matrix's RowTables
/// in its region): as the layouts' own files locate them (the matrix's row directory,
/// never behind the manifest; every layout is asked, not only the configured one: a
/// database killed while an open migrated its L0 to the configured layout still holds
/// the old layout's parts), or else as the newest L0 layout record in
/// `manifests` (newest first, each read up to its damage) names them; a part that fails
/// its checks is reported as damage. Returns the layout's files that exist, for the caller
/// to move aside (the repaired database starts an empty layout), and the parts read: with
/// neither a directory nor a record, the data cannot be located and is reported lost.
fn read_l0_parts(
    opts: &Options,
    placement: &Placement,
    manifests: &[PathBuf],
    children: &mut Vec<Box<dyn InternalIterator>>,
    damage: &mut dyn FnMut(&Path, u64, String),
) -> Result<(Vec<PathBuf>, usize)> {
    let fs = &opts.fs;
    let files: Vec<PathBuf> = l0_own_files(opts, placement, manifests)
        .into_iter()
        .filter(|f| fs.exists(f))
        .collect();
    let Some(first) = files.first().cloned() else {
        return Ok((files, 0));
    };
    let mut read = 0;
    let mut take = |parts: crate::l0::CheckedParts, damage: &mut dyn FnMut(&Path, u64, String)| {
        for part in parts {
            match part {
                Ok(it) => {
                    read += 1;
                    children.push(it);
                }
                Err(e) => damage(&first, 0, format!("L0: {e}")),
            }
        }
    };
    let mut found = false;
    for l0 in crate::l0::every_layout(crate::registry::LAYOUTS, opts, placement) {
        match l0.located_parts() {
            Ok(Some(parts)) => {
                found = true;
                take(parts, damage);
            }
            Ok(None) => {}
            Err(e) => {
                let own = l0.own_files();
                let at = own.last().unwrap_or(&first);
                damage(at, 0, format!("L0's locator, not used: {e}"));
            }
        }
    }
    let record = if found {
        None
    } else {
        newest_l0_record(&**fs, manifests)
    };
    if let Some((manifest, rec)) = record {
        // A context of its own: the configured layout's holds a region of the configured
        // size, which the record's may not be. Salvaging: a region cut short gives the
        // rows within it.
        let ctx = crate::l0::L0Context {
            salvage: true,
            ..crate::l0::L0Context::new(crate::registry::LAYOUTS, opts, placement)
        };
        match crate::l0::parts_outside_tables(&rec, &ctx) {
            Ok((_, parts)) => {
                found = true;
                take(parts, damage);
            }
            Err(e) => damage(&manifest, 0, format!("L0 layout record: {e}")),
        }
    }
    if !found {
        let what = "may hold L0 data, and neither its locator nor a manifest record located \
                    any: it is moved aside, not read";
        damage(&first, 0, what.into());
    }
    Ok((files, read))
}

/// The finished table of `o` (builder, number, oldest value file) as file metadata.
fn finish(
    o: (TableBuilder, FileNumber, crate::vstore::OldestValueFile),
    path_id: crate::placement::PathId,
) -> Result<FileMeta> {
    let (b, number, oldest) = o;
    let smallest = b.first_key().to_vec();
    let largest = b.last_key().to_vec();
    let props = b.finish()?;
    Ok(FileMeta {
        oldest_value_file: oldest.0,
        ..FileMeta::from_properties(number, path_id, &props, smallest, largest)
    })
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
