//! Locking helpers shared by every layer (ground: imports nothing of the crate).

use std::sync::{Mutex, MutexGuard};

/// `m` locked, whether or not a thread panicked while holding it: strata's state behind a
/// mutex is kept consistent by each holder before it can panic (a panicking background job
/// poisons the database instead, `DbInner::fail`), so a poisoned lock is not a reason to
/// stop every other thread.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
