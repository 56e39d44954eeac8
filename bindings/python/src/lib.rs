//! strata from Python: `strata.DB` in plyvel's spirit. Keys and values are `bytes`; errors
//! are `strata.Error` subclasses carrying strata's message; the GIL is released while
//! strata reads, writes or waits.

use std::borrow::Cow;
use std::sync::{Arc, RwLock};

use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

pyo3::create_exception!(
    strata,
    Error,
    pyo3::exceptions::PyException,
    "A strata error."
);
pyo3::create_exception!(
    strata,
    CorruptionError,
    Error,
    "Bytes on disk failed a checksum or could not be decoded."
);
pyo3::create_exception!(
    strata,
    InvalidArgumentError,
    Error,
    "strata refused an argument or option."
);
pyo3::create_exception!(
    strata,
    NotSupportedError,
    Error,
    "Not supported by this build or this database's format."
);
pyo3::create_exception!(strata, ClosedError, Error, "The database is closed.");
pyo3::create_exception!(
    strata,
    PoisonedError,
    Error,
    "A background job failed earlier; writes are refused."
);
pyo3::create_exception!(
    strata,
    BusyError,
    Error,
    "Another process (or DB object) holds the database."
);

/// `strata.IOError`: a `strata.Error` that is also an `OSError` (as Python's own I/O
/// errors are), made at import with both bases (pyo3's exception macro takes one).
static IO_ERROR: pyo3::sync::GILOnceCell<Py<pyo3::types::PyType>> = pyo3::sync::GILOnceCell::new();

fn err(e: strata::Error) -> PyErr {
    use strata::ErrorKind as K;
    let msg = e.to_string();
    match e.kind() {
        K::Corruption => CorruptionError::new_err(msg),
        K::InvalidArgument => InvalidArgumentError::new_err(msg),
        K::Io => Python::with_gil(|py| match IO_ERROR.get(py) {
            Some(t) => PyErr::from_type(t.bind(py).clone(), msg),
            None => Error::new_err(msg),
        }),
        K::NotSupported => NotSupportedError::new_err(msg),
        K::Closed => ClosedError::new_err(msg),
        K::Poisoned => PoisonedError::new_err(msg),
        K::Busy => BusyError::new_err(msg),
        _ => Error::new_err(msg),
    }
}

/// `obj` as bytes: `bytes`, `bytearray` or `memoryview` are taken; `str` is refused. A
/// `bytes` object is borrowed, not copied: it is immutable, and the caller's reference keeps
/// it alive while the GIL is released.
fn bytes_of<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Cow<'a, [u8]>> {
    if obj.is_instance_of::<pyo3::types::PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be bytes, not str (encode it first, e.g. s.encode())"
        )));
    }
    // bytes and bytearray by their buffers: pyo3's generic `Vec<u8>` extraction walks a
    // sequence item by item (an int conversion per byte: it made a 100-byte put cost 3x
    // what strata spends on it). Other sequences of ints (memoryview, lists) take that path.
    if let Ok(b) = obj.downcast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(b) = obj.downcast::<pyo3::types::PyByteArray>() {
        return Ok(Cow::Owned(b.to_vec()));
    }
    obj.extract::<Vec<u8>>().map(Cow::Owned).map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must be bytes, not {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })
}

fn closed() -> PyErr {
    ClosedError::new_err("the database is closed")
}

/// The value of `choices` that `value` names.
fn choice<T: Copy>(name: &str, value: &Bound<'_, PyAny>, choices: &[(&str, T)]) -> PyResult<T> {
    let given = value.extract::<String>().ok();
    choices
        .iter()
        .find(|(n, _)| Some(*n) == given.as_deref())
        .map(|&(_, t)| t)
        .ok_or_else(|| {
            let names: Vec<String> = choices.iter().map(|(n, _)| format!("{n:?}")).collect();
            InvalidArgumentError::new_err(format!(
                "option {name}: expects one of {}",
                names.join(", ")
            ))
        })
}

/// Applies keyword option `name` = `value` to `o`.
fn set_option(o: &mut strata::Options, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let bad = |why: &str| InvalidArgumentError::new_err(format!("option {name}: {why}"));
    let usize_ = || {
        value
            .extract::<usize>()
            .map_err(|_| bad("expects a non-negative int"))
    };
    let u64_ = || {
        value
            .extract::<u64>()
            .map_err(|_| bad("expects a non-negative int"))
    };
    let f64_ = || value.extract::<f64>().map_err(|_| bad("expects a number"));
    // Seconds as a duration: a negative, infinite or NaN number is refused (it once
    // panicked).
    let secs = || {
        let x = f64_()?;
        std::time::Duration::try_from_secs_f64(x)
            .map_err(|_| bad("expects a finite, non-negative number of seconds"))
    };
    let bool_ = || value.extract::<bool>().map_err(|_| bad("expects a bool"));
    let path = || -> PyResult<Option<std::path::PathBuf>> {
        if value.is_none() {
            return Ok(None);
        }
        value
            .extract::<std::path::PathBuf>()
            .map(Some)
            .map_err(|_| bad("expects a path"))
    };
    match name {
        "create_if_missing" => o.create_if_missing = bool_()?,
        "error_if_exists" => o.error_if_exists = bool_()?,
        "write_buffer_size" => o.write_buffer_size = usize_()?,
        "max_write_buffer_number" => o.max_write_buffer_number = usize_()?,
        "block_size" => o.block_size = usize_()?,
        "block_cache_size" => o.block_cache_size = usize_()?,
        "bloom_bits_per_key" => {
            o.bloom_bits_per_key = value.extract().map_err(|_| bad("expects an int"))?
        }
        "target_file_size_base" => o.target_file_size_base = u64_()?,
        "max_bytes_for_level_base" => o.max_bytes_for_level_base = u64_()?,
        "max_bytes_for_level_multiplier" => o.max_bytes_for_level_multiplier = f64_()?,
        "level0_file_num_compaction_trigger" => o.level0_file_num_compaction_trigger = usize_()?,
        "max_open_files" => o.max_open_files = usize_()?,
        "min_blob_size" => o.min_blob_size = usize_()?,
        "blob_gc_garbage_ratio" => o.blob_gc_garbage_ratio = f64_()?,
        "vlog_segment_size" => o.vlog_segment_size = u64_()?,
        "vlog_capacity" => o.vlog_capacity = if value.is_none() { None } else { Some(u64_()?) },
        "value_read_ahead" => o.value_read_ahead = usize_()?,
        "memtable_filter_ratio" => o.memtable_filter_ratio = f64_()?,
        "level0_slowdown_writes_trigger" => o.level0_slowdown_writes_trigger = usize_()?,
        "level0_stop_writes_trigger" => o.level0_stop_writes_trigger = usize_()?,
        "delayed_write_rate" => o.delayed_write_rate = u64_()?,
        "num_levels" => o.num_levels = usize_()?,
        "max_grandparent_overlap_factor" => o.max_grandparent_overlap_factor = u64_()?,
        "max_mem_compaction_level" => o.max_mem_compaction_level = usize_()?,
        "read_compaction_bytes" => o.read_compaction_bytes = u64_()?,
        "read_compaction_min_straight_reads" => o.read_compaction_min_straight_reads = u64_()?,
        "idle_compaction_delay" => {
            o.idle_compaction_delay = if value.is_none() { None } else { Some(secs()?) }
        }
        "write_stall_limit" => {
            o.write_stall_limit = if value.is_none() { None } else { Some(secs()?) }
        }
        "block_restart_interval" => o.block_restart_interval = usize_()?,
        "pin_table_metadata" => o.pin_table_metadata = bool_()?,
        "migrate_l0_layout" => o.migrate_l0_layout = bool_()?,
        "l0_skips_l1_wait" => o.l0_skips_l1_wait = bool_()?,
        "memory_limit" => o.memory_limit = if value.is_none() { None } else { Some(u64_()?) },
        "max_background_compactions" => o.max_background_compactions = usize_()?,
        "compaction_yields_to_flush" => o.compaction_yields_to_flush = bool_()?,
        "separate_flush_thread" => o.separate_flush_thread = bool_()?,
        "soft_pending_compaction_bytes_limit" => o.soft_pending_compaction_bytes_limit = u64_()?,
        "hard_pending_compaction_bytes_limit" => o.hard_pending_compaction_bytes_limit = u64_()?,
        "l0_buckets" => o.l0_buckets = usize_()?,
        "bucket_compaction_trigger" => o.bucket_compaction_trigger = usize_()?,
        "bucket_compaction_bytes" => o.bucket_compaction_bytes = u64_()?,
        "max_manifest_file_size" => o.max_manifest_file_size = u64_()?,
        "l0_layout" => {
            use strata::L0Layout as L;
            o.l0_layout = choice(name, value, &[("flat", L::Flat), ("buckets", L::Buckets)])?;
        }
        "wal_recovery_mode" => {
            use strata::WalRecoveryMode as W;
            o.wal_recovery_mode = choice(
                name,
                value,
                &[
                    ("tolerate_torn_tail", W::TolerateTornTail),
                    ("absolute_consistency", W::AbsoluteConsistency),
                    ("point_in_time", W::PointInTime),
                    ("skip_any_corrupted", W::SkipAnyCorrupted),
                ],
            )?;
        }
        "wal_dir" => o.wal_dir = path()?,
        "level_dir" => o.level_dir = path()?,
        "value_dir" => o.value_dir = path()?,
        "compression" => {
            use strata::Compression as C;
            o.compression = choice(name, value, &[("none", C::None), ("lz4", C::Lz4)])?;
        }
        "value_store" => {
            use strata::ValueStoreKind as V;
            o.value_store = choice(
                name,
                value,
                &[
                    ("inline", V::Inline),
                    ("blob", V::BlobFiles),
                    ("blob_files", V::BlobFiles),
                    ("vlog", V::VLog),
                ],
            )?;
        }
        // Every other field of the options text (docs/format/options.md) by its name
        // there: `pmem_dir`, `wal_in_pmem`, the matrix's, the hash store's and the
        // coalescing options, the policy enums by their variant names
        // (`level_sizing="Flattened"`); `fs` is Rust's.
        _ => set_by_text(o, name, value)?,
    }
    Ok(())
}

/// Sets option `name` as the options text would (`Options::from_text`): the value written
/// as that text writes it (`none` for `None`, `true`/`false`, numbers, paths, variant names).
fn set_by_text(o: &mut strata::Options, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let text = o.to_text();
    let known = text
        .lines()
        .any(|l| l.split_once(" = ").is_some_and(|(n, _)| n == name));
    if !known {
        return Err(PyTypeError::new_err(format!(
            "unknown option {name:?} (see help(strata.DB))"
        )));
    }
    let bad = |why: &str| InvalidArgumentError::new_err(format!("option {name}: {why}"));
    let v = if value.is_none() {
        "none".to_string()
    } else if let Ok(b) = value.extract::<bool>() {
        b.to_string()
    } else if let Ok(n) = value.extract::<u64>() {
        n.to_string()
    } else if let Ok(x) = value.extract::<f64>() {
        x.to_string()
    } else if let Ok(p) = value.extract::<std::path::PathBuf>() {
        p.to_string_lossy().into_owned()
    } else {
        return Err(bad("expects None, a bool, a number, a string or a path"));
    };
    if v.contains('\n') {
        return Err(bad("expects a value on one line"));
    }
    let mut parsed = strata::Options::from_text(&format!("{text}{name} = {v}\n"))
        .map_err(|e| bad(&format!("cannot read {v:?} ({e})")))?;
    // The two fields the text does not hold.
    parsed.fs = o.fs.clone();
    parsed.info_log = o.info_log.clone();
    *o = parsed;
    Ok(())
}

/// A strata database.
///
/// `DB(path, create_if_missing=False, preset=None, read_only=False, **options)`
/// (`read_only`: `Db::open_read_only`, no lock, nothing written; a missing database is created
/// only when asked, as plyvel does; never over the files of one that lost its CURRENT):
/// `preset` names a preset
/// (`"default"`, `"leveldb"`, `"blob"`, `"wisckey"`, ...), and options set `strata::Options`
/// fields by name (`write_buffer_size`, `block_cache_size`, `compression="lz4"`,
/// `value_store="blob"`, `min_blob_size`, `value_dir`, `pmem_dir`, ...: every field of the
/// options text, docs/format/options.md). Use as a context manager, or call `close()`.
#[pyclass(module = "strata")]
struct DB {
    db: RwLock<Option<Arc<strata::Db>>>,
}

impl DB {
    /// `key`'s bytes and its value, read with the GIL released.
    fn lookup<'a>(
        &self,
        py: Python<'_>,
        key: &'a Bound<'_, PyAny>,
    ) -> PyResult<(Cow<'a, [u8]>, Option<Vec<u8>>)> {
        let k = bytes_of(key, "key")?;
        let db = self.get_db()?;
        let v = py.allow_threads(|| db.get(&k)).map_err(err)?;
        Ok((k, v))
    }

    /// Writes `b` with the GIL released.
    fn write_batch_now(&self, py: Python<'_>, b: strata::WriteBatch, sync: bool) -> PyResult<()> {
        let db = self.get_db()?;
        let wo = strata::WriteOptions {
            sync,
            ..Default::default()
        };
        py.allow_threads(|| db.write(&wo, b)).map_err(err)
    }

    fn get_db(&self) -> PyResult<Arc<strata::Db>> {
        self.db
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .ok_or_else(closed)
    }
}

fn read_options(
    snapshot: Option<&Snapshot>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
) -> strata::ReadOptions {
    strata::ReadOptions {
        snapshot: snapshot.map(|s| s.snap.clone()),
        lower_bound: lower,
        upper_bound: upper,
    }
}

/// Lower and upper bounds of an iteration.
type Bounds = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The bounds for `start`/`stop`/`prefix` (the narrower of each).
fn bounds(
    mut lo: Option<Vec<u8>>,
    mut hi: Option<Vec<u8>>,
    prefix: Option<&Bound<'_, PyAny>>,
) -> PyResult<Bounds> {
    let owned = |o: &Bound<'_, PyAny>, what| bytes_of(o, what).map(Cow::into_owned);
    if let Some(p) = prefix.map(|p| owned(p, "prefix")).transpose()? {
        if lo.as_ref().is_none_or(|l| *l < p) {
            lo = Some(p.clone());
        }
        let mut end = p;
        while let Some(last) = end.pop() {
            if last != 0xff {
                end.push(last + 1);
                if hi.as_ref().is_none_or(|h| *h > end) {
                    hi = Some(end);
                }
                break;
            }
        }
    }
    Ok((lo, hi))
}

#[pymethods]
impl DB {
    #[new]
    #[pyo3(signature = (path, create_if_missing=false, preset=None, read_only=false, **options))]
    fn new(
        py: Python<'_>,
        path: std::path::PathBuf,
        create_if_missing: bool,
        preset: Option<&str>,
        read_only: bool,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let mut o = strata::Options::preset(preset.unwrap_or("default")).map_err(err)?;
        o.create_if_missing = create_if_missing;
        if let Some(kw) = options {
            for (k, v) in kw.iter() {
                set_option(&mut o, &k.extract::<String>()?, &v)?;
            }
        }
        let db = py
            .allow_threads(|| {
                if read_only {
                    strata::Db::open_read_only(&path, o)
                } else {
                    strata::Db::open(&path, o)
                }
            })
            .map_err(err)?;
        Ok(DB {
            db: RwLock::new(Some(Arc::new(db))),
        })
    }

    /// The value of `key`, or `default`.
    #[pyo3(signature = (key, default=None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
    ) -> PyResult<PyObject> {
        match self.lookup(py, key)?.1 {
            Some(v) => Ok(PyBytes::new(py, &v).into_any().unbind()),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    /// Sets `key` to `value` (`sync=True`: durable before it returns).
    #[pyo3(signature = (key, value, sync=false))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        sync: bool,
    ) -> PyResult<()> {
        let (k, v) = (bytes_of(key, "key")?, bytes_of(value, "value")?);
        let mut b =
            strata::WriteBatch::with_capacity(strata::WriteBatch::entry_capacity(k.len(), v.len()));
        b.put(k, v);
        self.write_batch_now(py, b, sync)
    }

    /// Deletes `key` (no error if it is absent).
    #[pyo3(signature = (key, sync=false))]
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>, sync: bool) -> PyResult<()> {
        let mut b = strata::WriteBatch::new();
        b.delete(bytes_of(key, "key")?);
        self.write_batch_now(py, b, sync)
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        match self.lookup(py, key)? {
            (_, Some(v)) => Ok(PyBytes::new(py, &v).into_any().unbind()),
            (k, None) => Err(PyKeyError::new_err(PyBytes::new(py, &k).unbind())),
        }
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.put(py, key, value, false)
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(py, key, false)
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.lookup(py, key)?.1.is_some())
    }

    /// The number of keys. Not cheap: it counts them all (a scan of the keys).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let db = self.get_db()?;
        py.allow_threads(|| -> strata::Result<usize> {
            let mut it = db.iter(strata::ReadOptions::default())?;
            it.seek_to_first();
            let mut n = 0;
            while it.valid() {
                n += 1;
                it.next();
            }
            it.status()?;
            Ok(n)
        })
        .map_err(err)
    }

    /// A batch of writes applied atomically by `write()`, or on leaving a `with` block. As
    /// plyvel's: a block that raises still writes what it added, unless `transaction=True`,
    /// which discards it then.
    #[pyo3(signature = (sync=false, transaction=false))]
    fn write_batch(slf: PyRef<'_, Self>, sync: bool, transaction: bool) -> PyResult<WriteBatch> {
        slf.get_db()?;
        Ok(WriteBatch {
            db: slf.into(),
            batch: Some(strata::WriteBatch::new()),
            sync,
            transaction,
        })
    }

    /// The part of the database whose keys start with `prefix`, keys given and returned
    /// without it (plyvel's `prefixed_db`; `strata.PrefixedDB`).
    fn prefixed_db(slf: PyRef<'_, Self>, prefix: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        let py = slf.py();
        let class = py.import("strata")?.getattr("PrefixedDB")?;
        Ok(class.call1((slf, prefix))?.unbind())
    }

    /// For each `(start, stop)` pair, the bytes of the tables holding keys in that range
    /// (whole tables: an estimate; plyvel's `approximate_sizes`).
    #[pyo3(signature = (*ranges))]
    fn approximate_sizes(&self, ranges: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<Vec<u64>> {
        let db = self.get_db()?;
        ranges
            .iter()
            .map(|r| {
                let (lo, hi): (Bound<'_, PyAny>, Bound<'_, PyAny>) = r.extract()?;
                let lo = bytes_of(&lo, "start")?;
                let hi = bytes_of(&hi, "stop")?;
                db.approximate_size(Some(&lo), Some(&hi)).map_err(err)
            })
            .collect()
    }

    /// A consistent read view (a context manager; released by `close()` or on exit).
    fn snapshot(&self) -> PyResult<Snapshot> {
        let db = self.get_db()?;
        Ok(Snapshot {
            db: Some(db.clone()),
            snap: db.snapshot(),
        })
    }

    /// Iterates in key order (`reverse=True`: descending) over `start <= key < stop` and
    /// keys starting with `prefix`, yielding `(key, value)`, or only keys
    /// (`include_value=False`) or only values (`include_key=False`); as of `snapshot`.
    /// `include_start=False` leaves `start` out, `include_stop=True` takes `stop` in (as
    /// plyvel's). The iterator also moves as plyvel's does: `seek(key)`, `seek_to_start()`,
    /// `seek_to_stop()`, `prev()`, `close()`.
    #[pyo3(signature = (start=None, stop=None, prefix=None, reverse=false, include_key=true, include_value=true, snapshot=None, include_start=true, include_stop=false))]
    #[allow(clippy::too_many_arguments)]
    fn iterator(
        &self,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        include_key: bool,
        include_value: bool,
        snapshot: Option<PyRef<'_, Snapshot>>,
        include_start: bool,
        include_stop: bool,
    ) -> PyResult<Iter> {
        let args = IterArgs {
            reverse,
            include_key,
            include_value,
            include_start,
            include_stop,
        };
        make_iter(
            self.get_db()?,
            snapshot.as_deref(),
            start,
            stop,
            prefix,
            args,
        )
    }

    fn __iter__(&self) -> PyResult<Iter> {
        make_iter(self.get_db()?, None, None, None, None, IterArgs::default())
    }

    /// Writes the memtable out as tables.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.get_db()?;
        py.allow_threads(|| db.flush()).map_err(err)
    }

    /// Compacts `start..=stop` (everything by default) and waits for it.
    #[pyo3(signature = (start=None, stop=None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let lo = start.map(|s| bytes_of(s, "start")).transpose()?;
        let hi = stop.map(|s| bytes_of(s, "stop")).transpose()?;
        let db = self.get_db()?;
        py.allow_threads(|| {
            db.compact_range(lo.as_deref(), hi.as_deref())?;
            db.wait_for_compactions()
        })
        .map_err(err)
    }

    /// A property (`"strata.levels"`, `"strata.stats"`, ...), or None.
    fn property(&self, name: &str) -> PyResult<Option<String>> {
        Ok(self.get_db()?.property(name))
    }

    /// Closes the database (flushing nothing that is not already in the WAL); further use
    /// raises `ClosedError`. Closing twice is harmless.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let db = self
            .db
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(db) = db {
            py.allow_threads(|| db.close()).map_err(err)?;
        }
        Ok(())
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.db
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_none()
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }
}

/// Writes applied together, atomically.
#[pyclass(module = "strata")]
struct WriteBatch {
    db: Py<DB>,
    batch: Option<strata::WriteBatch>,
    sync: bool,
    /// Discard the batch when its `with` block raises (plyvel's `transaction=True`).
    transaction: bool,
}

impl WriteBatch {
    /// The batch still being filled.
    fn open(&mut self) -> PyResult<&mut strata::WriteBatch> {
        self.batch
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("the batch was already written"))
    }
}

#[pymethods]
impl WriteBatch {
    /// Adds a put.
    fn put(&mut self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (k, v) = (bytes_of(key, "key")?, bytes_of(value, "value")?);
        self.open()?.put(k, v);
        Ok(())
    }

    /// Adds a delete.
    fn delete(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_of(key, "key")?;
        self.open()?.delete(k);
        Ok(())
    }

    /// Drops what was added.
    fn clear(&mut self) {
        if let Some(b) = self.batch.as_mut() {
            b.clear();
        }
    }

    /// Applies the batch atomically.
    fn write(&mut self, py: Python<'_>) -> PyResult<()> {
        // A failed write keeps the batch, so it can be written again.
        let b = self.open()?.clone();
        self.db.borrow(py).write_batch_now(py, b, self.sync)?;
        self.batch = None;
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.batch.as_ref().map_or(0, strata::WriteBatch::len)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<PyObject>,
        _exc: Option<PyObject>,
        _tb: Option<PyObject>,
    ) -> PyResult<bool> {
        if self.transaction && exc_type.is_some_and(|t| !t.is_none(py)) {
            self.batch = None; // discarded: the transaction's block raised
        } else if self.batch.is_some() {
            self.write(py)?;
        }
        Ok(false)
    }
}

/// A consistent read view of the database as it was when taken.
#[pyclass(module = "strata")]
struct Snapshot {
    db: Option<Arc<strata::Db>>,
    snap: strata::Snapshot,
}

#[pymethods]
impl Snapshot {
    /// The value of `key` as of the snapshot, or `default`.
    #[pyo3(signature = (key, default=None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
    ) -> PyResult<PyObject> {
        let k = bytes_of(key, "key")?;
        let db = self.db.clone().ok_or_else(closed)?;
        let ro = read_options(Some(self), None, None);
        match py.allow_threads(|| db.get_opt(&ro, &k)).map_err(err)? {
            Some(v) => Ok(PyBytes::new(py, &v).into_any().unbind()),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    /// Iterates as of the snapshot: `DB.iterator`'s arguments (plyvel's
    /// `snapshot.iterator()`).
    #[pyo3(signature = (start=None, stop=None, prefix=None, reverse=false, include_key=true, include_value=true, include_start=true, include_stop=false))]
    #[allow(clippy::too_many_arguments)]
    fn iterator(
        &self,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        include_key: bool,
        include_value: bool,
        include_start: bool,
        include_stop: bool,
    ) -> PyResult<Iter> {
        let db = self.db.clone().ok_or_else(closed)?;
        let args = IterArgs {
            reverse,
            include_key,
            include_value,
            include_start,
            include_stop,
        };
        make_iter(db, Some(self), start, stop, prefix, args)
    }

    /// Releases the snapshot (also done on leaving a `with` block, or when collected).
    fn close(&mut self) {
        self.db = None;
    }

    /// `close()`, by plyvel's name.
    fn release(&mut self) {
        self.close();
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }
}

/// How an iteration runs (the keyword arguments of `DB.iterator`).
#[derive(Clone, Copy)]
struct IterArgs {
    reverse: bool,
    include_key: bool,
    include_value: bool,
    include_start: bool,
    include_stop: bool,
}

impl Default for IterArgs {
    fn default() -> Self {
        IterArgs {
            reverse: false,
            include_key: true,
            include_value: true,
            include_start: true,
            include_stop: false,
        }
    }
}

/// The smallest key after `k`.
fn successor(mut k: Vec<u8>) -> Vec<u8> {
    k.push(0);
    k
}

fn make_iter(
    db: Arc<strata::Db>,
    snapshot: Option<&Snapshot>,
    start: Option<&Bound<'_, PyAny>>,
    stop: Option<&Bound<'_, PyAny>>,
    prefix: Option<&Bound<'_, PyAny>>,
    a: IterArgs,
) -> PyResult<Iter> {
    if !a.include_key && !a.include_value {
        return Err(PyValueError::new_err(
            "include_key and include_value cannot both be False",
        ));
    }
    let owned = |o: &Bound<'_, PyAny>, what| bytes_of(o, what).map(Cow::into_owned);
    // `start` left out / `stop` taken in: the bounds move to the next key.
    let start = start.map(|s| owned(s, "start")).transpose()?;
    let stop = stop.map(|s| owned(s, "stop")).transpose()?;
    let start = start.map(|k| if a.include_start { k } else { successor(k) });
    let stop = stop.map(|k| if a.include_stop { successor(k) } else { k });
    let (lo, hi) = bounds(start, stop, prefix)?;
    let mut it = db.iter(read_options(snapshot, lo, hi)).map_err(err)?;
    if a.reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    Ok(Iter {
        it: Some(it),
        args: a,
        _db: db,
    })
}

/// An iterator over a database or snapshot (see `DB.iterator`). It stands between two
/// entries, as plyvel's does: `next()` returns the entry after it and moves past it,
/// `prev()` the entry before it and moves before it.
#[pyclass(module = "strata", unsendable)]
struct Iter {
    /// Positioned at the entry `next()` returns (in the iteration's direction); `None`
    /// once closed or failed.
    it: Option<strata::DbIterator>,
    args: IterArgs,
    _db: Arc<strata::Db>,
}

/// One entry copied out of a cursor: key, value (as asked).
type Entry = (Option<Vec<u8>>, Option<Vec<u8>>);

impl Iter {
    /// Runs `step` on the cursor with the GIL released; turns what it copied into the
    /// item (a key, a value or a pair), `None` at the end; an error closes the iterator.
    fn run(
        &mut self,
        py: Python<'_>,
        step: impl FnOnce(&mut strata::DbIterator, IterArgs) -> strata::Result<Option<Entry>> + Send,
    ) -> PyResult<Option<PyObject>> {
        let Some(it) = self.it.as_mut() else {
            return Ok(None);
        };
        let a = self.args;
        let (key, value) = match py.allow_threads(|| step(it, a)) {
            Ok(Some(entry)) => entry,
            Ok(None) => return Ok(None),
            Err(e) => {
                self.it = None;
                return Err(err(e));
            }
        };
        let bytes = |b: Vec<u8>| PyBytes::new(py, &b).into_any().unbind();
        Ok(Some(match (key, value) {
            (Some(k), Some(v)) => (bytes(k), bytes(v)).into_pyobject(py)?.into_any().unbind(),
            (Some(k), None) => bytes(k),
            (None, Some(v)) => bytes(v),
            (None, None) => py.None(),
        }))
    }
}

/// The cursor's entry, as `a` asks for it.
fn entry(it: &strata::DbIterator, a: IterArgs) -> strata::Result<Entry> {
    let key = a.include_key.then(|| it.key().to_vec());
    let value = a.include_value.then(|| it.value().to_vec());
    it.status()?;
    Ok((key, value))
}

/// Moves one entry along the iteration's direction (`forward`) or against it.
fn step(it: &mut strata::DbIterator, reverse: bool, forward: bool) {
    if reverse == forward {
        it.prev();
    } else {
        it.next();
    }
}

#[pymethods]
impl Iter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        self.run(py, |it, a| {
            if !it.valid() {
                it.status()?;
                return Ok(None);
            }
            let e = entry(it, a)?;
            step(it, a.reverse, true);
            Ok(Some(e))
        })
    }

    /// The entry before the iterator's position, moving before it (`None` at the start).
    fn prev(&mut self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        self.run(py, |it, a| {
            if it.valid() {
                step(it, a.reverse, false);
            } else if a.reverse {
                it.seek_to_first();
            } else {
                it.seek_to_last();
            }
            if !it.valid() {
                it.status()?;
                // Before the first entry: `next()` returns it again.
                if a.reverse {
                    it.seek_to_last();
                } else {
                    it.seek_to_first();
                }
                return Ok(None);
            }
            entry(it, a).map(Some)
        })
    }

    /// Moves to just before the first entry >= `target` (descending: <= `target`).
    fn seek(&mut self, py: Python<'_>, target: &Bound<'_, PyAny>) -> PyResult<()> {
        let t = bytes_of(target, "target")?.into_owned();
        self.run(py, move |it, a| {
            if a.reverse {
                it.seek_for_prev(&t);
            } else {
                it.seek(&t);
            }
            it.status().map(|()| None)
        })?;
        Ok(())
    }

    /// Moves to before the first entry of the iteration.
    fn seek_to_start(&mut self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |it, a| {
            if a.reverse {
                it.seek_to_last();
            } else {
                it.seek_to_first();
            }
            it.status().map(|()| None)
        })?;
        Ok(())
    }

    /// Moves past the last entry of the iteration (`prev()` returns it).
    fn seek_to_stop(&mut self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |it, a| {
            if a.reverse {
                it.seek_to_first();
                it.prev();
            } else {
                it.seek_to_last();
                it.next();
            }
            it.status().map(|()| None)
        })?;
        Ok(())
    }

    /// Releases the iterator (also done when it is collected).
    fn close(&mut self) {
        self.it = None;
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }
}

/// The options to repair or destroy the database at `path` with: `preset` and `options`
/// (as `DB` takes them) if either is given; otherwise the options it was last opened for
/// writing with (its `OPTIONS` file: directories, value store, layout), or the defaults
/// where it has none. A database whose levels, WALs or values live in other directories is
/// found whole only through them.
fn options_for(
    path: &std::path::Path,
    preset: Option<&str>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<strata::Options> {
    if preset.is_some() || options.is_some_and(|kw| !kw.is_empty()) {
        let mut o = strata::Options::preset(preset.unwrap_or("default")).map_err(err)?;
        if let Some(kw) = options {
            for (k, v) in kw.iter() {
                set_option(&mut o, &k.extract::<String>()?, &v)?;
            }
        }
        return Ok(o);
    }
    match std::fs::read_to_string(path.join("OPTIONS")) {
        Ok(text) => strata::Options::from_text(&text).map_err(err),
        Err(_) => Ok(strata::Options::default()),
    }
}

/// `destroy_db(path, preset=None, **options)`: deletes the database at `path`, every file
/// strata names there and in the directories its options name (the recorded ones unless
/// given; other files and the directories stay). Refused while the database is open
/// (`BusyError`).
#[pyfunction]
#[pyo3(signature = (path, preset=None, **options))]
fn destroy_db(
    py: Python<'_>,
    path: std::path::PathBuf,
    preset: Option<&str>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let opts = options_for(&path, preset, options)?;
    py.allow_threads(|| strata::destroy(&path, &opts))
        .map_err(err)
}

/// `repair_db(path, preset=None, **options)`: rebuilds the database at `path` from the files
/// that survive (`strata repair`), in the directories its options name (the recorded ones
/// unless given: a damaged `OPTIONS` file is an error until they are).
#[pyfunction]
#[pyo3(signature = (path, preset=None, **options))]
fn repair_db(
    py: Python<'_>,
    path: std::path::PathBuf,
    preset: Option<&str>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let opts = options_for(&path, preset, options)?;
    py.allow_threads(|| strata::repair(&path, &opts).map(|_| ()))
        .map_err(err)
}

/// strata, an embeddable LSM key-value store.
#[pymodule]
fn _strata(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<DB>()?;
    m.add_class::<WriteBatch>()?;
    m.add_class::<Snapshot>()?;
    m.add_class::<Iter>()?;
    m.add_function(wrap_pyfunction!(destroy_db, m)?)?;
    m.add_function(wrap_pyfunction!(repair_db, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("Error", py.get_type::<Error>())?;
    m.add("CorruptionError", py.get_type::<CorruptionError>())?;
    m.add(
        "InvalidArgumentError",
        py.get_type::<InvalidArgumentError>(),
    )?;
    let bases = (
        py.get_type::<Error>(),
        py.get_type::<pyo3::exceptions::PyOSError>(),
    );
    let attrs = PyDict::new(py);
    attrs.set_item("__module__", "strata")?;
    attrs.set_item(
        "__doc__",
        "The operating system reported an I/O failure (also an OSError).",
    )?;
    let io_error = py
        .get_type::<pyo3::types::PyType>()
        .call1(("IOError", bases, attrs))?
        .downcast_into::<pyo3::types::PyType>()?;
    let _ = IO_ERROR.set(py, io_error.clone().unbind());
    m.add("IOError", io_error)?;
    m.add("NotSupportedError", py.get_type::<NotSupportedError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    m.add("PoisonedError", py.get_type::<PoisonedError>())?;
    m.add("BusyError", py.get_type::<BusyError>())?;
    Ok(())
}
