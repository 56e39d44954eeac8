//! [`WriteBatch`]: a group of puts and deletes applied atomically.
//!
//! The encoded form is exactly what the WAL stores per record (docs/format/wal.md,
//! "Batch record"): `sequence: u64 | count: u32 | entries`, each entry `kind: u8 |
//! varint key_len | key | (varint value_len | value, for Put)`.

use crate::coding::{get_length_prefixed, get_u32, get_u64, put_length_prefixed};
use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueKind};

/// Header: 8-byte sequence + 4-byte count.
pub const HEADER_LEN: usize = 12;

/// Longest key accepted, in bytes.
pub const MAX_KEY_LEN: usize = 64 * 1024;
/// Longest value accepted, in bytes.
pub const MAX_VALUE_LEN: usize = 64 * 1024 * 1024;

/// An atomic group of writes. Later entries for the same key win.
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
    /// Holds entries of kind `Expiring`. In a batch the user built, their expiry fields
    /// hold a time to live (ms), made an expiry when the batch is written
    /// ([`WriteBatch::resolve_expiry`]); in every batch the engine logs, an expiry.
    expiring: bool,
    /// Holds entries whose time to live is not yet an expiry ([`TTL_TAG`]).
    relative: bool,
    /// Holds a range deletion.
    ranges: bool,
}

/// The in-memory tag of an expiring put whose eight bytes are a time to live (ms), until
/// the batch is written ([`WriteBatch::resolve_expiry`] makes it kind `Expiring`, with an
/// expiry): never logged, and refused in a batch read from a WAL.
const TTL_TAG: u8 = 0x80 | ValueKind::Expiring as u8;

/// A time to live in whole milliseconds, rounded up (a positive ttl never becomes zero).
fn ttl_millis(ttl: std::time::Duration) -> u64 {
    u64::try_from(ttl.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "WriteBatch({} entries, {} bytes)",
            self.count,
            self.rep.len()
        )
    }
}

/// One decoded entry of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchEntry<'a> {
    /// Put, Delete, Expiring or RangeDelete.
    pub kind: ValueKind,
    /// The user key.
    pub key: &'a [u8],
    /// The value (empty for Delete; the range's end for RangeDelete). For Expiring, eight bytes (little endian) before the
    /// value: the expiry (ms since the Unix epoch), or a time to live (see `ttl`).
    pub value: &'a [u8],
    /// For Expiring: the eight bytes are a time to live in ms, not an expiry (a batch built
    /// with `put_with_ttl`, not yet written).
    pub ttl: bool,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0; HEADER_LEN],
            count: 0,
            expiring: false,
            relative: false,
            ranges: false,
        }
    }

    /// Upper bound of the bytes one entry with a key and value of these lengths takes in a
    /// batch (kind, two length varints of at most 5 bytes, the bytes): for `with_capacity`.
    pub fn entry_capacity(key_len: usize, value_len: usize) -> usize {
        11 + key_len + value_len
    }

    /// An empty batch with room for `bytes` of entries without reallocating.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(HEADER_LEN + bytes);
        rep.resize(HEADER_LEN, 0);
        WriteBatch {
            rep,
            count: 0,
            expiring: false,
            relative: false,
            ranges: false,
        }
    }

    /// Adds a put of `key` -> `value`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        self.rep.push(ValueKind::Put as u8);
        put_length_prefixed(&mut self.rep, key.as_ref());
        put_length_prefixed(&mut self.rep, value.as_ref());
        self.count += 1;
        self
    }

    /// Adds a put of `key` -> `value` that expires `ttl` after the batch is written: no
    /// read returns it after that, and compactions remove it (docs/design/ttl.md). A `ttl`
    /// of zero writes a value that is never read.
    pub fn put_with_ttl(
        &mut self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        ttl: std::time::Duration,
    ) -> &mut Self {
        self.push_expiring(TTL_TAG, key.as_ref(), ttl_millis(ttl), value.as_ref());
        self
    }

    /// Adds a put of `key` -> `value` that expires at `expiry` (milliseconds since the Unix
    /// epoch, as the database's clock counts them, `Options::clock`): what
    /// `DbIterator::expires_at` reports, for copying an expiring entry as it is.
    pub fn put_expiring_at(
        &mut self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        expiry: u64,
    ) -> &mut Self {
        self.push_expiring(
            ValueKind::Expiring as u8,
            key.as_ref(),
            expiry,
            value.as_ref(),
        );
        self
    }

    /// Appends an expiring entry: `field` is an expiry (`tag` the kind's) or, with
    /// [`TTL_TAG`], a time to live (ms).
    fn push_expiring(&mut self, tag: u8, key: &[u8], field: u64, value: &[u8]) {
        self.rep.push(tag);
        put_length_prefixed(&mut self.rep, key);
        crate::coding::put_varint64(&mut self.rep, 8 + value.len() as u64);
        self.rep.extend_from_slice(&field.to_le_bytes());
        self.rep.extend_from_slice(value);
        self.count += 1;
        self.expiring = true;
        self.relative |= tag == TTL_TAG;
    }

    /// Appends an entry as stored: `value` is what an entry of `kind` holds (for Expiring,
    /// its eight bytes of time first; ignored for Delete). For the write paths that rebuild
    /// a batch.
    pub(crate) fn push_entry(&mut self, kind: ValueKind, key: &[u8], value: &[u8]) {
        match kind {
            ValueKind::Put => {
                self.put(key, value);
            }
            ValueKind::Delete => {
                self.delete(key);
            }
            ValueKind::Pointer => {
                self.put_pointer(key, value);
            }
            ValueKind::RangeDelete => {
                self.delete_range(key, value);
            }
            ValueKind::Expiring => match crate::key::split_expiring(value) {
                Some((at, v)) => self.push_expiring(ValueKind::Expiring as u8, key, at, v),
                // (Never short: the batches rebuilt were read whole.)
                None => debug_assert!(false, "an expiring entry shorter than its expiry"),
            },
        }
    }

    /// Whether the batch holds expiring entries (with expiries, or times to live).
    pub(crate) fn has_expiring(&self) -> bool {
        self.expiring
    }

    /// The batch as the engine logs it: each expiring entry's time to live made an expiry
    /// (`now` plus it, ms since the Unix epoch), and with `ttl` each put made an expiring
    /// one (`WriteOptions::ttl`, `Options::default_ttl`). Unchanged when there is nothing
    /// to do. REQUIRES: a batch the user built (its expiring entries hold times to live).
    pub(crate) fn resolve_expiry(
        self,
        now: &crate::ttl::Now,
        ttl: Option<std::time::Duration>,
    ) -> Result<WriteBatch> {
        if !self.relative && ttl.is_none() {
            return Ok(self);
        }
        let t = now.now();
        let ttl_ms = ttl.map(ttl_millis);
        let mut out = WriteBatch::with_capacity(self.rep.len() - HEADER_LEN + 9 * self.len());
        for e in self.iter() {
            let e = e?;
            match e.kind {
                ValueKind::Put => match ttl_ms {
                    Some(ms) => out.push_expiring(
                        ValueKind::Expiring as u8,
                        e.key,
                        t.saturating_add(ms),
                        e.value,
                    ),
                    None => {
                        out.put(e.key, e.value);
                    }
                },
                ValueKind::Expiring if e.ttl => {
                    let (ms, v) = crate::key::split_expiring(e.value)
                        .ok_or_else(|| Error::corrupt("expiring batch entry without its time"))?;
                    out.push_expiring(ValueKind::Expiring as u8, e.key, t.saturating_add(ms), v);
                }
                // (An expiry already, as in a batch read from a WAL.)
                ValueKind::Expiring
                | ValueKind::Delete
                | ValueKind::Pointer
                | ValueKind::RangeDelete => out.push_entry(e.kind, e.key, e.value),
            }
        }
        Ok(out)
    }

    /// Appends an entry of kind `Pointer` (the value log's write path).
    pub(crate) fn put_pointer(&mut self, key: &[u8], pointer: &[u8]) -> &mut Self {
        self.rep.push(ValueKind::Pointer as u8);
        put_length_prefixed(&mut self.rep, key);
        put_length_prefixed(&mut self.rep, pointer);
        self.count += 1;
        self
    }

    /// Adds a delete of `key`.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        self.rep.push(ValueKind::Delete as u8);
        put_length_prefixed(&mut self.rep, key.as_ref());
        self.count += 1;
        self
    }

    /// Adds a deletion of every key in `[start, end)`: one entry, whatever the number of
    /// keys (docs/design/range-deletes.md). Writing a batch whose `start` is above its
    /// `end` fails with `InvalidArgument`; an empty range (`start == end`) deletes nothing
    /// and adds no entry.
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> &mut Self {
        if start.as_ref() == end.as_ref() {
            return self;
        }
        self.rep.push(ValueKind::RangeDelete as u8);
        put_length_prefixed(&mut self.rep, start.as_ref());
        put_length_prefixed(&mut self.rep, end.as_ref());
        self.count += 1;
        self.ranges = true;
        self
    }

    /// Whether the batch holds a range deletion.
    pub(crate) fn has_range_delete(&self) -> bool {
        self.ranges
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.rep.truncate(HEADER_LEN);
        self.rep[..HEADER_LEN].fill(0);
        self.count = 0;
        self.expiring = false;
        self.relative = false;
        self.ranges = false;
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether the batch has no entries.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Encoded size in bytes (what the WAL will store).
    pub fn encoded_len(&self) -> usize {
        self.rep.len()
    }

    /// Bytes of user data (keys + values) in the batch, for statistics.
    pub fn payload_bytes(&self) -> usize {
        self.rep.len() - HEADER_LEN
    }

    /// Appends every entry of `other`.
    pub fn append(&mut self, other: &WriteBatch) {
        self.rep.extend_from_slice(&other.rep[HEADER_LEN..]);
        self.count += other.count;
        self.expiring |= other.expiring;
        self.relative |= other.relative;
        self.ranges |= other.ranges;
    }

    pub(crate) fn set_sequence(&mut self, seq: SeqNo) {
        self.rep[..8].copy_from_slice(&seq.0.to_le_bytes());
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
    }

    /// A WAL *link record*: an empty batch whose sequence field holds the last sequence
    /// number logged to any earlier WAL. Written first in every WAL, so recovery can tell
    /// when an earlier WAL lost records that a later one follows (docs/format/wal.md,
    /// "Link records"). Replaying it applies nothing.
    pub(crate) fn link(last_logged: SeqNo) -> WriteBatch {
        let mut b = WriteBatch::new();
        b.set_sequence(last_logged);
        b
    }

    /// The sequence of the first entry (set when the batch is committed); for a link
    /// record (no entries), the last sequence logged before its WAL.
    pub fn sequence(&self) -> SeqNo {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.rep[..8]);
        SeqNo(u64::from_le_bytes(b))
    }

    /// The encoded bytes.
    pub fn encoded(&self) -> &[u8] {
        &self.rep
    }

    /// Decodes a batch from WAL bytes, validating every entry.
    ///
    /// # Errors
    /// `Corruption` if the bytes are not a well-formed batch.
    pub fn decode(rep: Vec<u8>) -> Result<WriteBatch> {
        let mut src = &rep[..];
        let (Some(_), Some(count)) = (get_u64(&mut src), get_u32(&mut src)) else {
            return Err(Error::corrupt("write batch shorter than its header"));
        };
        let mut b = WriteBatch {
            rep,
            count,
            expiring: false,
            relative: false,
            ranges: false,
        };
        let mut n = 0u32;
        let (mut expiring, mut ranges) = (false, false);
        for e in b.iter() {
            let e = e?;
            if e.ttl {
                return Err(Error::corrupt(
                    "write batch holds a time to live (only a batch not yet written does)",
                ));
            }
            expiring |= e.kind == ValueKind::Expiring;
            ranges |= e.kind == ValueKind::RangeDelete;
            n += 1;
        }
        b.expiring = expiring;
        b.ranges = ranges;
        if n != count {
            return Err(Error::corrupt(format!(
                "write batch says {count} entries, holds {n}"
            )));
        }
        Ok(b)
    }

    /// Iterates over the entries in order.
    pub fn iter(&self) -> BatchIter<'_> {
        BatchIter {
            src: &self.rep[HEADER_LEN..],
        }
    }

    /// Checks key and value sizes.
    ///
    /// # Errors
    /// `InvalidArgument` naming the limit exceeded.
    pub(crate) fn validate(&self) -> Result<()> {
        for e in self.iter() {
            let e = e?;
            if e.kind == ValueKind::Pointer {
                return Err(Error::invalid(
                    "a batch holds a value pointer (kind 2): only the engine writes those",
                ));
            }
            if e.key.len() > MAX_KEY_LEN {
                return Err(Error::invalid(format!(
                    "key of {} bytes exceeds the {MAX_KEY_LEN}-byte limit",
                    e.key.len()
                )));
            }
            if e.kind == ValueKind::RangeDelete {
                if e.key > e.value {
                    return Err(Error::invalid("a range deletion's start is above its end"));
                }
                if e.value.len() > MAX_KEY_LEN {
                    return Err(Error::invalid(format!(
                        "range end of {} bytes exceeds the {MAX_KEY_LEN}-byte key limit",
                        e.value.len()
                    )));
                }
            }
            if e.value.len() > MAX_VALUE_LEN {
                return Err(Error::invalid(format!(
                    "value of {} bytes exceeds the {MAX_VALUE_LEN}-byte limit",
                    e.value.len()
                )));
            }
        }
        Ok(())
    }
}

/// Iterator over a batch's entries; yields `Corruption` once on malformed bytes.
pub struct BatchIter<'a> {
    src: &'a [u8],
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<BatchEntry<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let (&tag, rest) = self.src.split_first()?;
        self.src = rest;
        let entry = (|| {
            let ttl = tag == TTL_TAG;
            let kind = if ttl {
                ValueKind::Expiring
            } else {
                ValueKind::from_u8(tag)?
            };
            let key = get_length_prefixed(&mut self.src)?;
            let value = match kind {
                ValueKind::Put => get_length_prefixed(&mut self.src)?,
                // (Its eight bytes of time first.)
                ValueKind::Expiring => {
                    Some(get_length_prefixed(&mut self.src)?).filter(|v| v.len() >= 8)?
                }
                ValueKind::Delete => &[][..],
                // Written by the engine only (the value log's write path); `validate`
                // refuses them in the user's batches.
                ValueKind::Pointer => get_length_prefixed(&mut self.src)?,
                // The range's end.
                ValueKind::RangeDelete => get_length_prefixed(&mut self.src)?,
            };
            Some(BatchEntry {
                kind,
                key,
                value,
                ttl,
            })
        })();
        match entry {
            Some(e) => Some(Ok(e)),
            None => {
                self.src = &[];
                Some(Err(Error::corrupt(format!(
                    "bad write batch entry (tag {tag})"
                ))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1").delete(b"b").put(b"", b"");
        b.set_sequence(SeqNo(42));
        let d = WriteBatch::decode(b.encoded().to_vec()).unwrap();
        assert_eq!(d.sequence(), SeqNo(42));
        let e: Vec<_> = d.iter().map(|e| e.unwrap()).collect();
        assert_eq!(e.len(), 3);
        assert_eq!(
            e[1],
            BatchEntry {
                kind: ValueKind::Delete,
                key: b"b",
                value: b"",
                ttl: false,
            }
        );
    }

    #[test]
    fn times_to_live_become_expiries_once_and_never_reach_a_wal() {
        struct At(u64);
        impl crate::ttl::Clock for At {
            fn now_millis(&self) -> u64 {
                self.0
            }
        }
        let now = crate::ttl::Now::new(std::sync::Arc::new(At(1_000)), Default::default());
        let mut b = WriteBatch::new();
        b.put(b"p", b"1")
            .put_with_ttl(b"t", b"2", std::time::Duration::from_micros(1))
            .delete(b"d");
        b.set_sequence(SeqNo(1));
        assert!(
            WriteBatch::decode(b.encoded().to_vec()).is_err(),
            "a time to live logged"
        );
        let r = b.resolve_expiry(&now, None).unwrap();
        let e: Vec<_> = r.iter().map(|e| e.unwrap()).collect();
        assert_eq!((e[1].kind, e[1].ttl), (ValueKind::Expiring, false));
        // (Rounded up: a ttl under a millisecond is one, not zero.)
        assert_eq!(
            crate::key::split_expiring(e[1].value),
            Some((1_001, &b"2"[..]))
        );
        assert_eq!(e[0].kind, ValueKind::Put);
        // As read from a WAL, written again: the expiry stays an expiry.
        let mut r = r;
        r.set_sequence(SeqNo(1));
        let d = WriteBatch::decode(r.encoded().to_vec()).unwrap();
        let again = d.resolve_expiry(&now, None).unwrap();
        let e: Vec<_> = again.iter().map(|e| e.unwrap()).collect();
        assert_eq!(
            crate::key::split_expiring(e[1].value),
            Some((1_001, &b"2"[..]))
        );
        // With a batch ttl every put expires, an own ttl wins.
        let mut b = WriteBatch::new();
        b.put(b"p", b"1")
            .put_with_ttl(b"t", b"2", std::time::Duration::from_millis(5));
        let r = b
            .resolve_expiry(&now, Some(std::time::Duration::from_millis(100)))
            .unwrap();
        let e: Vec<_> = r.iter().map(|e| e.unwrap()).collect();
        assert_eq!(
            crate::key::split_expiring(e[0].value),
            Some((1_100, &b"1"[..]))
        );
        assert_eq!(
            crate::key::split_expiring(e[1].value),
            Some((1_005, &b"2"[..]))
        );
    }

    #[test]
    fn decode_rejects_garbage() {
        let mut b = WriteBatch::new();
        b.put(b"abc", b"def");
        b.set_sequence(SeqNo(1));
        let enc = b.encoded().to_vec();
        for cut in 0..enc.len() {
            assert!(
                WriteBatch::decode(enc[..cut].to_vec()).is_err(),
                "cut {cut}"
            );
        }
        let mut bad = enc.clone();
        bad[HEADER_LEN] = 9;
        assert!(WriteBatch::decode(bad).is_err());
    }
}
