//! Where the engine's techniques are registered, and meet what checks and builds them from
//! the options: the one file a new value store adds its line to ([`STORES`]), above every
//! store and every layer that uses the list, which reaches them as a parameter (the
//! version as a list of formats, [`formats`]; the stores' environment as a list of
//! stores). [`Options::validate`] runs the options' own field checks
//! (`options/validate.rs`, importing no technique) and then each technique's (the L0
//! layout's, in its folder), so that the options sit below the techniques in the crate's
//! layers (docs/design/seams.md, ARCHITECTURE.md).

use std::sync::LazyLock;

use crate::error::Result;
use crate::filename::FileType;
use crate::options::Options;
use crate::value::{Formats, StoreId, ValueFormat};
use crate::vstore::{Store, StoreList};

/// Every value store this build knows, in registration order (the order their format
/// features are listed in a manifest): the one line a new store adds.
pub(crate) static STORES: StoreList = &[
    &crate::vstore::blob::BlobFiles,
    &crate::vstore::vlog::ValueLog,
    &crate::vstore::hash::HashStore,
    &crate::coalesce::groups::Groups,
];

/// The formats of [`STORES`], in the same order: what the version reads manifests with.
pub(crate) fn formats() -> Formats {
    static FORMATS: LazyLock<Vec<&'static dyn ValueFormat>> =
        LazyLock::new(|| STORES.iter().map(|&s| s as &dyn ValueFormat).collect());
    &FORMATS
}

/// The registered store with id `id`.
pub(crate) fn store(id: StoreId) -> Option<&'static dyn Store> {
    crate::vstore::store(STORES, id)
}

/// The registered store whose files end in `.ext`.
pub(crate) fn store_by_extension(ext: &str) -> Option<&'static dyn Store> {
    STORES.iter().copied().find(|s| s.extension() == ext)
}

/// Parses a file name, a value file's by the registered stores' extensions; `None` for
/// names strata does not own.
pub(crate) fn parse_file_name(name: &str) -> Option<FileType> {
    crate::filename::parse_with(name, &|ext| store_by_extension(ext).map(|s| s.id()))
}

impl Options {
    /// Checks every field: the options' own checks, then the configured L0 layout's.
    ///
    /// # Errors
    /// `InvalidArgument` naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        self.validate_fields()?;
        crate::l0::check_options(self)
    }
}
