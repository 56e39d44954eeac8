//! Repair's second phase: the sources of the rebuilt database, read into one merge: every
//! table that opens (a damaged one through a memtable of the blocks that read back), the
//! WALs' records as recovery replays them, and the L0 parts a layout keeps outside tables.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::scan::Found;
use super::{RepairReport, Repairer};
use crate::error::Result;
use crate::fs::ReadAccess;
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueKind};
use crate::memtable::MemTable;
use crate::obsolete::ObsoleteList;
use crate::sst::Table;
use crate::value::ValuePointer;
use crate::wal::{LogEvent, LogReader};
use crate::WriteBatch;

/// What the sources read so far hold: their iterators and the last sequence they reach.
pub(super) struct Sources {
    /// One iterator per table, the WALs' memtable, and each L0 part.
    pub children: Vec<Box<dyn InternalIterator>>,
    /// The highest sequence any source (or a table left out) holds: never reused.
    pub last_seq: SeqNo,
    /// The range deletions of the range-tombstone files and the WALs: the rewrite drops
    /// what they cover.
    pub ranges: Vec<crate::range_del::Tombstone>,
}

/// Each value file's length as the file system holds it, to tell a pointer whose value
/// the crash cut off.
pub(super) struct ValueLengths(pub HashMap<u64, u64>);

impl ValueLengths {
    pub(super) fn measure(fs: &dyn crate::fs::Fs, found: &Found) -> Result<ValueLengths> {
        let mut lengths = HashMap::new();
        for (&n, (p, _, _)) in &found.value_files {
            lengths.insert(n, fs.file_size(p)?);
        }
        Ok(ValueLengths(lengths))
    }

    /// Whether encoded pointer `p` ends inside its value file (`Some(true)`) or past the
    /// end of it (`Some(false)`: a value appended as it was written that the crash cut
    /// off); `None` for a damaged pointer or a file that is gone (a value a GC moved since:
    /// a later entry of its key points to it).
    pub(super) fn fits(&self, p: &[u8]) -> Option<bool> {
        ValuePointer::decode(p).ok().and_then(|p| {
            self.0
                .get(&p.file)
                .map(|&len| p.offset.saturating_add(u64::from(p.size)) <= len)
        })
    }
}

impl Repairer<'_> {
    /// Every table that opens, as an iterator (a damaged one through a memtable of the
    /// blocks that read back); tables the obsolete list names are left out.
    pub(super) fn read_tables(
        &mut self,
        found: &Found,
        obsolete: &ObsoleteList,
    ) -> Result<Sources> {
        let fs = &self.fs;
        let report = &mut self.report;
        let mut sources = Sources {
            children: Vec::new(),
            last_seq: SeqNo::ZERO,
            ranges: Vec::new(),
        };
        // Those the obsolete list names are left out (with the tables: one whose flush
        // never reached the manifest may hold sequences the database gave out again).
        // A file that does not read, or one the newest manifest names that is gone, is
        // read from a manifest's copy of its tombstones where one survives.
        let recorded = &found.recorded_ranges;
        let add = |list: &[crate::range_del::Tombstone], sources: &mut Sources| {
            for t in list {
                sources.last_seq = sources.last_seq.max(t.seq);
            }
            sources.ranges.extend_from_slice(list);
        };
        for (p, n) in &found.range_files {
            if obsolete.tables.contains(&n.0) {
                report.obsolete_files += 1;
                continue;
            }
            match crate::sst::range_file::read(&**fs, p) {
                Ok(list) => add(&list, &mut sources),
                Err(e) => {
                    if let Some(f) = recorded.files.get(&n.0) {
                        add(&f.tombstones, &mut sources);
                        report.damaged(
                            p,
                            0,
                            format!("{e}; its range deletions were read from the manifest"),
                        );
                        continue;
                    }
                    report.dropped.push(format!(
                        "{}: the range-tombstone file would not read ({e}): the keys its \
                         range deletions deleted may be back",
                        p.display()
                    ));
                    report.damaged(p, 0, e.to_string());
                }
            }
        }
        let mut gone: Vec<u64> = recorded
            .live
            .iter()
            .copied()
            .filter(|n| !found.range_files.iter().any(|(_, f)| f.0 == *n))
            .filter(|n| !obsolete.tables.contains(n))
            .collect();
        gone.sort_unstable();
        for n in gone {
            if let Some(f) = recorded.files.get(&n) {
                add(&f.tombstones, &mut sources);
            }
        }
        for (p, n) in &found.tables {
            let opened = fs
                .open_with(p, ReadAccess::Positional)
                .and_then(|f| Table::open(f, p, None));
            if obsolete.tables.contains(&n.0) {
                // Left out; its sequences are still never reused.
                if let Ok(t) = opened {
                    sources.last_seq = sources.last_seq.max(SeqNo(t.properties().largest_seq));
                }
                report.obsolete_files += 1;
                continue;
            }
            let t = match opened {
                Ok(t) => Arc::new(t),
                Err(e) => {
                    let counted = found.recorded_entries.get(&n.0).copied();
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
            sources.last_seq = sources.last_seq.max(SeqNo(t.properties().largest_seq));
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
                        report.damaged(p, h.offset, e.to_string());
                    }
                }
            }
            if whole {
                drop(salvage);
                sources.children.push(Box::new(t.iter()));
            } else {
                let lost = t.properties().num_entries.saturating_sub(salvaged);
                report.entries_lost += lost;
                report.dropped.push(format!(
                    "{}: {bad_blocks} damaged block(s), {lost} of its {} entries",
                    p.display(),
                    t.properties().num_entries
                ));
                sources.children.push(Box::new(salvage.iter()));
            }
        }
        Ok(sources)
    }

    /// The WALs' records, into one memtable added to `sources`, replayed as recovery
    /// replays them: the replay stops at a WAL record whose value its value file lost (a
    /// store that takes values as they are written: the crash kept the record and not its
    /// value), or at a hole (a WAL torn before a later one that its link record says
    /// follows it). That record and every later one are left out, so the writes kept are a
    /// prefix.
    pub(super) fn replay_wals(
        &mut self,
        found: &Found,
        obsolete: &ObsoleteList,
        values: &ValueLengths,
        sources: &mut Sources,
    ) -> Result<()> {
        let fs = &self.fs;
        let report = &mut self.report;
        let wals = &found.wals;
        let wal_mem = Arc::new(MemTable::new(0));
        let mut stopped: Option<&str> = None;
        // The last sequence the WALs replayed so far reach (their records and link
        // records); none after a WAL the obsolete list names (its writes are in tables).
        let mut logged: Option<SeqNo> = None;
        let newest_written = (1..wals.len())
            .rev()
            .find(|&j| crate::db::open::wal_holds_writes(&**fs, &wals[j].0))
            .unwrap_or(0);
        for (i, (p, n)) in wals.iter().enumerate() {
            if let Some(why) = stopped {
                report.damaged(p, 0, format!("follows {why}: left out"));
                continue;
            }
            if obsolete.wals.contains(&n.0) {
                report.obsolete_files += 1;
                logged = None;
                continue;
            }
            // As recovery reads them: only the newest WAL that holds writes may end in a
            // write cut short in the middle of its copy.
            let data = crate::fs::read_all(&**fs, p)?;
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
                                report.damaged(
                                    p,
                                    offset,
                                    format!(
                                        "follows writes up to sequence {} that the WALs \
                                         before it lost (they end at {}): it and every later \
                                         WAL are left out",
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
                                e.kind == ValueKind::Pointer && values.fits(e.value) == Some(false)
                            }) =>
                        {
                            report.damaged(
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
                                sources.last_seq = sources.last_seq.max(seq);
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
                            report.damaged(p, offset, format!("WAL batch: {e}"))
                        }
                    },
                    LogEvent::End => break,
                    LogEvent::Torn { offset } => {
                        report.damaged(p, offset, "WAL ends inside a record".into());
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
                            report.damaged(p, offset, format!("WAL record: {reason}"));
                        }
                    }
                }
            }
            if records == 0 && stopped.is_none() && i < newest_written {
                // Not even its link record survived, and a later WAL with writes follows it.
                stopped = Some("a WAL that lost every record");
            }
        }
        sources.ranges.extend(wal_mem.range_tombstones());
        sources.children.push(Box::new(wal_mem.iter()));
        Ok(())
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
    pub(super) fn read_l0_parts(
        &mut self,
        manifests: &[PathBuf],
        children: &mut Vec<Box<dyn InternalIterator>>,
    ) -> Result<Vec<PathBuf>> {
        let (opts, placement, fs) = (self.opts, &self.placement, &self.fs);
        let report = &mut self.report;
        let files: Vec<PathBuf> = super::l0_own_files(opts, placement, manifests)
            .into_iter()
            .filter(|f| fs.exists(f))
            .collect();
        let Some(first) = files.first().cloned() else {
            return Ok(files);
        };
        let mut read = 0;
        let mut take = |parts: crate::l0::CheckedParts, report: &mut RepairReport| {
            for part in parts {
                match part {
                    Ok(it) => {
                        read += 1;
                        children.push(it);
                    }
                    Err(e) => report.damaged(&first, 0, format!("L0: {e}")),
                }
            }
        };
        let mut found = false;
        for l0 in crate::l0::every_layout(crate::registry::LAYOUTS, opts, placement) {
            match l0.located_parts() {
                Ok(Some(parts)) => {
                    found = true;
                    take(parts, report);
                }
                Ok(None) => {}
                Err(e) => {
                    let own = l0.own_files();
                    let at = own.last().unwrap_or(&first);
                    report.damaged(at, 0, format!("L0's locator, not used: {e}"));
                }
            }
        }
        let record = if found {
            None
        } else {
            super::newest_l0_record(&**fs, manifests)
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
                    take(parts, report);
                }
                Err(e) => report.damaged(&manifest, 0, format!("L0 layout record: {e}")),
            }
        }
        if !found {
            let what = "may hold L0 data, and neither its locator nor a manifest record located \
                        any: it is moved aside, not read";
            report.damaged(&first, 0, what.into());
        }
        report.l0_parts_read = read;
        Ok(files)
    }
}
