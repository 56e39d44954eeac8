//! [`Model`]: what the database should contain, as a `BTreeMap`, with snapshots.

use std::collections::BTreeMap;
use std::ops::Bound;

/// The expected state.
#[derive(Debug, Clone, Default)]
pub struct Model {
    /// Current contents.
    pub map: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl Model {
    /// Applies a put.
    pub fn put(&mut self, k: &[u8], v: &[u8]) {
        self.map.insert(k.to_vec(), v.to_vec());
    }

    /// Applies a delete.
    pub fn delete(&mut self, k: &[u8]) {
        self.map.remove(k);
    }

    /// Applies a range deletion of `[lo, hi)`.
    pub fn delete_range(&mut self, lo: &[u8], hi: &[u8]) {
        if lo < hi {
            let doomed: Vec<Vec<u8>> = self
                .map
                .range(lo.to_vec()..hi.to_vec())
                .map(|(k, _)| k.clone())
                .collect();
            for k in doomed {
                self.map.remove(&k);
            }
        }
    }

    /// The value of `k`.
    pub fn get(&self, k: &[u8]) -> Option<Vec<u8>> {
        self.map.get(k).cloned()
    }

    /// Entries in [`lo`, `hi`), forward.
    pub fn range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
        if let (Some(l), Some(h)) = (lo, hi) {
            if l >= h {
                return Vec::new();
            }
        }
        let lo = lo.map_or(Bound::Unbounded, |l| Bound::Included(l.to_vec()));
        let hi = hi.map_or(Bound::Unbounded, |h| Bound::Excluded(h.to_vec()));
        self.map
            .range((lo, hi))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// Asserts that `db` holds exactly `expected`: every key by `get`, and the whole of it by a
/// forward scan.
///
/// # Panics
/// On the first difference, naming the key.
pub fn assert_db_matches(db: &strata::Db, expected: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for (k, v) in expected {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{k:?}");
    }
    let all: Vec<(Vec<u8>, Vec<u8>)> = db
        .iter(strata::ReadOptions::default())
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = expected
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(all, want);
}
