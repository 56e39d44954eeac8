//! Progress on stderr: a redrawn bar on a terminal, a plain line every 10 s otherwise.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Shared counter the workers bump; a thread draws it.
pub struct Progress {
    pub done: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts showing progress of `name` towards `total` ops, in `mode` (auto|bar|plain|none).
    pub fn start(name: &str, total: u64, mode: &str) -> Progress {
        let done = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let bar = match mode {
            "bar" => true,
            "auto" => std::io::stderr().is_terminal(),
            _ => false,
        };
        let handle = (mode != "none").then(|| {
            let (done, stop, name) = (done.clone(), stop.clone(), name.to_string());
            std::thread::spawn(move || {
                let start = Instant::now();
                let mut last_plain = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(200));
                    let d = done.load(Ordering::Relaxed);
                    let secs = start.elapsed().as_secs_f64();
                    let rate = d as f64 / secs.max(1e-9);
                    let frac = (d as f64 / total.max(1) as f64).min(1.0);
                    if bar {
                        let width = 30;
                        let filled = (frac * width as f64) as usize;
                        eprint!(
                            "\r{name:<16} [{}{}] {:>5.1}% {:>10.0} ops/s {:>6.1}s ",
                            "#".repeat(filled),
                            " ".repeat(width - filled),
                            frac * 100.0,
                            rate,
                            secs
                        );
                        let _ = std::io::stderr().flush();
                    } else if last_plain.elapsed() >= Duration::from_secs(10) {
                        last_plain = Instant::now();
                        eprintln!(
                            "... {name}: {d} of {total} ops ({:.0}%), {rate:.0} ops/s, {secs:.0} s",
                            frac * 100.0
                        );
                    }
                }
                if bar {
                    eprint!("\r{}\r", " ".repeat(80));
                }
            })
        });
        Progress { done, stop, handle }
    }

    /// Stops the display.
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
