//! Constants and small codecs of the table format (docs/format/sstable.md).

use crate::coding::{get_varint64, put_varint64, u32_at, u64_at};

/// After each block: compression type (1) + masked CRC32C (4).
pub const BLOCK_TRAILER_LEN: usize = 5;

/// Fixed footer length at the end of every table.
pub const FOOTER_LEN: usize = 48;

/// "strataSS" little endian: identifies a strata table.
pub const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"strataSS");

/// The table format version this build writes and the highest it reads.
pub const TABLE_FORMAT_VERSION: u32 = 1;

/// Meta-index key of the bloom filter block.
pub const FILTER_KEY: &[u8] = b"filter.bloom";
/// Meta-index key of the properties block.
pub const PROPERTIES_KEY: &[u8] = b"properties";

/// Largest block body accepted when reading (a 64 MiB value plus its key and framing).
pub const MAX_BLOCK_LEN: u64 = 80 << 20;

/// Block compression. On-disk format: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Compression {
    /// Stored as is.
    #[default]
    None = 0,
    /// LZ4 block format, preceded by the uncompressed length (u32 LE).
    Lz4 = 1,
}

impl Compression {
    /// Decodes a compression byte.
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(Compression::None),
            1 => Some(Compression::Lz4),
            _ => None,
        }
    }
}

/// Where a block lives in the file: offset and size (without trailer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockHandle {
    /// File offset of the block.
    pub offset: u64,
    /// Block size, excluding the 5-byte trailer.
    pub size: u64,
}

impl BlockHandle {
    /// Appends the varint encoding.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }

    /// The varint encoding.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(20);
        self.encode_to(&mut v);
        v
    }

    /// Decodes a varint-encoded handle.
    pub fn decode(mut src: &[u8]) -> Option<BlockHandle> {
        let offset = get_varint64(&mut src)?;
        let size = get_varint64(&mut src)?;
        Some(BlockHandle { offset, size })
    }
}

/// The fixed-size footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The meta-index block.
    pub metaindex: BlockHandle,
    /// The index block.
    pub index: BlockHandle,
    /// Format version of the table.
    pub format_version: u32,
}

impl Footer {
    /// Encodes to exactly [`FOOTER_LEN`] bytes.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut b = [0u8; FOOTER_LEN];
        b[0..8].copy_from_slice(&self.metaindex.offset.to_le_bytes());
        b[8..16].copy_from_slice(&self.metaindex.size.to_le_bytes());
        b[16..24].copy_from_slice(&self.index.offset.to_le_bytes());
        b[24..32].copy_from_slice(&self.index.size.to_le_bytes());
        b[32..36].copy_from_slice(&self.format_version.to_le_bytes());
        let crc = crate::coding::masked_crc(&b[..36]);
        b[36..40].copy_from_slice(&crc.to_le_bytes());
        b[40..48].copy_from_slice(&TABLE_MAGIC.to_le_bytes());
        b
    }

    /// Decodes a footer; `Err` says what is wrong.
    pub fn decode(b: &[u8]) -> Result<Footer, &'static str> {
        if b.len() != FOOTER_LEN {
            return Err("footer has the wrong length");
        }
        if u64_at(b, 40) != Some(TABLE_MAGIC) {
            return Err("bad magic number (not a strata table)");
        }
        if u32_at(b, 36) != Some(crate::coding::masked_crc(&b[..36])) {
            return Err("footer checksum mismatch");
        }
        let r = |at| u64_at(b, at).unwrap_or(0);
        Ok(Footer {
            metaindex: BlockHandle {
                offset: r(0),
                size: r(8),
            },
            index: BlockHandle {
                offset: r(16),
                size: r(24),
            },
            format_version: u32_at(b, 32).unwrap_or(0),
        })
    }
}
