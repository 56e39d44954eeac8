"""strata, an embeddable LSM key-value store, from Python.

>>> import strata
>>> with strata.DB("/tmp/example-db", create_if_missing=True) as db:
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

# `IOError` (also an `OSError`) is left out of `__all__`: `from strata import *` must not
# shadow the builtin name. Use `strata.IOError`.
__all__ = [
    "DB",
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
]
