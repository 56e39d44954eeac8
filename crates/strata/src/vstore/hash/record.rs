//! The hash store's file and record format (docs/format/hash-store.md).
//!
//! A file: a 16-byte header (`strhash\x01`, version u16 LE, group count u16 LE, group u32
//! LE), records, and a
//! 24-byte footer (record count u64 LE, record bytes u64 LE, `strhashE`). A record:
//! `crc u32 LE | kind u8 | seq varint64 | key_len varint32 | value_len varint32 | key |
//! value`, the CRC (masked CRC32C) over everything after it.

use crate::coding::{get_varint32, get_varint64, masked_crc, put_varint32, put_varint64};
use crate::error::{Error, ErrorKind, Result};
use crate::key::SeqNo;

/// First bytes of a hash-store file.
pub(crate) const MAGIC: &[u8; 8] = b"strhash\x01";
/// Last bytes of a complete hash-store file.
pub(crate) const FOOTER_MAGIC: &[u8; 8] = b"strhashE";
/// The format version in the header of a file written whole (by a flush or a GC): a
/// footer ends it.
pub(crate) const VERSION: u16 = 1;
/// The format version in the header of a file written as writes happen
/// (`hash_write_time`): records run to the extent the manifest names, no footer.
pub(crate) const VERSION_WRITE_TIME: u16 = 2;
/// Header: magic + version u16 LE + group count u16 LE + group u32 LE.
pub(crate) const HEADER_LEN: u64 = 16;
/// Footer: record count u64 LE + record bytes u64 LE + magic.
pub(crate) const FOOTER_LEN: u64 = 24;

/// What a record says of its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The key's value, written by the write with its sequence.
    Value = 1,
    /// The key's entry of this sequence is not in this store (deleted, kept inline, or in
    /// another store): older records of the key in the group are dead.
    Tombstone = 2,
    /// The key's value of this sequence is in the cold log (hot/cold separation: a GC found
    /// it written once since the group's last GC and moved it there). No value.
    ColdTag = 3,
}

/// The header of a file of `group` of `groups` written whole (with a footer).
pub(crate) fn header(group: u32, groups: u32) -> [u8; HEADER_LEN as usize] {
    header_of(VERSION, group, groups)
}

/// The header of a file of format `version`, of `group` of `groups`.
pub(crate) fn header_of(version: u16, group: u32, groups: u32) -> [u8; HEADER_LEN as usize] {
    let mut h = [0u8; HEADER_LEN as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..10].copy_from_slice(&version.to_le_bytes());
    h[10..12].copy_from_slice(&(groups as u16).to_le_bytes());
    h[12..16].copy_from_slice(&group.to_le_bytes());
    h
}

/// The format version a file's header names.
pub(crate) fn header_version(bytes: &[u8]) -> Option<u16> {
    if bytes.len() < HEADER_LEN as usize || &bytes[..8] != MAGIC {
        return None;
    }
    Some(u16::from_le_bytes([bytes[8], bytes[9]]))
}

/// The (group, group count) a file's header names.
pub(crate) fn header_group(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < HEADER_LEN as usize || &bytes[..8] != MAGIC {
        return None;
    }
    let groups = u16::from_le_bytes([bytes[10], bytes[11]]);
    let group = u32::from_le_bytes(bytes[12..16].try_into().ok()?);
    Some((group, u32::from(groups)))
}

/// The footer of a file of `records` records taking `bytes`.
pub(crate) fn footer(records: u64, bytes: u64) -> [u8; FOOTER_LEN as usize] {
    let mut f = [0u8; FOOTER_LEN as usize];
    f[..8].copy_from_slice(&records.to_le_bytes());
    f[8..16].copy_from_slice(&bytes.to_le_bytes());
    f[16..].copy_from_slice(FOOTER_MAGIC);
    f
}

/// Appends a record to `buf`; returns its size.
///
/// # Errors
/// `InvalidArgument` for a key, value or record of 4 GiB or more.
pub(crate) fn encode(
    buf: &mut Vec<u8>,
    kind: Kind,
    seq: SeqNo,
    user_key: &[u8],
    value: &[u8],
) -> Result<u32> {
    let len32 = |n: usize| {
        u32::try_from(n).map_err(|_| {
            Error::new(
                ErrorKind::InvalidArgument,
                "a separated value or key of 4 GiB or more",
            )
        })
    };
    let start = buf.len();
    buf.extend_from_slice(&[0; 4]);
    buf.push(kind as u8);
    put_varint64(buf, seq.0);
    put_varint32(buf, len32(user_key.len())?);
    put_varint32(buf, len32(value.len())?);
    buf.extend_from_slice(user_key);
    buf.extend_from_slice(value);
    let crc = masked_crc(&buf[start + 4..]);
    buf[start..start + 4].copy_from_slice(&crc.to_le_bytes());
    len32(buf.len() - start)
}

/// A record as read.
pub(crate) struct Record<'a> {
    pub kind: Kind,
    pub seq: SeqNo,
    pub key: &'a [u8],
    pub value: &'a [u8],
    pub size: usize,
}

/// The record at the start of `bytes` (which may go on past it), or what is wrong with it.
pub(crate) fn parse(bytes: &[u8]) -> std::result::Result<Record<'_>, &'static str> {
    parse_checked(bytes, true)
}

/// [`parse`] of a record whose checksum was checked in these very bytes already (a GC
/// re-reading a record its walk found): the value is not hashed a second time.
pub(crate) fn parse_walked(bytes: &[u8]) -> std::result::Result<Record<'_>, &'static str> {
    parse_checked(bytes, false)
}

fn parse_checked(bytes: &[u8], check: bool) -> std::result::Result<Record<'_>, &'static str> {
    if bytes.len() < 8 {
        return Err("shorter than a record header");
    }
    let kind = match bytes[4] {
        1 => Kind::Value,
        2 => Kind::Tombstone,
        3 => Kind::ColdTag,
        _ => return Err("unknown record kind"),
    };
    let mut src = &bytes[5..];
    let seq = get_varint64(&mut src).ok_or("sequence")?;
    let klen = get_varint32(&mut src).ok_or("key length")? as usize;
    let vlen = get_varint32(&mut src).ok_or("value length")? as usize;
    let head = bytes.len() - src.len();
    let size = head
        .checked_add(klen)
        .and_then(|s| s.checked_add(vlen))
        .ok_or("lengths run past the record")?;
    if size > bytes.len() {
        return Err("lengths run past the record");
    }
    let stored = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    if check && masked_crc(&bytes[4..size]) != stored {
        return Err("checksum mismatch");
    }
    Ok(Record {
        kind,
        seq: SeqNo(seq),
        key: &bytes[head..head + klen],
        value: &bytes[head + klen..size],
        size,
    })
}

/// A file's records with their offsets, and where and why the walk stopped short.
pub(crate) type Walk<'a> = (Vec<(usize, Record<'a>)>, Option<(usize, &'static str)>);

/// The records of a whole file's `bytes` between header and footer, each with its offset,
/// and where and why the walk stopped short. A file that is not framed as one (magic,
/// footer) stops at 0.
pub(crate) fn walk(bytes: &[u8]) -> Walk<'_> {
    if header_version(bytes) == Some(VERSION_WRITE_TIME) {
        return walk_write_time(bytes);
    }
    let (h, f) = (HEADER_LEN as usize, FOOTER_LEN as usize);
    if bytes.len() < h + f || &bytes[..8] != MAGIC || &bytes[bytes.len() - 8..] != FOOTER_MAGIC {
        return (
            Vec::new(),
            Some((0, "not a complete hash-store file (header or footer)")),
        );
    }
    let end = bytes.len() - f;
    let mut at = h;
    let mut out = Vec::new();
    while at < end {
        match parse(&bytes[at..end]) {
            Ok(r) => {
                let size = r.size;
                out.push((at, r));
                at += size;
            }
            Err(what) => return (out, Some((at, what))),
        }
    }
    (out, None)
}

/// Where the last of `records` (a walk's) ends: the header's end if there are none.
pub(crate) fn records_end(records: &[(usize, Record<'_>)]) -> usize {
    records
        .last()
        .map_or(HEADER_LEN as usize, |(at, r)| at + r.size)
}

/// The records of a write-time file (`VERSION_WRITE_TIME`, no footer) from its header to
/// the end of `bytes` (the caller cuts them to the extent the manifest names). A last
/// record that runs past the end is a torn tail (a crash while it was appended), not
/// damage: the walk stops there without a reason.
fn walk_write_time(bytes: &[u8]) -> Walk<'_> {
    let mut at = HEADER_LEN as usize;
    let mut out = Vec::new();
    while at < bytes.len() {
        match parse(&bytes[at..]) {
            Ok(r) => {
                let size = r.size;
                out.push((at, r));
                at += size;
            }
            Err("shorter than a record header" | "lengths run past the record") => {
                return (out, None)
            }
            Err(what) => return (out, Some((at, what))),
        }
    }
    (out, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_every_damage_is_caught() {
        let mut buf = Vec::new();
        let n = encode(&mut buf, Kind::Value, SeqNo(77), b"key", b"value").unwrap();
        assert_eq!(n as usize, buf.len());
        let r = parse(&buf).unwrap();
        assert_eq!(
            (r.kind, r.seq, r.key, r.value, r.size),
            (
                Kind::Value,
                SeqNo(77),
                &b"key"[..],
                &b"value"[..],
                buf.len()
            )
        );
        for i in 0..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x10;
            assert!(parse(&bad).is_err(), "byte {i}");
        }
        for cut in 0..buf.len() {
            assert!(parse(&buf[..cut]).is_err(), "cut {cut}");
        }
        let mut t = Vec::new();
        encode(&mut t, Kind::Tombstone, SeqNo(1), b"", b"").unwrap();
        assert_eq!(parse(&t).unwrap().kind, Kind::Tombstone);
    }
}
