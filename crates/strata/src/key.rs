//! Internal keys: a user key followed by an 8-byte trailer `(sequence << 8) | kind`, little
//! endian. Internal keys order by user key ascending, then sequence descending, so the newest
//! version of a key comes first. Format: docs/format/sstable.md ("Internal key").

use std::cmp::Ordering;

/// A sequence number: the order in which writes happened. 56 bits are usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SeqNo(pub u64);

impl SeqNo {
    /// The largest sequence number a trailer can hold.
    pub const MAX: SeqNo = SeqNo((1 << 56) - 1);
    /// Zero: before every write.
    pub const ZERO: SeqNo = SeqNo(0);

    /// The next sequence number.
    #[must_use]
    pub fn next(self) -> SeqNo {
        SeqNo(self.0 + 1)
    }
}

/// What an internal-key entry is. On-disk format: never renumber.
///
/// Room is reserved for later issues: references into coalesced groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ValueKind {
    /// A tombstone: the key was deleted at this sequence.
    Delete = 0,
    /// An inline value.
    Put = 1,
    /// A value kept in the value store; the entry's value is an encoded
    /// `ValuePointer` (docs/format/value-pointer.md).
    Pointer = 2,
    /// An inline value that expires: the entry's value is the expiry (milliseconds since
    /// the Unix epoch, u64 little endian) followed by the user's value
    /// (docs/design/ttl.md). Never separated into a value store nor coalesced.
    Expiring = 3,
    /// A range tombstone (`delete_range`): the key is the range's first key, the value its
    /// end (exclusive). Only in write batches, WALs and range-tombstone files, never among
    /// the point entries of a memtable, table or L0 row (docs/design/range-deletes.md).
    RangeDelete = 4,
}

impl ValueKind {
    /// Decodes a kind byte.
    pub fn from_u8(b: u8) -> Option<ValueKind> {
        match b {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Put),
            2 => Some(ValueKind::Pointer),
            3 => Some(ValueKind::Expiring),
            4 => Some(ValueKind::RangeDelete),
            _ => None,
        }
    }
}

/// The bytes an expiring entry stores: `expiry` (ms since the Unix epoch) before `value`.
pub fn expiring_value(expiry: u64, value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(8 + value.len());
    v.extend_from_slice(&expiry.to_le_bytes());
    v.extend_from_slice(value);
    v
}

/// The expiry and the user's value of an entry of kind `Expiring`; `None` when it is too
/// short to hold an expiry (a damaged entry).
pub fn split_expiring(stored: &[u8]) -> Option<(u64, &[u8])> {
    let (e, v) = stored.split_first_chunk::<8>()?;
    Some((u64::from_le_bytes(*e), v))
}

/// Packs a sequence and kind into a trailer.
pub fn pack_trailer(seq: SeqNo, kind: ValueKind) -> u64 {
    (seq.0 << 8) | kind as u64
}

/// Appends the internal key for (`user_key`, `seq`, `kind`) to `dst`.
pub fn append_internal_key(dst: &mut Vec<u8>, user_key: &[u8], seq: SeqNo, kind: ValueKind) {
    dst.extend_from_slice(user_key);
    dst.extend_from_slice(&pack_trailer(seq, kind).to_le_bytes());
}

/// The kind byte of a seek key: above every real kind, so a seek key sorts before every entry
/// of the same user key and sequence.
const SEEK_KIND: u64 = 0xff;

/// The internal key to seek to for the newest version of `user_key` visible at `seq`.
pub fn seek_key(user_key: &[u8], seq: SeqNo) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + 8);
    k.extend_from_slice(user_key);
    k.extend_from_slice(&((seq.0 << 8) | SEEK_KIND).to_le_bytes());
    k
}

/// Builds an internal key.
pub fn internal_key(user_key: &[u8], seq: SeqNo, kind: ValueKind) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + 8);
    append_internal_key(&mut k, user_key, seq, kind);
    k
}

/// The user-key part of an internal key. REQUIRES: `ikey.len() >= 8` (checked by decoders).
#[inline]
pub fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(8)]
}

/// The trailer of an internal key (0 if the key is too short).
#[inline]
pub fn trailer(ikey: &[u8]) -> u64 {
    let n = ikey.len();
    if n < 8 {
        return 0;
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(&ikey[n - 8..]);
    u64::from_le_bytes(b)
}

/// Parsed view of an internal key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    /// The user key.
    pub user_key: &'a [u8],
    /// The sequence number.
    pub seq: SeqNo,
    /// The kind.
    pub kind: ValueKind,
}

/// Parses an internal key; `None` if it is too short or has an unknown kind.
pub fn parse(ikey: &[u8]) -> Option<ParsedKey<'_>> {
    if ikey.len() < 8 {
        return None;
    }
    let t = trailer(ikey);
    Some(ParsedKey {
        user_key: user_key(ikey),
        seq: SeqNo(t >> 8),
        kind: ValueKind::from_u8(t as u8)?,
    })
}

/// Compares internal keys: user key ascending, then trailer descending.
#[inline]
pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    compare_parts(a, user_key(b), trailer(b))
}

/// Compares the internal key `ikey` with the internal key (`user_key`, `trailer`) without
/// building the latter.
#[inline]
pub fn compare_parts(ikey: &[u8], user_key_b: &[u8], trailer_b: u64) -> Ordering {
    match compare_bytes(user_key(ikey), user_key_b) {
        Ordering::Equal => trailer_b.cmp(&trailer(ikey)),
        o => o,
    }
}

/// Bytewise comparison, as `a.cmp(b)`, tuned for the short keys of a key-value store: eight
/// bytes at a time as big-endian words, inline, where a `memcmp` call costs more than the
/// comparison itself for keys of a few dozen bytes (it showed as 10 % of a fillrandom
/// profile). Long keys go to `memcmp`.
#[inline]
pub fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    if n > 64 {
        return a.cmp(b);
    }
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_be_bytes(a[i..i + 8].try_into().unwrap_or([0; 8]));
        let y = u64::from_be_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    while i < n {
        if a[i] != b[i] {
            return a[i].cmp(&b[i]);
        }
        i += 1;
    }
    a.len().cmp(&b.len())
}

/// A shortest internal key `k` with `a <= k < b` (for index separators); `b` may be empty
/// to mean "no upper neighbour" (then a short successor of `a` is returned).
pub fn separator(a: &[u8], b: Option<&[u8]>) -> Vec<u8> {
    let ua = user_key(a);
    let shorter = match b {
        Some(b) => {
            let ub = user_key(b);
            let common = ua.iter().zip(ub).take_while(|(x, y)| x == y).count();
            if common < ua.len().min(ub.len()) {
                let byte = ua[common];
                if byte < 0xff && byte + 1 < ub[common] {
                    let mut s = ua[..=common].to_vec();
                    s[common] += 1;
                    Some(s)
                } else {
                    None
                }
            } else {
                None
            }
        }
        None => ua.iter().position(|&x| x != 0xff).map(|i| {
            let mut s = ua[..=i].to_vec();
            s[i] += 1;
            s
        }),
    };
    match shorter {
        // A strictly larger user key with the max trailer sorts after every version of `ua`.
        Some(s) if s.as_slice() > ua => seek_key(&s, SeqNo::MAX),
        _ => a.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_bytes_matches_slice_order() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for _ in 0..200_000 {
            let la = (next() % 80) as usize;
            let lb = (next() % 80) as usize;
            // Few distinct byte values so that long common prefixes are frequent.
            let a: Vec<u8> = (0..la).map(|_| (next() % 3) as u8 * 0x7f).collect();
            let mut b: Vec<u8> = (0..lb).map(|_| (next() % 3) as u8 * 0x7f).collect();
            if next() % 4 == 0 {
                b = a.clone();
                if !b.is_empty() && next() % 2 == 0 {
                    let i = (next() as usize) % b.len();
                    b[i] = b[i].wrapping_add(1);
                }
            }
            assert_eq!(compare_bytes(&a, &b), a.cmp(&b), "{a:?} {b:?}");
        }
    }

    #[test]
    fn compare_parts_matches_compare() {
        let a = internal_key(b"key1", SeqNo(5), ValueKind::Put);
        for (uk, seq) in [
            (&b"key1"[..], 5),
            (b"key1", 4),
            (b"key1", 6),
            (b"key0", 9),
            (b"key2", 1),
        ] {
            let b = internal_key(uk, SeqNo(seq), ValueKind::Put);
            let t = pack_trailer(SeqNo(seq), ValueKind::Put);
            assert_eq!(compare_parts(&a, uk, t), compare(&a, &b));
        }
    }

    #[test]
    fn ordering_newest_first() {
        let a = internal_key(b"k", SeqNo(5), ValueKind::Put);
        let b = internal_key(b"k", SeqNo(4), ValueKind::Put);
        let c = internal_key(b"l", SeqNo(9), ValueKind::Put);
        assert_eq!(compare(&a, &b), Ordering::Less);
        assert_eq!(compare(&b, &c), Ordering::Less);
        let p = parse(&a).unwrap();
        assert_eq!(
            (p.user_key, p.seq, p.kind),
            (&b"k"[..], SeqNo(5), ValueKind::Put)
        );
    }

    #[test]
    fn separator_bounds() {
        let cases: &[(&[u8], Option<&[u8]>)] = &[
            (b"abc", Some(b"abz")),
            (b"abc", Some(b"abd")),
            (b"ab", Some(b"abc")),
            (b"\xff\xff", None),
            (b"a\xff", Some(b"b")),
            (b"", Some(b"a")),
            (b"foo", None),
        ];
        for &(a, b) in cases {
            let ka = internal_key(a, SeqNo(3), ValueKind::Put);
            let kb = b.map(|b| internal_key(b, SeqNo(7), ValueKind::Put));
            let s = separator(&ka, kb.as_deref());
            assert_ne!(compare(&ka, &s), Ordering::Greater, "{a:?} {b:?}");
            if let Some(kb) = &kb {
                assert_eq!(compare(&s, kb), Ordering::Less, "{a:?} {b:?}");
            }
        }
    }
}
