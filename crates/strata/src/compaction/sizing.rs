//! Level targets, level scores and table sizes: the rules `Options::level_sizing` and
//! `Options::table_cut` choose. Pure functions; the pickers and the compaction job ask here.

use crate::options::{LevelSizing, Options, TableCut};
use crate::version::Version;

/// HyperLevelDB's largest output table by input level, in MiB (its `MaxFileSizeForLevel`).
const HYPER_MAX_TABLE_MIB: [u64; 7] = [64, 64, 32, 16, 16, 32, 64];
/// HyperLevelDB's smallest table cut at a grandparent boundary, by input level, in MiB.
const HYPER_MIN_TABLE_MIB: [u64; 7] = [1, 1, 1, 1, 8, 16, 32];
/// The table size HyperLevelDB's figures are for; `target_file_size_base` scales them.
const HYPER_BASE_MIB: u64 = 64;

/// The (smallest, largest) table a compaction out of `input_level` writes, in bytes. The
/// smallest is where a table may first be cut at a grandparent boundary
/// (`TableCut::GrandparentBoundaries`); with `GrandparentOverlap` both are
/// `target_file_size_base`.
pub fn table_size_range(opts: &Options, input_level: usize) -> (u64, u64) {
    let target = opts.target_file_size_base;
    match opts.table_cut {
        TableCut::GrandparentOverlap => (target, target),
        TableCut::GrandparentBoundaries => {
            let i = input_level.min(HYPER_MAX_TABLE_MIB.len() - 1);
            let scale = |mib: u64| {
                (u128::from(target) * u128::from(mib) / u128::from(HYPER_BASE_MIB)) as u64
            };
            let max = scale(HYPER_MAX_TABLE_MIB[i]).max(1);
            (scale(HYPER_MIN_TABLE_MIB[i]).clamp(1, max), max)
        }
    }
}

/// The most input bytes (both levels) a HyperLevelDB-style pick out of `level` takes.
pub fn max_compaction_bytes(opts: &Options, level: usize) -> u64 {
    table_size_range(opts, level).1.saturating_mul(16)
}

/// Urgency of sorted level `level` (>= 1): >= 1 means it is over its target.
pub fn level_score(v: &Version, opts: &Options, level: usize) -> f64 {
    let target = opts.max_bytes_for_level(level).max(1);
    let by_bytes = v.level_bytes(level) as f64 / target as f64;
    match opts.level_sizing {
        LevelSizing::Classic => by_bytes,
        LevelSizing::HyperLevelDb => {
            // Tables the level holds at its mean table size, rounded down as HyperLevelDB's
            // integer division does (3 for its L1: 128 MiB / 32.5 MiB).
            let (min, max) = table_size_range(opts, level);
            let mean = ((min + max) / 2).max(1);
            let room = (target / mean).max(1);
            by_bytes.max(v.files(level).len() as f64 / room as f64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn hyperleveldb_sizes_match_its_tables() {
        let o = Options::hyperleveldb();
        let targets: Vec<u64> = (1..7).map(|l| o.max_bytes_for_level(l) / MIB).collect();
        assert_eq!(targets, vec![128, 512, 4096, 32768, 262144, 2097152]);
        assert_eq!(table_size_range(&o, 0), (MIB, 64 * MIB));
        assert_eq!(table_size_range(&o, 2), (MIB, 32 * MIB));
        assert_eq!(table_size_range(&o, 4), (8 * MIB, 16 * MIB));
        assert_eq!(max_compaction_bytes(&o, 1), 1024 * MIB);
        // A level is over its limit at 3 tables in L1, 31 in L2, 481 in L3.
        for (level, tables) in [(1, 3), (2, 31), (3, 481)] {
            let (min, max) = table_size_range(&o, level);
            assert_eq!(o.max_bytes_for_level(level) / ((min + max) / 2), tables);
        }
        // Classic cutting: one size; classic sizing: base x multiplier.
        let d = Options::default();
        assert_eq!(table_size_range(&d, 3), (64 * MIB, 64 * MIB));
        assert_eq!(d.max_bytes_for_level(3), 25600 * MIB);
        // A smaller target scales HyperLevelDB's tables (OHDB varied it).
        let small = Options {
            target_file_size_base: 8 * MIB,
            ..Options::hyperleveldb()
        };
        assert_eq!(table_size_range(&small, 1), (MIB / 8, 8 * MIB));
    }
}
