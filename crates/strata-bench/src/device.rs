//! A device model for the file system (`--device_model=DIR:MBps[:latency_us],...`): every
//! directory named gets a device of its own, a queue that serves one request at a time at the
//! given bandwidth, plus a fixed latency per sync (directory syncs included). Reads pay the
//! bandwidth only: compactions read tables block by block in order, which a disk serves
//! with read-ahead rather than a seek per block, and a latency per block read made every
//! compaction crawl; random point reads are therefore cheaper here than on a real HDD. Writes (appends) and reads of
//! files under the directory wait for their turn on its device, so two directories behave
//! as two independent disks of chosen speed (OHDB's "two disk components": e.g. an HDD at
//! 150 MB/s for logs and L0, an SSD at 1000 MB/s for deeper levels) on a machine with one.
//!
//! Files under no modelled directory go straight to the real file system. Reads through the
//! model are copies (`pread`), not memory maps, so that they can be charged: the engine's
//! read path under a model is its block-cache path. The benchmark says when a model is on.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use strata::fs::{
    FileLock, Fs, RandomAccessFile, RealFs, SequentialFile, SyncHandle, WritableFile,
};
use strata::Result;

/// One modelled device: bandwidth and per-request latency, serving requests in order.
#[derive(Debug)]
pub struct Device {
    /// The directory whose files live on it.
    pub dir: PathBuf,
    /// Bytes per second.
    pub bytes_per_sec: f64,
    /// Added to every sync.
    pub latency: Duration,
    /// When the device finishes the requests queued so far.
    busy_until: Mutex<Instant>,
}

impl Device {
    /// Waits for a request of `bytes` (plus the latency if `with_latency`) to be served.
    fn serve(&self, bytes: usize, with_latency: bool) {
        let cost = Duration::from_secs_f64(bytes as f64 / self.bytes_per_sec)
            + if with_latency {
                self.latency
            } else {
                Duration::ZERO
            };
        if cost.is_zero() {
            return;
        }
        let done = {
            let mut busy = self.busy_until.lock().unwrap_or_else(|e| e.into_inner());
            let start = (*busy).max(Instant::now());
            *busy = start + cost;
            *busy
        };
        // A backlog under a millisecond is carried, not slept: a sleep costs tens of
        // microseconds whatever it asks for, and small appends (a WAL record) would pay that
        // each time. The next request then waits for the whole backlog.
        let now = Instant::now();
        if done > now + Duration::from_millis(1) {
            std::thread::sleep(done - now);
        }
    }
}

/// Parses `DIR:MBps[:latency_us],...` (MB = 10^6 bytes).
///
/// # Errors
/// A message naming the malformed part.
pub fn parse(spec: &str) -> std::result::Result<Vec<Arc<Device>>, String> {
    spec.split(',')
        .filter(|s| !s.is_empty())
        .map(|part| {
            let bad = || format!("--device_model: expected DIR:MBps[:latency_us], got {part:?}");
            let fields: Vec<&str> = part.rsplitn(3, ':').collect();
            let (dir, mbps, latency) = match fields.as_slice() {
                [mbps, dir] => (*dir, *mbps, "0"),
                [latency, mbps, dir] => match mbps.parse::<f64>() {
                    Ok(_) => (*dir, *mbps, *latency),
                    // A colon inside DIR: only two fields are ours.
                    Err(_) => return Err(bad()),
                },
                _ => return Err(bad()),
            };
            let mbps: f64 = mbps.parse().map_err(|_| bad())?;
            let latency_us: u64 = latency.parse().map_err(|_| bad())?;
            if mbps.is_nan() || mbps <= 0.0 || dir.is_empty() {
                return Err(bad());
            }
            Ok(Arc::new(Device {
                dir: PathBuf::from(dir),
                bytes_per_sec: mbps * 1e6,
                latency: Duration::from_micros(latency_us),
                busy_until: Mutex::new(Instant::now()),
            }))
        })
        .collect()
}

/// The real file system, with modelled devices under some directories.
#[derive(Debug)]
pub struct DeviceFs {
    inner: RealFs,
    devices: Vec<Arc<Device>>,
}

impl DeviceFs {
    /// A file system charging files under each device's directory to it (the longest
    /// matching directory wins).
    pub fn new(devices: Vec<Arc<Device>>) -> Self {
        DeviceFs {
            inner: RealFs::new(),
            devices,
        }
    }

    fn device(&self, path: &Path) -> Option<Arc<Device>> {
        self.devices
            .iter()
            .filter(|d| path.starts_with(&d.dir))
            .max_by_key(|d| d.dir.as_os_str().len())
            .cloned()
    }

    /// `f`, charged to the device of `path` if it has one.
    fn writable(&self, path: &Path, f: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        match self.device(path) {
            Some(device) => Box::new(DeviceWritable { inner: f, device }),
            None => f,
        }
    }

    /// One line for the report: which directories are modelled, and how.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .devices
            .iter()
            .map(|d| {
                format!(
                    "{} at {:.0} MB/s, {} us per sync",
                    d.dir.display(),
                    d.bytes_per_sec / 1e6,
                    d.latency.as_micros()
                )
            })
            .collect();
        format!(
            "device model (not the real disk's speed): {}",
            parts.join("; ")
        )
    }
}

struct DeviceWritable {
    inner: Box<dyn WritableFile>,
    device: Arc<Device>,
}

impl WritableFile for DeviceWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.device.serve(data.len(), false);
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.device.serve(0, true);
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn mapped_bytes(&self) -> u64 {
        self.inner.mapped_bytes()
    }
    fn sync_handle(&mut self) -> Result<Option<Box<dyn SyncHandle>>> {
        Ok(self.inner.sync_handle()?.map(|inner| {
            Box::new(DeviceSync {
                inner,
                device: self.device.clone(),
            }) as Box<dyn SyncHandle>
        }))
    }
}

/// A sync taken outside the file's owner (a value store GC's WAL sync): pays the device's
/// latency when used, as [`DeviceWritable::sync`] does.
struct DeviceSync {
    inner: Box<dyn SyncHandle>,
    device: Arc<Device>,
}

impl SyncHandle for DeviceSync {
    fn sync(&self) -> Result<()> {
        self.device.serve(0, true);
        self.inner.sync()
    }
}

struct DeviceReadable {
    inner: Arc<dyn RandomAccessFile>,
    device: Arc<Device>,
}

impl RandomAccessFile for DeviceReadable {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        self.device.serve(len, false);
        self.inner.read_at(offset, len)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

struct DeviceSequential {
    inner: Box<dyn SequentialFile>,
    device: Arc<Device>,
}

impl SequentialFile for DeviceSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let n = self.inner.read(buf)?;
        self.device.serve(n, false);
        Ok(n)
    }
}

impl Fs for DeviceFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(self.writable(path, self.inner.create(path)?))
    }
    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(self.writable(path, self.inner.create_log(path)?))
    }
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open_with(path, strata::fs::ReadAccess::default())
    }
    fn open_with(
        &self,
        path: &Path,
        access: strata::fs::ReadAccess,
    ) -> Result<Arc<dyn RandomAccessFile>> {
        let f = self.inner.open_with(path, access)?;
        Ok(match self.device(path) {
            Some(device) => Arc::new(DeviceReadable { inner: f, device }),
            None => f,
        })
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let f = self.inner.open_sequential(path)?;
        Ok(match self.device(path) {
            Some(device) => Box::new(DeviceSequential { inner: f, device }),
            None => f,
        })
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        self.inner.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        if let Some(d) = self.device(dir) {
            d.serve(0, true);
        }
        self.inner.sync_dir(dir)
    }
    fn sync_file(&self, path: &Path) -> Result<()> {
        if let Some(d) = self.device(path) {
            d.serve(0, true);
        }
        self.inner.sync_file(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }
    fn file_identity(&self, path: &Path) -> Option<u128> {
        self.inner.file_identity(path)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
    // Persistent memory is not a modelled device: regions pass through.
    fn open_region(&self, path: &Path, len: usize) -> Result<Arc<dyn strata::fs::PmemRegion>> {
        self.inner.open_region(path, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs_and_refuses_bad_ones() {
        let d = parse("/a:150:8000,/b/c:1000").unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].dir, PathBuf::from("/a"));
        assert_eq!(d[0].bytes_per_sec, 150e6);
        assert_eq!(d[0].latency, Duration::from_micros(8000));
        assert_eq!(d[1].latency, Duration::ZERO);
        for bad in ["/a", "/a:x", "/a:0", ":100", "/a:100:x"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_device_serves_requests_one_after_another() {
        let d = &parse("/x:10").unwrap()[0]; // 10 MB/s: 100 KB take 10 ms
        let t = Instant::now();
        d.serve(100_000, false);
        d.serve(100_000, false);
        assert!(
            t.elapsed() >= Duration::from_millis(19),
            "{:?}",
            t.elapsed()
        );
        // Small requests are carried until they add up to a millisecond.
        let small = &parse("/x:10").unwrap()[0];
        let t = Instant::now();
        for _ in 0..100 {
            small.serve(10, false);
        }
        assert!(t.elapsed() < Duration::from_millis(20), "{:?}", t.elapsed());
        let fs = DeviceFs::new(parse("/x:10,/x/y:20").unwrap());
        assert_eq!(
            fs.device(Path::new("/x/y/f")).unwrap().dir,
            PathBuf::from("/x/y")
        );
        assert!(fs.device(Path::new("/z/f")).is_none());
    }

    /// A WAL synced outside its owner's lock (a value store GC) is synced through the
    /// model, paying its latency, not under the lock as a file without handles is.
    #[test]
    fn sync_handles_pass_through_the_model_and_pay_its_latency() {
        let dir = std::env::temp_dir().join(format!("strata-device-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let spec = format!("{}:100:20000", dir.display()); // 20 ms per sync
        let fs = DeviceFs::new(parse(&spec).unwrap());
        let mut f = fs.create(&dir.join("1.log")).unwrap();
        f.append(b"record").unwrap();
        let h = f
            .sync_handle()
            .unwrap()
            .expect("a real file gives a handle");
        let t = Instant::now();
        h.sync().unwrap();
        assert!(
            t.elapsed() >= Duration::from_millis(19),
            "{:?}",
            t.elapsed()
        );
        drop(f);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
