use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::compaction::picker;
use crate::filename::FileNumber;
use crate::key::{internal_key, SeqNo, ValueKind};
use crate::options::Options;
use crate::placement::Placement;
use crate::version::{FileMeta, Version};

fn file(n: u64, lo: &str, hi: &str, size: u64, seq: u64) -> Arc<FileMeta> {
    crate::file_meta::test_table(n, lo, hi, size, seq)
}

fn opts() -> Options {
    Options {
        max_bytes_for_level_base: 1000,
        target_file_size_base: 100,
        level0_file_num_compaction_trigger: 4,
        ..Options::default()
    }
}

fn ctx<'a>(
    v: &'a Version,
    o: &'a Options,
    busy: &'a HashSet<FileNumber>,
    p: &'a Placement,
) -> PickContext<'a> {
    PickContext {
        version: v,
        opts: o,
        busy,
        compact_pointers: &[],
        placement: p,
        straight_reads: u64::MAX,
        idle: false,
        expiry: None,
    }
}

#[test]
fn l0_trigger_takes_all_l0_and_overlapping_l1() {
    let mut v = Version::new(4);
    v.levels[0] = vec![
        file(10, "c", "f", 50, 4),
        file(9, "a", "b", 50, 3),
        file(8, "e", "g", 50, 2),
        file(7, "x", "y", 50, 1),
    ]
    .into();
    v.levels[1] = vec![
        file(1, "a", "a", 50, 0),
        file(2, "d", "d", 50, 0),
        file(3, "z", "z", 50, 0),
    ]
    .into();
    let (o, busy, p) = (
        opts(),
        HashSet::new(),
        Placement::new(Path::new("/db"), None, None),
    );
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!(c.level, 0);
    assert_eq!(c.inputs.len(), 4);
    let next: Vec<u64> = c.next_inputs.iter().map(|f| f.number.0).collect();
    assert_eq!(next, vec![1, 2]);
    assert!(!c.trivial_move);
    // Busy L0 blocks a second L0 compaction.
    let busy: HashSet<FileNumber> = [FileNumber(9)].into();
    assert!(picker::pick(&ctx(&v, &o, &busy, &p)).is_none());
}

#[test]
fn below_trigger_nothing_to_do() {
    let mut v = Version::new(4);
    v.levels[0] = vec![file(9, "a", "b", 50, 3)].into();
    let (o, busy, p) = (
        opts(),
        HashSet::new(),
        Placement::new(Path::new("/db"), None, None),
    );
    assert!(picker::pick(&ctx(&v, &o, &busy, &p)).is_none());
}

#[test]
fn oversized_level_picks_min_overlap_file_and_trivial_moves() {
    let mut v = Version::new(4);
    v.levels[1] = vec![file(1, "a", "c", 600, 0), file(2, "m", "p", 600, 0)].into();
    v.levels[2] = vec![file(3, "b", "b", 500, 0)].into();
    let (o, busy, p) = (
        opts(),
        HashSet::new(),
        Placement::new(Path::new("/db"), None, None),
    );
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!((c.level, c.inputs[0].number.0), (1, 2));
    assert!(c.trivial_move);
    // With a separate directory for deeper levels, an L0 file never moves trivially.
    let mut v0 = Version::new(4);
    v0.levels[0] = vec![file(5, "a", "b", 50, 1); 4].into();
    let p2 = Placement::new(Path::new("/db"), None, Some(Path::new("/deep")));
    let c = picker::pick_manual(&ctx(&v0, &o, &busy, &p2), 0, None, None).unwrap();
    assert!(!c.trivial_move);
}

#[test]
fn round_robin_follows_the_cursor() {
    let mut v = Version::new(4);
    v.levels[1] = vec![file(1, "a", "c", 600, 0), file(2, "m", "p", 600, 0)].into();
    let o = Options {
        compaction_priority: crate::options::CompactionPriority::RoundRobin,
        ..opts()
    };
    let busy = HashSet::new();
    let p = Placement::new(Path::new("/db"), None, None);
    let cp = vec![Vec::new(), internal_key(b"c", SeqNo(0), ValueKind::Put)];
    let c = picker::pick_level(
        &PickContext {
            version: &v,
            opts: &o,
            busy: &busy,
            compact_pointers: &cp,
            placement: &p,
            straight_reads: 0,
            idle: false,
            expiry: None,
        },
        1,
    )
    .unwrap();
    assert_eq!(c.inputs[0].number.0, 2);
}

#[test]
fn pending_bytes_grow_with_excess() {
    let mut v = Version::new(4);
    let o = opts();
    assert_eq!(picker::pending_compaction_bytes(&v, &o), 0);
    v.levels[1] = vec![file(1, "a", "c", 3000, 0)].into();
    assert_eq!(picker::pending_compaction_bytes(&v, &o), 20_000);
}

#[test]
fn trivial_moves_go_before_a_higher_scoring_l0() {
    let mut v = Version::new(4);
    v.levels[0] = vec![file(9, "a", "z", 50, 3); 8].into();
    v.levels[1] = vec![file(1, "a", "c", 600, 0), file(2, "m", "p", 600, 0)].into();
    let (o, busy, p) = (
        opts(),
        HashSet::new(),
        Placement::new(Path::new("/db"), None, None),
    );
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!(c.level, 1);
    assert!(c.trivial_move);
    // Nothing movable for free (L2 overlaps both): L0, the higher score, goes first.
    v.levels[2] = vec![file(3, "b", "b", 500, 0), file(4, "n", "n", 500, 0)].into();
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!(c.level, 0);
}

#[test]
fn read_triggered_compaction_waits_for_the_allowance_and_for_size_compactions() {
    let mut v = Version::new(4);
    v.levels[1] = vec![file(1, "a", "c", 50, 2), file(2, "d", "f", 50, 2)].into();
    v.levels[2] = vec![file(3, "a", "z", 500, 1)].into();
    v.levels[3] = vec![file(4, "a", "z", 500, 0)].into();
    let (o, busy, p) = (
        opts(),
        HashSet::new(),
        Placement::new(Path::new("/db"), None, None),
    );
    let allowed = o.allowed_read_charges(50).unwrap();
    assert_eq!(allowed, 100, "small tables get LevelDB's floor of 100");
    for _ in 0..allowed - 1 {
        v.levels[1][1].read_charges.add();
    }
    assert!(picker::pick(&ctx(&v, &o, &busy, &p)).is_none());
    v.levels[1][1].read_charges.add();
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!(c.reason, CompactionReason::Reads);
    assert_eq!((c.level, c.inputs[0].number), (1, FileNumber(2)));
    assert_eq!(c.next_inputs[0].number, FileNumber(3));
    // A busy candidate is skipped; the last level is never a candidate.
    let busy2: HashSet<FileNumber> = [FileNumber(2)].into();
    assert!(picker::pick(&ctx(&v, &o, &busy2, &p)).is_none());
    for _ in 0..1000 {
        v.levels[3][0].read_charges.add();
    }
    assert!(picker::pick(&ctx(&v, &o, &busy2, &p)).is_none());
    // A size-triggered compaction goes first.
    v.levels[0] = vec![
        file(10, "a", "b", 50, 9),
        file(11, "a", "b", 50, 8),
        file(12, "a", "b", 50, 7),
        file(13, "a", "b", 50, 6),
    ]
    .into();
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!(c.reason, CompactionReason::L0Trigger);
    // Disabled: never.
    v.levels[0] = Vec::new().into();
    let off = Options {
        read_compaction_bytes: 0,
        ..opts()
    };
    assert!(picker::pick(&ctx(&v, &off, &busy, &p)).is_none());
    // A charged L0 table brings all of L0 down, below the count trigger.
    v.levels[0] = vec![file(20, "a", "b", 50, 9), file(21, "a", "c", 50, 8)].into();
    for _ in 0..allowed {
        v.levels[0][1].read_charges.add();
    }
    let c = picker::pick(&ctx(&v, &o, &busy2, &p)).unwrap();
    assert_eq!(
        (c.reason, c.level, c.inputs.len()),
        (CompactionReason::Reads, 0, 2)
    );
    v.levels[0] = Vec::new().into();
    // A moved file (a clone of its metadata) starts with a fresh allowance.
    assert_eq!((*v.levels[1][1]).clone().read_charges.get(), 0);
}

/// HyperLevelDB's picker with small sizes: L1 target 1,000 bytes, tables of 100 bytes at most
/// (so L1 is over its limit by table count at 1000 / ((min + max) / 2) tables).
fn hyper_opts() -> Options {
    Options {
        compaction_picker: crate::options::CompactionPicker::HyperLevelDb,
        level_sizing: crate::options::LevelSizing::HyperLevelDb,
        table_cut: crate::options::TableCut::GrandparentBoundaries,
        read_compaction_bytes: 0,
        ..opts()
    }
}

fn numbers(files: &[Arc<FileMeta>]) -> Vec<u64> {
    files.iter().map(|f| f.number.0).collect()
}

#[test]
fn hyperleveldb_l0_waits_while_l1_is_over_its_limit() {
    let (o, busy, p) = (
        hyper_opts(),
        HashSet::new(),
        Placement::new(Path::new("/db"), None, None),
    );
    let mut v = Version::new(4);
    v.levels[0] = (0..4)
        .map(|i| file(10 + i, "a", "z", 50, i + 1))
        .collect::<Vec<_>>()
        .into();
    // L1 within its limit (one small table): L0 goes, all four tables.
    v.levels[1] = vec![file(1, "b", "c", 50, 0)].into();
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!(
        (c.level, c.inputs.len(), numbers(&c.next_inputs)),
        (0, 4, vec![1])
    );
    // L1 over its limit (bytes): L1 drains first, although L0 is due.
    v.levels[1] = vec![file(1, "b", "c", 600, 0), file(2, "m", "p", 600, 0)].into();
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!(c.level, 1);
    // More than 32 L0 tables: the 32 oldest.
    v.levels[1] = Default::default();
    v.levels[0] = (0..40)
        .rev()
        .map(|i| file(100 + i, "a", "z", 10, i + 1))
        .collect::<Vec<_>>()
        .into();
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    let mut n = numbers(&c.inputs);
    n.sort();
    assert_eq!(n, (100..132).collect::<Vec<_>>());
}

/// OHDB's buckets wait for L1 as a flat L0 does (the paper's mechanism); only
/// `l0_skips_l1_wait` lets a full bucket go while L1 is over its limit.
#[test]
fn buckets_wait_for_l1_unless_told_not_to() {
    use crate::options::{BucketBoundaries, L0Layout};
    let p = Placement::new(Path::new("/db"), None, None);
    let busy = HashSet::new();
    let mut o = Options {
        l0_layout: L0Layout::Buckets,
        l0_buckets: 4,
        bucket_boundaries: BucketBoundaries::KeyPrefix,
        bucket_compaction_trigger: 2,
        ..hyper_opts()
    };
    let mut v = Version::new(4);
    v.l0 = crate::l0::configured(
        &o,
        &crate::l0::L0Context::new(
            crate::registry::LAYOUTS,
            &o,
            &Placement::new(Path::new("/db"), None, None),
        ),
    )
    .unwrap();
    // A full bucket (two tables of keys starting with 'a'), and L1 over its limit.
    let mut l0 = vec![file(10, "a1", "a5", 50, 1), file(11, "a2", "a6", 50, 2)];
    v.l0.arrange(&mut l0).unwrap();
    v.levels[0] = l0.into();
    v.levels[1] = vec![file(1, "b", "c", 600, 0), file(2, "m", "p", 600, 0)].into();
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!(c.level, 1, "the bucket waits while L1 drains");
    o.l0_skips_l1_wait = true;
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!(
        (c.level, c.inputs.len()),
        (0, 2),
        "the variant merges the bucket at once"
    );
}

#[test]
fn hyperleveldb_picks_the_shallowest_level_not_fuller_than_the_next() {
    let (o, busy, p) = (
        hyper_opts(),
        HashSet::new(),
        Placement::new(Path::new("/db"), None, None),
    );
    let mut v = Version::new(5);
    // L1 at score 1.2 by bytes; L2 (target 4,000) at 2.0: L1 must not be pushed into the
    // fuller L2, so L2 goes first.
    v.levels[1] = vec![file(1, "a", "c", 1200, 0)].into();
    v.levels[2] = vec![file(2, "a", "b", 8000, 0)].into();
    v.levels[3] = vec![file(3, "a", "a", 10, 0)].into();
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!(c.level, 2);
}

/// HyperLevelDB 1.0's picker with small sizes: tables of 100 bytes, L1 and L2 of 1,000
/// bytes, L3 10,000.
fn hyper10_opts() -> Options {
    Options {
        compaction_picker: crate::options::CompactionPicker::HyperLevelDb10,
        level_sizing: crate::options::LevelSizing::HyperLevelDb10,
        table_cut: crate::options::TableCut::Size,
        read_compaction_bytes: 0,
        ..opts()
    }
}

/// 1.0 relieves the deepest of a chain of full levels first, and a level (L0 too) goes
/// only while the next one is under its target; 1.2 compares neighbouring scores.
#[test]
fn hyperleveldb_1_0_picks_a_full_level_above_one_that_is_not() {
    let (busy, p) = (HashSet::new(), Placement::new(Path::new("/db"), None, None));
    let (o10, o12) = (hyper10_opts(), hyper_opts());
    let mut v = Version::new(5);
    // L1 at 1.2, L2 at 1.1 (both targets 1,000 under 1.0's sizing), L3 nearly empty.
    v.levels[1] = vec![file(1, "a", "c", 1200, 0)].into();
    v.levels[2] = vec![file(2, "a", "b", 1100, 0)].into();
    v.levels[3] = vec![file(3, "a", "a", 10, 0)].into();
    let c = picker::pick(&ctx(&v, &o10, &busy, &p)).unwrap();
    assert_eq!(c.level, 2, "1.0: L2 is full and L3 is not");
    // L0 due and L1 exactly at its target: 1.0 drains L1 (L0 goes only below 1), while
    // 1.2 lets L0 go (L1 <= 1).
    v.levels[0] = (0..4)
        .map(|i| file(10 + i, "a", "z", 50, i + 1))
        .collect::<Vec<_>>()
        .into();
    v.levels[1] = vec![file(1, "a", "c", 1000, 0)].into();
    v.levels[2] = vec![file(2, "a", "b", 100, 0)].into();
    let c = picker::pick(&ctx(&v, &o10, &busy, &p)).unwrap();
    assert_eq!(c.level, 1);
    let o12 = Options {
        max_bytes_for_level_base: 1000,
        ..o12
    };
    let c = picker::pick(&ctx(&v, &o12, &busy, &p)).unwrap();
    assert_eq!(c.level, 0);
    // L1 under its target: L0 goes under 1.0 too.
    v.levels[1] = vec![file(1, "a", "c", 900, 0)].into();
    let c = picker::pick(&ctx(&v, &o10, &busy, &p)).unwrap();
    assert_eq!(c.level, 0);
}

/// 1.0 merges a whole level (out of L1-L3) when its bytes at the best run's ratio reach the
/// next level's bytes; 1.2 takes the best run.
#[test]
fn hyperleveldb_1_0_merges_a_whole_level_that_outweighs_the_next() {
    let (busy, p) = (HashSet::new(), Placement::new(Path::new("/db"), None, None));
    // Three tables (numbers n..n+3) over the ranges a-b, c-d, e-f, of these sizes.
    let three = |n: u64, sizes: [u64; 3]| -> Arc<Vec<Arc<FileMeta>>> {
        let ranges = [("a", "b"), ("c", "d"), ("e", "f")];
        (0..3)
            .map(|i| file(n + i as u64, ranges[i].0, ranges[i].1, sizes[i], 0))
            .collect::<Vec<_>>()
            .into()
    };
    let mut v = Version::new(5);
    v.levels[1] = three(1, [400, 400, 400]);
    // Best run: table 1 (or 1-2) at 400 / 100 = 4; 1,200 x 4 >= 900 below. (With L1 and
    // L2 of one target, a full L1 over an L2 within its target nearly always goes whole.)
    v.levels[2] = three(4, [100, 100, 700]);
    let c = picker::pick(&ctx(&v, &hyper10_opts(), &busy, &p)).unwrap();
    assert_eq!(
        (c.level, numbers(&c.inputs), numbers(&c.next_inputs)),
        (1, vec![1, 2, 3], vec![4, 5, 6])
    );
    let o12 = Options {
        max_bytes_for_level_base: 1000,
        ..hyper_opts()
    };
    let c = picker::pick(&ctx(&v, &o12, &busy, &p)).unwrap();
    assert_eq!((c.level, numbers(&c.inputs)), (1, vec![1]));
    // One level down (L2 of 1,000 bytes over L3 of 10,000): the level below heavier than
    // the level at the best ratio (1,200 x 4 < 9,200), the best run only.
    let mut v = Version::new(5);
    v.levels[2] = three(1, [400, 400, 400]);
    v.levels[3] = three(4, [100, 100, 9000]);
    let c = picker::pick(&ctx(&v, &hyper10_opts(), &busy, &p)).unwrap();
    assert_eq!((c.level, numbers(&c.inputs)), (2, vec![1]));
}

#[test]
fn hyperleveldb_moves_every_non_overlapping_table_at_once() {
    let (o, busy, p) = (
        hyper_opts(),
        HashSet::new(),
        Placement::new(Path::new("/db"), None, None),
    );
    let mut v = Version::new(4);
    v.levels[1] = vec![
        file(1, "a", "b", 400, 0),
        file(2, "c", "d", 400, 0),
        file(3, "m", "n", 400, 0),
        file(4, "x", "y", 400, 0),
    ]
    .into();
    v.levels[2] = vec![file(5, "c", "c", 100, 0)].into();
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert!(c.trivial_move);
    assert_eq!(numbers(&c.inputs), vec![1, 3, 4]);
    // A busy one stays.
    let busy: HashSet<FileNumber> = [FileNumber(3)].into();
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!(numbers(&c.inputs), vec![1, 4]);
}

#[test]
fn hyperleveldb_takes_the_run_with_the_best_ratio_under_the_cap() {
    let (o, busy, p) = (
        hyper_opts(),
        HashSet::new(),
        Placement::new(Path::new("/db"), None, None),
    );
    // Cap: 16 x 100 bytes (the largest table out of L1) = 1,600 bytes of inputs.
    let mut v = Version::new(4);
    v.levels[1] = vec![
        file(1, "a", "b", 300, 0),
        file(2, "c", "d", 300, 0),
        file(3, "e", "f", 300, 0),
        file(4, "g", "h", 300, 0),
    ]
    .into();
    v.levels[2] = vec![
        file(5, "a", "a", 900, 0), // under table 1 only: ratio 1/3
        file(6, "c", "f", 200, 0), // under tables 2 and 3: ratio 3 for the pair
        file(7, "g", "g", 600, 0), // under table 4: 1/2
    ]
    .into();
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert!(!c.trivial_move);
    assert_eq!(
        (numbers(&c.inputs), numbers(&c.next_inputs)),
        (vec![2, 3], vec![6])
    );
    // Nothing fits under the cap: the table overlapping the fewest tables below.
    // (L2 stays less urgent than L1: 4,200 of 4,000 bytes against 1,200 of 1,000.)
    v.levels[2] = vec![
        file(5, "a", "c", 1400, 0),
        file(6, "d", "d", 1400, 0),
        file(7, "e", "h", 1400, 0),
    ]
    .into();
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!(c.level, 1);
    assert_eq!(c.inputs.len(), 1);
    assert_eq!(c.next_inputs.len(), 1);
}

#[test]
fn read_triggered_compactions_wait_for_straight_reads() {
    let mut v = Version::new(4);
    v.levels[1] = vec![file(1, "a", "c", 100, 0)].into();
    v.levels[2] = vec![file(2, "a", "c", 100, 0)].into();
    for _ in 0..100 {
        v.levels[1][0].read_charges.add();
    }
    let o = Options {
        read_compaction_min_straight_reads: 10,
        ..opts()
    };
    let (busy, p) = (HashSet::new(), Placement::new(Path::new("/db"), None, None));
    let mut c = ctx(&v, &o, &busy, &p);
    c.straight_reads = 10;
    assert!(picker::pick(&c).is_none());
    c.straight_reads = 11;
    assert_eq!(picker::pick(&c).unwrap().reason, CompactionReason::Reads);
}

/// `LevelSizing::Flattened`: L1 holds what L0 may hold (its trigger's memtables), not less
/// than `max_bytes_for_level_base`; deeper levels grow by the multiplier; scores follow.
#[test]
fn flattened_sizing_sizes_l1_by_l0() {
    use crate::compaction::sizing;
    use crate::options::LevelSizing;
    let o = Options {
        level_sizing: LevelSizing::Flattened,
        write_buffer_size: 64 << 10,
        level0_file_num_compaction_trigger: 16,
        max_bytes_for_level_base: 256 << 10,
        max_bytes_for_level_multiplier: 10.0,
        ..opts()
    };
    let mut v = Version::new(4);
    assert_eq!(
        sizing::level_target(&v, &o, 1),
        1 << 20,
        "16 memtables of 64 KiB"
    );
    assert_eq!(sizing::level_target(&v, &o, 2), 10 << 20);
    v.levels[1] = vec![file(1, "a", "z", 900 << 10, 0)].into();
    assert!(
        sizing::level_score(&v, &o, 1) < 1.0,
        "under the flattened L1"
    );
    let classic = Options {
        level_sizing: LevelSizing::Classic,
        ..o.clone()
    };
    assert!(
        sizing::level_score(&v, &classic, 1) > 1.0,
        "over the classic L1"
    );
    // A base larger than L0's capacity wins.
    let big = Options {
        max_bytes_for_level_base: 4 << 20,
        ..o
    };
    assert_eq!(sizing::level_target(&v, &big, 1), 4 << 20);
}

/// `LevelSizing::Dynamic`: L0 compacts into the base level (the last level while the tree
/// is smaller than `max_bytes_for_level_base`), the levels above it stay empty, and the
/// targets are set from the largest level up.
#[test]
fn dynamic_sizing_compacts_l0_into_the_base_level() {
    use crate::compaction::sizing;
    use crate::options::LevelSizing;
    let o = Options {
        level_sizing: LevelSizing::Dynamic,
        max_bytes_for_level_multiplier: 10.0,
        ..opts()
    };
    let (busy, p) = (HashSet::new(), Placement::new(Path::new("/db"), None, None));
    // A small tree: everything below the base size goes straight to the last level (L3).
    let mut v = Version::new(4);
    v.levels[0] = vec![file(9, "a", "b", 50, 3); 4].into();
    v.levels[3] = vec![file(1, "a", "z", 800, 0)].into();
    assert_eq!(sizing::base_level(&v, &o), 3);
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!((c.level, c.output_level), (0, 3));
    assert_eq!(c.next_inputs.len(), 1);
    // A larger one: the last level holds 50,000 bytes, so L2's target is 5,000 (over the
    // base size, 1,000) and L1's 500: L1 is the base level.
    let mut v = Version::new(4);
    v.levels[3] = vec![file(1, "a", "z", 50_000, 0)].into();
    v.levels[2] = vec![file(2, "a", "m", 6_000, 0)].into();
    assert_eq!(sizing::base_level(&v, &o), 1);
    assert_eq!(sizing::level_target(&v, &o, 1), 500);
    assert_eq!(sizing::level_target(&v, &o, 2), 5_000);
    assert!(sizing::level_score(&v, &o, 2) > 1.0);
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!((c.level, c.output_level), (2, 3));
    // Tables left above the base level are moved down first.
    let mut v = Version::new(4);
    v.levels[1] = vec![file(3, "a", "b", 10, 0)].into();
    v.levels[3] = vec![file(1, "c", "z", 800, 0)].into();
    assert_eq!(sizing::base_level(&v, &o), 3);
    assert!(sizing::level_score(&v, &o, 1) >= 1.0);
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!((c.level, c.output_level), (1, 2));
    assert!(c.trivial_move);
}

/// A random tree under random options derived from `preset`, or `None` when `validate`
/// refuses the options drawn.
fn random_case(
    rng: &mut strata_testkit::Rng,
    preset: &str,
) -> Option<(Version, Options, Placement)> {
    use crate::options::{BucketBoundaries, CompactionPicker, L0Layout, LevelSizing};
    let mut o = Options::preset(preset).unwrap();
    o.num_levels = 2 + rng.below(6) as usize;
    o.max_mem_compaction_level = o.max_mem_compaction_level.min(o.num_levels - 1);
    o.target_file_size_base = 16 << (10 + rng.below(4));
    o.max_bytes_for_level_base = (64 << 10).max(o.target_file_size_base << rng.below(5));
    o.max_bytes_for_level_multiplier = [2.0, 4.0, 10.0][rng.below(3) as usize];
    if rng.chance(0.6) {
        // L0 triggers varied, a stop trigger always finite.
        o.level0_file_num_compaction_trigger = 1 + rng.below(6) as usize;
        o.level0_slowdown_writes_trigger =
            o.level0_file_num_compaction_trigger + rng.below(6) as usize;
        o.level0_stop_writes_trigger = o.level0_slowdown_writes_trigger + rng.below(6) as usize;
    }
    if rng.chance(0.3) {
        o.compaction_picker = [
            CompactionPicker::Leveled,
            CompactionPicker::HyperLevelDb,
            CompactionPicker::HyperLevelDb10,
        ][rng.below(3) as usize];
        o.level_sizing = [
            LevelSizing::Classic,
            LevelSizing::Dynamic,
            LevelSizing::HyperLevelDb,
            LevelSizing::HyperLevelDb10,
            LevelSizing::Flattened,
        ][rng.below(5) as usize];
    }
    if rng.chance(0.3) {
        o.l0_layout = [L0Layout::Flat, L0Layout::Buckets][rng.below(2) as usize];
    }
    o.l0_buckets = 1 + rng.below(8) as usize;
    o.bucket_boundaries =
        [BucketBoundaries::KeyPrefix, BucketBoundaries::Sampled][rng.below(2) as usize];
    o.bucket_compaction_trigger = 1 + rng.below(8) as usize;
    o.l0_skips_l1_wait = rng.chance(0.5);
    if rng.chance(0.3) {
        o.hard_pending_compaction_bytes_limit = 1 + rng.below(64 << 10);
        o.soft_pending_compaction_bytes_limit =
            rng.below(o.hard_pending_compaction_bytes_limit + 1);
    }
    if let Err(e) = o.validate() {
        if std::env::var_os("STRATA_SHOW_REFUSED").is_some() {
            eprintln!("{preset}: {e}");
        }
        return None;
    }

    let mut v = Version::new(o.num_levels);
    v.l0 = crate::l0::configured(
        &o,
        &crate::l0::L0Context::new(
            crate::registry::LAYOUTS,
            &o,
            &Placement::new(Path::new("/db"), None, None),
        ),
    )
    .unwrap();
    let mut number = 1;
    let mut next = || {
        number += 1;
        number
    };
    // L0: tables whose keys share their first byte (so each lies in one bucket), newer ones
    // with higher sequence numbers.
    let stop = o.level0_stop_writes_trigger.min(24);
    let mut l0 = Vec::new();
    // A matrix keeps no L0 tables (its pressure is its region's pages, which a tree of
    // tables cannot build: tests/matrix.rs covers it).
    let l0_tables = if o.l0_layout == L0Layout::Matrix {
        0
    } else {
        rng.below(stop as u64 + 4)
    };
    for seq in 0..l0_tables {
        let b = rng.below(256) as u8;
        let (x, y) = (rng.below(256) as u8, rng.below(256) as u8);
        let size = 1 + rng.below(2 * o.target_file_size_base);
        l0.push(file_bytes(
            next(),
            &[b, x.min(y)],
            &[b, x.max(y)],
            size,
            1000 + seq,
        ));
    }
    v.l0.arrange(&mut l0).unwrap();
    v.levels[0] = l0.into();
    // Deeper levels: sorted, disjoint tables over two-byte keys, a level's bytes anywhere
    // from empty to several times its target (the last level too).
    for level in 1..o.num_levels {
        let target = o.max_bytes_for_level(level).min(1 << 24);
        let want = rng
            .below(4 * target / o.target_file_size_base.max(1) + 2)
            .min(40);
        let mut bounds: Vec<u16> = (0..2 * want).map(|_| rng.below(1 << 16) as u16).collect();
        bounds.sort_unstable();
        bounds.dedup();
        let files: Vec<Arc<FileMeta>> = bounds
            .chunks_exact(2)
            .map(|p| {
                let size = 1 + rng.below(2 * o.target_file_size_base);
                file_bytes(next(), &p[0].to_be_bytes(), &p[1].to_be_bytes(), size, 1)
            })
            .collect();
        v.levels[level] = files.into();
    }
    let deep = rng.chance(0.3).then_some(Path::new("/deep"));
    Some((v, o, Placement::new(Path::new("/db"), None, deep)))
}

fn file_bytes(n: u64, lo: &[u8], hi: &[u8], size: u64, seq: u64) -> Arc<FileMeta> {
    crate::file_meta::test_table_bytes(n, lo, hi, size, seq)
}

/// The liveness rule (docs/design/baselines.md, "Liveness"): whenever the tree stops writes,
/// the picker, with no job running, hands out a job. Random trees under every preset with
/// its options varied within what `validate` accepts; a failure prints the tree's shape.
#[test]
fn a_stopped_tree_always_has_a_runnable_job() {
    let presets = Options::PRESETS;
    let mut rng = strata_testkit::Rng::new(35);
    let busy = HashSet::new();
    let (mut stopped, mut cases) = (0, 0);
    for i in 0..12_000 {
        let preset = presets[i % presets.len()];
        let Some((v, o, p)) = random_case(&mut rng, preset) else {
            continue;
        };
        cases += 1;
        let pressure = WritePressure::of(&v, &o);
        if !pressure.stops(&o) {
            continue;
        }
        stopped += 1;
        let c = picker::pick(&ctx(&v, &o, &busy, &p));
        assert!(
            c.is_some_and(|c| !c.inputs.is_empty()),
            "case {i}, preset {preset}: writes stop and no job is runnable: files per level {}, \
             level bytes {:?}, scores {:?}, L0 pressure {:?}, pending {} (hard limit {}), \
             picker {:?}, sizing {:?}, L0 layout {:?}, bucket trigger {}",
            v.level_summary(),
            (0..v.num_levels())
                .map(|l| v.level_bytes(l))
                .collect::<Vec<_>>(),
            (1..v.num_levels())
                .map(|l| level_score(&v, &o, l))
                .collect::<Vec<_>>(),
            pressure.l0,
            pressure.pending,
            o.hard_pending_compaction_bytes_limit,
            o.compaction_picker,
            o.level_sizing,
            o.l0_layout,
            o.bucket_compaction_trigger,
        );
    }
    eprintln!("{cases} valid cases, {stopped} with writes stopped");
    // The generator must reach the state the rule is about, often.
    assert!(cases > 8_000, "only {cases} valid cases");
    assert!(stopped > 2_000, "only {stopped} stopped trees of {cases}");
}

#[test]
fn disjoint_l0_tables_move_down_together() {
    // A sequential fill's L0: four tables, no two sharing a key, nothing below them in L1.
    let mut v = Version::new(4);
    v.levels[0] = vec![
        file(13, "m", "n", 50, 4),
        file(12, "j", "l", 50, 3),
        file(11, "e", "h", 50, 2),
        file(10, "c", "d", 50, 1),
    ]
    .into();
    v.levels[1] = vec![file(1, "a", "b", 50, 0)].into();
    let (o, busy, p) = (
        opts(),
        HashSet::new(),
        Placement::new(Path::new("/db"), None, None),
    );
    let c = picker::pick(&ctx(&v, &o, &busy, &p)).unwrap();
    assert_eq!((c.level, c.inputs.len()), (0, 4));
    assert!(c.trivial_move && c.next_inputs.is_empty());

    // Two of them sharing a key ("h"): merged.
    let mut shared = v.clone();
    shared.levels[0] = vec![
        file(13, "m", "n", 50, 4),
        file(12, "h", "l", 50, 3),
        file(11, "e", "h", 50, 2),
        file(10, "c", "d", 50, 1),
    ]
    .into();
    assert!(
        !picker::pick(&ctx(&shared, &o, &busy, &p))
            .unwrap()
            .trivial_move
    );

    // An L1 table inside their range: merged with it.
    let mut between = v.clone();
    between.levels[1] = vec![file(1, "i", "i", 50, 0)].into();
    let c = picker::pick(&ctx(&between, &o, &busy, &p)).unwrap();
    assert!(!c.trivial_move && c.next_inputs.len() == 1);

    // One of them over more of L2 than a moved table may overlap: merged.
    let mut deep = v.clone();
    deep.levels[2] = vec![file(2, "e", "f", 5_000, 0)].into();
    assert!(
        !picker::pick(&ctx(&deep, &o, &busy, &p))
            .unwrap()
            .trivial_move
    );

    // L1 in another directory: merged (a move never crosses directories).
    let p2 = Placement::new(Path::new("/db"), None, Some(Path::new("/deep")));
    assert!(!picker::pick(&ctx(&v, &o, &busy, &p2)).unwrap().trivial_move);

    // HyperLevelDB's picker merges them, as HyperLevelDB does (one input file per move).
    let hyper = Options {
        compaction_picker: crate::options::CompactionPicker::HyperLevelDb,
        ..opts()
    };
    let c = picker::pick(&ctx(&v, &hyper, &busy, &p)).unwrap();
    assert_eq!((c.level, c.inputs.len()), (0, 4));
    assert!(!c.trivial_move);
}

/// With nothing else due, a table of a level >= 1 a quarter or more of whose entries expire is
/// picked once all have expired (into the next level; in the last, into itself), the one
/// expired first first; not before, not while a snapshot sees it, not a table of mostly
/// plain entries, and not without the clock (a database with no expiring entries).
#[test]
fn tables_whose_entries_have_expired_are_picked_with_nothing_else_due() {
    let expiring = |n: u64, lo: &str, hi: &str, seq: u64, entries: u64, latest: u64| {
        let mut f = (*file(n, lo, hi, 10, seq)).clone();
        f.num_entries = 10;
        f.expiry = crate::file_meta::TableExpiry { entries, latest };
        Arc::new(f)
    };
    let mut v = Version::new(4);
    v.levels[1] = vec![
        expiring(1, "a", "b", 5, 10, 2_000),
        expiring(2, "c", "d", 5, 2, 500),
        expiring(3, "e", "f", 5, 5, 1_500),
    ]
    .into();
    v.levels[3] = vec![expiring(4, "x", "y", 5, 10, 1_000)].into();
    let (o, busy, p) = (
        opts(),
        HashSet::new(),
        Placement::new(Path::new("/db"), None, None),
    );
    let at = |now: u64, newest_snapshot: u64| {
        let mut c = ctx(&v, &o, &busy, &p);
        c.expiry = Some(ExpiryClock {
            now,
            newest_snapshot: SeqNo(newest_snapshot),
        });
        picker::pick(&c).map(|c| (c.level, c.output_level, c.inputs[0].number.0))
    };
    assert_eq!(picker::pick(&ctx(&v, &o, &busy, &p)).map(|c| c.level), None);
    // Table 2's entries are mostly plain (2 of 10 expire): never picked.
    assert_eq!(at(900, 0), None);
    assert_eq!(at(1_000, 0), Some((3, 3, 4)), "the last level, into itself");
    assert_eq!(at(1_600, 0), Some((3, 3, 4)), "the one expired first");
    assert_eq!(at(1_600, 5), None, "a snapshot sees their entries");
    let busy: HashSet<FileNumber> = [FileNumber(4)].into();
    let mut c = ctx(&v, &o, &busy, &p);
    c.expiry = Some(ExpiryClock {
        now: 1_600,
        newest_snapshot: SeqNo(4),
    });
    let c = picker::pick(&c).unwrap();
    assert_eq!((c.level, c.output_level, c.inputs[0].number.0), (1, 2, 3));
    assert!(!c.trivial_move, "a move would remove nothing");
    assert_eq!(picker::next_expiry(&v), Some(1_000));
}
