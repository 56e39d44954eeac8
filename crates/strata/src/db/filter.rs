//! What a flush or compaction gives the compaction filter of the database
//! (`compaction_filter::FilterEnv`): values behind pointers, read through the job's version,
//! and the database's current state.

use super::DbInner;
use crate::compaction_filter::{FilterEnv, FilterReason, Filtering};
use crate::error::Result;
use crate::key::SeqNo;
use crate::options::ReadOptions;
use crate::snapshot::FilteringJob;
use crate::value::ValuePointer;
use crate::version::Version;

/// One job's view for its filter: the database, and the version whose value files the
/// job's pointers lead into.
pub(crate) struct JobEnv<'a> {
    pub db: &'a DbInner,
    pub version: &'a Version,
}

impl<'a> JobEnv<'a> {
    /// The job's use of the configured filter, if any, for a job that began with the live
    /// `snapshots`.
    pub fn filtering(&'a self, reason: FilterReason, snapshots: &[SeqNo]) -> Option<Filtering<'a>> {
        let f = self.db.opts.compaction_filter.as_deref()?;
        Some(Filtering::new(f, self, reason, snapshots))
    }
}

impl FilterEnv for JobEnv<'_> {
    fn offered(&self, pointer: &[u8]) -> bool {
        // A pointer into a file the version no longer holds is hidden by a newer entry
        // elsewhere (its store collected the file): nothing to offer.
        ValuePointer::decode(pointer).is_ok_and(|p| {
            crate::registry::store(p.store).is_some_and(|s| !s.filtered_by_own_gc())
                && self.version.values.contains_key(&p.file)
        })
    }

    fn value(&self, user_key: &[u8], pointer: &[u8]) -> Result<Vec<u8>> {
        self.db.read_value(self.version, user_key, pointer, true)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        super::read::get(self.db, &ReadOptions::default(), key)
    }
}

impl DbInner {
    /// The live snapshots a flush or compaction keeps the versions of, and, with a
    /// compaction filter, the hold that makes every snapshot taken before the job's result
    /// is installed read the view it was taken on (keep it until then).
    pub(crate) fn job_snapshots(&self) -> (Vec<SeqNo>, Option<FilteringJob>) {
        if self.opts.compaction_filter.is_none() {
            return (self.snapshots.sequences(), None);
        }
        let (seqs, hold) = self.snapshots.begin_filtering();
        (seqs, Some(hold))
    }
}
