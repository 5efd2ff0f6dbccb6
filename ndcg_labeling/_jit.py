"""Compiling plain-Python kernel bodies with numba: on first use, cached on disk, optional.

A kernel body is an ordinary Python function over arrays. :func:`compile_kernel` compiles it with
``numba.njit`` under a given set of global names (so one body can be built serial and parallel, and
call compiled helpers by name), with the on-disk cache on so a CLI call does not recompile, and in
memory where no cache directory is writable. :func:`load_numba` returns None where numba cannot be
imported. Whether a call uses the compiled kernels at all is decided by :mod:`ndcg_labeling.backend`;
nothing here imports numba until a kernel is first needed.
"""

from __future__ import annotations

import threading
import types
import warnings
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

_lock = threading.Lock()
_numba: Any = None
_failure: str | None = None

# Kept for callers written against the old work counter: the size from which ``auto`` takes numba.
WORTH_COMPILING = 5_000_000


def loaded() -> bool:
    """Whether numba has been imported by this module."""
    return _numba is not None


def failed() -> bool:
    """Whether importing numba was tried and failed."""
    return _failure is not None


def failure() -> str:
    """Why numba could not be imported ("" when it could, or was not tried)."""
    return _failure or ""


def load_numba() -> Any:
    """The numba module, or None where it cannot be imported (any failure: a broken install too)."""
    global _numba, _failure
    if _numba is not None or _failure is not None:
        return _numba
    with _lock:
        if _numba is None and _failure is None:
            try:
                import numba
            except Exception as exc:  # noqa: BLE001 - any import failure means: use the NumPy path
                _failure = f"{type(exc).__name__}: {exc}"
            else:
                _numba = numba
    return _numba


def worth_compiling(size: int, *, count: bool = True) -> bool:
    """Deprecated: :func:`ndcg_labeling.backend.wants_numba` (there is no work counter any more)."""
    warnings.warn("_jit.worth_compiling is deprecated: use ndcg_labeling.backend.wants_numba",
                  DeprecationWarning, stacklevel=2)
    from ndcg_labeling import backend

    return backend.wants_numba(size)


def engage(size: int) -> bool:
    """Deprecated: ``ndcg_labeling.backend.plan(size).numba`` (loads numba when the policy says so)."""
    warnings.warn("_jit.engage is deprecated: use ndcg_labeling.backend.plan", DeprecationWarning, stacklevel=2)
    from ndcg_labeling import backend

    return backend.plan(size).numba


def compile_kernel(fn: Callable[..., Any], names: Mapping[str, Any], qualname: str, *,
                   sources: Sequence[str] = (), **options: Any) -> Callable[..., Any]:
    """``numba.njit(**options)`` of ``fn``'s body with ``names`` added to its globals.

    ``qualname`` must differ between builds of one body (serial / parallel): it names the on-disk
    cache entry. numba judges a cache entry stale by the file of ``fn`` alone; ``sources`` names the
    other files whose code goes into the build (helpers inlined from another module, LLVM IR written
    in Python): a digest of their contents joins the entry's name, so an edit there compiles anew
    instead of loading the old machine code. Call only after :func:`load_numba` returned the module.
    """
    numba = load_numba()
    glb = dict(fn.__globals__)
    glb.update(names)
    body = types.FunctionType(fn.__code__, glb, fn.__name__)
    body.__qualname__ = qualname + (f"_{sources_digest(tuple(sources))}" if sources else "")
    built: Callable[..., Any]
    try:
        built = numba.njit(cache=True, nogil=True, **options)(body)
    except RuntimeError:  # no writable cache directory: compile in memory
        built = numba.njit(cache=False, nogil=True, **options)(body)
    return built


@lru_cache(maxsize=8)
def sources_digest(paths: tuple[str, ...]) -> str:
    """12 hex digits of a SHA-256 over the contents of ``paths`` (in order): the version of a build."""
    import hashlib

    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()[:12]
