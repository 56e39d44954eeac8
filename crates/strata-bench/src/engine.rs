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
    /// Writes a put that expires `ttl` after it is written.
    fn put_with_ttl(
        &self,
        _key: &[u8],
        _value: &[u8],
        _ttl: std::time::Duration,
    ) -> Result<(), String> {
        Err(format!(
            "{} has no per-entry time to live here",
            self.name()
        ))
    }
    /// Compacts the whole key range.
    fn compact_all(&self) -> Result<(), String> {
        Err(format!("{}: no full compaction here", self.name()))
    }
    /// Deletes every key in `[start, end)` with one range deletion.
    fn delete_range(&self, _start: &[u8], _end: &[u8]) -> Result<(), String> {
        Err(format!("{} has no range deletion here", self.name()))
    }
    /// Writes a checkpoint (an openable copy as of now) to `dir`, which must not exist.
    fn checkpoint(&self, _dir: &Path) -> Result<(), String> {
        Err(format!("{} has no checkpoints here", self.name()))
    }
    /// Backs the database up into the backup directory `dir` (made if missing), sharing
    /// what earlier backups there hold.
    fn backup(&self, _dir: &Path) -> Result<(), String> {
        Err(format!("{} has no backups here", self.name()))
    }
    /// Restores the newest backup in `dir` to the new directory `to`.
    fn restore_latest(&self, _dir: &Path, _to: &Path) -> Result<(), String> {
        Err(format!("{} has no backups here", self.name()))
    }
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

/// strata options for these flags: the preset, then the db_bench flags under their
/// db_bench names, then every strata option given by name, in the order given
/// (`Flags::options`, read by the engine's own parser).
///
/// # Errors
/// Unknown presets, bad values, a preset's missing directory.
pub fn strata_options(flags: &Flags) -> Result<strata::Options, String> {
    let message = |e: strata::Error| e.message().to_string();
    let mut o = strata::Options::preset(&flags.preset).map_err(message)?;
    // db_bench's flags: the same names as strata's options, typed (the peers read them).
    macro_rules! same_name {
        ($($f:ident)*) => {$(
            if let Some(v) = flags.$f {
                o.$f = v;
            }
        )*};
    }
    same_name!(
        write_buffer_size target_file_size_base max_bytes_for_level_base
        max_bytes_for_level_multiplier num_levels block_size max_write_buffer_number
        level0_file_num_compaction_trigger level0_slowdown_writes_trigger
        level0_stop_writes_trigger
    );
    // db_bench's flags under other names.
    if let Some(v) = flags.bloom_bits {
        o.bloom_bits_per_key = v.max(0) as u32;
    }
    if let Some(v) = flags.cache_size {
        o.block_cache_size = v.max(0) as usize;
    }
    if let Some(v) = flags.open_files {
        o.max_open_files = v;
    }
    o.compression = if flags.compression_type == "lz4" {
        strata::Compression::Lz4
    } else {
        strata::Compression::None
    };
    match flags.enable_blob_files {
        Some(true) => o.value_store = strata::ValueStoreKind::BlobFiles,
        Some(false) => o.value_store = strata::ValueStoreKind::Inline,
        None => {}
    }
    if let Some(n) = flags.min_blob_size {
        o.min_blob_size = usize::try_from(n).map_err(|_| "--min_blob_size: too large")?;
    }
    // The directories (the bench reads them too). A directory named for the WALs places
    // them, out of `pmem_dir` (with `--wal_in_pmem=1` too, the options are refused).
    o.wal_dir = flags.wal_dir.as_ref().map(Into::into);
    if o.wal_dir.is_some() {
        o.wal_in_pmem = false;
    }
    o.level_dir = flags.level_dir.as_ref().map(Into::into);
    if let Some(d) = &flags.pmem_dir {
        o.pmem_dir = Some(d.into());
    }
    o.value_dir = flags.value_dir.as_ref().map(Into::into);
    // Every other strata option, by name; and the bench's compaction filters, which no
    // text can name in the engine (a filter is code).
    for (name, value) in &flags.options {
        if name == "compaction_filter" {
            o.compaction_filter = bench_filter(value)?;
            continue;
        }
        o.set(name, value)
            .map_err(|e| format!("--{name}: {}", e.message()))?;
    }
    // db_bench's dynamic level sizing over `--level_sizing` (as it always did): 1 makes it
    // dynamic, 0 turns a dynamic sizing back to classic.
    match flags.level_compaction_dynamic_level_bytes {
        Some(true) => o.level_sizing = strata::LevelSizing::Dynamic,
        Some(false) if o.level_sizing == strata::LevelSizing::Dynamic => {
            o.level_sizing = strata::LevelSizing::Classic;
        }
        _ => {}
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
    if let Some(spec) = &flags.device_model {
        o.fs = Arc::new(crate::device::DeviceFs::new(crate::device::parse(spec)?));
    }
    o.validate().map_err(message)?;
    Ok(o)
}

/// `--compaction_filter=none|keep|keep-read`: no filter, one that keeps every entry, or
/// one that also reads every value first (separated ones from their store): what a filter
/// costs a flush and a compaction beside what it decides.
fn bench_filter(v: &str) -> Result<Option<Arc<dyn strata::CompactionFilter>>, String> {
    struct Keep(bool);
    impl strata::CompactionFilter for Keep {
        fn name(&self) -> &str {
            if self.0 {
                "keep-read"
            } else {
                "keep"
            }
        }
        fn filter(&self, e: &strata::FilterEntry<'_>) -> strata::Decision {
            if self.0 {
                std::hint::black_box(e.value().map(<[u8]>::len).unwrap_or(0));
            }
            strata::Decision::Keep
        }
    }
    match v {
        "none" => Ok(None),
        "keep" => Ok(Some(Arc::new(Keep(false)))),
        "keep-read" => Ok(Some(Arc::new(Keep(true)))),
        _ => Err(format!(
            "--compaction_filter={v}: it takes one of none, keep, keep-read"
        )),
    }
}

impl StrataEngine {
    fn open(flags: &Flags, dir: &Path) -> Result<Self, String> {
        let db = strata::Db::open(dir, strata_options(flags)?).map_err(|e| e.to_string())?;
        Ok(StrataEngine {
            db,
            wo: strata::WriteOptions {
                sync: flags.sync,
                disable_wal: flags.disable_wal,
                ..Default::default()
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

    fn put_with_ttl(
        &self,
        key: &[u8],
        value: &[u8],
        ttl: std::time::Duration,
    ) -> Result<(), String> {
        let mut b = strata::WriteBatch::with_capacity(strata::WriteBatch::entry_capacity(
            key.len(),
            value.len() + 8,
        ));
        b.put_with_ttl(key, value, ttl);
        self.db.write(&self.wo, b).map_err(|e| e.to_string())
    }

    fn compact_all(&self) -> Result<(), String> {
        self.db.compact_range(None, None).map_err(|e| e.to_string())
    }

    fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<(), String> {
        let mut b = strata::WriteBatch::new();
        b.delete_range(start, end);
        self.db.write(&self.wo, b).map_err(|e| e.to_string())
    }

    fn checkpoint(&self, dir: &Path) -> Result<(), String> {
        self.db.checkpoint(dir).map_err(|e| e.to_string())
    }

    fn backup(&self, dir: &Path) -> Result<(), String> {
        let engine = strata::BackupEngine::open(dir).map_err(|e| e.to_string())?;
        engine
            .create_backup(&self.db)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn restore_latest(&self, dir: &Path, to: &Path) -> Result<(), String> {
        let engine = strata::BackupEngine::open(dir).map_err(|e| e.to_string())?;
        let list = engine.list().map_err(|e| e.to_string())?;
        let newest = list.last().ok_or("no backup to restore")?;
        engine.restore(newest.id, to).map_err(|e| e.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn options(args: &[&str]) -> Result<strata::Options, String> {
        strata_options(&Flags::parse(args.iter().map(|s| s.to_string()))?)
    }

    #[test]
    fn strata_options_reach_the_engine_by_name() {
        let o = options(&[
            "--value_store=hash",
            "--l0_layout=buckets",
            "--idle_compaction_delay=2.5",
            "--nohash_hot_cold",
            "--write_slowdown=per-excess-run",
            "--table_reads=pread",
            "--write_buffer_size=1048576",
        ])
        .unwrap();
        assert_eq!(o.value_store, strata::ValueStoreKind::Hash);
        assert_eq!(o.l0_layout, strata::L0Layout::Buckets);
        assert_eq!(
            o.idle_compaction_delay,
            Some(std::time::Duration::from_millis(2500))
        );
        assert!(!o.hash_hot_cold);
        assert_eq!(o.write_slowdown, strata::WriteSlowdown::PerExcessRun);
        assert_eq!(o.table_reads, Some(strata::fs::ReadAccess::Positional));
        assert_eq!(o.write_buffer_size, 1 << 20);
        // Later flags win; 0 seconds turns idle compaction off.
        let o = options(&[
            "--l0_layout=matrix",
            "--l0_layout=flat",
            "--idle_compaction_delay=0",
        ])
        .unwrap();
        assert_eq!(o.l0_layout, strata::L0Layout::Flat);
        assert_eq!(o.idle_compaction_delay, None);
        // A directory for the WALs takes them out of persistent memory unless asked.
        let pmem = ["--preset=matrixkv", "--pmem_dir=/tmp/p"];
        assert!(options(&pmem).unwrap().wal_in_pmem);
        let wal: Vec<&str> = pmem.iter().copied().chain(["--wal_dir=/tmp/w"]).collect();
        assert!(!options(&wal).unwrap().wal_in_pmem);
        let both: Vec<&str> = wal.iter().copied().chain(["--wal_in_pmem=1"]).collect();
        assert!(options(&both).unwrap_err().contains("wal_in_pmem"));
        // db_bench's dynamic sizing flag wins over --level_sizing, whatever the order.
        let o = options(&[
            "--level_compaction_dynamic_level_bytes=1",
            "--level_sizing=hyperleveldb",
        ])
        .unwrap();
        assert_eq!(o.level_sizing, strata::LevelSizing::Dynamic);
        let o = options(&[
            "--level_sizing=dynamic",
            "--level_compaction_dynamic_level_bytes=0",
        ])
        .unwrap();
        assert_eq!(o.level_sizing, strata::LevelSizing::Classic);
        // gflags' yes/no still read as booleans.
        assert!(!options(&["--hash_hot_cold=no"]).unwrap().hash_hot_cold);
        assert!(
            options(&["--pin_table_metadata=yes"])
                .unwrap()
                .pin_table_metadata
        );
        // The engine's refusals, with what the option takes.
        let e = options(&["--l0_layout=spiral"]).unwrap_err();
        assert!(
            e.contains("--l0_layout") && e.contains("flat, buckets, matrix"),
            "{e}"
        );
        let e = options(&["--no_such_option=1"]).unwrap_err();
        assert!(e.contains("unknown flag --no_such_option"), "{e}");
    }
}
