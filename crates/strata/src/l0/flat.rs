//! [`Flat`]: each flush adds one L0 table; L0 -> L1 takes every L0 table at once.

use crate::compaction::{Compaction, CompactionReason, PickContext};
use crate::options::Options;
use crate::version::Version;

use super::Level0;

/// LevelDB/RocksDB's L0: a list of possibly overlapping tables, newest first.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flat;

impl Level0 for Flat {
    fn name(&self) -> &'static str {
        "flat"
    }

    fn sorted_runs(&self, v: &Version) -> usize {
        v.files(0).len()
    }

    fn score(&self, v: &Version, opts: &Options) -> f64 {
        v.files(0).len() as f64 / opts.level0_file_num_compaction_trigger as f64
    }

    fn pick(&self, ctx: &PickContext<'_>) -> Option<Compaction> {
        let files = ctx.version.files(0);
        // One L0 compaction at a time: a second one could reorder versions of a key.
        if files.is_empty() || files.iter().any(|f| ctx.busy.contains(&f.number)) {
            return None;
        }
        // Every L0 file: all are older than anything flushed later, so newer versions of a key
        // never stay behind in L0 while older ones move down.
        ctx.finish(0, files.to_vec(), CompactionReason::L0Trigger)
    }
}
