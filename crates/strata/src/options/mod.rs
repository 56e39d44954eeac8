//! [`Options`], [`ReadOptions`], [`WriteOptions`], and the named presets.
//!
//! Every field says what it does, the trade-off, its unit and its default. [`Options::validate`]
//! runs at open and names the offending field. Names follow LevelDB/RocksDB where a
//! counterpart exists, so `db_bench` flags map one to one.

use std::path::PathBuf;
use std::sync::Arc;

use crate::fs::{Fs, RealFs};
use crate::snapshot::Snapshot;
use crate::sst::{Compression, TableOptions};
use crate::wal::WalRecoveryMode;

mod presets;
mod text;
mod validate;

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

/// How the picker chooses which file of a level to compact next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompactionPriority {
    /// Round robin through the key space with a per-level cursor (LevelDB).
    RoundRobin,
    /// The file whose overlap with the next level is smallest relative to its own size
    /// (RocksDB's default since 6.x; HyperLevelDB picks for least write amplification too).
    #[default]
    MinOverlappingRatio,
}

/// How the targets of levels >= 1 are set, and how a level's urgency (score) is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LevelSizing {
    /// L1 holds `max_bytes_for_level_base`, each deeper level `max_bytes_for_level_multiplier`
    /// times the one above; a level's score is its bytes over its target (LevelDB, RocksDB).
    #[default]
    Classic,
    /// HyperLevelDB's table: L1 holds `max_bytes_for_level_base` (128 MiB in its preset),
    /// L2 4x that, and each deeper level 8x the one above (128 MiB, 512 MiB, 4 GiB, 32 GiB,
    /// 256 GiB, 2 TiB). A level's score is the larger of bytes / target and tables / (target /
    /// the mean of the level's smallest and largest output table, see
    /// [`TableCut::GrandparentBoundaries`]), so a level of few large tables is also over its
    /// limit: at 3 tables in L1, 31 in L2, 481 in L3 with HyperLevelDB's sizes.
    /// `max_bytes_for_level_multiplier` is not used.
    HyperLevelDb,
    /// HyperLevelDB 1.0's table (`MaxBytesForLevel` in its `db/version_set.cc` of that
    /// time): L1 and L2 both hold `max_bytes_for_level_base` (100 MiB in its preset), each
    /// deeper level 10x the one above (100 MiB, 100 MiB, 1000 MiB, 10000 MiB, ...). A level's
    /// score is its bytes over its target. `max_bytes_for_level_multiplier` is not used.
    HyperLevelDb10,
    /// RocksDB's `level_compaction_dynamic_level_bytes`: targets are set from the bottom up.
    /// The last level's target is the size of the largest level; each level above it holds
    /// `max_bytes_for_level_multiplier` times less, up to the first whose target is at most
    /// `max_bytes_for_level_base`: the base level, where L0 compacts to (the levels between
    /// L0 and it stay empty). Most data then sits in the last level and the levels above it
    /// hold a tenth of it or less, so old versions (overwritten keys still in a deeper
    /// level) take at most about that much more space; with `Classic` targets a tree whose
    /// last level is under its target can hold more stale bytes than live ones.
    Dynamic,
    /// MatrixKV's flattened levels: L1 holds as much as L0 may (the L0 layout's capacity:
    /// for a flat L0, `level0_file_num_compaction_trigger` memtables; for a matrix, its
    /// container), or `max_bytes_for_level_base` if that is more, and each deeper level
    /// `max_bytes_for_level_multiplier` times the one above. With a large L0, fewer, larger
    /// levels: the paper's 8 GB L0 and L1 take a tree of 5 levels down to 3. A level's score
    /// is its bytes over its target.
    Flattened,
}

/// Where a compaction cuts its output into tables. Tables are never cut inside one user key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TableCut {
    /// At `target_file_size_base` bytes, or sooner once a table overlaps more than
    /// `max_grandparent_overlap_factor` x `target_file_size_base` bytes of the level below
    /// the output (LevelDB, RocksDB).
    #[default]
    GrandparentOverlap,
    /// HyperLevelDB's rule: a table written from input level *n* holds at most 64, 64, 32,
    /// 16, 16, 32, 64 MiB for *n* = 0..6 (times `target_file_size_base` / 64 MiB, so the
    /// preset's 64 MiB gives exactly those), and once it holds its level's minimum (1 MiB for
    /// inputs from L0-L3, then 8, 16, 32 MiB; scaled the same way) it is cut wherever its
    /// keys cross the first or last key of a table of the level below the output.
    GrandparentBoundaries,
    /// At `target_file_size_base` bytes only, whatever the tables below the output hold
    /// (HyperLevelDB 1.0: one table size at every level, no grandparent rule).
    Size,
}

/// Which compaction runs next, and which files it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompactionPicker {
    /// The most urgent level by score (L0 by its layout's trigger), trivial moves out of an
    /// oversized level first; within a level, one table chosen by `compaction_priority`
    /// (LevelDB, RocksDB).
    #[default]
    Leveled,
    /// HyperLevelDB's picker: the shallowest level >= 1 over its target and at least as
    /// urgent as the level below it; L0 (up to 32 tables, oldest first) instead whenever L0 is
    /// due and L1 is within its target, so L0 gathers tables while L1 drains. Within a level,
    /// every table that overlaps nothing below moves down at once; otherwise the contiguous run
    /// of tables with the best ratio of their bytes to the bytes they overlap below, capped at
    /// 16 times the level's largest output table (see [`TableCut`]); otherwise the table
    /// that overlaps the fewest tables below.
    HyperLevelDb,
    /// HyperLevelDB 1.0's picker (its `PickCompactionLevel` and `PickCompaction` of that
    /// time): the shallowest level, L0 included, that is over its target while the level
    /// below it is not (the level above the last always may go), so L0 waits while L1 is
    /// over its target and pressure is relieved from the deepest full level up. Within a
    /// level >= 1, as [`CompactionPicker::HyperLevelDb`], with two differences: the run's cap
    /// is 16 tables of `target_file_size_base` out of L0-L2 and 32 deeper; and out of L1-L3,
    /// when the best run's ratio times the level's bytes reaches the next level's bytes, the
    /// whole level is merged into the next one.
    HyperLevelDb10,
}

/// What a write does while L0 presses past its slowdown point (see
/// `level0_slowdown_writes_trigger`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WriteSlowdown {
    /// Writes are paced to `delayed_write_rate` bytes per second (RocksDB), or with a rate of
    /// 0 each write sleeps 1 ms (LevelDB).
    #[default]
    Paced,
    /// Each write sleeps one microsecond per L0 sorted run above the slowdown point
    /// (HyperLevelDB): a gentle push-back, not a brake.
    PerExcessRun,
}

/// Which tables a point read charges for read-triggered compaction
/// (`Options::read_compaction_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadCharging {
    /// Every table of a level >= 1 that a read searched before going on to a deeper level;
    /// never an L0 table (docs/design/core-engine.md, "Read-triggered compaction").
    /// A table whose filter ruled the key out is charged too.
    InVain,
    /// The first table a read searched, L0 included, when the read had to search a second
    /// one (LevelDB's and HyperLevelDB's `seek_file`).
    FirstOfSeveral,
    /// Every table of a level >= 1 whose filter let a read in and that did not hold the
    /// key: a data block read in vain. A table whose filter ruled the key out cost the read
    /// no block and is not charged, so with filters a miss rarely charges (at the filter's
    /// false-positive rate), and read-triggered compaction serves tables that cost reads
    /// (without filters, as `InVain`, plus the last table a read of an absent key searched).
    /// The default: past memory a filtered probe costs no disk read, and charging it ran
    /// compactions of hundreds of MiB inside read-only runs (docs/design/beyond-memory.md).
    #[default]
    BlockInVain,
}

/// When iterator seeks charge tables for read-triggered compaction
/// (`Options::read_compaction_bytes`; which tables: docs/design/core-engine.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SeekCharging {
    /// While tables are read through memory maps, that is while the live tables fit the
    /// memory the engine may use (`Options::table_reads`), and never once they are read
    /// with `pread`. Past memory the compaction a charge buys rewrites a table and its
    /// overlap in the next level on the same disk the reads wait for, to save a seek one
    /// block read per level: measured at 256 MiB and 1 GiB, seeks ran gigabytes of such
    /// compaction inside read-only runs (docs/design/beyond-memory.md).
    #[default]
    WhileMapped,
    /// Every seek, however tables are read (LevelDB, HyperLevelDB).
    Always,
}

/// The layout of level 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum L0Layout {
    /// Each flush adds one table; tables may overlap (LevelDB, RocksDB).
    #[default]
    Flat,
    /// OHDB's partition buckets: the key space is split into `l0_buckets` ranges; a flush
    /// writes one table per bucket that has keys, and a bucket holding
    /// `bucket_compaction_trigger` tables is compacted into L1 alone. A point read visits
    /// the tables of one bucket. Boundaries per `bucket_boundaries`, recorded in the
    /// manifest.
    Buckets,
    /// MatrixKV's matrix container: L0 is a region of `matrix_container_size` bytes in
    /// `pmem_dir` (persistent memory; without it, the database directory), each flush one
    /// RowTable in it, merged into L1 one column (key range) at a time; point reads use
    /// cross-row hints (docs/design/matrixkv.md).
    Matrix,
}

/// Where values live (key-value separation; docs/design/kv-separation.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ValueStoreKind {
    /// Every value in the LSM's tables.
    #[default]
    Inline,
    /// RocksDB BlobDB-class blob files: each flush writes the values of at least
    /// `min_blob_size` bytes into a new immutable blob file and its tables point there;
    /// compactions carry the pointers and count the ones they drop as the file's garbage; a
    /// file whose every record is garbage is deleted.
    BlobFiles,
    /// WiscKey's value log: values of at least `min_blob_size` bytes are appended to a log
    /// as they are written (segments of `vlog_segment_size`), the WAL and the LSM holding
    /// pointers.
    VLog,
    /// HashKV's hash-partitioned store: values of at least `min_blob_size` bytes go, at
    /// flush, to one of `hash_groups` segment groups picked by the key's hash; a group's
    /// GC keeps each key's newest record without looking the LSM up.
    Hash,
}

/// How the boundaries of OHDB's L0 buckets are chosen (`L0Layout::Buckets`). They change
/// only while L0 is empty, with the flush that refills it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BucketBoundaries {
    /// Equal slices of the first key byte (OHDB's "prefix"): right for keys whose first
    /// byte is uniform, one crowded bucket for text keys that share a prefix.
    KeyPrefix,
    /// Quantiles of the keys a flush writes into an empty L0, chosen again at such a flush
    /// when its keys crowd one bucket to more than twice its share.
    #[default]
    Sampled,
}

/// Which segment group the hash store's GC collects next (`ValueStoreKind::Hash`; the
/// HashKV paper's Experiment 9). Every policy chooses among the groups past their room
/// with writes since their last GC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HashGcPolicy {
    /// The group with the most writes since its last GC (the paper's default).
    #[default]
    Greedy,
    /// The group with the highest (1 - u) x age / (1 + u), u its live fraction (1 less
    /// the garbage compactions counted in it) and age the time since its last GC (since
    /// open for a group not collected yet): Rosenblum and Ousterhout's cost-benefit.
    CostBenefit,
    /// A random group among the `hash_gc_candidates` with the most writes.
    GreedyRandom,
    /// A random group.
    Random,
}

/// What the hash store does once its live values fill the space it is given (the main
/// space plus the reserve) and its GC can free none of it (`ValueStoreKind::Hash`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HashWhenFull {
    /// Writes that would add a value to the store fail with `ErrorKind::NoSpace` until
    /// deletes (or values written small) let GC free space; reads, deletes and small
    /// writes go on. The paper's store has a fixed space.
    #[default]
    Refuse,
    /// The store grows past its space: writes are accepted and GC collects the groups
    /// that have log segments as they get them.
    Grow,
}

/// Options fixed when a database is opened.
#[derive(Clone)]
pub struct Options {
    /// Create the database if it does not exist. Defaults to `true`.
    pub create_if_missing: bool,
    /// Fail if the database already exists. Defaults to `false`.
    pub error_if_exists: bool,
    /// Bytes a memtable collects before it is frozen and flushed. Larger: fewer, larger L0
    /// tables and less write amplification, but more memory and longer recovery.
    /// Defaults to 64 MiB.
    pub write_buffer_size: usize,
    /// Memtables allowed at once, the mutable one included; when all are full, writes wait
    /// for a flush. At least 2. Defaults to 2.
    pub max_write_buffer_number: usize,
    /// L0 sorted runs that trigger an L0 -> L1 compaction. Defaults to 8 (RocksDB: 4):
    /// with random keys every L0 -> L1 merge rewrites all of L1, so merging twice as much L0
    /// at a time about halves that part of write amplification; reads that search L0 tables
    /// in vain still push L0 down sooner (`read_compaction_bytes`). The `rocksdb` preset
    /// keeps 4 (docs/design/core-engine.md, "L0 waits for 8 tables").
    pub level0_file_num_compaction_trigger: usize,
    /// L0 sorted runs at which writes are slowed down (see `delayed_write_rate`).
    /// Defaults to 20.
    pub level0_slowdown_writes_trigger: usize,
    /// While writes are slowed down (L0 has `level0_slowdown_writes_trigger` runs or more, or
    /// pending compaction exceeds `soft_pending_compaction_bytes_limit`), they are paced to
    /// this many bytes per second, as RocksDB's `delayed_write_rate`. 0 selects LevelDB's
    /// rule instead: every write sleeps 1 ms. Defaults to 16 MiB/s.
    pub delayed_write_rate: u64,
    /// L0 sorted runs at which writes stop until compaction catches up (`usize::MAX`:
    /// never; writes then wait only for a full set of memtables). Defaults to 36.
    pub level0_stop_writes_trigger: usize,
    /// What a write does between the slowdown and the stop trigger. Defaults to `Paced`.
    pub write_slowdown: WriteSlowdown,
    /// Number of levels, L0 included (2..=16). Defaults to 7.
    pub num_levels: usize,
    /// Target total bytes of L1; deeper levels grow by `max_bytes_for_level_multiplier`.
    /// Defaults to 256 MiB.
    pub max_bytes_for_level_base: u64,
    /// Growth factor between levels (>= 2). Larger: fewer levels, higher write amplification
    /// per level. Defaults to 10.
    pub max_bytes_for_level_multiplier: f64,
    /// Target size of a table written by compaction, in bytes. Defaults to 64 MiB.
    pub target_file_size_base: u64,
    /// A compaction output file is cut early when it overlaps more than this many times
    /// `target_file_size_base` bytes of the grandparent level, bounding future compactions.
    /// Defaults to 10.
    pub max_grandparent_overlap_factor: u64,
    /// Which file a level compaction starts from (with `CompactionPicker::Leveled`).
    /// Defaults to `MinOverlappingRatio`.
    pub compaction_priority: CompactionPriority,
    /// Which compaction runs next and what it takes. Defaults to `Leveled`.
    pub compaction_picker: CompactionPicker,
    /// How level targets and scores are computed. Defaults to `Classic`.
    pub level_sizing: LevelSizing,
    /// Where compaction outputs are cut into tables. Defaults to `GrandparentOverlap`.
    pub table_cut: TableCut,
    /// Deepest level a flushed table may be placed in directly, when it overlaps nothing in
    /// L0 and in every level down to there, and (the level below it) less than
    /// `max_grandparent_overlap_factor` x `target_file_size_base` bytes (LevelDB's and
    /// HyperLevelDB's `kMaxMemCompactLevel`, 2 there). Skips L0 -> L1 merges for key ranges
    /// nobody wrote before (sequential loads), at the price of tables in L1/L2 that later
    /// compactions must merge around. Never into a level a running compaction reads or
    /// writes. With a `level_dir`, a flush whose key range would be placed below L0 writes
    /// its table in `level_dir` (should a compaction make the range overlap meanwhile, the
    /// table joins L0 from there). 0 keeps every flushed table in L0.
    /// Defaults to 0.
    pub max_mem_compaction_level: usize,
    /// Read-triggered compaction: a table (not in the last level) that reads consulted in
    /// vain `max(100, size / read_compaction_bytes)` times is compacted into the next level
    /// once no size- or count-triggered compaction is due; an L0 table takes L0 down the way
    /// its layout does, even below the count trigger. "In vain": a point read searched it (a
    /// table of L1 or deeper) and went on to a deeper level, or an iterator seek's target lay
    /// inside it (L0 or deeper) and inside a table below it. This flattens a tree that
    /// writes left spread over several levels, once reads show the extra sources cost them
    /// (LevelDB's seek compaction; docs/design/core-engine.md, "Read-triggered compaction").
    /// 0 disables it. Defaults to 16 KiB (LevelDB's rate); the `rocksdb` preset disables it.
    pub read_compaction_bytes: u64,
    /// Read-triggered compactions run only after more than this many reads (gets and new
    /// iterators) in a row with no write between them (HyperLevelDB: 10), so a mixed
    /// workload's reads do not add compactions to its writes'. 0: no such condition.
    /// Defaults to 0.
    pub read_compaction_min_straight_reads: u64,
    /// Once no write and no read has come for this long (the database is idle: compaction
    /// then competes with nobody), when nothing else is due, L0 tables left below
    /// the compaction trigger are compacted down if L0 is at least half way to it (by the
    /// layout's score), and then levels above the last holding more than the last level's
    /// bytes divided by the multiplier once per level between them (what
    /// `LevelSizing::Dynamic` keeps at all times): the trigger and the level targets spread
    /// rewrites over the bytes a write stream brings, and a stopped stream brings none,
    /// while what is left above the last level (mostly newer versions of keys in it) costs
    /// space and reads until the next burst. A matrix L0 (`L0Layout::Matrix`) drains its
    /// receiver, whatever its size, column by column (preset `matrixkv-idle`).
    /// `Db::wait_for_compactions` waits for it once writes have stopped (reads by other
    /// threads meanwhile put it off, and the wait ends without it). `None`: never (the
    /// `leveldb`, `hyperleveldb`, OHDB and `rocksdb` presets, as their originals).
    /// Defaults to 5 s.
    pub idle_compaction_delay: Option<std::time::Duration>,
    /// Which tables point reads charge. Defaults to `BlockInVain`; `InVain` in the
    /// `leveldb` preset, `FirstOfSeveral` in `hyperleveldb` and OHDB's.
    pub read_charging: ReadCharging,
    /// When iterator seeks charge tables. Defaults to `WhileMapped`; `Always` in the
    /// `leveldb` and `hyperleveldb` presets and OHDB's.
    pub seek_charging: SeekCharging,
    /// Uncompressed bytes per data block. Smaller: faster point reads, bigger index.
    /// Defaults to 4 KiB.
    pub block_size: usize,
    /// Entries between full keys inside a block. Defaults to 16.
    pub block_restart_interval: usize,
    /// Bloom filter bits per key (0 = no filter). 10 gives ~1 % false positives.
    /// Defaults to 10.
    pub bloom_bits_per_key: u32,
    /// Data block compression. Defaults to `None`.
    pub compression: Compression,
    /// Bytes of uncompressed blocks kept in the block cache (0 disables it). Defaults to 32 MiB.
    pub block_cache_size: usize,
    /// Tables kept open (and their index and filter in memory). Defaults to 1000.
    pub max_open_files: usize,
    /// How tables are read (a hint to [`Options::fs`]; `RealFs` follows it): through a
    /// memory map (`Mapped`: data blocks are used in place, uncompressed ones past the block
    /// cache, and a page fault reads the kernel's read-around window), a map with read-around
    /// off (`MappedRandom`), or `pread` into the block cache (`Positional`; index and filter
    /// then live on the heap). `None` chooses by size: `Mapped` while the live tables fit in
    /// the memory left for them (see [`Options::memory_limit`]), `Positional` once they do
    /// not (the tables open then are closed and reopened the new way; back to maps below
    /// nine tenths of it). Maps cost nothing while the data is in memory, and under memory
    /// pressure make each miss a page fault that the kernel serves slowly, with read-around;
    /// `pread` costs a copy and a system call per block missing from the block cache.
    /// `MappedRandom` measured the same as `Mapped` in memory and half of `pread`'s gets
    /// beyond it (docs/design/beyond-memory.md). Defaults to `None`.
    pub table_reads: Option<crate::fs::ReadAccess>,
    /// Copy each mapped table's index and filter blocks to the heap when it opens, so they
    /// stay in memory while the table is open, whatever the page cache drops (RocksDB keeps
    /// them in its table readers the same way unless told to cache them). Costs about 1 %
    /// of the table bytes (index) and `bloom_bits_per_key` bits per key (filter) of heap.
    /// Positional reads always keep them on the heap. Defaults to `true`.
    pub pin_table_metadata: bool,
    /// Bytes of memory this database may count on: its memtables
    /// (`write_buffer_size` x `max_write_buffer_number`), its block cache and the page
    /// cache holding its tables. With `table_reads` unset, tables are read through maps
    /// while their live bytes stay within three quarters of what the memtables and block
    /// cache leave of it, and with `pread` beyond. `None`: the memory the kernel gives this
    /// process (the smallest memory-cgroup limit over it, as a container's, and the
    /// machine's RAM). Defaults to `None`.
    pub memory_limit: Option<u64>,
    /// Threads running compactions (1..=16). Defaults to 1.
    pub max_background_compactions: usize,
    /// After each compaction, a compaction thread starts no new one while an immutable
    /// memtable waits for (or is in) its flush: OHDB's "flush priority" (its condition
    /// variable after each level compaction), so that bursts of bucket compactions cannot
    /// starve flushes of the disk. With one shared thread flushes always go first.
    /// Defaults to `false`.
    pub compaction_yields_to_flush: bool,
    /// Run flushes on a thread of their own, so a flush never waits behind a compaction
    /// (HyperLevelDB). `false` runs flushes and compactions on one thread, flushes first
    /// (LevelDB). Defaults to `true`.
    pub separate_flush_thread: bool,
    /// Estimated bytes of pending compaction above which writes are delayed. Defaults to 64 GiB.
    pub soft_pending_compaction_bytes_limit: u64,
    /// Estimated bytes of pending compaction at which writes stop. Defaults to 256 GiB.
    pub hard_pending_compaction_bytes_limit: u64,
    /// A watchdog for the write path: a write that has waited this long while writes were
    /// stopped (L0 at its stop trigger, the memtables full, pending compaction at the hard
    /// limit) with no flush or compaction running or finishing meanwhile fails with
    /// [`ErrorKind::Stalled`](crate::ErrorKind::Stalled), whose message gives the tree's
    /// shape. Such a wait is a scheduling bug (docs/design/baselines.md, "Liveness"): every
    /// stop leaves a job to run. `None` (the default) waits as long as it takes.
    pub write_stall_limit: Option<std::time::Duration>,
    /// Move a database whose manifest records another L0 layout than `l0_layout` to
    /// `l0_layout` at open (its L0 is compacted into L1 first if it holds tables). Without
    /// it (the default), an existing database keeps the layout it records, whatever
    /// `l0_layout` says, and the `strata.l0-layout` property names it: opening with other
    /// options never changes a database's structure silently. A new database always takes
    /// `l0_layout`.
    pub migrate_l0_layout: bool,
    /// What recovery does with a damaged or torn WAL. Defaults to `TolerateTornTail`.
    pub wal_recovery_mode: WalRecoveryMode,
    /// Directory for WALs. Defaults to the database directory (or `pmem_dir`, with
    /// `wal_in_pmem`). The manifest records the directories a database uses
    /// (`wal_dir`, `level_dir`, `value_dir`, `pmem_dir`): an open that leaves one unset reads
    /// the files already written from the recorded one (and says so in `info_log`) and
    /// writes new ones where the options say; one that names another directory is refused
    /// unless every file the manifest expects is there.
    pub wal_dir: Option<PathBuf>,
    /// WALs in `pmem_dir`: MatrixKV's write-ahead log on NVM (its paper: "write requests
    /// from users are inserted into a write-ahead log on NVMs"). Without `pmem_dir` the
    /// WALs stay in the database directory; with `wal_dir` as well, `validate` refuses (two
    /// options naming the WALs' directory). An open finds WALs in every directory it uses
    /// (database, WAL, levels, values, persistent memory), so turning this on or off
    /// between opens is safe. Defaults to false; the
    /// `matrixkv` presets set it (`rocksdb-l0-nvm`, the paper's baseline, keeps RocksDB's
    /// WAL in the database directory; docs/design/matrixkv.md).
    pub wal_in_pmem: bool,
    /// Directory for tables of levels >= 1 (OHDB's second disk). Defaults to the database
    /// directory.
    pub level_dir: Option<PathBuf>,
    /// Directory standing in for persistent memory: a DAX-mounted file system, or a tmpfs
    /// such as `/dev/shm` to emulate one (its files do not survive a reboot: for
    /// benchmarks only). L0 tables are written there (the `rocksdb-l0-nvm` preset is
    /// RocksDB with an enlarged L0 in it). Defaults to none: L0 tables in the database
    /// directory. Recorded in the manifest, as `wal_dir` is: each table records which
    /// directory slot it was written in.
    pub pmem_dir: Option<PathBuf>,
    /// Layout of level 0. Defaults to `Flat`.
    pub l0_layout: L0Layout,
    /// Buckets of `L0Layout::Buckets` (1..=1024). More: smaller L0 -> L1 compactions and
    /// fewer tables per point read, but more, smaller tables per flush. Defaults to 10.
    pub l0_buckets: usize,
    /// Tables a bucket holds before it is compacted into L1 (`L0Layout::Buckets`).
    /// Defaults to 4.
    pub bucket_compaction_trigger: usize,
    /// Bytes of the matrix container's region (`L0Layout::Matrix`), a whole number of 4 KiB
    /// pages, at least 16 memtables' worth; fixed when the region is created (a database
    /// keeps its region's size). Defaults to 1 GiB (the paper's 8 GB at this machine's
    /// scale).
    pub matrix_container_size: u64,
    /// Percent of the container the receiver holds before it becomes the compactor
    /// (`L0Layout::Matrix`; 10..=90). Defaults to 60, the paper's.
    pub matrix_receiver_percent: u32,
    /// A column compaction's size in tables of `target_file_size_base`: each column holds
    /// between half of and this many tables' bytes of L0 data (`L0Layout::Matrix`; the
    /// paper's AF). Defaults to 10.
    pub matrix_column_tables: u32,
    /// Cross-row hint search in the matrix (`L0Layout::Matrix`): each row's search is
    /// narrowed by the forward pointers of the row searched before it. `false` searches
    /// each row whole (for measuring the hints). Defaults to `true`.
    pub matrix_hints: bool,
    /// Bits per key of a Bloom filter over each RowTable's user keys, kept in DRAM beside
    /// the row (`L0Layout::Matrix`; 0 = none, the paper's). A get skips the rows whose
    /// filter rules its key out instead of probing their metadata in the region; a row
    /// skipped leaves the next one without a hint. Built by the flush that writes a row,
    /// or on a row's first read after a reopen. Defaults to 0 (`matrixkv-bloom`: 10).
    pub matrix_row_bloom_bits: u32,
    /// Bytes a bucket holds before it is compacted into L1, beside the table count
    /// (`L0Layout::Buckets`; whichever is reached first). 0 (the default): the table count
    /// alone, as OHDB's paper describes. With skewed keys a hot bucket's tables are large
    /// and a cold bucket's small: the byte trigger merges hot buckets sooner, in merges of
    /// similar size (docs/design/ohdb.md).
    pub bucket_compaction_bytes: u64,
    /// With HyperLevelDB's picker and an L0 layout that compacts part of L0 at a time (OHDB's
    /// buckets): a bucket at its trigger compacts into L1 even while L1 is over its target.
    /// `false` (the default: the paper's mechanism, §III.A, whose only scheduling change is
    /// flush priority) keeps HyperLevelDB's rule that every L0 compaction waits for L1 to
    /// drain. `true` (a variant, not the paper's) starves L1: its merges into L2 wait behind
    /// the buckets', L1 grows into one large run, and each bucket merge rewrites a slice of
    /// it (issue 30 measured 2.5-4x the baseline's compaction bytes).
    pub l0_skips_l1_wait: bool,
    /// How bucket boundaries are chosen. Defaults to `Sampled`.
    pub bucket_boundaries: BucketBoundaries,
    /// Where values live. Defaults to `Inline`. A database written with another store
    /// keeps reading the values it separated.
    pub value_store: ValueStoreKind,
    /// Values of at least this many bytes go to the value store; smaller ones stay in the
    /// tables (selective separation; HashKV's 192 B default, RocksDB's 0). Defaults to 256.
    pub min_blob_size: usize,
    /// Directory for value-store files. Defaults to the database directory.
    pub value_dir: Option<PathBuf>,
    /// A blob file whose garbage (records whose pointers compactions dropped) reaches this
    /// fraction of its bytes is collected: compactions move the live values they meet in it
    /// to a new blob file, and when no other compaction is due the picker compacts the
    /// tables that still point into it, oldest file first; once nothing points there it is
    /// deleted. Bounds blob space to about 1 / (1 - ratio) of the live values, plus what
    /// waits for collection. 1.0 collects only files with nothing live (no relocation).
    /// Defaults to 0.5.
    pub blob_gc_garbage_ratio: f64,
    /// Size of a value-log segment (`ValueStoreKind::VLog`): the head moves to a new
    /// segment past it. Defaults to 64 MiB (the HashKV paper's vLog GC unit).
    pub vlog_segment_size: u64,
    /// Size of the value log at which its GC runs whatever garbage flushes and compactions
    /// have counted (the HashKV paper's provisioned space: data + 30 % reserve), and past
    /// which writes wait for the GC's steps (up to 100 ms per write group, counted as
    /// stalls) so that the log stays near it. Counted garbage trails the writes (pointers
    /// are counted when a flush or compaction drops them), so without a capacity the log
    /// can grow well past its live data before GC starts. Defaults to `None` (counted
    /// garbage alone starts GC; writes never wait for it).
    pub vlog_capacity: Option<u64>,
    /// Segment groups of the hash store (`ValueStoreKind::Hash`; HashKV's partitions): a
    /// key's hash picks its group. Fixed while the store holds files (the count they were
    /// written with wins). 1 to 65535. Defaults to 64.
    pub hash_groups: u32,
    /// Size of a hash-store group's main segment: the live records its GC writes, more
    /// spilling into log segments. The main space is `hash_groups` x this. Defaults to
    /// 64 MiB (the paper's).
    pub hash_main_segment_size: u64,
    /// The hash store's reserve, as a fraction of its main space: the bytes of log
    /// segments (what flushes write between a group's GCs) it allows. GC runs past 90 % of
    /// it, on the group with the most log bytes; writes wait for GC past 100 %. Defaults
    /// to 0.3 (the paper's 30 %).
    pub hash_reserve_ratio: f64,
    /// Hot/cold separation in the hash store (HashKV's hotness awareness): a group's GC
    /// moves a value written only once since the group's last GC (cold) to a cold log,
    /// leaving a small tag in the group, so later GCs of the group rewrite the tag instead
    /// of the value; the cold log is collected from its oldest files with LSM lookups once
    /// the pointers compactions dropped into it reach `hash_cold_gc_ratio`. Defaults to
    /// `false`; the `hashkv` preset turns it on.
    pub hash_hot_cold: bool,
    /// The fraction of the cold log's bytes that compactions must have counted as garbage
    /// before its GC runs (`hash_hot_cold`): lower keeps the cold log closer to its live
    /// values, at the cost of more collection (a lookup per record). In (0, 1]. Defaults
    /// to 0.25.
    pub hash_cold_gc_ratio: f64,
    /// Whether the hash store's cold log counts against the main space its values came
    /// from (a group's room before it takes reserve is its main segment less its share of
    /// the cold log). `false` is the paper's: the cold log is space beside the main space
    /// and the reserve, and the room cold values leave in the groups fills with log
    /// segments (measured in memory: 1.87x the live data at 30 % reserve, against 1.49x
    /// with `true`, which costs 18-20 % of the updates per second in the later update
    /// phases and 7 % more device bytes; docs/bench/log.md). Defaults to `false`.
    pub hash_cold_takes_main: bool,
    /// Whether the hash store takes values as they are written (`true`, preset
    /// `hashkv-wt`) rather than at flush (`false`, the preset `hashkv`). Written, a value
    /// goes to its group's open file before the WAL record, which then holds a pointer:
    /// the WAL no longer carries the value (about one device byte per user byte less),
    /// and deletes and small puts leave their group's tombstone as they are written. Each
    /// group has one open file per memtable, sealed by the memtable's flush; a crash
    /// leaves open files that recovery cuts after the last write it replayed
    /// (docs/design/hashkv.md). A synced write syncs every group file it touched.
    /// Defaults to `false`.
    pub hash_write_time: bool,
    /// Which group the hash store's GC collects next. Defaults to `Greedy`.
    pub hash_gc_policy: HashGcPolicy,
    /// The candidates `HashGcPolicy::GreedyRandom` picks among. At least 1. Defaults to 8.
    pub hash_gc_candidates: u32,
    /// What the hash store does once its live values take its whole space (main space
    /// plus reserve) and GC can free nothing: refuse writes that would add values (with
    /// `ErrorKind::NoSpace`, naming the options to raise) or grow. Defaults to `Refuse`.
    pub hash_when_full: HashWhenFull,
    /// Bytes of a group's files one hash-store GC step holds in memory at once: a larger
    /// group is read in turns of about this much (a file at least), each turn's live
    /// records written in key order, so a step's memory stays bounded whatever a group
    /// grew to (a long-held snapshot, `HashWhenFull::Grow`). The keys of the group are held
    /// throughout (one copy each). At least 4 KiB. Defaults to 256 MiB: four default main
    /// segments, which holds the groups GC collects under the defaults in one turn (a full
    /// main segment and the log segments past its room; a group's first GC after a load,
    /// whose log segments hold the load's share of the data, measured 2.2 main segments at
    /// Experiment 1's scale). A cap, not an allocation: a step holds what its group's files
    /// take, up to this.
    pub hash_gc_memory: u64,
    /// Separated values a forward scan asks the value store to read ahead, once it has read
    /// two in a row: the next entries' values are requested from the OS (one request per
    /// run of neighbouring records) half a window before the cursor reaches them, so that
    /// a scan over values not in memory waits for one read at a time less often (WiscKey's
    /// range-query prefetch). Only while the live tables and value files hold more than
    /// the page cache can be expected to keep (the budget `table_reads` decides by, from
    /// [`Options::memory_limit`]): below it the values are in memory, and reading ahead is
    /// a second walk over the entries and a system call per run of records for nothing (a
    /// scan of 100 coalesced 50-byte items took 3.4x as long with it). 0 turns it off.
    /// Defaults to 16.
    pub value_read_ahead: usize,
    /// Size of each memtable's key filter, as a fraction of `write_buffer_size` (0 to
    /// 0.25): a point read (and the value log GC's lookup) of a key a memtable does not
    /// hold skips that memtable's skiplist. 1/64 gives a 64 MiB memtable of 100-byte
    /// entries (~450K) about 19 filter bits per key. Not counted against
    /// `write_buffer_size`. 0 turns it off. Defaults to 1/64 (0 in the `leveldb`,
    /// `hyperleveldb`, `ohdb-*` and `rocksdb` presets: the systems they reproduce have none).
    pub memtable_filter_ratio: f64,
    /// Puts whose user key + value are shorter than this go into the memtable's coalescing
    /// buffer instead of its skiplist (CLeveldb's coalescing buffer, coalesce/): appended in
    /// arrival order and found through a hash index, sorted only when an iterator or the
    /// flush asks, so a small put skips the skiplist's sorted insert (two thirds of a 50 B
    /// put's cost; docs/design/cleveldb.md). Its index takes `write_buffer_size` / 64
    /// items; a memtable whose index is full is frozen like a full one. 0 (the default)
    /// turns it off. At most 64 KiB.
    pub coalesce_item_threshold: usize,
    /// Bytes of each group of coalesced items a flush writes (CLeveldb's group, preset
    /// `cleveldb`: 4 KiB): the flush packs its puts of key + value under
    /// `coalesce_item_threshold` into groups of this size in one group file, and its tables
    /// hold, per item, a pointer to the item's group (CLeveldb's UMeta entry); a read loads
    /// the group and finds the item in it (docs/design/cleveldb.md). 0 (the default) keeps
    /// such items inline in the tables. 64 bytes to 1 MiB (group GC writes its groups at
    /// 1 MiB, so that any item it moves fits).
    pub coalesce_group_size: usize,
    /// The fraction of a group file's items whose pointers compactions must have dropped
    /// before a compaction that meets the file's pointers moves its live items into new
    /// groups (group GC). In (0, 1]; defaults to 0.5.
    pub coalesce_gc_ratio: f64,
    /// A new manifest is started when the current one exceeds this many bytes.
    /// Defaults to 64 MiB.
    pub max_manifest_file_size: u64,
    /// The file system. Defaults to the real one.
    pub fs: Arc<dyn Fs>,
    /// Where the engine reports what a user should hear of without an error: an open that
    /// dropped a damaged manifest record (and kept the files it may have named). Called
    /// with one line of text. Defaults to `None` (nothing said; the `strata.kept-files`
    /// property and `strata check` still report it). The `strata` tool and strata-server
    /// print these lines on stderr.
    pub info_log: Option<InfoLog>,
    /// A rule asked for each entry a flush or compaction writes: keep it, remove it, or
    /// change its value (docs/design/compaction-filters.md says what it is offered: the
    /// newest version of a key, above every live snapshot). Defaults to `None`. Not kept in
    /// the OPTIONS file: give it at every open.
    pub compaction_filter: Option<Arc<dyn crate::compaction_filter::CompactionFilter>>,
    /// How long a put lives when neither it nor its write says (`Db::put_with_ttl`,
    /// `WriteOptions::ttl`): each put written while this is set expires that long after
    /// its write, and is never read again after (docs/design/ttl.md). Defaults to `None`:
    /// puts live until deleted. Not kept in the OPTIONS file: give it at every open.
    pub default_ttl: Option<std::time::Duration>,
    /// The clock expiring entries are judged by (milliseconds since the Unix epoch).
    /// Defaults to the system's wall clock.
    pub clock: Arc<dyn crate::ttl::Clock>,
}

/// A sink for the engine's informational lines ([`Options::info_log`]).
pub type InfoLog = Arc<dyn Fn(&str) + Send + Sync>;

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("write_buffer_size", &self.write_buffer_size)
            .field("max_write_buffer_number", &self.max_write_buffer_number)
            .field(
                "level0_triggers",
                &(
                    self.level0_file_num_compaction_trigger,
                    self.level0_slowdown_writes_trigger,
                    self.level0_stop_writes_trigger,
                ),
            )
            .field("max_bytes_for_level_base", &self.max_bytes_for_level_base)
            .field("target_file_size_base", &self.target_file_size_base)
            .field("read_compaction_bytes", &self.read_compaction_bytes)
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field("compression", &self.compression)
            .field("separate_flush_thread", &self.separate_flush_thread)
            .field("wal_dir", &self.wal_dir)
            .field("level_dir", &self.level_dir)
            .field("pmem_dir", &self.pmem_dir)
            .field("wal_in_pmem", &self.wal_in_pmem)
            .field("value_store", &self.value_store)
            .field("min_blob_size", &self.min_blob_size)
            .field("value_dir", &self.value_dir)
            .field("blob_gc_garbage_ratio", &self.blob_gc_garbage_ratio)
            .field("vlog_segment_size", &self.vlog_segment_size)
            .field("vlog_capacity", &self.vlog_capacity)
            .field("hash_groups", &self.hash_groups)
            .field("hash_main_segment_size", &self.hash_main_segment_size)
            .field("hash_reserve_ratio", &self.hash_reserve_ratio)
            .field("hash_hot_cold", &self.hash_hot_cold)
            .field("hash_cold_gc_ratio", &self.hash_cold_gc_ratio)
            .field("hash_cold_takes_main", &self.hash_cold_takes_main)
            .field("hash_write_time", &self.hash_write_time)
            .field("hash_gc_policy", &self.hash_gc_policy)
            .field("hash_gc_candidates", &self.hash_gc_candidates)
            .field("hash_gc_memory", &self.hash_gc_memory)
            .field("hash_when_full", &self.hash_when_full)
            .field("value_read_ahead", &self.value_read_ahead)
            .field("memtable_filter_ratio", &self.memtable_filter_ratio)
            .field("coalesce_item_threshold", &self.coalesce_item_threshold)
            .field("coalesce_group_size", &self.coalesce_group_size)
            .field("coalesce_gc_ratio", &self.coalesce_gc_ratio)
            .field("fs", &self.fs)
            .field(
                "compaction_filter",
                &self
                    .compaction_filter
                    .as_ref()
                    .map(|f| f.name().to_string()),
            )
            .field("default_ttl", &self.default_ttl)
            .finish_non_exhaustive()
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 * MIB,
            max_write_buffer_number: 2,
            level0_file_num_compaction_trigger: 8,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            write_slowdown: WriteSlowdown::Paced,
            delayed_write_rate: 16 * MIB as u64,
            num_levels: 7,
            max_bytes_for_level_base: 256 * MIB as u64,
            max_bytes_for_level_multiplier: 10.0,
            target_file_size_base: 64 * MIB as u64,
            max_grandparent_overlap_factor: 10,
            compaction_priority: CompactionPriority::MinOverlappingRatio,
            compaction_picker: CompactionPicker::Leveled,
            level_sizing: LevelSizing::Classic,
            table_cut: TableCut::GrandparentOverlap,
            max_mem_compaction_level: 0,
            read_compaction_bytes: 16 * KIB as u64,
            read_compaction_min_straight_reads: 0,
            read_charging: ReadCharging::BlockInVain,
            seek_charging: SeekCharging::WhileMapped,
            idle_compaction_delay: Some(std::time::Duration::from_secs(5)),
            block_size: 4 * KIB,
            block_restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::None,
            block_cache_size: 32 * MIB,
            max_open_files: 1000,
            table_reads: None,
            pin_table_metadata: true,
            memory_limit: None,
            max_background_compactions: 1,
            separate_flush_thread: true,
            compaction_yields_to_flush: false,
            soft_pending_compaction_bytes_limit: 64 << 30,
            hard_pending_compaction_bytes_limit: 256 << 30,
            write_stall_limit: None,
            migrate_l0_layout: false,
            wal_recovery_mode: WalRecoveryMode::TolerateTornTail,
            wal_dir: None,
            level_dir: None,
            pmem_dir: None,
            wal_in_pmem: false,
            l0_layout: L0Layout::Flat,
            l0_buckets: 10,
            bucket_compaction_trigger: 4,
            matrix_container_size: 1 << 30,
            matrix_receiver_percent: 60,
            matrix_column_tables: 10,
            matrix_hints: true,
            matrix_row_bloom_bits: 0,
            bucket_compaction_bytes: 0,
            l0_skips_l1_wait: false,
            bucket_boundaries: BucketBoundaries::Sampled,
            value_store: ValueStoreKind::Inline,
            min_blob_size: 256,
            value_dir: None,
            blob_gc_garbage_ratio: 0.5,
            vlog_segment_size: 64 * MIB as u64,
            vlog_capacity: None,
            hash_groups: 64,
            hash_main_segment_size: 64 * MIB as u64,
            hash_reserve_ratio: 0.3,
            hash_hot_cold: false,
            hash_cold_gc_ratio: 0.25,
            hash_cold_takes_main: false,
            hash_write_time: false,
            hash_gc_policy: HashGcPolicy::Greedy,
            hash_gc_candidates: 8,
            hash_gc_memory: 256 * MIB as u64,
            hash_when_full: HashWhenFull::Refuse,
            value_read_ahead: 16,
            memtable_filter_ratio: 1.0 / 64.0,
            coalesce_item_threshold: 0,
            coalesce_group_size: 0,
            coalesce_gc_ratio: 0.5,
            max_manifest_file_size: 64 * MIB as u64,
            fs: Arc::new(RealFs::new()),
            info_log: None,
            compaction_filter: None,
            default_ttl: None,
            clock: Arc::new(crate::ttl::SystemClock),
        }
    }
}

impl Options {
    /// Bytes of files the page cache can be expected to hold: three quarters of what the
    /// memtables and block cache leave of `memory_limit` (or of the memory detected, when
    /// that is unset).
    pub(crate) fn page_cache_budget(&self) -> u64 {
        let limit = self
            .memory_limit
            .or_else(crate::fs::memory_limit)
            .unwrap_or(u64::MAX);
        let reserved = (self.write_buffer_size as u64)
            .saturating_mul(self.max_write_buffer_number as u64)
            .saturating_add(self.block_cache_size as u64);
        limit.saturating_sub(reserved) / 4 * 3
    }

    /// How many in-vain reads a table of `size` bytes takes before read-triggered compaction
    /// picks it; `None` when disabled.
    pub fn allowed_read_charges(&self, size: u64) -> Option<u64> {
        (self.read_compaction_bytes > 0).then(|| (size / self.read_compaction_bytes).max(100))
    }

    /// Bytes of each memtable's key filter (`memtable_filter_ratio`).
    pub(crate) fn memtable_filter_bytes(&self) -> usize {
        (self.write_buffer_size as f64 * self.memtable_filter_ratio) as usize
    }

    /// Sets the file system (builder style).
    #[must_use]
    pub fn with_fs(mut self, fs: Arc<dyn Fs>) -> Self {
        self.fs = fs;
        self
    }

    /// Target total bytes of level `level` (>= 1), as `level_sizing` sets it.
    ///
    /// With [`LevelSizing::Dynamic`] and [`LevelSizing::Flattened`] the targets depend on the
    /// tree and its L0 layout (`compaction::sizing::level_target`); this is then the static
    /// table they start from.
    pub fn max_bytes_for_level(&self, level: usize) -> u64 {
        let mut b = self.max_bytes_for_level_base as f64;
        for l in 1..level {
            b *= match self.level_sizing {
                LevelSizing::Classic | LevelSizing::Dynamic | LevelSizing::Flattened => {
                    self.max_bytes_for_level_multiplier
                }
                LevelSizing::HyperLevelDb if l == 1 => 4.0,
                LevelSizing::HyperLevelDb => 8.0,
                LevelSizing::HyperLevelDb10 if l == 1 => 1.0,
                LevelSizing::HyperLevelDb10 => 10.0,
            };
        }
        b as u64
    }
}

impl From<&Options> for TableOptions {
    fn from(o: &Options) -> Self {
        TableOptions {
            block_size: o.block_size,
            block_restart_interval: o.block_restart_interval,
            bloom_bits_per_key: o.bloom_bits_per_key,
            compression: o.compression,
        }
    }
}

/// Options of one write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Sync the WAL before acknowledging: the write then survives a machine crash, and so
    /// does every write acknowledged before it. Without it, it survives a process crash, and
    /// a machine crash may lose a suffix of recent writes. An empty batch written with it
    /// logs nothing and syncs the WAL (a barrier for the writes before it). Defaults to
    /// `false`.
    pub sync: bool,
    /// Skip the WAL: the write is lost on any crash until its memtable is flushed.
    /// Defaults to `false`.
    pub disable_wal: bool,
    /// How long the batch's puts live: each put the batch does not give a time of its own
    /// (`WriteBatch::put_with_ttl`) expires this long after the write (docs/design/ttl.md).
    /// Defaults to `None`: `Options::default_ttl`, if set, else no expiry.
    pub ttl: Option<std::time::Duration>,
}

/// Options of one read.
#[derive(Clone, Default)]
pub struct ReadOptions {
    /// Read as of this snapshot; `None` reads the latest state. Defaults to `None`.
    pub snapshot: Option<Snapshot>,
    /// Inclusive lower bound of iteration (user key). Defaults to `None`.
    pub lower_bound: Option<Vec<u8>>,
    /// Exclusive upper bound of iteration (user key). Defaults to `None`.
    pub upper_bound: Option<Vec<u8>>,
}

impl ReadOptions {
    /// Latest state, no bounds.
    pub fn new() -> Self {
        ReadOptions::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_validate() {
        // An unknown name lists the presets there are.
        let e = Options::preset("leveldbb").unwrap_err().to_string();
        assert!(e.contains("hyperleveldb") && e.contains("wisckey"), "{e}");
        for &name in Options::PRESETS {
            Options::preset(name).unwrap().validate().unwrap();
        }
        assert!(Options::preset("nope").is_err());
    }

    #[test]
    fn validation_names_the_field() {
        let o = Options {
            level0_stop_writes_trigger: 1,
            ..Options::default()
        };
        assert!(o
            .validate()
            .unwrap_err()
            .message()
            .contains("level0_stop_writes_trigger"));
        let o = Options {
            write_buffer_size: 10,
            ..Options::default()
        };
        assert!(o
            .validate()
            .unwrap_err()
            .message()
            .contains("write_buffer_size"));
        for (o, field) in [
            (
                Options {
                    idle_compaction_delay: Some(std::time::Duration::ZERO),
                    ..Options::default()
                },
                "idle_compaction_delay",
            ),
            (
                Options {
                    memory_limit: Some(0),
                    ..Options::default()
                },
                "memory_limit",
            ),
        ] {
            assert!(
                o.validate().unwrap_err().message().contains(field),
                "{field}"
            );
        }
    }

    #[test]
    fn options_text_reads_back_as_the_same_options() {
        let mut presets: Vec<Options> = Options::PRESETS
            .iter()
            .map(|&p| Options::preset(p).unwrap())
            .collect();
        presets.push(Options {
            memory_limit: Some(1 << 30),
            value_dir: Some(PathBuf::from("/tmp/values")),
            wal_dir: Some(PathBuf::from("/tmp/wal")),
            table_reads: Some(crate::fs::ReadAccess::Positional),
            write_stall_limit: Some(std::time::Duration::from_millis(1500)),
            vlog_capacity: Some(123 << 20),
            ..Options::default()
        });
        for o in presets {
            let text = o.to_text();
            let back = Options::from_text(&text).unwrap();
            assert_eq!(back.to_text(), text);
        }
        // Unknown names are a newer build's: skipped. A bad value names its line.
        assert!(Options::from_text("# x\nno_such_option = 3\n").is_ok());
        let e = Options::from_text("write_buffer_size = lots\n").unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
    }

    #[test]
    fn every_option_is_set_by_its_name() {
        // Each line of the text sets its option by name: no field the text writes is
        // missing from the parser `set` and `from_text` share.
        let o = Options::preset("matrixkv").unwrap();
        for line in o.to_text().lines().skip(1) {
            let (name, value) = line.split_once(" = ").unwrap();
            let mut d = Options::default();
            d.set(name, value).unwrap_or_else(|e| panic!("{line}: {e}"));
            let set = d.to_text();
            assert!(set.lines().any(|l| l == line), "{line} not set");
        }
        assert_eq!(Options::names().len(), o.to_text().lines().count() - 1);
        // The spellings the tools pass: flags' 1/0, dashes, a dotted version.
        let mut d = Options::default();
        d.set("l0_skips_l1_wait", "1").unwrap();
        d.set("read_charging", "block-in-vain").unwrap();
        d.set("level_sizing", "hyperleveldb-1.0").unwrap();
        d.set("table_reads", "mapped-random").unwrap();
        d.set("idle_compaction_delay", "1.5s").unwrap();
        assert!(d.l0_skips_l1_wait);
        assert_eq!(d.read_charging, ReadCharging::BlockInVain);
        assert_eq!(d.level_sizing, LevelSizing::HyperLevelDb10);
        assert_eq!(d.table_reads, Some(crate::fs::ReadAccess::MappedRandom));
        assert_eq!(
            d.idle_compaction_delay,
            Some(std::time::Duration::from_millis(1500))
        );
        // Unknown names and bad values are refused, and change nothing.
        let before = d.to_text();
        let e = d.set("no_such_option", "3").unwrap_err();
        assert!(e.to_string().contains("unknown option"), "{e}");
        let e = d.set("l0_layout", "spiral").unwrap_err();
        assert!(e.to_string().contains("l0_layout"), "{e}");
        assert!(d.set("write_buffer_size", "-1").is_err());
        assert!(d.set("wal_dir", "").is_err(), "an empty path is no path");
        let e = Options {
            value_dir: Some(PathBuf::new()),
            ..Options::default()
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains("Options::value_dir:"), "{e}");
        assert_eq!(d.to_text(), before);
        // A value with blanks around it reads as the text's line would.
        d.set("l0_layout", " matrix ").unwrap();
        assert_eq!(d.l0_layout, L0Layout::Matrix);
    }

    #[test]
    fn options_text_has_one_line_per_field() {
        let o = Options {
            memory_limit: Some(1 << 30),
            value_dir: Some(PathBuf::from("/tmp/values")),
            ..Options::default()
        };
        let text = o.to_text();
        let mut lines = text.lines();
        assert!(lines.next().unwrap().starts_with('#'));
        let mut names = std::collections::HashSet::new();
        for line in lines {
            let (name, value) = line.split_once(" = ").unwrap_or_else(|| panic!("{line}"));
            assert!(!value.is_empty(), "{line}");
            assert!(names.insert(name.to_string()), "{name} twice");
        }
        assert_eq!(names.len(), 79, "every field but fs");
        for want in [
            "write_buffer_size = 67108864",
            "memory_limit = 1073741824",
            "value_dir = /tmp/values",
            "wal_dir = none",
            "value_store = Inline",
        ] {
            assert!(
                text.lines().any(|l| l == want),
                "{want} missing from\n{text}"
            );
        }
    }
}
