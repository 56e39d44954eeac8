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

/// A value file's records with their offsets, and where and why the walk stopped short.
pub(crate) type Walk<'a> = (Vec<(usize, Parsed<'a>)>, Option<(usize, &'static str)>);

/// The records of a whole value file's `bytes`, front to back, each with its offset, and
/// where and why the walk stopped short (`None`: at the records' end, or at a value-log
/// segment's zero tail, where a crash cut its head off). A blob file's header and footer
/// are skipped. Lengths past a bad record cannot be trusted, so the walk stops there.
pub(crate) fn walk(bytes: &[u8], kind: super::ValueFileKind) -> Walk<'_> {
    let (mut at, end) = match kind {
        super::ValueFileKind::Blob => (
            super::blob::HEADER_LEN as usize,
            bytes.len().saturating_sub(super::blob::FOOTER_LEN as usize),
        ),
        super::ValueFileKind::VlogSegment => (0, bytes.len()),
    };
    let mut records = Vec::new();
    while at < end {
        match parse(&bytes[at..end]) {
            Ok(r) => {
                let size = r.size;
                records.push((at, r));
                at += size;
            }
            Err(_)
                if kind == super::ValueFileKind::VlogSegment
                    && bytes[at..].iter().all(|&b| b == 0) =>
            {
                break
            }
            Err(what) => return (records, Some((at, what))),
        }
    }
    (records, None)
}
