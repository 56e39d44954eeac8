//! strata from Python: `strata.DB` in plyvel's spirit. Keys and values are `bytes`; errors
//! are `strata.Error` subclasses carrying strata's message; the GIL is released while
//! strata reads, writes or waits.

use std::borrow::Cow;
use std::sync::{Arc, RwLock};

use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

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

pyo3::create_exception!(
    strata,
    IteratorInvalidError,
    Error,
    "A raw iterator was asked for its entry, or to move, while not on an entry (plyvel's)."
);
pyo3::create_exception!(
    strata,
    StaleError,
    Error,
    "A read-only view reached data the writing process replaced since it opened: open a new one."
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
        K::Stale => StaleError::new_err(msg),
        _ => Error::new_err(msg),
    }
}

/// Lets go of a handle on the database with the GIL released: the last one closes the
/// database, which waits for its background threads, and a compaction filter written in
/// Python running on one of them waits for the GIL.
fn release(db: Option<Arc<strata::Db>>) {
    if let Some(db) = db {
        Python::with_gil(|py| py.allow_threads(move || drop(db)));
    }
}

impl Drop for DB {
    fn drop(&mut self) {
        let db = self
            .db
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        release(db);
    }
}

/// A time to live given in seconds (`None`: none); negative or not finite is refused.
fn ttl_of(ttl: Option<f64>) -> PyResult<Option<std::time::Duration>> {
    ttl.map(|s| {
        std::time::Duration::try_from_secs_f64(s).map_err(|_| {
            PyValueError::new_err(format!("ttl is a number of seconds, 0 or more (got {s})"))
        })
    })
    .transpose()
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
    let none = value.is_none();
    match name {
        // plyvel's names and values, so that plyvel code runs unchanged (`None`, plyvel's
        // default for most of them, leaves strata's default).
        "paranoid_checks" => {
            // strata always verifies what it reads against its checksums and refuses a
            // damaged database at open: there is nothing stricter to turn on.
            if !none {
                bool_()?;
            }
        }
        "lru_cache_size" if !none => o.block_cache_size = usize_()?,
        "max_file_size" if !none => o.target_file_size_base = u64_()?,
        "bloom_filter_bits" => {
            o.bloom_bits_per_key = value.extract().map_err(|_| bad("expects an int"))?
        }
        "comparator" | "comparator_name" if !none => {
            return Err(NotSupportedError::new_err(format!(
                "option {name}: strata orders keys bytewise (LevelDB's default comparator) \
                 and takes no other"
            )))
        }
        "lru_cache_size" | "max_file_size" | "comparator" | "comparator_name"
        | "write_buffer_size" | "max_open_files" | "block_size" | "block_restart_interval"
            if none => {}
        // strata has no Snappy: plyvel's default asks for fast block compression, which
        // here is LZ4 (bytes as plyvel takes them too).
        "compression" if none => o.compression = strata::Compression::None,
        "compression" if value.extract::<&[u8]>().is_ok_and(|b| b == b"snappy") => {
            o.compression = strata::Compression::Lz4
        }
        "compression" if value.extract::<String>().is_ok_and(|c| c == "snappy") => {
            o.compression = strata::Compression::Lz4
        }
        // Seconds, as Python counts them (the options text writes `5s`).
        "idle_compaction_delay" => {
            o.idle_compaction_delay = if none { None } else { Some(secs()?) }
        }
        "write_stall_limit" => o.write_stall_limit = if none { None } else { Some(secs()?) },
        // Seconds every put lives unless its write says otherwise (`Options::default_ttl`).
        "default_ttl" => o.default_ttl = if none { None } else { Some(secs()?) },
        // A callable asked about each entry flushes and compactions write (docs: `DB`).
        "compaction_filter" => {
            o.compaction_filter = if none {
                None
            } else if value.is_callable() {
                Some(Arc::new(PyFilter(value.clone().unbind())))
            } else {
                return Err(bad("expects a callable (key, value, reason) or None"));
            }
        }
        // The preset's name for the blob-file store.
        "value_store" if value.extract::<String>().is_ok_and(|v| v == "blob") => {
            o.value_store = strata::ValueStoreKind::BlobFiles
        }
        // Every other option by its name in the options text (docs/format/options.md), its
        // value as the text writes it (enums by variant name, in any case, with or without
        // underscores: `l0_layout="matrix"`, `value_store="hash"`,
        // `wal_recovery_mode="point_in_time"`): the engine's own parser, so every option
        // the engine has is here, with no second table to keep in step.
        _ => set_by_text(o, name, value)?,
    }
    Ok(())
}

/// A compaction filter written in Python: `callable(key, value, reason)` with `reason` one
/// of `"flush"`, `"compaction"`, `"value_gc"`; it returns `False` to remove the entry,
/// `bytes` to change its value, anything else (`None`, `True`) to keep it. Called from the
/// engine's background threads, holding the GIL while it runs. An exception it raises fails
/// the job, as a panicking filter does in Rust (the database then refuses writes until it
/// is reopened), with the exception in the error.
struct PyFilter(PyObject);

impl strata::CompactionFilter for PyFilter {
    fn name(&self) -> &str {
        "python"
    }

    fn filter(&self, e: &strata::FilterEntry<'_>) -> strata::Decision {
        // (A value that cannot be read fails the job whatever is answered.)
        let Ok(value) = e.value() else {
            return strata::Decision::Keep;
        };
        let reason = match e.reason() {
            strata::FilterReason::Flush => "flush",
            strata::FilterReason::Compaction { .. } => "compaction",
            strata::FilterReason::ValueGc => "value_gc",
        };
        Python::with_gil(|py| {
            let got = self.0.call1(
                py,
                (PyBytes::new(py, e.key()), PyBytes::new(py, value), reason),
            );
            match got {
                Ok(r) => {
                    let r = r.bind(py);
                    if let Ok(b) = r.downcast::<PyBytes>() {
                        strata::Decision::Change(b.as_bytes().to_vec())
                    } else if r.extract::<bool>().is_ok_and(|b| !b) && !r.is_none() {
                        strata::Decision::Remove
                    } else {
                        strata::Decision::Keep
                    }
                }
                Err(err) => {
                    let text = err.to_string();
                    err.print(py);
                    // Caught by the engine: the job fails with the filter's name.
                    std::panic::panic_any(format!("the compaction filter raised {text}"))
                }
            }
        })
    }
}

/// Sets option `name` through the engine's parser (`Options::set`): the value written as
/// the options text writes it (`none` for `None`, `true`/`false`, numbers, paths, variant
/// names).
fn set_by_text(o: &mut strata::Options, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
    if !strata::Options::names().iter().any(|n| n == name) {
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
    } else if let Ok(b) = value.extract::<&[u8]>() {
        String::from_utf8_lossy(b).into_owned()
    } else {
        return Err(bad("expects None, a bool, a number, a string or a path"));
    };
    if v.contains('\n') {
        return Err(bad("expects a value on one line"));
    }
    o.set(name, &v).map_err(|e| {
        InvalidArgumentError::new_err(e.message().to_string())
    })
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
/// options text, docs/format/options.md), and two that are not text: `default_ttl`
/// (seconds every put lives unless its write says otherwise) and `compaction_filter`, a
/// callable `(key, value, reason) -> False | bytes | None` asked about each entry a flush
/// or compaction writes (`False` removes it, `bytes` changes its value, anything else keeps
/// it; an exception fails the job and the database refuses writes until reopened).
/// Use as a context manager, or call `close()`.
#[pyclass(module = "strata")]
struct DB {
    db: RwLock<Option<Arc<strata::Db>>>,
    /// The path as given (plyvel's `DB.name`).
    name: PyObject,
}

/// A database path as plyvel takes it (`str` or `bytes`), or any `os.PathLike`.
fn path_of(path: &Bound<'_, PyAny>) -> PyResult<std::path::PathBuf> {
    if let Ok(b) = path.downcast::<PyBytes>() {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            return Ok(std::ffi::OsStr::from_bytes(b.as_bytes()).into());
        }
        #[cfg(not(unix))]
        {
            return std::str::from_utf8(b.as_bytes())
                .map(Into::into)
                .map_err(|_| PyValueError::new_err("a bytes path must be UTF-8 here"));
        }
    }
    path.extract::<std::path::PathBuf>().map_err(|_| {
        PyTypeError::new_err("the path must be a str, bytes or an os.PathLike (pathlib.Path)")
    })
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
        path: &Bound<'_, PyAny>,
        create_if_missing: Option<bool>,
        preset: Option<&str>,
        read_only: bool,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let name = path.clone().unbind();
        let path = path_of(path)?;
        let mut o = strata::Options::preset(preset.unwrap_or("default")).map_err(err)?;
        o.create_if_missing = create_if_missing.unwrap_or(false);
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
            name,
        })
    }

    /// The path the database was opened with, as given (plyvel's).
    #[getter]
    fn name(&self, py: Python<'_>) -> PyObject {
        self.name.clone_ref(py)
    }

    /// The value of `key`, or `default`. (`verify_checksums` and `fill_cache` are plyvel's,
    /// taken and ignored: strata verifies every block it reads, and caches as configured.)
    #[pyo3(signature = (key, default=None, verify_checksums=false, fill_cache=true))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
        verify_checksums: bool,
        fill_cache: bool,
    ) -> PyResult<PyObject> {
        let _ = (verify_checksums, fill_cache);
        match self.lookup(py, key)?.1 {
            Some(v) => Ok(PyBytes::new(py, &v).into_any().unbind()),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    /// Sets `key` to `value` (`sync=True`: durable before it returns; `ttl`: seconds after
    /// which no read returns it).
    #[pyo3(signature = (key, value, sync=false, ttl=None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        sync: bool,
        ttl: Option<f64>,
    ) -> PyResult<()> {
        let (k, v) = (bytes_of(key, "key")?, bytes_of(value, "value")?);
        let mut b = strata::WriteBatch::with_capacity(strata::WriteBatch::entry_capacity(
            k.len(),
            v.len() + 8,
        ));
        match ttl_of(ttl)? {
            Some(t) => b.put_with_ttl(k, v, t),
            None => b.put(k, v),
        };
        self.write_batch_now(py, b, sync)
    }

    /// Deletes `key` (no error if it is absent).
    #[pyo3(signature = (key, sync=false))]
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>, sync: bool) -> PyResult<()> {
        let mut b = strata::WriteBatch::new();
        b.delete(bytes_of(key, "key")?);
        self.write_batch_now(py, b, sync)
    }

    /// Deletes every key from `start` (inclusive) to `end` (exclusive) as one write; a
    /// `start` above `end` raises `InvalidArgumentError`.
    #[pyo3(signature = (start, end, sync=false))]
    fn delete_range(
        &self,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        sync: bool,
    ) -> PyResult<()> {
        let mut b = strata::WriteBatch::new();
        b.delete_range(bytes_of(start, "start")?, bytes_of(end, "end")?);
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
        self.put(py, key, value, false, None)
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
            batch: strata::WriteBatch::new(),
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

    /// The bytes of the tables holding keys in `start..stop` (plyvel's).
    fn approximate_size(&self, start: &Bound<'_, PyAny>, stop: &Bound<'_, PyAny>) -> PyResult<u64> {
        let db = self.get_db()?;
        let (lo, hi) = (bytes_of(start, "start")?, bytes_of(stop, "stop")?);
        db.approximate_size(Some(&lo), Some(&hi)).map_err(err)
    }

    /// A property as bytes, or None (plyvel's; LevelDB's names are read as strata's:
    /// `leveldb.stats` is `strata.stats`, `leveldb.sstables` is `strata.tables`).
    fn get_property(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<Option<PyObject>> {
        let name = String::from_utf8(bytes_of(name, "name")?.into_owned())
            .map_err(|_| PyValueError::new_err("a property name is UTF-8"))?;
        let name = match name.strip_prefix("leveldb.") {
            Some("sstables") => "strata.tables".to_string(),
            Some(rest) => format!("strata.{rest}"),
            None => name,
        };
        Ok(self
            .get_db()?
            .property(&name)
            .map(|v| PyBytes::new(py, v.as_bytes()).into_any().unbind()))
    }

    /// A cursor over the whole database (plyvel's `raw_iterator`): `valid()`,
    /// `seek_to_first()`, `seek_to_last()`, `seek(key)`, `next()`, `prev()`, `key()`,
    /// `value()`, `item()`; asking an invalid one for its entry or a move raises
    /// `IteratorInvalidError`.
    #[pyo3(signature = (verify_checksums=false, fill_cache=true, snapshot=None))]
    fn raw_iterator(
        &self,
        verify_checksums: bool,
        fill_cache: bool,
        snapshot: Option<PyRef<'_, Snapshot>>,
    ) -> PyResult<RawIterator> {
        let _ = (verify_checksums, fill_cache);
        RawIterator::new(self.get_db()?, snapshot.as_deref())
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
    #[pyo3(signature = (start=None, stop=None, prefix=None, reverse=false, include_key=true, include_value=true, snapshot=None, include_start=true, include_stop=false, verify_checksums=false, fill_cache=true))]
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
        verify_checksums: bool,
        fill_cache: bool,
    ) -> PyResult<Iter> {
        let _ = (verify_checksums, fill_cache);
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

    /// Writes a consistent, openable copy of the database to the new directory `path`
    /// (`Db::checkpoint`: tables linked where the file system allows).
    fn checkpoint(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        let db = self.get_db()?;
        py.allow_threads(|| db.checkpoint(&path)).map_err(err)
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
    batch: strata::WriteBatch,
    sync: bool,
    /// Discard the batch when its `with` block raises (plyvel's `transaction=True`).
    transaction: bool,
}

#[pymethods]
impl WriteBatch {
    /// Adds a put (`ttl`: seconds after the batch is written when no read returns it).
    #[pyo3(signature = (key, value, ttl=None))]
    fn put(
        &mut self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        ttl: Option<f64>,
    ) -> PyResult<()> {
        let (k, v) = (bytes_of(key, "key")?, bytes_of(value, "value")?);
        match ttl_of(ttl)? {
            Some(t) => self.batch.put_with_ttl(k, v, t),
            None => self.batch.put(k, v),
        };
        Ok(())
    }

    /// Adds a delete.
    fn delete(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_of(key, "key")?;
        self.batch.delete(k);
        Ok(())
    }

    /// Adds a deletion of every key from `start` (inclusive) to `end` (exclusive).
    fn delete_range(&mut self, start: &Bound<'_, PyAny>, end: &Bound<'_, PyAny>) -> PyResult<()> {
        let (s, e) = (bytes_of(start, "start")?, bytes_of(end, "end")?);
        self.batch.delete_range(s, e);
        Ok(())
    }

    /// Drops what was added.
    fn clear(&mut self) {
        self.batch.clear();
    }

    /// Adds every write of `source`, another batch, after these (plyvel's).
    fn append(&mut self, source: PyRef<'_, WriteBatch>) {
        self.batch.append(&source.batch);
    }

    /// The bytes the batch takes (plyvel's).
    fn approximate_size(&self) -> usize {
        self.batch.encoded_len()
    }

    /// Applies the batch atomically. As plyvel's, the batch is kept: writing it again
    /// applies it again (`clear()` empties it; leaving a `with` block writes and clears).
    fn write(&mut self, py: Python<'_>) -> PyResult<()> {
        let b = self.batch.clone();
        self.db.borrow(py).write_batch_now(py, b, self.sync)
    }

    fn __len__(&self) -> usize {
        self.batch.len()
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
        if !(self.transaction && exc_type.is_some_and(|t| !t.is_none(py))) {
            // (A block that raised without `transaction` writes too: plyvel's.)
            self.write(py)?;
        }
        self.clear();
        Ok(false)
    }
}

/// A consistent read view of the database as it was when taken.
#[pyclass(module = "strata")]
struct Snapshot {
    db: Option<Arc<strata::Db>>,
    snap: strata::Snapshot,
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        release(self.db.take());
    }
}

#[pymethods]
impl Snapshot {
    /// The value of `key` as of the snapshot, or `default` (plyvel's keywords taken).
    #[pyo3(signature = (key, default=None, verify_checksums=false, fill_cache=true))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
        verify_checksums: bool,
        fill_cache: bool,
    ) -> PyResult<PyObject> {
        let _ = (verify_checksums, fill_cache);
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
    #[pyo3(signature = (start=None, stop=None, prefix=None, reverse=false, include_key=true, include_value=true, include_start=true, include_stop=false, verify_checksums=false, fill_cache=true))]
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
        verify_checksums: bool,
        fill_cache: bool,
    ) -> PyResult<Iter> {
        let _ = (verify_checksums, fill_cache);
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

    /// A cursor as of the snapshot (`DB.raw_iterator`).
    #[pyo3(signature = (verify_checksums=false, fill_cache=true))]
    fn raw_iterator(&self, verify_checksums: bool, fill_cache: bool) -> PyResult<RawIterator> {
        let _ = (verify_checksums, fill_cache);
        let db = self.db.clone().ok_or_else(closed)?;
        RawIterator::new(db, Some(self))
    }

    /// Releases the snapshot (also done on leaving a `with` block, or when collected).
    fn close(&mut self) {
        release(self.db.take());
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
        _db: Some(db),
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
    _db: Option<Arc<strata::Db>>,
}

impl Drop for Iter {
    fn drop(&mut self) {
        self.it.take();
        release(self._db.take());
    }
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

    /// The entry before the iterator's position, moving before it; `StopIteration` at
    /// the start (plyvel's), after which `next()` returns the first entry.
    fn prev(&mut self, py: Python<'_>) -> PyResult<PyObject> {
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
        })?
        .ok_or_else(|| pyo3::exceptions::PyStopIteration::new_err(()))
    }

    /// Moves to the place between the entries below `target` and those at or above it, as
    /// plyvel's does in both directions: ascending, `next()` returns the first entry >=
    /// `target`; descending, `next()` returns the last entry < `target` and `prev()` the
    /// first >= `target`.
    fn seek(&mut self, py: Python<'_>, target: &Bound<'_, PyAny>) -> PyResult<()> {
        let t = bytes_of(target, "target")?.into_owned();
        self.run(py, move |it, a| {
            it.seek(&t);
            if a.reverse {
                if it.valid() {
                    it.prev();
                } else {
                    it.status()?;
                    it.seek_to_last();
                }
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

/// A cursor over a database or snapshot, as LevelDB's own (plyvel's `RawIterator`): it
/// starts on no entry; `seek_to_first()`, `seek_to_last()` and `seek(key)` place it, and
/// `next()`, `prev()`, `key()`, `value()` and `item()` raise `IteratorInvalidError` when it
/// is on none.
#[pyclass(module = "strata", unsendable)]
struct RawIterator {
    /// `None` once closed.
    it: Option<strata::DbIterator>,
    _db: Option<Arc<strata::Db>>,
}

impl Drop for RawIterator {
    fn drop(&mut self) {
        self.it.take();
        release(self._db.take());
    }
}

impl RawIterator {
    fn new(db: Arc<strata::Db>, snapshot: Option<&Snapshot>) -> PyResult<Self> {
        let it = db.iter(read_options(snapshot, None, None)).map_err(err)?;
        Ok(RawIterator {
            it: Some(it),
            _db: Some(db),
        })
    }

    /// Runs `f` on the cursor with the GIL released, then reports its status.
    fn run(
        &mut self,
        py: Python<'_>,
        f: impl FnOnce(&mut strata::DbIterator) + Send,
    ) -> PyResult<()> {
        let it = self
            .it
            .as_mut()
            .ok_or_else(|| ClosedError::new_err("the iterator is closed"))?;
        py.allow_threads(|| {
            f(it);
            it.status()
        })
        .map_err(err)
    }

    /// The cursor, on an entry.
    fn on_entry(&self) -> PyResult<&strata::DbIterator> {
        let it = self
            .it
            .as_ref()
            .ok_or_else(|| ClosedError::new_err("the iterator is closed"))?;
        it.status().map_err(err)?;
        if it.valid() {
            Ok(it)
        } else {
            Err(IteratorInvalidError::new_err(()))
        }
    }
}

#[pymethods]
impl RawIterator {
    /// Whether it is on an entry.
    fn valid(&self) -> PyResult<bool> {
        let it = self
            .it
            .as_ref()
            .ok_or_else(|| ClosedError::new_err("the iterator is closed"))?;
        Ok(it.valid())
    }

    fn seek_to_first(&mut self, py: Python<'_>) -> PyResult<()> {
        self.run(py, strata::DbIterator::seek_to_first)
    }

    fn seek_to_last(&mut self, py: Python<'_>) -> PyResult<()> {
        self.run(py, strata::DbIterator::seek_to_last)
    }

    /// To the first entry >= `target`.
    fn seek(&mut self, py: Python<'_>, target: &Bound<'_, PyAny>) -> PyResult<()> {
        let t = bytes_of(target, "target")?.into_owned();
        self.run(py, move |it| it.seek(&t))
    }

    fn next(&mut self, py: Python<'_>) -> PyResult<()> {
        self.on_entry()?;
        self.run(py, strata::DbIterator::next)
    }

    fn prev(&mut self, py: Python<'_>) -> PyResult<()> {
        self.on_entry()?;
        self.run(py, strata::DbIterator::prev)
    }

    fn key(&self, py: Python<'_>) -> PyResult<PyObject> {
        Ok(PyBytes::new(py, self.on_entry()?.key()).into_any().unbind())
    }

    fn value(&self, py: Python<'_>) -> PyResult<PyObject> {
        Ok(PyBytes::new(py, self.on_entry()?.value()).into_any().unbind())
    }

    /// `(key(), value())`.
    fn item(&self, py: Python<'_>) -> PyResult<(PyObject, PyObject)> {
        let it = self.on_entry()?;
        Ok((
            PyBytes::new(py, it.key()).into_any().unbind(),
            PyBytes::new(py, it.value()).into_any().unbind(),
        ))
    }

    /// Releases the cursor (also done when it is collected).
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

/// A directory of incremental backups (`strata::BackupEngine`): `create_backup(db)`,
/// `list()`, `verify(id=None)`, `restore(id, path)`, `delete(id)`, `purge(keep)`.
/// One engine at a time holds a directory; `close()` (or leaving a `with` block) lets it go.
#[pyclass(module = "strata")]
struct BackupEngine {
    engine: RwLock<Option<Arc<strata::BackupEngine>>>,
}

/// A backup's description as a dict.
fn info_dict<'py>(py: Python<'py>, i: &strata::BackupInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", i.id)?;
    d.set_item("created", i.created)?;
    d.set_item("sequence", i.sequence)?;
    d.set_item("files", i.files)?;
    d.set_item("bytes", i.bytes)?;
    d.set_item("copied_files", i.copied_files)?;
    d.set_item("copied_bytes", i.copied_bytes)?;
    Ok(d)
}

impl BackupEngine {
    fn get(&self) -> PyResult<Arc<strata::BackupEngine>> {
        self.engine
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .ok_or_else(|| ClosedError::new_err("the backup engine is closed"))
    }
}

#[pymethods]
impl BackupEngine {
    /// Opens (creating it if needed) the backup directory `path`.
    #[new]
    fn new(py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<Self> {
        let path = path_of(path)?;
        let engine = py
            .allow_threads(|| strata::BackupEngine::open(&path))
            .map_err(err)?;
        Ok(BackupEngine {
            engine: RwLock::new(Some(Arc::new(engine))),
        })
    }

    /// Backs `db` up (as of one instant during the call); returns the backup's dict.
    fn create_backup<'py>(&self, py: Python<'py>, db: PyRef<'_, DB>) -> PyResult<Bound<'py, PyDict>> {
        let (engine, db) = (self.get()?, db.get_db()?);
        let info = py
            .allow_threads(|| engine.create_backup(&db))
            .map_err(err)?;
        info_dict(py, &info)
    }

    /// Every backup whose description reads, oldest first, as dicts (id, created,
    /// sequence, files, bytes, copied_files, copied_bytes).
    fn list<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let engine = self.get()?;
        let infos = py.allow_threads(|| engine.list()).map_err(err)?;
        infos.iter().map(|i| info_dict(py, i)).collect()
    }

    /// The backups whose description does not read, as (id, reason) pairs; `delete(id)`
    /// removes one.
    fn damaged(&self, py: Python<'_>) -> PyResult<Vec<(u64, String)>> {
        let engine = self.get()?;
        let found = py.allow_threads(|| engine.damaged()).map_err(err)?;
        Ok(found.into_iter().map(|(id, e)| (id, e.to_string())).collect())
    }

    /// Checks backup `id` (every backup by default): each file there, of its size and
    /// checksum. Raises `CorruptionError` for the first that is not, or (checking every
    /// backup) for a damaged description.
    #[pyo3(signature = (id=None))]
    fn verify(&self, py: Python<'_>, id: Option<u64>) -> PyResult<()> {
        let engine = self.get()?;
        py.allow_threads(|| {
            let ids = match id {
                Some(id) => vec![id],
                None => engine.list()?.iter().map(|i| i.id).collect(),
            };
            ids.into_iter().try_for_each(|id| engine.verify(id))?;
            if id.is_some() {
                return Ok(());
            }
            match engine.damaged()?.into_iter().next() {
                Some((id, e)) => Err(strata::Error::new(
                    e.kind(),
                    format!("backup {id}: {}", e.message()),
                )),
                None => Ok(()),
            }
        })
        .map_err(err)
    }

    /// Restores backup `id` into the new directory `path`.
    fn restore(&self, py: Python<'_>, id: u64, path: &Bound<'_, PyAny>) -> PyResult<()> {
        let (engine, path) = (self.get()?, path_of(path)?);
        py.allow_threads(|| engine.restore(id, &path)).map_err(err)
    }

    /// Deletes backup `id` and the files no other backup shares.
    fn delete(&self, py: Python<'_>, id: u64) -> PyResult<()> {
        let engine = self.get()?;
        py.allow_threads(|| engine.delete(id)).map_err(err)
    }

    /// Deletes every backup but the newest `keep`; returns how many it deleted.
    fn purge(&self, py: Python<'_>, keep: usize) -> PyResult<usize> {
        let engine = self.get()?;
        py.allow_threads(|| engine.purge(keep)).map_err(err)
    }

    /// Lets the directory go (another engine may open it then).
    fn close(&self) {
        self.engine
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }
}

/// strata, an embeddable LSM key-value store.
#[pymodule]
fn _strata(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<DB>()?;
    m.add_class::<BackupEngine>()?;
    m.add_class::<WriteBatch>()?;
    m.add_class::<Snapshot>()?;
    m.add_class::<Iter>()?;
    m.add_class::<RawIterator>()?;
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
    m.add("StaleError", py.get_type::<StaleError>())?;
    m.add(
        "IteratorInvalidError",
        py.get_type::<IteratorInvalidError>(),
    )?;
    Ok(())
}
