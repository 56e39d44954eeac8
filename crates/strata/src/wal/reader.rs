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
        /// True when no record starts after the damage (nothing but the rest of the damaged
        /// record, and zeros, follows): what a crash in the middle of a write leaves.
        at_tail: bool,
    },
}

/// Reads records from a log's bytes.
///
/// Damage is *at the tail* when no record starts after it (docs/format/wal.md, "Reading
/// back: what is a torn tail"): a write cut short by a crash, in whatever order its bytes
/// reached the file, leaves nothing after it but the rest of its own record (and the
/// zero-filled space a log is written into), while damage in the middle of a log is
/// followed by the records written after it.
pub struct LogReader {
    data: Vec<u8>,
    pos: usize,
    /// One past the last non-zero byte of `data`, once computed.
    live_end: Option<usize>,
    /// The last search for a record start: from where, and where it found one (so that
    /// damage in block after block does not search the same bytes again).
    searched: Option<(usize, Option<usize>)>,
    /// Damage is at the tail only when nothing but zeros follows the damaged fragment
    /// (`strict`): for a log no kill can have torn in the middle of a copy, one written
    /// with `write(2)` or closed before a later one began.
    strict: bool,
}

/// Bytes one search for a record start may checksum. Bytes shaped like fragment headers
/// (say, a stored value that is itself a log) cost a checksum at every offset; past this,
/// the search gives up and calls the damage damage, not a torn tail: the open then reports
/// it, and `PointInTime` recovery opens the log at the records before it.
const SEARCH_BUDGET: usize = 256 << 20;

impl LogReader {
    /// A reader over the whole content of a log file.
    pub fn new(data: Vec<u8>) -> Self {
        LogReader {
            data,
            pos: 0,
            live_end: None,
            searched: None,
            strict: false,
        }
    }

    /// A reader that calls damage the tail only when nothing but zeros follows the damaged
    /// fragment: for a log whose writes a kill cannot have left torn in the middle (a
    /// manifest, written by `write(2)`; a WAL a later WAL followed, its writes finished),
    /// where anything else is damage to data that was whole (docs/format/wal.md, "What a
    /// crash leaves").
    pub fn strict(data: Vec<u8>) -> Self {
        LogReader {
            strict: true,
            ..LogReader::new(data)
        }
    }

    /// One past the last non-zero byte (0 for a log of zeros).
    fn live_end(&mut self) -> usize {
        *self.live_end.get_or_insert_with(|| {
            self.data
                .iter()
                .rposition(|&b| b != 0)
                .map_or(0, |last| last + 1)
        })
    }

    fn only_zeros_from(&mut self, at: usize) -> bool {
        at >= self.live_end()
    }

    /// Whether a record starts at or after offset `from`: a Full fragment, or a First
    /// fragment (which the writer always ends at its block's end), that passes its checksum.
    /// Looked for at every byte offset, as damage leaves no fragment boundary to trust.
    fn record_starts_from(&mut self, from: usize) -> bool {
        if let Some((searched_from, found)) = self.searched {
            if searched_from <= from {
                match found {
                    None => return false,
                    Some(at) if at >= from => return true,
                    Some(_) => {}
                }
            }
        }
        let found = self.search(from);
        self.searched = Some((from, found));
        found.is_some()
    }

    /// Where the first record start at or after `from` is (`from` itself if the search ran
    /// out of its budget).
    fn search(&mut self, from: usize) -> Option<usize> {
        let end = self.live_end();
        let mut at = from;
        let mut budget = SEARCH_BUDGET;
        // A fragment's type byte (its header's last) is non-zero, so a header that
        // starts at or past `end - HEADER_SIZE + 1` would end in zeros.
        while at + HEADER_SIZE <= end {
            let block_left = BLOCK_SIZE - at % BLOCK_SIZE;
            if block_left < HEADER_SIZE {
                at += block_left;
                continue;
            }
            let h = &self.data[at..at + HEADER_SIZE];
            let type_byte = h[6];
            let len = usize::from(u16::from_le_bytes([h[4], h[5]]));
            let room = block_left - HEADER_SIZE;
            let shape_fits = (type_byte == FragmentType::Full as u8 && len <= room)
                || (type_byte == FragmentType::First as u8 && len == room);
            if shape_fits && at + HEADER_SIZE + len <= self.data.len() {
                if self.checksum_ok(at) {
                    return Some(at);
                }
                budget = budget.saturating_sub(len + 1);
                if budget == 0 {
                    return Some(from);
                }
            }
            at += 1;
        }
        None
    }

    /// Whether a record starts in `from..to` from which the log reads cleanly to its end:
    /// whole fragments, block trailers, then only zeros.
    fn clean_record_within(&mut self, from: usize, to: usize) -> bool {
        let mut at = from;
        while at < to {
            let Some(found) = self.search(at).filter(|&p| p < to) else {
                return false;
            };
            if self.reads_cleanly_from(found) {
                return true;
            }
            at = found + 1;
        }
        false
    }

    /// Whether every fragment from `at` on is whole and passes its checksum, up to a point
    /// after which there are only zeros.
    fn reads_cleanly_from(&mut self, mut at: usize) -> bool {
        let end = self.live_end();
        loop {
            if at >= end {
                return true;
            }
            let block_left = BLOCK_SIZE - at % BLOCK_SIZE;
            if block_left < HEADER_SIZE {
                at += block_left;
                continue;
            }
            let Some(h) = self.data.get(at..at + HEADER_SIZE) else {
                return false;
            };
            let type_byte = h[6];
            let len = usize::from(u16::from_le_bytes([h[4], h[5]]));
            if !(1..=4).contains(&type_byte)
                || len > block_left - HEADER_SIZE
                || !self.checksum_ok(at)
            {
                return false;
            }
            at += HEADER_SIZE + len;
        }
    }

    /// Whether the fragment whose header is at `at` is all there and passes its checksum.
    fn checksum_ok(&self, at: usize) -> bool {
        let Some(h) = self.data.get(at..at + HEADER_SIZE) else {
            return false;
        };
        let len = usize::from(u16::from_le_bytes([h[4], h[5]]));
        self.data
            .get(at + HEADER_SIZE..at + HEADER_SIZE + len)
            .is_some_and(|payload| u32_at(h, 0) == Some(masked_crc2(&[h[6]], payload)))
    }

    /// A `Corrupt` event for damage at `offset`, with the search for a record after it
    /// starting at `search_from`. When no record starts after the damage it is the log's
    /// tail, and reading ends there.
    fn corrupt(&mut self, offset: usize, search_from: usize, reason: &'static str) -> LogEvent {
        let at_tail = !self.strict && !self.record_starts_from(search_from);
        self.damage(offset, at_tail, reason)
    }

    /// A `Corrupt` event; at the tail, reading ends there.
    fn damage(&mut self, offset: usize, at_tail: bool, reason: &'static str) -> LogEvent {
        if at_tail {
            self.pos = self.data.len();
        }
        LogEvent::Corrupt {
            offset: offset as u64,
            reason,
            at_tail,
        }
    }

    fn skip_to_next_block(&mut self, from: usize) {
        self.pos = (from / BLOCK_SIZE + 1) * BLOCK_SIZE;
    }

    /// Reads on to the end; if it met damage before the tail (a `Corrupt` event that more
    /// records follow), the offset just past the last whole, checksum-valid record in the
    /// log, or the first fragment of one, wherever it is (reading goes on at the next block
    /// after damage, past records in the rest of the damaged one: those count too). The
    /// reader is spent after it.
    pub fn records_end_past_damage(&mut self) -> Option<u64> {
        let mut damaged = false;
        let mut end = 0;
        loop {
            match self.next_event() {
                LogEvent::Record { .. } => end = self.pos,
                LogEvent::Corrupt { at_tail: false, .. } => damaged = true,
                LogEvent::Corrupt { .. } | LogEvent::End | LogEvent::Torn { .. } => break,
            }
        }
        if !damaged {
            return None;
        }
        let mut at = end;
        while let Some(p) = self.search(at) {
            if !self.checksum_ok(p) {
                // (The search ran out of its budget.)
                break;
            }
            match self.record_end_from(p) {
                Some(e) => {
                    end = end.max(e);
                    at = e;
                }
                // A record's first fragment whole and the rest not (torn, or damaged):
                // the bytes before its end were final too, and a cut there keeps the
                // damage before it in view, where a cut before the damage hid it.
                None => {
                    let len = usize::from(u16::from_le_bytes([self.data[p + 4], self.data[p + 5]]));
                    end = end.max(p + HEADER_SIZE + len);
                    at = p + 1;
                }
            }
        }
        Some(end as u64)
    }

    /// The end of the whole record whose first fragment is at `at` (its fragments whole,
    /// each passing its checksum, across block trailers), or None.
    fn record_end_from(&self, mut at: usize) -> Option<usize> {
        let mut first = true;
        loop {
            let block_left = BLOCK_SIZE - at % BLOCK_SIZE;
            if block_left < HEADER_SIZE {
                at += block_left;
                continue;
            }
            let h = self.data.get(at..at + HEADER_SIZE)?;
            let kind = FragmentType::from_u8(h[6])?;
            let len = usize::from(u16::from_le_bytes([h[4], h[5]]));
            if len > block_left - HEADER_SIZE || !self.checksum_ok(at) {
                return None;
            }
            at += HEADER_SIZE + len;
            match (first, kind) {
                (true, FragmentType::Full) | (false, FragmentType::Last) => return Some(at),
                (true, FragmentType::First) | (false, FragmentType::Middle) => first = false,
                _ => return None,
            }
        }
    }

    /// The bytes the reader was given.
    pub fn into_data(self) -> Vec<u8> {
        self.data
    }

    /// Where the reader is: after a `Record`, the offset just past its last fragment.
    pub fn position(&self) -> u64 {
        self.pos as u64
    }

    /// The next event. After `End`, `Torn` or a `Corrupt` at the tail, every later call
    /// returns `End`.
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
                // Data after a zeroed header: the last write of a process killed in the
                // middle of copying it (its head not yet stored, some of the rest stored;
                // docs/format/wal.md), or damage, if a record starts after it.
                self.skip_to_next_block(at);
                return self.corrupt(
                    record_start.unwrap_or(at),
                    at + 1,
                    "zeroed header inside the log",
                );
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
                if self.strict {
                    let at_tail = self.only_zeros_from(end);
                    return self.damage(at, at_tail, "fragment crosses a block boundary");
                }
                return self.corrupt(at, at + 1, "fragment crosses a block boundary");
            }
            let payload = &self.data[at + HEADER_SIZE..end];
            if masked_crc2(&[type_byte], payload) != crc {
                self.skip_to_next_block(at);
                if self.strict {
                    let at_tail = self.only_zeros_from(end);
                    return self.damage(at, at_tail, "checksum mismatch");
                }
                if !(1..=4).contains(&type_byte) {
                    return self.corrupt(at, at + 1, "checksum mismatch");
                }
                // A header of a known type: most likely the fragment's own, its payload cut
                // short or damaged. A record found inside that payload counts only if the
                // log goes on cleanly from it to its end (a log stored inside a value, cut
                // short with it, does not: the rest of the value follows it).
                let at_tail =
                    !self.record_starts_from(end) && !self.clean_record_within(at + 1, end);
                return self.damage(at, at_tail, "checksum mismatch");
            }
            self.pos = end;
            let Some(kind) = FragmentType::from_u8(type_byte) else {
                return self.corrupt(at, at + 1, "unknown fragment type");
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
                    return self.corrupt(at, at + 1, "fragment without a first fragment");
                }
                (FragmentType::Full | FragmentType::First, Some(s)) => {
                    // The previous record never got its last fragment; restart here (a
                    // record starts here, so this is never the tail).
                    self.pos = at;
                    return LogEvent::Corrupt {
                        offset: s as u64,
                        reason: "record missing its last fragment",
                        at_tail: false,
                    };
                }
                (FragmentType::Zero, _) => {
                    return self.corrupt(at, at + 1, "zero-type fragment");
                }
            }
        }
    }
}
