//! The named presets: LevelDB's, HyperLevelDB's and RocksDB's defaults, and each
//! technique's configuration on them ([`Options::preset`] by name).

use std::path::PathBuf;

use super::*;
use crate::error::{Error, Result};

impl Options {
    /// LevelDB 1.23's defaults: one background thread shared by flush and compaction, 4 MiB
    /// memtable, L0 triggers 4/8/12, 10 MiB L1, 2 MiB tables, 8 MiB block cache, round-robin
    /// picking, no bloom filter (LevelDB has none unless a filter policy is set).
    pub fn leveldb() -> Self {
        Options {
            write_buffer_size: 4 * MIB,
            level0_file_num_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 8,
            level0_stop_writes_trigger: 12,
            delayed_write_rate: 0,
            max_bytes_for_level_base: 10 * MIB as u64,
            target_file_size_base: 2 * MIB as u64,
            compaction_priority: CompactionPriority::RoundRobin,
            bloom_bits_per_key: 0,
            block_cache_size: 8 * MIB,
            separate_flush_thread: false,
            idle_compaction_delay: None,
            memtable_filter_ratio: 0.0,
            read_charging: ReadCharging::InVain,
            seek_charging: SeekCharging::Always,
            ..Options::default()
        }
    }

    /// HyperLevelDB (rescrv/HyperLevelDB, the baseline OHDB is measured against): a flush
    /// thread of its own beside one compaction thread; 4 MiB memtables, two of them; its level
    /// table (L1 128 MiB, then x4, x8, ...) scored by bytes and by table count
    /// ([`LevelSizing::HyperLevelDb`]); tables of 64/64/32/16 MiB by input level cut at
    /// grandparent boundaries ([`TableCut::GrandparentBoundaries`]); its picker (L0 waits
    /// while L1 is over its target; trivial moves of every non-overlapping table; best-ratio
    /// runs; [`CompactionPicker::HyperLevelDb`]); no stop trigger, 1 us per L0 table above 8
    /// ([`WriteSlowdown::PerExcessRun`]); flushed tables placed down to L2 when they overlap
    /// nothing; read-triggered compaction only after 10 straight reads, charging the first
    /// table a read searched when it searched two ([`ReadCharging::FirstOfSeveral`]). No bloom filter, 8 MiB
    /// block cache (LevelDB's defaults, which HyperLevelDB keeps).
    pub fn hyperleveldb() -> Self {
        Options {
            separate_flush_thread: true,
            max_background_compactions: 1,
            level0_file_num_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 8,
            level0_stop_writes_trigger: usize::MAX,
            write_slowdown: WriteSlowdown::PerExcessRun,
            max_bytes_for_level_base: 128 * MIB as u64,
            level_sizing: LevelSizing::HyperLevelDb,
            target_file_size_base: 64 * MIB as u64,
            table_cut: TableCut::GrandparentBoundaries,
            compaction_picker: CompactionPicker::HyperLevelDb,
            max_mem_compaction_level: 2,
            read_compaction_min_straight_reads: 10,
            read_charging: ReadCharging::FirstOfSeveral,
            ..Options::leveldb()
        }
    }

    /// HyperLevelDB 1.0 (the rules of its `db/version_set.cc` while it kept one table size,
    /// the baseline the OHDB paper measures against: "fixed sizes of SST (8MB)"): `hyperleveldb`
    /// with 8 MiB tables at every level cut by size alone ([`TableCut::Size`]), L1 and L2 of
    /// 100 MiB and x10 below ([`LevelSizing::HyperLevelDb10`], scored by bytes), and its picker
    /// of that time ([`CompactionPicker::HyperLevelDb10`]: L0 and each level wait while the
    /// level below is over its target; whole-level merges out of L1-L3 when they are no
    /// worse than the best run). Flush thread, L0 triggers, slowdown and read rule as
    /// `hyperleveldb` (1.2's): 1.0/1.1 slowed no write down, ran a third ("optimistic")
    /// compaction thread and waited for 50 straight reads, which this preset does not
    /// model. docs/design/baselines.md says what was read where.
    pub fn hyperleveldb_1_0() -> Self {
        Options {
            max_bytes_for_level_base: 100 * MIB as u64,
            level_sizing: LevelSizing::HyperLevelDb10,
            target_file_size_base: 8 * MIB as u64,
            table_cut: TableCut::Size,
            compaction_picker: CompactionPicker::HyperLevelDb10,
            ..Options::hyperleveldb()
        }
    }

    /// HyperLevelDB 1.1 as far as it is cheap to model: `hyperleveldb-1.0` (1.0/1.1's picker
    /// and sizes) with 1.0/1.1's write path, which slows no write down (its L0 triggers are
    /// declared and unused: writers wait only for a full memtable's flush), and its read
    /// rule, a table's seek allowance counted only after 50 straight reads. Not modelled:
    /// its third ("optimistic") compaction thread. Writes still stop at the pending-bytes
    /// hard limit (`hard_pending_compaction_bytes_limit`). docs/design/baselines.md.
    pub fn hyperleveldb_1_1() -> Self {
        Options {
            level0_slowdown_writes_trigger: usize::MAX,
            read_compaction_min_straight_reads: 50,
            ..Options::hyperleveldb_1_0()
        }
    }

    /// OHDB-L0P as the paper builds it: its baseline `hyperleveldb-1.0` with L0 split into
    /// `l0_buckets` partition buckets (10), each compacted into L1 alone at
    /// `bucket_compaction_trigger` tables (4) under the baseline's own picker (a full bucket
    /// waits while L1 is over its target, as L0 does), and flushes before further
    /// compactions (`compaction_yields_to_flush`). docs/design/ohdb.md.
    pub fn ohdb_l0p() -> Self {
        Options {
            l0_layout: L0Layout::Buckets,
            compaction_yields_to_flush: true,
            l0_skips_l1_wait: false,
            ..Options::hyperleveldb_1_0()
        }
    }

    /// OHDB-2DC: `hyperleveldb-1.0` with tables of levels >= 1 in `level_dir` (the second
    /// disk), WALs, manifest and L0 in the database directory.
    pub fn ohdb_2dc(level_dir: impl Into<PathBuf>) -> Self {
        Options {
            level_dir: Some(level_dir.into()),
            ..Options::hyperleveldb_1_0()
        }
    }

    /// OHDB-C: both techniques, `ohdb_l0p` with levels >= 1 in `level_dir`.
    pub fn ohdb_c(level_dir: impl Into<PathBuf>) -> Self {
        Options {
            level_dir: Some(level_dir.into()),
            ..Options::ohdb_l0p()
        }
    }

    /// BlobDB-class key-value separation on the default engine: values of 256 bytes and
    /// more in blob files written by flushes (`ValueStoreKind::BlobFiles`).
    pub fn blob() -> Self {
        Options {
            value_store: ValueStoreKind::BlobFiles,
            ..Options::default()
        }
    }

    /// CLeveldb on the default engine: puts of key + value under 4 KiB go to each memtable's
    /// coalescing buffer (`coalesce_item_threshold`), and flushes pack them into 4 KiB
    /// groups in group files (`coalesce_group_size`), the tables holding a pointer per
    /// item (docs/design/cleveldb.md). Preset `cleveldb-inline` keeps the buffer and writes
    /// the items inline instead (not the paper's: what the buffer alone gives).
    pub fn cleveldb() -> Self {
        Options {
            coalesce_item_threshold: 4096,
            coalesce_group_size: 4096,
            ..Options::default()
        }
    }

    /// WiscKey's value log on the default engine: values of 256 bytes and more appended to a
    /// log as they are written (`ValueStoreKind::VLog`).
    pub fn wisckey() -> Self {
        Options {
            value_store: ValueStoreKind::VLog,
            ..Options::default()
        }
    }

    /// HashKV's hash-partitioned value store on the default engine: values of 256 bytes and
    /// more go, at flush, to one of 64 segment groups of 64 MiB main segments with a 30 %
    /// reserve (`ValueStoreKind::Hash`), with hot/cold separation.
    pub fn hashkv() -> Self {
        Options {
            value_store: ValueStoreKind::Hash,
            hash_hot_cold: true,
            ..Options::default()
        }
    }

    /// RocksDB's defaults that matter for these benchmarks (7.8): 64 MiB memtable, 2 write
    /// buffers, L0 triggers 4/20/36, 256 MiB L1 x10, 64 MiB tables, min-overlap picking, no
    /// read-triggered compaction (RocksDB has none). The default preset differs in the
    /// last two.
    pub fn rocksdb() -> Self {
        Options {
            level0_file_num_compaction_trigger: 4,
            read_compaction_bytes: 0,
            idle_compaction_delay: None,
            memtable_filter_ratio: 0.0,
            ..Options::default()
        }
    }

    /// MatrixKV's baseline RocksDB-L0-NVM (seeds/matrixkv-matrix-l0.txt: "simply enlarges L0
    /// into 8 GB and stores it in NVM") at the scale of [`Options::matrixkv`], every size of
    /// the paper's setup divided by 8: `rocksdb` with L0 tables in `pmem_dir`, 8 MiB
    /// memtables and tables (64 MB), L1 32 MiB (256 MB), and L0 held within the 1 GiB of
    /// persistent memory `matrixkv` gets (the paper gives both 8 GB of NVM), at the
    /// matrix's own thresholds: compacted into L1 at 77 tables (60 %), writes slowing at 115
    /// (90 %) and stopping at 126 (the container less two memtables;
    /// docs/design/matrixkv.md, "RocksDB-L0-NVM").
    pub fn rocksdb_l0_nvm(pmem_dir: impl Into<PathBuf>) -> Self {
        Options {
            pmem_dir: Some(pmem_dir.into()),
            ..Options::rocksdb_l0_nvm_base()
        }
    }

    /// MatrixKV (seeds/matrixkv-matrix-l0.txt) at this machine's scale, every size of the
    /// paper's setup divided by 8: `rocksdb` with L0 as a matrix container of 1 GiB in
    /// `pmem_dir` (the paper's 8 GB), 8 MiB memtables and tables (64 MB), column compactions
    /// of 5 to 10 tables' bytes (AF = 10), flattened levels (L1 as large as the
    /// container), and the WALs in `pmem_dir` too (`wal_in_pmem`: the paper's write-ahead
    /// log on NVM; docs/design/matrixkv.md).
    pub fn matrixkv(pmem_dir: impl Into<PathBuf>) -> Self {
        Options {
            pmem_dir: Some(pmem_dir.into()),
            ..Options::matrixkv_base()
        }
    }

    /// `matrixkv` without its directory (the caller gives `pmem_dir`).
    fn matrixkv_base() -> Self {
        Options {
            l0_layout: L0Layout::Matrix,
            level_sizing: LevelSizing::Flattened,
            matrix_container_size: 1 << 30,
            write_buffer_size: 8 * MIB,
            target_file_size_base: 8 * MIB as u64,
            matrix_column_tables: 10,
            wal_in_pmem: true,
            ..Options::rocksdb()
        }
    }

    /// `rocksdb_l0_nvm` without its directory (the caller gives `pmem_dir`).
    fn rocksdb_l0_nvm_base() -> Self {
        Options {
            write_buffer_size: 8 * MIB,
            target_file_size_base: 8 * MIB as u64,
            max_bytes_for_level_base: 32 * MIB as u64,
            level0_file_num_compaction_trigger: 77,
            level0_slowdown_writes_trigger: 115,
            level0_stop_writes_trigger: 126,
            ..Options::rocksdb()
        }
    }

    /// The name of every preset [`Options::preset`] builds.
    pub const PRESETS: &'static [&'static str] = &[
        "default",
        "leveldb",
        "hyperleveldb",
        "hyperleveldb-1.0",
        "hyperleveldb-1.1",
        "rocksdb",
        "ohdb-l0p",
        "ohdb-2dc",
        "ohdb-c",
        "blob",
        "wisckey",
        "hashkv",
        "hashkv-wt",
        "rocksdb-l0-nvm",
        "matrixkv",
        "matrixkv-bloom",
        "matrixkv-idle",
        "cleveldb",
        "cleveldb-inline",
    ];

    /// The presets whose L0 lives in persistent memory: [`Options::preset`] leaves their
    /// `pmem_dir` to the caller.
    pub const PMEM_PRESETS: &'static [&'static str] = &[
        "rocksdb-l0-nvm",
        "matrixkv",
        "matrixkv-bloom",
        "matrixkv-idle",
    ];

    /// The named preset `name`, if it exists in this build. `ohdb-2dc` and `ohdb-c` need
    /// `level_dir` set by the caller (or use [`Options::ohdb_2dc`], [`Options::ohdb_c`]),
    /// those of [`Options::PMEM_PRESETS`] need `pmem_dir` (or use
    /// [`Options::rocksdb_l0_nvm`], [`Options::matrixkv`]).
    ///
    /// # Errors
    /// `InvalidArgument` for unknown names, and for presets that later issues bring.
    pub fn preset(name: &str) -> Result<Self> {
        match name {
            "default" => Ok(Options::default()),
            "leveldb" => Ok(Options::leveldb()),
            "hyperleveldb" => Ok(Options::hyperleveldb()),
            "hyperleveldb-1.0" => Ok(Options::hyperleveldb_1_0()),
            "hyperleveldb-1.1" => Ok(Options::hyperleveldb_1_1()),
            "rocksdb" => Ok(Options::rocksdb()),
            "ohdb-l0p" => Ok(Options::ohdb_l0p()),
            // The second directory is the caller's to give (`level_dir`); without it these
            // are `hyperleveldb-1.0` and `ohdb-l0p` on one directory.
            "ohdb-2dc" => Ok(Options::hyperleveldb_1_0()),
            "ohdb-c" => Ok(Options::ohdb_l0p()),
            "blob" => Ok(Options::blob()),
            "wisckey" => Ok(Options::wisckey()),
            "hashkv" => Ok(Options::hashkv()),
            // Not the paper's: `hashkv` taking values as they are written, before the WAL
            // (which then carries pointers), as WiscKey's value log does.
            "hashkv-wt" => Ok(Options {
                hash_write_time: true,
                ..Options::hashkv()
            }),
            // Persistent memory is the caller's to give (`pmem_dir`); without it, the
            // enlarged L0 lives in the database directory.
            "rocksdb-l0-nvm" => Ok(Options::rocksdb_l0_nvm_base()),
            "matrixkv" => Ok(Options::matrixkv_base()),
            "matrixkv-bloom" => Ok(Options {
                matrix_row_bloom_bits: 10,
                ..Options::matrixkv_base()
            }),
            // Not the paper's: `matrixkv-bloom` whose receiver drains into L1 once the
            // database has gone idle, so that reads at rest meet no rows.
            "matrixkv-idle" => Ok(Options {
                idle_compaction_delay: Options::default().idle_compaction_delay,
                ..Options::preset("matrixkv-bloom")?
            }),
            "cleveldb" => Ok(Options::cleveldb()),
            "cleveldb-inline" => Ok(Options {
                coalesce_group_size: 0,
                ..Options::cleveldb()
            }),
            _ => Err(Error::invalid(format!(
                "unknown preset {name:?} (the presets: {})",
                Self::PRESETS.join(", ")
            ))),
        }
    }
}
