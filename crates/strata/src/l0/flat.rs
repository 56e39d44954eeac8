//! [`Flat`]: LevelDB's and RocksDB's L0. Each flush adds one table; tables may overlap and
//! are kept newest first; L0 -> L1 takes every L0 table at once.

use std::collections::HashSet;
use std::sync::Arc;

use super::{Ingest, Ingested, Level0, Pressure};
use crate::error::Result;
use crate::file_meta::FileMeta;
use crate::filename::FileNumber;
use crate::key::SeqNo;
use crate::memtable::{Lookup, MemTable};
use crate::options::{L0Layout, Options};
use crate::table_cache::TableCache;

/// A list of possibly overlapping tables, newest first.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flat;

/// The flat layout's registration (id 0, no state, no format feature).
pub(crate) const LAYOUT: super::Layout = super::Layout {
    kind: L0Layout::Flat,
    id: 0,
    persistent_dir: None,
    feature: None,
    initial: |_| Ok(super::flat()),
    decode: |state, _| {
        if state.is_empty() {
            Ok(super::flat())
        } else {
            Err(crate::error::Error::corrupt(
                "flat L0 layout record carries state",
            ))
        }
    },
    check_options: |_| Ok(()),
};

impl Level0 for Flat {
    fn kind(&self) -> L0Layout {
        L0Layout::Flat
    }

    fn record(&self) -> super::L0Record {
        super::L0Record {
            layout: LAYOUT.id,
            state: Vec::new(),
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn arrange(&self, files: &mut Vec<Arc<FileMeta>>) -> Result<()> {
        // Newest first: a table's newest entry decides its place; numbers break ties
        // (a later flush gets a higher number).
        files.sort_by(|a, b| {
            b.largest_seq
                .cmp(&a.largest_seq)
                .then(b.number.cmp(&a.number))
        });
        super::refuse_duplicates(files)
    }

    fn ingest(
        &self,
        job: &mut Ingest<'_>,
        mem: &Arc<MemTable>,
        _files: &[Arc<FileMeta>],
    ) -> Result<Ingested> {
        let Some(table) = job.write_table(mem, None, None)? else {
            return Ok(Ingested::default());
        };
        job.sync_dir()?;
        Ok(Ingested {
            tables: vec![table],
            change: None,
            other_bytes: 0,
        })
    }

    fn get<'a>(
        &self,
        files: &'a [Arc<FileMeta>],
        tables: &TableCache,
        target: &[u8],
        user_key: &[u8],
        searched: &mut dyn FnMut(&'a Arc<FileMeta>),
    ) -> Result<Option<(SeqNo, Lookup)>> {
        super::search_newest_first(files, tables, target, user_key, searched)
    }

    fn seek_sources<'a>(
        &self,
        files: &'a [Arc<FileMeta>],
        user_key: &[u8],
        visit: &mut dyn FnMut(&'a Arc<FileMeta>),
    ) {
        for f in files {
            if f.smallest_user_key() <= user_key && user_key <= f.largest_user_key() {
                visit(f);
            }
        }
    }

    fn pressure(&self, files: &[Arc<FileMeta>], opts: &Options) -> Pressure {
        // Every table is a sorted run a read may have to visit.
        Pressure {
            level: files.len(),
            slowdown: opts.level0_slowdown_writes_trigger,
            stop: opts.level0_stop_writes_trigger,
        }
    }

    fn score(&self, files: &[Arc<FileMeta>], opts: &Options) -> f64 {
        files.len() as f64 / opts.level0_file_num_compaction_trigger as f64
    }

    fn pick(
        &self,
        files: &[Arc<FileMeta>],
        busy: &HashSet<FileNumber>,
        _opts: &Options,
    ) -> Option<Vec<Arc<FileMeta>>> {
        // One L0 compaction at a time: a second one could reorder versions of a key.
        if files.is_empty() || files.iter().any(|f| busy.contains(&f.number)) {
            return None;
        }
        // Every L0 file: all are older than anything flushed later, so newer versions of a key
        // never stay behind in L0 while older ones move down.
        Some(files.to_vec())
    }

    fn manual_inputs(
        &self,
        files: &[Arc<FileMeta>],
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        // The range is widened until it covers every overlapping file transitively, so that
        // all versions of a key in L0 move together.
        let (mut lo, mut hi) = (lo.map(<[u8]>::to_vec), hi.map(<[u8]>::to_vec));
        loop {
            let picked: Vec<Arc<FileMeta>> = files
                .iter()
                .filter(|f| f.overlaps(lo.as_deref(), hi.as_deref()))
                .cloned()
                .collect();
            let mut widened = false;
            for f in &picked {
                if lo.as_deref().is_some_and(|l| f.smallest_user_key() < l) {
                    lo = Some(f.smallest_user_key().to_vec());
                    widened = true;
                }
                if hi.as_deref().is_some_and(|h| f.largest_user_key() > h) {
                    hi = Some(f.largest_user_key().to_vec());
                    widened = true;
                }
            }
            if !widened {
                return picked;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(n: u64, lo: &str, hi: &str, seq: u64) -> Arc<FileMeta> {
        crate::file_meta::test_table(n, lo, hi, 100, seq)
    }

    fn numbers(files: &[Arc<FileMeta>]) -> Vec<u64> {
        files.iter().map(|f| f.number.0).collect()
    }

    #[test]
    fn newest_first_and_no_file_twice() {
        let mut files = vec![
            file(1, "a", "b", 5),
            file(3, "a", "b", 9),
            file(2, "c", "d", 9),
        ];
        Flat.arrange(&mut files).unwrap();
        assert_eq!(numbers(&files), vec![3, 2, 1]);
        let mut twice = vec![file(4, "a", "b", 5), file(4, "a", "b", 5)];
        assert!(Flat.arrange(&mut twice).is_err());
    }

    #[test]
    fn manual_inputs_widen_until_every_overlapping_file_is_in() {
        // [a,c] overlaps [c,f] which overlaps [e,h]; [x,z] stays out.
        let files = vec![
            file(1, "a", "c", 1),
            file(2, "c", "f", 2),
            file(3, "e", "h", 3),
            file(4, "x", "z", 4),
        ];
        let picked = Flat.manual_inputs(&files, Some(b"a"), Some(b"b"));
        let mut n = numbers(&picked);
        n.sort();
        assert_eq!(n, vec![1, 2, 3]);
        assert!(Flat
            .manual_inputs(&files, Some(b"i"), Some(b"w"))
            .is_empty());
        assert_eq!(Flat.manual_inputs(&files, None, None).len(), 4);
    }

    #[test]
    fn picks_all_of_l0_unless_busy_and_presses_by_table_count() {
        let files = vec![file(2, "a", "b", 2), file(1, "c", "d", 1)];
        let o = Options::default();
        assert_eq!(
            numbers(&Flat.pick(&files, &HashSet::new(), &o).unwrap()),
            vec![2, 1]
        );
        let busy: HashSet<FileNumber> = [FileNumber(1)].into();
        assert!(Flat.pick(&files, &busy, &o).is_none());
        let p = Flat.pressure(&files, &o);
        assert_eq!(p.level, 2);
        assert!(!p.slows() && !p.stops());
        let tight = Options {
            level0_slowdown_writes_trigger: 2,
            level0_stop_writes_trigger: 2,
            ..Options::default()
        };
        assert!(Flat.pressure(&files, &tight).stops());
    }
}
