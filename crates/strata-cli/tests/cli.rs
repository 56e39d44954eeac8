//! The `strata` binary, run as a user runs it.

use std::path::Path;
use std::process::{Command, Output};

fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .expect("the strata binary runs")
}

fn ok(args: &[&str]) -> String {
    let o = strata(args);
    assert!(
        o.status.success(),
        "strata {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("strata-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn put_get_delete_scan_count() {
    let dir = temp_dir("basic");
    let db = dir.to_str().unwrap();
    ok(&["put", "--db", db, "--create", "alpha", "1"]);
    for (k, v) in [
        ("beta", "2"),
        ("gamma", "3"),
        ("delta", "4"),
        ("b\\x00in", "\\xff"),
    ] {
        ok(&["put", "--db", db, k, v]);
    }
    assert_eq!(ok(&["get", "--db", db, "alpha"]), "1\n");
    assert_eq!(ok(&["get", "--db", db, "b\\x00in"]), "\\xff\n");
    assert_eq!(
        ok(&[
            "get",
            "--db",
            db,
            "--hex",
            "620069 6e".replace(' ', "").as_str()
        ]),
        "ff\n"
    );
    assert_eq!(
        ok(&["get", "--db", db, "--json", "beta"]),
        "{\"key\":\"beta\",\"value\":\"2\"}\n"
    );
    // UTF-8 as it is (and in JSON as a string); --escape gives the all-ASCII form; bytes
    // that are not UTF-8 are a hex field in JSON; non-ASCII --hex input is an error, not a
    // panic.
    ok(&["put", "--db", db, "zürich", "grüezi"]);
    assert_eq!(ok(&["get", "--db", db, "zürich"]), "grüezi\n");
    assert_eq!(
        ok(&["get", "--db", db, "--escape", "zürich"]),
        "gr\\xc3\\xbcezi\n"
    );
    assert_eq!(
        ok(&["get", "--db", db, "--json", "zürich"]),
        "{\"key\":\"zürich\",\"value\":\"grüezi\"}\n"
    );
    ok(&["put", "--db", db, "raw", "\\xff\\xfe"]);
    assert_eq!(
        ok(&["get", "--db", db, "--json", "raw"]),
        "{\"key\":\"raw\",\"value_hex\":\"fffe\"}\n"
    );
    let o = strata(&["get", "--db", db, "--hex", "zé"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not hex"));
    // Flags a command does not use are refused, not ignored.
    for args in [
        &["dump", "--db", db, "--json"][..],
        &["load", "--db", db, "--escape"],
        &["repair", "--db", db, "--hex"],
        &["check", "--db", db, "--json"],
        &["flush", "--db", db, "--escape"],
    ] {
        let o = strata(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("unexpected argument"),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // ... and a command's help lists only the flags it takes.
    let help = ok(&["dump", "--help"]);
    assert!(
        help.contains("--escape") && !help.contains("--json"),
        "{help}"
    );
    assert!(ok(&["get", "--help"]).contains("--json"));
    assert!(!ok(&["check", "--help"]).contains("--hex"));
    ok(&["delete", "--db", db, "zürich"]);
    ok(&["delete", "--db", db, "raw"]);

    // A missing key: exit status 1, a message, nothing on stdout.
    let o = strata(&["get", "--db", db, "omega"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not found"));
    assert!(o.stdout.is_empty());

    assert_eq!(
        ok(&["scan", "--db", db]),
        "alpha\t1\nb\\x00in\t\\xff\nbeta\t2\ndelta\t4\ngamma\t3\n"
    );
    assert_eq!(
        ok(&[
            "scan",
            "--db",
            db,
            "--reverse",
            "--limit",
            "2",
            "--keys-only"
        ]),
        "gamma\ndelta\n"
    );
    assert_eq!(
        ok(&[
            "scan",
            "--db",
            db,
            "--from",
            "b",
            "--to",
            "d",
            "--keys-only"
        ]),
        "b\\x00in\nbeta\n"
    );
    assert_eq!(ok(&["scan", "--db", db, "--prefix", "be"]), "beta\t2\n");
    assert_eq!(
        ok(&["scan", "--db", db, "--prefix", "g", "--json"]),
        "{\"key\":\"gamma\",\"value\":\"3\"}\n"
    );
    assert_eq!(ok(&["count", "--db", db]), "5\n");
    assert_eq!(
        ok(&["count", "--db", db, "--prefix", "b", "--json"]),
        "{\"count\":2}\n"
    );

    ok(&["delete", "--db", db, "beta"]);
    assert_eq!(strata(&["get", "--db", db, "beta"]).status.code(), Some(1));
    assert_eq!(ok(&["count", "--db", db]), "4\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_path_that_is_no_database_is_refused_and_left_alone() {
    let dir = temp_dir("nodb");
    let db = dir.to_str().unwrap();
    let o = strata(&["get", "--db", db, "k"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a strata database"));
    assert!(!Path::new(db).exists(), "nothing may be created");
}

#[test]
fn bad_input_is_refused_with_a_reason() {
    let dir = temp_dir("bad");
    let db = dir.to_str().unwrap();
    ok(&["put", "--db", db, "--create", "k", "v"]);
    for (args, says) in [
        (vec!["get", "--db", db, "--hex", "abc"], "odd number"),
        (vec!["get", "--db", db, "a\\q"], "unknown escape"),
        (
            vec!["get", "--db", db, "--preset", "nonesuch", "k"],
            "preset",
        ),
        (vec!["scan", "--db", db, "--limit", "many"], "invalid value"),
        (vec!["frobnicate", "--db", db], "unrecognized subcommand"),
    ] {
        let o = strata(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // An argument that does not parse, or a dump that is not there: `--create` creates
    // nothing.
    let new = dir.join("new");
    let n = new.to_str().unwrap();
    for args in [
        vec!["put", "--db", n, "--create", "C:\\path", "v"],
        vec!["load", "--db", n, "--create", "-i", "/nonexistent-dump"],
    ] {
        let o = strata(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(!new.exists(), "{args:?} created the database");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_database_another_process_holds_is_refused_at_once() {
    let dir = temp_dir("locked");
    let db = dir.to_str().unwrap();
    ok(&["put", "--db", db, "--create", "k", "v"]);
    let held = strata::Db::open(db, strata::Options::default()).unwrap();
    // Reading needs no lock (a read-only open); writing is refused at once.
    assert_eq!(ok(&["get", "--db", db, "k"]), "v\n");
    let o = strata(&["put", "--db", db, "k", "w"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .to_lowercase()
            .contains("lock"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    drop(held);
    assert_eq!(ok(&["get", "--db", db, "k"]), "v\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dump_and_load_round_trip_every_byte() {
    let dir = temp_dir("dump");
    let src = dir.join("src");
    let dst = dir.join("dst");
    {
        let db = strata::Db::open(&src, strata::Options::default()).unwrap();
        for i in 0..3000u32 {
            // Keys and values holding every byte value, tabs and newlines included.
            let key: Vec<u8> = format!("k{i:05}")
                .bytes()
                .chain([(i % 256) as u8, b'\t'])
                .collect();
            let value: Vec<u8> = (0..(i % 300)).map(|j| ((i + j) % 256) as u8).collect();
            db.put(key, value).unwrap();
        }
    }
    for hex in [false, true] {
        let file = dir.join(format!("dump-{hex}.txt"));
        let mut args = vec![
            "dump",
            "--db",
            src.to_str().unwrap(),
            "-o",
            file.to_str().unwrap(),
        ];
        if hex {
            args.push("--hex");
        }
        ok(&args);
        let _ = std::fs::remove_dir_all(&dst);
        let mut args = vec![
            "load",
            "--db",
            dst.to_str().unwrap(),
            "--create",
            "-i",
            file.to_str().unwrap(),
            "--json",
        ];
        if hex {
            args.push("--hex");
        }
        assert_eq!(ok(&args), "{\"loaded\":3000}\n");
        let a = strata::Db::open(&src, strata::Options::default()).unwrap();
        let b = strata::Db::open(&dst, strata::Options::default()).unwrap();
        let all = |db: &strata::Db| -> Vec<(Vec<u8>, Vec<u8>)> {
            db.iter(strata::ReadOptions::default())
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        assert_eq!(all(&a).len(), 3000);
        assert!(all(&a) == all(&b), "hex {hex}: the loaded database differs");
    }
    // A damaged line is refused, naming it.
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "a\tb\nno tab here\n").unwrap();
    let o = strata(&[
        "load",
        "--db",
        dst.to_str().unwrap(),
        "-i",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("line 2"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn put_with_a_ttl_expires_and_a_bad_ttl_is_refused() {
    let dir = temp_dir("ttl");
    let db = dir.to_str().unwrap();
    ok(&["put", "--db", db, "--create", "k", "old"]);
    ok(&["put", "--db", db, "k", "brief", "--ttl", "0.4"]);
    ok(&["put", "--db", db, "long", "1", "--ttl", "3600"]);
    for bad in ["-1", "soon", "inf"] {
        let o = strata(&["put", "--db", db, "k", "v", "--ttl", bad]);
        assert_eq!(o.status.code(), Some(2), "--ttl {bad}: {o:?}");
    }
    std::thread::sleep(std::time::Duration::from_millis(600));
    // Gone, and the older value does not come back.
    let o = strata(&["get", "--db", db, "k"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert_eq!(ok(&["scan", "--db", db]), "long\t1\n");
    // A dump keeps the expiry, and a load writes it back as it was.
    let dump = ok(&["dump", "--db", db]);
    assert!(dump.contains("long\t1\texpires="), "{dump}");
    let copy = dir.join("copy");
    let copy = copy.to_str().unwrap();
    let loaded = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["load", "--db", copy, "--create"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write as _;
            c.stdin.take().unwrap().write_all(dump.as_bytes())?;
            c.wait()
        })
        .unwrap();
    assert!(loaded.success());
    assert_eq!(ok(&["dump", "--db", copy]), dump);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn backup_create_list_verify_restore_purge() {
    let dir = temp_dir("backup");
    let db = dir.join("db");
    let (db, backups) = (db.to_str().unwrap(), dir.join("backups"));
    let backups = backups.to_str().unwrap();
    ok(&["put", "--db", db, "--create", "k1", "v1"]);
    let made = ok(&["backup", "create", "--db", db, backups]);
    assert!(made.starts_with("backup 1: "), "{made}");
    ok(&["put", "--db", db, "k2", "v2"]);
    ok(&["backup", "create", "--db", db, backups]);
    let list = ok(&["backup", "list", backups]);
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(list.starts_with("1\t"), "{list}");
    let json = ok(&["backup", "list", backups, "--json"]);
    assert!(json.lines().all(|l| l.starts_with("{\"id\":")), "{json}");
    assert_eq!(
        ok(&["backup", "verify", backups]),
        "backup 1: ok\nbackup 2: ok\n"
    );
    // One damaged: each backup is still checked, each failure named, the exit a failure.
    let private = Path::new(backups).join("private");
    let one = std::fs::read_dir(&private)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("1-OPTIONS")
        })
        .unwrap();
    let kept = std::fs::read(&one).unwrap();
    let mut bad = kept.clone();
    bad[0] ^= 1;
    std::fs::write(&one, &bad).unwrap();
    let o = strata(&["backup", "verify", backups]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "backup 2: ok\n");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("backup 1: "),
        "{o:?}"
    );
    std::fs::write(&one, &kept).unwrap();
    let r1 = dir.join("r1");
    ok(&["backup", "restore", backups, "1", r1.to_str().unwrap()]);
    assert_eq!(ok(&["get", "--db", r1.to_str().unwrap(), "k1"]), "v1\n");
    let o = strata(&["get", "--db", r1.to_str().unwrap(), "k2"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    // A target that exists, an unknown backup, a directory with no backups: refused.
    for args in [
        vec!["backup", "restore", backups, "1", r1.to_str().unwrap()],
        vec![
            "backup",
            "restore",
            backups,
            "7",
            "/tmp/strata-cli-nowhere-restore",
        ],
        vec!["backup", "list", db],
    ] {
        let o = strata(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
    }
    assert_eq!(
        ok(&["backup", "purge", backups, "--keep", "1"]),
        "deleted 1 backups\n"
    );
    let list = ok(&["backup", "list", backups]);
    assert!(
        list.starts_with("2\t") && list.lines().count() == 1,
        "{list}"
    );
    let r2 = dir.join("r2");
    ok(&["backup", "restore", backups, "2", r2.to_str().unwrap()]);
    assert_eq!(ok(&["get", "--db", r2.to_str().unwrap(), "k2"]), "v2\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn checkpoint_writes_an_openable_copy_and_refuses_a_target_that_exists() {
    let dir = temp_dir("checkpoint");
    let db = dir.join("db");
    let (db, ckpt) = (db.to_str().unwrap(), dir.join("ckpt"));
    let ckpt = ckpt.to_str().unwrap();
    ok(&["put", "--db", db, "--create", "k1", "v1"]);
    ok(&["checkpoint", "--db", db, ckpt]);
    ok(&["put", "--db", db, "k2", "v2"]);
    assert_eq!(ok(&["get", "--db", ckpt, "k1"]), "v1\n");
    let o = strata(&["get", "--db", ckpt, "k2"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let o = strata(&["checkpoint", "--db", db, ckpt]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("exists"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn flush_compact_property_info_stats() {
    let dir = temp_dir("admin");
    let db = dir.to_str().unwrap();
    ok(&["put", "--db", db, "--create", "k1", "v1"]);
    ok(&["put", "--db", db, "k2", "v2"]);
    ok(&["flush", "--db", db]);
    ok(&["compact", "--db", db]);
    ok(&["compact", "--db", db, "--from", "k1", "--to", "k2"]);
    let tables: u64 = ok(&["property", "--db", db, "strata.tables"])
        .trim()
        .parse()
        .unwrap();
    assert!(tables >= 1);
    let o = strata(&["property", "--db", db, "strata.nonesuch"]);
    assert_eq!(o.status.code(), Some(1));
    let info = ok(&["info", "--db", db]);
    assert!(
        info.contains("strata.levels:") && info.contains("strata.l0-layout: Flat"),
        "{info}"
    );
    // The options the previous open (`property` above, default preset) recorded.
    assert!(
        info.contains("options recorded by the previous open:\n")
            && info.contains("\nwrite_buffer_size = 67108864\n")
            && info.contains("\nvalue_store = Inline\n"),
        "{info}"
    );
    // A command that only reads records nothing: OPTIONS is still the last writer's.
    ok(&["get", "--db", db, "--preset", "blob", "k1"]);
    let json = ok(&["info", "--db", db, "--json"]);
    assert!(
        json.starts_with("{\"strata.levels\":") && json.ends_with("}\n"),
        "{json}"
    );
    assert!(json.contains("value_store = Inline"), "{json}");
    ok(&["put", "--db", db, "--preset", "blob", "k3", "v3"]);
    let json = ok(&["info", "--db", db, "--json"]);
    assert!(json.contains("value_store = BlobFiles"), "{json}");
    assert!(ok(&["stats", "--db", db]).contains("Flushes"));
    assert_eq!(ok(&["get", "--db", db, "k2"]), "v2\n");
    // Reading never writes: every file as it was, whatever preset a reader names (`info`
    // with another preset once moved an L0 to that layout and rewrote OPTIONS).
    let files = || {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let before = files();
    for args in [
        &["get", "--db", db, "k1"][..],
        &["scan", "--db", db],
        &["count", "--db", db],
        &["dump", "--db", db],
        &["info", "--db", db, "--preset", "ohdb-l0p"],
        &["stats", "--db", db],
        &["property", "--db", db, "strata.levels"],
    ] {
        ok(args);
    }
    assert!(files() == before, "a command that only reads changed files");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn file_dumps_show_contents_and_report_every_damaged_block() {
    let dir = temp_dir("dumps");
    let opts = || strata::Options {
        write_buffer_size: 64 << 10,
        block_size: 1024,
        ..strata::Options::default()
    };
    {
        let db = strata::Db::open(&dir, opts()).unwrap();
        for i in 0..2000u32 {
            db.put(format!("key{i:05}"), format!("value {i}")).unwrap();
        }
        db.flush().unwrap();
        db.put("last", "in the wal").unwrap();
    }
    let files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path().to_str().unwrap().to_string())
        .collect();
    let table = files.iter().find(|f| f.ends_with(".sst")).unwrap().clone();
    let wal = files
        .iter()
        .filter(|f| f.ends_with(".log"))
        .max()
        .unwrap()
        .clone();

    let dump = ok(&["sst-dump", &table, "--entries"]);
    assert!(
        dump.contains("block 1 at") && dump.contains(" @ "),
        "{dump}"
    );
    assert!(dump.contains(" Put value "), "{}", &dump[..400]);
    assert!(ok(&["wal-dump", &wal]).contains("Put last in the wal"));
    let edits = ok(&["manifest-dump", "--db", dir.to_str().unwrap()]);
    // Each manifest starts with where the files are, then the snapshot.
    assert!(
        edits.starts_with("offset 0:\n  database at ")
            && edits.contains("\n  directories: every file in the database directory\n")
            && edits.contains("\n  format version"),
        "{edits}"
    );
    // Keys as `scan` shows them, not as byte arrays.
    assert!(
        edits.contains("  add L") && !edits.contains("[107, 101"),
        "{edits}"
    );
    // A file that is not a WAL is named as such.
    let o = strata(&["wal-dump", &table]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a WAL"));
    // --verify says what it verified.
    assert!(ok(&["sst-dump", &table, "--verify"]).contains("verified: footer, index block"));

    // Two blocks damaged: both reported, with the file and their offsets; exit status 2.
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[10] ^= 0x40;
    bytes[3000] ^= 0x40;
    std::fs::write(&table, &bytes).unwrap();
    // Without --verify only the footer, index and properties are read.
    assert!(strata(&["sst-dump", &table]).status.success());
    let o = strata(&["sst-dump", &table, "--verify"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("2 problems found"), "{err}");
    // Each damaged block on a line of its own, naming the table once, with its offset.
    let lines: Vec<&str> = err.lines().filter(|l| l.contains(table.as_str())).collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].contains("offset 0"), "{err}");
    for l in &lines {
        assert_eq!(l.matches(table.as_str()).count(), 1, "{l}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn check_reports_every_problem_in_every_live_file() {
    let dir = temp_dir("check");
    let values = dir.join("values");
    let opts = || strata::Options {
        write_buffer_size: 64 << 10,
        block_size: 1024,
        value_dir: Some(values.clone()),
        ..strata::Options::preset("blob").unwrap()
    };
    {
        let db = strata::Db::open(&dir, opts()).unwrap();
        for i in 0..3000u32 {
            let v = if i % 2 == 0 {
                vec![b'v'; 400]
            } else {
                b"small".to_vec()
            };
            db.put(format!("key{i:05}"), v).unwrap();
        }
        db.flush().unwrap();
    }
    let db = dir.to_str().unwrap();
    let vd = values.to_str().unwrap();
    // Without --preset or --value-dir, a tool opens with the options the database's last
    // writing open recorded: it finds the separated values where they are.
    assert_eq!(ok(&["get", "--db", db, "key00000"]).len(), 401);
    assert_eq!(ok(&["count", "--db", db]), "3000\n");
    let out = ok(&["check", "--db", db, "--preset", "blob", "--value-dir", vd]);
    assert!(
        out.contains("no problems found") && out.contains("value file"),
        "{out}"
    );
    let blob_path = std::fs::read_dir(&values)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "blob"))
        .unwrap();
    let info = ok(&["info", "--db", db, "--preset", "blob", "--value-dir", vd]);
    assert!(info.contains("strata.features: blob-files"), "{info}");
    let dump = ok(&["value-dump", blob_path.to_str().unwrap()]);
    assert!(
        dump.starts_with("blob file ") && dump.contains("offset 16 size "),
        "{dump}"
    );

    // One damaged table block and one damaged blob record: both reported.
    let file_with = |d: &Path, ext: &str| {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == ext))
            .unwrap()
    };
    let table = file_with(&dir, "sst");
    let blob = file_with(&values, "blob");
    for (f, at) in [(&table, 100), (&blob, 500)] {
        let mut bytes = std::fs::read(f).unwrap();
        bytes[at] ^= 0x01;
        std::fs::write(f, bytes).unwrap();
    }
    let o = strata(&["value-dump", blob.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("value record: checksum mismatch"));
    let o = strata(&["check", "--db", db, "--preset", "blob", "--value-dir", vd]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("2 problems found"), "{err}");
    assert!(
        err.contains(table.to_str().unwrap()) && err.contains(blob.to_str().unwrap()),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn repair_brings_back_a_database_whose_manifest_is_gone() {
    let dir = temp_dir("repair");
    let opts = || strata::Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        ..strata::Options::default()
    };
    {
        let db = strata::Db::open(&dir, opts()).unwrap();
        for round in 0..3u32 {
            for i in 0..3000u32 {
                db.put(format!("key{i:05}"), format!("value {i} round {round}"))
                    .unwrap();
            }
        }
    }
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if name.starts_with("MANIFEST-") || name == "CURRENT" {
            std::fs::remove_file(p).unwrap();
        }
    }
    let db = dir.to_str().unwrap();
    // The tool points to repair, not to --create; and --create refuses too, changing
    // nothing (it once created a database over the tables and deleted them: issue 29).
    let files = |d: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let before = files(&dir);
    for args in [
        &["get", "--db", db, "key00001"][..],
        &["count", "--db", db],
        &["check", "--db", db],
        &["put", "--db", db, "--create", "x", "1"],
    ] {
        let o = strata(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("strata repair"), "{args:?}: {err}");
        assert!(!err.contains("--create makes one"), "{args:?}: {err}");
    }
    assert_eq!(files(&dir), before, "a refused command changed files");
    let out = ok(&["repair", "--db", db]);
    assert!(out.starts_with("repaired: 3000 keys"), "{out}");
    assert_eq!(ok(&["count", "--db", db]), "3000\n");
    assert_eq!(ok(&["get", "--db", db, "key02999"]), "value 2999 round 2\n");
    assert!(ok(&["check", "--db", db]).contains("no problems found"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A repair that could not bring everything back says how much it dropped and exits 2; one
/// that dropped nothing the database held exits 0.
#[test]
fn repair_says_what_it_dropped_and_exits_non_zero() {
    let dir = temp_dir("repair-dropped");
    {
        let db = strata::Db::open(&dir, strata::Options::default()).unwrap();
        for i in 0..20000u32 {
            db.put(format!("key{i:06}"), [b'v'; 100]).unwrap();
        }
        db.flush().unwrap();
        db.put("last", "in the WAL").unwrap();
    }
    let db = dir.to_str().unwrap();
    // Nothing damaged: nothing dropped.
    let o = strata(&["repair", "--db", db]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    ok(&["put", "--db", db, "after", "the repair"]);
    // A table cut to half its size: its footer is gone, and so are its entries.
    let table = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .unwrap();
    let len = std::fs::metadata(&table).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&table)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let o = strata(&["repair", "--db", db]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("repair dropped data") && err.contains("20001 entries"),
        "{err}"
    );
    assert_eq!(ok(&["get", "--db", db, "after"]), "the repair\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What a user trips over: a closed pipe ends quietly with status 0 and never blames a
/// table; a file given as --db says so; an unknown property lists the known ones; a load
/// that stops at a bad line says how much it had loaded.
#[test]
fn pipes_paths_properties_and_bad_loads() {
    use std::io::{Read, Write};
    use std::process::Stdio;
    let dir = temp_dir("pipes");
    let db = dir.to_str().unwrap();
    {
        let d = strata::Db::open(db, strata::Options::default()).unwrap();
        for i in 0..20000u32 {
            d.put(format!("key{i:06}"), [b'v'; 40]).unwrap();
        }
        d.flush().unwrap();
    }
    let table = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .unwrap();
    for args in [
        vec!["scan", "--db", db],
        vec!["sst-dump", table.to_str().unwrap(), "--entries"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut head = [0u8; 100];
        child
            .stdout
            .as_mut()
            .unwrap()
            .read_exact(&mut head)
            .unwrap();
        drop(child.stdout.take()); // `| head -c 100`
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }

    let file = dir.join("CURRENT");
    let o = strata(&["get", "--db", file.to_str().unwrap(), "k"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is a file"));

    let o = strata(&["property", "--db", db, "strata.nonesuch"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("strata.levels") && err.contains("strata.kept-files"),
        "{err}"
    );

    let input = dir.join("load.txt");
    let mut f = std::fs::File::create(&input).unwrap();
    for i in 0..30000u32 {
        writeln!(f, "load{i:06}\t{}", "x".repeat(60)).unwrap();
    }
    writeln!(f, "no tab here").unwrap();
    drop(f);
    let o = strata(&["load", "--db", db, "-i", input.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("line 30001") && err.contains("entries before it were loaded"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A database made with its WALs (or its persistent memory) in another directory, then
/// used without naming it: every command finds the recorded directory (and says so), and
/// one naming another directory is refused without changing anything.
#[test]
fn commands_not_given_the_directories_use_the_recorded_ones() {
    let dir = temp_dir("recorded-dirs");
    let (db, wal) = (dir.join("db"), dir.join("wal"));
    let (db, wal) = (db.to_str().unwrap(), wal.to_str().unwrap());
    let input: String = (0..3000).map(|i| format!("k{i}\tv{i}\n")).collect();
    std::fs::create_dir_all(&dir).unwrap();
    let input_file = dir.join("in.tsv");
    std::fs::write(&input_file, input).unwrap();
    let input_file = input_file.to_str().unwrap();
    ok(&[
        "load",
        "--db",
        db,
        "--create",
        "--wal-dir",
        wal,
        "-i",
        input_file,
    ]);
    // Another WAL directory, while the WALs are in --wal-dir: refused, nothing created.
    let elsewhere = dir.join("elsewhere");
    let o = strata(&[
        "put",
        "--db",
        db,
        "--wal-dir",
        elsewhere.to_str().unwrap(),
        "a",
        "b",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("wal_dir") && err.contains(wal), "{err}");
    assert!(!elsewhere.exists(), "a refused open created its directory");
    // No directory: the recorded one is read, and the note says so.
    let o = strata(&["put", "--db", db, "--preset", "default", "x", "y"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(wal),
        "the note names the recorded WAL directory: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(ok(&["count", "--db", db]).trim(), "3001");
    assert_eq!(ok(&["count", "--db", db, "--wal-dir", wal]).trim(), "3001");
    // `check` reports a WAL the manifest expects and cannot find, as an open refuses it.
    ok(&["put", "--db", db, "--wal-dir", wal, "k", "v"]);
    for e in std::fs::read_dir(wal).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "log") {
            std::fs::remove_file(p).unwrap();
        }
    }
    let o = strata(&["check", "--db", db]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("the WAL the manifest expects"), "{err}");

    // matrixkv with its persistent memory (and WALs) in --pmem-dir.
    let (mdb, pmem) = (dir.join("mdb"), dir.join("pmem"));
    let (mdb, pmem) = (mdb.to_str().unwrap(), pmem.to_str().unwrap());
    ok(&[
        "load",
        "--db",
        mdb,
        "--create",
        "--preset",
        "matrixkv",
        "--pmem-dir",
        pmem,
        "-i",
        input_file,
    ]);
    ok(&["put", "--db", mdb, "--preset", "matrixkv", "a", "b"]);
    ok(&["flush", "--db", mdb, "--preset", "matrixkv"]);
    assert_eq!(
        ok(&["count", "--db", mdb, "--preset", "matrixkv"]).trim(),
        "3001"
    );
    let listed: Vec<String> = std::fs::read_dir(mdb)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !listed.iter().any(|n| n.starts_with("matrix.")),
        "a region was created in the database directory: {listed:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `check` reports a WAL cut short after a clean close, which an open refuses.
#[test]
fn check_reports_a_wal_cut_short_after_a_clean_close() {
    let dir = temp_dir("wal-cut");
    {
        let db = strata::Db::open(&dir, strata::Options::default()).unwrap();
        for i in 0..5000u32 {
            db.put(format!("key{i:05}"), [b'v'; 100]).unwrap();
        }
    }
    let db = dir.to_str().unwrap();
    assert!(ok(&["check", "--db", db]).contains("no problems found"));
    let wal = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "log"))
        .unwrap();
    let len = std::fs::metadata(&wal).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&wal)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let o = strata(&["check", "--db", db]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("clean close"), "{err}");
    let o = strata(&["get", "--db", db, "key00000"]);
    assert_eq!(o.status.code(), Some(2), "an open took the cut WAL");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A LevelDB (or RocksDB) database is named as one, and left alone, by every command.
#[test]
fn a_leveldb_database_is_named_as_such_and_left_alone() {
    let dir = temp_dir("leveldb");
    std::fs::create_dir_all(&dir).unwrap();
    // A LevelDB manifest's first record: the comparator (tag 1), the log number (tag 2),
    // the next file number (tag 3), the last sequence (tag 4), as LevelDB writes it.
    let mut edit = vec![1u8, 26];
    edit.extend_from_slice(b"leveldb.BytewiseComparator");
    edit.extend_from_slice(&[2, 3, 3, 4, 4, 0]);
    // (The record framing is LevelDB's too: written through strata's log writer.)
    let mem = strata::fs::MemFs::new();
    strata::fs::Fs::create_dir_all(&mem, std::path::Path::new("/m")).unwrap();
    let m = std::path::Path::new("/m/MANIFEST");
    let mut w = strata::internals::wal::LogWriter::new(strata::fs::Fs::create(&mem, m).unwrap());
    w.add_record(&edit).unwrap();
    w.sync().unwrap();
    drop(w);
    let bytes = strata::fs::read_all(&mem, m).unwrap();
    std::fs::write(dir.join("MANIFEST-000002"), bytes).unwrap();
    std::fs::write(dir.join("CURRENT"), "MANIFEST-000002\n").unwrap();
    std::fs::write(dir.join("000003.log"), b"").unwrap();
    std::fs::write(dir.join("LOCK"), b"").unwrap();
    let db = dir.to_str().unwrap();
    let files = || {
        let mut v: Vec<(String, u64)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.metadata().unwrap().len(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let before = files();
    for args in [&["count", "--db", db][..], &["put", "--db", db, "k", "v"]] {
        let o = strata(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("not a strata database") && err.contains("LevelDB"),
            "{err}"
        );
    }
    assert_eq!(
        files(),
        before,
        "a refused open changed the LevelDB directory"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The help says what the tool does: `--preset` has no default of its own (the recorded
/// options come first), `compact --to` is inclusive where `scan --to` is not, and `stats`
/// says whose counters it shows.
#[test]
fn the_help_does_not_contradict_itself() {
    let put = ok(&["put", "--help"]);
    assert!(!put.contains("[default: default]"), "{put}");
    assert!(put.contains("OPTIONS file"), "{put}");
    assert!(ok(&["compact", "--help"]).contains("inclusive"));
    assert!(ok(&["scan", "--help"]).contains("exclusive"));
    assert!(ok(&["stats", "--help"]).contains("read-only open"));
}

/// `scan` and `dump` stop at the first error and print nothing after it, saying where they
/// stopped: over a damaged table block they used to print older versions of the keys it
/// held (stale values), over a damaged value record an empty value, and go on.
#[test]
fn listings_stop_at_the_first_error_and_print_nothing_stale() {
    let dir = temp_dir("listing-damage");
    {
        let opts = strata::Options {
            block_size: 1024,
            ..strata::Options::default()
        };
        let db = strata::Db::open(&dir, opts).unwrap();
        for i in 0..20000u32 {
            db.put(format!("key{i:06}"), format!("old {i}")).unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        for i in 0..20000u32 {
            db.put(format!("key{i:06}"), format!("new {i}")).unwrap();
        }
        db.flush().unwrap();
    }
    // The newest table (L0, the new values): a byte flipped in its middle.
    let newest = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .max()
        .unwrap();
    let mut bytes = std::fs::read(&newest).unwrap();
    let mid = bytes.len() / 3;
    bytes[mid] ^= 0x5a;
    std::fs::write(&newest, bytes).unwrap();
    let db = dir.to_str().unwrap();
    for cmd in ["scan", "dump"] {
        let o = strata(&[cmd, "--db", db]);
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        assert!(err.contains("the listing stopped there"), "{cmd}: {err}");
        let stale = out.lines().filter(|l| l.contains("\told ")).count();
        assert_eq!(
            stale, 0,
            "{cmd} printed {stale} stale values before stopping"
        );
        assert!(
            !out.contains("end of the dump"),
            "{cmd}: a dump that stopped has no last line"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A dump cut short is refused by `load`: from a file before anything is loaded, from
/// stdin at its end; a whole one loads.
#[test]
fn load_refuses_a_dump_cut_short() {
    let dir = temp_dir("dump-cut");
    let (src, dst) = (dir.join("src"), dir.join("dst"));
    {
        let db = strata::Db::open(&src, strata::Options::default()).unwrap();
        for i in 0..5000u32 {
            db.put(format!("key{i:05}"), format!("value {i}")).unwrap();
        }
    }
    let dump = dir.join("dump.tsv");
    ok(&[
        "dump",
        "--db",
        src.to_str().unwrap(),
        "-o",
        dump.to_str().unwrap(),
    ]);
    let whole = std::fs::read(&dump).unwrap();
    let cut = dir.join("cut.tsv");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let dst_s = dst.to_str().unwrap();
    let o = strata(&[
        "load",
        "--db",
        dst_s,
        "--create",
        "-i",
        cut.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cut short") && err.contains("nothing was loaded"),
        "{err}"
    );
    // From stdin, cut at a line's end: found at the end.
    let at_line = whole[..whole.len() / 2]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["load", "--db", dst_s, "--create"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), &whole[..at_line]).unwrap();
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("cut short"), "{err}");
    ok(&["load", "--db", dst_s, "-i", dump.to_str().unwrap()]);
    assert_eq!(ok(&["count", "--db", dst_s]).trim(), "5000");
    // `-i` naming a pipe: read once, its first line not lost to the check.
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["load", "--db", dst_s, "-i", "/dev/stdin"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"zz-first\tfrom a pipe\n").unwrap();
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(ok(&["get", "--db", dst_s, "zz-first"]), "from a pipe\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A damaged value record under every store that keeps values outside tables (and under
/// coalescing): `scan` and `dump` stop at it, exit 2, and print no key with an empty or
/// wrong value; the dump is one `load` refuses.
#[test]
fn listings_stop_at_a_damaged_value_under_every_value_store() {
    for preset in ["wisckey", "blob", "hashkv", "cleveldb"] {
        let dir = temp_dir(&format!("value-damage-{preset}"));
        {
            let opts = strata::Options {
                min_blob_size: 64,
                ..strata::Options::preset(preset).unwrap()
            };
            let db = strata::Db::open(&dir, opts).unwrap();
            for i in 0..3000u32 {
                db.put(format!("key{i:06}"), format!("{i:06}").repeat(30))
                    .unwrap();
            }
            db.flush().unwrap();
            db.wait_for_compactions().unwrap();
        }
        // Every file that is neither a table, a WAL nor bookkeeping: where the values are.
        let mut damaged = 0;
        let mut stack = vec![dir.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                let name = p.file_name().unwrap().to_str().unwrap().to_string();
                let numbered = name
                    .split('.')
                    .next()
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
                if !numbered || name.ends_with(".sst") || name.ends_with(".log") {
                    continue;
                }
                let mut bytes = std::fs::read(&p).unwrap();
                if bytes.len() < 4096 {
                    continue;
                }
                // Early in the first record, and in the middle (a group file pads its
                // groups with zeros, where a flip is no damage to a value).
                for at in [100, bytes.len() / 2] {
                    bytes[at] ^= 0x5a;
                }
                std::fs::write(&p, bytes).unwrap();
                damaged += 1;
            }
        }
        assert!(damaged > 0, "{preset}: no value file to damage");
        let db = dir.to_str().unwrap();
        for cmd in ["scan", "dump"] {
            let o = strata(&[cmd, "--db", db, "--preset", preset]);
            let out = String::from_utf8_lossy(&o.stdout);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{preset} {cmd}: {err}");
            for line in out.lines().filter(|l| l.starts_with("key")) {
                let (k, v) = line.split_once('\t').unwrap_or((line, ""));
                let i = &k[3..];
                assert_eq!(
                    v,
                    i.repeat(30),
                    "{preset} {cmd}: a wrong value printed for {k}"
                );
            }
            assert!(
                !out.contains("end of the dump"),
                "{preset} {cmd}: a dump that stopped has no last line"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn delete_range_deletes_from_start_to_before_end() {
    let dir = temp_dir("delete-range");
    let db = dir.to_str().unwrap();
    ok(&["put", "--db", db, "--create", "a", "1"]);
    for k in ["b", "c", "d"] {
        ok(&["put", "--db", db, k, "2"]);
    }
    ok(&["delete-range", "--db", db, "b", "d"]);
    assert_eq!(ok(&["scan", "--db", db]), "a\t1\nd\t2\n");
    // Hex bounds; a start above the end is refused with a usage-like error.
    ok(&["delete-range", "--db", db, "--hex", "00", "62"]);
    assert_eq!(ok(&["scan", "--db", db]), "d\t2\n");
    let o = strata(&["delete-range", "--db", db, "z", "a"]);
    assert!(!o.status.success(), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("above its end"),
        "{o:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A CURRENT cut short (its newline gone) is what `check` reports and what an open
/// refuses, both saying what it holds; `repair` mends it.
#[test]
fn a_current_cut_short_is_reported_by_check_and_mended_by_repair() {
    let dir = temp_dir("current-cut");
    {
        let db = strata::Db::open(&dir, strata::Options::default()).unwrap();
        db.put("k", "v").unwrap();
        db.flush().unwrap();
    }
    let current = dir.join("CURRENT");
    let name = std::fs::read_to_string(&current).unwrap();
    std::fs::write(&current, name.trim_end()).unwrap();
    let db = dir.to_str().unwrap();
    let out = strata(&["check", "--db", db]);
    assert!(!out.status.success());
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("CURRENT is not a manifest's name and a newline"),
        "{text}"
    );
    let out = strata(&["count", "--db", db]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(name.trim_end()), "{err}");
    ok(&["repair", "--db", db]);
    assert_eq!(ok(&["get", "--db", db, "k"]), "v\n");
}
