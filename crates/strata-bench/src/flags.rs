//! Command-line flags: the `db_bench` subset strata shares (same names, meanings and
//! defaults), plus strata-only flags for presets and their options.
//!
//! Syntax follows gflags: `--name=value`, `--name value`, `--name` (= true for booleans),
//! `--noname` (= false). Booleans accept `1/0/true/false`. Unknown flags are an error.

use std::collections::BTreeMap;

/// Every flag, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Flags {
    /// Comma-separated benchmarks to run in order.
    pub benchmarks: Vec<String>,
    /// Number of keys (and of write ops per thread).
    pub num: u64,
    /// Read ops per thread (-1 = `num`).
    pub reads: i64,
    /// Key size in bytes.
    pub key_size: usize,
    /// Value size in bytes (when `value_size_dist` is fixed).
    pub value_size: usize,
    /// Concurrent threads per benchmark.
    pub threads: usize,
    /// Database directory (default: a new temporary directory, removed at exit).
    pub db: Option<String>,
    /// Reuse the database at `--db` instead of starting empty.
    pub use_existing_db: bool,
    /// Memtable size in bytes.
    pub write_buffer_size: Option<usize>,
    /// Table size target in bytes.
    pub target_file_size_base: Option<u64>,
    /// L1 size target in bytes.
    pub max_bytes_for_level_base: Option<u64>,
    /// Bloom bits per key (db_bench default -1 = none; we keep the engine default unless set).
    pub bloom_bits: Option<i64>,
    /// Block cache bytes.
    pub cache_size: Option<i64>,
    /// `none`, `lz4` (others are refused).
    pub compression_type: String,
    /// Sync every write.
    pub sync: bool,
    /// Skip the WAL.
    pub disable_wal: bool,
    /// Print latency histograms.
    pub histogram: bool,
    /// Random seed (0 = fixed default).
    pub seed: u64,
    /// Seconds per timeline interval (0 = no timeline).
    pub report_interval_seconds: f64,
    /// Ops per write batch.
    pub batch_size: usize,
    /// Keys read after each seek in seekrandom.
    pub seek_nexts: usize,
    /// Bytes/sec cap for the writer of readwhilewriting (0 = unlimited).
    pub benchmark_write_rate_limit: u64,
    /// Number of levels.
    pub num_levels: Option<usize>,
    /// L0 triggers.
    pub level0_file_num_compaction_trigger: Option<usize>,
    /// L0 slowdown trigger.
    pub level0_slowdown_writes_trigger: Option<usize>,
    /// L0 stop trigger.
    pub level0_stop_writes_trigger: Option<usize>,
    /// Level size multiplier.
    pub max_bytes_for_level_multiplier: Option<f64>,
    /// RocksDB's dynamic level sizing (db_bench's flag); unset keeps each engine's default.
    /// strata and LevelDB size levels statically, so only `0` applies to them.
    pub level_compaction_dynamic_level_bytes: Option<bool>,
    /// Memtables allowed.
    pub max_write_buffer_number: Option<usize>,
    /// Max open files.
    pub open_files: Option<usize>,
    /// Block size.
    pub block_size: Option<usize>,
    // --- strata-only ---
    /// Which engine runs the workload: strata, rocksdb, leveldb.
    pub engine: String,
    /// Named preset (strata only).
    pub preset: String,
    /// WAL directory.
    pub wal_dir: Option<String>,
    /// Directory for levels >= 1 (strata only).
    pub level_dir: Option<String>,
    /// Persistent-memory directory: L0 tables of `rocksdb-l0-nvm`, the matrix region of
    /// `matrixkv` (strata only).
    pub pmem_dir: Option<String>,
    /// `DIR:MBps[:latency_us],...`: a device per directory (strata only; see `device.rs`).
    pub device_model: Option<String>,
    /// strata options given by name (`--l0_layout=matrix`, `--hash_gc_policy=random`: any
    /// name of `strata::Options::names`), in the order given, each value as the engine's
    /// parser reads it (`strata::Options::set`); applied over the preset (strata only).
    pub options: Vec<(String, String)>,
    /// Values in blob files (strata: `ValueStoreKind::BlobFiles`; RocksDB: its integrated
    /// BlobDB). Default: the preset's (strata), off (RocksDB).
    pub enable_blob_files: Option<bool>,
    /// Smallest value kept in a blob file (default: strata's preset, RocksDB's 0).
    pub min_blob_size: Option<u64>,
    /// Directory for value-store files (strata only).
    pub value_dir: Option<String>,
    /// uniform, zipfian, latest, sequential.
    pub key_dist: String,
    /// Zipfian constant.
    pub zipf_theta: f64,
    /// fixed, uniform:MIN:MAX, zipf:MIN:MAX.
    pub value_size_dist: String,
    /// Operations of each YCSB workload and updates per HashKV phase (default: num; the
    /// number of records loaded is always `num`).
    pub ycsb_ops: Option<u64>,
    /// Requests per second of each ycsb_* workload over all threads (0: as fast as they
    /// go). A request's latency runs from its scheduled time, so a stall's queue counts.
    pub ycsb_rate: f64,
    /// Update phases of hashkv_phases.
    pub phases: usize,
    /// expiryfill: how long half the entries live (seconds), and how they go: `ttl`
    /// (written with a time to live) or `delete` (deleted that long after their write).
    pub ttl_seconds: f64,
    /// expiryfill: how long to go on sampling the space at rest once the last entry is
    /// gone, before the full compaction (seconds).
    pub rest_seconds: f64,
    /// (deleterange: `range`, one range deletion per run of keys, the default, or
    /// `delete`, one delete per key.)
    pub reclaim: String,
    /// deleterange: keys per run deleted.
    pub range_keys: u64,
    /// CSV timeline file (with --report_interval_seconds).
    pub report_file: Option<String>,
    /// PNG chart of the timeline.
    pub plot: Option<String>,
    /// JSON results file.
    pub json: Option<String>,
    /// Progress display: auto (bar on a terminal), bar, plain, none.
    pub progress: String,
    /// How often the host's steal time is sampled, in milliseconds (0: not sampled).
    pub steal_sample_ms: u64,
}

impl Default for Flags {
    fn default() -> Self {
        Flags {
            benchmarks: DEFAULT_SUITE.split(',').map(str::to_string).collect(),
            num: 1_000_000,
            reads: -1,
            key_size: 16,
            value_size: 100,
            threads: 1,
            db: None,
            use_existing_db: false,
            write_buffer_size: None,
            target_file_size_base: None,
            max_bytes_for_level_base: None,
            bloom_bits: None,
            cache_size: None,
            compression_type: "none".into(),
            sync: false,
            disable_wal: false,
            histogram: false,
            seed: 0,
            report_interval_seconds: 0.0,
            steal_sample_ms: 20,
            batch_size: 1,
            seek_nexts: 10,
            benchmark_write_rate_limit: 0,
            num_levels: None,
            level0_file_num_compaction_trigger: None,
            level0_slowdown_writes_trigger: None,
            level0_stop_writes_trigger: None,
            max_bytes_for_level_multiplier: None,
            level_compaction_dynamic_level_bytes: None,
            max_write_buffer_number: None,
            open_files: None,
            block_size: None,
            engine: "strata".into(),
            preset: "default".into(),
            wal_dir: None,
            level_dir: None,
            pmem_dir: None,
            device_model: None,
            options: Vec::new(),
            enable_blob_files: None,
            min_blob_size: None,
            value_dir: None,
            key_dist: "uniform".into(),
            zipf_theta: 0.99,
            value_size_dist: "fixed".into(),
            ycsb_ops: None,
            ycsb_rate: 0.0,
            phases: 3,
            ttl_seconds: 2.0,
            rest_seconds: 0.0,
            reclaim: "ttl".into(),
            range_keys: 1000,
            report_file: None,
            plot: None,
            json: None,
            progress: "auto".into(),
        }
    }
}

/// The suite run with no flags: about a minute on a 2-core machine.
pub const DEFAULT_SUITE: &str = "fillseq,fillrandom,overwrite,readrandom,readseq,readreverse,seekrandom,readwhilewriting,deleterandom,stats";

/// Every benchmark name understood.
pub const BENCHMARKS: &[&str] = &[
    "fillseq",
    "fillrandom",
    "overwrite",
    "updaterandom",
    "readrandom",
    "readseq",
    "readreverse",
    "seekrandom",
    "readwhilewriting",
    "deleterandom",
    "waitforcompaction",
    "stats",
    "ycsb_a",
    "ycsb_b",
    "ycsb_c",
    "ycsb_d",
    "ycsb_e",
    "ycsb_f",
    "hashkv_phases",
    "expiryfill",
    "deleterange",
    "compact",
    "checkpoint",
    "backup",
    "backupagain",
    "restore",
];

fn parse_bool(name: &str, v: &str) -> Result<bool, String> {
    match v {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(format!(
            "--{name}: expected a boolean (1/0/true/false), got {v:?}"
        )),
    }
}

fn num<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("--{name}: expected a number, got {v:?}"))
}

const BOOL_FLAGS: &[&str] = &[
    "use_existing_db",
    "sync",
    "disable_wal",
    "histogram",
    "level_compaction_dynamic_level_bytes",
    "enable_blob_files",
];

/// Whether `--name` alone means `--name=1`: the bench's booleans and strata's.
fn is_bool(name: &str) -> bool {
    BOOL_FLAGS.contains(&name)
        || strata::Options::default()
            .to_text()
            .lines()
            .filter_map(|l| l.split_once(" = "))
            .any(|(n, v)| n == name && (v == "true" || v == "false"))
}

/// Spellings of strata option values the bench took before it gave options to the
/// engine's parser, as that parser writes them: kept so that recorded commands still run.
fn bench_spelling(name: &str, v: &str) -> Result<String, String> {
    Ok(match (name, v) {
        ("table_reads", "auto") => "none".into(),
        ("table_reads", "pread") => "positional".into(),
        ("compaction_priority", "min-overlap") => "min_overlapping_ratio".into(),
        ("bucket_boundaries", "prefix") => "key_prefix".into(),
        // gflags' booleans.
        (n, "yes") if is_bool(n) => "true".into(),
        (n, "no") if is_bool(n) => "false".into(),
        // Seconds, 0 = off.
        ("idle_compaction_delay", s) if s.parse::<f64>().is_ok() => {
            let secs: f64 = s.parse().expect("checked");
            if !(secs >= 0.0 && secs.is_finite()) {
                return Err(format!(
                    "--idle_compaction_delay: expected seconds >= 0, got {secs}"
                ));
            }
            if secs == 0.0 {
                "none".into()
            } else {
                format!("{secs}s")
            }
        }
        _ => v.to_string(),
    })
}

/// `--name=v` as a strata option, checked by the engine's parser.
fn strata_option(name: &str, v: &str) -> Result<(String, String), String> {
    if name == "compaction_filter" {
        // Code, not an option's text: `engine::strata_options` makes it.
        return Ok((name.to_string(), v.to_string()));
    }
    let v = bench_spelling(name, v)?;
    match strata::Options::default().set(name, &v) {
        Ok(()) => Ok((name.to_string(), v)),
        Err(_) if !strata::Options::names().iter().any(|n| n == name) => {
            Err(format!("unknown flag --{name} (see --help)"))
        }
        Err(e) => Err(format!(
            "--{}",
            e.message().strip_prefix("option ").unwrap_or(e.message())
        )),
    }
}

impl Flags {
    /// Parses arguments (without the program name).
    ///
    /// # Errors
    /// A message naming the bad flag.
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Flags, String> {
        let mut pairs: BTreeMap<usize, (String, String)> = BTreeMap::new();
        let args: Vec<String> = args.into_iter().collect();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            let Some(body) = a
                .strip_prefix("--")
                .or_else(|| a.strip_prefix('-').filter(|b| !b.is_empty()))
            else {
                return Err(format!(
                    "unexpected argument {a:?} (flags look like --name=value)"
                ));
            };
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n.to_string(), v.to_string()),
                None if is_bool(body) => (body.to_string(), "1".to_string()),
                None if body.starts_with("no") && is_bool(&body[2..]) => {
                    (body[2..].to_string(), "0".to_string())
                }
                None if body == "help" => ("help".to_string(), String::new()),
                None => {
                    i += 1;
                    let v = args
                        .get(i)
                        .ok_or_else(|| format!("--{body} needs a value"))?;
                    (body.to_string(), v.clone())
                }
            };
            pairs.insert(i, (name, value));
            i += 1;
        }
        let mut f = Flags::default();
        for (name, v) in pairs.into_values() {
            let v = v.as_str();
            match name.as_str() {
                "help" => return Err(usage()),
                "benchmarks" => {
                    f.benchmarks = v
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect()
                }
                "num" => f.num = num(&name, v)?,
                "reads" => f.reads = num(&name, v)?,
                "key_size" => f.key_size = num(&name, v)?,
                "value_size" => f.value_size = num(&name, v)?,
                "threads" => f.threads = num(&name, v)?,
                "db" => f.db = Some(v.to_string()),
                "use_existing_db" => f.use_existing_db = parse_bool(&name, v)?,
                "write_buffer_size" => f.write_buffer_size = Some(num(&name, v)?),
                "target_file_size_base" => f.target_file_size_base = Some(num(&name, v)?),
                "max_bytes_for_level_base" => f.max_bytes_for_level_base = Some(num(&name, v)?),
                "bloom_bits" => f.bloom_bits = Some(num(&name, v)?),
                "cache_size" => f.cache_size = Some(num(&name, v)?),
                "compression_type" => f.compression_type = v.to_string(),
                "sync" => f.sync = parse_bool(&name, v)?,
                "disable_wal" => f.disable_wal = parse_bool(&name, v)?,
                "histogram" => f.histogram = parse_bool(&name, v)?,
                "seed" => f.seed = num(&name, v)?,
                "report_interval_seconds" => f.report_interval_seconds = num(&name, v)?,
                "steal_sample_ms" => f.steal_sample_ms = num(&name, v)?,
                "batch_size" => f.batch_size = num(&name, v)?,
                "seek_nexts" => f.seek_nexts = num(&name, v)?,
                "benchmark_write_rate_limit" => f.benchmark_write_rate_limit = num(&name, v)?,
                "num_levels" => f.num_levels = Some(num(&name, v)?),
                "level0_file_num_compaction_trigger" => {
                    f.level0_file_num_compaction_trigger = Some(num(&name, v)?)
                }
                "level0_slowdown_writes_trigger" => {
                    f.level0_slowdown_writes_trigger = Some(num(&name, v)?)
                }
                "level0_stop_writes_trigger" => f.level0_stop_writes_trigger = Some(num(&name, v)?),
                "max_bytes_for_level_multiplier" => {
                    f.max_bytes_for_level_multiplier = Some(num(&name, v)?)
                }
                "level_compaction_dynamic_level_bytes" => {
                    f.level_compaction_dynamic_level_bytes = Some(parse_bool(&name, v)?)
                }
                "max_write_buffer_number" => f.max_write_buffer_number = Some(num(&name, v)?),
                "open_files" => f.open_files = Some(num(&name, v)?),
                "block_size" => f.block_size = Some(num(&name, v)?),
                "engine" => f.engine = v.to_string(),
                "preset" => f.preset = v.to_string(),
                "wal_dir" => f.wal_dir = Some(v.to_string()),
                "level_dir" => f.level_dir = Some(v.to_string()),
                "pmem_dir" => f.pmem_dir = Some(v.to_string()),
                "value_dir" => f.value_dir = Some(v.to_string()),
                "enable_blob_files" => f.enable_blob_files = Some(parse_bool(&name, v)?),
                "min_blob_size" => f.min_blob_size = Some(num(&name, v)?),
                "device_model" => f.device_model = Some(v.to_string()),
                "key_dist" => f.key_dist = v.to_string(),
                "zipf_theta" => f.zipf_theta = num(&name, v)?,
                "value_size_dist" => f.value_size_dist = v.to_string(),
                "ycsb_ops" => f.ycsb_ops = Some(num(&name, v)?),
                "ycsb_rate" => {
                    f.ycsb_rate = num(&name, v)?;
                    // 0 (unpaced) or a rate whose gaps stay within `Duration`'s range.
                    if !(f.ycsb_rate == 0.0 || (f.ycsb_rate.is_finite() && f.ycsb_rate >= 0.01)) {
                        return Err(format!(
                            "--ycsb_rate: expected requests per second, 0 or >= 0.01, got {v:?}"
                        ));
                    }
                }
                "phases" => f.phases = num(&name, v)?,
                "ttl_seconds" => {
                    f.ttl_seconds = num(&name, v)?;
                    if std::time::Duration::try_from_secs_f64(f.ttl_seconds).is_err() {
                        return Err(format!(
                            "--ttl_seconds: expected seconds, 0 or more, got {v:?}"
                        ));
                    }
                }
                "rest_seconds" => {
                    f.rest_seconds = num(&name, v)?;
                    if std::time::Duration::try_from_secs_f64(f.rest_seconds).is_err() {
                        return Err(format!(
                            "--rest_seconds: expected seconds, 0 or more, got {v:?}"
                        ));
                    }
                }
                "reclaim" => match v {
                    "ttl" | "delete" | "range" => f.reclaim = v.to_string(),
                    _ => return Err(format!("--reclaim: ttl, range or delete, got {v:?}")),
                },
                "range_keys" => {
                    f.range_keys = num(&name, v)?;
                    if f.range_keys == 0 {
                        return Err("--range_keys: at least 1".into());
                    }
                }
                "report_file" => f.report_file = Some(v.to_string()),
                "plot" => f.plot = Some(v.to_string()),
                "json" => f.json = Some(v.to_string()),
                "progress" => f.progress = v.to_string(),
                other => f.options.push(strata_option(other, v)?),
            }
        }
        f.validate()?;
        Ok(f)
    }

    fn validate(&self) -> Result<(), String> {
        for b in &self.benchmarks {
            if !BENCHMARKS.contains(&b.as_str()) {
                return Err(format!(
                    "unknown benchmark {b:?}; known: {}",
                    BENCHMARKS.join(",")
                ));
            }
        }
        if self.threads == 0 {
            return Err("--threads must be at least 1".into());
        }
        if self.num == 0 {
            return Err("--num must be at least 1".into());
        }
        if self.batch_size == 0 {
            return Err("--batch_size must be at least 1".into());
        }
        if !["uniform", "zipfian", "latest", "sequential"].contains(&self.key_dist.as_str()) {
            return Err(format!(
                "--key_dist: expected uniform|zipfian|latest|sequential, got {:?}",
                self.key_dist
            ));
        }
        if !(0.0..10.0).contains(&self.zipf_theta) || self.zipf_theta == 1.0 {
            return Err("--zipf_theta must be in [0, 10) and not 1".into());
        }
        crate::keys::ValueSizes::parse(&self.value_size_dist, self.value_size)?;
        if !["none", "lz4"].contains(&self.compression_type.as_str()) {
            return Err(format!(
                "--compression_type: strata-bench supports none and lz4, got {:?}",
                self.compression_type
            ));
        }
        if !["strata", "rocksdb", "leveldb"].contains(&self.engine.as_str()) {
            return Err(format!(
                "--engine: expected strata|rocksdb|leveldb, got {:?}",
                self.engine
            ));
        }
        if !["auto", "bar", "plain", "none"].contains(&self.progress.as_str()) {
            return Err(format!(
                "--progress: expected auto|bar|plain|none, got {:?}",
                self.progress
            ));
        }
        if self.plot.is_some() && self.report_interval_seconds <= 0.0 {
            return Err("--plot needs --report_interval_seconds > 0".into());
        }
        Ok(())
    }

    /// Read ops per thread.
    pub fn reads(&self) -> u64 {
        if self.reads < 0 {
            self.num
        } else {
            self.reads as u64
        }
    }
}

/// The --help text.
pub fn usage() -> String {
    format!(
        "strata-bench: a db_bench-compatible benchmark for strata (and RocksDB/LevelDB peers)

usage: strata-bench [--flag=value ...]

db_bench flags (same meaning and defaults):
  --benchmarks=LIST      comma-separated, run in order (default: {DEFAULT_SUITE})
  --num=N                keys; write ops per thread (default 1000000)
  --reads=N              read ops per thread (default -1 = num)
  --key_size=N --value_size=N          (default 16 / 100)
  --threads=N            (default 1)
  --db=DIR               (default: a temporary directory, removed at exit)
  --use_existing_db=0|1  --sync=0|1  --disable_wal=0|1  --histogram=0|1
  --write_buffer_size --target_file_size_base --max_bytes_for_level_base
  --max_bytes_for_level_multiplier --num_levels --max_write_buffer_number
  --level_compaction_dynamic_level_bytes=0|1 (RocksDB only; strata and LevelDB are static)
  --level0_file_num_compaction_trigger --level0_slowdown_writes_trigger
  --level0_stop_writes_trigger --delayed_write_rate --max_background_compactions --open_files
  --block_size --bloom_bits --cache_size --compression_type=none|lz4
  --batch_size=N --seek_nexts=N --seed=N --benchmark_write_rate_limit=BYTES/S
  --report_interval_seconds=S

strata-only flags:
  --engine=strata|rocksdb|leveldb   (peers need the cargo features rocksdb / leveldb)
  --NAME=VALUE           any strata option by its name (the names of an OPTIONS file,
                         docs/format/options.md), over the preset: numbers, 0|1 or true|false,
                         none, durations (5s, 250ms), variant names (--value_store=hash,
                         --wal_recovery_mode=point-in-time, --write_slowdown=per-excess-run);
                         among them:
  --preset=NAME          default, leveldb, hyperleveldb, hyperleveldb-1.0, hyperleveldb-1.1, rocksdb, ohdb-l0p,
                         ohdb-2dc, ohdb-c, blob, wisckey, hashkv, hashkv-wt, rocksdb-l0-nvm, matrixkv,
                         matrixkv-bloom, matrixkv-idle, cleveldb, cleveldb-inline (ohdb-2dc and
                         ohdb-c need --level_dir; rocksdb-l0-nvm and the matrixkv presets
                         --pmem_dir)
  --separate_flush_thread=0|1 --compaction_priority=round-robin|min-overlap
  --level_sizing=classic|dynamic|flattened|hyperleveldb|hyperleveldb-1.0 (default: the preset's)
  --wal_dir=DIR --level_dir=DIR --value_dir=DIR --pmem_dir=DIR (a tmpfs such as /dev/shm emulates persistent memory)
  --wal_in_pmem=0|1 (WALs in pmem_dir; the matrixkv presets' default; a --wal_dir turns it off unless given)
  --enable_blob_files=0|1 --min_blob_size=N  values in blob files (RocksDB too: its BlobDB)
  --vlog_segment_size=BYTES --vlog_capacity=BYTES --blob_gc_garbage_ratio=F  (presets blob, wisckey)
  --hash_groups=N --hash_main_segment_size=BYTES --hash_reserve_ratio=F --hash_hot_cold=0|1 --hash_cold_gc_ratio=F --hash_cold_takes_main=0|1
  --hash_write_time=0|1                  (1: values taken as written, before the WAL; preset hashkv-wt)
  --hash_gc_policy=greedy|cost-benefit|greedy-random|random --hash_gc_candidates=N  (preset hashkv)
  --hash_gc_memory=BYTES                 (preset hashkv: a group step's files in memory at once)
  --hash_when_full=refuse|grow           (preset hashkv; refuse: a full store fails new values)
  --value_read_ahead=N  separated values a forward scan reads ahead (0: off)
  --compaction_filter=none|keep|keep-read  a filter keeping every entry (keep-read: after
                         reading its value): what a compaction filter costs
  --memtable_filter_ratio=F  memtable key filter, a fraction of the write buffer (0: off)
  --l0_layout=flat|buckets|matrix (default: the preset's)
  --matrix_container_size=BYTES --matrix_receiver_percent=N --matrix_column_tables=N --matrix_hints=0|1
                         (preset matrixkv: the container in --pmem_dir, its receiver share, a
                          column's size in tables, cross-row hint search)
  --matrix_row_bloom_bits=N  a Bloom filter per RowTable, N bits per key (0: none, the paper's;
                         preset matrixkv-bloom: 10)
  --coalesce_item_threshold=BYTES  puts of key + value under BYTES go to each memtable's
                         coalescing buffer instead of its skiplist (0: off; default: the preset's)
  --table_reads=auto|mapped|mapped-random|pread --pin_table_metadata=0|1 (default: the preset's)
  --memory_limit=BYTES   memory strata may count on (default: the cgroup's limit or the RAM)
  --idle_compaction_delay=SECONDS  without writes before idle compaction, 0 = off (default: the preset's)
  --read_charging=in-vain|first-of-several|block-in-vain --read_compaction_bytes=N (0 = off)
  --seek_charging=while-mapped|always  when seeks charge tables (default: the preset's)
  --max_mem_compaction_level=N  deepest level a flush may place a table in (default: the preset's)
  --l0_buckets=N --bucket_compaction_trigger=N --bucket_boundaries=prefix|sampled
  --bucket_compaction_bytes=N  a bucket also compacts at N bytes (0: tables only)
  --l0_skips_l1_wait=0|1  buckets merge into L1 without waiting for it to drain (not OHDB's)
  --device_model=DIR:MBps[:latency_us],...  each DIR on a modelled device of its own
  --steal_sample_ms=N    sample the host's steal time (/proc/stat) every N ms and print it
                         with each result and slow op (default 20; 0: off)
  --key_dist=uniform|zipfian|latest|sequential  --zipf_theta=F (default 0.99)
  --value_size_dist=fixed|uniform:MIN:MAX|zipf:MIN:MAX|mix:SMALL:LARGE:SMALL_PCT (mix: a key's size by its hash)
  --ycsb_ops=N (ops per ycsb_* workload / updates per hashkv phase; default num; records = num)
  --ycsb_rate=N  requests/s of each ycsb_* workload, all threads (default 0: unpaced; else >= 0.01); a
      request's latency runs from its scheduled time (a stall's queue counts)
  --phases=N (hashkv_phases update rounds, default 3)
  --ttl_seconds=S --reclaim=ttl|delete  expiryfill: num unique keys, every other one gone S
      seconds after its write (default 2), by a time to live (strata only) or by a delete;
      samples the space used every --report_interval_seconds (default 1) until S after the
      last write (and --rest_seconds=R more, default 0), then compacts everything
  --range_keys=K --reclaim=range|delete  deleterange: over the num keys fillseq wrote, deletes
      every other run of K keys (default 1000): one range deletion per run (range, the
      default) or one delete per key (delete); prints the space before and after.
      compact: compacts the whole key range once (db_bench's), then prints the space
  checkpoint, backup, backupagain, restore: one call each, timed (its latency is the call's
      time), into DB.copies/ beside the database: a checkpoint (removed after); a backup
      into DB.copies/backups; backupagain overwrites a tenth of the keys at random (not
      timed), then backs up again; restore restores the newest backup (removed after).
      Each prints the bytes it wrote (a checkpoint: of them, linked to the database's)
  --report_file=F.csv --plot=F.png --json=F.json --progress=auto|bar|plain|none

benchmarks: {}",
        BENCHMARKS.join(",")
    )
}
