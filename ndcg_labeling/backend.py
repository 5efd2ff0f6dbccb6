"""Which code computes the kernels: one policy, decided per call from the call's size alone.

The policy is read from the environment variable ``NDCG_LABELING_BACKEND`` (or set in code with
:func:`configure`) and written ``KIND[,parallel=MODE][,tensors=ROUTE]``:

* ``KIND`` - ``auto`` (default): the compiled numba kernels for a call of at least
  :data:`NUMBA_MIN_SIZE` array elements when numba can be imported, NumPy below (loading numba costs
  about a second in a fresh process: a small call is done sooner without it); ``numba``: the compiled
  kernels for every call (an error when numba cannot be imported); ``numpy``: never numba.
* ``MODE`` - ``auto`` (default): the parallel build for a call of at least :data:`PARALLEL_MIN_SIZE`
  elements, the serial one below; ``on`` / ``off``: always / never the parallel build; ``load``:
  like ``auto``, but serial while the 1-minute load average says no core is idle (the old gate,
  opt-in only: it makes the same call take a different path depending on other processes).
* ``ROUTE`` - how torch tensors on the CPU are computed: ``kernels`` (default: zero-copy NumPy views
  through the same kernels, results handed back as tensors) or ``torch`` (torch's own operations,
  the path tensors on a GPU always take).

Every decision depends on the policy and the size of the call, never on what the process did
before or on the machine's load (except with ``parallel=load``): :func:`warm_up
<ndcg_labeling.metrics.warm_up>` only makes the first compiled call cheaper, it changes no path.
NumPy and the compiled NDCG kernel give the same numbers bit for bit. See docs/backend.md.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ndcg_labeling import settings
from ndcg_labeling.errors import BackendError

ENV_VAR = settings.BACKEND

# numba's import and the loading of its cached machine code cost 0.7-1 s in a new process; the
# NumPy paths take 50-110 ns of CPU per array element (NDCG@10 alone / with MAP and P@10, 50
# documents; measured 2026-12), the compiled ones 3-7 ns. So the first call of a fresh process is
# done sooner with NumPy up to about 15M elements; every later call is about 10x faster with numba
# (serial build; more with the parallel one).
# 5M (100k queries x 50 documents) is the compromise: a small command never imports numba, a
# process that computes more than once (the web app, a multi-run eval, a benchmark) gets the kernels
# from mid-size inputs on, and a CLI command can hide the start behind its file reading
# (ndcg_labeling.metrics.warm_up on a thread).
NUMBA_MIN_SIZE = 5_000_000

# Below this many array elements a parallel region costs more than it saves (thread wake-up, and
# the barrier at its end): the serial build runs instead. The choice depends on the size only, not
# on the machine's load.
PARALLEL_MIN_SIZE = 200_000

KINDS = ("auto", "numpy", "numba")
PARALLEL_MODES = ("auto", "on", "off", "load")
TENSOR_ROUTES = ("kernels", "torch")
GRAMMAR = (f"KIND[,parallel=MODE][,tensors=ROUTE] with KIND one of {', '.join(KINDS)}; MODE one of "
           f"{', '.join(PARALLEL_MODES)}; ROUTE one of {', '.join(TENSOR_ROUTES)}")


@dataclass(frozen=True)
class Policy:
    """The parsed policy (see the module docstring); ``str(policy)`` gives it back in the grammar."""

    kind: str = "auto"
    parallel: str = "auto"
    tensors: str = "kernels"

    def __str__(self) -> str:
        return f"{self.kind},parallel={self.parallel},tensors={self.tensors}"


@dataclass(frozen=True)
class Plan:
    """The decision for one call: the compiled kernels or not, and which build of them."""

    numba: bool
    parallel: bool


DEFAULT = Policy()
_configured: Policy | None = None
_parsed: dict[str, Policy] = {}
_lock = threading.Lock()


def parse(text: str, *, source: str = ENV_VAR) -> Policy:
    """The policy written as ``text`` (see the module docstring); :class:`BackendError` otherwise.

    Blank means the default. Case and spaces around the parts are ignored.
    """
    parts = [p.strip().lower() for p in text.split(",")]
    if parts == [""]:
        return DEFAULT
    kind, options = parts[0], parts[1:]
    if kind not in KINDS:
        raise BackendError(f"{source}: unknown backend {kind!r} in {text!r}; expected {GRAMMAR}")
    values = {"parallel": DEFAULT.parallel, "tensors": DEFAULT.tensors}
    allowed = {"parallel": PARALLEL_MODES, "tensors": TENSOR_ROUTES}
    seen: set[str] = set()
    for option in options:
        key, eq, value = (s.strip() for s in option.partition("="))
        if not eq or key not in allowed or value not in allowed[key] or key in seen:
            raise BackendError(f"{source}: invalid option {option!r} in {text!r}; expected {GRAMMAR}")
        seen.add(key)
        values[key] = value
    return Policy(kind, values["parallel"], values["tensors"])


def policy() -> Policy:
    """The policy in force: the one set by :func:`configure`, else ``NDCG_LABELING_BACKEND``, else
    the default (``auto,parallel=auto,tensors=kernels``). The variable is read at every call."""
    if _configured is not None:
        return _configured
    text = settings.backend_spec()
    if text not in _parsed:
        _parsed[text] = parse(text)
    return _parsed[text]


def configure(spec: str | Policy | None) -> Policy | None:
    """Set this process's policy (a string in the grammar, a :class:`Policy`, or None to go back to
    the environment variable); returns the previous setting. It wins over the environment."""
    global _configured
    new = parse(spec, source="configure") if isinstance(spec, str) else spec
    with _lock:
        previous, _configured = _configured, new
    return previous


@contextmanager
def using(spec: str | Policy) -> Iterator[Policy]:
    """:func:`configure` for the duration of a ``with`` block (tests and benchmarks)."""
    previous = configure(spec)
    try:
        yield policy()
    finally:
        configure(previous)


def numba_importable() -> bool:
    """Whether numba is installed (found on the path; a broken install shows when it loads)."""
    from ndcg_labeling import _jit

    if _jit.loaded():
        return True
    try:
        return not _jit.failed() and importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):  # a broken entry in sys.modules
        return False


def wants_numba(size: int, current: Policy | None = None) -> bool:
    """Whether a call over ``size`` array elements takes the compiled kernels. Loads nothing."""
    p = current or policy()
    if p.kind == "numpy":
        return False
    if p.kind == "numba":
        return True
    return size >= NUMBA_MIN_SIZE and numba_importable()


def wants_parallel(size: int, current: Policy | None = None) -> bool:
    """Whether a compiled call over ``size`` array elements takes the parallel build."""
    p = current or policy()
    if p.parallel in ("on", "off"):
        return p.parallel == "on"
    if size < PARALLEL_MIN_SIZE:
        return False
    if p.parallel == "load":
        try:
            return os.getloadavg()[0] < (os.cpu_count() or 1) - 0.5
        except (AttributeError, OSError):  # not on every platform
            return True
    return True


def plan(size: int) -> Plan:
    """Decide a call over ``size`` array elements, loading numba when the decision is numba.

    Under ``auto`` a numba that fails to load means NumPy; under ``numba`` it is a
    :class:`BackendError`.
    """
    current = policy()
    if not wants_numba(size, current) or load_numba_for(current) is None:
        return Plan(False, False)
    return Plan(True, wants_parallel(size, current))


def load_numba_for(current: Policy | None = None) -> Any:
    """numba, loaded now; None where it cannot be (an error when the policy says ``numba``)."""
    from ndcg_labeling import _jit

    p = current or policy()
    if p.kind == "numpy":
        return None
    module = _jit.load_numba()
    if module is None and p.kind == "numba":
        raise BackendError(f"{ENV_VAR}=numba but numba cannot be imported: {_jit.failure()}")
    return module


def tensors_via_kernels() -> bool:
    """Whether torch tensors on the CPU go through the array kernels (``tensors=kernels``)."""
    return policy().tensors == "kernels"


def describe() -> str:
    """One line for benchmark output: the policy and what it means on this machine."""
    from ndcg_labeling import _jit

    p = policy()
    numba = "loaded" if _jit.loaded() else ("importable" if numba_importable() else "not importable")
    return f"backend {p} (numba {numba}; numba from {NUMBA_MIN_SIZE:,} elements, parallel from {PARALLEL_MIN_SIZE:,})"
