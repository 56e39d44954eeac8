//! Bloom filter over the user keys of one table (docs/format/sstable.md, "Filter block").
//!
//! Layout: `bits[ceil(n * bits_per_key / 8)] | num_probes: u8`. Probe `i` sets bit
//! `(h1 + i * h2) mod m`, where `h1`/`h2` are the halves of the key's 64-bit XXH3 hash.
//! Read path: `Table::get` asks `may_contain` before touching the index.

/// Hash used for filter probes.
pub fn filter_hash(user_key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(user_key)
}

/// Builds a filter from key hashes.
pub fn build(hashes: &[u64], bits_per_key: u32) -> Vec<u8> {
    let k = ((f64::from(bits_per_key) * std::f64::consts::LN_2) as u32).clamp(1, 30);
    let bits = (hashes.len() * bits_per_key as usize).max(64);
    let bytes = bits.div_ceil(8);
    let m = (bytes * 8) as u64;
    let mut out = vec![0u8; bytes + 1];
    for &h in hashes {
        let (mut h1, h2) = (h & 0xffff_ffff, (h >> 32) | 1);
        for _ in 0..k {
            let bit = h1 % m;
            out[(bit / 8) as usize] |= 1 << (bit % 8);
            h1 = h1.wrapping_add(h2);
        }
    }
    out[bytes] = k as u8;
    out
}

/// Whether the key with hash `h` may be in the set. A malformed filter answers true.
pub fn may_contain(filter: &[u8], h: u64) -> bool {
    let Some((&k, bits)) = filter.split_last() else {
        return true;
    };
    if bits.is_empty() || k == 0 || k > 30 {
        return true;
    }
    let m = (bits.len() * 8) as u64;
    let (mut h1, h2) = (h & 0xffff_ffff, (h >> 32) | 1);
    for _ in 0..k {
        let bit = h1 % m;
        if bits[(bit / 8) as usize] & (1 << (bit % 8)) == 0 {
            return false;
        }
        h1 = h1.wrapping_add(h2);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_low_fpr() {
        let keys: Vec<Vec<u8>> = (0..10_000u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let hashes: Vec<u64> = keys.iter().map(|k| filter_hash(k)).collect();
        let f = build(&hashes, 10);
        assert!(keys.iter().all(|k| may_contain(&f, filter_hash(k))));
        let fp = (10_000..110_000u32)
            .filter(|i| may_contain(&f, filter_hash(&i.to_be_bytes())))
            .count();
        let rate = fp as f64 / 100_000.0;
        assert!(rate < 0.02, "false positive rate {rate}");
    }

    #[test]
    fn malformed_filter_is_permissive() {
        assert!(may_contain(&[], 1));
        assert!(may_contain(&[0, 0, 99], 1));
    }
}
