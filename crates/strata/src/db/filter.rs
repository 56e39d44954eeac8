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
    /// The job's use of the configured filter and of expiry, for a job that began with
    /// `snaps`: `None` when there is neither a filter nor an expiring entry in the
    /// database.
    pub fn filtering(
        &'a self,
        reason: FilterReason,
        snaps: &JobSnapshots,
    ) -> Option<Filtering<'a>> {
        let f = self.db.opts.compaction_filter.as_deref();
        if f.is_none() && !self.version.expiring {
            return None;
        }
        Some(Filtering::new(f, self, reason, &snaps.seqs, snaps.time))
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

/// What a flush or compaction starts from: the live snapshots it keeps the versions of,
/// the engine's time it judges expiry by (read with them), and, with a compaction filter,
/// the hold that makes every snapshot taken before the job's result is installed read the
/// view it was taken on (keep it until then). Expiry needs no hold: a snapshot the job
/// does not see reads at a time no earlier than the job's, and so finds expired all that
/// the job removes as expired.
pub(crate) struct JobSnapshots {
    pub seqs: Vec<SeqNo>,
    pub time: u64,
    pub hold: Option<FilteringJob>,
}

impl DbInner {
    /// See [`JobSnapshots`].
    pub(crate) fn job_snapshots(&self) -> JobSnapshots {
        if self.opts.compaction_filter.is_none() {
            let (seqs, time) = self.snapshots.sequences_at(|| self.now.now());
            return JobSnapshots {
                seqs,
                time,
                hold: None,
            };
        }
        let (seqs, time, hold) = self.snapshots.begin_filtering(|| self.now.now());
        JobSnapshots {
            seqs,
            time,
            hold: Some(hold),
        }
    }
}
