//! The options' own field checks ([`Options::validate`], in `registry.rs`, runs them, then
//! each technique's).

use super::*;
use crate::error::{Error, Result};

impl Options {
    /// Checks every field but those a technique's own checks cover (`Options::validate`,
    /// in `registry.rs`, runs both).
    ///
    /// # Errors
    /// `InvalidArgument` naming the first bad field.
    pub(crate) fn validate_fields(&self) -> Result<()> {
        let bad = |field: &str, why: &str| Err(Error::invalid(format!("Options::{field}: {why}")));
        if self.write_buffer_size < 64 * KIB || self.write_buffer_size > (4 << 30) {
            return bad("write_buffer_size", "must be between 64 KiB and 4 GiB");
        }
        if !(2..=64).contains(&self.max_write_buffer_number) {
            return bad("max_write_buffer_number", "must be between 2 and 64");
        }
        if self.level0_file_num_compaction_trigger == 0 {
            return bad("level0_file_num_compaction_trigger", "must be at least 1");
        }
        if self.level0_slowdown_writes_trigger < self.level0_file_num_compaction_trigger {
            return bad(
                "level0_slowdown_writes_trigger",
                "must be >= level0_file_num_compaction_trigger",
            );
        }
        if self.level0_stop_writes_trigger < self.level0_slowdown_writes_trigger {
            return bad(
                "level0_stop_writes_trigger",
                "must be >= level0_slowdown_writes_trigger",
            );
        }
        for (field, dir) in [
            ("wal_dir", &self.wal_dir),
            ("level_dir", &self.level_dir),
            ("pmem_dir", &self.pmem_dir),
            ("value_dir", &self.value_dir),
        ] {
            if dir.as_ref().is_some_and(|d| d.as_os_str().is_empty()) {
                // An empty path names the current directory of whoever opens next: files
                // written there would not be found from another one.
                return bad(field, "is empty: give a directory, or None");
            }
        }
        if self.wal_in_pmem && self.wal_dir.is_some() {
            return bad(
                "wal_in_pmem",
                "puts WALs in pmem_dir, and wal_dir names another directory: set one of them",
            );
        }
        if self.table_reads == Some(crate::fs::ReadAccess::Growing) {
            return bad(
                "table_reads",
                "Growing is for files still being written; tables are complete when read",
            );
        }
        if !(0.0..=0.25).contains(&self.memtable_filter_ratio) {
            return bad("memtable_filter_ratio", "must be in [0, 0.25]");
        }
        if self.coalesce_item_threshold > 64 * KIB {
            return bad("coalesce_item_threshold", "must be at most 64 KiB");
        }
        if !(self.blob_gc_garbage_ratio > 0.0 && self.blob_gc_garbage_ratio <= 1.0) {
            return bad("blob_gc_garbage_ratio", "must be in (0, 1]");
        }
        if !(2..=16).contains(&self.num_levels) {
            return bad("num_levels", "must be between 2 and 16");
        }
        if self.max_bytes_for_level_base < 64 * KIB as u64 {
            return bad("max_bytes_for_level_base", "must be at least 64 KiB");
        }
        if !(self.max_bytes_for_level_multiplier >= 2.0
            && self.max_bytes_for_level_multiplier <= 1000.0)
        {
            return bad(
                "max_bytes_for_level_multiplier",
                "must be between 2 and 1000",
            );
        }
        if self.target_file_size_base < 16 * KIB as u64 {
            return bad("target_file_size_base", "must be at least 16 KiB");
        }
        if self.max_grandparent_overlap_factor == 0 {
            return bad("max_grandparent_overlap_factor", "must be at least 1");
        }
        if !(256..=64 * MIB).contains(&self.block_size) {
            return bad("block_size", "must be between 256 bytes and 64 MiB");
        }
        if !(1..=1024).contains(&self.block_restart_interval) {
            return bad("block_restart_interval", "must be between 1 and 1024");
        }
        if self.bloom_bits_per_key > 64 {
            return bad("bloom_bits_per_key", "must be at most 64");
        }
        if self.max_open_files < 16 {
            return bad("max_open_files", "must be at least 16");
        }
        if !(1..=16).contains(&self.max_background_compactions) {
            return bad("max_background_compactions", "must be between 1 and 16");
        }
        if self.idle_compaction_delay.is_some_and(|d| d.is_zero()) {
            return bad(
                "idle_compaction_delay",
                "must be more than zero (None turns idle compaction off)",
            );
        }
        if self.memory_limit == Some(0) {
            return bad("memory_limit", "must be more than zero (None: detected)");
        }
        if self.soft_pending_compaction_bytes_limit > self.hard_pending_compaction_bytes_limit {
            return bad(
                "soft_pending_compaction_bytes_limit",
                "must be <= hard_pending_compaction_bytes_limit",
            );
        }
        if self.hard_pending_compaction_bytes_limit == 0 {
            return bad(
                "hard_pending_compaction_bytes_limit",
                "must be more than zero (0 would stop every write with nothing to compact)",
            );
        }
        if self.write_stall_limit.is_some_and(|d| d.is_zero()) {
            return bad(
                "write_stall_limit",
                "must be more than zero (None waits as long as it takes)",
            );
        }
        if self.default_ttl.is_some_and(|d| d.is_zero()) {
            return bad(
                "default_ttl",
                "must be more than zero (zero would make every put unreadable; None: no expiry)",
            );
        }
        if !(1..=1024).contains(&self.l0_buckets) {
            return bad("l0_buckets", "must be between 1 and 1024");
        }
        if self.bucket_compaction_trigger == 0 {
            return bad("bucket_compaction_trigger", "must be at least 1");
        }
        if self.max_mem_compaction_level >= self.num_levels {
            return bad(
                "max_mem_compaction_level",
                "must be below num_levels (0 keeps flushed tables in L0)",
            );
        }
        if self.level_sizing == LevelSizing::Dynamic
            && self.compaction_picker != CompactionPicker::Leveled
        {
            return bad(
                "level_sizing",
                "Dynamic needs compaction_picker Leveled (HyperLevelDB's picker sizes by table counts)",
            );
        }
        if self.max_manifest_file_size < 64 * KIB as u64 {
            return bad("max_manifest_file_size", "must be at least 64 KiB");
        }
        Ok(())
    }
}
