//! LevelDB through its C API (`leveldb/c.h`), linked from the system library. The FFI
//! declarations are our own and cover only what the benchmark uses.
//!
//! LevelDB fixes some sizes internally (L1 = 10 MiB x10, 2 MiB tables unless
//! `max_file_size` is set); the flags that have a LevelDB counterpart are passed on.

use std::ffi::{c_char, c_int, c_void, CString};
use std::path::Path;
use std::ptr;

use crate::engine::{Engine, Metrics};
use crate::flags::Flags;

#[repr(C)]
struct Opaque {
    _p: [u8; 0],
}

#[link(name = "leveldb")]
extern "C" {
    fn leveldb_options_create() -> *mut Opaque;
    fn leveldb_options_destroy(o: *mut Opaque);
    fn leveldb_options_set_create_if_missing(o: *mut Opaque, v: u8);
    fn leveldb_options_set_write_buffer_size(o: *mut Opaque, v: usize);
    fn leveldb_options_set_max_file_size(o: *mut Opaque, v: usize);
    fn leveldb_options_set_max_open_files(o: *mut Opaque, v: c_int);
    fn leveldb_options_set_block_size(o: *mut Opaque, v: usize);
    fn leveldb_options_set_compression(o: *mut Opaque, v: c_int);
    fn leveldb_options_set_filter_policy(o: *mut Opaque, p: *mut Opaque);
    fn leveldb_options_set_cache(o: *mut Opaque, c: *mut Opaque);
    fn leveldb_filterpolicy_create_bloom(bits: c_int) -> *mut Opaque;
    fn leveldb_filterpolicy_destroy(p: *mut Opaque);
    fn leveldb_cache_create_lru(capacity: usize) -> *mut Opaque;
    fn leveldb_cache_destroy(c: *mut Opaque);
    fn leveldb_open(o: *const Opaque, name: *const c_char, err: *mut *mut c_char) -> *mut Opaque;
    fn leveldb_close(db: *mut Opaque);
    fn leveldb_compact_range(
        db: *mut Opaque,
        start: *const c_char,
        start_len: usize,
        limit: *const c_char,
        limit_len: usize,
    );
    fn leveldb_write(db: *mut Opaque, wo: *const Opaque, b: *mut Opaque, err: *mut *mut c_char);
    fn leveldb_get(
        db: *mut Opaque,
        ro: *const Opaque,
        k: *const c_char,
        kl: usize,
        vl: *mut usize,
        err: *mut *mut c_char,
    ) -> *mut c_char;
    fn leveldb_free(p: *mut c_void);
    fn leveldb_writeoptions_create() -> *mut Opaque;
    fn leveldb_writeoptions_destroy(o: *mut Opaque);
    fn leveldb_writeoptions_set_sync(o: *mut Opaque, v: u8);
    fn leveldb_readoptions_create() -> *mut Opaque;
    fn leveldb_readoptions_destroy(o: *mut Opaque);
    fn leveldb_writebatch_create() -> *mut Opaque;
    fn leveldb_writebatch_destroy(b: *mut Opaque);
    fn leveldb_writebatch_put(
        b: *mut Opaque,
        k: *const c_char,
        kl: usize,
        v: *const c_char,
        vl: usize,
    );
    fn leveldb_writebatch_delete(b: *mut Opaque, k: *const c_char, kl: usize);
    fn leveldb_create_iterator(db: *mut Opaque, ro: *const Opaque) -> *mut Opaque;
    fn leveldb_iter_destroy(it: *mut Opaque);
    fn leveldb_iter_valid(it: *const Opaque) -> u8;
    fn leveldb_iter_seek_to_first(it: *mut Opaque);
    fn leveldb_iter_seek_to_last(it: *mut Opaque);
    fn leveldb_iter_seek(it: *mut Opaque, k: *const c_char, kl: usize);
    fn leveldb_iter_next(it: *mut Opaque);
    fn leveldb_iter_prev(it: *mut Opaque);
    fn leveldb_iter_key(it: *const Opaque, kl: *mut usize) -> *const c_char;
    fn leveldb_iter_value(it: *const Opaque, vl: *mut usize) -> *const c_char;
    fn leveldb_property_value(db: *mut Opaque, name: *const c_char) -> *mut c_char;
}

/// Takes LevelDB's error string, if any.
fn check(err: *mut c_char) -> Result<(), String> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: LevelDB returns a malloc'ed NUL-terminated string that we own and free.
    let msg = unsafe { std::ffi::CStr::from_ptr(err).to_string_lossy().into_owned() };
    // SAFETY: `err` came from LevelDB's allocator.
    unsafe { leveldb_free(err.cast()) };
    Err(msg)
}

/// An open LevelDB.
pub struct LevelEngine {
    db: *mut Opaque,
    opts: *mut Opaque,
    filter: *mut Opaque,
    cache: *mut Opaque,
    wo: *mut Opaque,
    ro: *mut Opaque,
    /// The database directory (its LOG counts compactions).
    dir: std::path::PathBuf,
}

// SAFETY: LevelDB's DB, options and iterators-per-call are thread-safe for concurrent use
// (documented in leveldb/db.h: "A DB is safe for concurrent access from multiple threads").
unsafe impl Send for LevelEngine {}
// SAFETY: as above; the option objects are only read after open.
unsafe impl Sync for LevelEngine {}

impl LevelEngine {
    /// Opens LevelDB at `dir`.
    ///
    /// # Errors
    /// LevelDB's message.
    pub fn open(flags: &Flags, dir: &Path) -> Result<Self, String> {
        let name = CString::new(dir.to_string_lossy().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: plain C API calls on objects we create and own; pointers stay valid until
        // Drop, which destroys them after closing the database.
        unsafe {
            let opts = leveldb_options_create();
            leveldb_options_set_create_if_missing(opts, 1);
            if let Some(v) = flags.write_buffer_size {
                leveldb_options_set_write_buffer_size(opts, v);
            }
            if let Some(v) = flags.target_file_size_base {
                leveldb_options_set_max_file_size(opts, v as usize);
            }
            if let Some(v) = flags.open_files {
                leveldb_options_set_max_open_files(opts, v as c_int);
            }
            if let Some(v) = flags.block_size {
                leveldb_options_set_block_size(opts, v);
            }
            leveldb_options_set_compression(opts, 0);
            let bits = flags.bloom_bits.unwrap_or(10);
            let filter = if bits > 0 {
                leveldb_filterpolicy_create_bloom(bits as c_int)
            } else {
                ptr::null_mut()
            };
            if !filter.is_null() {
                leveldb_options_set_filter_policy(opts, filter);
            }
            let cache =
                leveldb_cache_create_lru(flags.cache_size.unwrap_or(32 << 20).max(0) as usize);
            leveldb_options_set_cache(opts, cache);
            let mut err = ptr::null_mut();
            let db = leveldb_open(opts, name.as_ptr(), &mut err);
            check(err)?;
            let wo = leveldb_writeoptions_create();
            leveldb_writeoptions_set_sync(wo, u8::from(flags.sync));
            let ro = leveldb_readoptions_create();
            Ok(LevelEngine {
                db,
                opts,
                filter,
                cache,
                wo,
                ro,
                dir: dir.to_path_buf(),
            })
        }
    }

    fn iter_scan(&self, start: Option<&[u8]>, reverse: bool, limit: u64) -> (u64, u64) {
        // SAFETY: the iterator is created, used and destroyed here, while `db` is open.
        unsafe {
            let it = leveldb_create_iterator(self.db, self.ro);
            match (start, reverse) {
                (Some(s), _) => leveldb_iter_seek(it, s.as_ptr().cast(), s.len()),
                (None, false) => leveldb_iter_seek_to_first(it),
                (None, true) => leveldb_iter_seek_to_last(it),
            }
            let (mut count, mut bytes) = (0u64, 0u64);
            while leveldb_iter_valid(it) != 0 && count < limit {
                let (mut kl, mut vl) = (0usize, 0usize);
                leveldb_iter_key(it, &mut kl);
                leveldb_iter_value(it, &mut vl);
                bytes += (kl + vl) as u64;
                count += 1;
                if reverse {
                    leveldb_iter_prev(it);
                } else {
                    leveldb_iter_next(it);
                }
            }
            leveldb_iter_destroy(it);
            (count, bytes)
        }
    }

    fn property(&self, name: &str) -> String {
        let Ok(n) = CString::new(name) else {
            return String::new();
        };
        // SAFETY: LevelDB returns NULL or a malloc'ed string we free.
        unsafe {
            let p = leveldb_property_value(self.db, n.as_ptr());
            if p.is_null() {
                return String::new();
            }
            let s = std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned();
            leveldb_free(p.cast());
            s
        }
    }
}

impl Drop for LevelEngine {
    fn drop(&mut self) {
        // SAFETY: destroys what `open` created, the database first.
        unsafe {
            leveldb_close(self.db);
            leveldb_writeoptions_destroy(self.wo);
            leveldb_readoptions_destroy(self.ro);
            leveldb_options_destroy(self.opts);
            if !self.filter.is_null() {
                leveldb_filterpolicy_destroy(self.filter);
            }
            leveldb_cache_destroy(self.cache);
        }
    }
}

impl Engine for LevelEngine {
    fn name(&self) -> String {
        "leveldb".into()
    }

    fn write(&self, batch: &[(&[u8], Option<&[u8]>)]) -> Result<(), String> {
        // SAFETY: the batch lives for this call; key/value slices outlive the put calls.
        unsafe {
            let b = leveldb_writebatch_create();
            for (k, v) in batch {
                match v {
                    Some(v) => leveldb_writebatch_put(
                        b,
                        k.as_ptr().cast(),
                        k.len(),
                        v.as_ptr().cast(),
                        v.len(),
                    ),
                    None => leveldb_writebatch_delete(b, k.as_ptr().cast(), k.len()),
                }
            }
            let mut err = ptr::null_mut();
            leveldb_write(self.db, self.wo, b, &mut err);
            leveldb_writebatch_destroy(b);
            check(err)
        }
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        // SAFETY: LevelDB returns NULL (absent) or a malloc'ed buffer of `vl` bytes we free.
        unsafe {
            let mut vl = 0usize;
            let mut err = ptr::null_mut();
            let p = leveldb_get(
                self.db,
                self.ro,
                key.as_ptr().cast(),
                key.len(),
                &mut vl,
                &mut err,
            );
            check(err)?;
            if p.is_null() {
                return Ok(None);
            }
            let v = std::slice::from_raw_parts(p.cast::<u8>(), vl).to_vec();
            leveldb_free(p.cast());
            Ok(Some(v))
        }
    }

    fn scan(&self, start: &[u8], n: usize) -> Result<(usize, usize), String> {
        let (c, b) = self.iter_scan(Some(start), false, n as u64);
        Ok((c as usize, b as usize))
    }

    fn scan_all(&self, reverse: bool, limit: u64) -> Result<(u64, u64), String> {
        Ok(self.iter_scan(None, reverse, limit))
    }

    fn metrics(&self) -> Metrics {
        // "leveldb.stats": Level Files Size(MB) Time(sec) Read(MB) Write(MB); flushes count
        // in the level they wrote to.
        let text = self.property("leveldb.stats");
        let log = std::fs::read_to_string(self.dir.join("LOG")).unwrap_or_default();
        let (merges, moves) = crate::logscan::compactions(&log);
        let tables = (0..7)
            .map(|l| {
                self.property(&format!("leveldb.num-files-at-level{l}"))
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .sum();
        let mut m = Metrics {
            merges_by_input_level: merges,
            moved_by_input_level: moves,
            tables,
            ..Metrics::default()
        };
        // Read(MB) counts compaction input only; compaction output is what the LOG's
        // "Compacted ... => N bytes" lines add up to (Write(MB) includes flushes).
        let mut read = 0u64;
        for line in text.lines().skip(3) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() == 6 {
                if let Ok(r) = cols[4].parse::<f64>() {
                    read += (r * 1048576.0) as u64;
                }
                if let Ok(w) = cols[5].parse::<f64>() {
                    m.table_bytes += (w * 1048576.0) as u64;
                    m.compaction_bytes_per_level.push((w * 1048576.0) as u64);
                }
            }
        }
        m.compaction_io = Some((read, crate::logscan::compacted_bytes(&log)));
        m
    }

    fn stats_text(&self) -> String {
        self.property("leveldb.stats")
    }

    fn compact_all(&self) -> Result<(), String> {
        // SAFETY: `db` is open for the engine's life; null bounds mean the whole range.
        unsafe { leveldb_compact_range(self.db, std::ptr::null(), 0, std::ptr::null(), 0) };
        Ok(())
    }
}
