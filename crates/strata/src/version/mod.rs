//! Versions: which files make up the tree, how that changes, and the manifest that records it
//! (docs/format/manifest.md).

mod edit;
mod level_iter;
pub(crate) mod set;
#[allow(
    clippy::module_inception,
    reason = "a file is named after its type: version/version.rs holds Version"
)]
mod version;

pub use crate::file_meta::FileMeta;
pub use edit::{KeptFiles, L0Record, VersionEdit};
pub(crate) use edit::{Registered, EXPIRING_FEATURE, RANGE_DELETES_FEATURE};
pub use level_iter::level_iterator;
pub(crate) use set::{directories_record, recorded_directories, SyncedWals};
pub use set::{Recovered, VersionSet, MANIFEST_FORMAT_VERSION};
pub use version::Version;
