//! strata: an embeddable, persistent, ordered key-value store built on an LSM tree.

pub mod coding;
pub mod error;
pub mod fs;
pub mod wal;

pub use error::{Error, ErrorKind, Result};
