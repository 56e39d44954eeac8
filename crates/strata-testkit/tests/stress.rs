//! The real-process tests: a short strata-stress run verified against its oracle, and a crash
//! loop of 24 `kill -9`s rotating through the presets (every third with slowed table writes,
//! so kills land during flushes and compactions; every fifth database rebuilt by `repair`
//! with its manifests removed). CI runs both; longer runs are documented in
//! docs/testing.md.

use std::process::Command;

fn stress() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata-stress"))
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("strata-stress-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn stress_run_then_verify() {
    let d = tmp("run");
    let (db, oracle) = (
        format!("--db={}", d.join("db").display()),
        format!("--oracle={}", d.join("oracle").display()),
    );
    let out = stress()
        .args([
            "run",
            &db,
            &oracle,
            "--seconds=3",
            "--keys=5000",
            "--threads=3",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" 0 failures"), "{stdout}");
    let out = stress()
        .args(["verify", &db, &oracle, "--keys=5000"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("lost synced 0, lost unsynced 0, holes 0, wrong 0"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn crash_loop_loses_nothing() {
    let d = tmp("loop");
    let out = stress()
        .args([
            "crash-loop",
            &format!("--dir={}", d.display()),
            "--kills=24",
            "--keys=5000",
            "--min_delay_ms=300",
            "--max_delay_ms=1200",
            // Every fifth killed database is rebuilt by `repair`, its manifests removed.
            "--repair_every=5",
            // Every third run also backs up while it works: after its kill every backup
            // verifies and the newest restores and opens, each key in a state it had
            // during the backup.
            "--backup_every=3",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.matches("(repaired, manifests removed)").count(), 4);
    let summary = stdout.lines().last().unwrap();
    assert!(summary.starts_with("crash-loop: kills 24,"), "{summary}");
    assert!(
        stdout.contains("backups verified, the newest restored with"),
        "{summary}"
    );
    assert!(
        stdout.contains("each in its state during the backup"),
        "no restored backup was checked key by key: {summary}"
    );
    assert!(
        summary.contains("lost synced writes 0") && summary.contains("wrong values 0"),
        "{summary}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
