//! The options as text: what an `OPTIONS` file holds ([`Options::to_text`]) and what the
//! tools open a database with ([`Options::from_text`]).

use super::*;
use crate::error::{Error, Result};

/// `s` as the variant of `all` whose `Debug` form it is (how `to_text` writes enums), in
/// any case and with or without underscores or dashes between words: `Matrix`, `matrix`;
/// `BlobFiles`, `blob_files`; `TolerateTornTail`, `tolerate-torn-tail` (what the CLI and
/// the Python package pass through).
fn variant<T: std::fmt::Debug + Copy>(s: &str, all: &[T]) -> Option<T> {
    let norm = |t: &str| -> String {
        t.chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect()
    };
    let s = norm(s);
    all.iter().copied().find(|v| norm(&format!("{v:?}")) == s)
}

/// A duration as `Duration`'s `Debug` writes it (`5s`, `250ms`, `1.5s`, `20µs`, `7ns`).
fn parse_duration(s: &str) -> Option<std::time::Duration> {
    let (num, unit) = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|i| s.split_at(i))?;
    let x: f64 = num.parse().ok()?;
    let secs = match unit {
        "s" => x,
        "ms" => x / 1e3,
        "µs" | "us" => x / 1e6,
        "ns" => x / 1e9,
        _ => return None,
    };
    std::time::Duration::try_from_secs_f64(secs).ok()
}

impl Options {
    /// Options from the text of an `OPTIONS` file (what [`Options::to_text`] writes; what
    /// the tools open a database with when the user names no preset). Lines that are empty
    /// or start with `#` are skipped, and so are names this build does not know (a newer
    /// build's options); the file system is the default one. Fields the text does not
    /// name keep `Options::default()`'s values.
    ///
    /// # Errors
    /// `InvalidArgument` naming the line whose value does not parse.
    pub fn from_text(text: &str) -> Result<Options> {
        let mut o = Options::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = || Error::invalid(format!("OPTIONS line {}: cannot read {line:?}", i + 1));
            let (name, value) = line.split_once(" = ").ok_or_else(bad)?;
            let num = |v: &str| v.parse::<u64>().map_err(|_| bad());
            let size = |v: &str| v.parse::<usize>().map_err(|_| bad());
            let num32 = |v: &str| v.parse::<u32>().map_err(|_| bad());
            let float = |v: &str| v.parse::<f64>().map_err(|_| bad());
            let flag = |v: &str| v.parse::<bool>().map_err(|_| bad());
            let opt = |v: &str| (v != "none").then(|| v.to_string());
            let path = |v: &str| opt(v).map(std::path::PathBuf::from);
            let dur = |v: &str| -> Result<Option<std::time::Duration>> {
                opt(v)
                    .map(|d| parse_duration(&d).ok_or_else(bad))
                    .transpose()
            };
            macro_rules! pick {
                ($v:expr, $($variant:expr),+) => {
                    variant($v, &[$($variant),+]).ok_or_else(bad)?
                };
            }
            use CompactionPicker as CP;
            use CompactionPriority as CPr;
            match name {
                "create_if_missing" => o.create_if_missing = flag(value)?,
                "error_if_exists" => o.error_if_exists = flag(value)?,
                "write_buffer_size" => o.write_buffer_size = size(value)?,
                "max_write_buffer_number" => o.max_write_buffer_number = size(value)?,
                "level0_file_num_compaction_trigger" => {
                    o.level0_file_num_compaction_trigger = size(value)?
                }
                "level0_slowdown_writes_trigger" => o.level0_slowdown_writes_trigger = size(value)?,
                "delayed_write_rate" => o.delayed_write_rate = num(value)?,
                "level0_stop_writes_trigger" => o.level0_stop_writes_trigger = size(value)?,
                "write_slowdown" => {
                    o.write_slowdown =
                        pick!(value, WriteSlowdown::Paced, WriteSlowdown::PerExcessRun)
                }
                "num_levels" => o.num_levels = size(value)?,
                "max_bytes_for_level_base" => o.max_bytes_for_level_base = num(value)?,
                "max_bytes_for_level_multiplier" => {
                    o.max_bytes_for_level_multiplier = float(value)?
                }
                "target_file_size_base" => o.target_file_size_base = num(value)?,
                "max_grandparent_overlap_factor" => o.max_grandparent_overlap_factor = num(value)?,
                "compaction_priority" => {
                    o.compaction_priority = pick!(value, CPr::RoundRobin, CPr::MinOverlappingRatio)
                }
                "compaction_picker" => {
                    o.compaction_picker =
                        pick!(value, CP::Leveled, CP::HyperLevelDb, CP::HyperLevelDb10)
                }
                "level_sizing" => {
                    o.level_sizing = pick!(
                        value,
                        LevelSizing::Classic,
                        LevelSizing::HyperLevelDb,
                        LevelSizing::HyperLevelDb10,
                        LevelSizing::Dynamic,
                        LevelSizing::Flattened
                    )
                }
                "table_cut" => {
                    o.table_cut = pick!(
                        value,
                        TableCut::GrandparentOverlap,
                        TableCut::GrandparentBoundaries,
                        TableCut::Size
                    )
                }
                "max_mem_compaction_level" => o.max_mem_compaction_level = size(value)?,
                "read_compaction_bytes" => o.read_compaction_bytes = num(value)?,
                "read_compaction_min_straight_reads" => {
                    o.read_compaction_min_straight_reads = num(value)?
                }
                "idle_compaction_delay" => o.idle_compaction_delay = dur(value)?,
                "read_charging" => {
                    o.read_charging = pick!(
                        value,
                        ReadCharging::InVain,
                        ReadCharging::FirstOfSeveral,
                        ReadCharging::BlockInVain
                    )
                }
                "seek_charging" => {
                    o.seek_charging = pick!(value, SeekCharging::WhileMapped, SeekCharging::Always)
                }
                "block_size" => o.block_size = size(value)?,
                "block_restart_interval" => o.block_restart_interval = size(value)?,
                "bloom_bits_per_key" => o.bloom_bits_per_key = value.parse().map_err(|_| bad())?,
                "compression" => {
                    o.compression = pick!(value, crate::Compression::None, crate::Compression::Lz4)
                }
                "block_cache_size" => o.block_cache_size = size(value)?,
                "max_open_files" => o.max_open_files = size(value)?,
                "table_reads" => {
                    use crate::fs::ReadAccess as R;
                    o.table_reads = match value {
                        "none" => None,
                        v => Some(pick!(
                            v,
                            R::Mapped,
                            R::MappedRandom,
                            R::Positional,
                            R::Growing
                        )),
                    }
                }
                "pin_table_metadata" => o.pin_table_metadata = flag(value)?,
                "memory_limit" => o.memory_limit = opt(value).map(|v| num(&v)).transpose()?,
                "max_background_compactions" => o.max_background_compactions = size(value)?,
                "compaction_yields_to_flush" => o.compaction_yields_to_flush = flag(value)?,
                "separate_flush_thread" => o.separate_flush_thread = flag(value)?,
                "soft_pending_compaction_bytes_limit" => {
                    o.soft_pending_compaction_bytes_limit = num(value)?
                }
                "hard_pending_compaction_bytes_limit" => {
                    o.hard_pending_compaction_bytes_limit = num(value)?
                }
                "write_stall_limit" => o.write_stall_limit = dur(value)?,
                "migrate_l0_layout" => o.migrate_l0_layout = flag(value)?,
                "wal_recovery_mode" => {
                    use crate::WalRecoveryMode as W;
                    o.wal_recovery_mode = pick!(
                        value,
                        W::TolerateTornTail,
                        W::AbsoluteConsistency,
                        W::PointInTime,
                        W::SkipAnyCorrupted
                    )
                }
                "wal_dir" => o.wal_dir = path(value),
                "level_dir" => o.level_dir = path(value),
                "pmem_dir" => o.pmem_dir = path(value),
                "wal_in_pmem" => o.wal_in_pmem = flag(value)?,
                "l0_layout" => {
                    o.l0_layout = pick!(value, L0Layout::Flat, L0Layout::Buckets, L0Layout::Matrix)
                }
                "matrix_container_size" => o.matrix_container_size = num(value)?,
                "matrix_receiver_percent" => o.matrix_receiver_percent = num32(value)?,
                "matrix_column_tables" => o.matrix_column_tables = num32(value)?,
                "matrix_hints" => o.matrix_hints = flag(value)?,
                "matrix_row_bloom_bits" => o.matrix_row_bloom_bits = num32(value)?,
                "l0_buckets" => o.l0_buckets = size(value)?,
                "bucket_compaction_trigger" => o.bucket_compaction_trigger = size(value)?,
                "bucket_compaction_bytes" => o.bucket_compaction_bytes = num(value)?,
                "l0_skips_l1_wait" => o.l0_skips_l1_wait = flag(value)?,
                "bucket_boundaries" => {
                    o.bucket_boundaries = pick!(
                        value,
                        BucketBoundaries::KeyPrefix,
                        BucketBoundaries::Sampled
                    )
                }
                "value_store" => {
                    o.value_store = pick!(
                        value,
                        ValueStoreKind::Inline,
                        ValueStoreKind::BlobFiles,
                        ValueStoreKind::VLog,
                        ValueStoreKind::Hash
                    )
                }
                "min_blob_size" => o.min_blob_size = size(value)?,
                "value_dir" => o.value_dir = path(value),
                "blob_gc_garbage_ratio" => o.blob_gc_garbage_ratio = float(value)?,
                "vlog_segment_size" => o.vlog_segment_size = num(value)?,
                "vlog_capacity" => o.vlog_capacity = opt(value).map(|v| num(&v)).transpose()?,
                "hash_groups" => o.hash_groups = u32::try_from(num(value)?).map_err(|_| bad())?,
                "hash_main_segment_size" => o.hash_main_segment_size = num(value)?,
                "hash_reserve_ratio" => o.hash_reserve_ratio = float(value)?,
                "hash_hot_cold" => o.hash_hot_cold = flag(value)?,
                "hash_cold_gc_ratio" => o.hash_cold_gc_ratio = float(value)?,
                "hash_cold_takes_main" => o.hash_cold_takes_main = flag(value)?,
                "hash_write_time" => o.hash_write_time = flag(value)?,
                "hash_gc_policy" => {
                    o.hash_gc_policy = pick!(
                        value,
                        HashGcPolicy::Greedy,
                        HashGcPolicy::CostBenefit,
                        HashGcPolicy::GreedyRandom,
                        HashGcPolicy::Random
                    )
                }
                "hash_gc_candidates" => {
                    o.hash_gc_candidates = u32::try_from(num(value)?).map_err(|_| bad())?
                }
                "hash_gc_memory" => o.hash_gc_memory = num(value)?,
                "hash_when_full" => {
                    o.hash_when_full = pick!(value, HashWhenFull::Refuse, HashWhenFull::Grow)
                }
                "value_read_ahead" => o.value_read_ahead = size(value)?,
                "memtable_filter_ratio" => o.memtable_filter_ratio = float(value)?,
                "coalesce_item_threshold" => o.coalesce_item_threshold = size(value)?,
                "coalesce_group_size" => o.coalesce_group_size = size(value)?,
                "coalesce_gc_ratio" => o.coalesce_gc_ratio = float(value)?,
                "max_manifest_file_size" => o.max_manifest_file_size = num(value)?,
                _ => {} // a newer build's option
            }
        }
        Ok(o)
    }

    /// The options as the text of an `OPTIONS` file (docs/format/options.md): one
    /// `name = value` line per field, in declaration order; `none` for an unset optional
    /// field. Neither the file system nor `info_log` is recorded. [`Options::from_text`]
    /// reads it back (a later line for a name overrides an earlier one).
    pub fn to_text(&self) -> String {
        // Every field is named here, so a new option cannot be forgotten: the pattern
        // stops compiling.
        let Options {
            create_if_missing,
            error_if_exists,
            write_buffer_size,
            max_write_buffer_number,
            level0_file_num_compaction_trigger,
            level0_slowdown_writes_trigger,
            delayed_write_rate,
            level0_stop_writes_trigger,
            write_slowdown,
            num_levels,
            max_bytes_for_level_base,
            max_bytes_for_level_multiplier,
            target_file_size_base,
            max_grandparent_overlap_factor,
            compaction_priority,
            compaction_picker,
            level_sizing,
            table_cut,
            max_mem_compaction_level,
            read_compaction_bytes,
            read_compaction_min_straight_reads,
            idle_compaction_delay,
            read_charging,
            seek_charging,
            block_size,
            block_restart_interval,
            bloom_bits_per_key,
            compression,
            block_cache_size,
            max_open_files,
            table_reads,
            pin_table_metadata,
            memory_limit,
            max_background_compactions,
            compaction_yields_to_flush,
            separate_flush_thread,
            soft_pending_compaction_bytes_limit,
            hard_pending_compaction_bytes_limit,
            write_stall_limit,
            migrate_l0_layout,
            wal_recovery_mode,
            wal_dir,
            level_dir,
            pmem_dir,
            wal_in_pmem,
            l0_layout,
            l0_buckets,
            bucket_compaction_trigger,
            matrix_container_size,
            matrix_receiver_percent,
            matrix_column_tables,
            matrix_hints,
            matrix_row_bloom_bits,
            bucket_compaction_bytes,
            l0_skips_l1_wait,
            bucket_boundaries,
            value_store,
            min_blob_size,
            value_dir,
            blob_gc_garbage_ratio,
            vlog_segment_size,
            vlog_capacity,
            hash_groups,
            hash_main_segment_size,
            hash_reserve_ratio,
            hash_hot_cold,
            hash_cold_gc_ratio,
            hash_cold_takes_main,
            hash_write_time,
            hash_gc_policy,
            hash_gc_candidates,
            hash_gc_memory,
            hash_when_full,
            value_read_ahead,
            memtable_filter_ratio,
            coalesce_item_threshold,
            coalesce_group_size,
            coalesce_gc_ratio,
            max_manifest_file_size,
            fs: _,
            info_log: _,
        } = self;
        use std::fmt::Write as _;
        let mut out = String::from(
            "# strata options of the most recent open (informational: open never reads this file)\n",
        );
        macro_rules! plain {
            ($($f:ident)*) => {$(
                let _ = writeln!(out, "{} = {:?}", stringify!($f), $f);
            )*};
        }
        macro_rules! optional {
            ($($f:ident)*) => {$(
                match &$f {
                    Some(v) => { let _ = writeln!(out, "{} = {:?}", stringify!($f), v); }
                    None => { let _ = writeln!(out, "{} = none", stringify!($f)); }
                }
            )*};
        }
        macro_rules! path {
            ($($f:ident)*) => {$(
                match &$f {
                    Some(v) => { let _ = writeln!(out, "{} = {}", stringify!($f), v.display()); }
                    None => { let _ = writeln!(out, "{} = none", stringify!($f)); }
                }
            )*};
        }
        plain!(
            create_if_missing error_if_exists write_buffer_size max_write_buffer_number
            level0_file_num_compaction_trigger level0_slowdown_writes_trigger delayed_write_rate
            level0_stop_writes_trigger write_slowdown num_levels max_bytes_for_level_base
            max_bytes_for_level_multiplier target_file_size_base max_grandparent_overlap_factor
            compaction_priority compaction_picker level_sizing table_cut max_mem_compaction_level
            read_compaction_bytes read_compaction_min_straight_reads
        );
        optional!(idle_compaction_delay);
        plain!(
            read_charging seek_charging block_size block_restart_interval bloom_bits_per_key
            compression block_cache_size max_open_files
        );
        optional!(table_reads);
        plain!(pin_table_metadata);
        optional!(memory_limit);
        plain!(
            max_background_compactions compaction_yields_to_flush separate_flush_thread
            soft_pending_compaction_bytes_limit hard_pending_compaction_bytes_limit
        );
        optional!(write_stall_limit);
        plain!(migrate_l0_layout wal_recovery_mode);
        path!(wal_dir level_dir pmem_dir);
        plain!(wal_in_pmem);
        plain!(
            l0_layout l0_buckets bucket_compaction_trigger bucket_compaction_bytes l0_skips_l1_wait
            bucket_boundaries value_store
            min_blob_size
        );
        plain!(matrix_container_size matrix_receiver_percent matrix_column_tables matrix_hints);
        plain!(matrix_row_bloom_bits);
        path!(value_dir);
        plain!(blob_gc_garbage_ratio vlog_segment_size);
        optional!(vlog_capacity);
        plain!(hash_groups hash_main_segment_size hash_reserve_ratio hash_hot_cold hash_cold_gc_ratio hash_cold_takes_main
            hash_write_time hash_gc_policy hash_gc_candidates hash_gc_memory hash_when_full);
        plain!(value_read_ahead memtable_filter_ratio max_manifest_file_size);
        plain!(coalesce_item_threshold coalesce_group_size coalesce_gc_ratio);
        out
    }
}
