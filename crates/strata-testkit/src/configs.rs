//! Named option configurations. Every model, crash and metamorphic test runs under each of
//! them; add a configuration here when a technique adds options.
//!
//! Sizes are tiny (64 KiB memtables, 16-32 KiB tables, 128 KiB L1, 4 L0 buckets compacted at
//! 2 tables) so a few thousand ops reach several levels.

use std::path::Path;
use std::sync::Arc;

use strata::fs::Fs;
use strata::{CompactionPriority, Compression, Options};

/// One named configuration.
pub struct Config {
    /// Name used in test output.
    pub name: &'static str,
    /// Builds the options for a database at `dir` on `fs`.
    pub build: fn(&Path, Arc<dyn Fs>) -> Options,
}

/// A compaction filter that reads each value offered and keeps it (a value it cannot read
/// fails the job).
struct KeepAll;

impl strata::CompactionFilter for KeepAll {
    fn name(&self) -> &str {
        "keep-all"
    }

    fn filter(&self, e: &strata::FilterEntry<'_>) -> strata::Decision {
        let _ = e.value();
        strata::Decision::Keep
    }
}

/// The `hashkv` configuration: HashKV's store at `small`'s sizes.
fn small_hashkv(dir: &Path, fs: Arc<dyn Fs>) -> Options {
    Options {
        min_blob_size: 100,
        hash_groups: 16,
        hash_main_segment_size: 4 << 10,
        hash_reserve_ratio: 0.25,
        // The tests' live values outgrow it: it grows rather than refuse them
        // (refusing is tested in strata's tests/hash_store.rs).
        hash_when_full: strata::HashWhenFull::Grow,
        value_dir: Some(dir.join("values")),
        ..small(Options::hashkv(), fs)
    }
}

/// The `matrixkv` configuration: a 1 MiB container (256 pages) in `dir/pmem`, at `small`'s
/// sizes.
fn small_matrix(dir: &Path, fs: Arc<dyn Fs>) -> Options {
    Options {
        matrix_container_size: 1 << 20,
        ..small(Options::matrixkv(dir.join("pmem")), fs)
    }
}

fn small(base: Options, fs: Arc<dyn Fs>) -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 24 << 10,
        max_bytes_for_level_base: 128 << 10,
        max_bytes_for_level_multiplier: 4.0,
        block_size: 1024,
        block_cache_size: 256 << 10,
        // OHDB's buckets (ignored by the other layouts): few, and compacted all the time.
        l0_buckets: 4,
        bucket_compaction_trigger: 2,
        // The write-path watchdog: a write stopped this long with no background job running
        // fails the test with the tree's shape instead of hanging it (issue 35).
        write_stall_limit: Some(std::time::Duration::from_secs(30)),
        fs,
        ..base
    }
}

/// L0 triggers 2/4/8 (those `hyperleveldb` once stopped writes for good under, issue 35) in
/// three levels with a 64 KiB L1, so that a test's data overfills the last level: writes
/// stop often, and every stop needs a job the picker finds.
fn stopping(o: Options) -> Options {
    Options {
        level0_file_num_compaction_trigger: 2,
        level0_slowdown_writes_trigger: 4,
        level0_stop_writes_trigger: 8,
        num_levels: 3,
        max_bytes_for_level_base: 64 << 10,
        ..o
    }
}

/// The configuration `name`.
///
/// # Panics
/// If there is none of that name (a test naming one that was renamed).
pub fn named(name: &str) -> Config {
    configs()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("the testkit names no configuration {name:?}"))
}

/// Every named configuration.
pub fn configs() -> Vec<Config> {
    vec![
        Config {
            name: "default",
            build: |_, fs| small(Options::default(), fs),
        },
        // The default engine without memtable key filters (`default` has them: point reads
        // skip memtables they rule out), so both read paths stay covered.
        Config {
            name: "no-memtable-filter",
            build: |_, fs| Options {
                memtable_filter_ratio: 0.0,
                ..small(Options::default(), fs)
            },
        },
        Config {
            name: "leveldb",
            build: |_, fs| small(Options::leveldb(), fs),
        },
        Config {
            name: "hyperleveldb",
            build: |_, fs| small(Options::hyperleveldb(), fs),
        },
        Config {
            name: "hyperleveldb-stops",
            build: |_, fs| stopping(small(Options::hyperleveldb(), fs)),
        },
        Config {
            name: "hyperleveldb-1.0",
            build: |_, fs| small(Options::hyperleveldb_1_0(), fs),
        },
        // No write slowdown at all (1.0/1.1's write path): nothing bounds L0 while the
        // level thread is behind (the pending-bytes hard limit is far out of reach here).
        Config {
            name: "hyperleveldb-1.1",
            build: |_, fs| small(Options::hyperleveldb_1_1(), fs),
        },
        Config {
            name: "ohdb-l0p",
            build: |_, fs| small(Options::ohdb_l0p(), fs),
        },
        // OHDB's buckets merging into L1 without waiting for it to drain (not the paper's
        // mechanism: `l0_skips_l1_wait`), on HyperLevelDB 1.2's geometry where it began.
        Config {
            name: "ohdb-l0p-skip",
            build: |_, fs| Options {
                l0_layout: strata::L0Layout::Buckets,
                compaction_yields_to_flush: true,
                l0_skips_l1_wait: true,
                ..small(Options::hyperleveldb(), fs)
            },
        },
        // OHDB's buckets with a finite stop trigger: the fullest bucket stops writes.
        Config {
            name: "ohdb-l0p-stops",
            build: |_, fs| stopping(small(Options::ohdb_l0p(), fs)),
        },
        // HyperLevelDB with levels in a second directory: flushes into an empty range are
        // written in the levels' directory and placed in L1/L2.
        Config {
            name: "ohdb-2dc",
            build: |dir, fs| small(Options::ohdb_2dc(dir.join("levels")), fs),
        },
        Config {
            name: "ohdb-c",
            build: |dir, fs| Options {
                bucket_boundaries: strata::BucketBoundaries::KeyPrefix,
                ..small(Options::ohdb_c(dir.join("levels")), fs)
            },
        },
        // Values of 100 bytes and more in blob files (in a directory of their own); the
        // tests' values straddle the threshold, so keys move between inline and separated.
        Config {
            name: "blob",
            build: |dir, fs| Options {
                min_blob_size: 100,
                value_dir: Some(dir.join("values")),
                ..small(Options::blob(), fs)
            },
        },
        // `blob` with a compaction filter that reads every value it is offered (separated
        // ones from their blob files) and keeps it: every result is `blob`'s, while each
        // flush and compaction takes the filtering path (snapshots taken meanwhile pin
        // their read view).
        Config {
            name: "blob-keep-filter",
            build: |dir, fs| Options {
                min_blob_size: 100,
                value_dir: Some(dir.join("values")),
                compaction_filter: Some(Arc::new(KeepAll)),
                ..small(Options::blob(), fs)
            },
        },
        // WiscKey's value log: values of 100 bytes and more appended as they are written,
        // in 64 KiB segments.
        Config {
            name: "wisckey",
            build: |dir, fs| Options {
                min_blob_size: 100,
                vlog_segment_size: 64 << 10,
                value_dir: Some(dir.join("values")),
                ..small(Options::wisckey(), fs)
            },
        },
        // HashKV's store: values of 100 bytes and more go to 16 groups at flush (enough that
        // a flush finishes its group files on several threads); main segments of 4 KiB (the
        // least allowed) and a reserve of 16 x 4 KiB x 0.25, so every few flushes a group
        // is collected.
        Config {
            name: "hashkv",
            build: small_hashkv,
        },
        // The same store taking values as they are written (preset hashkv-wt): a group's
        // open files are created with every memtable, sealed by its flush, and collected
        // as above.
        Config {
            name: "hashkv-wt",
            build: |dir, fs| Options {
                hash_write_time: true,
                ..small_hashkv(dir, fs)
            },
        },
        // Blob files composed with OHDB's buckets.
        Config {
            name: "ohdb-l0p-blob",
            build: |_, fs| Options {
                value_store: strata::ValueStoreKind::BlobFiles,
                min_blob_size: 100,
                ..small(Options::ohdb_l0p(), fs)
            },
        },
        Config {
            name: "rocksdb",
            build: |_, fs| small(Options::rocksdb(), fs),
        },
        // MatrixKV's baseline: an enlarged L0 whose tables live in a directory of their own
        // (persistent memory in the paper); L0 compacts into L1 at 6 tables here.
        Config {
            name: "rocksdb-l0-nvm",
            build: |dir, fs| Options {
                level0_file_num_compaction_trigger: 6,
                level0_slowdown_writes_trigger: 8,
                level0_stop_writes_trigger: 12,
                ..small(Options::rocksdb_l0_nvm(dir.join("pmem")), fs)
            },
        },
        // MatrixKV: a 1 MiB container (256 pages) in a directory of its own, the receiver
        // turning into the compactor at 60 % (about 8 rows of 64 KiB memtables), columns of
        // 120-240 KiB: column compactions run all the time.
        Config {
            name: "matrixkv",
            build: small_matrix,
        },
        // The same with a Bloom filter per row (preset matrixkv-bloom): gets skip rows, and
        // a row skipped leaves the next one without a hint.
        Config {
            name: "matrixkv-bloom",
            build: |dir, fs| Options {
                matrix_row_bloom_bits: 10,
                ..small_matrix(dir, fs)
            },
        },
        // The same whose receiver drains into L1 once the database has been idle 5 ms
        // (preset matrixkv-idle): every pause of a test's writes and every
        // wait_for_compactions promotes the receiver, whatever its size.
        Config {
            name: "matrixkv-idle",
            build: |dir, fs| Options {
                matrix_row_bloom_bits: 10,
                idle_compaction_delay: Some(std::time::Duration::from_millis(5)),
                ..small_matrix(dir, fs)
            },
        },
        // Puts of key + value under 64 bytes in each memtable's coalescing buffer (the
        // tests' values straddle it: a key's versions move between buffer and skiplist);
        // its index takes 1,024 items, so memtables also freeze by item count.
        Config {
            name: "coalesce",
            build: |_, fs| Options {
                coalesce_item_threshold: 64,
                ..small(Options::default(), fs)
            },
        },
        // CLeveldb (preset cleveldb): the same items packed by flushes into 256-byte groups
        // in group files, collected once 30 % of a file's items are dropped, so group GC
        // runs all the time.
        Config {
            name: "cleveldb",
            build: |dir, fs| Options {
                coalesce_item_threshold: 64,
                coalesce_group_size: 256,
                coalesce_gc_ratio: 0.3,
                value_dir: Some(dir.join("values")),
                ..small(Options::cleveldb(), fs)
            },
        },
        // Small puts coalesced into groups, large values (100 bytes and more) in blob files.
        Config {
            name: "cleveldb-blob",
            build: |dir, fs| Options {
                coalesce_item_threshold: 64,
                coalesce_group_size: 256,
                coalesce_gc_ratio: 0.3,
                min_blob_size: 100,
                value_store: strata::ValueStoreKind::BlobFiles,
                value_dir: Some(dir.join("values")),
                ..small(Options::cleveldb(), fs)
            },
        },
        // Small puts coalesced into groups, large values (100 bytes and more) in HashKV's
        // hash-partitioned store, both collecting all the time.
        Config {
            name: "cleveldb-hashkv",
            build: |dir, fs| Options {
                coalesce_item_threshold: 64,
                coalesce_group_size: 256,
                coalesce_gc_ratio: 0.3,
                ..small_hashkv(dir, fs)
            },
        },
        // Coalesced groups on the matrix L0: flushes write RowTables whose entries are
        // group pointers, and column compactions carry them (and collect group files).
        Config {
            name: "cleveldb-matrixkv",
            build: |dir, fs| Options {
                coalesce_item_threshold: 64,
                coalesce_group_size: 256,
                coalesce_gc_ratio: 0.3,
                value_dir: Some(dir.join("values")),
                ..small_matrix(dir, fs)
            },
        },
        Config {
            name: "lz4-roundrobin",
            build: |_, fs| Options {
                compression: Compression::Lz4,
                compaction_priority: CompactionPriority::RoundRobin,
                block_restart_interval: 4,
                ..small(Options::default(), fs)
            },
        },
        Config {
            name: "two-dirs",
            build: |dir, fs| Options {
                wal_dir: Some(dir.join("wal")),
                level_dir: Some(dir.join("deep")),
                ..small(Options::default(), fs)
            },
        },
        // MatrixKV's flattened levels: L1 as large as L0 may grow (6 memtables here).
        Config {
            name: "flattened-levels",
            build: |_, fs| Options {
                level_sizing: strata::LevelSizing::Flattened,
                level0_file_num_compaction_trigger: 6,
                level0_slowdown_writes_trigger: 8,
                level0_stop_writes_trigger: 12,
                ..small(Options::default(), fs)
            },
        },
        Config {
            name: "dynamic-levels",
            build: |_, fs| Options {
                level_sizing: strata::LevelSizing::Dynamic,
                ..small(Options::default(), fs)
            },
        },
        // Ways of reading tables (Options::table_reads; "default" chooses by size, and with
        // this machine's memory maps its tables, metadata pinned). The same
        // as "default" on MemFs, which maps nothing; the model test on real files runs them
        // as RealFs reads them.
        Config {
            name: "reads-pread",
            build: |_, fs| Options {
                table_reads: Some(strata::fs::ReadAccess::Positional),
                ..small(Options::default(), fs)
            },
        },
        Config {
            name: "reads-mapped-unpinned",
            build: |_, fs| Options {
                table_reads: Some(strata::fs::ReadAccess::Mapped),
                pin_table_metadata: false,
                ..small(Options::default(), fs)
            },
        },
        // Reads by size with room for 192 KiB of tables: a test's tree crosses it, and the
        // table cache closes every table to reopen it with `pread` (and back, when
        // deletions and compaction shrink it) while reads and iterators hold some.
        Config {
            name: "reads-by-size",
            build: |_, fs| {
                let o = small(Options::default(), fs);
                let reserved = o.write_buffer_size * o.max_write_buffer_number + o.block_cache_size;
                Options {
                    memory_limit: Some((reserved + (256 << 10)) as u64),
                    ..o
                }
            },
        },
        // Read-triggered compaction charging every table a get searched in vain, filtered
        // or not (the default charges only blocks read in vain: without filters, as in
        // `no-bloom-2-compactors`, that is every such table too), so that read compactions
        // run during the tests with filters on.
        Config {
            name: "in-vain",
            build: |_, fs| Options {
                read_charging: strata::ReadCharging::InVain,
                ..small(Options::default(), fs)
            },
        },
        Config {
            name: "no-bloom-2-compactors",
            build: |_, fs| Options {
                bloom_bits_per_key: 0,
                max_background_compactions: 2,
                max_write_buffer_number: 3,
                block_cache_size: 0,
                ..small(Options::default(), fs)
            },
        },
    ]
}
