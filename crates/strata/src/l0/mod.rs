//! Level-0 layouts. The rest of the engine asks the layout how many sorted runs L0 holds
//! (for write stalls), how urgent an L0 compaction is, and which L0 -> L1 compaction to run.
//! [`Flat`] is LevelDB's layout; OHDB's buckets and MatrixKV's matrix come with later issues.

mod flat;

pub use flat::Flat;

use crate::compaction::{Compaction, PickContext};
use crate::options::{L0Layout, Options};
use crate::version::Version;

/// A layout of level 0.
pub trait Level0: Send + Sync + std::fmt::Debug {
    /// Short name for stats and logs.
    fn name(&self) -> &'static str;
    /// Sorted runs a point read may have to visit in L0 (drives slowdown/stop triggers).
    fn sorted_runs(&self, v: &Version) -> usize;
    /// Compaction urgency of L0; >= 1 means compact now.
    fn score(&self, v: &Version, opts: &Options) -> f64;
    /// The L0 -> L1 compaction to run, if one is possible now.
    fn pick(&self, ctx: &PickContext<'_>) -> Option<Compaction>;
}

/// The layout configured by `layout`.
pub fn layout(layout: L0Layout) -> Box<dyn Level0> {
    match layout {
        L0Layout::Flat => Box::new(Flat),
    }
}
