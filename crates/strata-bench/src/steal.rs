//! CPU time the hypervisor took from this machine's virtual CPUs ("steal", the eighth
//! field of `/proc/stat`'s `cpu` line), sampled on a thread of its own so that a slow op can
//! be told apart from the engine's own waits: on the 2-core virtual machines these numbers
//! are taken on, a put that waited 20-100 ms with no wait of the engine's to explain it
//! came when the host ran something else (docs/design/matrixkv.md, "Puts over 20 ms and the
//! host's steal time").
//!
//! `--steal_sample_ms` sets the period (default 20; 0 turns the sampler off). Elsewhere than
//! Linux, or where `/proc/stat` cannot be read, nothing is sampled and nothing is printed.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Samples kept at most (at 20 ms, about 5.5 hours); later samples are dropped.
const MAX_SAMPLES: usize = 1 << 20;

/// The cumulative steal of all CPUs, in the kernel's clock ticks (`USER_HZ`, 100 per second
/// on Linux), read from `/proc/stat`'s aggregate `cpu` line.
fn read_steal_ticks() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    // cpu user nice system idle iowait irq softirq steal ...
    line.split_whitespace().nth(8)?.parse().ok()
}

/// Milliseconds per clock tick of `/proc/stat` (`USER_HZ` is 100 on every Linux ABI).
const MS_PER_TICK: f64 = 10.0;

/// Samples of cumulative steal, taken every period by a background thread.
pub struct StealSampler {
    samples: Mutex<Vec<(Instant, u64)>>,
}

impl StealSampler {
    /// Starts sampling every `period`, or returns `None` when steal cannot be read here.
    /// The thread runs until the process ends, sleeping between reads of one small file.
    pub fn start(period: Duration) -> Option<Arc<StealSampler>> {
        if period.is_zero() {
            return None;
        }
        let first = read_steal_ticks()?;
        let sampler = Arc::new(StealSampler {
            samples: Mutex::new(vec![(Instant::now(), first)]),
        });
        let s = sampler.clone();
        std::thread::Builder::new()
            .name("steal-sampler".into())
            .spawn(move || loop {
                std::thread::sleep(period);
                let Some(t) = read_steal_ticks() else {
                    return;
                };
                let mut v = s.samples.lock().unwrap_or_else(|e| e.into_inner());
                if v.len() < MAX_SAMPLES {
                    v.push((Instant::now(), t));
                }
            })
            .ok()?;
        Some(sampler)
    }

    /// Milliseconds of CPU time (all CPUs together) stolen between the last sample at or
    /// before `from` and the first sample at or after `to`: an upper bound for [`from`,
    /// `to`], one sampling period wide at each end. `None` when no sample follows `to` yet.
    pub fn stolen_ms(&self, from: Instant, to: Instant) -> Option<f64> {
        let v = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        stolen_in(&v, from, to)
    }

    /// The most CPU time stolen over any `window` between `from` and `to` (the samples'
    /// periods summed up to the window's width), in milliseconds, and when that window
    /// ended.
    pub fn worst_window_ms(&self, from: Instant, to: Instant, window: Duration) -> (f64, Instant) {
        let v = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        worst_window(&v, from, to, window)
    }

    /// Waits until a sample has been taken at or after `t` (at most `limit`), so a result
    /// just finished can be charged its steal.
    pub fn wait_past(&self, t: Instant, limit: Duration) {
        let until = Instant::now() + limit;
        loop {
            let last = {
                let v = self.samples.lock().unwrap_or_else(|e| e.into_inner());
                v.last().map(|s| s.0)
            };
            if last.is_some_and(|l| l >= t) || Instant::now() >= until {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

fn stolen_in(v: &[(Instant, u64)], from: Instant, to: Instant) -> Option<f64> {
    // The last sample at or before `from` (or the first sample, if all are later).
    let i = v.partition_point(|s| s.0 <= from).saturating_sub(1);
    let j = v.partition_point(|s| s.0 < to);
    let end = v.get(j)?;
    let start = v.get(i)?;
    Some(end.1.saturating_sub(start.1) as f64 * MS_PER_TICK)
}

fn worst_window(
    v: &[(Instant, u64)],
    from: Instant,
    to: Instant,
    window: Duration,
) -> (f64, Instant) {
    let lo = v.partition_point(|s| s.0 < from);
    let hi = v.partition_point(|s| s.0 <= to);
    let mut best = (0.0, from);
    let mut start = lo.saturating_sub(1);
    for k in lo..hi {
        while start + 1 < k && v[k].0.duration_since(v[start + 1].0) >= window {
            start += 1;
        }
        let ms = v[k].1.saturating_sub(v[start].1) as f64 * MS_PER_TICK;
        if ms > best.0 {
            best = (ms, v[k].0);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(base: Instant, ticks: &[u64]) -> Vec<(Instant, u64)> {
        // One sample every 20 ms, cumulative ticks as given.
        ticks
            .iter()
            .enumerate()
            .map(|(k, &t)| (base + Duration::from_millis(20 * k as u64), t))
            .collect()
    }

    #[test]
    fn steal_is_charged_from_the_sample_before_to_the_sample_after() {
        let b = Instant::now();
        let v = samples(b, &[0, 0, 1, 4, 4, 6]);
        let at = |ms: u64| b + Duration::from_millis(ms);
        // [25, 55] ms: from the sample at 20 ms (0) to the one at 60 ms (4).
        assert_eq!(stolen_in(&v, at(25), at(55)), Some(40.0));
        // Exactly on samples: [40, 60] -> 1..4.
        assert_eq!(stolen_in(&v, at(40), at(60)), Some(30.0));
        // Past the last sample: not known yet.
        assert_eq!(stolen_in(&v, at(90), at(110)), None);
        // Before the first sample: charged from it.
        assert_eq!(
            stolen_in(&v, b - Duration::from_millis(5), at(20)),
            Some(0.0)
        );
    }

    #[test]
    fn the_worst_window_finds_the_densest_stretch() {
        let b = Instant::now();
        let v = samples(b, &[0, 0, 1, 4, 4, 4, 9, 9]);
        let (ms, when) = worst_window(&v, b, b + Duration::from_secs(1), Duration::from_millis(20));
        assert_eq!(ms, 50.0);
        assert_eq!(when, b + Duration::from_millis(120));
        let (ms, _) = worst_window(
            &v,
            b,
            b + Duration::from_secs(1),
            Duration::from_millis(200),
        );
        assert_eq!(ms, 90.0);
        let (ms, _) = worst_window(
            &v,
            b,
            b + Duration::from_millis(70),
            Duration::from_millis(20),
        );
        assert_eq!(ms, 30.0);
    }
}
