//! Key and value generation shared by every engine, so all run exactly the same workload.
//!
//! Keys follow db_bench: the key number as 8 big-endian bytes, padded with `'0'` to
//! `key_size` (shorter keys keep the low bytes). Distributions follow YCSB: `zipfian` is
//! YCSB's scrambled Zipfian (hot keys spread over the key space by an FNV hash), `latest`
//! favours recently inserted keys, `uniform` and `sequential` are what they say.

/// A fast deterministic RNG (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x853c_49e6_748f_ea9b)
    }

    /// Next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n.max(1))) >> 64) as u64
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Writes key number `n` into `buf` (db_bench layout).
pub fn make_key(n: u64, key_size: usize, buf: &mut Vec<u8>) {
    buf.clear();
    let be = n.to_be_bytes();
    if key_size >= 8 {
        buf.extend_from_slice(&be);
        buf.resize(key_size, b'0');
    } else {
        buf.extend_from_slice(&be[8 - key_size..]);
    }
}

/// Gray et al.'s Zipfian generator over [0, n) (rank 0 most popular), as in YCSB.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

impl Zipf {
    /// Zipfian over `n` items with constant `theta` (YCSB: 0.99). O(n) to build.
    pub fn new(n: u64, theta: f64) -> Self {
        let n = n.max(1);
        let zetan = zeta(n, theta);
        let zeta2 = zeta(2.min(n), theta);
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Zipf {
            n,
            theta,
            alpha,
            zetan,
            eta,
        }
    }

    /// A rank in [0, n).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let u = rng.unit();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.n - 1);
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }
}

/// FNV-1a over the 8 bytes of `x` (YCSB scrambles Zipfian ranks with it).
pub fn fnv64(x: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in x.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Which key number each op touches.
#[derive(Debug, Clone)]
pub enum KeyDist {
    /// Uniform over [0, n).
    Uniform(u64),
    /// 0, 1, 2, ... wrapping at n.
    Sequential { n: u64, next: u64 },
    /// Scrambled Zipfian over [0, n).
    Zipfian(Zipf),
    /// Recent keys hottest: `max - zipf` where `max` is the newest key.
    Latest(Zipf),
}

impl KeyDist {
    /// The distribution named by `--key_dist` over `n` keys.
    pub fn new(name: &str, n: u64, theta: f64) -> KeyDist {
        match name {
            "sequential" => KeyDist::Sequential { n, next: 0 },
            "zipfian" => KeyDist::Zipfian(Zipf::new(n, theta)),
            "latest" => KeyDist::Latest(Zipf::new(n, theta)),
            _ => KeyDist::Uniform(n),
        }
    }

    /// The next key number; `newest` is the highest key inserted so far (for `latest`).
    pub fn next(&mut self, rng: &mut Rng, newest: u64) -> u64 {
        match self {
            KeyDist::Uniform(n) => rng.below(*n),
            KeyDist::Sequential { n, next } => {
                let k = *next;
                *next = (*next + 1) % (*n).max(1);
                k
            }
            KeyDist::Zipfian(z) => fnv64(z.sample(rng)) % z.n,
            KeyDist::Latest(z) => newest.saturating_sub(z.sample(rng) % (newest + 1)),
        }
    }
}

/// Value sizes: fixed, uniform in [min, max], or Zipfian over [min, max] (small sizes hot).
#[derive(Debug, Clone)]
pub enum ValueSizes {
    /// Always this size.
    Fixed(usize),
    /// Uniform.
    Uniform(usize, usize),
    /// Zipfian over the sizes, `min` most frequent.
    Zipf(usize, Zipf),
    /// Two sizes, small and large, `small_pct` % of the keys small: a key's size is fixed
    /// by its hash (HashKV's Experiment 7: ratios of small to large pairs).
    Mix {
        small: usize,
        large: usize,
        small_pct: u64,
    },
}

impl ValueSizes {
    /// Parses `--value_size_dist` (with `--value_size` for `fixed`).
    ///
    /// # Errors
    /// A message naming the flag.
    pub fn parse(spec: &str, fixed: usize) -> Result<ValueSizes, String> {
        if spec == "fixed" {
            return Ok(ValueSizes::Fixed(fixed));
        }
        let parts: Vec<&str> = spec.split(':').collect();
        let bad = || {
            format!(
                "--value_size_dist: expected fixed|uniform:MIN:MAX|zipf:MIN:MAX|mix:SMALL:LARGE:SMALL_PCT, got {spec:?}"
            )
        };
        if parts[0] == "mix" {
            let n = |i: usize| parts.get(i).and_then(|p| p.parse::<usize>().ok());
            return match (parts.len(), n(1), n(2), n(3)) {
                (4, Some(small), Some(large), Some(pct)) if pct <= 100 => Ok(ValueSizes::Mix {
                    small,
                    large,
                    small_pct: pct as u64,
                }),
                _ => Err(bad()),
            };
        }
        if parts.len() != 3 {
            return Err(bad());
        }
        let (min, max): (usize, usize) = (
            parts[1].parse().map_err(|_| bad())?,
            parts[2].parse().map_err(|_| bad())?,
        );
        if min > max {
            return Err(bad());
        }
        match parts[0] {
            "uniform" => Ok(ValueSizes::Uniform(min, max)),
            "zipf" => Ok(ValueSizes::Zipf(
                min,
                Zipf::new((max - min + 1) as u64, 0.99),
            )),
            _ => Err(bad()),
        }
    }

    /// The next value size.
    pub fn next(&self, rng: &mut Rng) -> usize {
        match self {
            ValueSizes::Fixed(n) => *n,
            ValueSizes::Uniform(a, b) => a + rng.below((b - a + 1) as u64) as usize,
            ValueSizes::Zipf(min, z) => min + z.sample(rng) as usize,
            ValueSizes::Mix {
                small,
                large,
                small_pct,
            } => {
                if rng.below(100) < *small_pct {
                    *small
                } else {
                    *large
                }
            }
        }
    }

    /// The size of `key`'s next value: [`Self::next`], except that a `mix` key always
    /// gets the size its hash picks.
    pub fn for_key(&self, key: &[u8], rng: &mut Rng) -> usize {
        match self {
            ValueSizes::Mix {
                small,
                large,
                small_pct,
            } => {
                let h = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                    (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                });
                if h % 100 < *small_pct {
                    *small
                } else {
                    *large
                }
            }
            _ => self.next(rng),
        }
    }

    /// The mean size (for reporting).
    pub fn mean(&self) -> f64 {
        match self {
            ValueSizes::Fixed(n) => *n as f64,
            ValueSizes::Uniform(a, b) => (a + b) as f64 / 2.0,
            ValueSizes::Zipf(min, z) => {
                let mut rng = Rng::new(1);
                *min as f64 + (0..10_000).map(|_| z.sample(&mut rng) as f64).sum::<f64>() / 10_000.0
            }
            ValueSizes::Mix {
                small,
                large,
                small_pct,
            } => {
                (*small as f64 * *small_pct as f64 + *large as f64 * (100 - small_pct) as f64)
                    / 100.0
            }
        }
    }
}

/// Value bytes like db_bench's: half random, half repeated, so they compress to about 50 %.
pub struct ValueSource {
    data: Vec<u8>,
    pos: usize,
}

impl ValueSource {
    /// A source of at least 1 MiB of compressible bytes.
    pub fn new(seed: u64, max_value: usize) -> Self {
        let mut rng = Rng::new(seed ^ 0x5eed);
        let len = (1 << 20).max(max_value * 2);
        let mut data = Vec::with_capacity(len);
        while data.len() < len {
            let piece: Vec<u8> = (0..50).map(|_| b' ' + (rng.below(95) as u8)).collect();
            data.extend_from_slice(&piece);
            data.extend_from_slice(&piece);
        }
        ValueSource { data, pos: 0 }
    }

    /// The next `len` value bytes.
    pub fn next(&mut self, len: usize) -> &[u8] {
        let r = self.next_range(len);
        &self.data[r]
    }

    /// Where the next `len` value bytes lie in [`ValueSource::data`]: for a batch, whose
    /// values are all borrowed at once, without copying them.
    pub fn next_range(&mut self, len: usize) -> std::ops::Range<usize> {
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        let r = self.pos..self.pos + len;
        self.pos += len.max(1);
        r
    }

    /// The bytes [`ValueSource::next_range`] points into.
    pub fn data(&self) -> &[u8] {
        &self.data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_layout_matches_db_bench() {
        let mut k = Vec::new();
        make_key(0x0102, 16, &mut k);
        assert_eq!(k, b"\0\0\0\0\0\0\x01\x0200000000");
        make_key(0x0102, 4, &mut k);
        assert_eq!(k, b"\0\0\x01\x02");
    }

    #[test]
    fn zipfian_skew_matches_theory() {
        // Gray et al.'s generator (YCSB's) is exact for the two hottest ranks and follows
        // the power law P(rank r) ~ r^-theta in the tail. Check both, and the skew.
        let n = 1000;
        let z = Zipf::new(n, 0.99);
        let mut rng = Rng::new(7);
        let mut counts = vec![0u64; n as usize];
        let samples = 4_000_000;
        for _ in 0..samples {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        let zn = zeta(n, 0.99);
        for rank in [0usize, 1] {
            let expect = 1.0 / ((rank + 1) as f64).powf(0.99) / zn;
            let got = counts[rank] as f64 / samples as f64;
            assert!(
                (got - expect).abs() / expect < 0.03,
                "rank {rank}: {got} vs {expect}"
            );
        }
        // Slope of log(frequency) against log(rank) over ranks 10..500 is about -theta.
        let pts: Vec<(f64, f64)> = (10..500)
            .map(|r| (((r + 1) as f64).ln(), (counts[r].max(1) as f64).ln()))
            .collect();
        let (mx, my) = (
            pts.iter().map(|p| p.0).sum::<f64>() / pts.len() as f64,
            pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64,
        );
        let slope = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>()
            / pts.iter().map(|p| (p.0 - mx).powi(2)).sum::<f64>();
        assert!((slope + 0.99).abs() < 0.1, "tail slope {slope}");
        // Top 1 % of keys get far more than 1 % of the traffic (about 40 % for theta 0.99).
        let top: u64 = counts[..10].iter().sum();
        let share = top as f64 / samples as f64;
        assert!(share > 0.35 && share < 0.45, "top-10 share {share}");
    }

    #[test]
    fn scrambled_zipfian_spreads_hot_keys() {
        let mut d = KeyDist::new("zipfian", 100_000, 0.99);
        let mut rng = Rng::new(3);
        let mut hits = std::collections::HashMap::new();
        for _ in 0..200_000 {
            *hits.entry(d.next(&mut rng, 0)).or_insert(0u64) += 1;
        }
        let mut by_count: Vec<(u64, u64)> = hits.into_iter().map(|(k, c)| (c, k)).collect();
        by_count.sort_unstable_by(|a, b| b.cmp(a));
        // Hot keys exist, and the hottest are not simply the smallest numbers.
        assert!(by_count[0].0 > 200_000 / 100);
        assert!(by_count[..5].iter().any(|&(_, k)| k > 1000));
    }

    #[test]
    fn latest_prefers_recent_keys() {
        let mut d = KeyDist::new("latest", 10_000, 0.99);
        let mut rng = Rng::new(5);
        let recent = (0..10_000)
            .filter(|_| d.next(&mut rng, 9_999) >= 9_900)
            .count();
        assert!(recent > 3_000, "recent share {recent}");
    }

    #[test]
    fn uniform_and_sequential() {
        let mut rng = Rng::new(1);
        let mut d = KeyDist::new("uniform", 10, 0.99);
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            seen[d.next(&mut rng, 0) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800 && c < 1200), "{seen:?}");
        let mut s = KeyDist::new("sequential", 3, 0.99);
        let v: Vec<u64> = (0..5).map(|_| s.next(&mut rng, 0)).collect();
        assert_eq!(v, vec![0, 1, 2, 0, 1]);
    }

    #[test]
    fn value_sizes() {
        let mut rng = Rng::new(2);
        let u = ValueSizes::parse("uniform:10:20", 0).unwrap();
        assert!((0..1000)
            .map(|_| u.next(&mut rng))
            .all(|s| (10..=20).contains(&s)));
        let z = ValueSizes::parse("zipf:100:1000", 0).unwrap();
        assert!(z.mean() < 400.0);
        assert!(ValueSizes::parse("uniform:5", 0).is_err());
        assert!(ValueSizes::parse("zipf:9:1", 0).is_err());
        let m = ValueSizes::parse("mix:16:1000:50", 0).unwrap();
        assert!((m.mean() - 508.0).abs() < 1e-9);
        let small = (0..1000u32)
            .filter(|i| m.for_key(format!("key{i}").as_bytes(), &mut rng) == 16)
            .count();
        assert!((400..600).contains(&small), "{small} small of 1000");
        assert_eq!(
            m.for_key(b"same", &mut rng),
            m.for_key(b"same", &mut rng),
            "a key keeps its size"
        );
        assert!(ValueSizes::parse("mix:16:1000", 0).is_err());
        assert!(ValueSizes::parse("mix:16:1000:101", 0).is_err());
    }
}
