//! Little-endian fixed-width integers and LEB128 varints, the building blocks of every format.
//!
//! Decoders never panic: they take a cursor (`&mut &[u8]`) and return `None` on truncated or
//! overlong input, leaving the caller to turn that into a `Corruption` naming the file.

/// Appends a varint32.
pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, u64::from(v));
}

/// Appends a varint64.
pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Number of bytes `put_varint64(v)` writes.
pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Appends a varint32 length followed by the bytes.
pub fn put_length_prefixed(dst: &mut Vec<u8>, bytes: &[u8]) {
    put_varint64(dst, bytes.len() as u64);
    dst.extend_from_slice(bytes);
}

/// Decodes a varint64, advancing `src`.
pub fn get_varint64(src: &mut &[u8]) -> Option<u64> {
    let mut result = 0u64;
    for (i, &b) in src.iter().enumerate().take(10) {
        let shift = 7 * i as u32;
        if i == 9 && b > 1 {
            return None;
        }
        result |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            *src = &src[i + 1..];
            return Some(result);
        }
    }
    None
}

/// Decodes a varint32, advancing `src`. Values over `u32::MAX` are rejected.
pub fn get_varint32(src: &mut &[u8]) -> Option<u32> {
    // Fast path: one byte.
    if let Some(&b) = src.first() {
        if b < 0x80 {
            *src = &src[1..];
            return Some(u32::from(b));
        }
    }
    get_varint64(src).and_then(|v| u32::try_from(v).ok())
}

/// Decodes a length-prefixed slice, advancing `src`.
pub fn get_length_prefixed<'a>(src: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = usize::try_from(get_varint64(src)?).ok()?;
    if src.len() < len {
        return None;
    }
    let (head, tail) = src.split_at(len);
    *src = tail;
    Some(head)
}

/// Takes `n` bytes, advancing `src`.
pub fn get_bytes<'a>(src: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if src.len() < n {
        return None;
    }
    let (head, tail) = src.split_at(n);
    *src = tail;
    Some(head)
}

/// Decodes a little-endian u32, advancing `src`.
pub fn get_u32(src: &mut &[u8]) -> Option<u32> {
    let b = get_bytes(src, 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Decodes a little-endian u64, advancing `src`.
pub fn get_u64(src: &mut &[u8]) -> Option<u64> {
    let b = get_bytes(src, 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

/// Reads a little-endian u32 at `at`, if in bounds.
pub fn u32_at(buf: &[u8], at: usize) -> Option<u32> {
    let b = buf.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Reads a little-endian u64 at `at`, if in bounds.
pub fn u64_at(buf: &[u8], at: usize) -> Option<u64> {
    let b = buf.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

const MASK_DELTA: u32 = 0xa282_ead8;

/// CRC32C of `data`, masked as LevelDB does so that CRCs of CRCs stay well distributed.
pub fn masked_crc(data: &[u8]) -> u32 {
    mask(crc32c::crc32c(data))
}

/// CRC32C of `a` followed by `b`, masked.
pub fn masked_crc2(a: &[u8], b: &[u8]) -> u32 {
    mask(crc32c::crc32c_append(crc32c::crc32c(a), b))
}

fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip() {
        let values = [
            0u64,
            1,
            127,
            128,
            255,
            300,
            16383,
            16384,
            u32::MAX as u64,
            u64::MAX,
        ];
        let mut buf = Vec::new();
        for &v in &values {
            put_varint64(&mut buf, v);
            assert_eq!(varint_len(v), {
                let mut b = Vec::new();
                put_varint64(&mut b, v);
                b.len()
            });
        }
        let mut src = &buf[..];
        for &v in &values {
            assert_eq!(get_varint64(&mut src), Some(v));
        }
        assert!(src.is_empty());
    }

    #[test]
    fn varint_rejects_truncated_and_overlong() {
        assert_eq!(get_varint64(&mut &[0x80u8][..]), None);
        assert_eq!(get_varint64(&mut &[0xffu8; 11][..]), None);
        let mut buf = Vec::new();
        put_varint64(&mut buf, u64::from(u32::MAX) + 1);
        assert_eq!(get_varint32(&mut &buf[..]), None);
    }

    #[test]
    fn length_prefixed_bounds() {
        let mut buf = Vec::new();
        put_length_prefixed(&mut buf, b"hello");
        assert_eq!(get_length_prefixed(&mut &buf[..]), Some(&b"hello"[..]));
        assert_eq!(get_length_prefixed(&mut &buf[..3]), None);
    }

    #[test]
    fn crc_mask_changes_value() {
        let c = crc32c::crc32c(b"foo");
        assert_ne!(masked_crc(b"foo"), c);
        assert_eq!(masked_crc2(b"fo", b"o"), masked_crc(b"foo"));
    }
}
