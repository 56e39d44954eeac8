"""strata, an embeddable LSM key-value store, from Python.

>>> import strata
>>> with strata.DB("/tmp/example-db") as db:
...     db.put(b"key", b"value")
...     db.get(b"key")
b'value'
"""

from ._strata import (  # noqa: F401
    DB,
    BusyError,
    ClosedError,
    CorruptionError,
    Error,
    InvalidArgumentError,
    IOError,
    Iter,
    NotSupportedError,
    PoisonedError,
    Snapshot,
    WriteBatch,
)

__all__ = [
    "DB",
    "WriteBatch",
    "Snapshot",
    "Iter",
    "Error",
    "CorruptionError",
    "InvalidArgumentError",
    "IOError",
    "NotSupportedError",
    "ClosedError",
    "PoisonedError",
    "BusyError",
]
