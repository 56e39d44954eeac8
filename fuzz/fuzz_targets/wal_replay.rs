#![no_main]
//! WAL replay: a database directory whose only WAL holds arbitrary bytes must open (torn or
//! damaged tails handled per the recovery mode) or fail with an error, never panic.
use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata::fs::{Fs, MemFs};

fuzz_target!(|data: &[u8]| {
    let fs = MemFs::new();
    let opts = strata::Options { fs: Arc::new(fs.clone()), ..strata::Options::default() };
    drop(strata::Db::open("/db", opts.clone()));
    // Replace the live WAL's content (the highest-numbered .log).
    let Ok(names) = fs.list(Path::new("/db")) else { return };
    let Some(wal) = names.iter().filter(|n| n.ends_with(".log")).max() else { return };
    let p = Path::new("/db").join(wal);
    if let Ok(mut f) = fs.create(&p) {
        let _ = f.append(data);
    }
    if let Ok(db) = strata::Db::open("/db", opts) {
        let _ = db.get(b"k");
    }
});
