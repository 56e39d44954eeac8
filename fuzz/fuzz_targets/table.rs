#![no_main]
//! A table file from arbitrary bytes: footer, index, filter, properties, then a full scan.
use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata::fs::{Fs, MemFs};
use strata::internals::iter::InternalIterator;

fuzz_target!(|data: &[u8]| {
    let fs = MemFs::new();
    let _ = fs.create_dir_all(Path::new("/f"));
    let p = Path::new("/f/1.sst");
    if let Ok(mut f) = fs.create(p) {
        let _ = f.append(data);
    }
    let Ok(file) = fs.open(p) else { return };
    if let Ok(t) = strata::internals::sst::Table::open(file, p, None) {
        let t = Arc::new(t);
        let mut it = t.iter();
        it.seek_to_first();
        let mut n = 0;
        while it.valid() && n < 100_000 {
            it.next();
            n += 1;
        }
        let _ = t.get(&strata::internals::key::seek_key(b"k", strata::internals::key::SeqNo::MAX), b"k");
    }
});
