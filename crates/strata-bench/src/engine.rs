//! [`Engine`]: what a benchmark needs from a key-value store. strata implements it here;
//! RocksDB and LevelDB implement it in `peers/` behind cargo features, so every engine runs
//! the same workload generator with equivalent options.

use std::path::Path;
use std::sync::Arc;

use crate::flags::Flags;

/// Engine-side counters, read before and after each benchmark.
#[derive(Debug, Clone, Default)]
pub struct Metrics {
    /// Bytes written to tables by flushes and compactions.
    pub table_bytes: u64,
    /// Bytes written to WALs (0 if unknown).
    pub wal_bytes: u64,
    /// Bytes written through shared memory maps rather than `write(2)`, which the process's
    /// `wchar` (the device-bytes measure) does not see: strata's WAL on a real file system.
    pub mapped_bytes: u64,
    /// Compactions per output level (may be empty if unknown).
    pub compactions_per_level: Vec<u64>,
    /// Compaction bytes written per output level.
    pub compaction_bytes_per_level: Vec<u64>,
    /// Write stalls (stops + slowdowns).
    pub stalls: u64,
    /// Time writes spent stalled, in microseconds.
    pub stall_micros: u64,
    /// Bytes of live values a value store's garbage collection moved.
    pub gc_bytes: u64,
    /// Merging compactions by input level (may be empty if unknown).
    pub merges_by_input_level: Vec<u64>,
    /// Tables moved down without rewriting, by the level they left.
    pub moved_by_input_level: Vec<u64>,
    /// Move operations by the level they left (one may move many tables; empty when the
    /// engine does not say, and then each moved table counts as one).
    pub moves_by_input_level: Vec<u64>,
    /// Tables in the tree now, if known.
    pub tables: Option<u64>,
    /// Bytes compactions read and wrote (not flushes), if known: the paper columns CR and CW.
    pub compaction_io: Option<(u64, u64)>,
    /// How the engine reads its tables now, if it says (strata's `strata.table-reads`).
    pub table_reads: Option<String>,
    /// Reads of table files so far, if counted: (reads, bytes) while opening tables and
    /// of blocks afterwards (strata's `StatsSnapshot::table_*_reads`).
    pub table_file_reads: Option<[u64; 4]>,
}

/// A key-value store under test.
pub trait Engine: Send + Sync {
    /// Engine name for reports.
    fn name(&self) -> String;
    /// Writes a batch of puts (`Some`) and deletes (`None`) atomically.
    fn write(&self, batch: &[(&[u8], Option<&[u8]>)]) -> Result<(), String>;
    /// Point read.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String>;
    /// Seeks to `start` and reads up to `n` entries; returns (entries, bytes).
    fn scan(&self, start: &[u8], n: usize) -> Result<(usize, usize), String>;
    /// Reads up to `limit` entries from one end; returns (entries, bytes).
    fn scan_all(&self, reverse: bool, limit: u64) -> Result<(u64, u64), String>;
    /// Counters.
    fn metrics(&self) -> Metrics;
    /// The engine's own statistics text.
    fn stats_text(&self) -> String;
    /// Waits until the engine's background work is idle (db_bench's `waitforcompaction`).
    /// Default, for engines without such a call: until the level compactions and the
    /// tables counted by `metrics` have not changed for three seconds.
    fn wait_idle(&self) -> Result<(), String> {
        let shape = |m: Metrics| {
            (
                m.merges_by_input_level.iter().sum::<u64>(),
                m.moved_by_input_level.iter().sum::<u64>(),
                m.tables,
                m.table_bytes,
            )
        };
        let mut last = shape(self.metrics());
        let mut quiet = 0;
        while quiet < 3 {
            std::thread::sleep(std::time::Duration::from_secs(1));
            let now = shape(self.metrics());
            quiet = if now == last { quiet + 1 } else { 0 };
            last = now;
        }
        Ok(())
    }
}

/// Opens the engine `flags.engine` at `dir`.
///
/// # Errors
/// A message if the engine is not built in or fails to open.
pub fn open(flags: &Flags, dir: &Path) -> Result<Arc<dyn Engine>, String> {
    match flags.engine.as_str() {
        "strata" => Ok(Arc::new(StrataEngine::open(flags, dir)?)),
        "rocksdb" => open_rocksdb(flags, dir),
        "leveldb" => open_leveldb(flags, dir),
        e => Err(format!("unknown engine {e}")),
    }
}

#[cfg(feature = "rocksdb")]
fn open_rocksdb(flags: &Flags, dir: &Path) -> Result<Arc<dyn Engine>, String> {
    Ok(Arc::new(crate::peers::rocks::RocksEngine::open(
        flags, dir,
    )?))
}

#[cfg(not(feature = "rocksdb"))]
fn open_rocksdb(_: &Flags, _: &Path) -> Result<Arc<dyn Engine>, String> {
    Err("--engine=rocksdb needs a build with `--features rocksdb` (builds RocksDB from source, about 12 minutes once)".into())
}

#[cfg(feature = "leveldb")]
fn open_leveldb(flags: &Flags, dir: &Path) -> Result<Arc<dyn Engine>, String> {
    Ok(Arc::new(crate::peers::level::LevelEngine::open(
        flags, dir,
    )?))
}

#[cfg(not(feature = "leveldb"))]
fn open_leveldb(_: &Flags, _: &Path) -> Result<Arc<dyn Engine>, String> {
    Err("--engine=leveldb needs a build with `--features leveldb` and LevelDB's library (Debian: apt-get install libleveldb-dev)".into())
}

/// strata, configured from the preset and the flags.
pub struct StrataEngine {
    db: strata::Db,
    wo: strata::WriteOptions,
}

/// The value named `v` among `choices`, for flag `--name`; an error listing the names
/// otherwise.
fn choice<T: Copy>(name: &str, v: &str, choices: &[(&str, T)]) -> Result<T, String> {
    choices
        .iter()
        .find(|(n, _)| *n == v)
        .map(|&(_, t)| t)
        .ok_or_else(|| {
            let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
            format!("--{name}: expected {}, got {v:?}", names.join("|"))
        })
}

/// strata options for these flags: the preset, then every flag that was given.
///
/// # Errors
/// Unknown presets (or ones that later issues bring), bad values.
pub fn strata_options(flags: &Flags) -> Result<strata::Options, String> {
    let mut o = strata::Options::preset(&flags.preset).map_err(|e| e.message().to_string())?;
    if let Some(v) = flags.write_buffer_size {
        o.write_buffer_size = v;
    }
    if let Some(v) = flags.target_file_size_base {
        o.target_file_size_base = v;
    }
    if let Some(v) = flags.max_bytes_for_level_base {
        o.max_bytes_for_level_base = v;
    }
    if let Some(v) = flags.max_bytes_for_level_multiplier {
        o.max_bytes_for_level_multiplier = v;
    }
    if let Some(v) = &flags.level_sizing {
        use strata::LevelSizing as L;
        o.level_sizing = choice(
            "level_sizing",
            v,
            &[
                ("classic", L::Classic),
                ("dynamic", L::Dynamic),
                ("flattened", L::Flattened),
                ("hyperleveldb", L::HyperLevelDb),
                ("hyperleveldb-1.0", L::HyperLevelDb10),
            ],
        )?;
    }
    match flags.level_compaction_dynamic_level_bytes {
        Some(true) => o.level_sizing = strata::LevelSizing::Dynamic,
        Some(false) if o.level_sizing == strata::LevelSizing::Dynamic => {
            o.level_sizing = strata::LevelSizing::Classic;
        }
        _ => {}
    }
    if let Some(v) = flags.num_levels {
        o.num_levels = v;
    }
    if let Some(v) = flags.bloom_bits {
        o.bloom_bits_per_key = v.max(0) as u32;
    }
    if let Some(v) = flags.cache_size {
        o.block_cache_size = v.max(0) as usize;
    }
    if let Some(v) = flags.block_size {
        o.block_size = v;
    }
    if let Some(v) = flags.open_files {
        o.max_open_files = v;
    }
    if let Some(v) = flags.max_write_buffer_number {
        o.max_write_buffer_number = v;
    }
    if let Some(v) = flags.max_background_compactions {
        o.max_background_compactions = v;
    }
    if let Some(v) = flags.level0_file_num_compaction_trigger {
        o.level0_file_num_compaction_trigger = v;
    }
    if let Some(v) = flags.level0_slowdown_writes_trigger {
        o.level0_slowdown_writes_trigger = v;
    }
    if let Some(v) = flags.delayed_write_rate {
        o.delayed_write_rate = v;
    }
    if let Some(v) = flags.level0_stop_writes_trigger {
        o.level0_stop_writes_trigger = v;
    }
    if let Some(v) = flags.separate_flush_thread {
        o.separate_flush_thread = v;
    }
    if let Some(p) = &flags.compaction_priority {
        use strata::CompactionPriority as P;
        o.compaction_priority = choice(
            "compaction_priority",
            p,
            &[
                ("round-robin", P::RoundRobin),
                ("min-overlap", P::MinOverlappingRatio),
            ],
        )?;
    }
    o.compression = if flags.compression_type == "lz4" {
        strata::Compression::Lz4
    } else {
        strata::Compression::None
    };
    o.wal_dir = flags.wal_dir.as_ref().map(Into::into);
    // A directory named for the WALs places them, unless asked otherwise.
    o.wal_in_pmem = flags
        .wal_in_pmem
        .unwrap_or(o.wal_in_pmem && o.wal_dir.is_none());
    o.level_dir = flags.level_dir.as_ref().map(Into::into);
    if let Some(d) = &flags.pmem_dir {
        o.pmem_dir = Some(d.into());
    }
    o.value_dir = flags.value_dir.as_ref().map(Into::into);
    match flags.enable_blob_files {
        Some(true) => o.value_store = strata::ValueStoreKind::BlobFiles,
        Some(false) => o.value_store = strata::ValueStoreKind::Inline,
        None => {}
    }
    if let Some(n) = flags.vlog_segment_size {
        o.vlog_segment_size = n;
    }
    if let Some(c) = flags.vlog_capacity {
        o.vlog_capacity = Some(c);
    }
    if let Some(n) = flags.hash_groups {
        o.hash_groups = n;
    }
    if let Some(n) = flags.hash_main_segment_size {
        o.hash_main_segment_size = n;
    }
    if let Some(r) = flags.hash_reserve_ratio {
        o.hash_reserve_ratio = r;
    }
    if let Some(b) = flags.hash_hot_cold {
        o.hash_hot_cold = b;
    }
    if let Some(r) = flags.hash_cold_gc_ratio {
        o.hash_cold_gc_ratio = r;
    }
    if let Some(b) = flags.hash_cold_takes_main {
        o.hash_cold_takes_main = b;
    }
    if let Some(b) = flags.hash_write_time {
        o.hash_write_time = b;
    }
    if let Some(p) = &flags.hash_gc_policy {
        o.hash_gc_policy = match p.as_str() {
            "greedy" => strata::HashGcPolicy::Greedy,
            "cost-benefit" => strata::HashGcPolicy::CostBenefit,
            "greedy-random" => strata::HashGcPolicy::GreedyRandom,
            "random" => strata::HashGcPolicy::Random,
            other => {
                return Err(format!(
                    "--hash_gc_policy: expected greedy|cost-benefit|greedy-random|random, got {other:?}"
                ))
            }
        };
    }
    if let Some(n) = flags.hash_gc_candidates {
        o.hash_gc_candidates = n;
    }
    if let Some(n) = flags.hash_gc_memory {
        o.hash_gc_memory = n;
    }
    if let Some(w) = &flags.hash_when_full {
        o.hash_when_full = match w.as_str() {
            "refuse" => strata::HashWhenFull::Refuse,
            "grow" => strata::HashWhenFull::Grow,
            other => {
                return Err(format!(
                    "--hash_when_full: expected refuse|grow, got {other:?}"
                ))
            }
        };
    }
    if let Some(n) = flags.value_read_ahead {
        o.value_read_ahead = n;
    }
    if let Some(r) = flags.memtable_filter_ratio {
        o.memtable_filter_ratio = r;
    }
    if let Some(r) = flags.blob_gc_garbage_ratio {
        o.blob_gc_garbage_ratio = r;
    }
    if let Some(n) = flags.min_blob_size {
        o.min_blob_size = usize::try_from(n).map_err(|_| "--min_blob_size: too large")?;
    }
    if (flags.preset == "ohdb-2dc" || flags.preset == "ohdb-c") && o.level_dir.is_none() {
        return Err(format!(
            "--preset={}: give the second directory with --level_dir=DIR",
            flags.preset
        ));
    }
    if strata::Options::PMEM_PRESETS.contains(&flags.preset.as_str()) && o.pmem_dir.is_none() {
        return Err(format!(
            "--preset={}: give its persistent memory with --pmem_dir=DIR \
             (a tmpfs such as /dev/shm/NAME emulates it)",
            flags.preset
        ));
    }
    if let Some(r) = &flags.table_reads {
        use strata::fs::ReadAccess as A;
        o.table_reads = choice(
            "table_reads",
            r,
            &[
                ("auto", None),
                ("mapped", Some(A::Mapped)),
                ("mapped-random", Some(A::MappedRandom)),
                ("pread", Some(A::Positional)),
            ],
        )?;
    }
    if let Some(v) = flags.memory_limit {
        o.memory_limit = Some(v);
    }
    if let Some(r) = &flags.read_charging {
        use strata::ReadCharging as R;
        o.read_charging = choice(
            "read_charging",
            r,
            &[
                ("in-vain", R::InVain),
                ("first-of-several", R::FirstOfSeveral),
                ("block-in-vain", R::BlockInVain),
            ],
        )?;
    }
    if let Some(r) = &flags.seek_charging {
        use strata::SeekCharging as S;
        o.seek_charging = choice(
            "seek_charging",
            r,
            &[("while-mapped", S::WhileMapped), ("always", S::Always)],
        )?;
    }
    if let Some(b) = flags.read_compaction_bytes {
        o.read_compaction_bytes = b;
    }
    if let Some(l) = flags.max_mem_compaction_level {
        o.max_mem_compaction_level = l;
    }
    if let Some(s) = flags.idle_compaction_delay {
        if !(s >= 0.0 && s.is_finite()) {
            return Err(format!(
                "--idle_compaction_delay: expected seconds >= 0, got {s}"
            ));
        }
        o.idle_compaction_delay = (s > 0.0).then(|| std::time::Duration::from_secs_f64(s));
    }
    if let Some(v) = flags.pin_table_metadata {
        o.pin_table_metadata = v;
    }
    if let Some(l) = &flags.l0_layout {
        use strata::L0Layout as L;
        o.l0_layout = choice(
            "l0_layout",
            l,
            &[
                ("flat", L::Flat),
                ("buckets", L::Buckets),
                ("matrix", L::Matrix),
            ],
        )?;
    }
    if let Some(v) = flags.matrix_container_size {
        o.matrix_container_size = v;
    }
    if let Some(v) = flags.matrix_receiver_percent {
        o.matrix_receiver_percent = v;
    }
    if let Some(v) = flags.matrix_column_tables {
        o.matrix_column_tables = v;
    }
    if let Some(v) = flags.matrix_row_bloom_bits {
        o.matrix_row_bloom_bits = v;
    }
    if let Some(v) = flags.coalesce_item_threshold {
        o.coalesce_item_threshold = v;
    }
    if let Some(v) = flags.matrix_hints {
        o.matrix_hints = v;
    }
    if let Some(v) = flags.l0_buckets {
        o.l0_buckets = v;
    }
    if let Some(v) = flags.bucket_compaction_bytes {
        o.bucket_compaction_bytes = v;
    }
    if let Some(v) = flags.l0_skips_l1_wait {
        o.l0_skips_l1_wait = v;
    }
    if let Some(v) = flags.bucket_compaction_trigger {
        o.bucket_compaction_trigger = v;
    }
    if let Some(b) = &flags.bucket_boundaries {
        use strata::BucketBoundaries as B;
        o.bucket_boundaries = choice(
            "bucket_boundaries",
            b,
            &[("prefix", B::KeyPrefix), ("sampled", B::Sampled)],
        )?;
    }
    if let Some(spec) = &flags.device_model {
        o.fs = Arc::new(crate::device::DeviceFs::new(crate::device::parse(spec)?));
    }
    o.validate().map_err(|e| e.message().to_string())?;
    Ok(o)
}

impl StrataEngine {
    fn open(flags: &Flags, dir: &Path) -> Result<Self, String> {
        let db = strata::Db::open(dir, strata_options(flags)?).map_err(|e| e.to_string())?;
        Ok(StrataEngine {
            db,
            wo: strata::WriteOptions {
                sync: flags.sync,
                disable_wal: flags.disable_wal,
            },
        })
    }
}

impl Engine for StrataEngine {
    fn name(&self) -> String {
        "strata".into()
    }

    fn write(&self, batch: &[(&[u8], Option<&[u8]>)]) -> Result<(), String> {
        let bytes: usize = batch
            .iter()
            .map(|(k, v)| strata::WriteBatch::entry_capacity(k.len(), v.map_or(0, <[u8]>::len)))
            .sum();
        let mut b = strata::WriteBatch::with_capacity(bytes);
        for (k, v) in batch {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            };
        }
        self.db.write(&self.wo, b).map_err(|e| e.to_string())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.db.get(key).map_err(|e| e.to_string())
    }

    fn scan(&self, start: &[u8], n: usize) -> Result<(usize, usize), String> {
        let mut it = self
            .db
            .iter(strata::ReadOptions::default())
            .map_err(|e| e.to_string())?;
        it.seek(start);
        let (mut count, mut bytes) = (0, 0);
        while it.valid() && count < n {
            bytes += it.key().len() + it.value().len();
            count += 1;
            it.next();
        }
        it.status().map_err(|e| e.to_string())?;
        Ok((count, bytes))
    }

    fn scan_all(&self, reverse: bool, limit: u64) -> Result<(u64, u64), String> {
        let mut it = self
            .db
            .iter(strata::ReadOptions::default())
            .map_err(|e| e.to_string())?;
        if reverse {
            it.seek_to_last();
        } else {
            it.seek_to_first();
        }
        let (mut count, mut bytes) = (0u64, 0u64);
        while it.valid() && count < limit {
            bytes += (it.key().len() + it.value().len()) as u64;
            count += 1;
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status().map_err(|e| e.to_string())?;
        Ok((count, bytes))
    }

    fn metrics(&self) -> Metrics {
        let s = self.db.stats();
        Metrics {
            table_bytes: s.flush_bytes + s.compaction_written.iter().sum::<u64>(),
            wal_bytes: s.wal_bytes,
            // RealFs copies small WAL groups through a map and `pwrite`s large ones
            // (strata::fs::RealFs::create_log): only the first are missing from `wchar`.
            // (Counting every WAL byte here counted the WAL twice for puts of 512 B and up.)
            mapped_bytes: s.wal_mapped_bytes,
            compactions_per_level: s.compactions.clone(),
            compaction_bytes_per_level: s.compaction_written.clone(),
            stalls: s.stalls + s.slowdowns,
            stall_micros: s.stall_micros,
            gc_bytes: s.value_bytes_relocated,
            merges_by_input_level: s.merges_by_input_level.clone(),
            moved_by_input_level: s.moved_files_by_input_level.clone(),
            moves_by_input_level: s.moves_by_input_level.clone(),
            tables: Some(s.tables() as u64),
            compaction_io: Some((s.compaction_bytes_read(), s.compaction_bytes_written())),
            table_reads: self.db.property("strata.table-reads"),
            table_file_reads: Some([
                s.table_open_reads,
                s.table_open_read_bytes,
                s.table_block_reads,
                s.table_block_read_bytes,
            ]),
        }
    }

    fn stats_text(&self) -> String {
        let mut text = self.db.property("strata.stats").unwrap_or_default();
        // Each value store's state and its GC's counters, when any store has files.
        if let Some(stores) = self.db.property("strata.value-stores") {
            if !stores.trim().is_empty() {
                text.push_str("\nValue stores:\n");
                text.push_str(stores.trim_end());
                text.push('\n');
            }
        }
        // What writes waited for, when they waited.
        if let Some(waits) = self.db.property("strata.write-stalls") {
            if !waits.trim().is_empty() {
                text.push_str("\nWrite stalls:\n");
                text.push_str(waits.trim_end());
                text.push('\n');
            }
        }
        text
    }

    fn wait_idle(&self) -> Result<(), String> {
        self.db.wait_for_compactions().map_err(|e| e.to_string())
    }
}
