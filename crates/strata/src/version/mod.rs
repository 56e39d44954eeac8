//! Versions: which files make up the tree, how that changes, and the manifest that records it
//! (docs/format/manifest.md).

mod edit;
mod set;
#[allow(
    clippy::module_inception,
    reason = "a file is named after its type: version/version.rs holds Version"
)]
mod version;

pub use edit::VersionEdit;
pub use set::{file_meta_from, Recovered, VersionSet, MANIFEST_FORMAT_VERSION};
pub use version::{level_iterator, FileMeta, ReadCharges, Version};
