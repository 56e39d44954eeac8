//! Level targets, level scores and table sizes: the rules `Options::level_sizing` and
//! `Options::table_cut` choose. Pure functions; the pickers and the compaction job ask here.

use crate::options::{CompactionPicker, LevelSizing, Options, TableCut};
use crate::version::Version;

/// HyperLevelDB's largest output table by input level, in MiB (its `MaxFileSizeForLevel`).
const HYPER_MAX_TABLE_MIB: [u64; 7] = [64, 64, 32, 16, 16, 32, 64];
/// HyperLevelDB's smallest table cut at a grandparent boundary, by input level, in MiB.
const HYPER_MIN_TABLE_MIB: [u64; 7] = [1, 1, 1, 1, 8, 16, 32];
/// The table size HyperLevelDB's figures are for; `target_file_size_base` scales them.
const HYPER_BASE_MIB: u64 = 64;

/// The (smallest, largest) table a compaction out of `input_level` writes, in bytes. The
/// smallest is where a table may first be cut at a grandparent boundary
/// (`TableCut::GrandparentBoundaries`); with `GrandparentOverlap` and `Size` both are
/// `target_file_size_base`.
pub fn table_size_range(opts: &Options, input_level: usize) -> (u64, u64) {
    let target = opts.target_file_size_base;
    match opts.table_cut {
        TableCut::GrandparentOverlap | TableCut::Size => (target, target),
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

/// The most input bytes (both levels) a HyperLevelDB-style run out of `level` takes: 16
/// times the level's largest output table, or with HyperLevelDB 1.0's picker its
/// `MaxCompactionBytesForLevel` (128 MiB out of L0-L2, 256 MiB deeper, for its 8 MiB
/// tables: 16 and 32 tables).
pub fn max_compaction_bytes(opts: &Options, level: usize) -> u64 {
    let tables = match opts.compaction_picker {
        CompactionPicker::HyperLevelDb10 if level >= 3 => 32,
        _ => 16,
    };
    table_size_range(opts, level).1.saturating_mul(tables)
}

/// The level L0 compacts into: 1, or with [`LevelSizing::Dynamic`] the base level.
pub fn base_level(v: &Version, opts: &Options) -> usize {
    match opts.level_sizing {
        LevelSizing::Dynamic => dynamic(v, opts).0,
        _ => 1,
    }
}

/// Where a compaction out of `level` writes: the base level for L0, the next level below.
pub fn output_level(v: &Version, opts: &Options, level: usize) -> usize {
    if level == 0 {
        base_level(v, opts)
    } else {
        level + 1
    }
}

/// Target bytes of sorted level `level` (>= 1); 0 for the empty levels above the base level
/// of [`LevelSizing::Dynamic`].
pub fn level_target(v: &Version, opts: &Options, level: usize) -> u64 {
    match opts.level_sizing {
        LevelSizing::Dynamic => {
            let (base, largest) = dynamic(v, opts);
            let last = v.num_levels() - 1;
            if level < base {
                return 0;
            }
            let mut t = largest as f64;
            for _ in level..last {
                t /= opts.max_bytes_for_level_multiplier;
            }
            t as u64
        }
        LevelSizing::Flattened => {
            let l1 = v.l0.capacity(opts).max(opts.max_bytes_for_level_base);
            let mut t = l1 as f64;
            for _ in 1..level {
                t *= opts.max_bytes_for_level_multiplier;
            }
            t as u64
        }
        _ => opts.max_bytes_for_level(level),
    }
}

/// [`LevelSizing::Dynamic`]: (base level, bytes of the largest level >= 1). Going up from the
/// last level, each level's target is the one below over the multiplier; the base level is
/// the first whose target is at most `max_bytes_for_level_base` (the last level while the
/// largest level holds no more than that).
fn dynamic(v: &Version, opts: &Options) -> (usize, u64) {
    let last = v.num_levels() - 1;
    let largest = (1..=last).map(|l| v.level_bytes(l)).max().unwrap_or(0);
    let mut level = last;
    let mut target = largest as f64;
    while level > 1 && target > opts.max_bytes_for_level_base as f64 {
        target /= opts.max_bytes_for_level_multiplier;
        level -= 1;
    }
    (level, largest)
}

/// Urgency of a compaction out of sorted level `level` (>= 1): >= 1 means it is over its
/// target. The last level scores 0 however full it is: it has no level to compact into, so
/// no compaction can lower its score, and a picker that compared it with the level above
/// (HyperLevelDB's) would wait on it for ever (issue 35; HyperLevelDB does not score it).
pub fn level_score(v: &Version, opts: &Options, level: usize) -> f64 {
    if level + 1 >= v.num_levels() {
        return 0.0;
    }
    let bytes = v.level_bytes(level);
    if opts.level_sizing == LevelSizing::Dynamic {
        let target = level_target(v, opts, level);
        return match (target, bytes) {
            (_, 0) => 0.0,
            // A level above the base level holds tables (the sizing was switched, or the
            // tree shrank): move them down first.
            (0, _) => 1e9,
            (t, b) => b as f64 / t as f64,
        };
    }
    let target = level_target(v, opts, level).max(1);
    let by_bytes = bytes as f64 / target as f64;
    match opts.level_sizing {
        LevelSizing::Classic
        | LevelSizing::Dynamic
        | LevelSizing::HyperLevelDb10
        | LevelSizing::Flattened => by_bytes,
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
        // HyperLevelDB 1.0: one table size, L1 = L2, then x10; caps of 16 and 32 tables.
        let h = Options::hyperleveldb_1_0();
        let targets: Vec<u64> = (1..7).map(|l| h.max_bytes_for_level(l) / MIB).collect();
        assert_eq!(targets, vec![100, 100, 1000, 10000, 100000, 1000000]);
        for level in 0..7 {
            assert_eq!(table_size_range(&h, level), (8 * MIB, 8 * MIB));
        }
        let caps: Vec<u64> = (0..7).map(|l| max_compaction_bytes(&h, l) / MIB).collect();
        assert_eq!(caps, vec![128, 128, 128, 256, 256, 256, 256]);
        // A smaller target scales HyperLevelDB's tables (OHDB varied it).
        let small = Options {
            target_file_size_base: 8 * MIB,
            ..Options::hyperleveldb()
        };
        assert_eq!(table_size_range(&small, 1), (MIB / 8, 8 * MIB));
    }
}
