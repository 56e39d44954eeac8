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
