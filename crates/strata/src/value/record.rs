//! The record format blob files and value-log segments share (docs/format/blob-file.md):
//! `crc: u32 LE | key_len: varint32 | value_len: varint32 | key | value`, the CRC (masked
//! CRC32C) over everything after it.

use crate::coding::{get_varint32, masked_crc, put_varint32};
use crate::error::{Error, ErrorKind, Result};

/// Appends the record of `user_key`'s `value` to `buf`; returns its size.
///
/// # Errors
/// `InvalidArgument` for a key, value or record of 4 GiB or more.
pub(crate) fn encode(buf: &mut Vec<u8>, user_key: &[u8], value: &[u8]) -> Result<u32> {
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
    put_varint32(buf, len32(user_key.len())?);
    put_varint32(buf, len32(value.len())?);
    buf.extend_from_slice(user_key);
    buf.extend_from_slice(value);
    let crc = masked_crc(&buf[start + 4..]);
    buf[start..start + 4].copy_from_slice(&crc.to_le_bytes());
    len32(buf.len() - start)
}

/// A record as read: its key, its value and its size.
pub(crate) struct Parsed<'a> {
    pub key: &'a [u8],
    pub value: &'a [u8],
    pub size: usize,
}

/// The record at the start of `bytes` (which may go on past it), or what is wrong with it.
pub(crate) fn parse(bytes: &[u8]) -> std::result::Result<Parsed<'_>, &'static str> {
    if bytes.len() < 6 {
        return Err("shorter than a record header");
    }
    let mut src = &bytes[4..];
    let klen = get_varint32(&mut src).ok_or("key length")? as usize;
    let vlen = get_varint32(&mut src).ok_or("value length")? as usize;
    let head = bytes.len() - src.len();
    let size = head + klen + vlen;
    if size > bytes.len() {
        return Err("lengths run past the record");
    }
    let stored = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    if masked_crc(&bytes[4..size]) != stored {
        return Err("checksum mismatch");
    }
    Ok(Parsed {
        key: &bytes[head..head + klen],
        value: &bytes[head + klen..size],
        size,
    })
}

/// Decodes the record `bytes` read at `p`, checking it is `user_key`'s and exactly `p`'s
/// size; errors name `path` and the offset.
///
/// # Errors
/// `Corruption` for a damaged record or another key's.
pub(crate) fn decode_checked<'a>(
    bytes: &'a [u8],
    user_key: &[u8],
    path: &std::path::Path,
    p: &super::ValuePointer,
) -> Result<&'a [u8]> {
    let bad = |what: &str| Error::corruption(path, p.offset, format!("value record: {what}"));
    let r = parse(bytes).map_err(bad)?;
    if r.size != bytes.len() {
        return Err(bad("lengths do not add up to the record size"));
    }
    if r.key != user_key {
        return Err(bad("the record belongs to another key"));
    }
    Ok(r.value)
}

/// A value file's records with their offsets, and where and why the walk stopped short.
pub(crate) type Walk<'a> = (Vec<(usize, Parsed<'a>)>, Option<(usize, &'static str)>);

/// The records of `bytes[start..end]`, front to back, each with its offset in `bytes`, and
/// where and why the walk stopped short (`None`: at `end`, or, with `zero_tail`, at a run
/// of zeros to the end of `bytes`: the unwritten tail of a file a crash cut off). Lengths
/// past a bad record cannot be trusted, so the walk stops there.
pub(crate) fn walk(bytes: &[u8], start: usize, end: usize, zero_tail: bool) -> Walk<'_> {
    let mut at = start;
    let mut records = Vec::new();
    while at < end {
        match parse(&bytes[at..end]) {
            Ok(r) => {
                let size = r.size;
                records.push((at, r));
                at += size;
            }
            Err(_) if zero_tail && bytes[at..].iter().all(|&b| b == 0) => break,
            Err(what) => return (records, Some((at, what))),
        }
    }
    (records, None)
}
