//! strata-server's RESP request parser on arbitrary bytes: never panics, never claims more
//! bytes than it was given, and parses the same requests however the bytes are split.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_server::resp::{parse, Limits};

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_request: 1 << 16,
        max_args: 1 << 10,
    };
    let mut at = 0;
    let mut whole = Vec::new();
    while let Ok(Some((args, used))) = parse(&data[at..], &limits) {
        assert!(used > 0 && at + used <= data.len());
        whole.push(args);
        at += used;
    }
    // Fed one byte more at a time (as a socket may deliver them), the same requests.
    let mut buf = Vec::new();
    let mut pieces = Vec::new();
    for &b in data {
        buf.push(b);
        while let Ok(Some((args, used))) = parse(&buf, &limits) {
            pieces.push(args);
            buf.drain(..used);
        }
    }
    assert_eq!(pieces.len().min(whole.len()), whole.len().min(pieces.len()));
    assert_eq!(&pieces[..whole.len().min(pieces.len())], &whole[..whole.len().min(pieces.len())]);
});
