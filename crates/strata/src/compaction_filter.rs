//! Compaction filters ([`CompactionFilter`], `Options::compaction_filter`): a user's rule,
//! asked for each entry a flush or compaction writes, that keeps the entry, removes it or
//! changes its value. docs/design/compaction-filters.md says what a filter sees and why.
//!
//! The rule of what is offered, in one place ([`Filtering::decide`]): only a key's newest
//! version in the job, only a value (inline, or separated into a store that compactions
//! collect: blob files, group files), and only a version newer than every snapshot live when the
//! job began, so that no snapshot can see what the filter changes. A snapshot taken while
//! a filtering job runs reads the memtables and tables it was taken on
//! (`SnapshotList::begin_filtering`), so the job's result, installed later, never shows
//! through it either.
//!
//! (Ground: options name the trait; flushes, compactions and value GC drive it through a
//! [`FilterEnv`] the engine gives them.)

use std::cell::OnceCell;

use crate::error::{Error, ErrorKind, Result};
use crate::key::{SeqNo, ValueKind};

/// A user's rule for the entries the engine rewrites (RocksDB's `CompactionFilter`).
///
/// Called from the background threads, for one entry at a time. A flush or compaction
/// offers a key's newest version in the job only, and never a version a live snapshot can
/// see; so what the filter removes or changes is, for every reader, as if the user had
/// written it at the time the job installed its result. A value store's GC step offers the
/// live values it is about to move and writes the deletion or new value as a new write. It
/// is not called for tombstones, for entries that a flush or compaction drops anyway
/// (hidden by newer versions), on tables moved down a level without being rewritten, or
/// when the log is replayed at open: an entry it was never offered stays as written until
/// a later job offers it. It may read the database through
/// [`FilterEntry::get`] (the database as it is when asked; no lock of the engine is held).
///
/// A filter must be deterministic for one key and value as long as the result matters:
/// the engine may offer an entry more than once (a compaction whose result is not
/// installed, a value offered again at a deeper level after a `Keep`).
pub trait CompactionFilter: Send + Sync {
    /// A name for logs and errors.
    fn name(&self) -> &str;

    /// What becomes of `entry`.
    fn filter(&self, entry: &FilterEntry<'_>) -> Decision;
}

/// A filter's decision on one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Write the entry as it is.
    Keep,
    /// The key is deleted, as of the entry's version: older versions no snapshot needs go
    /// with it (a tombstone is written in their place while anything below may hold them).
    Remove,
    /// The entry's value becomes this one (written inline in the job's output).
    Change(Vec<u8>),
}

/// Which job offers an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterReason {
    /// A memtable written to L0 (or deeper).
    Flush,
    /// A compaction writing level `output_level`.
    Compaction {
        /// The level the job writes.
        output_level: usize,
    },
    /// A value store's GC step about to move a live value (the value log's, the hash
    /// store's): a removal or change is written as a new write of the key.
    ValueGc,
}

/// What the engine gives a filter of its database: the value behind a pointer, the
/// database's current state.
pub(crate) trait FilterEnv {
    /// Whether a pointer's value is offered (not into a store whose own GC offers its
    /// values: `ValueFormat::filtered_by_own_gc`).
    fn offered(&self, pointer: &[u8]) -> bool;
    /// The value the pointer `pointer` of `user_key` leads to.
    fn value(&self, user_key: &[u8], pointer: &[u8]) -> Result<Vec<u8>>;
    /// The database's current value for `key`.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
}

/// One entry offered to a filter.
pub struct FilterEntry<'a> {
    key: &'a [u8],
    reason: FilterReason,
    /// The inline value, or the pointer to resolve.
    raw: &'a [u8],
    separated: bool,
    resolved: OnceCell<std::result::Result<Vec<u8>, Error>>,
    env: &'a dyn FilterEnv,
}

impl FilterEntry<'_> {
    /// The user key.
    pub fn key(&self) -> &[u8] {
        self.key
    }

    /// Which job offers it.
    pub fn reason(&self) -> FilterReason {
        self.reason
    }

    /// Whether the value lives in a value store (reading it costs a read there).
    pub fn is_separated(&self) -> bool {
        self.separated
    }

    /// The entry's value: read from its value store the first time it is asked for, when
    /// it is separated.
    ///
    /// # Errors
    /// The store's read errors (the job then fails with that error, whatever the filter
    /// decides).
    pub fn value(&self) -> Result<&[u8]> {
        if !self.separated {
            return Ok(self.raw);
        }
        match self
            .resolved
            .get_or_init(|| self.env.value(self.key, self.raw))
        {
            Ok(v) => Ok(v),
            Err(e) => Err(e.clone()),
        }
    }

    /// The database's current value for `key` (as `Db::get` reads it).
    ///
    /// # Errors
    /// As `Db::get`'s.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.env.get(key)
    }
}

impl std::fmt::Debug for FilterEntry<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilterEntry")
            .field("key_len", &self.key.len())
            .field("reason", &self.reason)
            .field("separated", &self.separated)
            .finish()
    }
}

/// What a job does with an entry after the filter.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// As it is.
    Keep,
    /// Removed: a tombstone in its place (or nothing, where the caller knows nothing older
    /// can be below and no snapshot needs older versions).
    Remove,
    /// An entry of this kind (a put, or an expiring put keeping its expiry) storing this
    /// value in its place.
    Change(ValueKind, Vec<u8>),
    /// Removed because it expired (docs/design/ttl.md): as `Remove`, but every later
    /// reader judges it expired too (the engine's clock does not go back), so it is no new
    /// answer.
    Expire,
}

/// One job's use of a filter.
pub(crate) struct Filtering<'a> {
    /// The user's filter, if any (without one, only expiry is judged).
    filter: Option<&'a dyn CompactionFilter>,
    env: &'a dyn FilterEnv,
    reason: FilterReason,
    /// The newest snapshot live when the job began: versions at or below it are not
    /// offered.
    newest_snapshot: Option<SeqNo>,
    /// The engine's time when the job began (read with its snapshots): expiring entries
    /// whose expiry is at or before it are removed.
    now: u64,
    /// Entries the user's filter removed and changed.
    pub removed: u64,
    pub changed: u64,
    /// Entries removed as expired.
    pub expired: u64,
}

impl<'a> Filtering<'a> {
    /// `filter` (and expiry, judged at `now`) for a job that began with the live
    /// `snapshots`.
    pub fn new(
        filter: Option<&'a dyn CompactionFilter>,
        env: &'a dyn FilterEnv,
        reason: FilterReason,
        snapshots: &[SeqNo],
        now: u64,
    ) -> Self {
        Filtering {
            filter,
            env,
            reason,
            newest_snapshot: snapshots.iter().copied().max(),
            now,
            removed: 0,
            changed: 0,
            expired: 0,
        }
    }

    /// Entries whose result is a new answer to readers (the user's filter removed or
    /// changed them): the job's result must be durable before readers see it.
    pub fn decided(&self) -> u64 {
        self.removed + self.changed
    }

    /// Whether some live snapshot was in the job's way (removals then leave a tombstone).
    pub fn has_snapshots(&self) -> bool {
        self.newest_snapshot.is_some()
    }

    /// The filter's decision on an entry the job keeps (the version filter said so), in
    /// internal-key order: `Keep` for what is not offered (see the module's rule).
    ///
    /// # Errors
    /// A value the filter asked for could not be read; the filter panicked.
    pub fn decide(
        &mut self,
        user_key: &[u8],
        seq: SeqNo,
        kind: ValueKind,
        value: &[u8],
    ) -> Result<Outcome> {
        // The version filter keeps one version per snapshot stripe, the newest first: a
        // kept version above every snapshot is its key's newest in the job.
        if self.newest_snapshot.is_some_and(|s| seq <= s) {
            return Ok(Outcome::Keep);
        }
        let (separated, expiry, raw) = match kind {
            ValueKind::Put => (false, None, value),
            ValueKind::Pointer if self.filter.is_some() && self.env.offered(value) => {
                (true, None, value)
            }
            ValueKind::Expiring => {
                let (e, v) = crate::key::split_expiring(value)
                    .ok_or_else(|| Error::corrupt("an expiring entry shorter than its expiry"))?;
                if e <= self.now {
                    self.expired += 1;
                    return Ok(Outcome::Expire);
                }
                (false, Some(e), v)
            }
            _ => return Ok(Outcome::Keep),
        };
        let Some(filter) = self.filter else {
            return Ok(Outcome::Keep);
        };
        let entry = FilterEntry {
            key: user_key,
            reason: self.reason,
            raw,
            separated,
            resolved: OnceCell::new(),
            env: self.env,
        };
        let decision =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| filter.filter(&entry)))
                .map_err(|p| {
                    let why = p
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| p.downcast_ref::<&str>().copied())
                        .unwrap_or("no message");
                    Error::new(
                        ErrorKind::InvalidArgument,
                        format!("compaction filter {:?} panicked: {why}", filter.name()),
                    )
                })?;
        if let Some(Err(e)) = entry.resolved.get() {
            return Err(e.clone().context(format!(
                "reading a value for compaction filter {:?}",
                filter.name()
            )));
        }
        Ok(match decision {
            Decision::Keep => Outcome::Keep,
            Decision::Remove => {
                self.removed += 1;
                Outcome::Remove
            }
            Decision::Change(v) => {
                self.changed += 1;
                match expiry {
                    // An expiring value changed keeps its expiry.
                    Some(e) => {
                        Outcome::Change(ValueKind::Expiring, crate::key::expiring_value(e, &v))
                    }
                    None => Outcome::Change(ValueKind::Put, v),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    struct Env {
        reads: Cell<u32>,
    }
    impl FilterEnv for Env {
        fn offered(&self, pointer: &[u8]) -> bool {
            pointer != b"hash"
        }
        fn value(&self, _k: &[u8], pointer: &[u8]) -> Result<Vec<u8>> {
            self.reads.set(self.reads.get() + 1);
            if pointer == b"bad" {
                return Err(Error::corrupt("damaged record"));
            }
            Ok([b"v:", pointer].concat())
        }
        fn get(&self, _k: &[u8]) -> Result<Option<Vec<u8>>> {
            Ok(None)
        }
    }

    /// Removes values starting with "x", changes those starting with "c", reading every
    /// value.
    struct Rule;
    impl CompactionFilter for Rule {
        fn name(&self) -> &str {
            "rule"
        }
        fn filter(&self, e: &FilterEntry<'_>) -> Decision {
            match e.value() {
                Ok(v) if v.starts_with(b"x") || v.starts_with(b"v:x") => Decision::Remove,
                Ok(v) if v.starts_with(b"c") => Decision::Change(b"changed".to_vec()),
                _ => Decision::Keep,
            }
        }
    }

    #[test]
    fn offers_only_values_above_every_snapshot() {
        let env = Env {
            reads: Cell::new(0),
        };
        let mut f = Filtering::new(
            Some(&Rule),
            &env,
            FilterReason::Flush,
            &[SeqNo(5), SeqNo(9)],
            0,
        );
        let p = ValueKind::Put;
        assert_eq!(f.decide(b"a", SeqNo(9), p, b"x").unwrap(), Outcome::Keep);
        assert_eq!(f.decide(b"a", SeqNo(10), p, b"x").unwrap(), Outcome::Remove);
        assert_eq!(
            f.decide(b"a", SeqNo(11), p, b"c").unwrap(),
            Outcome::Change(ValueKind::Put, b"changed".to_vec())
        );
        assert_eq!(
            f.decide(b"a", SeqNo(12), ValueKind::Delete, b"").unwrap(),
            Outcome::Keep
        );
        // Pointers: resolved when offered, never for a store judging liveness itself.
        let ptr = ValueKind::Pointer;
        assert_eq!(
            f.decide(b"a", SeqNo(12), ptr, b"x1").unwrap(),
            Outcome::Remove
        );
        assert_eq!(
            f.decide(b"a", SeqNo(12), ptr, b"hash").unwrap(),
            Outcome::Keep
        );
        assert_eq!(env.reads.get(), 1);
        assert!(f.decide(b"a", SeqNo(12), ptr, b"bad").is_err());
        assert_eq!((f.removed, f.changed), (2, 1));
        let mut none = Filtering::new(Some(&Rule), &env, FilterReason::Flush, &[], 0);
        assert_eq!(
            none.decide(b"a", SeqNo(1), p, b"x").unwrap(),
            Outcome::Remove
        );
        assert!(!none.has_snapshots());
    }

    struct Panics;
    impl CompactionFilter for Panics {
        fn name(&self) -> &str {
            "panics"
        }
        fn filter(&self, _e: &FilterEntry<'_>) -> Decision {
            panic!("a user's bug")
        }
    }

    #[test]
    fn a_panicking_filter_fails_the_job() {
        let env = Env {
            reads: Cell::new(0),
        };
        let mut f = Filtering::new(Some(&Panics), &env, FilterReason::Flush, &[], 0);
        let e = f.decide(b"a", SeqNo(1), ValueKind::Put, b"v").unwrap_err();
        assert!(e.to_string().contains("panicked"), "{e}");
    }

    #[test]
    fn expired_entries_are_removed_and_the_rest_offered_without_their_expiry() {
        let env = Env {
            reads: Cell::new(0),
        };
        let e = ValueKind::Expiring;
        let at = |t: u64, v: &[u8]| crate::key::expiring_value(t, v);
        // Expiry alone (no filter of the user's): removed at or after the job's time.
        let mut ttl = Filtering::new(None, &env, FilterReason::Flush, &[SeqNo(5)], 100);
        assert_eq!(
            ttl.decide(b"a", SeqNo(9), e, &at(100, b"k")).unwrap(),
            Outcome::Expire
        );
        assert_eq!(
            ttl.decide(b"a", SeqNo(9), e, &at(101, b"k")).unwrap(),
            Outcome::Keep
        );
        assert_eq!(
            ttl.decide(b"a", SeqNo(9), ValueKind::Put, b"x").unwrap(),
            Outcome::Keep
        );
        assert_eq!(
            ttl.decide(b"a", SeqNo(5), e, &at(1, b"k")).unwrap(),
            Outcome::Keep,
            "a snapshot sees it"
        );
        assert!(ttl.decide(b"a", SeqNo(9), e, b"short").is_err());
        assert_eq!((ttl.expired, ttl.decided()), (1, 0));
        // With the user's filter: it sees the value, a change keeps the expiry.
        let mut f = Filtering::new(Some(&Rule), &env, FilterReason::Flush, &[], 100);
        assert_eq!(
            f.decide(b"a", SeqNo(1), e, &at(200, b"x")).unwrap(),
            Outcome::Remove
        );
        assert_eq!(
            f.decide(b"a", SeqNo(1), e, &at(200, b"c")).unwrap(),
            Outcome::Change(e, at(200, b"changed"))
        );
        assert_eq!(
            f.decide(b"a", SeqNo(1), e, &at(50, b"c")).unwrap(),
            Outcome::Expire
        );
        assert_eq!((f.removed, f.changed, f.expired), (1, 1, 1));
    }
}
