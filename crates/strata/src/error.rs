//! The engine's one error type.
//!
//! Every fallible public function returns [`Result<T>`]. The [`ErrorKind`] is coarse on purpose:
//! callers branch on the kind, people read the message. Corruption messages always name the file
//! and the byte offset where the damage was found.

use std::fmt;
use std::path::Path;

/// What went wrong, coarsely. New kinds may be added: match with a wildcard arm.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The operating system (or the injected file system) reported an I/O failure.
    Io,
    /// Bytes on disk failed a checksum or could not be decoded.
    Corruption,
    /// The caller passed something the engine refuses: an oversized key, a bad option.
    InvalidArgument,
    /// The request is valid but not supported by this build or this database's format.
    NotSupported,
    /// The database was closed.
    Closed,
    /// A background job failed or panicked earlier; writes are refused, reads still work.
    Poisoned,
    /// The database is locked by another process (or another `Db` in this process).
    Busy,
    /// A write waited longer than `Options::write_stall_limit` while writes were stopped and
    /// no background work ran: a scheduling bug. The message gives the tree's shape.
    Stalled,
    /// A value store's live values take all the space its options give it and its GC can
    /// free none (the hash store with `HashWhenFull::Refuse`): writes that would add values
    /// are refused; reads, deletes and small writes go on. The message names the options
    /// that size the store.
    NoSpace,
    /// A read-only view ([`crate::Db::open_read_only`]) reached data that the process
    /// writing the database has replaced since the view opened (pages of persistent memory
    /// it reused): the view is too old to answer. Open a new view.
    Stale,
}

/// An error: a kind plus a human-readable message.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    /// The raw `io::ErrorKind` when the error came from the file system (e.g. to tell ENOSPC).
    io_kind: Option<std::io::ErrorKind>,
}

/// `std::result::Result` with strata's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Creates an error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            io_kind: None,
        }
    }

    /// A corruption found in `file` at byte `offset`.
    pub fn corruption(file: &Path, offset: u64, what: impl fmt::Display) -> Self {
        Error::new(
            ErrorKind::Corruption,
            format!("{}: at offset {offset}: {what}", file.display()),
        )
    }

    /// A corruption without a precise location (e.g. a decoded record that makes no sense).
    pub fn corrupt(what: impl Into<String>) -> Self {
        Error::new(ErrorKind::Corruption, what)
    }

    /// An invalid argument.
    pub fn invalid(what: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument, what)
    }

    /// An I/O error on `path` while doing `op`.
    pub fn io(op: &str, path: &Path, err: std::io::Error) -> Self {
        Error {
            kind: ErrorKind::Io,
            message: format!("{op} {}: {err}", path.display()),
            io_kind: Some(err.kind()),
        }
    }

    /// The coarse kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message (names the file and offset for corruption).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The underlying `io::ErrorKind`, if this error came from the file system.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        self.io_kind
    }

    /// Prefixes the message with some context, keeping the kind.
    #[must_use]
    pub fn context(mut self, ctx: impl fmt::Display) -> Self {
        self.message = format!("{ctx}: {}", self.message);
        self
    }

    /// True for [`ErrorKind::Corruption`].
    pub fn is_corruption(&self) -> bool {
        self.kind == ErrorKind::Corruption
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.message)
    }
}

impl std::error::Error for Error {}
