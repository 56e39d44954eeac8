use std::path::Path;

use super::format::{BLOCK_SIZE, HEADER_SIZE};
use super::*;
use crate::fs::{read_all, Fs, MemFs};

fn write_records(records: &[Vec<u8>]) -> Vec<u8> {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    let mut w = LogWriter::new(fs.create(Path::new("/d/log")).unwrap());
    for r in records {
        w.add_record(r).unwrap();
    }
    w.sync().unwrap();
    read_all(&fs, Path::new("/d/log")).unwrap()
}

fn read_back(data: Vec<u8>) -> Vec<LogEvent> {
    let mut r = LogReader::new(data);
    let mut out = Vec::new();
    loop {
        let e = r.next_event();
        let stop = matches!(e, LogEvent::End | LogEvent::Torn { .. });
        out.push(e);
        if stop {
            return out;
        }
    }
}

fn sample() -> Vec<Vec<u8>> {
    vec![
        b"small".to_vec(),
        Vec::new(),
        vec![7u8; BLOCK_SIZE - 2 * HEADER_SIZE - 5],
        vec![1u8; 3 * BLOCK_SIZE + 17],
        b"tail".to_vec(),
    ]
}

#[test]
fn round_trip_across_blocks() {
    let recs = sample();
    let events = read_back(write_records(&recs));
    let got: Vec<Vec<u8>> = events
        .iter()
        .filter_map(|e| match e {
            LogEvent::Record { data, .. } => Some(data.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(got, recs);
    assert_eq!(events.last(), Some(&LogEvent::End));
}

#[test]
fn every_truncation_is_a_prefix_then_torn_or_end() {
    let recs = sample();
    let full = write_records(&recs);
    for cut in (0..full.len())
        .step_by(97)
        .chain([1, 6, 7, 8, full.len() - 1])
    {
        let events = read_back(full[..cut].to_vec());
        let mut n = 0;
        for e in &events {
            match e {
                LogEvent::Record { data, .. } => {
                    assert_eq!(data, &recs[n], "cut at {cut}");
                    n += 1;
                }
                LogEvent::End | LogEvent::Torn { .. } => {}
                LogEvent::Corrupt { .. } => {
                    panic!("cut at {cut}: truncation reported as corruption: {e:?}")
                }
            }
        }
    }
}

#[test]
fn bit_flip_in_middle_is_corruption_not_tail() {
    let recs = sample();
    let mut data = write_records(&recs);
    data[HEADER_SIZE + 1] ^= 0x40; // inside "small"
    let events = read_back(data);
    assert!(
        matches!(
            events[0],
            LogEvent::Corrupt {
                offset: 0,
                at_tail: false,
                ..
            }
        ),
        "{:?}",
        events[0]
    );
    // Salvage continues with the next block's records.
    assert!(events
        .iter()
        .any(|e| matches!(e, LogEvent::Record { data, .. } if data == b"tail")));
}

#[test]
fn bit_flip_in_last_record_is_at_tail() {
    let recs = vec![b"one".to_vec(), b"two".to_vec()];
    let mut data = write_records(&recs);
    let n = data.len();
    data[n - 1] ^= 1;
    let events = read_back(data);
    assert!(
        matches!(events[1], LogEvent::Corrupt { at_tail: true, .. }),
        "{events:?}"
    );
}

#[test]
fn zero_filled_tail_is_end() {
    let mut data = write_records(&[b"one".to_vec()]);
    data.extend_from_slice(&[0u8; 100]);
    let events = read_back(data);
    assert_eq!(events.len(), 2);
    assert_eq!(events[1], LogEvent::End);
}

#[test]
fn random_garbage_never_panics() {
    let mut x = 0x9e3779b97f4a7c15u64;
    for len in [0usize, 1, 7, 100, 5000, BLOCK_SIZE + 50] {
        let mut data = vec![0u8; len];
        for b in &mut data {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        let _ = read_back(data);
    }
}

/// A log of filler records ending exactly at `start` (`start` at least 300 bytes in, and
/// in the first block or at its end), then `last`: its bytes, and where `last`'s group (the
/// bytes its append wrote: a block trailer, then its fragments) starts and ends.
fn log_ending_with(start: usize, last: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>, usize, usize) {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    let mut w = LogWriter::new(fs.create(Path::new("/d/log")).unwrap());
    let mut fillers = Vec::new();
    let mut add = |w: &mut LogWriter, len: usize| {
        let r: Vec<u8> = (0..len)
            .map(|i| (i * 13 + fillers.len()) as u8 | 1)
            .collect();
        w.add_record(&r).unwrap();
        fillers.push(r);
    };
    while start - w.len() as usize > 214 {
        add(&mut w, 100);
    }
    let gap = start - w.len() as usize;
    add(&mut w, gap - HEADER_SIZE);
    assert_eq!(w.len() as usize, start);
    w.add_record(last).unwrap();
    let end = w.len() as usize;
    w.sync().unwrap();
    (
        read_all(&fs, Path::new("/d/log")).unwrap(),
        fillers,
        start,
        end,
    )
}

/// The records read before the first event that is not one, and that event.
fn records_then(data: Vec<u8>) -> (Vec<Vec<u8>>, LogEvent) {
    let mut r = LogReader::new(data);
    let mut got = Vec::new();
    loop {
        match r.next_event() {
            LogEvent::Record { data, .. } => got.push(data),
            e => return (got, e),
        }
    }
}

/// Where a torn group may start: across a page boundary and a block boundary (ending the
/// block in a trailer, or exactly at its end).
const TEAR_STARTS: [usize; 11] = [
    4096 - 1,
    4096 - 5,
    4096 - 7,
    4096 - 13,
    4096 - 200,
    BLOCK_SIZE - 300,
    BLOCK_SIZE - 20,
    BLOCK_SIZE - 8,
    BLOCK_SIZE - 7,
    BLOCK_SIZE - 3,
    BLOCK_SIZE,
];

/// Sizes of the torn record: copied through a log's map (a group under 512 bytes) or
/// written with `pwrite`, in one block or across several.
const TEAR_SIZES: [usize; 8] = [0, 1, 60, 300, 490, 600, 5000, 70_000];

/// How many of a group's `n` bytes a kill left at its end.
fn kept_counts(n: usize) -> Vec<usize> {
    if n <= 600 {
        return (0..=n).collect();
    }
    let mut v: Vec<usize> = (0..n).step_by(97).collect();
    v.extend([
        1,
        6,
        7,
        8,
        13,
        14,
        16,
        17,
        n / 2,
        n - 17,
        n - 16,
        n - 7,
        n - 1,
        n,
    ]);
    v
}

/// What a process killed in the middle of copying its last group into a mapped log leaves:
/// the head of the group zeroed (not yet stored), its tail stored, zeros after (the
/// preallocated space). Every such log reads as exactly the records before the torn group,
/// then the tail: `End` or `Torn`, or damage the reader calls the tail; whatever a copy
/// routine's order, the default recovery mode opens it.
#[test]
fn a_group_torn_head_first_reads_as_the_records_before_it() {
    let mut cases = 0;
    for start in TEAR_STARTS {
        for size in TEAR_SIZES {
            let last: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
            let (full, fillers, g, end) = log_ending_with(start, &last);
            for kept in kept_counts(end - g) {
                let mut torn = full.clone();
                torn[g..end - kept].fill(0);
                torn.resize(end + 4096, 0);
                let (got, e) = records_then(torn);
                let ctx = format!("group at {g}..{end} ({size} B record), last {kept} B kept");
                // (Zeroing no more than a block trailer leaves the record whole.)
                if full[g..end - kept].iter().all(|&b| b == 0) {
                    assert_eq!(got.len(), fillers.len() + 1, "{ctx}");
                    assert_eq!(got[fillers.len()], last, "{ctx}");
                } else {
                    assert!(
                        got == fillers,
                        "{ctx}: {} records of {}, then {e:?}",
                        got.len(),
                        fillers.len()
                    );
                }
                assert!(
                    matches!(
                        e,
                        LogEvent::End
                            | LogEvent::Torn { .. }
                            | LogEvent::Corrupt { at_tail: true, .. }
                    ),
                    "{ctx}: {e:?}"
                );
                cases += 1;
            }
        }
    }
    assert!(cases > 5000, "{cases}");
}

/// Damage that records follow is no torn tail, however it looks: a group with its head
/// zeroed, then a complete record, is `Corrupt` with `at_tail` false.
#[test]
fn a_torn_looking_gap_with_a_record_after_it_is_damage() {
    for start in TEAR_STARTS {
        for size in [60, 600, 5000] {
            let last: Vec<u8> = vec![9; size];
            let (full, fillers, g, end) = log_ending_with(start, &last);
            // Another record after the torn group, written where the writer would put it.
            let fs = MemFs::new();
            fs.create_dir_all(Path::new("/d")).unwrap();
            let mut f = fs.create(Path::new("/d/log")).unwrap();
            f.append(&full[..end]).unwrap();
            let mut w = LogWriter::new(f);
            w.add_record(b"after").unwrap();
            w.sync().unwrap();
            let whole = read_all(&fs, Path::new("/d/log")).unwrap();
            let header_at = g + full[g..].iter().position(|&b| b != 0).unwrap();
            for kept in [0, 1, 7, (end - g) / 2, end - header_at - 1] {
                let mut torn = whole.clone();
                torn[g..end - kept].fill(0);
                let (got, e) = records_then(torn);
                assert!(
                    got == fillers,
                    "start {start} size {size} kept {kept}: {} records of {}, then {e:?}",
                    got.len(),
                    fillers.len()
                );
                assert!(
                    matches!(e, LogEvent::Corrupt { at_tail: false, .. }),
                    "start {start} size {size} kept {kept}: {e:?}"
                );
            }
        }
    }
}

/// A damaged fragment whose record goes on in later blocks, with nothing after that
/// record, is at the tail: a First fragment's payload bit-flipped, its Middle and Last
/// intact (the reader used to call it damage in the middle, as bytes followed it).
#[test]
fn damage_in_the_last_record_is_at_the_tail_even_when_its_fragments_follow() {
    let recs = vec![b"one".to_vec(), vec![5u8; 3 * BLOCK_SIZE]];
    let mut data = write_records(&recs);
    data[3 * HEADER_SIZE + 3 + 10] ^= 1; // inside the big record's First fragment
    let events = read_back(data);
    assert!(
        matches!(events[1], LogEvent::Corrupt { at_tail: true, .. }),
        "{events:?}"
    );
    assert_eq!(events.len(), 3, "reading ends at the tail: {events:?}");
}

/// A record whose payload holds a valid log record (a value that is itself a log), cut
/// short as `pwrite` cuts a write (a prefix, the header whole): at the tail. The search
/// for a record after damage starts past a damaged fragment whose header is of a known
/// type, not inside its payload (it found the stored record and refused the open).
#[test]
fn a_prefix_of_a_record_holding_a_log_record_is_at_the_tail() {
    let inner = write_records(&[b"a stored record".to_vec()]);
    let mut payload = vec![3u8; 100];
    payload.extend_from_slice(&inner);
    payload.extend_from_slice(&[4u8; 400]);
    let full = write_records(&[b"before".to_vec(), payload]);
    let start = HEADER_SIZE + 6;
    // Kept: the header, the stored record, and some bytes after it.
    let mut torn = full[..start + HEADER_SIZE + 100 + inner.len() + 50].to_vec();
    torn.resize(full.len() + 4096, 0);
    let (got, e) = records_then(torn);
    assert_eq!(got, vec![b"before".to_vec()]);
    assert!(
        matches!(e, LogEvent::Corrupt { at_tail: true, .. }),
        "{e:?}"
    );
}

/// Damage in block after block, a record at the end: each damaged block finds that record
/// without searching the bytes again (the search is remembered), and every block's damage
/// is reported as such.
#[test]
fn damage_in_many_blocks_before_a_record_is_damage_in_each() {
    let mut data = vec![0u8; 64 * BLOCK_SIZE];
    for b in 0..64 {
        // A zeroed header with bytes after it at the start of every block.
        data[b * BLOCK_SIZE + 20..b * BLOCK_SIZE + 40].fill(0x55);
    }
    let tail = write_records(&[b"the record".to_vec()]);
    data.extend_from_slice(&tail);
    let mut r = LogReader::new(data);
    let mut damaged = 0;
    loop {
        match r.next_event() {
            LogEvent::Corrupt { at_tail, .. } => {
                assert!(!at_tail);
                damaged += 1;
            }
            LogEvent::Record { data, .. } => {
                assert_eq!(data, b"the record");
                break;
            }
            e => panic!("{e:?}"),
        }
    }
    assert_eq!(damaged, 64);
}

/// A damaged length field (the type byte intact) that makes a fragment swallow the log's
/// last records: they read cleanly to the end, so the damage is reported, not taken for a
/// torn tail that would drop them.
#[test]
fn a_length_that_swallows_the_last_records_is_damage() {
    let recs = vec![b"first".to_vec(), b"second".to_vec(), b"third".to_vec()];
    let mut data = write_records(&recs);
    // "first"'s fragment claims 40 bytes: its declared end lies past the other two.
    data[4] = 40;
    data.resize(data.len() + 4096, 0);
    let (got, e) = records_then(data);
    assert!(got.is_empty());
    assert!(
        matches!(e, LogEvent::Corrupt { at_tail: false, .. }),
        "{e:?}"
    );
}

/// A strict reader (a WAL a later one followed, a manifest) calls a zeroed head with its
/// record's tail after it damage, not a torn tail: no kill leaves that shape there, so it is
/// damage to data that was whole (synced writes a silent drop would lose).
#[test]
fn a_strict_reader_calls_a_torn_looking_head_damage() {
    let (full, fillers, g, end) = log_ending_with(4096 - 5, &[7u8; 300]);
    let mut torn = full.clone();
    torn[g..g + 20].fill(0);
    torn.resize(end + 4096, 0);
    let (got, e) = records_then(torn.clone());
    assert_eq!(got.len(), fillers.len());
    assert!(
        matches!(e, LogEvent::Corrupt { at_tail: true, .. }),
        "{e:?}"
    );
    let mut r = LogReader::strict(torn);
    let mut n = 0;
    let e = loop {
        match r.next_event() {
            LogEvent::Record { .. } => n += 1,
            e => break e,
        }
    };
    assert_eq!(n, fillers.len());
    assert!(
        matches!(e, LogEvent::Corrupt { at_tail: false, .. }),
        "{e:?}"
    );
    // A cut-short last record (a prefix, as `write(2)` leaves it) stays the tail.
    let mut cut = full[..end - 50].to_vec();
    cut.resize(end + 4096, 0);
    let (got, e) = {
        let mut r = LogReader::strict(cut);
        let mut got = 0;
        loop {
            match r.next_event() {
                LogEvent::Record { .. } => got += 1,
                e => break (got, e),
            }
        }
    };
    assert_eq!(got, fillers.len());
    assert!(
        matches!(
            e,
            LogEvent::Torn { .. } | LogEvent::Corrupt { at_tail: true, .. }
        ),
        "{e:?}"
    );
}

/// Damage in the log's last block, records after it in the same block: the end past the
/// damage is the end of the last whole record, not of the last one before the damage
/// (reading goes on at the next block, and a read-only open cut there would have dropped
/// the damage and the records after it without a word).
#[test]
fn the_records_end_past_damage_counts_records_later_in_the_damaged_block() {
    let records: Vec<Vec<u8>> = (0..10u8).map(|i| vec![b'a' + i; 100]).collect();
    let mut data = write_records(&records);
    let end = data.iter().rposition(|&b| b != 0).unwrap() + 1;
    // Record 3's payload: damage, records 4..9 after it in the same block.
    data[3 * (HEADER_SIZE + 100) + HEADER_SIZE + 5] ^= 0x40;
    let mut r = LogReader::new(data.clone());
    assert_eq!(r.records_end_past_damage(), Some(end as u64));
    // A record across blocks after the damage counts whole.
    let mut records = records;
    records.push(vec![b'z'; BLOCK_SIZE + 500]);
    let mut data = write_records(&records);
    let end = data.iter().rposition(|&b| b != 0).unwrap() + 1;
    data[3 * (HEADER_SIZE + 100) + HEADER_SIZE + 5] ^= 0x40;
    let mut r = LogReader::new(data);
    assert_eq!(r.records_end_past_damage(), Some(end as u64));
    // No damage: nothing to cut.
    let mut r = LogReader::new(write_records(&records));
    assert_eq!(r.records_end_past_damage(), None);
}

/// Damage followed only by a record cut short (its first fragment whole, the rest never
/// written): the end past the damage reaches that fragment's end, so a cut there keeps the
/// damage in view (a cut before the damage made a damaged log read clean).
#[test]
fn the_records_end_past_damage_reaches_a_torn_record_after_it() {
    let mut records: Vec<Vec<u8>> = (0..6u8).map(|i| vec![b'a' + i; 100]).collect();
    records.push(vec![b'z'; 40 << 10]);
    let mut data = write_records(&records);
    // Record 5's payload damaged; record 6 torn: only its first fragment (block 0) stays.
    data[5 * (HEADER_SIZE + 100) + HEADER_SIZE + 5] ^= 0x40;
    data.truncate(BLOCK_SIZE);
    let mut r = LogReader::new(data.clone());
    let end = r.records_end_past_damage().unwrap() as usize;
    assert_eq!(end, BLOCK_SIZE);
    // The cut still reads as damage before records, not as a clean log.
    let events = read_back(data[..end].to_vec());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, LogEvent::Corrupt { at_tail: false, .. })),
        "{events:?}"
    );
}
