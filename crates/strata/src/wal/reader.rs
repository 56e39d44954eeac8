//! [`LogReader`]: reads records back, telling a torn tail from damage in the middle.

use super::format::{FragmentType, BLOCK_SIZE, HEADER_SIZE};
use crate::coding::{masked_crc2, u32_at};

/// One step of reading a log.
#[derive(Debug, PartialEq, Eq)]
pub enum LogEvent {
    /// A complete, checksum-verified record that starts at `offset`.
    Record {
        /// The record's bytes.
        data: Vec<u8>,
        /// File offset of its first fragment's header.
        offset: u64,
    },
    /// The clean end of the log.
    End,
    /// The log ends inside a record (a crash during an unsynced append leaves this).
    Torn {
        /// File offset of the incomplete record.
        offset: u64,
    },
    /// A fragment failed its checksum or makes no sense. Reading may continue (at the next
    /// block) to salvage later records.
    Corrupt {
        /// File offset of the damaged fragment.
        offset: u64,
        /// What was wrong.
        reason: &'static str,
        /// True when nothing but zeros follows the damage: it is most likely a torn tail.
        at_tail: bool,
    },
}

/// Reads records from a log's bytes.
pub struct LogReader {
    data: Vec<u8>,
    pos: usize,
}

impl LogReader {
    /// A reader over the whole content of a log file.
    pub fn new(data: Vec<u8>) -> Self {
        LogReader { data, pos: 0 }
    }

    fn only_zeros_from(&self, at: usize) -> bool {
        self.data
            .get(at..)
            .is_none_or(|rest| rest.iter().all(|&b| b == 0))
    }

    fn skip_to_next_block(&mut self, from: usize) {
        self.pos = (from / BLOCK_SIZE + 1) * BLOCK_SIZE;
    }

    /// The next event. After `End` or `Torn`, every later call returns `End`.
    pub fn next_event(&mut self) -> LogEvent {
        let mut record: Vec<u8> = Vec::new();
        let mut record_start: Option<usize> = None;
        loop {
            let block_left = BLOCK_SIZE - self.pos % BLOCK_SIZE;
            if block_left < HEADER_SIZE {
                self.pos += block_left;
            }
            if self.pos >= self.data.len() {
                self.pos = self.data.len();
                return match record_start {
                    Some(s) => LogEvent::Torn { offset: s as u64 },
                    None => LogEvent::End,
                };
            }
            let at = self.pos;
            if at + HEADER_SIZE > self.data.len() {
                self.pos = self.data.len();
                if self.only_zeros_from(at) && record_start.is_none() {
                    return LogEvent::End;
                }
                return LogEvent::Torn {
                    offset: record_start.unwrap_or(at) as u64,
                };
            }
            let h = &self.data[at..at + HEADER_SIZE];
            let crc = u32_at(h, 0).unwrap_or(0);
            let len = usize::from(u16::from_le_bytes([h[4], h[5]]));
            let type_byte = h[6];
            if crc == 0 && len == 0 && type_byte == 0 {
                // Zero-filled space: preallocation, or the rest of a torn block.
                if self.only_zeros_from(at) {
                    self.pos = self.data.len();
                    return match record_start {
                        Some(s) => LogEvent::Torn { offset: s as u64 },
                        None => LogEvent::End,
                    };
                }
                self.skip_to_next_block(at);
                return LogEvent::Corrupt {
                    offset: at as u64,
                    reason: "zeroed header inside the log",
                    at_tail: false,
                };
            }
            let end = at + HEADER_SIZE + len;
            if end > self.data.len() {
                self.pos = self.data.len();
                return LogEvent::Torn {
                    offset: record_start.unwrap_or(at) as u64,
                };
            }
            if len > BLOCK_SIZE - at % BLOCK_SIZE - HEADER_SIZE {
                self.skip_to_next_block(at);
                return LogEvent::Corrupt {
                    offset: at as u64,
                    reason: "fragment crosses a block boundary",
                    at_tail: self.only_zeros_from(end),
                };
            }
            let payload = &self.data[at + HEADER_SIZE..end];
            if masked_crc2(&[type_byte], payload) != crc {
                self.skip_to_next_block(at);
                return LogEvent::Corrupt {
                    offset: at as u64,
                    reason: "checksum mismatch",
                    at_tail: self.only_zeros_from(end),
                };
            }
            self.pos = end;
            let Some(kind) = FragmentType::from_u8(type_byte) else {
                return LogEvent::Corrupt {
                    offset: at as u64,
                    reason: "unknown fragment type",
                    at_tail: false,
                };
            };
            match (kind, record_start) {
                (FragmentType::Full, None) => {
                    return LogEvent::Record {
                        data: payload.to_vec(),
                        offset: at as u64,
                    };
                }
                (FragmentType::First, None) => {
                    record_start = Some(at);
                    record.extend_from_slice(payload);
                }
                (FragmentType::Middle, Some(_)) => record.extend_from_slice(payload),
                (FragmentType::Last, Some(s)) => {
                    record.extend_from_slice(payload);
                    return LogEvent::Record {
                        data: record,
                        offset: s as u64,
                    };
                }
                (FragmentType::Middle | FragmentType::Last, None) => {
                    return LogEvent::Corrupt {
                        offset: at as u64,
                        reason: "fragment without a first fragment",
                        at_tail: false,
                    };
                }
                (FragmentType::Full | FragmentType::First, Some(s)) => {
                    // The previous record never got its last fragment; restart here.
                    self.pos = at;
                    return LogEvent::Corrupt {
                        offset: s as u64,
                        reason: "record missing its last fragment",
                        at_tail: false,
                    };
                }
                (FragmentType::Zero, _) => {
                    return LogEvent::Corrupt {
                        offset: at as u64,
                        reason: "zero-type fragment",
                        at_tail: false,
                    };
                }
            }
        }
    }
}
