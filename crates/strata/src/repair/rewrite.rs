//! Repair's last phase: the newest version of each key written into one sorted run at the
//! last level, the value files a kept pointer reaches (with what it does not reach as
//! garbage), and the new manifest installed with the replaced files moved to `lost/`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::scan::Found;
use super::sources::{Sources, ValueLengths};
use super::Repairer;
use crate::error::Result;
use crate::filename::{self, FileNumber};
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{self, SeqNo, ValueKind};
use crate::placement::FileKind;
use crate::sst::{TableBuilder, TableOptions};
use crate::value::{OldestValueFile, ValueFile, ValuePointer};
use crate::version::{FileMeta, VersionEdit};
use crate::wal::LogWriter;

/// The tables a repair wrote, and what the manifest needs to know of them.
pub(super) struct Rebuilt {
    /// The tables, all at the last level.
    pub new_files: Vec<FileMeta>,
    /// For each value file a kept pointer reaches: the pointers and their bytes.
    pub referenced: HashMap<u64, (u64, u64)>,
    /// The next file number free.
    pub next_number: u64,
    /// The highest sequence any source held.
    pub last_seq: SeqNo,
    /// Whether a kept entry expires (the manifest then names `expiring-entries`).
    pub expiring: bool,
}

/// A table being written: its builder, number and the oldest value file it points into.
type Output = (TableBuilder, FileNumber, OldestValueFile);

impl Repairer<'_> {
    /// Writes the newest version of each key of `sources` into new tables at the last
    /// level, numbered after `max_number`. A pointer whose value is lost is not its key's
    /// last word: the key's next entry takes its place.
    pub(super) fn write_tables(
        &mut self,
        sources: Sources,
        values: &ValueLengths,
        max_number: u64,
    ) -> Result<Rebuilt> {
        let (opts, fs, placement) = (self.opts, &self.fs, &self.placement);
        let level = opts.num_levels - 1;
        let path_id = placement.path_id(FileKind::table(level));
        let table_opts = TableOptions::from(opts);
        let mut rebuilt = Rebuilt {
            new_files: Vec::new(),
            referenced: HashMap::new(),
            next_number: max_number + 1,
            last_seq: sources.last_seq,
            expiring: false,
        };
        let mut out: Option<Output> = None;
        // Only each key's newest version is written: one a range deletion covers is
        // dropped with every older one, and the new manifest needs no tombstone.
        let ranges = crate::range_del::Fragments::build(&sources.ranges);
        let mut merged = MergingIterator::new(sources.children);
        merged.seek_to_first();
        let mut last_user_key: Option<Vec<u8>> = None;
        while merged.valid() {
            let ikey = merged.key();
            let Some(k) = key::parse(ikey) else {
                merged.next();
                continue;
            };
            // (L0 parts outside tables may hold the newest writes: their WALs are gone.)
            rebuilt.last_seq = rebuilt.last_seq.max(k.seq);
            if last_user_key.as_deref() == Some(k.user_key) {
                merged.next(); // an older version (or the same entry again)
                continue;
            }
            last_user_key = Some(k.user_key.to_vec());
            if k.kind == ValueKind::Delete || k.kind == ValueKind::RangeDelete {
                merged.next(); // nothing below the last level for it to hide
                continue;
            }
            if ranges
                .newest_visible(k.user_key, SeqNo::MAX)
                .is_some_and(|t| t > k.seq)
            {
                merged.next(); // deleted by a range deletion, with its older versions
                continue;
            }
            if k.kind == ValueKind::Expiring && crate::key::split_expiring(merged.value()).is_none()
            {
                let what = format!(
                    "key {:02x?}: its expiring entry at sequence {} is shorter than its expiry \
                     (damaged); the key's next entry takes its place",
                    k.user_key, k.seq.0
                );
                self.report.damaged(self.dir, 0, what);
                last_user_key = None;
                merged.next();
                continue;
            }
            rebuilt.expiring |= k.kind == ValueKind::Expiring;
            let mut pointer_file = None;
            if k.kind == ValueKind::Pointer {
                let Some((file, size)) = ValuePointer::decode(merged.value())
                    .ok()
                    .filter(|_| values.fits(merged.value()) == Some(true))
                    .map(|p| (p.file, u64::from(p.size)))
                else {
                    // Not the key's last word: the next entry of it decides. That is the
                    // same write from another source where one survives (a compaction's
                    // output whose new value file the crash lost, beside its inputs; a
                    // table beside the WAL it was flushed from), else the version before it.
                    let whence = match ValuePointer::decode(merged.value()) {
                        Ok(p) => match values.0.get(&p.file) {
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
                    self.report.damaged(self.dir, 0, what);
                    last_user_key = None;
                    merged.next();
                    continue;
                };
                let r = rebuilt.referenced.entry(file).or_default();
                r.0 += 1;
                r.1 += size;
                pointer_file = Some(file);
            }
            if out.is_none() {
                let n = FileNumber(rebuilt.next_number);
                rebuilt.next_number += 1;
                let p = placement.table_path(n, path_id);
                out = Some((
                    TableBuilder::new(fs.create(&p)?, p, table_opts),
                    n,
                    OldestValueFile::default(),
                ));
            }
            let (b, _, oldest) = out.as_mut().expect("just made");
            if let Some(file) = pointer_file {
                oldest.note(file);
            }
            b.add(ikey, merged.value())?;
            self.report.keys += 1;
            if b.estimated_size() >= opts.target_file_size_base {
                rebuilt
                    .new_files
                    .push(finish(out.take().expect("open"), path_id)?);
            }
            merged.next();
        }
        merged.status()?;
        drop(merged); // (it holds the L0 layout's file open)
        if let Some(o) = out.take() {
            rebuilt.new_files.push(finish(o, path_id)?);
        }
        self.report.tables_written = rebuilt.new_files.len();
        Ok(rebuilt)
    }

    /// The value files a kept pointer reaches, each with what no kept pointer reaches as
    /// garbage, and the paths of those none reaches (to move aside).
    pub(super) fn keep_value_files(
        &mut self,
        found: &Found,
        referenced: &HashMap<u64, (u64, u64)>,
    ) -> Result<(Vec<ValueFile>, Vec<PathBuf>)> {
        let fs = &self.fs;
        let mut kept = Vec::new();
        let mut unreached: Vec<PathBuf> = Vec::new();
        for (&n, (p, store, id)) in &found.value_files {
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
                &mut || crate::fs::read_all(&**fs, p),
                (refs, ref_bytes),
            )?;
            kept.push(f);
        }
        self.report.value_files = kept.len();
        Ok((kept, unreached))
    }

    /// The new manifest (naming `rebuilt`'s tables and `kept_values`) and an empty WAL,
    /// then CURRENT; then every file of `replaced` (and CURRENT, the obsolete list) moved
    /// to `lost/` in its own directory.
    pub(super) fn install(
        &mut self,
        rebuilt: Rebuilt,
        kept_values: Vec<ValueFile>,
        mut replaced: Vec<PathBuf>,
    ) -> Result<()> {
        let (opts, fs, placement, dir) = (self.opts, &self.fs, &self.placement, self.dir);
        let level = opts.num_levels - 1;
        let next_number = rebuilt.next_number;
        let mut features = crate::value::features(crate::registry::formats(), &kept_values);
        // The time expiring entries were judged by, kept: a repair after the clock went back
        // must not bring back what had expired (docs/design/ttl.md).
        let clock = rebuilt
            .expiring
            .then(|| recorded_clock(&**fs, placement.db_dir()).max(opts.clock.now_millis()));
        if rebuilt.expiring {
            features.push(crate::version::EXPIRING_FEATURE.to_string());
        }
        let manifest_number = FileNumber(next_number);
        let log_number = FileNumber(next_number + 1);
        let edit = VersionEdit {
            features,
            l0_layout: Some(
                crate::l0::configured(
                    opts,
                    &crate::l0::L0Context::new(crate::registry::LAYOUTS, opts, placement),
                )?
                .record(),
            ),
            format_version: Some(crate::version::MANIFEST_FORMAT_VERSION),
            log_number: Some(log_number),
            next_file_number: Some(FileNumber(next_number + 2)),
            last_sequence: Some(rebuilt.last_seq),
            new_files: rebuilt.new_files.into_iter().map(|m| (level, m)).collect(),
            new_value_files: kept_values,
            clock,
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
        let obsolete_path = dir.join(filename::OBSOLETE);
        if fs.exists(&obsolete_path) {
            replaced.push(obsolete_path);
        }
        for p in &replaced {
            crate::fs::create_dir_durable(&**fs, &lost_of(p))?;
        }
        let current = placement.current_path();
        if fs.exists(&current) {
            crate::fs::create_dir_durable(&**fs, &lost_of(&current))?;
            fs.rename(&current, &lost_of(&current).join(filename::CURRENT))?;
        }
        let name = format!("{}\n", filename::manifest_name(manifest_number));
        crate::fs::write_file_atomic(&**fs, &current, name.as_bytes())?;
        // OPTIONS's copy of the record, the new manifest's, and no longer a copy's line
        // (the repaired database's record is its own); its options lines are the
        // application's, kept (the CLI opens with them).
        let options = dir.join(filename::OPTIONS);
        if let Some(old) = crate::fs::read_all(&**fs, &options)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
        {
            let text = crate::db::open::with_directories(&old, &placement.directories());
            crate::fs::write_file_atomic(&**fs, &options, text.as_bytes())?;
        }
        for p in &replaced {
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
        Ok(())
    }
}

/// The finished table of `o` (builder, number, oldest value file) as file metadata.
fn finish(
    o: (TableBuilder, FileNumber, OldestValueFile),
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

/// The largest time any manifest in `dir` records expiring entries were judged by (its
/// readable records; 0 if none).
fn recorded_clock(fs: &dyn crate::fs::Fs, dir: &Path) -> u64 {
    let mut clock = 0;
    for name in fs.list(dir).unwrap_or_default() {
        if !matches!(
            filename::parse(&name),
            Some(filename::FileType::Manifest(_))
        ) {
            continue;
        }
        let Ok(data) = crate::fs::read_all(fs, &dir.join(&name)) else {
            continue;
        };
        let mut reader = crate::wal::LogReader::new(data);
        while let crate::wal::LogEvent::Record { data, .. } = reader.next_event() {
            if let Ok(e) = VersionEdit::decode(&data, crate::registry::registered()) {
                clock = clock.max(e.clock.unwrap_or(0));
            }
        }
    }
    clock
}
