//! Where the engine's techniques meet what checks and builds them from the options. For
//! now it holds the one check that needs a technique's own code: [`Options::validate`] runs
//! the options' own field checks (`options/validate.rs`, importing no technique) and then each
//! technique's (the L0 layout's, in its folder), so that the options sit below the
//! techniques in the crate's layers (docs/design/seams.md, ARCHITECTURE.md).

use crate::error::Result;
use crate::options::Options;

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
