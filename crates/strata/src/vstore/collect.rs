//! What a store's GC job reaches of the database ([`GcContext`], [`GcView`]) and the job
//! itself ([`ValueGc`]): `db/value_gc.rs` implements the context, the stores the jobs.

use std::sync::Arc;

use crate::compaction_filter::Outcome;
use crate::error::Result;
use crate::key::SeqNo;
use crate::memtable::Lookup;
use crate::stats::Stats;
use crate::version::{Version, VersionEdit};

use super::*;

/// A live value a store's GC moves, written again through the write path unless a user
/// wrote its key after the GC found it live ([`GcContext::watch`]): a put of the value
/// (which the configured write-time store may separate), a value the store already
/// rewrote in its own files, given by its new encoded `ValuePointer`, or the key's
/// deletion (the compaction filter removed it: [`GcContext::filter`]).
pub(crate) struct Relocated {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub kind: Move,
}

/// How a [`Relocated`] key is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Move {
    /// A put of `value`.
    Value,
    /// A pointer: `value` is the encoded `ValuePointer`.
    Pointer,
    /// A tombstone (`value` is empty).
    Delete,
}

impl Relocated {
    /// What a GC step writes for a live `value` of `key` the compaction filter decided on
    /// (`outcome`): `None` when the filter keeps it (the store moves it as it would).
    pub fn filtered(key: &[u8], outcome: Outcome) -> Option<Relocated> {
        let (value, kind) = match outcome {
            Outcome::Keep => return None,
            Outcome::Remove | Outcome::Expire => (Vec::new(), Move::Delete),
            // (Only values a store keeps are offered here: never an expiring one.)
            Outcome::Change(_, v) => (v, Move::Value),
        };
        Some(Relocated {
            key: key.to_vec(),
            value,
            kind,
        })
    }
}

/// What a store's GC job reaches of the database (the database implements it): the store
/// imports nothing from `db`.
pub(crate) trait GcContext {
    /// The current version.
    fn version(&self) -> Arc<Version>;
    /// Whether the database is closing (a GC step gives up).
    fn closing(&self) -> bool;
    /// The database's counters.
    fn stats(&self) -> &Stats;
    /// From now on the write leader notes the keys users write, until the next
    /// `write_relocated` (which skips them) or `unwatch`.
    fn watch(&self);
    /// Stops noting user writes.
    fn unwatch(&self);
    /// The newest entry of `user_key` as stored (pointers unresolved).
    ///
    /// # Errors
    /// Read errors.
    fn newest_entry(&self, user_key: &[u8]) -> Result<Option<Lookup>>;
    /// The memtables and the version as of now, together: taken after `watch`, every user
    /// write is either in the view's memtables, in the view's version, or watched.
    fn view(&self) -> Box<dyn GcView + '_>;
    /// Writes `moved` through the write path, synced, skipping the keys users wrote since
    /// `watch`. Returns the sequence after it.
    ///
    /// # Errors
    /// Write errors.
    fn write_relocated(&self, moved: Vec<Relocated>) -> Result<SeqNo>;
    /// Writes `moved` as `write_relocated` does, and the watch goes on: a part of a step
    /// that writes more (its last part through `write_relocated`).
    ///
    /// # Errors
    /// Write errors.
    fn write_relocated_part(&self, moved: Vec<Relocated>) -> Result<()>;
    /// How the job names the files it writes in the manifest (reserved numbers are spared
    /// by obsolete-file deletion until named or released).
    fn files(&self) -> &dyn NewValueFiles;
    /// Whether a snapshot below `seq` is live.
    fn snapshot_below(&self, seq: SeqNo) -> bool;
    /// The compaction filter's decision on the live `value` of `key` that a step is about
    /// to move (`Keep` without a filter). A removed or changed value is not moved: the
    /// step writes the key's deletion or its new value through the write path instead
    /// ([`Relocated::filtered`]), a write like any other, which no snapshot taken before
    /// it sees, while the files the step replaces stay for the snapshots that read them.
    ///
    /// # Errors
    /// The filter panicked.
    fn filter(&self, key: &[u8], value: &[u8]) -> Result<Outcome>;
    /// Logs `edit` to the manifest and installs the version it makes; writers paced to
    /// the GC go on.
    ///
    /// # Errors
    /// The manifest write's (the caller poisons the database).
    fn apply(&self, edit: VersionEdit) -> Result<()>;
}

/// The memtables and version of one moment ([`GcContext::view`]).
pub(crate) trait GcView {
    /// The version.
    fn version(&self) -> &Arc<Version>;
    /// The newest entry of `user_key` in the memtables (none: the version holds it, if
    /// anything does).
    fn memtable_entry(&self, user_key: &[u8]) -> Option<Lookup>;
    /// Whether a range deletion of the view (memtables or version) covers `user_key`:
    /// what a store that judges records by its own files must then ask the LSM about
    /// (`GcContext::newest_entry` honours range deletions), since none of its records
    /// says so.
    fn ranges_touch(&self, user_key: &[u8]) -> bool;
}

/// A store's GC job, run on a thread of its own (`bg`): one per database and store.
pub(crate) trait ValueGc: Send + Sync {
    /// The thread's name.
    fn thread_name(&self) -> &'static str;
    /// The store whose files it collects.
    fn store(&self) -> StoreId;
    /// Its counters since open, by name (`strata.value-stores`).
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// Whether a step would collect something in `v`.
    fn due(&self, v: &Version) -> bool;
    /// One step of collection. Returns whether it changed anything.
    ///
    /// # Errors
    /// I/O and corruption errors; the caller poisons the database.
    fn step(&self, ctx: &dyn GcContext) -> Result<bool>;
    /// Whether `pace_writes` can ever say yes (a store with a capacity): asked before a
    /// write looks the version up.
    fn may_pace(&self) -> bool {
        false
    }
    /// Whether writes should wait for the GC (the store is over its capacity and a step
    /// can free space).
    fn pace_writes(&self, _v: &Version) -> bool {
        false
    }
    /// Why writes that add values to the store are refused in `v`, if they are: its live
    /// values take all its space and no step can free any (the hash store with
    /// `HashWhenFull::Refuse`). Asked of every job once any `may_pace`: a job whose store
    /// is not the configured one says no.
    fn refuses(&self, _v: &Version) -> Option<String> {
        None
    }
}
