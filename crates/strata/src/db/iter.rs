//! [`DbIterator`]: the user's view of the database in key order, as of one sequence number.
//!
//! Wraps a merging iterator over every source; for each user key it yields the newest
//! version at or below the read sequence and hides tombstones. Reverse iteration walks each
//! key's versions from oldest to newest and keeps the last visible one (LevelDB's scheme).
//! The iterator pins its super version, so the files it reads are never deleted under it.

use std::cell::{OnceCell, RefCell};
use std::sync::Arc;

use super::{DbInner, SuperVersion};
use crate::error::{Error, Result};
use crate::file_meta::FileMeta;
use crate::fs::ReadAccess;
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{self, SeqNo, ValueKind};
use crate::options::{ReadOptions, SeekCharging};
use crate::vstore::ValueStore;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// A cursor over user keys and values.
///
/// After a seek, `valid()` says whether it points at an entry. It also implements `Iterator`
/// (forward, from the lower bound or the current position), yielding `Result<(key, value)>`.
pub struct DbIterator {
    inner: MergingIterator,
    /// The range tombstones of its view (crate::range_del).
    ranges: crate::range_del::Covering,
    /// Keys a range deletion covered in a row, forward (`skip_covered`).
    covered_run: u32,
    /// Below this key, `skip_covered` found it could not skip.
    no_skip_before: Vec<u8>,
    sv: Arc<SuperVersion>,
    /// For charging seeks to tables they searched in vain (read-triggered compaction).
    db: Arc<DbInner>,
    seq: SeqNo,
    /// The engine's time the iterator judges expiring entries by (its snapshot's, or read
    /// when it first meets one, no earlier than it was made): one answer for its whole life.
    now: OnceCell<u64>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    direction: Direction,
    valid: bool,
    /// Forward: the current user key. Reverse: the current entry's key.
    saved_key: Vec<u8>,
    /// Reverse only: the current entry's value (as stored: possibly a value pointer).
    saved_value: Vec<u8>,
    /// The current entry's kind (`Put` or `Pointer`).
    saved_kind: ValueKind,
    /// The current entry's value read from the value store, once `value()` asked for it
    /// (a scan that reads only keys reads no separated value).
    resolved: OnceCell<Vec<u8>>,
    /// The first error reading a separated value (reported by `status()`).
    value_error: RefCell<Option<Error>>,
    /// Forward scans' read-ahead of separated values (`Options::value_read_ahead`).
    read_ahead: RefCell<ReadAhead>,
    /// The value files this iterator read last, open (its version's: `sv` holds them).
    value_files: RefCell<crate::vstore::ValueHandles>,
    /// Whether seeks charge the tables they search (not for a read-ahead scout).
    charges: bool,
    started: bool,
    /// The cursor moved since `Iterator::next` last yielded: yield the current entry as is.
    fresh: bool,
    /// `Iterator::next` reported an error: it yields nothing more.
    ended: bool,
    _snapshot: Option<crate::db::Snapshot>,
}

/// Whether forward scans read separated values ahead (`Options::value_read_ahead`): while
/// the live tables and value files of the current version hold more than the page cache
/// can be expected to keep (`table_cache::beyond_memory`, the table cache's rule). Told
/// each new version, as the table cache is.
pub(crate) struct ReadAheadGate {
    budget: u64,
    on: std::sync::atomic::AtomicBool,
}

impl ReadAheadGate {
    pub fn new(opts: &crate::Options, v: &crate::version::Version) -> Self {
        let gate = ReadAheadGate {
            budget: opts.page_cache_budget(),
            on: std::sync::atomic::AtomicBool::new(false),
        };
        gate.set_version(v);
        gate
    }

    /// Called with each new version.
    pub fn set_version(&self, v: &crate::version::Version) {
        use std::sync::atomic::Ordering;
        let values: u64 = v.values.values().map(|f| f.size.max(f.record_bytes)).sum();
        let bytes = v.total_bytes().saturating_add(values);
        let was = self.on.load(Ordering::Relaxed);
        let now = crate::table_cache::beyond_memory(was, bytes, self.budget);
        self.on.store(now, Ordering::Relaxed);
    }

    pub fn on(&self) -> bool {
        self.on.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A forward scan's read-ahead: once `value()` has read two separated values in a row
/// moving forward, a scout iterator over the same entries runs up to
/// `Options::value_read_ahead` entries ahead of the cursor and asks the value store to read
/// their values into memory (WiscKey's range-query prefetch, with the kernel doing the
/// reading instead of a thread pool). Any other move starts over.
#[derive(Default)]
struct ReadAhead {
    /// Separated values read in a row moving forward.
    run: u32,
    scout: Option<Box<DbIterator>>,
    /// Separated values the scout passed that the cursor has not read yet.
    ahead: usize,
}

pub(crate) fn new(db: &Arc<DbInner>, opts: ReadOptions) -> DbIterator {
    let (seq, sv) = db.read_view(opts.snapshot.as_ref());
    db.count_read();
    let now = OnceCell::new();
    if let Some(s) = &opts.snapshot {
        let _ = now.set(s.time());
    }
    let mut it = over(db, sv, seq, now, opts.lower_bound, opts.upper_bound);
    it._snapshot = opts.snapshot;
    it
}

/// An iterator over super version `sv` as of `seq`, within the bounds.
fn over(
    db: &Arc<DbInner>,
    sv: Arc<SuperVersion>,
    seq: SeqNo,
    now: OnceCell<u64>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
) -> DbIterator {
    let mut children: Vec<Box<dyn InternalIterator>> = vec![Box::new(sv.mem.iter())];
    for m in &sv.imms {
        children.push(Box::new(m.iter()));
    }
    children.extend(sv.version.iterators(&db.tables));
    DbIterator {
        inner: MergingIterator::new(children),
        ranges: sv.ranges(),
        covered_run: 0,
        no_skip_before: Vec::new(),
        sv,
        db: db.clone(),
        seq,
        now,
        lower,
        upper,
        direction: Direction::Forward,
        valid: false,
        saved_key: Vec::new(),
        saved_value: Vec::new(),
        saved_kind: ValueKind::Put,
        resolved: OnceCell::new(),
        value_error: RefCell::new(None),
        read_ahead: RefCell::new(ReadAhead::default()),
        value_files: RefCell::default(),
        charges: true,
        started: false,
        fresh: false,
        ended: false,
        _snapshot: None,
    }
}

impl DbIterator {
    /// The time this iterator judges expiring entries by.
    fn now(&self) -> u64 {
        *self.now.get_or_init(|| self.db.now.now())
    }

    /// Whether the expiring entry storing `stored` has expired; one too short to hold its
    /// expiry is damage: skipped, and reported by `status()` (as `get` reports it).
    fn expired(&self, stored: &[u8]) -> bool {
        match key::split_expiring(stored) {
            Some((at, _)) => at <= self.now(),
            None => {
                self.value_error.borrow_mut().get_or_insert_with(|| {
                    Error::corrupt("an expiring entry shorter than its expiry")
                });
                true
            }
        }
    }

    /// Forward, at a key (`saved_key`) whose version a range deletion covers, after a run
    /// of such keys: if nothing in the view can hold a version newer than the deletion up
    /// to where what covers keys changes, every version there is covered, and the cursor
    /// seeks past them instead of walking them (a seek into a deleted run of 1,000 keys
    /// walked about 500). Returns whether it did. Not in reverse, which walks.
    fn skip_covered(&mut self) -> bool {
        self.covered_run = self.covered_run.saturating_add(1);
        if self.covered_run < 16 || self.saved_key.as_slice() < self.no_skip_before.as_slice() {
            return false;
        }
        let Some((t, end)) = self.ranges.newest_with_end(&self.saved_key, self.seq) else {
            return false;
        };
        // (Not past the upper bound: what lies there is never read.)
        let end = match &self.upper {
            Some(up) if up.as_slice() < end => up.clone(),
            _ => end.to_vec(),
        };
        let lo = self.saved_key.as_slice();
        if lo >= end.as_slice() {
            return false;
        }
        let sv = &self.sv;
        let in_memory = std::iter::once(&sv.mem).chain(sv.imms.iter()).any(|m| {
            // (Every memtable entry is newer than a flushed deletion: any there blocks.)
            let mut it = m.iter();
            it.seek(&key::seek_key(lo, SeqNo::MAX));
            it.valid() && key::user_key(it.key()) < end.as_slice()
        });
        if in_memory
            || sv
                .version
                .may_hold(lo, &end, crate::file_meta::Held::Newer(t))
        {
            // Not before the run's end: it would be asked again at every key.
            self.no_skip_before = end;
            return false;
        }
        self.inner.seek(&key::seek_key(&end, self.seq));
        true
    }

    /// Whether an entry of `kind` is a range tombstone among point entries: damage, skipped
    /// and reported by `status()`.
    fn misplaced(&self, kind: ValueKind) -> bool {
        if kind != ValueKind::RangeDelete {
            return false;
        }
        self.value_error.borrow_mut().get_or_insert_with(|| {
            Error::corrupt("a range tombstone among a table's point entries")
        });
        true
    }

    /// Whether a range deletion this iterator sees deletes the entry of `user_key` at `seq`.
    fn range_deleted(&self, user_key: &[u8], seq: SeqNo) -> bool {
        !self.ranges.is_empty() && self.ranges.covers(user_key, seq, self.seq)
    }

    /// Whether the cursor is at an entry.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key. REQUIRES: `valid()`.
    pub fn key(&self) -> &[u8] {
        match self.direction {
            Direction::Forward => key::user_key(self.inner.key()),
            Direction::Reverse => &self.saved_key,
        }
    }

    /// When the current entry expires (milliseconds since the Unix epoch), if it was written
    /// with a time to live. REQUIRES: `valid()`.
    pub fn expires_at(&self) -> Option<u64> {
        if self.saved_kind != ValueKind::Expiring {
            return None;
        }
        let stored = match self.direction {
            Direction::Forward => self.inner.value(),
            Direction::Reverse => self.saved_value.as_slice(),
        };
        key::split_expiring(stored).map(|(at, _)| at)
    }

    /// The current value. REQUIRES: `valid()`. A value kept in the value store is read on
    /// the first call for the entry; if that read fails, the value is empty and `status()`
    /// reports the error.
    pub fn value(&self) -> &[u8] {
        let stored = match self.direction {
            Direction::Forward => self.inner.value(),
            Direction::Reverse => self.saved_value.as_slice(),
        };
        if self.saved_kind == ValueKind::Expiring {
            // (Its length was checked when the cursor stopped on it.)
            return key::split_expiring(stored).map_or(&[][..], |(_, v)| v);
        }
        if self.saved_kind != ValueKind::Pointer {
            return stored;
        }
        self.resolved.get_or_init(|| {
            if let Err(e) = self.db.check_open() {
                // The value store's files may be another process's by now.
                self.value_error.borrow_mut().get_or_insert(e);
                return Vec::new();
            }
            let forward = self.direction == Direction::Forward;
            if forward {
                self.read_ahead();
            }
            let read = crate::vstore::ValuePointer::decode(stored).and_then(|p| {
                self.db.values.read_through(
                    &mut self.value_files.borrow_mut(),
                    &self.sv.version,
                    self.key(),
                    &p,
                    forward,
                )
            });
            match read {
                Ok(v) => v,
                Err(e) => {
                    self.value_error.borrow_mut().get_or_insert(e);
                    Vec::new()
                }
            }
        })
    }

    /// Counts a separated value read moving forward; once two came in a row, keeps the
    /// scout `value_read_ahead` entries ahead and has the store read their values ahead.
    fn read_ahead(&self) {
        let n = self.db.opts.value_read_ahead;
        if n == 0 || !self.db.read_ahead_gate.on() {
            return;
        }
        let mut guard = self.read_ahead.borrow_mut();
        let ra = &mut *guard;
        ra.run += 1;
        if ra.run < 2 {
            return;
        }
        ra.ahead = ra.ahead.saturating_sub(1);
        if ra.ahead > n / 2 {
            return;
        }
        let cur = self.key();
        // (A `&mut DbIterator`, not the box: `Box<DbIterator>` is an `Iterator` too, whose
        // `next` would read values.)
        let scout: &mut DbIterator = ra.scout.get_or_insert_with(|| {
            let mut s = over(
                &self.db,
                self.sv.clone(),
                self.seq,
                OnceCell::from(self.now()),
                self.lower.clone(),
                self.upper.clone(),
            );
            s.charges = false;
            Box::new(s)
        });
        if scout.started && !scout.valid {
            return; // it passed the last entry: nothing more to read ahead
        }
        if !scout.started || scout.key() <= cur {
            // New, or behind the cursor (it moved without reading values).
            scout.seek(cur);
            if scout.valid && scout.key() == cur {
                scout.next();
            }
            ra.ahead = 0;
        }
        // Up to `n` separated values ahead, passing at most `4 n` entries a time (inline
        // values between them are not read ahead).
        let mut pointers = Vec::new();
        let mut passed = 0;
        let values = &self.sv.version.values;
        let want = n - ra.ahead;
        let mut walked = 0;
        while scout.valid && passed < want && walked < 4 * n {
            walked += 1;
            if scout.saved_kind == ValueKind::Pointer {
                passed += 1;
                if let Ok(p) = crate::vstore::ValuePointer::decode(scout.inner.value()) {
                    if let Some(f) = values.get(&p.file) {
                        pointers.push((p, f));
                    }
                }
            }
            scout.next();
        }
        ra.ahead += passed;
        drop(guard);
        if !pointers.is_empty() {
            crate::stats::Stats::add(&self.db.stats.value_read_aheads, pointers.len() as u64);
            self.db.values.read_ahead(&mut pointers);
        }
    }

    /// After `Db::close` the database's files may belong to another process (the lock is
    /// released): every move ends the cursor instead, and `status()` reports `Closed`.
    /// Returns whether it did.
    fn closed(&mut self) -> bool {
        let Err(e) = self.db.check_open() else {
            return false;
        };
        self.valid = false;
        self.started = true;
        self.inner = MergingIterator::new(Vec::new());
        self.reset_read_ahead();
        self.value_error.get_mut().get_or_insert(e);
        true
    }

    /// Any move but a forward step: the read-ahead starts over.
    fn reset_read_ahead(&mut self) {
        let ra = self.read_ahead.get_mut();
        ra.run = 0;
        ra.ahead = 0;
        ra.scout = None;
        // (And `skip_covered`'s run: a seek or a step back starts a new one.)
        self.covered_run = 0;
        self.no_skip_before.clear();
    }

    /// The first error met (corruption or I/O), if any.
    ///
    /// # Errors
    /// That error.
    pub fn status(&self) -> Result<()> {
        if let Some(e) = &*self.value_error.borrow() {
            return Err(self.db.view_error(e.clone()));
        }
        self.inner.status().map_err(|e| self.db.view_error(e))
    }

    /// Moves to the first key (at or after the lower bound).
    pub fn seek_to_first(&mut self) {
        if self.closed() {
            return;
        }
        self.reset_read_ahead();
        self.started = true;
        self.fresh = true;
        self.direction = Direction::Forward;
        match self.lower.clone() {
            Some(lo) => self.inner.seek(&key::seek_key(&lo, self.seq)),
            None => self.inner.seek_to_first(),
        }
        self.find_next_user_entry(false);
    }

    /// Moves to the last key (before the upper bound).
    pub fn seek_to_last(&mut self) {
        if self.closed() {
            return;
        }
        self.reset_read_ahead();
        self.started = true;
        self.fresh = true;
        self.direction = Direction::Reverse;
        match self.upper.clone() {
            Some(hi) => {
                self.inner.seek(&key::seek_key(&hi, SeqNo::MAX));
                if self.inner.valid() {
                    self.inner.prev();
                } else {
                    self.inner.seek_to_last();
                }
            }
            None => self.inner.seek_to_last(),
        }
        self.find_prev_user_entry();
    }

    /// Moves to the first key >= `target` (clamped to the bounds).
    pub fn seek(&mut self, target: &[u8]) {
        if self.closed() {
            return;
        }
        self.reset_read_ahead();
        self.started = true;
        self.fresh = true;
        self.direction = Direction::Forward;
        let t = match &self.lower {
            Some(lo) if target < lo.as_slice() => lo.clone(),
            _ => target.to_vec(),
        };
        self.inner.seek(&key::seek_key(&t, self.seq));
        if self.charges {
            self.charge_seek(&t);
        }
        self.find_next_user_entry(false);
    }

    /// A seek positions a source in every L0 table and every sorted level whose range holds
    /// the target; all but the deepest would be unnecessary in a flatter tree: charge them
    /// (read-triggered compaction, `Options::read_compaction_bytes`).
    fn charge_seek(&self, user_key: &[u8]) {
        if self.db.opts.allowed_read_charges(0).is_none() {
            return;
        }
        if self.db.opts.seek_charging == SeekCharging::WhileMapped
            && self.db.tables.access() == ReadAccess::Positional
        {
            return;
        }
        let v = &self.sv.version;
        let mut searched: Option<&Arc<FileMeta>> = None;
        v.l0.seek_sources(v.files(0), user_key, &mut |f| {
            if let Some(newer) = searched.replace(f) {
                self.db.charge_read(newer);
            }
        });
        for level in 1..v.num_levels() {
            if let Some(f) = v.file_holding(level, user_key) {
                if let Some(shallower) = searched.replace(f) {
                    self.db.charge_read(shallower);
                }
            }
        }
    }

    /// Moves to the last key <= `target` (clamped to the bounds).
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        if self.closed() {
            return;
        }
        self.reset_read_ahead();
        self.started = true;
        self.fresh = true;
        self.direction = Direction::Reverse;
        match &self.upper {
            Some(hi) if target >= hi.as_slice() => {
                let hi = hi.clone();
                self.inner.seek(&key::seek_key(&hi, SeqNo::MAX));
            }
            // Past every version of `target` (sequence 0 is never written).
            _ => self.inner.seek(&key::seek_key(target, SeqNo::ZERO)),
        }
        if self.inner.valid() {
            self.inner.prev();
        } else {
            self.inner.seek_to_last();
        }
        self.find_prev_user_entry();
    }

    /// Moves to the next key. REQUIRES: `valid()`.
    pub fn next(&mut self) {
        if !self.valid || self.closed() {
            return;
        }
        self.fresh = true;
        if self.direction == Direction::Reverse {
            // inner is before every entry of saved_key: step into them, then skip them.
            self.direction = Direction::Forward;
            if self.inner.valid() {
                self.inner.next();
            } else {
                self.inner.seek_to_first();
            }
        } else {
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(key::user_key(self.inner.key()));
            self.inner.next();
        }
        self.find_next_user_entry(true);
    }

    /// Moves to the previous key. REQUIRES: `valid()`.
    pub fn prev(&mut self) {
        if !self.valid || self.closed() {
            return;
        }
        self.reset_read_ahead();
        self.fresh = true;
        if self.direction == Direction::Forward {
            // Back inner up to before every entry of the current key.
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(key::user_key(self.inner.key()));
            loop {
                self.inner.prev();
                if !self.inner.valid()
                    || key::user_key(self.inner.key()) < self.saved_key.as_slice()
                {
                    break;
                }
            }
            self.direction = Direction::Reverse;
        }
        self.find_prev_user_entry();
    }

    fn past_upper(&self, uk: &[u8]) -> bool {
        self.upper.as_deref().is_some_and(|hi| uk >= hi)
    }

    fn before_lower(&self, uk: &[u8]) -> bool {
        self.lower.as_deref().is_some_and(|lo| uk < lo)
    }

    /// Forward: from inner's position, find the newest visible non-deleted entry of the next
    /// user key (skipping keys <= saved_key if `skipping`).
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        self.resolved = OnceCell::new();
        while self.inner.valid() {
            let Some(p) = key::parse(self.inner.key()) else {
                self.inner.next();
                continue;
            };
            if self.past_upper(p.user_key) {
                break;
            }
            if p.seq <= self.seq {
                if skipping && p.user_key <= self.saved_key.as_slice() {
                    // Hidden by the entry we already returned or skipped.
                } else {
                    // An expired entry hides its key's older versions, as a tombstone; so
                    // does one a range deletion covers (the deletion hides them too).
                    let covered = self.range_deleted(p.user_key, p.seq) || self.misplaced(p.kind);
                    if p.kind == ValueKind::Delete
                        || (p.kind == ValueKind::Expiring && self.expired(self.inner.value()))
                        || covered
                    {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(p.user_key);
                        skipping = true;
                        if covered && self.skip_covered() {
                            continue;
                        }
                    } else {
                        self.covered_run = 0;
                        self.saved_kind = p.kind;
                        self.valid = true;
                        return;
                    }
                }
            }
            self.inner.next();
        }
        self.valid = false;
        self.saved_key.clear();
    }

    /// Reverse: walk back over the versions of the previous user key, keeping the newest
    /// visible one; stop once a smaller key starts.
    fn find_prev_user_entry(&mut self) {
        self.resolved = OnceCell::new();
        let mut kind = ValueKind::Delete;
        while self.inner.valid() {
            let Some(p) = key::parse(self.inner.key()) else {
                self.inner.prev();
                continue;
            };
            if p.seq <= self.seq {
                if kind != ValueKind::Delete && p.user_key < self.saved_key.as_slice() {
                    break;
                }
                if self.past_upper(p.user_key) {
                    // Above the range: ignore (only possible right after a seek).
                    self.inner.prev();
                    continue;
                }
                if self.before_lower(p.user_key) {
                    break;
                }
                kind = p.kind;
                if (kind == ValueKind::Expiring && self.expired(self.inner.value()))
                    || self.range_deleted(p.user_key, p.seq)
                    || self.misplaced(kind)
                {
                    kind = ValueKind::Delete;
                }
                if kind == ValueKind::Delete {
                    self.saved_key.clear();
                    self.saved_value.clear();
                } else {
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(p.user_key);
                    self.saved_value.clear();
                    self.saved_value.extend_from_slice(self.inner.value());
                }
            }
            self.inner.prev();
        }
        if kind == ValueKind::Delete {
            self.valid = false;
            self.saved_key.clear();
            self.saved_value.clear();
        } else {
            self.valid = true;
        }
        self.saved_kind = kind;
        self.direction = Direction::Reverse;
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        if !self.started {
            self.seek_to_first();
        } else if !self.fresh {
            DbIterator::next(self);
        }
        self.fresh = false;
        if self.valid {
            let value = self.value().to_vec();
            if let Some(e) = self.value_error.borrow_mut().take() {
                // Report the error once, then end.
                self.ended = true;
                self.valid = false;
                self.inner = MergingIterator::new(Vec::new());
                return Some(Err(self.db.view_error(e)));
            }
            return Some(Ok((self.key().to_vec(), value)));
        }
        match self.status() {
            Err(e) => {
                self.ended = true;
                self.started = true;
                self.valid = false;
                // Report the error once, then end.
                let e2 = e.clone();
                self.inner = MergingIterator::new(Vec::new());
                Some(Err(e2))
            }
            Ok(()) => None,
        }
    }
}
