//! [`ClockCache`]: a sharded cache with a byte (or count) budget and CLOCK eviction.
//!
//! Used as the block cache (charge = block bytes) and the table cache (charge = 1 per open
//! table). CLOCK approximates LRU with one "referenced" bit per entry: a hit sets the bit, the
//! eviction hand clears set bits and evicts the first clear one. Values are `Arc`s, so an
//! evicted entry stays alive for readers still holding it.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

const SHARDS: usize = 16;

/// A multiply-rotate hasher for the cache's small integer keys (file numbers, offsets):
/// std's SipHash was 8 % of a seek-heavy profile. Keys are not attacker-controlled.
#[derive(Default, Clone, Copy)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn finish(&self) -> u64 {
        // Mix the high bits down: shards and buckets take the low ones.
        self.0 ^ (self.0 >> 29)
    }
}

pub(crate) type IntBuild = BuildHasherDefault<IntHasher>;

struct Slot<K, V> {
    key: K,
    value: V,
    charge: usize,
    referenced: bool,
}

struct Shard<K, V> {
    map: HashMap<K, usize, IntBuild>,
    slots: Vec<Slot<K, V>>,
    hand: usize,
    usage: usize,
}

/// A sharded CLOCK cache.
pub struct ClockCache<K, V> {
    shards: Vec<Mutex<Shard<K, V>>>,
    capacity_per_shard: usize,
    hasher: IntBuild,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl<K: Hash + Eq + Clone, V: Clone> ClockCache<K, V> {
    /// A cache holding at most `capacity` units of charge (split evenly across shards).
    pub fn new(capacity: usize) -> Self {
        ClockCache {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        map: HashMap::default(),
                        slots: Vec::new(),
                        hand: 0,
                        usage: 0,
                    })
                })
                .collect(),
            capacity_per_shard: capacity.div_ceil(SHARDS),
            hasher: Default::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn shard(&self, key: &K) -> std::sync::MutexGuard<'_, Shard<K, V>> {
        // NB: the shard comes from middle bits; the shard's map uses the low ones (buckets)
        // and the top ones (tags), which would otherwise be constant within a shard.
        let i = ((self.hasher.hash_one(key) >> 32) as usize) % SHARDS;
        self.shards[i]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The cached value for `key`, marking it recently used.
    pub fn get(&self, key: &K) -> Option<V> {
        let mut s = self.shard(key);
        if let Some(&i) = s.map.get(key) {
            s.slots[i].referenced = true;
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Some(s.slots[i].value.clone());
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// Inserts (or replaces) `key`, evicting as needed. An entry larger than a shard's budget
    /// is not cached.
    pub fn insert(&self, key: K, value: V, charge: usize) {
        if self.capacity_per_shard == 0 || charge > self.capacity_per_shard {
            return;
        }
        let mut guard = self.shard(&key);
        let s = &mut *guard;
        if let Some(&i) = s.map.get(&key) {
            s.usage = s.usage - s.slots[i].charge + charge;
            s.slots[i].value = value;
            s.slots[i].charge = charge;
            s.slots[i].referenced = true;
            return;
        }
        while s.usage + charge > self.capacity_per_shard && !s.slots.is_empty() {
            if s.hand >= s.slots.len() {
                s.hand = 0;
            }
            let h = s.hand;
            if s.slots[h].referenced {
                s.slots[h].referenced = false;
                s.hand += 1;
                continue;
            }
            Self::remove_slot(s, h);
        }
        s.map.insert(key.clone(), s.slots.len());
        s.slots.push(Slot {
            key,
            value,
            charge,
            referenced: false,
        });
        s.usage += charge;
    }

    fn remove_slot(s: &mut Shard<K, V>, i: usize) {
        let slot = s.slots.swap_remove(i);
        s.usage -= slot.charge;
        s.map.remove(&slot.key);
        if i < s.slots.len() {
            let moved = s.slots[i].key.clone();
            s.map.insert(moved, i);
        }
    }

    /// Removes `key` if present.
    pub fn remove(&self, key: &K) {
        let mut s = self.shard(key);
        if let Some(&i) = s.map.get(key) {
            Self::remove_slot(&mut s, i);
        }
    }

    /// Removes every entry.
    pub fn clear(&self) {
        for s in &self.shards {
            let mut s = s.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            s.map.clear();
            s.slots.clear();
            s.hand = 0;
            s.usage = 0;
        }
    }

    /// Total charge held.
    pub fn usage(&self) -> usize {
        self.shards
            .iter()
            .map(|s| {
                s.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .usage
            })
            .sum()
    }

    /// (hits, misses) so far.
    pub fn hit_stats(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_within_budget_and_keeps_hot_entries() {
        let c: ClockCache<u32, u32> = ClockCache::new(16 * 10);
        for i in 0..1000 {
            c.insert(i, i, 1);
            c.get(&0);
            assert!(c.usage() <= 16 * 10);
        }
        assert_eq!(c.get(&0), Some(0));
        c.remove(&0);
        assert_eq!(c.get(&0), None);
    }

    #[test]
    fn oversized_entries_are_not_cached() {
        let c: ClockCache<u32, u32> = ClockCache::new(32);
        c.insert(1, 1, 100);
        assert_eq!(c.get(&1), None);
    }
}
