use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::fs::{Fs, MemFs};
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueKind};

fn entries(n: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let kind = if i % 7 == 3 {
                ValueKind::Delete
            } else {
                ValueKind::Put
            };
            let v = if kind == ValueKind::Put {
                format!("value-{i}-{}", "x".repeat((i % 50) as usize)).into_bytes()
            } else {
                vec![]
            };
            (
                key::internal_key(
                    format!("k{:06}", i * 2).as_bytes(),
                    SeqNo(u64::from(i) + 1),
                    kind,
                ),
                v,
            )
        })
        .collect()
}

fn write(
    fs: &MemFs,
    path: &Path,
    kv: &[(Vec<u8>, Vec<u8>)],
    opts: TableOptions,
) -> TableProperties {
    let mut b = TableBuilder::new(fs.create(path).unwrap(), path.to_path_buf(), opts);
    for (k, v) in kv {
        b.add(k, v).unwrap();
    }
    b.finish().unwrap()
}

fn setup() -> MemFs {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    fs
}

#[test]
fn round_trip_get_and_iter() {
    for compression in [Compression::None, Compression::Lz4] {
        let fs = setup();
        let p = Path::new("/d/1.sst");
        let kv = entries(3000);
        let opts = TableOptions {
            compression,
            ..Default::default()
        };
        let props = write(&fs, p, &kv, opts);
        assert_eq!(props.num_entries, 3000);
        assert!(props.num_data_blocks > 10);
        let cache = Arc::new(BlockCache::new(1 << 20));
        let t = Arc::new(Table::open(fs.open(p).unwrap(), p, Some(cache)).unwrap());
        assert_eq!(t.properties().num_deletions, props.num_deletions);
        for (k, v) in &kv {
            let uk = key::user_key(k);
            let got = t.get(&key::seek_key(uk, SeqNo::MAX), uk).unwrap().unwrap();
            assert_eq!((&got.0, &got.1), (k, v));
        }
        // Absent keys (odd numbers) and a too-old snapshot.
        assert_eq!(
            t.get(&key::seek_key(b"k000001", SeqNo::MAX), b"k000001")
                .unwrap(),
            None
        );
        assert_eq!(
            t.get(&key::seek_key(b"k000002", SeqNo(1)), b"k000002")
                .unwrap(),
            None
        );
        let mut it = t.iter();
        it.seek_to_first();
        for (k, _) in &kv {
            assert_eq!(it.key(), &k[..]);
            it.next();
        }
        assert!(!it.valid());
        it.seek_to_last();
        for (k, _) in kv.iter().rev() {
            assert_eq!(it.key(), &k[..]);
            it.prev();
        }
        it.status().unwrap();
    }
}

#[test]
fn empty_table() {
    let fs = setup();
    let p = Path::new("/d/2.sst");
    write(&fs, p, &[], TableOptions::default());
    let t = Arc::new(Table::open(fs.open(p).unwrap(), p, None).unwrap());
    let mut it = t.iter();
    it.seek_to_first();
    assert!(!it.valid());
    assert_eq!(t.get(&key::seek_key(b"a", SeqNo::MAX), b"a").unwrap(), None);
}

#[test]
fn every_byte_flip_is_detected_or_harmless() {
    let fs = setup();
    let p = Path::new("/d/3.sst");
    let kv = entries(200);
    write(
        &fs,
        p,
        &kv,
        TableOptions {
            block_size: 256,
            ..Default::default()
        },
    );
    let len = fs.file_size(p).unwrap() as usize;
    for at in 0..len {
        let c = MemFs::new();
        c.create_dir_all(Path::new("/d")).unwrap();
        let mut data = crate::fs::read_all(&fs, p).unwrap();
        data[at] ^= 0x5a;
        let mut f = c.create(p).unwrap();
        f.append(&data).unwrap();
        // Unflushed bytes are invisible to readers (the fs contract).
        f.sync().unwrap();
        drop(f);
        let t = match Table::open(c.open(p).unwrap(), p, None) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                assert!(e.is_corruption(), "offset {at}: {e}");
                assert!(e.message().contains("3.sst"), "{e}");
                continue;
            }
        };
        // Whatever is read must be exactly right, or an error.
        let mut it = t.iter();
        it.seek_to_first();
        let mut i = 0;
        while it.valid() {
            assert_eq!(
                (it.key(), it.value()),
                (&kv[i].0[..], &kv[i].1[..]),
                "flip at {at}"
            );
            i += 1;
            it.next();
        }
        if i != kv.len() {
            let e = it.status().unwrap_err();
            assert!(e.is_corruption() && e.message().contains("3.sst"), "{e}");
        }
        for (k, v) in kv.iter().step_by(13) {
            let uk = key::user_key(k);
            match t.get(&key::seek_key(uk, SeqNo::MAX), uk) {
                Ok(Some(got)) => assert_eq!((&got.0, &got.1), (k, v), "flip at {at}"),
                Ok(None) => panic!("flip at {at}: existing key silently missing"),
                Err(e) => assert!(e.is_corruption(), "{e}"),
            }
        }
    }
}

#[test]
fn newer_format_version_is_refused() {
    let fs = setup();
    let p = Path::new("/d/4.sst");
    write(&fs, p, &entries(10), TableOptions::default());
    let len = fs.file_size(p).unwrap() as usize;
    let mut data = crate::fs::read_all(&fs, p).unwrap();
    let foot = len - format::FOOTER_LEN;
    let mut f = format::Footer::decode(&data[foot..]).unwrap();
    f.format_version = 99;
    data[foot..].copy_from_slice(&f.encode());
    let c = setup();
    let mut w = c.create(p).unwrap();
    w.append(&data).unwrap();
    w.sync().unwrap();
    drop(w);
    let e = Table::open(c.open(p).unwrap(), p, None).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::NotSupported);
}

/// `verify_new` on a memory-mapped table checks every data block once: a flipped byte in any
/// data block is a `Corruption` naming the file; an intact table passes and reads back.
#[test]
fn verify_new_checks_every_block_of_a_mapped_table() {
    use crate::fs::RealFs;
    let dir = std::env::temp_dir().join(format!("strata-verify-new-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("000001.sst");
    let kv = entries(2000);
    let opts = TableOptions {
        block_size: 256,
        ..TableOptions::default()
    };
    let mut b = TableBuilder::new(RealFs.create(&path).unwrap(), path.clone(), opts);
    for (k, v) in &kv {
        b.add(k, v).unwrap();
    }
    let props = b.finish().unwrap();
    let good = std::fs::read(&path).unwrap();

    let t = Table::open(RealFs.open(&path).unwrap(), &path, None).unwrap();
    t.verify_new().unwrap();
    for (k, v) in kv.iter().step_by(97) {
        let got = t.get(k, key::user_key(k)).unwrap().unwrap();
        assert_eq!(&got.1, v);
    }
    drop(t);

    for at in [10u64, props.data_size / 2, props.data_size - 10] {
        let mut bad = good.clone();
        bad[at as usize] ^= 0x08;
        std::fs::write(&path, &bad).unwrap();
        let t = Table::open(RealFs.open(&path).unwrap(), &path, None).unwrap();
        let e = t.verify_new().unwrap_err();
        assert!(e.is_corruption(), "flip at {at}: {e}");
        assert!(e.message().contains("000001.sst"), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file that counts its reads (a table read with positional reads, as `RealFs` does for
/// `ReadAccess::Positional`).
struct CountingFile {
    inner: Arc<dyn crate::fs::RandomAccessFile>,
    reads: std::sync::atomic::AtomicUsize,
    /// Claims to be mapped (then the table reads in place and may ask for prefetches).
    mapped: bool,
    prefetched: std::sync::Mutex<Vec<(u64, usize)>>,
}

/// Table `p` of `fs`, counting its reads; `mapped` as it claims.
fn counting(fs: &MemFs, p: &Path, mapped: bool) -> Arc<CountingFile> {
    Arc::new(CountingFile {
        inner: fs.open(p).unwrap(),
        reads: Default::default(),
        mapped,
        prefetched: Default::default(),
    })
}

impl crate::fs::RandomAccessFile for CountingFile {
    fn read_at(&self, offset: u64, len: usize) -> crate::Result<Vec<u8>> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.read_at(offset, len)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn is_mapped(&self) -> bool {
        self.mapped
    }
    fn prefetch(&self, offset: u64, len: usize) {
        self.prefetched.lock().unwrap().push((offset, len));
    }
}

/// An iterator over a table read with positional reads reads ahead once it goes in file
/// order: a full scan takes far fewer reads than there are blocks, returns every entry, and
/// still detects a damaged block inside a read-ahead buffer; point reads read one block.
#[test]
fn positional_scans_read_ahead() {
    let fs = setup();
    let p = Path::new("/d/1.sst");
    let kv = entries(20_000);
    let props = write(&fs, p, &kv, TableOptions::default());
    let blocks = props.num_data_blocks as usize;
    assert!(blocks > 200, "{blocks} blocks");
    let open = |fs: &MemFs| {
        let f = counting(fs, p, false);
        let t = Arc::new(Table::open(f.clone(), p, None).unwrap());
        (t, f)
    };
    let (t, f) = open(&fs);
    let opened = f.reads.load(std::sync::atomic::Ordering::Relaxed);
    let mut it = t.iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        assert_eq!((it.key(), it.value()), (&kv[n].0[..], &kv[n].1[..]));
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, kv.len());
    let scan_reads = f.reads.load(std::sync::atomic::Ordering::Relaxed) - opened;
    assert!(
        scan_reads * 10 < blocks,
        "{scan_reads} reads for {blocks} blocks"
    );
    // Point reads: one read each (no read-ahead).
    let before = f.reads.load(std::sync::atomic::Ordering::Relaxed);
    for i in [17, 9_001, 4_242] {
        let (k, v) = &kv[i];
        assert_eq!(t.get(k, key::user_key(k)).unwrap().unwrap().1, *v);
    }
    assert_eq!(
        f.reads.load(std::sync::atomic::Ordering::Relaxed) - before,
        3
    );
    // A damaged byte in the middle of the data blocks fails the scan with its offset.
    let at = (fs.file_size(p).unwrap() / 3) as usize;
    fs.corrupt(p, at, |b| b[0] ^= 0x10).unwrap();
    let (t, _) = open(&fs);
    let mut it = t.iter();
    it.seek_to_first();
    while it.valid() {
        it.next();
    }
    let e = it.status().unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Corruption, "{e}");
}

/// An in-order iterator over a mapped table asks the file to prefetch what comes next
/// (ranges in ascending order, ahead of the blocks read, covering the table), and point
/// reads ask for nothing.
#[test]
fn mapped_scans_ask_for_prefetch() {
    let fs = setup();
    let p = Path::new("/d/1.sst");
    let kv = entries(20_000);
    let props = write(&fs, p, &kv, TableOptions::default());
    let f = counting(&fs, p, true);
    let t = Arc::new(Table::open(f.clone(), p, None).unwrap());
    for i in [17, 9_001, 4_242] {
        let (k, v) = &kv[i];
        assert_eq!(t.get(k, key::user_key(k)).unwrap().unwrap().1, *v);
    }
    assert!(f.prefetched.lock().unwrap().is_empty());
    let mut it = t.iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    assert_eq!(n, kv.len());
    let asked = f.prefetched.lock().unwrap().clone();
    assert!(asked.len() >= 2, "{asked:?}");
    assert!(
        asked.windows(2).all(|w| w[0].0 + w[0].1 as u64 <= w[1].0),
        "{asked:?}"
    );
    let covered = asked.last().map_or(0, |&(o, l)| o + l as u64);
    assert!(covered >= props.data_size, "{asked:?}");
}
