//! Time for expiring entries (docs/design/ttl.md): the clock the user may supply
//! ([`Clock`], `Options::clock`) and the engine's reading of it ([`Now`]), which never goes
//! back, within a session or across a restart.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Where the engine reads the time that expiring entries are judged by.
///
/// The default is the system's wall clock. A clock of its own lets a test or a simulation
/// move time by hand; it must count milliseconds since the Unix epoch, as the expiries
/// stored in the database do.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_millis(&self) -> u64;
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// The engine's time: the clock, but never below a time it has handed out before, nor
/// below the largest time the manifest recorded (`high`, shared with the version set,
/// which records it in each edit once the database has expiring entries). A clock set
/// back does not bring back what had expired.
pub(crate) struct Now {
    clock: Arc<dyn Clock>,
    high: Arc<AtomicU64>,
}

impl Now {
    pub fn new(clock: Arc<dyn Clock>, high: Arc<AtomicU64>) -> Self {
        Now { clock, high }
    }

    /// The largest time handed out or recorded so far (without reading the clock).
    pub fn recorded(&self) -> u64 {
        self.high.load(Ordering::SeqCst)
    }

    /// Milliseconds since the Unix epoch, at least every earlier answer.
    pub fn now(&self) -> u64 {
        let t = self.clock.now_millis();
        let high = self.high.load(Ordering::SeqCst);
        if t <= high {
            return high;
        }
        // (Written only when the clock moved on: readers on many threads share the line.)
        self.high.fetch_max(t, Ordering::SeqCst).max(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Manual(AtomicU64);
    impl Clock for Manual {
        fn now_millis(&self) -> u64 {
            self.0.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn never_goes_back() {
        let clock = Arc::new(Manual(AtomicU64::new(1_000)));
        let now = Now::new(clock.clone(), Arc::new(AtomicU64::new(500)));
        assert_eq!(now.now(), 1_000);
        clock.0.store(800, Ordering::SeqCst);
        assert_eq!(now.now(), 1_000, "the clock went back");
        clock.0.store(1_200, Ordering::SeqCst);
        assert_eq!(now.now(), 1_200);
        let recorded = Now::new(clock, Arc::new(AtomicU64::new(5_000)));
        assert_eq!(recorded.now(), 5_000, "below what the manifest recorded");
    }
}
