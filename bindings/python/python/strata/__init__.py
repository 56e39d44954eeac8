"""strata, an embeddable LSM key-value store, from Python.

>>> import strata
>>> with strata.DB("/tmp/example-db", create_if_missing=True) as db:
...     db.put(b"key", b"value")
...     db.get(b"key")
b'value'
"""

from ._strata import (  # noqa: F401
    DB,
    BackupEngine,
    BusyError,
    ClosedError,
    CorruptionError,
    Error,
    InvalidArgumentError,
    IOError,
    Iter,
    IteratorInvalidError,
    NotSupportedError,
    PoisonedError,
    RawIterator,
    Snapshot,
    StaleError,
    WriteBatch,
)

# `IOError` (also an `OSError`) is left out of `__all__`: `from strata import *` must not
# shadow the builtin name. Use `strata.IOError`.
__all__ = [
    "DB",
    "BackupEngine",
    "WriteBatch",
    "Snapshot",
    "Iter",
    "Error",
    "CorruptionError",
    "InvalidArgumentError",
    "NotSupportedError",
    "ClosedError",
    "PoisonedError",
    "BusyError",
    "StaleError",
    "IteratorInvalidError",
    "RawIterator",
]

from ._strata import destroy_db, repair_db, __version__  # noqa: E402,F401

__all__ += ["PrefixedDB", "destroy_db", "repair_db", "__version__"]


class _PrefixedIter:
    """An iterator of a `PrefixedDB`: the view's keys, without the prefix."""

    def __init__(self, it, n, prefix, with_key, with_value):
        self._it, self._n, self._prefix = it, n, prefix
        self._with_key, self._with_value = with_key, with_value

    def _item(self, item):
        if item is None or not self._with_key:
            return item
        if self._with_value:
            return (item[0][self._n:], item[1])
        return item[self._n:]

    def __iter__(self):
        return self

    def __next__(self):
        return self._item(next(self._it))

    def prev(self):
        return self._item(self._it.prev())

    def seek(self, target):
        self._it.seek(self._prefix + _key(target))

    def seek_to_start(self):
        self._it.seek_to_start()

    def seek_to_stop(self):
        self._it.seek_to_stop()

    def close(self):
        self._it.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class _PrefixedBatch:
    """A write batch of a `PrefixedDB`: keys get the prefix."""

    def __init__(self, batch, prefix):
        self._batch, self._prefix = batch, prefix

    def put(self, key, value):
        self._batch.put(self._prefix + _key(key), value)

    def delete(self, key):
        self._batch.delete(self._prefix + _key(key))

    def delete_range(self, start, end):
        self._batch.delete_range(self._prefix + _key(start), self._prefix + _key(end))

    def clear(self):
        self._batch.clear()

    def append(self, source):
        """Adds `source`'s writes (its keys as that batch wrote them: prefixed by its own
        view if it is one), as plyvel's does."""
        self._batch.append(source._batch if isinstance(source, _PrefixedBatch) else source)

    def approximate_size(self):
        return self._batch.approximate_size()

    def write(self):
        self._batch.write()

    def __len__(self):
        return len(self._batch)

    def __enter__(self):
        self._batch.__enter__()
        return self

    def __exit__(self, *exc):
        return self._batch.__exit__(*exc)


def _key(k):
    """`k` as bytes, refusing what `bytes()` would turn into something else (a str must be
    encoded first; an int would become that many zero bytes)."""
    if isinstance(k, (str, int)):
        raise TypeError(f"keys are bytes, not {type(k).__name__}")
    return bytes(k)


def _prefixed_iterator(make, p, start, stop, prefix, reverse, include_key, include_value,
                       include_start, include_stop):
    """An iterator `make` opens over the keys under prefix `p`, giving them without it."""
    it = make(
        start=None if start is None else p + _key(start),
        stop=None if stop is None else p + _key(stop),
        prefix=p + (b"" if prefix is None else _key(prefix)),
        reverse=reverse, include_key=include_key, include_value=include_value,
        include_start=include_start, include_stop=include_stop)
    return _PrefixedIter(it, len(p), p, include_key, include_value)


class _PrefixedSnapshot:
    """A snapshot of a `PrefixedDB`: keys given and returned without the prefix."""

    def __init__(self, snap, prefix):
        self._snap, self.prefix = snap, prefix

    def get(self, key, default=None, verify_checksums=False, fill_cache=True):
        return self._snap.get(self.prefix + _key(key), default)

    def iterator(self, start=None, stop=None, prefix=None, reverse=False, include_key=True,
                 include_value=True, include_start=True, include_stop=False,
                 verify_checksums=False, fill_cache=True):
        return _prefixed_iterator(
            self._snap.iterator, self.prefix, start, stop, prefix, reverse, include_key,
            include_value, include_start, include_stop)

    def __iter__(self):
        return self.iterator()

    def close(self):
        self._snap.close()

    def release(self):
        self._snap.close()

    def __enter__(self):
        self._snap.__enter__()
        return self

    def __exit__(self, *exc):
        return self._snap.__exit__(*exc)


class PrefixedDB:
    """The part of `db` whose keys start with `prefix`, with keys given and returned
    without it (plyvel's `DB.prefixed_db`)."""

    def __init__(self, db, prefix):
        if isinstance(prefix, str):
            raise TypeError("prefix must be bytes, not str (encode it first, e.g. s.encode())")
        self.db, self.prefix = db, bytes(prefix)

    def get(self, key, default=None, verify_checksums=False, fill_cache=True):
        return self.db.get(self.prefix + _key(key), default)

    def put(self, key, value, sync=False):
        self.db.put(self.prefix + _key(key), value, sync=sync)

    def delete(self, key, sync=False):
        self.db.delete(self.prefix + _key(key), sync=sync)

    def delete_range(self, start, end, sync=False):
        self.db.delete_range(self.prefix + _key(start), self.prefix + _key(end), sync=sync)

    def write_batch(self, sync=False, transaction=False):
        return _PrefixedBatch(self.db.write_batch(sync=sync, transaction=transaction),
                              self.prefix)

    def snapshot(self):
        """A snapshot of this view: its `get` and `iterator` take and give keys without
        the prefix, as the view's do (plyvel's prefixed snapshots)."""
        return _PrefixedSnapshot(self.db.snapshot(), self.prefix)

    def prefixed_db(self, prefix):
        return PrefixedDB(self.db, self.prefix + _key(prefix))

    def iterator(self, start=None, stop=None, prefix=None, reverse=False, include_key=True,
                 include_value=True, snapshot=None, include_start=True, include_stop=False,
                 verify_checksums=False, fill_cache=True):
        if isinstance(snapshot, _PrefixedSnapshot):
            snapshot = snapshot._snap
        return _prefixed_iterator(
            lambda **kw: self.db.iterator(snapshot=snapshot, **kw), self.prefix, start, stop,
            prefix, reverse, include_key, include_value, include_start, include_stop)

    def __iter__(self):
        return self.iterator()
