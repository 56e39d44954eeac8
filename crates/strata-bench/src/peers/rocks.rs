//! RocksDB through the `rocksdb` crate, with options equivalent to strata's flags.

use std::path::Path;

use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options, WriteBatch, WriteOptions, DB};

use crate::engine::{Engine, Metrics};
use crate::flags::Flags;

/// An open RocksDB.
pub struct RocksEngine {
    db: DB,
    opts: Options,
    wo: WriteOptions,
    /// The database directory (its LOG counts compactions).
    dir: std::path::PathBuf,
}

impl RocksEngine {
    /// Opens RocksDB at `dir` with the flags' options (RocksDB's defaults otherwise).
    ///
    /// # Errors
    /// RocksDB's message.
    pub fn open(flags: &Flags, dir: &Path) -> Result<Self, String> {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.enable_statistics();
        // One flush + one compaction thread, like strata's default.
        o.set_max_background_jobs(2);
        if let Some(v) = flags.write_buffer_size {
            o.set_write_buffer_size(v);
        }
        if let Some(v) = flags.target_file_size_base {
            o.set_target_file_size_base(v);
        }
        if let Some(v) = flags.max_bytes_for_level_base {
            o.set_max_bytes_for_level_base(v);
        }
        if let Some(v) = flags.max_bytes_for_level_multiplier {
            o.set_max_bytes_for_level_multiplier(v);
        }
        if let Some(v) = flags.level_compaction_dynamic_level_bytes {
            o.set_level_compaction_dynamic_level_bytes(v);
        }
        if let Some(v) = flags.num_levels {
            o.set_num_levels(v as i32);
        }
        if let Some(v) = flags.max_write_buffer_number {
            o.set_max_write_buffer_number(v as i32);
        }
        if let Some(v) = flags.level0_file_num_compaction_trigger {
            o.set_level_zero_file_num_compaction_trigger(v as i32);
        }
        if let Some(v) = flags.level0_slowdown_writes_trigger {
            o.set_level_zero_slowdown_writes_trigger(v as i32);
        }
        if let Some(v) = flags.level0_stop_writes_trigger {
            o.set_level_zero_stop_writes_trigger(v as i32);
        }
        // `--delayed_write_rate`: the rocksdb crate does not expose it; RocksDB's own default
        // (16 MiB/s) is also strata's.
        if let Some(v) = flags.open_files {
            o.set_max_open_files(v as i32);
        }
        o.set_compression_type(if flags.compression_type == "lz4" {
            DBCompressionType::Lz4
        } else {
            DBCompressionType::None
        });
        if let Some(w) = &flags.wal_dir {
            o.set_wal_dir(w);
        }
        // Integrated BlobDB (`--enable_blob_files`, `--min_blob_size`), with its garbage
        // collection on at its defaults (age cutoff 0.25, force threshold 1.0).
        if flags.enable_blob_files == Some(true) {
            o.set_enable_blob_files(true);
            o.set_min_blob_size(flags.min_blob_size.unwrap_or(0));
            o.set_enable_blob_gc(true);
        }
        let mut t = BlockBasedOptions::default();
        // strata's default is a 10 bits/key bloom filter; pass --bloom_bits to change both.
        let bits = flags.bloom_bits.unwrap_or(10);
        if bits > 0 {
            t.set_bloom_filter(bits as f64, false);
        }
        let cache = Cache::new_lru_cache(flags.cache_size.unwrap_or(32 << 20).max(0) as usize);
        t.set_block_cache(&cache);
        if let Some(b) = flags.block_size {
            t.set_block_size(b);
        }
        o.set_block_based_table_factory(&t);
        let db = DB::open(&o, dir).map_err(|e| e.to_string())?;
        let mut wo = WriteOptions::default();
        wo.set_sync(flags.sync);
        wo.disable_wal(flags.disable_wal);
        Ok(RocksEngine {
            db,
            opts: o,
            wo,
            dir: dir.to_path_buf(),
        })
    }
}

/// RocksDB's `BackupEngine` on the backup directory `dir`, with its default options
/// (table files shared between backups by name, size and checksum).
fn backup_engine(dir: &Path) -> Result<rocksdb::backup::BackupEngine, String> {
    let opts = rocksdb::backup::BackupEngineOptions::new(dir).map_err(|e| e.to_string())?;
    let env = rocksdb::Env::new().map_err(|e| e.to_string())?;
    rocksdb::backup::BackupEngine::open(&opts, &env).map_err(|e| e.to_string())
}

impl Engine for RocksEngine {
    fn name(&self) -> String {
        "rocksdb".into()
    }

    fn compact_all(&self) -> Result<(), String> {
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        Ok(())
    }

    fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<(), String> {
        let mut b = WriteBatch::default();
        b.delete_range(start, end);
        self.db.write_opt(b, &self.wo).map_err(|e| e.to_string())
    }

    fn checkpoint(&self, dir: &Path) -> Result<(), String> {
        rocksdb::checkpoint::Checkpoint::new(&self.db)
            .and_then(|c| c.create_checkpoint(dir))
            .map_err(|e| e.to_string())
    }

    fn backup(&self, dir: &Path) -> Result<(), String> {
        let mut engine = backup_engine(dir)?;
        // (Flushed first, as strata's backup is.)
        engine
            .create_new_backup_flush(&self.db, true)
            .map_err(|e| e.to_string())
    }

    fn restore_latest(&self, dir: &Path, to: &Path) -> Result<(), String> {
        let mut engine = backup_engine(dir)?;
        engine
            .restore_from_latest_backup(to, to, &rocksdb::backup::RestoreOptions::default())
            .map_err(|e| e.to_string())
    }

    fn write(&self, batch: &[(&[u8], Option<&[u8]>)]) -> Result<(), String> {
        if let [(k, Some(v))] = batch {
            return self.db.put_opt(k, v, &self.wo).map_err(|e| e.to_string());
        }
        let mut b = WriteBatch::default();
        for (k, v) in batch {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            }
        }
        self.db.write_opt(b, &self.wo).map_err(|e| e.to_string())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.db
            .get_pinned(key)
            .map(|v| v.map(|p| p.to_vec()))
            .map_err(|e| e.to_string())
    }

    fn scan(&self, start: &[u8], n: usize) -> Result<(usize, usize), String> {
        let mut it = self.db.raw_iterator();
        it.seek(start);
        let (mut count, mut bytes) = (0, 0);
        while it.valid() && count < n {
            bytes += it.key().map_or(0, <[u8]>::len) + it.value().map_or(0, <[u8]>::len);
            count += 1;
            it.next();
        }
        it.status().map_err(|e| e.to_string())?;
        Ok((count, bytes))
    }

    fn scan_all(&self, reverse: bool, limit: u64) -> Result<(u64, u64), String> {
        let mut it = self.db.raw_iterator();
        if reverse {
            it.seek_to_last();
        } else {
            it.seek_to_first();
        }
        let (mut count, mut bytes) = (0u64, 0u64);
        while it.valid() && count < limit {
            bytes += (it.key().map_or(0, <[u8]>::len) + it.value().map_or(0, <[u8]>::len)) as u64;
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
        use rocksdb::statistics::Ticker;
        let t = |x| self.opts.get_ticker_count(x);
        let log = std::fs::read_to_string(self.dir.join("LOG")).unwrap_or_default();
        let (merges, moves) = crate::logscan::compactions(&log);
        Metrics {
            table_bytes: t(Ticker::FlushWriteBytes) + t(Ticker::CompactWriteBytes),
            wal_bytes: t(Ticker::WalFileBytes),
            mapped_bytes: 0,
            compactions_per_level: Vec::new(),
            compaction_bytes_per_level: Vec::new(),
            stalls: 0,
            stall_micros: t(Ticker::StallMicros),
            // Integrated BlobDB's compactions count the values they relocate here.
            gc_bytes: t(Ticker::BlobDbGcBytesRelocated),
            merges_by_input_level: merges,
            moved_by_input_level: moves,
            // RocksDB's LOG names moved files, not move operations: each counts as one.
            moves_by_input_level: Vec::new(),
            tables: (0..7)
                .map(|l| {
                    self.db
                        .property_int_value(&format!("rocksdb.num-files-at-level{l}"))
                        .ok()
                        .flatten()
                })
                .sum(),
            compaction_io: Some((t(Ticker::CompactReadBytes), t(Ticker::CompactWriteBytes))),
            table_reads: None,
            table_file_reads: None,
        }
    }

    fn wait_idle(&self) -> Result<(), String> {
        self.db
            .wait_for_compact(&rocksdb::WaitForCompactOptions::default())
            .map_err(|e| e.to_string())
    }

    fn stats_text(&self) -> String {
        self.db
            .property_value("rocksdb.stats")
            .ok()
            .flatten()
            .unwrap_or_default()
    }
}
