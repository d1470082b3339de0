"""`njit`: Numba's compiler with an on-disk cache, or plain Python where Numba is absent.

The engine's functions are written once. Compiled (the default), a run costs microseconds a step;
`NUMBA_DISABLE_JIT=1` runs the very same functions as Python for debugging. The cache lives next
to the sources (`__pycache__`), built by `python -m sim.engine.warm` in the install step of
`make run` and `make test`, so no learner waits for a compile.

Numba checks only the file of a cached function for changes, not the constants it imports
(sim/engine/layout.py), so `_drop_stale_cache` keeps a digest of every source file of the
engine and empties the engine's cache when any of them changed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

try:
    from numba import njit as _numba_njit
except ImportError:  # pragma: no cover - numba is a requirement; this keeps imports working
    _numba_njit = None

_HERE = Path(__file__).resolve().parent
_STAMP = "engine-sources.sha256"


def _drop_stale_cache() -> None:
    """Empty the engine's Numba cache if a source file of the engine changed since it was
    built (a cache that cannot be written, read-only say, is simply left alone)."""
    digest = hashlib.sha256()
    for path in sorted(_HERE.glob("*.py")) + [_HERE.parent / "policy.py"]:
        digest.update(path.read_bytes())
    cache = _HERE / "__pycache__"
    stamp = cache / _STAMP
    try:
        if stamp.is_file() and stamp.read_text() == digest.hexdigest():
            return
        cache.mkdir(exist_ok=True)
        for old in list(cache.glob("*.nbi")) + list(cache.glob("*.nbc")):
            old.unlink()
        stamp.write_text(digest.hexdigest())
    except OSError:
        pass


if _numba_njit is not None:
    _drop_stale_cache()


def njit(fn):
    """Compile `fn` with Numba (nopython, cached on disk), or return it unchanged."""
    if _numba_njit is None:
        return fn
    return _numba_njit(cache=True, nogil=True)(fn)
