//! Test-only helpers for strata: a deterministic RNG, a `BTreeMap` model of the database,
//! random operation generators, and the named option configurations every model, crash and
//! metamorphic test runs under.

pub mod configs;
pub mod copies;
pub mod damage;
pub mod fs;
pub mod model;
pub mod oracle;
pub mod rng;
pub mod tempdir;

pub use configs::{configs, Config};
pub use fs::{count_files, InterceptFs, SlowFile};
pub use model::Model;
pub use rng::Rng;
pub use tempdir::TempDir;
