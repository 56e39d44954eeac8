//! Point reads: memtable, immutable memtables (newest first), L0 (as its layout searches
//! it), then one table per deeper level. The first version found at or below the read
//! sequence wins.

use super::{DbInner, SuperVersion};
use std::sync::Arc;

use crate::error::Result;
use crate::file_meta::FileMeta;
use crate::key::{self, SeqNo};
use crate::memtable::Lookup;
use crate::options::{ReadCharging, ReadOptions};
use crate::table_cache::Probe;
use crate::version::Version;
use crate::vstore::{ValuePointer, ValueStore};

pub(crate) fn get(db: &DbInner, opts: &ReadOptions, user_key: &[u8]) -> Result<Option<Vec<u8>>> {
    let (seq, sv) = db.read_view(opts.snapshot.as_ref());
    db.count_read();
    match lookup(db, &sv, user_key, seq)? {
        Some((_, found)) => db.resolve(&sv.version, user_key, found, &|| {
            db.read_time(opts.snapshot.as_ref())
        }),
        None => Ok(None),
    }
}

/// The newest entry of `user_key` at or below `seq` in `sv`, as stored: memtable,
/// immutable memtables (newest first), then the tables.
fn lookup(
    db: &DbInner,
    sv: &SuperVersion,
    user_key: &[u8],
    seq: SeqNo,
) -> Result<Option<(SeqNo, Lookup)>> {
    let mut found = None;
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        if let Some(f) = mem.get(user_key, seq) {
            found = Some(f);
            break;
        }
    }
    if found.is_none() {
        found = lookup_in_version(db, &sv.version, user_key, seq)?;
    }
    let Some((at, _)) = found else {
        return Ok(None);
    };
    // A range deletion newer than the version found deletes it.
    match sv.ranges().newest_visible(user_key, seq) {
        Some(t) if t > at => Ok(Some((t, Lookup::Deleted))),
        _ => Ok(found),
    }
}

impl DbInner {
    /// The newest entry of `user_key` as stored (a pointer unresolved), at the newest
    /// sequence: what the value log's GC asks to know whether a record is still live.
    pub(crate) fn newest_entry(&self, user_key: &[u8]) -> Result<Option<Lookup>> {
        let (seq, sv) = self.read_view(None);
        Ok(lookup(self, &sv, user_key, seq)?.map(|(_, found)| found))
    }

    /// The time a read judges expiring entries by: its snapshot's (so that its reads
    /// repeat), else the engine's now. Read after the read's view (and only once the read
    /// meets an expiring entry): a job whose result the view shows judged by an earlier
    /// time.
    pub(crate) fn read_time(&self, snapshot: Option<&crate::db::Snapshot>) -> u64 {
        snapshot.map_or_else(|| self.now.now(), crate::db::Snapshot::time)
    }

    /// The user's value for what a lookup of `user_key` found: an inline value as is, a
    /// tombstone or an entry expired at `now()` (asked only then) as `None`, a pointer read from the value
    /// store (the value files of `v`, which the reader holds, say where).
    ///
    /// # Errors
    /// `Corruption` for a pointer that does not decode, into a file `v` does not hold, or
    /// to a damaged record, or an expiring entry too short to hold its expiry; I/O errors.
    pub(crate) fn resolve(
        &self,
        v: &Version,
        user_key: &[u8],
        found: Lookup,
        now: &dyn Fn() -> u64,
    ) -> Result<Option<Vec<u8>>> {
        match found {
            Lookup::Value(value) => Ok(Some(value)),
            Lookup::Expiring(mut stored) => match key::split_expiring(&stored) {
                Some((at, _)) if at <= now() => Ok(None),
                Some(_) => {
                    stored.drain(..8);
                    Ok(Some(stored))
                }
                None => Err(crate::error::Error::corrupt(
                    "an expiring entry shorter than its expiry",
                )),
            },
            Lookup::Deleted => Ok(None),
            Lookup::Pointer(p) => self.read_value(v, user_key, &p, false).map(Some),
        }
    }

    /// The value the encoded pointer `p` of `user_key` reaches, through version `v`
    /// (`forward`: read by a forward scan, `ValueStore::read`).
    pub(crate) fn read_value(
        &self,
        v: &Version,
        user_key: &[u8],
        p: &[u8],
        forward: bool,
    ) -> Result<Vec<u8>> {
        let p = ValuePointer::decode(p)?;
        let f = crate::vstore::file_of(v, user_key, &p)?;
        self.values.read(user_key, &p, f, forward)
    }
}

/// Which tables a point read charges (read-triggered compaction), as `Options::read_charging`
/// says.
struct Charges<'a> {
    rule: ReadCharging,
    /// `InVain`: the last sorted-level table searched; `FirstOfSeveral`: the first table.
    held: Option<&'a Arc<FileMeta>>,
    /// `FirstOfSeveral`: the first table was charged already.
    done: bool,
}

impl<'a> Charges<'a> {
    fn new(rule: ReadCharging) -> Self {
        Charges {
            rule,
            held: None,
            done: false,
        }
    }

    /// The read is about to search table `f` (of L0 if `l0`).
    fn searched(&mut self, db: &DbInner, f: &'a Arc<FileMeta>, l0: bool) {
        match self.rule {
            // Every sorted-level table searched before a deeper one is charged. L0 tables
            // are not: a probe that an L0 table's filter rejects is cheap, and pushing L0
            // down rewrites all of L1 with it, so under a steady mix of reads and writes this
            // would merge L0 into L1 at nearly every flush (measured: readwhilewriting table
            // write-amp 5.5 -> 8.5).
            ReadCharging::InVain => {
                if l0 {
                    return;
                }
                if let Some(shallower) = self.held.replace(f) {
                    db.charge_read(shallower);
                }
            }
            // Charged in `missed`, once the table was searched past its filter in vain.
            ReadCharging::BlockInVain => {}
            // LevelDB's rule: the first table a read searched, L0 included, once the read
            // searches a second one.
            ReadCharging::FirstOfSeveral => match self.held {
                None => self.held = Some(f),
                Some(first) if !self.done => {
                    self.done = true;
                    db.charge_read(first);
                }
                Some(_) => {}
            },
        }
    }

    /// The read searched table `f` of a level >= 1 past its filter and did not find the key.
    fn missed(&mut self, db: &DbInner, f: &'a Arc<FileMeta>) {
        if self.rule == ReadCharging::BlockInVain {
            db.charge_read(f);
        }
    }
}

/// The newest entry of `user_key` at or below `seq` in the tables of `v`, as stored.
fn lookup_in_version(
    db: &DbInner,
    v: &Version,
    user_key: &[u8],
    seq: SeqNo,
) -> Result<Option<(SeqNo, Lookup)>> {
    let target = key::seek_key(user_key, seq);
    let mut charges = Charges::new(db.opts.read_charging);
    let found =
        v.l0.get(v.files(0), &db.tables, &target, user_key, &mut |f| {
            charges.searched(db, f, true);
        })?;
    if let Some(found) = found {
        return Ok(Some(found));
    }
    for level in 1..v.num_levels() {
        let files = v.files(level);
        let i = v.find_file(level, &target);
        let Some(f) = files.get(i) else { continue };
        if user_key < f.smallest_user_key() {
            continue;
        }
        charges.searched(db, f, false);
        match db.tables.probe(f, &target, user_key)? {
            Probe::Found(seq, found) => return Ok(Some((seq, found))),
            Probe::Absent => charges.missed(db, f),
            Probe::Excluded => {}
        }
    }
    Ok(None)
}
