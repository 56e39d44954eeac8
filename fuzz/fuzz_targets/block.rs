#![no_main]
//! A block from arbitrary bytes: parse, iterate both ways, seek.
use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata::internals::iter::InternalIterator;
use strata::internals::sst::block::Block;

fuzz_target!(|data: &[u8]| {
    if let Ok(b) = Block::new(data.to_vec(), Path::new("fuzz"), 0) {
        let mut it = Arc::new(b).iter(strata::internals::key::compare);
        it.seek_to_first();
        let mut n = 0;
        while it.valid() && n < 100_000 {
            it.next();
            n += 1;
        }
        it.seek_to_last();
        if it.valid() {
            it.prev();
        }
        it.seek(data.get(..data.len().min(16)).unwrap_or_default());
    }
});
