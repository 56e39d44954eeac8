//! [`MergingIterator`]: one sorted view over several sorted children.
//!
//! Children are ordered newest first; on equal internal keys (which the engine never produces
//! across sources) the earlier child wins. Going forward over [`HEAP_FROM`] children or more
//! (a compaction of many L0 tables or matrix rows), the valid children are kept in a min-heap,
//! so a step costs about 2·log2(n) key comparisons instead of n; below that, and going
//! backward (rare, and never in a compaction), the smallest or largest child is found by a
//! linear scan, which beats a heap's bookkeeping for the handful of sources a read sees.

use std::cmp::Ordering;

use super::InternalIterator;
use crate::error::Result;
use crate::key;

/// The number of children from which a forward merge keeps a heap: chosen above the sources
/// a read of a settled database sees, not measured at the break-even. What the heap gains
/// where it applies (docs/bench/log.md, "A heap in the merging iterator"): column compactions
/// of 50-128 rows spent 12 % of the compaction thread finding the smallest child linearly.
const HEAP_FROM: usize = 9;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// Merges sorted children into one sorted stream.
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    direction: Direction,
    /// Whether a forward merge keeps `heap` (`HEAP_FROM` children or more).
    use_heap: bool,
    /// Going forward with `use_heap`: the valid children's indices, a min-heap by (key,
    /// index), `heap[0] == current`. Stale going backward: every forward positioning
    /// (`settle_forward`) rebuilds it.
    heap: Vec<usize>,
}

impl MergingIterator {
    /// Merges `children`.
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        Self::with_heap_from(children, HEAP_FROM)
    }

    fn with_heap_from(children: Vec<Box<dyn InternalIterator>>, heap_from: usize) -> Self {
        let use_heap = children.len() >= heap_from;
        MergingIterator {
            heap: Vec::with_capacity(if use_heap { children.len() } else { 0 }),
            children,
            current: None,
            direction: Direction::Forward,
            use_heap,
        }
    }

    /// Whether child `a` comes before child `b` (both valid): smaller key, or the same key
    /// and the earlier (newer) child.
    #[inline]
    fn before(&self, a: usize, b: usize) -> bool {
        match key::compare(self.children[a].key(), self.children[b].key()) {
            Ordering::Less => true,
            Ordering::Equal => a < b,
            Ordering::Greater => false,
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                return;
            }
            let r = l + 1;
            let child = if r < n && self.before(self.heap[r], self.heap[l]) {
                r
            } else {
                l
            };
            if !self.before(self.heap[child], self.heap[i]) {
                return;
            }
            self.heap.swap(i, child);
            i = child;
        }
    }

    /// Positions `current` on the smallest child, after the children were repositioned.
    fn settle_forward(&mut self) {
        if !self.use_heap {
            self.find_smallest();
            return;
        }
        self.heap.clear();
        for (i, c) in self.children.iter().enumerate() {
            if c.valid() {
                self.heap.push(i);
            }
        }
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
        self.current = self.heap.first().copied();
    }

    /// After the current child stepped forward: restores the heap (or rescans).
    fn advance_forward(&mut self) {
        if !self.use_heap {
            self.find_smallest();
            return;
        }
        let top = self.heap[0];
        if !self.children[top].valid() {
            self.heap.swap_remove(0);
        }
        self.sift_down(0);
        self.current = self.heap.first().copied();
    }

    fn find_smallest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if !c.valid() {
                continue;
            }
            best = match best {
                Some(b) if key::compare(c.key(), self.children[b].key()) != Ordering::Less => {
                    Some(b)
                }
                _ => Some(i),
            };
        }
        self.current = best;
    }

    fn find_largest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if !c.valid() {
                continue;
            }
            best = match best {
                Some(b) if key::compare(c.key(), self.children[b].key()) != Ordering::Greater => {
                    Some(b)
                }
                _ => Some(i),
            };
        }
        self.current = best;
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.direction = Direction::Forward;
        self.settle_forward();
    }

    fn seek_to_last(&mut self) {
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.direction = Direction::Reverse;
        self.find_largest();
    }

    fn seek(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek(target);
        }
        self.direction = Direction::Forward;
        self.settle_forward();
    }

    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        let turned = self.direction != Direction::Forward;
        if turned {
            // Every other child must be positioned after key().
            let k = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek(&k);
                if c.valid() && key::compare(&k, c.key()) == Ordering::Equal {
                    c.next();
                }
            }
            self.direction = Direction::Forward;
        }
        self.children[cur].next();
        if turned {
            self.settle_forward();
        } else {
            self.advance_forward();
        }
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Reverse {
            // Every other child must be positioned before key().
            let k = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek(&k);
                if c.valid() {
                    c.prev();
                } else {
                    c.seek_to_last();
                }
            }
            self.direction = Direction::Reverse;
        }
        self.children[cur].prev();
        self.find_largest();
    }

    fn key(&self) -> &[u8] {
        self.current.map_or(&[][..], |c| self.children[c].key())
    }

    fn value(&self) -> &[u8] {
        self.current.map_or(&[][..], |c| self.children[c].value())
    }

    fn status(&self) -> Result<()> {
        self.children.iter().try_for_each(|c| c.status())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{SeqNo, ValueKind};

    /// A sorted child over owned entries.
    struct VecIter {
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        pos: Option<usize>,
    }

    impl VecIter {
        fn at(&mut self, i: usize) {
            self.pos = (i < self.entries.len()).then_some(i);
        }
    }

    impl InternalIterator for VecIter {
        fn valid(&self) -> bool {
            self.pos.is_some()
        }
        fn seek_to_first(&mut self) {
            self.at(0);
        }
        fn seek_to_last(&mut self) {
            self.pos = self.entries.len().checked_sub(1);
        }
        fn seek(&mut self, target: &[u8]) {
            let i = self
                .entries
                .partition_point(|(k, _)| key::compare(k, target) == Ordering::Less);
            self.at(i);
        }
        fn next(&mut self) {
            let i = self.pos.expect("valid");
            self.at(i + 1);
        }
        fn prev(&mut self) {
            self.pos = self.pos.expect("valid").checked_sub(1);
        }
        fn key(&self) -> &[u8] {
            &self.entries[self.pos.expect("valid")].0
        }
        fn value(&self) -> &[u8] {
            &self.entries[self.pos.expect("valid")].1
        }
        fn status(&self) -> Result<()> {
            Ok(())
        }
    }

    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    fn ikey(user: u64, seq: u64) -> Vec<u8> {
        key::internal_key(format!("k{user:05}").as_bytes(), SeqNo(seq), ValueKind::Put)
    }

    /// `n` children over random user keys; versions of one user key may sit in several
    /// children, but no internal key twice. Returns the children and every entry sorted.
    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    fn children(rng: &mut Rng, n: usize) -> (Vec<Entries>, Vec<Vec<u8>>) {
        let mut kids = vec![Vec::new(); n];
        let mut all = Vec::new();
        for seq in 1..=rng.below(40 * n as u64 + 1) {
            let c = rng.below(n as u64) as usize;
            let k = ikey(rng.below(200), seq);
            kids[c].push((k.clone(), format!("v{c}").into_bytes()));
            all.push(k);
        }
        for k in &mut kids {
            k.sort_by(|a, b| key::compare(&a.0, &b.0));
        }
        all.sort_by(|a, b| key::compare(a, b));
        (kids, all)
    }

    fn merged(kids: &[Entries], heap_from: usize) -> MergingIterator {
        let children = kids
            .iter()
            .map(|e| {
                Box::new(VecIter {
                    entries: e.clone(),
                    pos: None,
                }) as Box<dyn InternalIterator>
            })
            .collect();
        MergingIterator::with_heap_from(children, heap_from)
    }

    /// Random walks (seeks, steps both ways, direction changes) over merges of 0-40
    /// children, with and without the heap, against the sorted list of every entry.
    #[test]
    fn merges_match_a_sorted_list_with_and_without_the_heap() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..300 {
            let n = 1 + round % 40;
            let (kids, all) = children(&mut rng, n);
            for heap_from in [0, usize::MAX] {
                let mut it = merged(&kids, heap_from);
                assert_eq!(it.use_heap, heap_from == 0);
                let mut pos: Option<usize> = None;
                for _ in 0..200 {
                    match rng.below(10) {
                        0 => {
                            it.seek_to_first();
                            pos = (!all.is_empty()).then_some(0);
                        }
                        1 => {
                            it.seek_to_last();
                            pos = all.len().checked_sub(1);
                        }
                        2 | 3 => {
                            let t = ikey(rng.below(210), rng.below(8000));
                            it.seek(&t);
                            let i = all.partition_point(|k| key::compare(k, &t) == Ordering::Less);
                            pos = (i < all.len()).then_some(i);
                        }
                        4..=6 if pos.is_some() => {
                            it.next();
                            pos = pos.map(|p| p + 1).filter(|&p| p < all.len());
                        }
                        7..=9 if pos.is_some() => {
                            it.prev();
                            pos = pos.and_then(|p| p.checked_sub(1));
                        }
                        _ => {}
                    }
                    assert_eq!(it.valid(), pos.is_some(), "round {round}, n {n}");
                    if let Some(p) = pos {
                        assert_eq!(it.key(), &all[p][..], "round {round}, n {n}");
                    }
                }
            }
        }
    }

    /// A whole forward pass over many children meets every entry once, in order: the path
    /// a compaction takes.
    #[test]
    fn a_forward_pass_over_many_children_yields_every_entry_in_order() {
        let mut rng = Rng(7);
        let (kids, all) = children(&mut rng, 128);
        let mut it = merged(&kids, HEAP_FROM);
        assert!(it.use_heap);
        it.seek_to_first();
        let mut seen = Vec::new();
        while it.valid() {
            seen.push(it.key().to_vec());
            it.next();
        }
        assert_eq!(seen, all);
    }

    /// Equal internal keys in several children come out earliest child first, with the heap
    /// as without it.
    #[test]
    fn equal_keys_come_from_the_earlier_child_first() {
        let kids: Vec<_> = (0..12)
            .map(|c| vec![(ikey(1, 5), format!("v{c}").into_bytes())])
            .collect();
        for heap_from in [0, usize::MAX] {
            let mut it = merged(&kids, heap_from);
            it.seek_to_first();
            for c in 0..12 {
                assert_eq!(it.value(), format!("v{c}").as_bytes());
                it.next();
            }
            assert!(!it.valid());
        }
    }
}
