//! Flushed tables placed below L0 (`Options::max_mem_compaction_level`, LevelDB's and
//! HyperLevelDB's `kMaxMemCompactLevel`): only where they overlap nothing above, so a read
//! never finds an older version above a newer one; with a `level_dir`, written there.

use std::path::Path;
use std::sync::Arc;

use strata::fs::MemFs;
use strata::{Db, Options};

fn files(db: &Db) -> Vec<usize> {
    (0..3)
        .map(|l| {
            db.property(&format!("strata.num-files-at-level{l}"))
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect()
}

fn opts(max_mem_compaction_level: usize) -> Options {
    Options {
        write_buffer_size: 256 << 10,
        level0_file_num_compaction_trigger: 8,
        num_levels: 4,
        max_mem_compaction_level,
        read_compaction_bytes: 0,
        fs: Arc::new(MemFs::new()),
        ..Options::default()
    }
}

fn put_range(db: &Db, from: u8, to: u8, value: &str) {
    for c in from..=to {
        db.put([c], value).unwrap();
    }
    db.flush().unwrap();
}

#[test]
fn a_flushed_table_goes_as_deep_as_nothing_overlaps_it() {
    let db = Db::open("/db", opts(2)).unwrap();
    put_range(&db, b'm', b'n', "1");
    assert_eq!(files(&db), vec![0, 0, 1], "nothing anywhere: down to L2");
    put_range(&db, b'a', b'z', "2");
    assert_eq!(files(&db), vec![0, 1, 1], "overlaps L2: stops in L1");
    put_range(&db, b'b', b'c', "3");
    assert_eq!(files(&db), vec![1, 1, 1], "overlaps L1: stays in L0");
    assert_eq!(db.stats().flushed_tables_per_level[..3], [1, 1, 1]);
    assert_eq!(db.get([b'm']).unwrap(), Some(b"2".to_vec()));
    assert_eq!(db.get([b'b']).unwrap(), Some(b"3".to_vec()));
}

#[test]
fn a_table_overlapping_l0_stays_in_l0() {
    // L1 holds [a, b]; L0 holds [a, z]. A new table [x, y] overlaps nothing in L1 or L2, but
    // the L0 table holds older x and y: placed below it, reads would return those.
    let db = Db::open("/db", opts(1)).unwrap();
    put_range(&db, b'a', b'b', "1");
    put_range(&db, b'a', b'z', "2");
    assert_eq!(files(&db), vec![1, 1, 0]);
    put_range(&db, b'x', b'y', "3");
    assert_eq!(files(&db), vec![2, 1, 0]);
    assert_eq!(db.get([b'x']).unwrap(), Some(b"3".to_vec()));
    assert_eq!(db.get([b'z']).unwrap(), Some(b"2".to_vec()));
}

#[test]
fn off_by_default() {
    let db = Db::open("/db", opts(0)).unwrap();
    put_range(&db, b'm', b'n', "1");
    assert_eq!(files(&db), vec![1, 0, 0]);
}

/// Tables in `dir` (the numbers of its `.sst` files).
fn tables_in(fs: &MemFs, dir: &str) -> usize {
    strata_testkit::count_files(fs, Path::new(dir), ".sst")
}

#[test]
fn across_directories_a_flush_placed_below_l0_is_written_where_levels_live() {
    let fs = Arc::new(MemFs::new());
    let two_dirs = || Options {
        level_dir: Some(Path::new("/deep").to_path_buf()),
        fs: fs.clone(),
        ..opts(2)
    };
    let db = Db::open("/db", two_dirs()).unwrap();
    put_range(&db, b'm', b'n', "1");
    assert_eq!(files(&db), vec![0, 0, 1], "nothing anywhere: down to L2");
    assert_eq!((tables_in(&fs, "/db"), tables_in(&fs, "/deep")), (0, 1));
    put_range(&db, b'a', b'z', "2");
    assert_eq!(files(&db), vec![0, 1, 1], "overlaps L2: stops in L1");
    put_range(&db, b'b', b'c', "3");
    assert_eq!(files(&db), vec![1, 1, 1], "overlaps L1: stays in L0");
    assert_eq!((tables_in(&fs, "/db"), tables_in(&fs, "/deep")), (1, 2));
    db.close().unwrap();
    drop(db);
    let db = Db::open("/db", two_dirs()).unwrap();
    assert_eq!(files(&db), vec![1, 1, 1]);
    assert_eq!(db.get([b'm']).unwrap(), Some(b"2".to_vec()));
    assert_eq!(db.get([b'b']).unwrap(), Some(b"3".to_vec()));
    assert_eq!(db.get([b'y']).unwrap(), Some(b"2".to_vec()));
}

#[test]
fn validation_names_the_option() {
    let e = Db::open(
        "/db",
        Options {
            num_levels: 3,
            ..opts(3)
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("max_mem_compaction_level"), "{e}");
}
