"""Compiling plain-Python kernel bodies with numba: on first use, cached on disk, optional.

A kernel body is an ordinary Python function over arrays. :func:`compile_kernels` compiles it with
``numba.njit`` under a given set of global names (so one body can be built serial and parallel, and
call compiled helpers by name), with the on-disk cache on so a CLI call does not recompile, and in
memory where no cache directory is writable. :func:`load_numba` returns None where numba cannot be
imported; callers then take their NumPy path (same numbers, slower). Nothing here imports numba
until a kernel is first needed.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable, Mapping
from typing import Any

_lock = threading.Lock()
_numba: Any = None
_numba_failed = False

# numba costs about a second in a new process before its first compiled call returns (its import,
# then the set-up of that call), and the NumPy paths take about 130 ns per array element: below a few
# million elements they finish sooner. So numba is loaded only once a process has asked for this much
# work (counted over calls: repeated use earns it), or when something loads it explicitly.
WORTH_COMPILING = 5_000_000
_work = 0


def loaded() -> bool:
    """Whether numba has been imported by this module (the compiled kernels may then be used)."""
    return _numba is not None


def worth_compiling(size: int, *, count: bool = True) -> bool:
    """Whether a task of ``size`` array elements should use the compiled kernels.

    True once numba is loaded; otherwise counts ``size`` (unless ``count`` is False) and answers
    whether the work asked for in this process has reached :data:`WORTH_COMPILING`. Loads nothing.
    """
    global _work
    if _numba is not None:
        return True
    if _numba_failed:
        return False
    if count:
        _work += size
        return _work >= WORTH_COMPILING
    return _work + size >= WORTH_COMPILING


def engage(size: int) -> bool:
    """Load numba when a task of ``size`` elements makes it worth it; whether it is loaded."""
    if worth_compiling(size):
        return load_numba() is not None
    return False


def load_numba() -> Any:
    """The numba module, or None where it cannot be imported (any failure: a broken install too)."""
    global _numba, _numba_failed
    if _numba is not None or _numba_failed:
        return _numba
    with _lock:
        if _numba is None and not _numba_failed:
            try:
                import numba
            except Exception:  # noqa: BLE001 - any import failure means: use the NumPy path
                _numba_failed = True
            else:
                _numba = numba
    return _numba


def compile_kernel(fn: Callable[..., Any], names: Mapping[str, Any], qualname: str, **options: Any) -> Callable[..., Any]:
    """``numba.njit(**options)`` of ``fn``'s body with ``names`` added to its globals.

    ``qualname`` must differ between builds of one body (serial / parallel): it names the on-disk
    cache entry. Call only after :func:`load_numba` returned the module.
    """
    numba = load_numba()
    glb = dict(fn.__globals__)
    glb.update(names)
    body = types.FunctionType(fn.__code__, glb, fn.__name__)
    body.__qualname__ = qualname
    built: Callable[..., Any]
    try:
        built = numba.njit(cache=True, nogil=True, **options)(body)
    except RuntimeError:  # no writable cache directory: compile in memory
        built = numba.njit(cache=False, nogil=True, **options)(body)
    return built
