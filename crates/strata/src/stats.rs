//! [`Stats`]: counters of what the engine wrote, compacted and waited for.
//!
//! Updated with relaxed atomics on the write path and by background jobs; read with
//! [`Stats::snapshot`]. Write amplification = bytes the engine wrote to tables (flush +
//! compaction) / user bytes written; "device" write amplification adds WAL and manifest bytes.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Deepest level tracked per level.
pub const MAX_LEVELS: usize = 16;

/// Live counters.
#[derive(Debug, Default)]
pub struct Stats {
    pub(crate) user_bytes: AtomicU64,
    pub(crate) user_writes: AtomicU64,
    pub(crate) wal_bytes: AtomicU64,
    pub(crate) wal_mapped_bytes: AtomicU64,
    pub(crate) wal_syncs: AtomicU64,
    pub(crate) manifest_bytes: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) flush_bytes: AtomicU64,
    pub(crate) compactions: [AtomicU64; MAX_LEVELS],
    pub(crate) compaction_read: [AtomicU64; MAX_LEVELS],
    pub(crate) compaction_written: [AtomicU64; MAX_LEVELS],
    pub(crate) merges_from: [AtomicU64; MAX_LEVELS],
    pub(crate) moved_files_from: [AtomicU64; MAX_LEVELS],
    pub(crate) moves_from: [AtomicU64; MAX_LEVELS],
    pub(crate) flushed_to: [AtomicU64; MAX_LEVELS],
    pub(crate) read_compactions: AtomicU64,
    pub(crate) idle_compactions: AtomicU64,
    pub(crate) value_gc_compactions: AtomicU64,
    pub(crate) value_bytes_relocated: AtomicU64,
    pub(crate) filtered_entries: AtomicU64,
    pub(crate) gc_filtered_entries: AtomicU64,
    pub(crate) expired_entries: AtomicU64,
    pub(crate) expiry_compactions: AtomicU64,
    pub(crate) value_gc_runs: AtomicU64,
    pub(crate) value_gc_bytes_read: AtomicU64,
    pub(crate) value_read_aheads: AtomicU64,
    pub(crate) stalls: AtomicU64,
    pub(crate) stall_micros: AtomicU64,
    pub(crate) slowdowns: AtomicU64,
    pub(crate) coalesced_items: AtomicU64,
    /// What writes waited for, by cause (`strata.write-stalls`).
    pub(crate) waits: WaitLog,
}

/// What a write waited for in the write path's slow paths (`strata.write-stalls`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaitCause {
    /// Stopped: the immutable memtables are at `max_write_buffer_number - 1`.
    Memtables,
    /// Stopped: L0 (in its layout's unit) at its stop point.
    L0,
    /// Stopped: pending compaction bytes at the hard limit.
    PendingBytes,
    /// Slowed down (paced or slept) by L0 or pending compaction bytes.
    Slowdown,
    /// A memtable switch: the new WAL created and the memtable frozen.
    Switch,
    /// A value store's GC pacing writes for space.
    ValueSpace,
    /// The database state's lock, held by another thread when the leader wanted it.
    StateLock,
    /// The WAL's lock, held by another thread (a sync or a flush's log cleanup).
    WalLock,
}

impl WaitCause {
    const ALL: [WaitCause; 8] = [
        WaitCause::Memtables,
        WaitCause::L0,
        WaitCause::PendingBytes,
        WaitCause::Slowdown,
        WaitCause::Switch,
        WaitCause::ValueSpace,
        WaitCause::StateLock,
        WaitCause::WalLock,
    ];

    fn name(self) -> &'static str {
        match self {
            WaitCause::Memtables => "stop: memtables full",
            WaitCause::L0 => "stop: L0",
            WaitCause::PendingBytes => "stop: pending compaction bytes",
            WaitCause::Slowdown => "slowdown",
            WaitCause::Switch => "memtable switch",
            WaitCause::ValueSpace => "value store space",
            WaitCause::StateLock => "state lock held",
            WaitCause::WalLock => "WAL lock held",
        }
    }
}

/// A wait of at least [`WaitLog::LONG`], kept in [`WaitLog`]'s recent list.
#[derive(Clone, Copy, Debug)]
struct LongWait {
    /// When it ended, since the database opened.
    at: std::time::Duration,
    took: std::time::Duration,
    cause: WaitCause,
}

/// Per cause: how many waits, their total and longest time; and the latest long ones.
/// Written only on the write path's slow paths (a stop, a slowdown, a switch, a contended
/// lock), so it costs a put nothing otherwise.
#[derive(Debug, Default)]
pub(crate) struct WaitLog {
    count: [AtomicU64; 8],
    micros: [AtomicU64; 8],
    longest: [AtomicU64; 8],
    recent: Mutex<VecDeque<LongWait>>,
}

impl WaitLog {
    /// Waits at least this long are listed with their time.
    pub(crate) const LONG: std::time::Duration = std::time::Duration::from_millis(20);
    /// How many long waits the list keeps (the latest).
    const KEPT: usize = 32;

    /// Notes a wait for `cause` of `took` that ended `at` after the open.
    pub(crate) fn note(
        &self,
        cause: WaitCause,
        took: std::time::Duration,
        at: std::time::Duration,
    ) {
        let i = cause as usize;
        let us = took.as_micros() as u64;
        self.count[i].fetch_add(1, Ordering::Relaxed);
        self.micros[i].fetch_add(us, Ordering::Relaxed);
        self.longest[i].fetch_max(us, Ordering::Relaxed);
        if took >= Self::LONG {
            let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
            if recent.len() == Self::KEPT {
                recent.pop_front();
            }
            recent.push_back(LongWait { at, took, cause });
        }
    }

    /// The `strata.write-stalls` report: a line per cause that occurred, then the latest
    /// long waits.
    pub(crate) fn to_text(&self) -> String {
        let mut s = String::new();
        for c in WaitCause::ALL {
            let i = c as usize;
            let n = self.count[i].load(Ordering::Relaxed);
            if n == 0 {
                continue;
            }
            let _ = writeln!(
                s,
                "{}: {n} waits, {:.3} s in all, longest {:.3} ms",
                c.name(),
                self.micros[i].load(Ordering::Relaxed) as f64 / 1e6,
                self.longest[i].load(Ordering::Relaxed) as f64 / 1e3,
            );
        }
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if !recent.is_empty() {
            let _ = writeln!(
                s,
                "waits of {} ms or more (the latest {}; ended at, since open):",
                Self::LONG.as_millis(),
                Self::KEPT
            );
            for w in recent.iter() {
                let _ = writeln!(
                    s,
                    "  {:.3} s: {} for {:.1} ms",
                    w.at.as_secs_f64(),
                    w.cause.name(),
                    w.took.as_secs_f64() * 1e3
                );
            }
        }
        s
    }
}

/// A point-in-time copy of the counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatsSnapshot {
    /// Bytes of keys and values the user wrote.
    pub user_bytes: u64,
    /// Write batches committed.
    pub user_writes: u64,
    /// Bytes appended to WALs.
    pub wal_bytes: u64,
    /// Of `wal_bytes`, those copied into the page cache through a memory map (small write
    /// groups on a real file system, `strata::fs::RealFs::create_log`) rather than written
    /// with `pwrite`: a process's `write(2)` accounting does not see them.
    pub wal_mapped_bytes: u64,
    /// WAL syncs.
    pub wal_syncs: u64,
    /// Bytes appended to manifests.
    pub manifest_bytes: u64,
    /// Memtable flushes.
    pub flushes: u64,
    /// Bytes of L0 tables written by flushes.
    pub flush_bytes: u64,
    /// Compactions whose output went to level i (index = output level).
    pub compactions: Vec<u64>,
    /// Bytes read by compactions into level i.
    pub compaction_read: Vec<u64>,
    /// Bytes written by compactions into level i.
    pub compaction_written: Vec<u64>,
    /// Merging compactions by input level (index = the level they took tables from).
    pub merges_by_input_level: Vec<u64>,
    /// Tables moved down without rewriting, by the level they left.
    pub moved_files_by_input_level: Vec<u64>,
    /// Move operations (one may move many tables: HyperLevelDB moves every table of a
    /// level that overlaps nothing below at once), by the level they left.
    pub moves_by_input_level: Vec<u64>,
    /// Flushed tables by the level they were placed in (deeper than 0 only with
    /// `Options::max_mem_compaction_level`).
    pub flushed_tables_per_level: Vec<u64>,
    /// Compactions that moved files without rewriting them (one may move several).
    pub trivial_moves: u64,
    /// Compactions (including moves) that reads triggered (`Options::read_compaction_bytes`).
    pub read_compactions: u64,
    /// L0 compactions that writes going idle started (`Options::idle_compaction_delay`).
    pub idle_compactions: u64,
    /// Compactions the value store's garbage collection started
    /// (`Options::blob_gc_garbage_ratio`).
    pub value_gc_compactions: u64,
    /// Bytes of live values moved out of collected value files (by compactions for blob
    /// files, by the value log's GC).
    pub value_bytes_relocated: u64,
    /// Entries the compaction filter removed or changed (`Options::compaction_filter`).
    pub filtered_entries: u64,
    /// Of those, the ones a value store's GC step met (and wrote the deletion or new value
    /// of instead of moving it).
    pub gc_filtered_entries: u64,
    /// Expiring entries flushes and compactions removed once expired (docs/design/ttl.md).
    pub expired_entries: u64,
    /// Compactions of tables whose expiring entries had all expired, picked with nothing
    /// else due (docs/design/ttl.md, "Removal").
    pub expiry_compactions: u64,
    /// Value-log segments the value log's GC collected.
    pub value_gc_runs: u64,
    /// Bytes the value log's GC read.
    pub value_gc_bytes_read: u64,
    /// Separated values forward scans asked the value store to read ahead
    /// (`Options::value_read_ahead`).
    pub value_read_aheads: u64,
    /// Reads of table files while opening tables (footer, index, filter, properties), and
    /// their bytes.
    pub table_open_reads: u64,
    pub table_open_read_bytes: u64,
    /// Reads of table files after opening them (data blocks, and index and filter blocks
    /// read through an unpinned map), compactions' included, and their bytes: with `pread`,
    /// what the page cache or the disk served; through a map, what was looked at.
    pub table_block_reads: u64,
    pub table_block_read_bytes: u64,
    /// Times a write waited for flush or compaction (stop condition).
    pub stalls: u64,
    /// Microseconds writes spent stalled or slowed down.
    pub stall_micros: u64,
    /// Writes delayed by the slowdown trigger.
    pub slowdowns: u64,
    /// Puts kept in a memtable's coalescing buffer (`Options::coalesce_item_threshold`).
    pub coalesced_items: u64,
    /// Files per level at the time of the snapshot.
    pub files_per_level: Vec<usize>,
    /// Bytes per level at the time of the snapshot.
    pub bytes_per_level: Vec<u64>,
}

impl StatsSnapshot {
    /// Level compactions as the OHDB paper's C counts them (issue 30): merges plus move
    /// operations (a move of many tables at once is one operation, as HyperLevelDB does
    /// it). Until issue 30 strata counted moved *tables* here; `moved_tables()` has those.
    pub fn level_compactions(&self) -> u64 {
        self.merges_by_input_level.iter().sum::<u64>()
            + self.moves_by_input_level.iter().sum::<u64>()
    }

    /// Tables moved down without rewriting.
    pub fn moved_tables(&self) -> u64 {
        self.moved_files_by_input_level.iter().sum()
    }

    /// Tables in the tree at the time of the snapshot.
    pub fn tables(&self) -> usize {
        self.files_per_level.iter().sum()
    }

    /// Bytes compactions read (OHDB's CR).
    pub fn compaction_bytes_read(&self) -> u64 {
        self.compaction_read.iter().sum()
    }

    /// Bytes compactions wrote (OHDB's CW).
    pub fn compaction_bytes_written(&self) -> u64 {
        self.compaction_written.iter().sum()
    }

    /// Bytes written in all: WAL, manifest, flushes and compactions (OHDB's TW).
    pub fn total_bytes_written(&self) -> u64 {
        self.wal_bytes + self.manifest_bytes + self.flush_bytes + self.compaction_bytes_written()
    }

    /// Table bytes written (flush + compaction) per user byte.
    pub fn write_amplification(&self) -> f64 {
        let table = self.flush_bytes + self.compaction_written.iter().sum::<u64>();
        table as f64 / self.user_bytes.max(1) as f64
    }

    /// All bytes written (WAL, manifest, tables) per user byte.
    pub fn device_write_amplification(&self) -> f64 {
        let all = self.wal_bytes
            + self.manifest_bytes
            + self.flush_bytes
            + self.compaction_written.iter().sum::<u64>();
        all as f64 / self.user_bytes.max(1) as f64
    }

    /// A human-readable report (the `strata.stats` property).
    pub fn to_text(&self) -> String {
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        let mut s = String::new();
        let _ = writeln!(s, "** strata stats **");
        let _ = writeln!(
            s,
            "Level  Files   Size(MiB)  Compactions  Read(MiB)  Write(MiB)  Merges-from  Moves-from  Moved-from"
        );
        for (i, files) in self.files_per_level.iter().enumerate() {
            let get = |v: &Vec<u64>| v.get(i).copied().unwrap_or(0);
            let _ = writeln!(
                s,
                "L{i:<5} {files:>5} {:>11.1} {:>12} {:>10.1} {:>11.1} {:>12} {:>11} {:>11}",
                mib(self.bytes_per_level.get(i).copied().unwrap_or(0)),
                get(&self.compactions),
                mib(get(&self.compaction_read)),
                mib(get(&self.compaction_written)),
                get(&self.merges_by_input_level),
                get(&self.moves_by_input_level),
                get(&self.moved_files_by_input_level),
            );
        }
        let _ = writeln!(
            s,
            "Tables (SN): {}; level compactions (C, merges + move operations): {} (L0 bucket or L0 merges {}, L1+ merges {}, move operations {}, moved tables {}); total written (TW): {:.1} MiB; compaction read (CR): {:.1} MiB, written (CW): {:.1} MiB",
            self.tables(),
            self.level_compactions(),
            self.merges_by_input_level.first().copied().unwrap_or(0),
            self.merges_by_input_level.iter().skip(1).sum::<u64>(),
            self.moves_by_input_level.iter().sum::<u64>(),
            self.moved_tables(),
            mib(self.total_bytes_written()),
            mib(self.compaction_bytes_read()),
            mib(self.compaction_bytes_written())
        );
        let _ = writeln!(
            s,
            "User writes: {} batches, {:.1} MiB",
            self.user_writes,
            mib(self.user_bytes)
        );
        let _ = writeln!(
            s,
            "WAL: {:.1} MiB, {} syncs; manifest: {:.2} MiB",
            mib(self.wal_bytes),
            self.wal_syncs,
            mib(self.manifest_bytes)
        );
        let _ = writeln!(
            s,
            "Flushes: {}, {:.1} MiB, tables placed per level {:?}; trivial moves: {}; read-triggered compactions: {}; idle compactions: {}",
            self.flushes,
            mib(self.flush_bytes),
            trim(&self.flushed_tables_per_level),
            self.trivial_moves,
            self.read_compactions,
            self.idle_compactions
        );
        let _ = writeln!(
            s,
            "Value GC: {} compactions, {} value-log segments ({:.1} MiB read), {:.1} MiB of live values moved; values read ahead: {}",
            self.value_gc_compactions,
            self.value_gc_runs,
            mib(self.value_gc_bytes_read),
            mib(self.value_bytes_relocated),
            self.value_read_aheads
        );
        let _ = writeln!(
            s,
            "Table file reads: {} opening tables ({:.1} MiB), {} of blocks ({:.1} MiB)",
            self.table_open_reads,
            mib(self.table_open_read_bytes),
            self.table_block_reads,
            mib(self.table_block_read_bytes)
        );
        let _ = writeln!(
            s,
            "Write amplification: {:.2} (tables), {:.2} (device, with WAL and manifest)",
            self.write_amplification(),
            self.device_write_amplification()
        );
        let _ = writeln!(
            s,
            "Stalls: {} stops, {} slowdowns, {:.3} s total",
            self.stalls,
            self.slowdowns,
            self.stall_micros as f64 / 1e6
        );
        if self.coalesced_items > 0 {
            let _ = writeln!(s, "Coalescing: {} items", self.coalesced_items);
        }
        s
    }
}

/// `v` without its trailing zeros.
fn trim(v: &[u64]) -> &[u64] {
    let n = v.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1);
    &v[..n]
}

impl Stats {
    pub(crate) fn add(c: &AtomicU64, v: u64) {
        c.fetch_add(v, Ordering::Relaxed);
    }

    /// Copies the counters (levels filled in by the caller).
    pub fn snapshot(&self) -> StatsSnapshot {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let arr = |a: &[AtomicU64; MAX_LEVELS]| a.iter().map(l).collect::<Vec<_>>();
        StatsSnapshot {
            user_bytes: l(&self.user_bytes),
            user_writes: l(&self.user_writes),
            wal_bytes: l(&self.wal_bytes),
            wal_mapped_bytes: l(&self.wal_mapped_bytes),
            wal_syncs: l(&self.wal_syncs),
            manifest_bytes: l(&self.manifest_bytes),
            flushes: l(&self.flushes),
            flush_bytes: l(&self.flush_bytes),
            compactions: arr(&self.compactions),
            compaction_read: arr(&self.compaction_read),
            compaction_written: arr(&self.compaction_written),
            merges_by_input_level: arr(&self.merges_from),
            moved_files_by_input_level: arr(&self.moved_files_from),
            moves_by_input_level: arr(&self.moves_from),
            flushed_tables_per_level: arr(&self.flushed_to),
            trivial_moves: arr(&self.moves_from).iter().sum(),
            read_compactions: l(&self.read_compactions),
            idle_compactions: l(&self.idle_compactions),
            value_gc_compactions: l(&self.value_gc_compactions),
            value_bytes_relocated: l(&self.value_bytes_relocated),
            filtered_entries: l(&self.filtered_entries),
            gc_filtered_entries: l(&self.gc_filtered_entries),
            expired_entries: l(&self.expired_entries),
            expiry_compactions: l(&self.expiry_compactions),
            value_gc_runs: l(&self.value_gc_runs),
            value_gc_bytes_read: l(&self.value_gc_bytes_read),
            value_read_aheads: l(&self.value_read_aheads),
            stalls: l(&self.stalls),
            stall_micros: l(&self.stall_micros),
            slowdowns: l(&self.slowdowns),
            coalesced_items: l(&self.coalesced_items),
            files_per_level: Vec::new(),
            // Filled in by `Db::stats` from the table cache.
            table_open_reads: 0,
            table_open_read_bytes: 0,
            table_block_reads: 0,
            table_block_read_bytes: 0,
            bytes_per_level: Vec::new(),
        }
    }
}
