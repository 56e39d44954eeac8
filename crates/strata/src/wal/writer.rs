//! [`LogWriter`]: appends records to a log file in 32 KiB blocks.

use super::format::{FragmentType, BLOCK_SIZE, HEADER_SIZE};
use crate::coding::masked_crc2;
use crate::error::Result;
use crate::fs::WritableFile;

/// Appends records to a log. Not thread-safe: the owner serializes calls.
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    block_offset: usize,
}

impl LogWriter {
    /// A writer appending to `file` (which may already hold records).
    pub fn new(file: Box<dyn WritableFile>) -> Self {
        let block_offset = (file.len() % BLOCK_SIZE as u64) as usize;
        LogWriter { file, block_offset }
    }

    /// Appends one record, fragmenting it across blocks as needed.
    ///
    /// # Errors
    /// I/O errors of the file; the log may then hold a partial record at its tail.
    pub fn add_record(&mut self, mut data: &[u8]) -> Result<()> {
        let mut begin = true;
        loop {
            let left = BLOCK_SIZE - self.block_offset;
            if left < HEADER_SIZE {
                if left > 0 {
                    self.file.append(&[0u8; HEADER_SIZE][..left])?;
                }
                self.block_offset = 0;
            }
            let avail = BLOCK_SIZE - self.block_offset - HEADER_SIZE;
            let n = data.len().min(avail);
            let end = n == data.len();
            let kind = match (begin, end) {
                (true, true) => FragmentType::Full,
                (true, false) => FragmentType::First,
                (false, true) => FragmentType::Last,
                (false, false) => FragmentType::Middle,
            };
            self.emit(kind, &data[..n])?;
            data = &data[n..];
            begin = false;
            if end {
                return Ok(());
            }
        }
    }

    fn emit(&mut self, kind: FragmentType, payload: &[u8]) -> Result<()> {
        let mut header = [0u8; HEADER_SIZE];
        let crc = masked_crc2(&[kind as u8], payload);
        header[..4].copy_from_slice(&crc.to_le_bytes());
        header[4..6].copy_from_slice(&(payload.len() as u16).to_le_bytes());
        header[6] = kind as u8;
        self.file.append(&header)?;
        self.file.append(payload)?;
        self.block_offset += HEADER_SIZE + payload.len();
        Ok(())
    }

    /// Pushes buffered bytes to the OS.
    ///
    /// # Errors
    /// I/O errors.
    pub fn flush(&mut self) -> Result<()> {
        self.file.flush()
    }

    /// Makes every appended record durable.
    ///
    /// # Errors
    /// I/O errors.
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    /// [`crate::fs::WritableFile::sync_handle`] of the log's file.
    pub fn sync_handle(&mut self) -> Result<Option<Box<dyn crate::fs::SyncHandle>>> {
        self.file.sync_handle()
    }

    /// Bytes in the log so far.
    pub fn len(&self) -> u64 {
        self.file.len()
    }

    /// Of the bytes pushed to the OS, those copied through a memory map
    /// (`WritableFile::mapped_bytes`).
    pub fn mapped_bytes(&self) -> u64 {
        self.file.mapped_bytes()
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.file.len() == 0
    }
}
