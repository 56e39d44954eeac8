//! The options as text: what an `OPTIONS` file holds ([`Options::to_text`]) and what the
//! tools open a database with ([`Options::from_text`]).

use super::*;
use crate::error::{Error, Result};

/// `s` as the variant of `all` whose `Debug` form it is (how `to_text` writes enums), in
/// any case and with or without underscores or dashes between words: `Matrix`, `matrix`;
/// `BlobFiles`, `blob_files`; `TolerateTornTail`, `tolerate-torn-tail`; `HyperLevelDb10`,
/// `hyperleveldb-1.0` (what the CLI, the Python package and the benchmark pass through).
fn variant<T: std::fmt::Debug + Copy>(s: &str, all: &[T]) -> Option<T> {
    let norm = |t: &str| -> String {
        t.chars()
            .filter(|c| !matches!(c, '_' | '-' | '.'))
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

/// A value that does not parse as its option's (the caller names the option or line),
/// with what the option takes.
struct BadValue(String);

type Parsed<T> = std::result::Result<T, BadValue>;

fn whole<T: std::str::FromStr>(v: &str) -> Parsed<T> {
    v.parse()
        .map_err(|_| BadValue("a whole number in range".into()))
}

fn num(v: &str) -> Parsed<u64> {
    whole(v)
}

fn size(v: &str) -> Parsed<usize> {
    whole(v)
}

fn num32(v: &str) -> Parsed<u32> {
    whole(v)
}

fn float(v: &str) -> Parsed<f64> {
    v.parse().map_err(|_| BadValue("a number".into()))
}

/// `true`/`false` as the text writes them, or `1`/`0` as flags give them.
fn flag(v: &str) -> Parsed<bool> {
    match v {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(BadValue("true, false, 1 or 0".into())),
    }
}

/// An optional value: `none` is `None`.
fn opt(v: &str) -> Option<&str> {
    (v != "none").then_some(v)
}

/// A path, or `none`; an empty one is no path.
fn path(v: &str) -> Parsed<Option<std::path::PathBuf>> {
    if v.is_empty() {
        return Err(BadValue("a path, or none".into()));
    }
    Ok(opt(v).map(std::path::PathBuf::from))
}

fn dur(v: &str) -> Parsed<Option<std::time::Duration>> {
    opt(v)
        .map(|d| {
            parse_duration(d)
                .ok_or_else(|| BadValue("a duration such as 5s or 250ms, or none".into()))
        })
        .transpose()
}

/// The variant of `all` that `v` names, else what `all` holds (in snake case).
fn pick<T: std::fmt::Debug + Copy>(v: &str, all: &[T]) -> Parsed<T> {
    variant(v, all).ok_or_else(|| {
        let names: Vec<String> = all.iter().map(|t| snake_case(&format!("{t:?}"))).collect();
        BadValue(format!("one of {}", names.join(", ")))
    })
}

/// `BlobFiles` as `blob_files`.
fn snake_case(s: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in s.chars() {
        if c.is_uppercase() && prev_lower {
            out.push('_');
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        out.extend(c.to_lowercase());
    }
    out
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
            // (`false`: a newer build's option, skipped.)
            o.apply(name, value).map_err(|_| bad())?;
        }
        Ok(o)
    }

    /// Sets the option named `name` (a line's name in [`Options::to_text`], which is the
    /// field's) to `value`, written as that text writes it: numbers, `true`/`false` (or
    /// `1`/`0`), paths, `none` for an unset optional value, durations such as `5s` or
    /// `250ms`, and variant names in any case with or without `_` or `-` between words
    /// (`l0_layout` `matrix`, `value_store` `blob_files`, `read_charging` `in-vain`). The
    /// one parser every tool gives options through: the CLI's and the server's OPTIONS
    /// files, the Python package's keywords, the benchmark's flags.
    ///
    /// # Errors
    /// `InvalidArgument` for a name that is no option or a value that does not parse; the
    /// options are unchanged then.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        // (As a line of the text is read: without the blanks around it.)
        let value = value.trim();
        match self.apply(name, value) {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::invalid(format!("unknown option {name:?}"))),
            Err(BadValue(takes)) => Err(Error::invalid(format!(
                "option {name}: cannot read {value:?} (it takes {takes})"
            ))),
        }
    }

    /// The names [`Options::set`] takes, in the order [`Options::to_text`] writes them.
    pub fn names() -> Vec<String> {
        Options::default()
            .to_text()
            .lines()
            .filter_map(|l| l.split_once(" = ").map(|(n, _)| n.to_string()))
            .collect()
    }

    /// Sets option `name` from `value`: `Ok(false)` for a name this build does not know.
    fn apply(&mut self, name: &str, value: &str) -> Parsed<bool> {
        Ok(self.apply_writes(name, value)?
            || self.apply_compaction(name, value)?
            || self.apply_tables(name, value)?
            || self.apply_l0(name, value)?
            || self.apply_values(name, value)?)
    }

    /// The options of opening, the write path, its stalls, the WAL and the scheduler.
    fn apply_writes(&mut self, name: &str, v: &str) -> Parsed<bool> {
        let o = self;
        match name {
            "create_if_missing" => o.create_if_missing = flag(v)?,
            "error_if_exists" => o.error_if_exists = flag(v)?,
            "write_buffer_size" => o.write_buffer_size = size(v)?,
            "max_write_buffer_number" => o.max_write_buffer_number = size(v)?,
            "level0_file_num_compaction_trigger" => o.level0_file_num_compaction_trigger = size(v)?,
            "level0_slowdown_writes_trigger" => o.level0_slowdown_writes_trigger = size(v)?,
            "delayed_write_rate" => o.delayed_write_rate = num(v)?,
            "level0_stop_writes_trigger" => o.level0_stop_writes_trigger = size(v)?,
            "write_slowdown" => {
                o.write_slowdown = pick(v, &[WriteSlowdown::Paced, WriteSlowdown::PerExcessRun])?
            }
            "max_background_compactions" => o.max_background_compactions = size(v)?,
            "compaction_yields_to_flush" => o.compaction_yields_to_flush = flag(v)?,
            "separate_flush_thread" => o.separate_flush_thread = flag(v)?,
            "soft_pending_compaction_bytes_limit" => {
                o.soft_pending_compaction_bytes_limit = num(v)?
            }
            "hard_pending_compaction_bytes_limit" => {
                o.hard_pending_compaction_bytes_limit = num(v)?
            }
            "write_stall_limit" => o.write_stall_limit = dur(v)?,
            "wal_recovery_mode" => {
                use crate::WalRecoveryMode as W;
                o.wal_recovery_mode = pick(
                    v,
                    &[
                        W::TolerateTornTail,
                        W::AbsoluteConsistency,
                        W::PointInTime,
                        W::SkipAnyCorrupted,
                    ],
                )?
            }
            "wal_dir" => o.wal_dir = path(v)?,
            "wal_in_pmem" => o.wal_in_pmem = flag(v)?,
            "max_manifest_file_size" => o.max_manifest_file_size = num(v)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The levels' shape and what compacts them.
    fn apply_compaction(&mut self, name: &str, v: &str) -> Parsed<bool> {
        use CompactionPicker as CP;
        use CompactionPriority as CPr;
        let o = self;
        match name {
            "num_levels" => o.num_levels = size(v)?,
            "max_bytes_for_level_base" => o.max_bytes_for_level_base = num(v)?,
            "max_bytes_for_level_multiplier" => o.max_bytes_for_level_multiplier = float(v)?,
            "target_file_size_base" => o.target_file_size_base = num(v)?,
            "max_grandparent_overlap_factor" => o.max_grandparent_overlap_factor = num(v)?,
            "compaction_priority" => {
                o.compaction_priority = pick(v, &[CPr::RoundRobin, CPr::MinOverlappingRatio])?
            }
            "compaction_picker" => {
                o.compaction_picker = pick(v, &[CP::Leveled, CP::HyperLevelDb, CP::HyperLevelDb10])?
            }
            "level_sizing" => {
                use LevelSizing as L;
                o.level_sizing = pick(
                    v,
                    &[
                        L::Classic,
                        L::HyperLevelDb,
                        L::HyperLevelDb10,
                        L::Dynamic,
                        L::Flattened,
                    ],
                )?
            }
            "table_cut" => {
                use TableCut as T;
                o.table_cut = pick(
                    v,
                    &[T::GrandparentOverlap, T::GrandparentBoundaries, T::Size],
                )?
            }
            "max_mem_compaction_level" => o.max_mem_compaction_level = size(v)?,
            "read_compaction_bytes" => o.read_compaction_bytes = num(v)?,
            "read_compaction_min_straight_reads" => o.read_compaction_min_straight_reads = num(v)?,
            "idle_compaction_delay" => o.idle_compaction_delay = dur(v)?,
            "read_charging" => {
                use ReadCharging as R;
                o.read_charging = pick(v, &[R::InVain, R::FirstOfSeveral, R::BlockInVain])?
            }
            "seek_charging" => {
                o.seek_charging = pick(v, &[SeekCharging::WhileMapped, SeekCharging::Always])?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Tables, their cache and how they are read.
    fn apply_tables(&mut self, name: &str, v: &str) -> Parsed<bool> {
        let o = self;
        match name {
            "block_size" => o.block_size = size(v)?,
            "block_restart_interval" => o.block_restart_interval = size(v)?,
            "bloom_bits_per_key" => o.bloom_bits_per_key = num32(v)?,
            "compression" => {
                o.compression = pick(v, &[crate::Compression::None, crate::Compression::Lz4])?
            }
            "block_cache_size" => o.block_cache_size = size(v)?,
            "max_open_files" => o.max_open_files = size(v)?,
            "table_reads" => {
                use crate::fs::ReadAccess as R;
                o.table_reads = opt(v)
                    .map(|v| pick(v, &[R::Mapped, R::MappedRandom, R::Positional, R::Growing]))
                    .transpose()?
            }
            "pin_table_metadata" => o.pin_table_metadata = flag(v)?,
            "memory_limit" => o.memory_limit = opt(v).map(num).transpose()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Where L0 and the levels live, and the L0 layouts' tunables.
    fn apply_l0(&mut self, name: &str, v: &str) -> Parsed<bool> {
        let o = self;
        match name {
            "migrate_l0_layout" => o.migrate_l0_layout = flag(v)?,
            "level_dir" => o.level_dir = path(v)?,
            "pmem_dir" => o.pmem_dir = path(v)?,
            "l0_layout" => {
                o.l0_layout = pick(v, &[L0Layout::Flat, L0Layout::Buckets, L0Layout::Matrix])?
            }
            "matrix_container_size" => o.matrix_container_size = num(v)?,
            "matrix_receiver_percent" => o.matrix_receiver_percent = num32(v)?,
            "matrix_column_tables" => o.matrix_column_tables = num32(v)?,
            "matrix_hints" => o.matrix_hints = flag(v)?,
            "matrix_row_bloom_bits" => o.matrix_row_bloom_bits = num32(v)?,
            "l0_buckets" => o.l0_buckets = size(v)?,
            "bucket_compaction_trigger" => o.bucket_compaction_trigger = size(v)?,
            "bucket_compaction_bytes" => o.bucket_compaction_bytes = num(v)?,
            "l0_skips_l1_wait" => o.l0_skips_l1_wait = flag(v)?,
            "bucket_boundaries" => {
                use BucketBoundaries as B;
                o.bucket_boundaries = pick(v, &[B::KeyPrefix, B::Sampled])?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The value store, its tunables and the coalescing of small items.
    fn apply_values(&mut self, name: &str, v: &str) -> Parsed<bool> {
        let o = self;
        match name {
            "value_store" => {
                use ValueStoreKind as K;
                o.value_store = pick(v, &[K::Inline, K::BlobFiles, K::VLog, K::Hash])?
            }
            "min_blob_size" => o.min_blob_size = size(v)?,
            "value_dir" => o.value_dir = path(v)?,
            "blob_gc_garbage_ratio" => o.blob_gc_garbage_ratio = float(v)?,
            "vlog_segment_size" => o.vlog_segment_size = num(v)?,
            "vlog_capacity" => o.vlog_capacity = opt(v).map(num).transpose()?,
            "hash_groups" => o.hash_groups = num32(v)?,
            "hash_main_segment_size" => o.hash_main_segment_size = num(v)?,
            "hash_reserve_ratio" => o.hash_reserve_ratio = float(v)?,
            "hash_hot_cold" => o.hash_hot_cold = flag(v)?,
            "hash_cold_gc_ratio" => o.hash_cold_gc_ratio = float(v)?,
            "hash_cold_takes_main" => o.hash_cold_takes_main = flag(v)?,
            "hash_write_time" => o.hash_write_time = flag(v)?,
            "hash_gc_policy" => {
                use HashGcPolicy as P;
                o.hash_gc_policy =
                    pick(v, &[P::Greedy, P::CostBenefit, P::GreedyRandom, P::Random])?
            }
            "hash_gc_candidates" => o.hash_gc_candidates = num32(v)?,
            "hash_gc_memory" => o.hash_gc_memory = num(v)?,
            "hash_when_full" => {
                o.hash_when_full = pick(v, &[HashWhenFull::Refuse, HashWhenFull::Grow])?
            }
            "value_read_ahead" => o.value_read_ahead = size(v)?,
            "memtable_filter_ratio" => o.memtable_filter_ratio = float(v)?,
            "coalesce_item_threshold" => o.coalesce_item_threshold = size(v)?,
            "coalesce_group_size" => o.coalesce_group_size = size(v)?,
            "coalesce_gc_ratio" => o.coalesce_gc_ratio = float(v)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The options as the text of an `OPTIONS` file (docs/format/options.md): one
    /// `name = value` line per field, in declaration order; `none` for an unset optional
    /// field. Neither the file system, `info_log` nor the compaction filter is recorded. [`Options::from_text`]
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
            compaction_filter: _,
            default_ttl: _,
            clock: _,
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
