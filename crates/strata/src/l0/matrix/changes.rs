//! The matrix's changes (a flush's row, a column compaction's end, a manual compaction's
//! end), applied to the layout current when their job lands, and the columns a column
//! compaction reads.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

use super::region::LiveRow;
use super::row::RowIter;
use super::Matrix;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::l0::{L0Change, L0Column, Level0};

pub(super) fn as_matrix(current: &dyn Level0) -> Result<&Matrix> {
    current
        .as_any()
        .downcast_ref::<Matrix>()
        .ok_or_else(|| Error::corrupt("a matrix change met an L0 layout that is not a matrix"))
}

/// A flush's row, added to the receiver.
#[derive(Debug)]
pub(super) struct AddRow {
    /// The row, its pages held until a version's layout names them (and then by it).
    pub(super) row: LiveRow,
}

impl L0Change for AddRow {
    fn apply(&self, current: &dyn Level0) -> Result<Arc<dyn Level0>> {
        let m = as_matrix(current)?;
        let mut rows = m.0.rows.clone();
        rows.push(self.row.clone());
        m.rebuilt(rows, m.0.compactor, m.0.cursor.clone())
    }
}

/// A column compaction's end: the compactor's rows keep their entries from `after` on
/// (or, with no cursor left, leave L0).
#[derive(Debug)]
pub(super) struct ColumnDone {
    /// The column was cut from the receiver of a matrix with no compactor, as if it had
    /// reached its switch point (an idle drain, `Level0::idle_part`): those rows become
    /// the compactor as the column lands.
    pub(super) promote: bool,
    /// The compactor as the column was cut from it: row ids and first live entries.
    pub(super) expect: Vec<(u64, u32)>,
    /// Per compactor row: its new first live entry and page.
    pub(super) after: Vec<(u32, u32)>,
    /// The compactor's new cursor; `None` when the column took the rest of it.
    pub(super) cursor: Option<Vec<u8>>,
}

impl L0Change for ColumnDone {
    fn apply(&self, current: &dyn Level0) -> Result<Arc<dyn Level0>> {
        let m = as_matrix(current)?;
        let st = &m.0;
        let n = self.expect.len();
        // A promoted column's rows are still the oldest and no column has been cut since
        // (the token keeps a second one from starting), but flushes meanwhile may have
        // turned the receiver, those rows and newer ones, into the compactor: the newer
        // ones go back to the receiver (its switch turns them into the compactor again
        // once these have drained).
        let compactor_ok = if self.promote {
            st.compactor == 0 || (st.compactor >= n && st.cursor.is_empty())
        } else {
            st.compactor == n
        };
        let same = compactor_ok
            && st.rows.len() >= n
            && st
                .rows
                .iter()
                .zip(&self.expect)
                .all(|(r, &(id, from))| r.r().id == id && r.live_from == from);
        if !same {
            return Err(Error::corrupt(
                "the matrix's compactor changed during a column compaction",
            ));
        }
        match &self.cursor {
            None => m.rebuilt(st.rows[n..].to_vec(), 0, Vec::new()),
            Some(c) => {
                let mut rows = st.rows.clone();
                for (r, &(from, page)) in rows.iter_mut().zip(&self.after) {
                    *r = r.cut(&st.shared.pages, from, page)?;
                }
                m.rebuilt(rows, n, c.clone())
            }
        }
    }
}

/// A manual compaction's end: the rows it took leave L0.
#[derive(Debug)]
pub(super) struct RemoveRows {
    /// The rows taken, with the first live entry each had.
    pub(super) taken: Vec<(u64, u32)>,
}

impl L0Change for RemoveRows {
    fn apply(&self, current: &dyn Level0) -> Result<Arc<dyn Level0>> {
        let m = as_matrix(current)?;
        let st = &m.0;
        let taken: HashMap<u64, u32> = self.taken.iter().copied().collect();
        for r in &st.rows {
            if taken.get(&r.r().id).is_some_and(|&f| f != r.live_from) {
                return Err(Error::corrupt(
                    "a matrix row changed during a manual compaction",
                ));
            }
        }
        let compactor = st.rows[..st.compactor]
            .iter()
            .filter(|r| !taken.contains_key(&r.r().id))
            .count();
        let rows = st
            .rows
            .iter()
            .filter(|r| !taken.contains_key(&r.r().id))
            .cloned()
            .collect();
        let cursor = if compactor == 0 {
            Vec::new()
        } else {
            st.cursor.clone()
        };
        m.rebuilt(rows, compactor, cursor)
    }
}

/// What a column compaction takes: entry ranges of the rows of the layout it was cut from
/// (which keeps their pages held while the compaction runs).
#[derive(Debug)]
pub(super) struct Column {
    pub(super) source: Matrix,
    pub(super) ranges: Vec<(usize, u32, u32)>,
    pub(super) change: Arc<dyn L0Change>,
}

impl L0Column for Column {
    fn iterators(&self, out: &mut Vec<Box<dyn InternalIterator>>) -> Result<()> {
        let region = self.source.region()?;
        let keep: Arc<dyn Any + Send + Sync> = self.source.0.clone();
        for &(i, lo, hi) in &self.ranges {
            if lo < hi {
                let lr = &self.source.0.rows[i];
                out.push(Box::new(RowIter::new(
                    region.clone(),
                    lr.row.row.clone(),
                    keep.clone(),
                    lo,
                    hi,
                )));
            }
        }
        Ok(())
    }

    fn change(&self) -> Arc<dyn L0Change> {
        self.change.clone()
    }
}

/// A column that could not be cut: reading it, or applying it, returns the error.
#[derive(Debug)]
pub(super) struct Unreadable(pub(super) Error);

impl L0Column for Unreadable {
    fn iterators(&self, _out: &mut Vec<Box<dyn InternalIterator>>) -> Result<()> {
        Err(self.0.clone().context("cutting a column of the matrix"))
    }

    fn change(&self) -> Arc<dyn L0Change> {
        Arc::new(Unreadable(self.0.clone()))
    }
}

impl L0Change for Unreadable {
    fn apply(&self, _current: &dyn Level0) -> Result<Arc<dyn Level0>> {
        Err(self.0.clone().context("cutting a column of the matrix"))
    }
}
