#![no_main]
//! Manifest decoding: arbitrary bytes as a log of version edits, and as one edit.
use libfuzzer_sys::fuzz_target;
use strata::internals::wal::{LogEvent, LogReader};

fuzz_target!(|data: &[u8]| {
    let _ = strata::internals::version::decode_edit(data);
    let mut r = LogReader::new(data.to_vec());
    for _ in 0..10_000 {
        match r.next_event() {
            LogEvent::Record { data, .. } => {
                let _ = strata::internals::version::decode_edit(&data);
            }
            LogEvent::Corrupt { .. } => {}
            LogEvent::End | LogEvent::Torn { .. } => break,
        }
    }
});
