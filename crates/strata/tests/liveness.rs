//! Writes never stop for good: the database the `hyperleveldb` picker once stopped writes on
//! (issue 35; `fixtures/hyperleveldb-stall/`, levels `[9 12 16 138]`, L0 past its stop
//! trigger and the picker handing out nothing) takes writes again, and the write-path
//! watchdog (`Options::write_stall_limit`) turns a stall into an error naming the tree.
//! The rule itself is checked against the pickers over random trees in
//! `compaction/picker/tests.rs` (`a_stopped_tree_always_has_a_runnable_job`).

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use strata::{Db, Options, ReadOptions};
use strata_testkit::TempDir;

/// The fixture's options (its README): the `hyperleveldb` preset with small sizes and a
/// finite stop trigger.
fn fixture_options() -> Options {
    Options {
        write_buffer_size: 65536,
        target_file_size_base: 16384,
        max_bytes_for_level_base: 65536,
        level0_file_num_compaction_trigger: 2,
        level0_slowdown_writes_trigger: 4,
        level0_stop_writes_trigger: 8,
        num_levels: 4,
        create_if_missing: false,
        write_stall_limit: Some(Duration::from_secs(10)),
        ..Options::preset("hyperleveldb").unwrap()
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        std::fs::copy(entry.path(), &dest).unwrap();
        let mut perms = std::fs::metadata(&dest).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&dest, perms).unwrap();
    }
}

fn count(db: &Db) -> usize {
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    it.status().unwrap();
    n
}

fn key(i: u32) -> Vec<u8> {
    format!("\u{7f}liveness-{i:05}").into_bytes()
}

#[test]
fn the_stalled_hyperleveldb_fixture_takes_writes() {
    let dir = TempDir::new("liveness");
    let db_dir = dir.path().join("db");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hyperleveldb-stall");
    copy_dir(&fixture, &db_dir);

    let (tx, rx) = mpsc::channel();
    let path = db_dir.clone();
    let writer = std::thread::spawn(move || {
        let run = || -> strata::Result<(usize, String, usize)> {
            let db = Db::open(&path, fixture_options())?;
            let levels_at_open = db.property("strata.levels").unwrap();
            let before = count(&db);
            // 400 KiB: the memtable (64 KiB) switches six times, each switch past L0's stop
            // trigger until compactions bring it down.
            let value = vec![b'v'; 1024];
            for i in 0..400 {
                assert!(db.get(key(i))?.is_none());
                db.put(key(i), &value)?;
            }
            db.flush()?;
            db.wait_for_compactions()?;
            for i in 0..400 {
                assert_eq!(db.get(key(i))?.as_deref(), Some(&value[..]));
            }
            let after = count(&db);
            Ok((before, levels_at_open, after))
        };
        let _ = tx.send(run());
    });
    // The watchdog fails a stalled write after 10 s; the timeout here catches a hang the
    // watchdog would miss.
    let outcome = rx
        .recv_timeout(Duration::from_secs(300))
        .expect("the writes on the fixture neither completed nor failed in 300 s: a hang");
    writer.join().unwrap();
    let (before, levels_at_open, after) = outcome.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(levels_at_open, "[9 12 16 138]", "the fixture as it stalled");
    assert_eq!(
        after,
        before + 400,
        "every fixture key kept, every new one added"
    );

    // Reopened, nothing was lost, and L0 is below its stop trigger.
    let db = Db::open(&db_dir, fixture_options()).unwrap();
    assert_eq!(count(&db), after);
    let l0: usize = db
        .property("strata.num-files-at-level0")
        .unwrap()
        .parse()
        .unwrap();
    assert!(l0 < 8, "L0 still at its stop trigger: {l0} tables");
}
