//! The write-ahead log, and the record log format it shares with the manifest.
//!
//! Write path: the group-commit leader appends one record (an encoded `WriteBatch`) per
//! group, then syncs if any member asked for it. Read path: only recovery reads logs.
//! A log writer never rewrites bytes it has appended.

pub mod format;
mod reader;
mod writer;

pub use reader::{LogEvent, LogReader};
pub use writer::LogWriter;

/// What recovery does when a WAL ends in a partial record or holds a bad checksum.
///
/// Whatever the mode, a record that fails its checksum is never replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WalRecoveryMode {
    /// An incomplete or checksum-failing record at the very end of a log (nothing but zeros
    /// after it) is what a crash during an unsynced append leaves: it is dropped. Damage
    /// followed by more data is `Corruption`. The default.
    #[default]
    TolerateTornTail,
    /// Any incomplete or damaged record is `Corruption`.
    AbsoluteConsistency,
    /// Replay stops at the first damaged or incomplete record, and later logs are ignored:
    /// the database opens at the last consistent point in time (some acknowledged writes may
    /// be lost if the damage was not at the tail).
    PointInTime,
    /// Damaged records are skipped and replay goes on: salvages the most data, but the result
    /// may have holes. Use only to rescue a damaged database.
    SkipAnyCorrupted,
}

#[cfg(test)]
mod tests;
