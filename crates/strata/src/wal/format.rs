//! Constants of the log format shared by the WAL and the manifest (docs/format/wal.md).

/// Logs are cut into blocks of this many bytes; no fragment crosses a block boundary.
pub const BLOCK_SIZE: usize = 32 * 1024;

/// checksum (4) + length (2) + type (1).
pub const HEADER_SIZE: usize = 7;

/// Fragment types. On-disk format: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum FragmentType {
    /// Reserved: zero-filled (preallocated) space.
    Zero = 0,
    /// A whole record.
    Full = 1,
    /// The first fragment of a record.
    First = 2,
    /// A middle fragment.
    Middle = 3,
    /// The last fragment.
    Last = 4,
}

impl FragmentType {
    /// Decodes a type byte.
    pub fn from_u8(b: u8) -> Option<Self> {
        Some(match b {
            0 => FragmentType::Zero,
            1 => FragmentType::Full,
            2 => FragmentType::First,
            3 => FragmentType::Middle,
            4 => FragmentType::Last,
            _ => return None,
        })
    }
}
