//! Compaction: choosing what to merge ([`picker`], pure functions over a
//! [`Version`](crate::version::Version)) and merging it ([`job`]). Pickers decide, jobs
//! execute, the database installs the result.

pub mod job;
pub mod picker;
pub mod sizing;

pub use job::CompactionJob;
pub use picker::Compaction;
