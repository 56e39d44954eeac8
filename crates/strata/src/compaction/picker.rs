//! Compaction pickers: pure functions from (version, options, busy files) to a
//! [`Compaction`] description. No I/O, no locks: table-driven tests call them directly.
//! `Options::compaction_picker` chooses the policy: the leveled picker here (LevelDB,
//! RocksDB) or HyperLevelDB's (`picker/hyper.rs`).

mod hyper;

use std::collections::HashSet;
use std::sync::Arc;

use crate::compaction::sizing;
use crate::file_meta::FileMeta;
use crate::filename::FileNumber;
use crate::key;
use crate::l0::L0Part;
use crate::options::{CompactionPicker, CompactionPriority, Options};
use crate::placement::{FileKind, Placement};
use crate::version::Version;

/// Why a compaction was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionReason {
    /// Level 0 reached its file-count trigger.
    L0Trigger,
    /// A level exceeded its size target.
    LevelSize,
    /// `compact_range` asked for it.
    Manual,
    /// Reads consulted the input in vain too often (`Options::read_compaction_bytes`).
    Reads,
    /// The database went idle with L0 at least half way to its trigger, or a level above
    /// the last over its share of the last (`Options::idle_compaction_delay`).
    Idle,
    /// The input still points into a value file being collected
    /// (`Options::blob_gc_garbage_ratio`).
    ValueGc,
    /// The input is mostly expiring entries that have all expired (`pick_expired`).
    Expired,
}

/// A chosen compaction: inputs from `level` (and overlapping files of `output_level`).
#[derive(Debug, Clone)]
pub struct Compaction {
    /// The input level.
    pub level: usize,
    /// Where outputs go: `level + 1`, or for L0 the base level (`sizing::output_level`).
    pub output_level: usize,
    /// Input files from `level`.
    pub inputs: Vec<Arc<FileMeta>>,
    /// From L0, a part of the layout's own data instead of files (a matrix's column).
    pub l0_part: Option<L0Part>,
    /// Overlapping files from `output_level`.
    pub next_inputs: Vec<Arc<FileMeta>>,
    /// Files of `output_level + 1` overlapping the inputs (to bound output overlap).
    pub grandparents: Vec<Arc<FileMeta>>,
    /// Move the input files down without rewriting them (`next_inputs` is then empty).
    pub trivial_move: bool,
    /// Why.
    pub reason: CompactionReason,
}

impl Compaction {
    /// Every input file number.
    pub fn all_inputs(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.inputs.iter().chain(self.next_inputs.iter())
    }

    /// Total input bytes.
    pub fn input_bytes(&self) -> u64 {
        self.all_inputs().map(|f| f.size).sum::<u64>()
            + self.l0_part.as_ref().map_or(0, |p| p.bytes)
    }

    /// The user-key range of what the input level gives (files or an L0 part).
    pub fn upper_range(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        match &self.l0_part {
            Some(p) => Some((p.smallest.clone(), p.largest.clone())),
            None => key_range(&self.inputs),
        }
    }
}

/// What a picker looks at.
pub struct PickContext<'a> {
    /// The current version.
    pub version: &'a Version,
    /// The options.
    pub opts: &'a Options,
    /// Files already being compacted.
    pub busy: &'a HashSet<FileNumber>,
    /// Round-robin cursors per level.
    pub compact_pointers: &'a [Vec<u8>],
    /// Where files of each level live (a trivial move never crosses directories).
    pub placement: &'a Placement,
    /// Reads (gets and new iterators) since the last write
    /// (`Options::read_compaction_min_straight_reads`).
    pub straight_reads: u64,
    /// No write and no read for `Options::idle_compaction_delay`.
    pub idle: bool,
    /// For a database holding expiring entries: the time now and the newest snapshot
    /// (`pick_expired`).
    pub expiry: Option<ExpiryClock>,
}

/// What [`pick_expired`] judges tables by.
#[derive(Debug, Clone, Copy)]
pub struct ExpiryClock {
    /// The engine's time now, ms since the Unix epoch (`ttl::Now`).
    pub now: u64,
    /// The newest sequence a snapshot (or any other pin) holds; `SeqNo::ZERO` for none.
    pub newest_snapshot: crate::key::SeqNo,
}

/// User-key range covered by `files`.
pub fn key_range(files: &[Arc<FileMeta>]) -> Option<(Vec<u8>, Vec<u8>)> {
    let lo = files.iter().map(|f| f.smallest_user_key()).min()?;
    let hi = files.iter().map(|f| f.largest_user_key()).max()?;
    Some((lo.to_vec(), hi.to_vec()))
}

impl PickContext<'_> {
    fn any_busy(&self, files: &[Arc<FileMeta>]) -> bool {
        files.iter().any(|f| self.busy.contains(&f.number))
    }

    /// Completes a compaction of `inputs` from `level`: next-level overlap, grandparents,
    /// trivial-move decision. `None` if a needed file is busy.
    pub fn finish(
        &self,
        level: usize,
        inputs: Vec<Arc<FileMeta>>,
        reason: CompactionReason,
    ) -> Option<Compaction> {
        self.finish_with(level, inputs, None, reason)
    }

    /// [`PickContext::finish`] of an L0 part (`Level0::pick_part`) and the L1 files it
    /// overlaps. `None` if one of them is busy.
    pub fn finish_part(&self, part: L0Part, reason: CompactionReason) -> Option<Compaction> {
        if self.busy.contains(&part.token) {
            return None;
        }
        self.finish_with(0, Vec::new(), Some(part), reason)
    }

    fn finish_with(
        &self,
        level: usize,
        inputs: Vec<Arc<FileMeta>>,
        l0_part: Option<L0Part>,
        reason: CompactionReason,
    ) -> Option<Compaction> {
        let output_level = sizing::output_level(self.version, self.opts, level);
        let (lo, hi) = match &l0_part {
            Some(p) => (p.smallest.clone(), p.largest.clone()),
            None => key_range(&inputs)?,
        };
        let next_inputs = self.version.overlapping(output_level, Some(&lo), Some(&hi));
        if self.any_busy(&inputs) || self.any_busy(&next_inputs) {
            return None;
        }
        let mut all = inputs.clone();
        all.extend(next_inputs.iter().cloned());
        let (alo, ahi) = match key_range(&all) {
            Some((a, b)) => (a.min(lo), b.max(hi)),
            None => (lo, hi),
        };
        let grandparents = if output_level + 1 < self.version.num_levels() {
            self.version
                .overlapping(output_level + 1, Some(&alo), Some(&ahi))
        } else {
            Vec::new()
        };
        let trivial_move = l0_part.is_none()
            && next_inputs.is_empty()
            && self.movable(level, &inputs, output_level);
        Some(Compaction {
            level,
            output_level,
            inputs,
            l0_part,
            next_inputs,
            grandparents,
            trivial_move,
            reason,
        })
    }

    /// Whether `inputs` may go down to `output_level` as they are: one file, or (from L0)
    /// files whose key ranges are pairwise disjoint, so that they are valid files of a
    /// sorted level (a sequential fill's L0 tables: RocksDB moves them too; merging them
    /// wrote every table twice). Each must sit in the output level's directory and overlap
    /// at most [`PickContext::max_grandparent_overlap`] bytes of the level below it. The
    /// caller has checked that nothing in the output level overlaps them.
    fn movable(&self, level: usize, inputs: &[Arc<FileMeta>], output_level: usize) -> bool {
        if inputs.is_empty() || (inputs.len() > 1 && level != 0) {
            return false;
        }
        let path = self.placement.path_id(FileKind::table(output_level));
        let mut by_key: Vec<&Arc<FileMeta>> = inputs.iter().collect();
        by_key.sort_by(|a, b| a.smallest_user_key().cmp(b.smallest_user_key()));
        let disjoint = by_key
            .windows(2)
            .all(|w| w[0].largest_user_key() < w[1].smallest_user_key());
        disjoint
            && inputs.iter().all(|f| {
                let gp = self.version.overlapping_bytes(
                    output_level + 1,
                    Some(f.smallest_user_key()),
                    Some(f.largest_user_key()),
                );
                f.path_id == path && gp <= self.max_grandparent_overlap()
            })
    }

    /// A compaction that rewrites table `t` of `level` for what it holds (value pointers to
    /// collect, expired entries): into the next level with what it overlaps there, or in
    /// the last level into itself; never a move, which would rewrite nothing. `None` if a
    /// needed file is busy.
    fn rewrite(
        &self,
        level: usize,
        t: &Arc<FileMeta>,
        reason: CompactionReason,
    ) -> Option<Compaction> {
        let c = if level == self.version.num_levels() - 1 {
            Some(Compaction {
                level,
                output_level: level,
                inputs: vec![t.clone()],
                l0_part: None,
                next_inputs: Vec::new(),
                grandparents: Vec::new(),
                trivial_move: false,
                reason,
            })
        } else {
            self.finish(level, vec![t.clone()], reason)
        };
        c.map(|c| Compaction {
            trivial_move: false,
            ..c
        })
    }

    /// Bytes of grandparent overlap after which an output file is cut.
    pub fn max_grandparent_overlap(&self) -> u64 {
        self.opts.max_grandparent_overlap_factor * self.opts.target_file_size_base
    }
}

pub use sizing::level_score;

/// Scores of every level that may be compacted, highest first.
pub fn scores(v: &Version, opts: &Options) -> Vec<(usize, f64)> {
    let mut s = vec![(0, v.l0.score(v.files(0), opts))];
    for level in 1..v.num_levels() - 1 {
        s.push((level, level_score(v, opts, level)));
    }
    s.sort_by(|a, b| b.1.total_cmp(&a.1));
    s
}

/// Estimated bytes that compaction must still rewrite to bring every level under its target.
pub fn pending_compaction_bytes(v: &Version, opts: &Options) -> u64 {
    let mut total = 0;
    for level in 1..v.num_levels() - 1 {
        let excess = v
            .level_bytes(level)
            .saturating_sub(sizing::level_target(v, opts, level));
        // Moving the excess down rewrites it about `multiplier` times in the next level.
        total += (excess as f64 * opts.max_bytes_for_level_multiplier) as u64;
    }
    total
}

/// How the tree presses on writes: what `make_room` slows writes down on and stops them on
/// (a full set of memtables is the third stop, and the flush its job). One place decides,
/// so the liveness rule (docs/design/baselines.md, issue 35) is checked against the same
/// conditions the write path uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WritePressure {
    /// L0's pressure in its layout's unit.
    pub l0: crate::l0::Pressure,
    /// `pending_compaction_bytes`.
    pub pending: u64,
}

impl WritePressure {
    /// The pressure of `v` under `opts`.
    #[cfg(test)]
    pub fn of(v: &Version, opts: &Options) -> Self {
        Self::with_pending(v, opts, pending_compaction_bytes(v, opts))
    }

    /// The same, with `v`'s pending compaction bytes known.
    pub fn with_pending(v: &Version, opts: &Options, pending: u64) -> Self {
        WritePressure {
            l0: v.l0.pressure(v.files(0), opts),
            pending,
        }
    }

    /// Whether writes are slowed down.
    pub fn slows(&self, opts: &Options) -> bool {
        self.l0.slows() || self.pending >= opts.soft_pending_compaction_bytes_limit
    }

    /// Whether the tree stops writes. Liveness: whenever it does, [`pick`] finds a job
    /// (with nothing busy); `picker/tests.rs` checks it over random trees and every preset.
    pub fn stops(&self, opts: &Options) -> bool {
        self.l0.stops() || self.pending >= opts.hard_pending_compaction_bytes_limit
    }
}

/// Picks the most urgent compaction, if any level needs one and its files are free.
///
/// A trivial move out of an oversized level comes first, whatever the scores: it costs a
/// manifest record, and leaving L1 oversized while L0 keeps winning on score makes every
/// L0 -> L1 merge rewrite the excess again (1 KiB fillrandom: L1 grew to 2.5x its target
/// with its files trivially movable into an empty L2).
pub fn pick(ctx: &PickContext<'_>) -> Option<Compaction> {
    match ctx.opts.compaction_picker {
        CompactionPicker::Leveled => pick_leveled(ctx),
        CompactionPicker::HyperLevelDb => hyper::pick(ctx, hyper::Rules::V1_2),
        CompactionPicker::HyperLevelDb10 => hyper::pick(ctx, hyper::Rules::V1_0),
    }
    .or_else(|| pick_idle(ctx))
    .or_else(|| pick_value_gc(ctx))
    .or_else(|| pick_expired(ctx))
}

/// The share of a table's entries that must expire for [`pick_expired`] to take it once
/// they have: a table rewritten at rest for its expired entries writes its other entries
/// again, at most three bytes for each byte it gives back. (A half missed the tables of a
/// fill whose every other key expires, about half of which hold a few entries under half.)
const EXPIRING_SHARE: (u64, u64) = (1, 4);

/// Whether table `t` is one [`pick_expired`] compacts once its entries have expired: at
/// least [`EXPIRING_SHARE`] of its entries expire, and no snapshot sees any of them (a
/// compaction removes only expired entries above every snapshot, so one that did would
/// leave the table as it was, to be picked again and again).
fn expires_mostly(t: &FileMeta, newest_snapshot: crate::key::SeqNo) -> bool {
    let (num, den) = EXPIRING_SHARE;
    t.expiry.entries > 0
        && t.expiry.entries.saturating_mul(den) >= t.num_entries.saturating_mul(num)
        && t.smallest_seq > newest_snapshot
}

/// With nothing else due: a table of a level >= 1 at least [`EXPIRING_SHARE`] of whose
/// entries expire, all of them expired by now and seen by no snapshot, compacted into the
/// next level (in the last level, into itself), the one whose entries expired first first. The
/// compaction removes them (leaving a tombstone where a deeper level may hold the key),
/// so a database at rest gives the space of expired entries back without waiting for
/// writes to bring compactions by (docs/design/ttl.md, "Removal"). Its output holds no
/// expired entry a reader could see, so it is not picked again. L0 is left to its
/// layout's compactions.
pub fn pick_expired(ctx: &PickContext<'_>) -> Option<Compaction> {
    let clock = ctx.expiry?;
    let v = ctx.version;
    let mut due: Vec<(u64, usize, &Arc<FileMeta>)> = (1..v.num_levels())
        .flat_map(|level| v.files(level).iter().map(move |t| (level, t)))
        .filter(|(_, t)| {
            expires_mostly(t, clock.newest_snapshot)
                && t.expiry.latest <= clock.now
                && !ctx.busy.contains(&t.number)
        })
        .map(|(level, t)| (t.expiry.latest, level, t))
        .collect();
    due.sort_by_key(|d| (d.0, d.1));
    due.into_iter()
        .find_map(|(_, level, t)| ctx.rewrite(level, t, CompactionReason::Expired))
}

/// When the first table [`pick_expired`] may take has all its expiring entries expired
/// (ms since the Unix epoch; at or before `now` for one due already, which a snapshot or a
/// busy neighbour holds back), if any table may ever be taken: what a compaction thread
/// with nothing to do sleeps until.
pub fn next_expiry(v: &Version) -> Option<u64> {
    (1..v.num_levels())
        .flat_map(|level| v.files(level).iter())
        .filter(|t| expires_mostly(t, crate::key::SeqNo::ZERO))
        .map(|t| t.expiry.latest)
        .min()
}

/// Whether value garbage collection has a compaction to do (`pick_value_gc`, busy files
/// aside).
pub fn value_gc_due(v: &Version, opts: &Options) -> bool {
    value_gc_inputs(v, opts).next().is_some()
}

/// The tables of levels >= 1 whose oldest value pointer leads into a value file being
/// collected, oldest file first, with their levels.
fn value_gc_inputs<'a>(
    v: &'a Version,
    opts: &'a Options,
) -> impl Iterator<Item = (usize, &'a Arc<FileMeta>)> + 'a {
    // Each file's store says whether compactions collect it, whatever store is configured
    // now (issue 31).
    v.values
        .values()
        .filter(move |f| f.collectable(opts))
        .flat_map(move |f| {
            (1..v.num_levels()).flat_map(move |level| {
                v.files(level)
                    .iter()
                    .filter(move |t| t.oldest_value_file == f.number)
                    .map(move |t| (level, t))
            })
        })
}

/// With nothing else due: a table whose oldest value pointer leads into a value file being
/// collected (`Options::blob_gc_garbage_ratio`), the oldest such file first, compacted
/// into the next level (in the last level, into itself) so that the compaction moves its
/// live values out. Each such compaction leaves the file with one table fewer pointing
/// into it as its oldest, so collection ends. A file that only tables with an older
/// oldest file still reach waits for that file, or for the compactions that reach its
/// keys. L0 tables are left to L0's own compactions.
pub fn pick_value_gc(ctx: &PickContext<'_>) -> Option<Compaction> {
    value_gc_inputs(ctx.version, ctx.opts)
        .filter(|(_, t)| !ctx.busy.contains(&t.number))
        .find_map(|(level, t)| ctx.rewrite(level, t, CompactionReason::ValueGc))
}

/// Whether the database going idle leaves compaction work (`Options::idle_compaction_delay`):
/// the layout's own idle work (`Level0::idle_work`), L0 at least half way to its trigger
/// by the layout's own score, or a level above the last larger than the last would allow
/// (`idle_level`).
pub fn idle_due(v: &Version, opts: &Options) -> bool {
    opts.idle_compaction_delay.is_some()
        && (v.l0.idle_work() || l0_half_way(v, opts) || idle_level(v, opts).is_some())
}

/// Whether L0 is at least half way to its compaction trigger, by the layout's own score.
fn l0_half_way(v: &Version, opts: &Options) -> bool {
    v.l0.score(v.files(0), opts) >= 0.5
}

/// The level above the last that exceeds its share of the last level by the most, if any
/// does: level `l` may hold the last level's bytes divided by the multiplier once per level
/// between them (the targets `LevelSizing::Dynamic` keeps all the time). Above it, a
/// level's keys are mostly newer versions of keys below: with `Classic` targets a last
/// level below its own target leaves up to the levels above (L1 alone: 256 MiB) as
/// superseded versions in it.
pub fn idle_level(v: &Version, opts: &Options) -> Option<usize> {
    let last = (1..v.num_levels())
        .rev()
        .find(|&l| !v.files(l).is_empty())?;
    let last_bytes = v.level_bytes(last) as f64;
    (1..last)
        .filter_map(|l| {
            let share = last_bytes / opts.max_bytes_for_level_multiplier.powi((last - l) as i32);
            let ratio = v.level_bytes(l) as f64 / share.max(1.0);
            (ratio > 1.0).then_some((l, ratio))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(l, _)| l)
}

/// Once the database has seen no write and no read for `Options::idle_compaction_delay`,
/// with nothing else due, the L0 layout's own idle part goes down (`Level0::idle_part`: a
/// matrix's receiver), else L0 at least half way to its trigger goes down, then levels above
/// the last that exceed their share of it (`idle_level`). While writes stream in, waiting for the full trigger
/// spreads each rewrite of L1 over more L0 bytes, and levels fill to their targets; once
/// they stop there is nothing left to spread the rewrites over, and what the tree keeps
/// above its last level (mostly newer versions of keys below) costs space and reads until
/// the next burst (docs/design/beyond-memory.md).
pub fn pick_idle(ctx: &PickContext<'_>) -> Option<Compaction> {
    if !ctx.idle || ctx.opts.idle_compaction_delay.is_none() {
        return None;
    }
    let v = ctx.version;
    let below = v.files(sizing::output_level(v, ctx.opts, 0));
    if let Some(part) = v.l0.idle_part(below, ctx.busy) {
        return ctx.finish_part(part, CompactionReason::Idle);
    }
    if l0_half_way(v, ctx.opts) {
        if let Some(c) = pick_l0(ctx, CompactionReason::Idle) {
            return Some(c);
        }
    }
    let mut c = pick_level(ctx, idle_level(v, ctx.opts)?)?;
    c.reason = CompactionReason::Idle;
    Some(c)
}

/// The leveled picker (`CompactionPicker::Leveled`).
fn pick_leveled(ctx: &PickContext<'_>) -> Option<Compaction> {
    let scored = scores(ctx.version, ctx.opts);
    for &(level, score) in &scored {
        if level >= 1 && score >= 1.0 {
            if let Some(c) = pick_level(ctx, level).filter(|c| c.trivial_move) {
                return Some(c);
            }
        }
    }
    for (level, score) in scored {
        if score < 1.0 {
            break;
        }
        let c = if level == 0 {
            pick_l0(ctx, CompactionReason::L0Trigger)
        } else {
            pick_level(ctx, level)
        };
        if c.is_some() {
            return c;
        }
    }
    pick_read_triggered(ctx)
}

/// The L0 -> L1 compaction the L0 layout picks, with the L1 files it overlaps.
/// A layout that keeps data outside tables is asked for a part first
/// (`Level0::pick_part`, given the output level's files).
pub fn pick_l0(ctx: &PickContext<'_>, reason: CompactionReason) -> Option<Compaction> {
    let v = ctx.version;
    let below = v.files(sizing::output_level(v, ctx.opts, 0));
    if let Some(part) = v.l0.pick_part(below, ctx.busy) {
        return ctx.finish_part(part, reason);
    }
    let inputs = v.l0.pick(v.files(0), ctx.busy, ctx.opts)?;
    ctx.finish(0, inputs, reason)
}

/// A table whose read charges reached its allowance (`Options::read_compaction_bytes`),
/// pushed one level down: only when nothing else is due, as LevelDB orders its seek
/// compactions after size compactions. An L0 table is pushed down the way the L0 layout
/// pushes L0 down (for `Flat`, with every other L0 table); a table of the last level never.
pub fn pick_read_triggered(ctx: &PickContext<'_>) -> Option<Compaction> {
    ctx.opts.allowed_read_charges(0)?;
    if ctx.straight_reads <= ctx.opts.read_compaction_min_straight_reads
        && ctx.opts.read_compaction_min_straight_reads > 0
    {
        return None;
    }
    let charged = |f: &Arc<FileMeta>| {
        ctx.opts
            .allowed_read_charges(f.size)
            .is_some_and(|allowed| f.read_charges.get() >= allowed)
    };
    if ctx.version.files(0).iter().any(charged) {
        if let Some(c) = pick_l0(ctx, CompactionReason::Reads) {
            return Some(c);
        }
    }
    let last = ctx.version.num_levels().checked_sub(1)?;
    (1..last).find_map(|level| {
        ctx.version
            .files(level)
            .iter()
            .filter(|f| charged(f) && !ctx.busy.contains(&f.number))
            .find_map(|f| ctx.finish(level, vec![f.clone()], CompactionReason::Reads))
    })
}

/// Picks one file of sorted `level` (>= 1) to push down.
pub fn pick_level(ctx: &PickContext<'_>, level: usize) -> Option<Compaction> {
    let files = ctx.version.files(level);
    let candidates: Vec<&Arc<FileMeta>> = match ctx.opts.compaction_priority {
        CompactionPriority::RoundRobin => {
            let ptr = ctx
                .compact_pointers
                .get(level)
                .map_or(&[][..], |v| v.as_slice());
            let start = if ptr.is_empty() {
                0
            } else {
                files.partition_point(|f| {
                    key::compare(&f.largest, ptr) != std::cmp::Ordering::Greater
                })
            };
            files[start..].iter().chain(files[..start].iter()).collect()
        }
        CompactionPriority::MinOverlappingRatio => {
            let mut scored: Vec<(u128, &Arc<FileMeta>)> = files
                .iter()
                .map(|f| {
                    let overlap = ctx.version.overlapping_bytes(
                        level + 1,
                        Some(f.smallest_user_key()),
                        Some(f.largest_user_key()),
                    );
                    ((u128::from(overlap) << 20) / u128::from(f.size.max(1)), f)
                })
                .collect();
            scored.sort_by_key(|(s, _)| *s);
            scored.into_iter().map(|(_, f)| f).collect()
        }
    };
    candidates
        .into_iter()
        .filter(|f| !ctx.busy.contains(&f.number))
        .find_map(|f| ctx.finish(level, vec![f.clone()], CompactionReason::LevelSize))
}

/// The compaction of every file of `level` overlapping [`lo`, `hi`] (for `compact_range`).
pub fn pick_manual(
    ctx: &PickContext<'_>,
    level: usize,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> Option<Compaction> {
    if level == 0 {
        if let Some(part) = ctx.version.l0.manual_part(lo, hi, ctx.busy) {
            return ctx.finish_part(part, CompactionReason::Manual);
        }
    }
    let inputs = ctx.version.manual_inputs(level, lo, hi);
    if inputs.is_empty() {
        return None;
    }
    let mut c = ctx.finish(level, inputs, CompactionReason::Manual)?;
    // A manual compaction rewrites (so tombstones are dropped), except a plain move down.
    c.trivial_move &= c.level > 0 || c.inputs.len() == 1;
    Some(c)
}

/// A manual rewrite of one table of `level` in place (its outputs replace it in the same
/// level), for a compaction filter to see what is already as deep as data goes (RocksDB's
/// bottommost-level compaction when a filter is set). One table at a time: the outputs
/// then stay within its key range, where no other job can write meanwhile (a job writing
/// that range of `level` would have the table among its inputs), while several tables
/// rewritten together could be cut across a gap between them that a concurrent job fills.
/// `None` if the table is busy or gone.
pub fn pick_rewrite(ctx: &PickContext<'_>, level: usize, number: FileNumber) -> Option<Compaction> {
    if level == 0 {
        return None;
    }
    let f = ctx
        .version
        .files(level)
        .iter()
        .find(|f| f.number == number)?;
    if ctx.busy.contains(&number) {
        return None;
    }
    Some(Compaction {
        level,
        output_level: level,
        inputs: vec![f.clone()],
        l0_part: None,
        next_inputs: Vec::new(),
        grandparents: Vec::new(),
        trivial_move: false,
        reason: CompactionReason::Manual,
    })
}

#[cfg(test)]
mod tests;
