//! HyperLevelDB's pickers (`CompactionPicker::HyperLevelDb`, `HyperLevelDb10`), read from
//! its `db/version_set.cc` (`PickCompactionLevel`, `PickCompaction`) at two points of its
//! history and restated here:
//!
//! - Level, 1.2 ([`Rules::V1_2`], rescrv/HyperLevelDB 8aa0071): the shallowest level n >= 1
//!   whose score is >= 1 and >= the score of level n + 1 (so a level is not pushed into one
//!   that is even fuller; the last level scores 0, as HyperLevelDB leaves it unscored: a full
//!   last level never blocks the level above, which once stopped writes for good, issue 35).
//!   L0 instead, whenever its score is >= 1 and L1's is <= 1: L0 waits while L1 drains, so
//!   each L0 compaction merges the tables gathered meanwhile.
//! - Level, 1.0 ([`Rules::V1_0`], the version of one 8 MiB table size): the shallowest
//!   level, L0 included, whose score is >= 1 while the next level's is < 1; the level above
//!   the last may always go. L0 waits for L1 the same way, and a chain of full levels is
//!   relieved from its deepest level up.
//! - OHDB's buckets wait for L1 as L0 does (the paper changes only flush priority);
//!   `Options::l0_skips_l1_wait` lets a layout that compacts part of L0 at a time skip the
//!   wait, a variant that is not the paper's (issue 30).
//! - L0: its layout's pick, at most the 32 oldest tables.
//! - Level n >= 1: every table that overlaps nothing in level n + 1 moves down in one step;
//!   if there is none, the contiguous run of tables with the best ratio of their bytes to the
//!   bytes they overlap below (ties: the smaller run), as long as both together stay under
//!   the cap (`sizing::max_compaction_bytes`); 1.0 only: out of L1-L3, the whole level when
//!   the best run's ratio times the level's bytes reaches the next level's bytes ("the best
//!   we could do would be wasteful and the level has more data than the next: move it all");
//!   if no run fits, the table that overlaps the fewest tables below.
//! - Nothing due: a read-triggered compaction (after enough straight reads,
//!   `Options::read_compaction_min_straight_reads`) of the shallowest level holding a table
//!   whose read charges reached its allowance, picked the same way; the charged table itself
//!   only where HyperLevelDB takes its `file_to_compact`, when no run fits under the cap.

use std::sync::Arc;

use super::{pick_l0, Compaction, CompactionReason, PickContext};
use crate::compaction::sizing::{self, level_score};
use crate::file_meta::FileMeta;
use crate::placement::FileKind;

/// HyperLevelDB merges at most this many L0 tables at once.
const MAX_L0_INPUTS: usize = 32;

/// Which of HyperLevelDB's versions to pick as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rules {
    /// HyperLevelDB 1.0 (`CompactionPicker::HyperLevelDb10`).
    V1_0,
    /// HyperLevelDB 1.2 (`CompactionPicker::HyperLevelDb`).
    V1_2,
}

impl Rules {
    /// The deepest input level out of which a whole level may be merged at once (1.0's
    /// `level < 4`); 0 for none.
    fn whole_level_below(self) -> usize {
        match self {
            Rules::V1_0 => 4,
            Rules::V1_2 => 0,
        }
    }
}

/// Picks the next compaction the way HyperLevelDB does.
pub fn pick(ctx: &PickContext<'_>, rules: Rules) -> Option<Compaction> {
    let v = ctx.version;
    let score = |level: usize| {
        if level == 0 {
            v.l0.score(v.files(0), ctx.opts)
        } else {
            level_score(v, ctx.opts, level)
        }
    };
    let last = v.num_levels() - 1;
    let skips_wait = ctx.opts.l0_skips_l1_wait && !v.l0.compacts_all_of_l0();
    let level = match rules {
        Rules::V1_2 => {
            let mut level = (1..last).find(|&l| score(l) >= 1.0 && score(l) >= score(l + 1));
            if score(0) >= 1.0 && (score(1) <= 1.0 || skips_wait) {
                level = Some(0);
            }
            level
        }
        Rules::V1_0 => {
            if score(0) >= 1.0 && skips_wait {
                Some(0)
            } else {
                (0..last).find(|&l| score(l) >= 1.0 && (l + 1 == last || score(l + 1) < 1.0))
            }
        }
    };
    match level {
        Some(0) => pick_l0_oldest(ctx, CompactionReason::L0Trigger),
        Some(l) => pick_level(ctx, rules, l, None, CompactionReason::LevelSize),
        None => pick_seek_driven(ctx, rules),
    }
}

/// HyperLevelDB's seek-driven compaction: the level of a table reads charged past its
/// allowance, compacted as a size-triggered one would be.
fn pick_seek_driven(ctx: &PickContext<'_>, rules: Rules) -> Option<Compaction> {
    let min = ctx.opts.read_compaction_min_straight_reads;
    if min > 0 && ctx.straight_reads <= min {
        return None;
    }
    let v = ctx.version;
    let charged = |f: &&Arc<FileMeta>| {
        ctx.opts
            .allowed_read_charges(f.size)
            .is_some_and(|allowed| f.read_charges.get() >= allowed)
    };
    let last = v.num_levels() - 1;
    let (level, file) = (0..last).find_map(|l| v.files(l).iter().find(charged).map(|f| (l, f)))?;
    if level == 0 {
        pick_l0_oldest(ctx, CompactionReason::Reads)
    } else {
        pick_level(ctx, rules, level, Some(file), CompactionReason::Reads)
    }
}

/// HyperLevelDB's L0 compaction: its layout's pick, cut to the oldest `MAX_L0_INPUTS` tables
/// (every L0 table not taken is newer than every table taken: flushes write disjoint,
/// increasing sequence ranges).
///
/// L0 tables move down only one at a time, as in HyperLevelDB (`IsTrivialMove`: one input
/// file), where the leveled picker moves tables that share no key together.
fn pick_l0_oldest(ctx: &PickContext<'_>, reason: CompactionReason) -> Option<Compaction> {
    let single_moves = |mut c: Compaction| {
        c.trivial_move &= c.inputs.len() == 1;
        c
    };
    let c = pick_l0(ctx, reason)?;
    if c.inputs.len() <= MAX_L0_INPUTS {
        return Some(single_moves(c));
    }
    let mut inputs = c.inputs;
    inputs.sort_by_key(|f| f.largest_seq);
    inputs.truncate(MAX_L0_INPUTS);
    ctx.finish(0, inputs, reason).map(single_moves)
}

/// Which tables of the level below each table of a level overlaps: `[start, limit)`.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    limit: usize,
}

/// HyperLevelDB's choice within sorted level `level`; `charged` is the table reads charged
/// (a seek-driven pick), taken when no run fits under the cap.
fn pick_level(
    ctx: &PickContext<'_>,
    rules: Rules,
    level: usize,
    charged: Option<&Arc<FileMeta>>,
    reason: CompactionReason,
) -> Option<Compaction> {
    let v = ctx.version;
    let upper = v.files(level);
    let lower = v.files(level + 1);
    if upper.is_empty() {
        return None;
    }
    let spans = spans(upper, lower);
    let prefix = |files: &[Arc<FileMeta>]| {
        let mut p = vec![0u64; files.len() + 1];
        for (i, f) in files.iter().enumerate() {
            p[i + 1] = p[i] + f.size;
        }
        p
    };
    let (upper_bytes, lower_bytes) = (prefix(upper), prefix(lower));

    // Trivial moves cost a manifest record: every table that overlaps nothing below goes
    // down at once, if any does (and may: same directory, not busy).
    let free = |f: &Arc<FileMeta>| !ctx.busy.contains(&f.number);
    let movable: Vec<Arc<FileMeta>> = upper
        .iter()
        .zip(&spans)
        .filter(|(f, s)| s.start == s.limit && free(f))
        .map(|(f, _)| f.clone())
        .collect();
    let same_dir = ctx.placement.path_id(FileKind::table(level + 1))
        == ctx.placement.path_id(FileKind::table(level));
    if !movable.is_empty() && same_dir {
        return Some(Compaction {
            level,
            output_level: level + 1,
            inputs: movable,
            l0_part: None,
            next_inputs: Vec::new(),
            grandparents: Vec::new(),
            trivial_move: true,
            reason,
        });
    }

    // The contiguous run with the best bytes / overlapped-bytes ratio under the size cap.
    let cap = sizing::max_compaction_bytes(ctx.opts, level);
    let mut best: Option<(usize, usize, f64, u64)> = None;
    for i in 0..upper.len() {
        for j in i..upper.len() {
            if spans[j].start == spans[j].limit {
                break;
            }
            let a = upper_bytes[j + 1] - upper_bytes[i];
            let b = lower_bytes[spans[j].limit] - lower_bytes[spans[i].start];
            if a + b >= cap {
                break;
            }
            let ratio = a as f64 / b.max(1) as f64;
            let better =
                best.is_none_or(|(_, _, r, size)| ratio > r || (ratio >= r && a + b < size));
            if better {
                best = Some((i, j + 1, ratio, a + b));
            }
        }
    }
    if let Some((i, j, ratio, _)) = best {
        // 1.0: a level that, at the best ratio, outweighs the next one goes down whole.
        let (all_upper, all_lower) = (upper_bytes[upper.len()], lower_bytes[lower.len()]);
        if level < rules.whole_level_below() && all_upper as f64 * ratio >= all_lower as f64 {
            if let Some(c) = ctx.finish(level, upper.to_vec(), reason) {
                return Some(c);
            }
        }
        let run = upper[i..j].to_vec();
        if let Some(c) = ctx.finish(level, run, reason) {
            return Some(c);
        }
    }
    if let Some(f) = charged {
        if let Some(c) = ctx.finish(level, vec![f.clone()], reason) {
            return Some(c);
        }
    }
    // No run fits under the cap: the table overlapping the fewest tables below.
    let narrowest = (0..upper.len())
        .filter(|&i| free(&upper[i]))
        .min_by_key(|&i| spans[i].limit - spans[i].start)?;
    ctx.finish(level, vec![upper[narrowest].clone()], reason)
}

/// For each table of `upper` (sorted, disjoint), the tables of `lower` it overlaps.
fn spans(upper: &[Arc<FileMeta>], lower: &[Arc<FileMeta>]) -> Vec<Span> {
    let (mut start, mut limit) = (0usize, 0usize);
    upper
        .iter()
        .map(|f| {
            while start < lower.len() && lower[start].largest_user_key() < f.smallest_user_key() {
                start += 1;
            }
            limit = limit.max(start);
            while limit < lower.len() && lower[limit].smallest_user_key() <= f.largest_user_key() {
                limit += 1;
            }
            Span { start, limit }
        })
        .collect()
}
