//! The key space (docs/format/redis-keys.md): one record per key (`K` + key) holding its
//! type, its expiry and, for a string, its value, or for a collection its version and
//! element count; elements under their key and version; an expiry index ordered by time.
//!
//! A collection's elements are keyed by the version of the collection they belong to, so
//! deleting, overwriting or expiring a collection of any size rewrites only its record:
//! the elements of a version no record names any more are orphans, which reads never reach
//! (they look under the record's version) and the compaction filter (`OrphanFilter`)
//! removes as compactions meet them (Kvrocks keeps collections the same way).

use std::sync::atomic::Ordering;
use std::sync::Mutex;

use crate::{lock, Server};

/// The first byte of every record (docs/format/redis-keys.md).
pub(crate) const RECORD: u8 = b'K';
pub(crate) const EXPIRES: u8 = b'X';
pub(crate) const HASH_FIELD: u8 = b'H';
pub(crate) const ZSET_MEMBER: u8 = b'Z';
pub(crate) const ZSET_SCORE: u8 = b'Y';
pub(crate) const LIST_ITEM: u8 = b'L';
pub(crate) const SET_MEMBER: u8 = b'M';
/// The server's own records (`#format`, `#version`).
const SERVER_RECORDS: u8 = b'#';
const FORMAT_KEY: &[u8] = b"#format";
const VERSION_KEY: &[u8] = b"#version";
/// The key-space layout this build writes.
const FORMAT: &[u8] = b"2";
/// The tags of the first layout's records (converted at start: `convert_first_layout`).
const FIRST_LAYOUT_TAGS: [u8; 5] = [b's', b'm', b'h', b'z', b'y'];

/// Type bytes of a key's record.
pub(crate) const STRING: u8 = b's';
pub(crate) const HASH: u8 = b'h';
pub(crate) const ZSET: u8 = b'z';
pub(crate) const LIST: u8 = b'l';
pub(crate) const SET: u8 = b'S';

/// Where a new list's first item goes: pushes at the head count down from here, pushes at
/// the tail up (2^63 either way before they meet an end).
pub(crate) const LIST_MIDDLE: u64 = 1 << 63;

/// Versions are reserved this many at a time (one synced write per block).
const VERSION_BLOCK: u64 = 1 << 20;

/// A key's record, decoded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Meta {
    pub kind: u8,
    /// Milliseconds since the Unix epoch at which the key expires; 0: never.
    pub expire: u64,
    /// A collection's version (its elements are keyed by it); 0 for a string.
    pub version: u64,
    /// A collection's element count.
    pub count: u64,
    /// A string's value.
    pub value: Vec<u8>,
    /// A list's items are at positions [head, tail) (`count` = tail - head).
    pub head: u64,
    pub tail: u64,
}

impl Meta {
    pub(crate) fn string(value: Vec<u8>, expire: u64) -> Meta {
        Meta {
            kind: STRING,
            expire,
            version: 0,
            count: 0,
            value,
            head: 0,
            tail: 0,
        }
    }

    pub(crate) fn collection(kind: u8, version: u64) -> Meta {
        Meta {
            kind,
            expire: 0,
            version,
            count: 0,
            value: Vec::new(),
            head: LIST_MIDDLE,
            tail: LIST_MIDDLE,
        }
    }

    fn decode(v: &[u8]) -> Option<Meta> {
        let kind = *v.first()?;
        let expire = u64::from_le_bytes(v.get(1..9)?.try_into().ok()?);
        if kind == STRING {
            return Some(Meta::string(v[9..].to_vec(), expire));
        }
        let word = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(v.get(at..at + 8)?.try_into().ok()?))
        };
        let (head, tail) = if kind == LIST {
            (word(25)?, word(33)?)
        } else {
            (LIST_MIDDLE, LIST_MIDDLE)
        };
        Some(Meta {
            kind,
            expire,
            version: word(9)?,
            count: word(17)?,
            value: Vec::new(),
            head,
            tail,
        })
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(25 + self.value.len());
        v.push(self.kind);
        v.extend_from_slice(&self.expire.to_le_bytes());
        if self.kind == STRING {
            v.extend_from_slice(&self.value);
        } else {
            v.extend_from_slice(&self.version.to_le_bytes());
            v.extend_from_slice(&self.count.to_le_bytes());
            if self.kind == LIST {
                v.extend_from_slice(&self.head.to_le_bytes());
                v.extend_from_slice(&self.tail.to_le_bytes());
            }
        }
        v
    }

    fn live_at(&self, now: u64) -> bool {
        self.expire == 0 || self.expire > now
    }

    /// TYPE's name for it.
    pub(crate) fn type_name(&self) -> &'static str {
        type_name(self.kind)
    }
}

pub(crate) fn type_name(kind: u8) -> &'static str {
    match kind {
        STRING => "string",
        HASH => "hash",
        ZSET => "zset",
        LIST => "list",
        SET => "set",
        _ => "none",
    }
}

/// The element tags of a collection type (what COPY and RENAME carry over).
pub(crate) fn element_tags(kind: u8) -> &'static [u8] {
    match kind {
        HASH => &[HASH_FIELD],
        ZSET => &[ZSET_MEMBER, ZSET_SCORE],
        LIST => &[LIST_ITEM],
        SET => &[SET_MEMBER],
        _ => &[],
    }
}

/// The type byte of a record's value (SCAN TYPE reads it without decoding the rest).
pub(crate) fn kind_of(value: &[u8]) -> u8 {
    value.first().copied().unwrap_or(0)
}

/// Whether a record's value (as stored) has expired at `now`.
pub(crate) fn expired_at(value: &[u8], now: u64) -> bool {
    value
        .get(1..9)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .is_some_and(|e| e != 0 && e <= now)
}

/// `K` + key: the key's record.
pub(crate) fn record_key(k: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(k.len() + 1);
    v.push(RECORD);
    v.extend_from_slice(k);
    v
}

/// `tag` + key length (u32 BE) + key + version (u64 BE): the prefix of one collection's
/// elements.
pub(crate) fn element_prefix(tag: u8, k: &[u8], version: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(k.len() + 13);
    v.push(tag);
    v.extend_from_slice(&(k.len() as u32).to_be_bytes());
    v.extend_from_slice(k);
    v.extend_from_slice(&version.to_be_bytes());
    v
}

/// The key and version an element record belongs to (None: not an element record).
fn element_owner(record: &[u8]) -> Option<(&[u8], u64)> {
    if !matches!(
        record.first()?,
        &HASH_FIELD | &ZSET_MEMBER | &ZSET_SCORE | &LIST_ITEM | &SET_MEMBER
    ) {
        return None;
    }
    let len = u32::from_be_bytes(record.get(1..5)?.try_into().ok()?) as usize;
    let key = record.get(5..5 + len)?;
    let version = u64::from_be_bytes(record.get(5 + len..13 + len)?.try_into().ok()?);
    Some((key, version))
}

/// The key a record belongs to: a key's record or one of its elements (None for the
/// expiry index and the server's own records).
pub(crate) fn owner(record: &[u8]) -> Option<&[u8]> {
    match record.first()? {
        &RECORD => Some(&record[1..]),
        _ => element_owner(record).map(|(k, _)| k),
    }
}

/// `X` + expiry (u64 BE) + key: the expiry index's entry of a key.
fn expiry_key(expire: u64, k: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(k.len() + 9);
    v.push(EXPIRES);
    v.extend_from_slice(&expire.to_be_bytes());
    v.extend_from_slice(k);
    v
}

/// A random number (xorshift64*, seeded per thread from the clock and the thread): for
/// RANDOMKEY, SRANDMEMBER, SPOP, where Redis uses its own generator too.
pub(crate) fn random_u64() -> u64 {
    thread_local! {
        static STATE: std::cell::Cell<u64> = std::cell::Cell::new({
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            let here = &t as *const u64 as u64;
            (t ^ here.rotate_left(32)) | 1
        });
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The smallest key above every key starting with `prefix`.
pub(crate) fn end_of(prefix: &[u8]) -> Vec<u8> {
    let mut e = prefix.to_vec();
    while let Some(last) = e.pop() {
        if last != 0xff {
            e.push(last + 1);
            return e;
        }
    }
    vec![0xff; prefix.len() + 1]
}

/// The version counter: versions below `reserved` may be handed out (that reservation is
/// durable), `next` is the next one.
#[derive(Default)]
pub(crate) struct Versions {
    next: u64,
    reserved: u64,
}

impl Versions {
    pub(crate) fn new() -> Mutex<Versions> {
        Mutex::new(Versions::default())
    }
}

/// Removes the elements no record names: a collection deleted, overwritten or expired
/// and reaped leaves its elements under a version no record has any more.
pub struct OrphanFilter {
    /// The last owner asked about and whether its version is current (a job offers a
    /// collection's elements in order, so most questions repeat the last one). A version
    /// found gone never comes back (versions are never reused), so an answer "gone" stays
    /// true; an answer "current" may go stale, which only keeps an element one job longer.
    last: Mutex<Option<(Vec<u8>, u64, bool)>>,
}

impl OrphanFilter {
    pub fn new() -> OrphanFilter {
        OrphanFilter {
            last: Mutex::new(None),
        }
    }
}

impl Default for OrphanFilter {
    fn default() -> Self {
        OrphanFilter::new()
    }
}

impl strata::CompactionFilter for OrphanFilter {
    fn name(&self) -> &str {
        "strata-server-orphans"
    }

    fn filter(&self, e: &strata::FilterEntry<'_>) -> strata::Decision {
        let Some((key, version)) = element_owner(e.key()) else {
            return strata::Decision::Keep;
        };
        if let Some((k, v, current)) = lock(&self.last).as_ref() {
            if k == key && *v == version {
                return if *current {
                    strata::Decision::Keep
                } else {
                    strata::Decision::Remove
                };
            }
        }
        let current = match e.get(&record_key(key)) {
            // An expired record still owns its elements until it is reaped: the filter
            // judges no clock.
            Ok(Some(v)) => {
                Meta::decode(&v).is_some_and(|m| m.kind != STRING && m.version == version)
            }
            Ok(None) => false,
            // Unsure: keep.
            Err(_) => return strata::Decision::Keep,
        };
        *lock(&self.last) = Some((key.to_vec(), version, current));
        if current {
            strata::Decision::Keep
        } else {
            strata::Decision::Remove
        }
    }
}

impl Server {
    /// The key's record as stored, expired or not.
    fn stored(&self, ro: &strata::ReadOptions, k: &[u8]) -> strata::Result<Option<Meta>> {
        Ok(self
            .db
            .get_opt(ro, record_key(k))?
            .and_then(|v| Meta::decode(&v)))
    }

    /// Reads from one snapshot of the database, taken now (a record and its elements read
    /// through it agree).
    pub(crate) fn snapshot_reads(&self) -> strata::ReadOptions {
        strata::ReadOptions {
            snapshot: Some(self.db.snapshot()),
            ..Default::default()
        }
    }

    /// The key's live record (None: no such key, or it has expired).
    pub(crate) fn lookup(&self, k: &[u8]) -> strata::Result<Option<Meta>> {
        self.lookup_in(&strata::ReadOptions::default(), k)
    }

    /// `lookup` through `ro` (a snapshot's reads).
    pub(crate) fn lookup_in(
        &self,
        ro: &strata::ReadOptions,
        k: &[u8],
    ) -> strata::Result<Option<Meta>> {
        let now = now_ms();
        Ok(self.stored(ro, k)?.filter(|m| m.live_at(now)))
    }

    /// The key's live record, for a command that holds the key's stripe and may write it:
    /// an expired record is reaped first (deleted with its expiry entry; the key count goes
    /// down), so what the command writes starts from a missing key.
    pub(crate) fn lookup_for_update(&self, k: &[u8]) -> strata::Result<Option<Meta>> {
        let Some(m) = self.stored(&strata::ReadOptions::default(), k)? else {
            return Ok(None);
        };
        if m.live_at(now_ms()) {
            return Ok(Some(m));
        }
        let mut b = strata::WriteBatch::new();
        Self::delete_record(&mut b, k, &m);
        self.write(b)?;
        self.keys_changed(-1);
        self.expired_keys.fetch_add(1, Ordering::Relaxed);
        Ok(None)
    }

    /// Writes `new` as key `k`'s record in `b`, replacing `old` (the live record read
    /// under the key's stripe, or None): the expiry index follows.
    pub(crate) fn put_record(b: &mut strata::WriteBatch, k: &[u8], old: Option<&Meta>, new: &Meta) {
        if let Some(o) = old {
            if o.expire != 0 && o.expire != new.expire {
                b.delete(expiry_key(o.expire, k));
            }
        }
        if new.expire != 0 && old.is_none_or(|o| o.expire != new.expire) {
            b.put(expiry_key(new.expire, k), b"");
        }
        b.put(record_key(k), new.encode());
    }

    /// Deletes key `k` (its record `old`) in `b`: its elements become orphans.
    pub(crate) fn delete_record(b: &mut strata::WriteBatch, k: &[u8], old: &Meta) {
        if old.expire != 0 {
            b.delete(expiry_key(old.expire, k));
        }
        b.delete(record_key(k));
    }

    /// A version no collection has had: for a collection being created.
    pub(crate) fn new_version(&self) -> strata::Result<u64> {
        let mut v = lock(&self.versions);
        if v.next >= v.reserved {
            // The reservation is durable before any version of its block is handed out,
            // so no version is handed out twice across a crash.
            let reserved = v.next + VERSION_BLOCK;
            let mut b = strata::WriteBatch::new();
            b.put(VERSION_KEY, reserved.to_le_bytes());
            self.db.write(
                &strata::WriteOptions {
                    sync: true,
                    ..Default::default()
                },
                b,
            )?;
            v.reserved = reserved;
        }
        let n = v.next;
        v.next += 1;
        Ok(n)
    }

    /// Reads the version reservation, after converting a database of the first layout;
    /// refuses a layout this build does not know.
    pub(crate) fn open_keyspace(&self) -> Result<(), String> {
        let e = |e: strata::Error| format!("reading the key space: {e}");
        let reserved = self
            .db
            .get(VERSION_KEY)
            .map_err(e)?
            .and_then(|v| Some(u64::from_le_bytes(v.get(..8)?.try_into().ok()?)))
            .unwrap_or(0);
        {
            let mut v = lock(&self.versions);
            v.next = reserved;
            v.reserved = reserved;
        }
        match self.db.get(FORMAT_KEY).map_err(e)? {
            Some(f) if f == FORMAT => {}
            Some(f) => {
                return Err(format!(
                    "the database holds strata-server's key-space layout {} and this build \
                     reads layout {}",
                    String::from_utf8_lossy(&f),
                    String::from_utf8_lossy(FORMAT)
                ))
            }
            None => {
                // A new database, or one of the first layout (no format record).
                self.convert_first_layout().map_err(e)?;
                let mut b = strata::WriteBatch::new();
                for tag in FIRST_LAYOUT_TAGS {
                    b.delete_range([tag], [tag + 1]);
                }
                b.put(FORMAT_KEY, FORMAT);
                self.db
                    .write(
                        &strata::WriteOptions {
                            sync: true,
                            ..Default::default()
                        },
                        b,
                    )
                    .map_err(e)?;
            }
        }
        Ok(())
    }

    /// Converts the records of the first key-space layout (strings under `s` + key,
    /// hash and sorted-set metas under `m` + key holding the type and count, elements under
    /// `h`/`z`/`y` + key length + key, with no version) to this one, one key per batch, so
    /// a crash midway leaves every key in one layout or the other and the next start goes
    /// on where this one stopped. Reads no record of this layout and writes none of the
    /// first, so it may run again over what it has done.
    fn convert_first_layout(&self) -> strata::Result<()> {
        let range = |tag: u8, from: Vec<u8>| -> strata::Result<strata::DbIterator> {
            let mut it = self.db.iter(strata::ReadOptions {
                lower_bound: Some(from),
                upper_bound: Some(vec![tag + 1]),
                ..Default::default()
            })?;
            it.seek_to_first();
            Ok(it)
        };
        let old_prefix = |tag: u8, k: &[u8]| {
            let mut v = vec![tag];
            v.extend_from_slice(&(k.len() as u32).to_be_bytes());
            v.extend_from_slice(k);
            v
        };
        let mut converted = 0u64;
        // Strings: many to a batch.
        let mut it = range(b's', vec![b's'])?;
        let mut b = strata::WriteBatch::new();
        while it.valid() {
            let k = &it.key()[1..];
            b.put(record_key(k), Meta::string(it.value().to_vec(), 0).encode());
            b.delete(it.key());
            converted += 1;
            if b.len() >= 2000 {
                self.db
                    .write(&strata::WriteOptions::default(), std::mem::take(&mut b))?;
            }
            it.next();
        }
        it.status()?;
        drop(it);
        self.db.write(&strata::WriteOptions::default(), b)?;
        // Hashes and sorted sets: one batch each, elements and record together.
        let mut metas = Vec::new();
        let mut it = range(b'm', vec![b'm'])?;
        while it.valid() {
            metas.push((it.key()[1..].to_vec(), it.value().to_vec()));
            it.next();
        }
        it.status()?;
        drop(it);
        for (k, v) in metas {
            let kind = match v.first() {
                Some(&HASH) => HASH,
                Some(&ZSET) => ZSET,
                _ => continue,
            };
            let mut m = Meta::collection(kind, self.new_version()?);
            let tags: &[(u8, u8)] = if kind == HASH {
                &[(b'h', HASH_FIELD)]
            } else {
                &[(b'z', ZSET_MEMBER), (b'y', ZSET_SCORE)]
            };
            let mut b = strata::WriteBatch::new();
            for &(old_tag, new_tag) in tags {
                let p = old_prefix(old_tag, &k);
                let np = element_prefix(new_tag, &k, m.version);
                let mut it = range(old_tag, p.clone())?;
                while it.valid() && it.key().starts_with(&p) {
                    let mut nk = np.clone();
                    nk.extend_from_slice(&it.key()[p.len()..]);
                    b.put(nk, it.value());
                    b.delete(it.key());
                    if new_tag != ZSET_SCORE {
                        m.count += 1;
                    }
                    it.next();
                }
                it.status()?;
            }
            let mut mk = vec![b'm'];
            mk.extend_from_slice(&k);
            b.delete(mk);
            if m.count > 0 {
                b.put(record_key(&k), m.encode());
            }
            self.db.write(&strata::WriteOptions::default(), b)?;
            converted += 1;
        }
        if converted > 0 {
            eprintln!(
                "strata-server: converted {converted} keys to key-space layout {}",
                String::from_utf8_lossy(FORMAT)
            );
        }
        Ok(())
    }

    /// The range deletions FLUSHALL makes: everything but the server's own records (the
    /// version reservation must outlive the keys, or a version could be handed out again).
    pub(crate) fn flush_ranges(b: &mut strata::WriteBatch) {
        b.delete_range(b"", [SERVER_RECORDS]);
        b.delete_range([SERVER_RECORDS + 1], [0xffu8]);
    }

    /// One pass of active expiry: reaps up to `most` keys whose expiry has passed, in
    /// expiry order (the index is ordered by time, so due keys are found without looking
    /// at any other); returns how many it reaped.
    pub(crate) fn expire_due(&self, most: usize) -> strata::Result<usize> {
        let now = now_ms();
        let mut it = self.db.iter(strata::ReadOptions {
            lower_bound: Some(vec![EXPIRES]),
            upper_bound: Some(expiry_key(now.saturating_add(1), b"")),
            ..Default::default()
        })?;
        it.seek_to_first();
        let mut due = Vec::new();
        while it.valid() && due.len() < most {
            let entry = it.key();
            if entry.len() >= 9 {
                let at = u64::from_be_bytes(entry[1..9].try_into().expect("8 bytes"));
                due.push((at, entry[9..].to_vec()));
            }
            it.next();
        }
        it.status()?;
        drop(it);
        let mut reaped = 0;
        for (at, k) in due {
            let _g = lock(&self.stripes[crate::stripe_of(&record_key(&k))]);
            let mut b = strata::WriteBatch::new();
            match self.stored(&strata::ReadOptions::default(), &k)? {
                Some(m) if m.expire == at && !m.live_at(now) => {
                    Self::delete_record(&mut b, &k, &m);
                    self.write(b)?;
                    self.keys_changed(-1);
                    self.expired_keys.fetch_add(1, Ordering::Relaxed);
                    reaped += 1;
                }
                // The key changed since the entry was written (a stale entry: none is
                // left behind by the commands, but one costs nothing to drop).
                Some(m) if m.expire == at => {}
                _ => {
                    b.delete(expiry_key(at, &k));
                    self.write(b)?;
                }
            }
        }
        Ok(reaped)
    }

    /// Keys with an expiry (INFO keyspace's `expires`): the index's entries, counted.
    pub(crate) fn count_expiring(&self, most: usize) -> strata::Result<usize> {
        let mut it = self.db.iter(strata::ReadOptions {
            lower_bound: Some(vec![EXPIRES]),
            upper_bound: Some(vec![EXPIRES + 1]),
            ..Default::default()
        })?;
        it.seek_to_first();
        let mut n = 0;
        while it.valid() && n < most {
            n += 1;
            it.next();
        }
        it.status()?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_elements_name_their_owner() {
        let s = Meta::string(b"v".to_vec(), 7);
        assert_eq!(Meta::decode(&s.encode()), Some(s));
        let mut h = Meta::collection(HASH, 42);
        h.count = 3;
        h.expire = 9;
        assert_eq!(Meta::decode(&h.encode()), Some(h.clone()));
        assert!(expired_at(&h.encode(), 9) && !expired_at(&h.encode(), 8));
        let mut e = element_prefix(HASH_FIELD, b"key", 42);
        e.extend_from_slice(b"field");
        assert_eq!(element_owner(&e), Some((&b"key"[..], 42)));
        assert_eq!(element_owner(&record_key(b"key")), None);
        assert_eq!(element_owner(&e[..8]), None);
    }

    /// Compactions drop the elements of versions no record names, and keep the rest.
    #[test]
    fn the_filter_drops_orphans_only() {
        let dir =
            std::env::temp_dir().join(format!("strata-server-orphans-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let db = strata::Db::open(
            &dir,
            strata::Options {
                create_if_missing: true,
                compaction_filter: Some(std::sync::Arc::new(OrphanFilter::new())),
                ..strata::Options::default()
            },
        )
        .unwrap();
        let field = |k: &[u8], version: u64, f: &[u8]| {
            let mut e = element_prefix(HASH_FIELD, k, version);
            e.extend_from_slice(f);
            e
        };
        let mut live = Meta::collection(HASH, 7);
        live.count = 1;
        db.put(record_key(b"h"), live.encode()).unwrap();
        db.put(field(b"h", 7, b"kept"), b"1").unwrap();
        // An older version of the same key, a key with no record, a string's namesake.
        db.put(field(b"h", 6, b"old"), b"1").unwrap();
        db.put(field(b"gone", 3, b"f"), b"1").unwrap();
        db.put(record_key(b"s"), Meta::string(b"v".to_vec(), 0).encode())
            .unwrap();
        db.put(field(b"s", 0, b"f"), b"1").unwrap();
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        let has = |k: Vec<u8>| db.get(k).unwrap().is_some();
        assert!(has(field(b"h", 7, b"kept")));
        assert!(!has(field(b"h", 6, b"old")));
        assert!(!has(field(b"gone", 3, b"f")));
        assert!(!has(field(b"s", 0, b"f")));
        assert!(has(record_key(b"h")) && has(record_key(b"s")));
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
