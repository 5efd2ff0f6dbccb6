"""Compiling plain-Python kernel bodies with numba: on first use, cached on disk, optional.

A kernel body is an ordinary Python function over arrays. :func:`compile_kernel` compiles it with
``numba.njit`` under a given set of global names (so one body can be built serial and parallel, and
call compiled helpers by name), with the on-disk cache on so a CLI call does not recompile, and in
memory where no cache directory is writable. :func:`load_numba` returns None where numba cannot be
imported. Whether a call uses the compiled kernels at all is decided by :mod:`ndcg_labeling.backend`;
nothing here imports numba until a kernel is first needed.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable, Mapping
from typing import Any

_lock = threading.Lock()
_numba: Any = None
_failure: str | None = None


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

                _load_arraymath_without_scipy()
            except Exception as exc:  # noqa: BLE001 - any import failure means: use the NumPy path
                _failure = f"{type(exc).__name__}: {exc}"
            else:
                _numba = numba
    return _numba


def _load_arraymath_without_scipy() -> None:
    """Import ``numba.np.arraymath`` (the first compiled call would) without its BLAS probe.

    Its import calls ``numba.np.linalg.ensure_blas``, which imports ``scipy.linalg`` (0.13 s of CPU,
    11% of a 2M-line ``eval``) only to decide whether ``np.convolve`` / ``np.correlate`` call BLAS or
    a loop; no kernel here calls them. The probe is answered "no BLAS" for that import alone and put
    back (``np.dot`` in a kernel still loads SciPy when compiled); ``sys.modules`` is not touched, so
    another thread importing SciPy meanwhile is not affected. Nothing to do once SciPy's linear
    algebra (or arraymath) is loaded."""
    if "scipy.linalg" in sys.modules or "numba.np.arraymath" in sys.modules:
        return
    try:
        import numba.np.linalg as linalg

        ensure_blas = linalg.ensure_blas
    except (ImportError, AttributeError):  # another numba's layout: its own import decides
        return

    def no_blas() -> None:
        raise ImportError("BLAS not probed (ndcg_labeling._jit)")

    linalg.ensure_blas = no_blas
    try:
        import numba.np.arraymath as arraymath
    finally:
        linalg.ensure_blas = ensure_blas
    arraymath.ensure_blas = ensure_blas  # type: ignore[attr-defined]  # its own name for it


def compile_kernel(fn: Callable[..., Any], names: Mapping[str, Any], qualname: str, **options: Any) -> Callable[..., Any]:
    """``numba.njit(**options)`` of ``fn``'s body with ``names`` added to its globals.

    ``qualname`` must differ between builds of one body (serial / parallel): it names the on-disk
    cache entry, which numba judges stale by the file of ``fn`` alone (so a kernel's helpers live in
    its file). Call only after :func:`load_numba` returned the module.
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
