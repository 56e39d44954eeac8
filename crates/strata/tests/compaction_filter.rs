//! Compaction filters (`Options::compaction_filter`, docs/design/compaction-filters.md)
//! under every named configuration: what a filter removes or changes is gone or changed for
//! every reader once a compaction has offered it, never for a version a live snapshot sees
//! (including a snapshot taken while the job runs), separated values offered as values, and
//! a filter may read the database from inside the job.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use strata::fs::{Fs, MemFs};
use strata::{CompactionFilter, Db, Decision, FilterEntry, ReadOptions};
use strata_testkit::configs::{configs, Config};
use strata_testkit::model::assert_db_matches;

/// Removes values starting with `x`, changes those starting with `c` to `C` and the rest.
/// Idempotent: what it writes it keeps.
struct Rule;

impl CompactionFilter for Rule {
    fn name(&self) -> &str {
        "rule"
    }

    fn filter(&self, e: &FilterEntry<'_>) -> Decision {
        match e.value() {
            Ok(v) if v.starts_with(b"x") => Decision::Remove,
            Ok(v) if v.starts_with(b"c") => Decision::Change([b"C", &v[1..]].concat()),
            _ => Decision::Keep,
        }
    }
}

/// What `Rule` makes of `v` once offered.
fn filtered(v: &[u8]) -> Option<Vec<u8>> {
    match v.first() {
        Some(b'x') => None,
        Some(b'c') => Some([b"C", &v[1..]].concat()),
        _ => Some(v.to_vec()),
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:05}", (i * 7919) % 1500).into_bytes()
}

/// A value of write `i`: removed, changed or kept by `Rule`, small or large (the stores
/// separate values from 100 bytes in the named configurations).
fn value(i: u64) -> Vec<u8> {
    let lead = ["x", "c", "k"][(i % 3) as usize];
    let pad = if i.is_multiple_of(4) {
        300
    } else {
        (i % 40) as usize
    };
    format!("{lead}{i}-{}", "p".repeat(pad)).into_bytes()
}

fn open(config: &Config, fs: &Arc<dyn Fs>, filter: Arc<dyn CompactionFilter>) -> Db {
    let mut opts = (config.build)(Path::new("/db"), fs.clone());
    opts.compaction_filter = Some(filter);
    Db::open("/db", opts).unwrap_or_else(|e| panic!("{}: open: {e}", config.name))
}

/// Whether a configuration writes values at write time to a store whose own GC offers
/// them (the value log; the hash store's write-time separation): such values are never
/// offered by a flush or compaction, only by the store's GC.
fn unfiltered_separated(config: &Config, v: &[u8]) -> bool {
    let opts = (config.build)(Path::new("/db"), Arc::new(MemFs::new()));
    (opts.hash_write_time || opts.value_store == strata::ValueStoreKind::VLog)
        && v.len() >= opts.min_blob_size
}

#[test]
fn what_a_filter_removes_or_changes_is_gone_for_every_reader_under_every_config() {
    for config in configs() {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let db = open(&config, &fs, Arc::new(Rule));
        let mut written = BTreeMap::new();
        for i in 0..6_000u64 {
            let (k, v) = (key(i), value(i));
            if i.is_multiple_of(17) {
                db.delete(&k).unwrap();
                written.remove(&k);
            } else {
                db.put(&k, &v).unwrap();
                written.insert(k, v);
            }
        }
        // Before a full compaction a key reads as written or as filtered.
        for (k, v) in &written {
            let got = db.get(k).unwrap();
            assert!(
                got.as_ref() == Some(v) || got == filtered(v),
                "{}: {k:?} read {got:?}",
                config.name
            );
        }
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        let stats = db.stats();
        assert!(
            stats.filtered_entries > 0,
            "{}: nothing filtered",
            config.name
        );
        // Values the hash store took at write time are offered by its GC only, whose steps
        // may still run: those are checked once reopened without the filter, when nothing
        // changes any more.
        let write_time = written.values().any(|v| unfiltered_separated(&config, v));
        let mut expected: BTreeMap<Vec<u8>, Vec<u8>> = written
            .iter()
            .filter(|(_, v)| !unfiltered_separated(&config, v))
            .filter_map(|(k, v)| filtered(v).map(|f| (k.clone(), f)))
            .collect();
        if !write_time {
            assert_db_matches(&db, &expected);
        }
        db.close().unwrap();
        let mut opts = (config.build)(Path::new("/db"), fs.clone());
        opts.compaction_filter = None;
        let db = Db::open("/db", opts).unwrap();
        for (k, v) in written
            .iter()
            .filter(|(_, v)| unfiltered_separated(&config, v))
        {
            let got = db.get(k).unwrap();
            assert!(
                got.as_ref() == Some(v) || got == filtered(v),
                "{}: {k:?} read {got:?}",
                config.name
            );
            if let Some(g) = got {
                expected.insert(k.clone(), g);
            }
        }
        assert_db_matches(&db, &expected);
        db.close().unwrap();
    }
}

#[test]
fn a_filter_is_never_offered_what_a_snapshot_sees() {
    for config in configs() {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let db = open(&config, &fs, Arc::new(Rule));
        let old: Vec<(Vec<u8>, Vec<u8>)> = (0..400u64)
            .map(|i| {
                (
                    format!("old{i:04}").into_bytes(),
                    format!("x-old{i}").into_bytes(),
                )
            })
            .collect();
        for (k, v) in &old {
            db.put(k, v).unwrap();
        }
        let snap = db.snapshot();
        for i in 0..400u64 {
            db.put(format!("new{i:04}"), format!("x-new{i}")).unwrap();
        }
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        let at = ReadOptions {
            snapshot: Some(snap.clone()),
            ..ReadOptions::default()
        };
        for (k, v) in &old {
            // The snapshot sees them; so do current reads (their newest version is the
            // one the snapshot sees).
            assert_eq!(
                db.get_opt(&at, k).unwrap().as_ref(),
                Some(v),
                "{}",
                config.name
            );
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{}", config.name);
        }
        for i in 0..400u64 {
            assert_eq!(
                db.get(format!("new{i:04}")).unwrap(),
                None,
                "{}",
                config.name
            );
        }
        // Once the snapshot is gone, the next compaction offers them.
        drop(at);
        drop(snap);
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        for (k, _) in &old {
            assert_eq!(db.get(k).unwrap(), None, "{}: {k:?}", config.name);
        }
        db.close().unwrap();
    }
}

/// Takes a snapshot of the database the first time it is asked (from inside the job), then
/// acts as `Rule`.
struct SnapshotInside {
    db: Mutex<Option<Arc<Db>>>,
    taken: Mutex<Option<strata::Snapshot>>,
}

impl CompactionFilter for SnapshotInside {
    fn name(&self) -> &str {
        "snapshot-inside"
    }

    fn filter(&self, e: &FilterEntry<'_>) -> Decision {
        let mut taken = self.taken.lock().unwrap();
        if taken.is_none() {
            if let Some(db) = self.db.lock().unwrap().as_ref() {
                *taken = Some(db.snapshot());
            }
        }
        drop(taken);
        Rule.filter(e)
    }
}

#[test]
fn a_snapshot_taken_while_a_filter_runs_reads_as_it_was_taken() {
    for name in [
        "default", "matrixkv", "blob", "hashkv", "cleveldb", "ohdb-l0p",
    ] {
        let config = strata_testkit::configs::named(name);
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let filter = Arc::new(SnapshotInside {
            db: Mutex::new(None),
            taken: Mutex::new(None),
        });
        let db = Arc::new(open(&config, &fs, filter.clone()));
        for i in 0..2_000u64 {
            db.put(key(i), value(i)).unwrap();
        }
        // What reads give now (the flushes the writes started filtered some); from now on
        // the filter takes a snapshot the first time it is asked.
        db.wait_for_compactions().unwrap();
        let model: BTreeMap<Vec<u8>, Vec<u8>> = db
            .iter(ReadOptions::default())
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert!(
            model.values().any(|v| v.starts_with(b"x")),
            "{name}: nothing to remove"
        );
        *filter.db.lock().unwrap() = Some(db.clone());
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        let snap = filter.taken.lock().unwrap().take().expect("the filter ran");
        let at = ReadOptions {
            snapshot: Some(snap),
            ..ReadOptions::default()
        };
        // The snapshot reads what reads gave before it, though the job that took it removed
        // and changed some since.
        for (k, v) in &model {
            assert_eq!(
                db.get_opt(&at, k).unwrap().as_ref(),
                Some(v),
                "{name}: {k:?}"
            );
        }
        let scanned: Vec<(Vec<u8>, Vec<u8>)> = db.iter(at).unwrap().map(|r| r.unwrap()).collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
        assert!(scanned == want, "{name}: the snapshot's scan differs");
        filter.db.lock().unwrap().take();
        db.close().unwrap();
    }
}

/// Kvrocks's use: members of a collection go when its metadata key is gone, looked up from
/// inside the filter.
struct Orphans;

impl CompactionFilter for Orphans {
    fn name(&self) -> &str {
        "orphans"
    }

    fn filter(&self, e: &FilterEntry<'_>) -> Decision {
        let Some(rest) = e.key().strip_prefix(b"member/") else {
            return Decision::Keep;
        };
        let coll = rest.split(|&b| b == b'/').next().unwrap_or_default();
        match e.get(&[b"meta/", coll].concat()) {
            Ok(None) => Decision::Remove,
            _ => Decision::Keep,
        }
    }
}

#[test]
fn a_filter_reads_the_database_from_inside_the_job() {
    for name in ["default", "matrixkv", "wisckey", "cleveldb"] {
        let config = strata_testkit::configs::named(name);
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let db = open(&config, &fs, Arc::new(Orphans));
        for coll in ["a", "b"] {
            db.put(format!("meta/{coll}"), "1").unwrap();
            for i in 0..500 {
                db.put(format!("member/{coll}/{i:04}"), format!("{i}").repeat(30))
                    .unwrap();
            }
        }
        db.delete("meta/a").unwrap();
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        let members = |coll: &str| {
            db.iter(ReadOptions::default())
                .unwrap()
                .map(|r| r.unwrap().0)
                .filter(|k| k.starts_with(format!("member/{coll}/").as_bytes()))
                .count()
        };
        assert_eq!(members("a"), 0, "{name}");
        assert_eq!(members("b"), 500, "{name}");
        db.close().unwrap();
    }
}

#[test]
fn value_gc_does_not_move_what_the_filter_removes_or_changes() {
    for name in ["wisckey", "hashkv", "hashkv-wt"] {
        let config = strata_testkit::configs::named(name);
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let mut opts = (config.build)(Path::new("/db"), fs.clone());
        opts.compaction_filter = Some(Arc::new(Rule));
        let db = Db::open("/db", opts).unwrap();
        // Large values only (all separated): keys written once, x, c and k, then other
        // keys overwritten round after round, so that the files holding the first ones
        // fill with garbage and the stores' GC steps collect them, meeting live values.
        let mut last = BTreeMap::new();
        for i in 0..300u64 {
            let lead = ["x", "c", "k"][(i % 3) as usize];
            let v = format!("{lead}-{i}-{}", "q".repeat(400)).into_bytes();
            let k = format!("key{i:04}").into_bytes();
            db.put(&k, &v).unwrap();
            last.insert(k, v);
        }
        for round in 0..12u64 {
            for i in 0..300u64 {
                let v = format!("k{round}-{i}-{}", "j".repeat(400)).into_bytes();
                let k = format!("junk{i:04}").into_bytes();
                db.put(&k, &v).unwrap();
                last.insert(k, v);
            }
        }
        db.wait_for_compactions().unwrap();
        if name != "hashkv" {
            // Under `hashkv` flushes meet the values first (they are offered there); under
            // write-time separation only the GC does.
            let st = db.stats();
            assert!(
                st.gc_filtered_entries > 0,
                "{name}: no GC step filtered ({} steps, {} bytes moved, {} filtered)",
                st.value_gc_runs,
                st.value_bytes_relocated,
                st.filtered_entries
            );
        }
        // (GC steps may still run: a key reads as written or as filtered.)
        let mut gone = Vec::new();
        for (k, v) in &last {
            let got = db.get(k).unwrap();
            assert!(
                got.as_ref() == Some(v) || got == filtered(v),
                "{name}: {k:?} read {got:?}"
            );
            if got.is_none() {
                gone.push(k.clone());
            }
        }
        db.close().unwrap();
        // Reopened without the filter, nothing changes any more: what was removed stays
        // removed, every key reads as written or filtered, and scans agree with gets.
        let mut opts = (config.build)(Path::new("/db"), fs.clone());
        opts.compaction_filter = None;
        let db = Db::open("/db", opts).unwrap();
        let mut expected = BTreeMap::new();
        for (k, v) in &last {
            let got = db.get(k).unwrap();
            assert!(
                got.as_ref() == Some(v) || got == filtered(v),
                "{name}: after a reopen {k:?} read {got:?}"
            );
            if gone.contains(k) {
                assert_eq!(got, None, "{name}: {k:?} came back");
            }
            if let Some(g) = got {
                expected.insert(k.clone(), g);
            }
        }
        if name != "hashkv" {
            let filtered_reads = last
                .iter()
                .filter(|(k, v)| expected.get(*k) != Some(*v))
                .count();
            assert!(
                filtered_reads > 0,
                "{name}: no GC decision reached a reader"
            );
        }
        assert_db_matches(&db, &expected);
        db.close().unwrap();
    }
}

/// Removes values starting with `x` in compactions only (a flush keeps them).
struct AtCompaction;

impl CompactionFilter for AtCompaction {
    fn name(&self) -> &str {
        "at-compaction"
    }

    fn filter(&self, e: &FilterEntry<'_>) -> Decision {
        match (e.reason(), e.value()) {
            (strata::FilterReason::Compaction { .. }, Ok(v)) if v.starts_with(b"x") => {
                Decision::Remove
            }
            _ => Decision::Keep,
        }
    }
}

#[test]
fn a_removal_in_a_compaction_hides_the_older_versions_below() {
    for name in [
        "default",
        "blob",
        "cleveldb",
        "matrixkv",
        "ohdb-l0p",
        "hyperleveldb",
    ] {
        let config = strata_testkit::configs::named(name);
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let db = open(&config, &fs, Arc::new(AtCompaction));
        // Old versions as deep as they go, then newer ones the compactions remove.
        for i in 0..1_000u64 {
            db.put(
                format!("key{i:04}"),
                format!("old{i}-{}", "o".repeat((i % 5) as usize * 60)),
            )
            .unwrap();
        }
        db.compact_range(None, None).unwrap();
        for i in 0..1_000u64 {
            db.put(
                format!("key{i:04}"),
                format!("x{i}-{}", "n".repeat((i % 5) as usize * 60)),
            )
            .unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        assert_db_matches(&db, &BTreeMap::new());
        db.close().unwrap();
        let db = open(&config, &fs, Arc::new(AtCompaction));
        assert_db_matches(&db, &BTreeMap::new());
        db.close().unwrap();
    }
}

/// Removes values starting with `x` in the jobs `at` names.
struct RemoveAt(fn(strata::FilterReason) -> bool);

impl CompactionFilter for RemoveAt {
    fn name(&self) -> &str {
        "remove-at"
    }

    fn filter(&self, e: &FilterEntry<'_>) -> Decision {
        match e.value() {
            Ok(v) if (self.0)(e.reason()) && v.starts_with(b"x") => Decision::Remove,
            _ => Decision::Keep,
        }
    }
}

/// A filter's removal is what no read returned before, and a replayed WAL is not filtered:
/// shown before the job's manifest record is durable, a power cut would bring back a value
/// a reader saw removed while later synced writes survive. So no reader sees it until the
/// record is durable: with every manifest sync failing, the job fails and the value still
/// reads (before the rule, the flush's and the manual compaction's results were installed
/// first and the value read as gone), and still does after a power cut.
#[test]
fn a_filters_result_is_not_shown_before_its_record_is_durable() {
    use strata::fs::{CrashMode, FaultFs, FaultRule, FsOp};
    use strata::FilterReason;
    let at_flush: fn(FilterReason) -> bool = |r| r == FilterReason::Flush;
    let at_compaction: fn(FilterReason) -> bool = |r| matches!(r, FilterReason::Compaction { .. });
    for config in configs() {
        for (job, at) in [("flush", at_flush), ("compaction", at_compaction)] {
            let mem = MemFs::new();
            let faults = Arc::new(FaultFs::new(mem.clone()));
            let fs: Arc<dyn Fs> = faults.clone();
            let db = open(&config, &fs, Arc::new(RemoveAt(at)));
            let sync = strata::WriteOptions {
                sync: true,
                ..Default::default()
            };
            let mut b = strata::WriteBatch::new();
            b.put(b"gone?", b"x-value");
            b.put(b"kept", b"k-value");
            db.write(&sync, b).unwrap();
            let mut rule = FaultRule::always(FsOp::Sync).on_paths("MANIFEST");
            if job == "compaction" {
                db.flush().unwrap();
                // The compaction's own flush first: one record, synced as before.
                db.put(b"other", b"o-value").unwrap();
                rule.skip = 1;
            }
            faults.inject(rule);
            let failed = if job == "flush" {
                db.flush()
            } else {
                db.compact_range(None, None)
            };
            assert!(
                failed.is_err(),
                "{} {job}: the manifest sync failed",
                config.name
            );
            let ro = ReadOptions::default();
            assert_eq!(
                db.get_opt(&ro, b"gone?").unwrap().as_deref(),
                Some(&b"x-value"[..]),
                "{} {job}: removed before its record was durable",
                config.name
            );
            let cut: Arc<dyn Fs> = Arc::new(mem.crash_clone(CrashMode::DropUnsynced));
            drop(db);
            let mut opts = (config.build)(Path::new("/db"), cut);
            opts.compaction_filter = None;
            let db = Db::open("/db", opts).unwrap();
            assert_eq!(db.get(b"gone?").unwrap().as_deref(), Some(&b"x-value"[..]));
            assert_eq!(db.get(b"kept").unwrap().as_deref(), Some(&b"k-value"[..]));
            db.close().unwrap();
        }
    }
}

/// Orphans, held up at its first entry once armed until the test says go.
struct GatedOrphans {
    armed: std::sync::atomic::AtomicBool,
    gate: Mutex<(bool, bool)>,
    cv: std::sync::Condvar,
}

impl CompactionFilter for GatedOrphans {
    fn name(&self) -> &str {
        "gated-orphans"
    }

    fn filter(&self, e: &FilterEntry<'_>) -> Decision {
        if self.armed.swap(false, std::sync::atomic::Ordering::AcqRel) {
            let mut g = self.gate.lock().unwrap();
            g.0 = true;
            self.cv.notify_all();
            while !g.1 {
                g = self.cv.wait(g).unwrap();
            }
        }
        Orphans.filter(e)
    }
}

/// A filter that decides from the database's state may see a write not synced yet (here
/// the delete of a collection's record, which makes its members orphans): the job makes
/// that write durable before its own record, or a power cut that keeps the job's result
/// loses the write, and the collection comes back without its members (strata-server's
/// hashes with their fields gone: the review of its key space found it).
#[test]
fn what_a_filter_decided_from_is_durable_before_its_result() {
    use strata::fs::CrashMode;
    for name in ["default", "hashkv", "matrixkv", "wisckey", "cleveldb"] {
        let config = strata_testkit::configs::named(name);
        let mem = MemFs::new();
        let fs: Arc<dyn Fs> = Arc::new(mem.clone());
        let filter = Arc::new(GatedOrphans {
            armed: false.into(),
            gate: Mutex::new((false, false)),
            cv: std::sync::Condvar::new(),
        });
        let db = Arc::new(open(&config, &fs, filter.clone()));
        let sync = strata::WriteOptions {
            sync: true,
            ..Default::default()
        };
        // Two overlapping tables, so that the compaction merges (and offers) them.
        for round in 0..2 {
            let mut b = strata::WriteBatch::new();
            b.put(b"meta/a", b"1");
            for i in 0..200 {
                b.put(format!("member/a/{i:04}"), format!("{round}-{i}"));
            }
            db.write(&sync, b).unwrap();
            db.flush().unwrap();
        }
        filter
            .armed
            .store(true, std::sync::atomic::Ordering::Release);
        let compacting = {
            let db = db.clone();
            std::thread::spawn(move || db.compact_range(None, None))
        };
        {
            let mut g = filter.gate.lock().unwrap();
            while !g.0 {
                g = filter.cv.wait(g).unwrap();
            }
            // Acknowledged, not synced: in the WAL only.
            db.delete(b"meta/a").unwrap();
            g.1 = true;
            filter.cv.notify_all();
        }
        compacting.join().unwrap().unwrap();
        let cut: Arc<dyn Fs> = Arc::new(mem.crash_clone(CrashMode::DropUnsynced));
        drop(db);
        let mut opts = (config.build)(Path::new("/db"), cut);
        opts.compaction_filter = None;
        let db = Db::open("/db", opts).unwrap();
        let members = db
            .iter(ReadOptions::default())
            .unwrap()
            .map(|r| r.unwrap().0)
            .filter(|k| k.starts_with(b"member/a/"))
            .count();
        if db.get(b"meta/a").unwrap().is_some() {
            assert_eq!(
                members, 200,
                "{name}: the record came back without its members"
            );
        }
        db.close().unwrap();
    }
}
