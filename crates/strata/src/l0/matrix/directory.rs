//! The row directory: where the matrix's rows are, kept in persistent memory beside the
//! region (`matrix.dir`), so `repair` can read L0 when no manifest survives
//! (docs/format/row_table.md, "The row directory"; docs/design/matrixkv.md, "Repair").
//!
//! The manifest's layout record stays the one source of truth: an open reads the rows
//! through it and never through the directory. The directory is written, whole, before
//! every manifest edit that changes the layout (under the versions lock, so in the edits'
//! order) and again at every open, into the older of two slots; a torn write leaves the
//! other slot, the state before the change, whose pages are all still held. It lists, per
//! row, only what a repair needs (the first live entry and the pages from its page on), so
//! its size is bounded by the region's pages: a slot is sized for the worst case once.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::coding::{get_varint32, get_varint64, put_varint32, put_varint64};
use crate::error::{Error, Result};
use crate::fs::{Fs, PmemRegion};
use crate::pmem::{Run, PAGE};

/// The directory's file name in `pmem_dir`, beside the region.
pub const DIRECTORY_NAME: &str = "matrix.dir";

/// `MXDR`: a slot's magic number.
const MAGIC: u32 = 0x4D58_4452;
/// Bytes of a slot's header: magic, body length, sequence, CRC.
const HEADER: usize = 20;
/// The body's version byte.
const VERSION: u8 = 1;
/// Most bytes a row takes in a body, runs aside (six varints).
const ROW_MAX: usize = 10 + 5 * 5;
/// Most bytes a run takes (two varints).
const RUN_MAX: usize = 10;

/// A row as the directory lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    pub id: u64,
    pub entries: u32,
    pub data_len: u32,
    /// The first entry still in L0.
    pub live_from: u32,
    /// The row's logical page holding entry `live_from`.
    pub first_page: u32,
    /// The pages from `first_page` on, in stream order.
    pub runs: Vec<Run>,
}

/// The matrix as the directory lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listing {
    /// The region's bytes.
    pub container: u64,
    /// Rows oldest first.
    pub rows: Vec<Listed>,
}

/// Bytes of one slot for a region of `container` bytes: every page a row (each live row
/// holds at least one page of its own) and a run, page-aligned.
fn slot_len(container: u64) -> usize {
    let pages = (container / PAGE as u64) as usize;
    (HEADER + 1 + 10 + 5 + pages * (ROW_MAX + RUN_MAX)).next_multiple_of(PAGE)
}

impl Listing {
    fn encode(&self) -> Vec<u8> {
        let mut b = vec![VERSION];
        put_varint64(&mut b, self.container);
        put_varint32(&mut b, self.rows.len() as u32);
        for r in &self.rows {
            put_varint64(&mut b, r.id);
            put_varint32(&mut b, r.entries);
            put_varint32(&mut b, r.data_len);
            put_varint32(&mut b, r.live_from);
            put_varint32(&mut b, r.first_page);
            put_varint32(&mut b, r.runs.len() as u32);
            for &(start, len) in &r.runs {
                put_varint32(&mut b, start);
                put_varint32(&mut b, len);
            }
        }
        b
    }

    fn decode(mut s: &[u8]) -> Result<Self> {
        let bad = |what: &str| Error::corrupt(format!("the matrix's row directory: {what}"));
        let (&version, rest) = s.split_first().ok_or_else(|| bad("empty"))?;
        if version != VERSION {
            return Err(bad(&format!("version {version} is not known")));
        }
        s = rest;
        let container = get_varint64(&mut s).ok_or_else(|| bad("container size"))?;
        if container == 0 || !container.is_multiple_of(PAGE as u64) {
            return Err(bad("container size is not a whole number of pages"));
        }
        let n = get_varint32(&mut s).ok_or_else(|| bad("row count"))? as usize;
        let mut rows = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            let id = get_varint64(&mut s).ok_or_else(|| bad("row id"))?;
            let mut v32 = |what| get_varint32(&mut s).ok_or_else(|| bad(what));
            let entries = v32("row entries")?;
            let data_len = v32("row data length")?;
            let live_from = v32("row live entry")?;
            let first_page = v32("row live page")?;
            let nruns = v32("row runs")? as usize;
            let mut runs = Vec::with_capacity(nruns.min(1 << 16));
            for _ in 0..nruns {
                let start = v32("run start")?;
                let len = v32("run length")?;
                runs.push((start, len));
            }
            if entries == 0 || live_from > entries {
                return Err(bad(&format!("row {id} is malformed")));
            }
            rows.push(Listed {
                id,
                entries,
                data_len,
                live_from,
                first_page,
                runs,
            });
        }
        if !s.is_empty() {
            return Err(bad("trailing bytes"));
        }
        Ok(Listing { container, rows })
    }
}

/// The newest intact slot of a directory file's bytes: its sequence and body.
fn newest_slot(region: &dyn PmemRegion, slot: usize) -> Result<Option<(u64, Vec<u8>)>> {
    let mut best: Option<(u64, Vec<u8>)> = None;
    for i in 0..2 {
        let h = region.read_at(i * slot, HEADER)?;
        let word = |at: usize| u32::from_le_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
        let len = word(4) as usize;
        if word(0) != MAGIC || len > slot - HEADER {
            continue;
        }
        let seq = u64::from_le_bytes(h[8..16].try_into().expect("8 bytes"));
        let body = region.read_at(i * slot + HEADER, len)?;
        let mut crc = crc32c::crc32c(&h[4..16]);
        crc = crc32c::crc32c_append(crc, &body);
        if crc != word(16) {
            continue;
        }
        if best.as_ref().is_none_or(|b| seq > b.0) {
            best = Some((seq, body));
        }
    }
    Ok(best)
}

/// The directory file of one database's matrix, opened on first write.
pub(crate) struct Directory {
    fs: Arc<dyn Fs>,
    path: PathBuf,
    slot: usize,
    /// The file and the sequence of the next write.
    open: Mutex<Option<(Arc<dyn PmemRegion>, u64)>>,
}

impl std::fmt::Debug for Directory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directory")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Directory {
    /// The directory at `path` of a region of `container` bytes.
    pub fn new(fs: Arc<dyn Fs>, path: PathBuf, container: u64) -> Self {
        Directory {
            fs,
            path,
            slot: slot_len(container),
            open: Mutex::new(None),
        }
    }

    /// Where the directory's file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `listing` durably into the older slot (the file created on first use, or
    /// recreated when it has another size: it is rewritten whole at every open).
    ///
    /// # Errors
    /// I/O errors; `InvalidArgument` for a listing larger than a slot (not possible for a
    /// listing of the region's own rows).
    pub fn write(&self, listing: &Listing) -> Result<()> {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if open.is_none() {
            *open = Some(self.open_file()?);
        }
        let (region, seq) = open.as_mut().expect("opened above");
        let b = self.encode_slot(listing, *seq)?;
        let at = (*seq % 2) as usize * self.slot;
        // SAFETY: the slot is the older one, which nothing reads: this process reads the
        // directory only here, under `open`'s lock, and a repair reads it only while no
        // database holds the directory's lock.
        unsafe { region.write_at(at, &b)? };
        region.persist(at, b.len())?;
        *seq += 1;
        Ok(())
    }

    /// A slot's bytes: `listing` as write number `seq`.
    fn encode_slot(&self, listing: &Listing, seq: u64) -> Result<Vec<u8>> {
        let body = listing.encode();
        if body.len() > self.slot - HEADER {
            return Err(Error::invalid(format!(
                "{}: a listing of {} bytes does not fit a slot of {}",
                self.path.display(),
                body.len(),
                self.slot
            )));
        }
        let mut b = Vec::with_capacity(HEADER + body.len());
        b.extend_from_slice(&MAGIC.to_le_bytes());
        b.extend_from_slice(&(body.len() as u32).to_le_bytes());
        b.extend_from_slice(&seq.to_le_bytes());
        let crc = crc32c::crc32c_append(crc32c::crc32c(&b[4..16]), &body);
        b.extend_from_slice(&crc.to_le_bytes());
        b.extend_from_slice(&body);
        Ok(b)
    }

    /// The file (created zero-filled if missing, or if it has another size, as after a
    /// change of `matrix_container_size` with an empty matrix), and the sequence after the
    /// newest intact slot.
    fn open_file(&self) -> Result<(Arc<dyn PmemRegion>, u64)> {
        let existed = self.fs.exists(&self.path);
        if existed && self.fs.file_size(&self.path)? != 2 * self.slot as u64 {
            self.fs.remove(&self.path)?;
        }
        let fresh = !self.fs.exists(&self.path);
        let region = self.fs.open_region(&self.path, 2 * self.slot)?;
        if fresh {
            if let Some(dir) = self.path.parent() {
                self.fs.sync_dir(dir)?;
            }
        }
        let next = newest_slot(&*region, self.slot)?.map_or(0, |(seq, _)| seq + 1);
        Ok((region, next))
    }
}

/// The listing of the directory at `path`: `None` if there is no directory file.
///
/// # Errors
/// I/O errors; `Corruption` when neither slot is intact or the newest does not decode.
pub(crate) fn read(fs: &dyn Fs, path: &Path) -> Result<Option<Listing>> {
    if !fs.exists(path) {
        return Ok(None);
    }
    let size = fs.file_size(path)?;
    let slot = usize::try_from(size / 2).map_err(|_| Error::corrupt("row directory too large"))?;
    if slot < HEADER || size % 2 != 0 {
        return Err(Error::corrupt(format!(
            "{}: a row directory of {size} bytes is not two slots",
            path.display()
        )));
    }
    let region = fs.open_region(path, 2 * slot)?;
    match newest_slot(&*region, slot)? {
        Some((_, body)) => Listing::decode(&body)
            .map(Some)
            .map_err(|e| e.context(path.display().to_string())),
        None => Err(Error::corrupt(format!(
            "{}: neither slot of the row directory is intact",
            path.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    fn listing(rows: usize) -> Listing {
        Listing {
            container: 64 * PAGE as u64,
            rows: (0..rows as u64)
                .map(|i| Listed {
                    id: 10 + i,
                    entries: 100,
                    data_len: 5000,
                    live_from: i as u32,
                    first_page: 0,
                    runs: vec![(2 * i as u32, 2)],
                })
                .collect(),
        }
    }

    /// A process killed in the middle of writing a slot (copied into the older slot, not
    /// yet persisted): whatever part of the slot the copy stored, the directory reads as the
    /// listing before it or, whole, the new one; never damage, and the next writer goes on.
    #[test]
    fn a_kill_in_the_middle_of_a_slot_write_reads_as_the_listing_before_it() {
        use crate::fs::CrashMode;
        let mem = MemFs::new();
        let fs: Arc<dyn Fs> = Arc::new(mem.clone());
        fs.create_dir_all(Path::new("/p")).unwrap();
        let path = PathBuf::from("/p").join(DIRECTORY_NAME);
        let container = 64 * PAGE as u64;
        let d = Directory::new(fs.clone(), path.clone(), container);
        for n in 0..3 {
            d.write(&listing(n)).unwrap();
        }
        // Write number 3, as `write` does it, stopped before its persist.
        let slot = slot_len(container);
        let bytes = d.encode_slot(&listing(3), 3).unwrap();
        let region = fs.open_region(&path, 2 * slot).unwrap();
        // SAFETY: no other handle writes the file in this test.
        unsafe { region.write_at(slot, &bytes).unwrap() };
        let mut seen = Vec::new();
        for seed in 0..48 {
            let image: Arc<dyn Fs> = Arc::new(mem.crash_clone(CrashMode::Kill { seed }));
            let got = read(&*image, &path).unwrap().unwrap();
            assert!(got == listing(2) || got == listing(3), "seed {seed}");
            seen.push(got.rows.len());
            let next = Directory::new(image.clone(), path.clone(), container);
            next.write(&listing(5)).unwrap();
            assert_eq!(
                read(&*image, &path).unwrap(),
                Some(listing(5)),
                "seed {seed}"
            );
        }
        assert!(seen.contains(&2) && seen.contains(&3), "{seen:?}");
    }

    #[test]
    fn the_newest_intact_slot_wins() {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        fs.create_dir_all(Path::new("/p")).unwrap();
        let path = PathBuf::from("/p").join(DIRECTORY_NAME);
        assert!(read(&*fs, &path).unwrap().is_none());
        let d = Directory::new(fs.clone(), path.clone(), 64 * PAGE as u64);
        for n in 0..5 {
            d.write(&listing(n)).unwrap();
            assert_eq!(read(&*fs, &path).unwrap(), Some(listing(n)));
        }
        // A second process continues the sequence.
        let d = Directory::new(fs.clone(), path.clone(), 64 * PAGE as u64);
        d.write(&listing(7)).unwrap();
        assert_eq!(read(&*fs, &path).unwrap(), Some(listing(7)));
        // The newest slot torn: the one before it.
        let region = fs
            .open_region(&path, 2 * slot_len(64 * PAGE as u64))
            .unwrap();
        let slot = slot_len(64 * PAGE as u64);
        let newest = (0..2)
            .max_by_key(|&i| {
                let h = region.read_at(i * slot + 8, 8).unwrap();
                u64::from_le_bytes(h.try_into().unwrap())
            })
            .unwrap();
        // SAFETY: no other handle reads or writes the file in this test.
        unsafe {
            region
                .write_at(newest * slot + HEADER + 3, &[0xff])
                .unwrap()
        };
        assert_eq!(read(&*fs, &path).unwrap(), Some(listing(4)));
        // Both torn: an error, not an empty listing.
        // SAFETY: as above.
        unsafe {
            region
                .write_at((1 - newest) * slot + HEADER + 3, &[0xff])
                .unwrap()
        };
        assert!(read(&*fs, &path).is_err());
    }

    #[test]
    fn the_largest_listing_fits_a_slot() {
        // Every page its own row, each of one run.
        let container = 32 * PAGE as u64;
        let l = Listing {
            container,
            rows: (0..32)
                .map(|i| Listed {
                    id: u64::MAX - i,
                    entries: u32::MAX,
                    data_len: u32::MAX,
                    live_from: u32::MAX,
                    first_page: u32::MAX,
                    runs: vec![(u32::MAX, u32::MAX)],
                })
                .collect(),
        };
        assert!(l.encode().len() <= slot_len(container) - HEADER);
    }
}
