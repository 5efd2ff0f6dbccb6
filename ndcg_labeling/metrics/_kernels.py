"""The compiled kernels every metric is built on (numba), with NumPy fallbacks: building, choosing
and calling them.

* :func:`rank_top_k` - for each row, the column indices of the ``K`` best scores (stable, NaN left
  out, ``-1`` past the end).
* :func:`top_k_values` - for each row, the ``K`` largest values in descending order (NaN left out,
  ``0`` past the end): the ideal ranking's labels.
* :func:`fused_ndcg` - NDCG at several integer cut-offs in one pass per row.

The algorithms are described with their bodies in :mod:`ndcg_labeling.metrics._kernel_bodies` and
:mod:`ndcg_labeling.metrics._fused_bodies`. Each
body is compiled twice, a parallel build (rows in parallel) and a serial one, and cached on disk
(see :mod:`ndcg_labeling._jit`) so a CLI call does not recompile. Which of the three paths a call
takes (NumPy, serial or parallel build) is the :class:`~ndcg_labeling.backend.Plan` that
:func:`ndcg_labeling.backend.plan` makes from the policy and the call's size: the same call always
takes the same path. All three give the same numbers (to 1e-12). numba is imported on first use,
not when :mod:`ndcg_labeling.metrics` is imported.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ndcg_labeling import _jit, backend
from ndcg_labeling.backend import Plan
from ndcg_labeling.metrics import _fused_bodies as fb
from ndcg_labeling.metrics import _kernel_bodies as kb
from ndcg_labeling.metrics._kernel_bodies import _HIST_LEVELS, _INSERTION_MAX_K, FloatArray, IntArray

__all__ = ["_INSERTION_MAX_K", "fused_ndcg", "gain_sum", "gather_ranked", "numba_available", "rank_top_k",
           "top_k_values", "warm_up"]

_lock = threading.Lock()
_compiled: dict[str, Callable[..., Any]] | None = None

# numba's "python" error model checks every integer division for a zero divisor (a branch and an
# exception path in the row loops); the kernels never divide by zero (row ranges, group sizes) and
# guard their one float division, so NumPy's model changes no result. No fastmath: it would let
# LLVM assume no NaN, and NaN is padding and unjudged here.
_OPTIONS: dict[str, Any] = {"error_model": "numpy"}
# Every file whose code goes into the compiled kernels (bodies, inlined helpers, the LLVM IR below):
# an edit to any of them must not load the old machine code from numba's disk cache.
_SOURCES = (kb.__file__, fb.__file__, __file__)

# How many of a kernel's row chunks (``_CHUNKS``, 256, at most per call) make one piece of the
# parallel build's loop (see :func:`_chunked`: dealt out in equal shares): 32 pieces for a large call.
PARALLEL_CHUNKSIZE = 8

# The kernels that take their chunks from a shared counter (see _chunked).
_SELF_SCHEDULED = ("ndcg", "ndcg_ideal")

# The kernels each metric family needs (what :func:`warm_up` loads for metric names).
_FUSED = ("rank", "ndcg", "ndcg_ideal")
_GENERAL = ("rank", "values", "gain_sum", "gather")
_ALL = ("rank", "ndcg", "ndcg_ideal", "values", "gain_sum", "gather")


def _compile() -> dict[str, Callable[..., Any]] | None:
    """Both builds of every kernel (compiled, or loaded from the on-disk cache); None without numba."""
    global _compiled
    if _compiled is not None:
        return _compiled
    with _lock:
        if _compiled is not None:
            return _compiled
        numba = _jit.load_numba()
        if numba is None:
            return None
        # The helpers the kernels call, compiled (and inlined), under the names the kernel bodies use.
        helpers: dict[str, Any] = {}
        helper_fns: tuple[tuple[str, Callable[..., Any]], ...] = (
            ("_threshold", kb._threshold_py),
            ("_lane_threshold", kb._lane_threshold_py), ("_candidates", kb._candidates_py),
            ("_count_ranks", kb._count_ranks_py), ("_insert_one", kb._insert_one_py),
            ("_insert_top_k", kb._insert_top_k_py), ("_insert_top_k_call", kb._insert_top_k_py),
            ("_tally", kb._tally_py), ("_insert_values", kb._insert_values_py), ("_gain_of", kb._gain_of_py),
            ("_label_stats", fb._label_stats_py), ("_first_bad", fb._first_bad_py),
            ("_count_level", fb._count_level_py), ("_ideal_by_insertion", fb._ideal_by_insertion_py),
            ("_ideal_prefix", fb._ideal_prefix_py), ("_rank_candidates_call", kb._rank_candidates_py),
            ("_dcg_prefix", fb._dcg_prefix_py),
            ("_row_ideal", fb._row_ideal_py))
        # LLVM's count of trailing / leading zeros (one instruction), intrinsics numba ships but does not export.
        from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros

        helpers["_trailing_zeros"] = trailing_zeros
        helpers["_leading_zeros"] = leading_zeros
        helpers["_next_chunk"] = _fetch_add_one()
        helpers.update(_vector_compares())
        for name, helper in helper_fns:
            # The rare paths of the fused kernels are called, the rest inlined (see _fused_bodies).
            inline = "never" if name in fb.OUT_OF_LINE else "always"
            helpers[name] = _jit.compile_kernel(helper, helpers, name + "_py", inline=inline, sources=_SOURCES,
                                                **_OPTIONS)
        kernel_fns: tuple[tuple[str, Callable[..., Any]], ...] = (
            ("rank", kb._rank_top_k_py), ("values", kb._top_k_values_py), ("gain_sum", kb._gain_sum_py),
            ("gather", kb._gather_py), ("ndcg", fb._ndcg_py), ("ndcg_ideal", fb._ndcg_ideal_py))
        compiled: dict[str, Callable[..., Any]] = {}
        for key, kernel in kernel_fns:
            # The same body twice: _prange bound to numba.prange (rows in parallel) and to range.
            for parallel, suffix in ((True, ""), (False, "_serial")):
                names = {**helpers, "_prange": numba.prange if parallel else range}
                compiled[key + suffix] = _jit.compile_kernel(
                    kernel, names, f"{kernel.__name__}_{'parallel' if parallel else 'serial'}", parallel=parallel,
                    sources=_SOURCES, **_OPTIONS)
        _compiled = compiled
        return _compiled


def _fetch_add_one() -> Any:
    """``counter[0] += 1`` returning the old value, as one atomic instruction (LLVM ``atomicrmw add``):
    the compiled :func:`~ndcg_labeling.metrics._kernel_bodies._next_chunk_py`, which numba does not
    offer on the CPU. ``monotonic`` ordering: the counter only hands out chunk numbers, it publishes
    no data."""
    from llvmlite import ir
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def fetch_add_one(typingctx: Any, counter: Any) -> Any:
        if not (isinstance(counter, types.Array) and counter.dtype == types.int64 and counter.ndim == 1):
            return None

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            return builder.atomic_rmw("add", data, ir.Constant(ir.IntType(64), 1), "monotonic")

        return types.int64(counter), codegen

    return fetch_add_one


def _vector_compares() -> dict[str, Any]:
    """The compiled ``_mask_ge8_py`` and ``_count_gt8_py`` of
    :mod:`~ndcg_labeling.metrics._kernel_bodies`: 8 scores compared at once and the mask used as bits;
    and ``_label_counts_py`` of :mod:`~ndcg_labeling.metrics._fused_bodies`, 8 labels at a time (from
    numba's loop LLVM made a 32-wide body, an 8-wide one and scalar code for the last few).

    Written as LLVM IR (a vector load, ``fcmp``, the ``<8 x i1>`` mask bitcast to ``i8``; ``ctpop``):
    from loops LLVM made a vector of 0/1 per compare, shifted or added and reduced across lanes
    (AVX-512: 8 to 20 instructions where ``kmov`` and ``popcnt`` do). Target-independent IR: on
    AVX2 the mask is a ``vmovmskpd``. ``_mask_ge8`` reads its ``n`` scores by ``llvm.masked.load``,
    so a row's last block reads nothing past the row.
    """
    from llvmlite import ir
    from numba.core import cgutils as numba_cgutils
    from numba.core import types as numba_types
    from numba.extending import intrinsic

    cgutils: Any = numba_cgutils  # untyped
    types: Any = numba_types
    f64, i64, i32, i8 = ir.DoubleType(), ir.IntType(64), ir.IntType(32), ir.IntType(8)
    v8d, v8i, v8b = ir.VectorType(f64, 8), ir.VectorType(i64, 8), ir.VectorType(ir.IntType(1), 8)

    def splat(builder: Any, x: Any, vty: Any) -> Any:
        v = builder.insert_element(ir.Constant(vty, ir.Undefined), x, i32(0))
        return builder.shuffle_vector(v, ir.Constant(vty, ir.Undefined), ir.Constant(ir.VectorType(i32, 8), [0] * 8))

    def pointer(context: Any, builder: Any, aryty: Any, ary: Any, indices: list[Any]) -> Any:
        arr = context.make_array(aryty)(context, builder, ary)
        return cgutils.get_item_pointer2(context, builder, arr.data, cgutils.unpack_tuple(builder, arr.shape),
                                         cgutils.unpack_tuple(builder, arr.strides), aryty.layout, indices)

    def bits(builder: Any, mask: Any) -> Any:
        return builder.bitcast(mask, i8)

    def masked_load(builder: Any, ptr: Any, count: Any) -> Any:  # the first count of 8 doubles, NaN after
        lanes = builder.icmp_unsigned("<", ir.Constant(v8i, list(range(8))), splat(builder, count, v8i))
        load = cgutils.get_or_insert_function(builder.module, ir.FunctionType(v8d, [ptr.type, i32, v8b, v8d]),
                                              "llvm.masked.load.v8f64.p0")
        return builder.call(load, [ptr, i32(8), lanes, ir.Constant(v8d, [float("nan")] * 8)])

    @intrinsic
    def mask_ge8(typingctx: Any, scores: Any, i: Any, j: Any, n: Any, thr: Any) -> Any:
        if not (isinstance(scores, types.Array) and scores.ndim == 2 and scores.layout == "C"
                and scores.dtype == types.float64):
            return None  # vector loads: the rows must be contiguous

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            ary, row, col, count, threshold = args
            vec = masked_load(builder, pointer(context, builder, signature.args[0], ary, [row, col]), count)
            return builder.zext(bits(builder, builder.fcmp_ordered(">=", vec, splat(builder, threshold, v8d))), i64)

        return types.int64(scores, i, j, n, thr), codegen

    @intrinsic
    def count_gt8(typingctx: Any, values: Any, start: Any, x: Any) -> Any:
        if not (isinstance(values, types.Array) and values.ndim == 1 and values.layout == "C"
                and values.dtype == types.float64):
            return None

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            ary, first, value = args
            ptr = pointer(context, builder, signature.args[0], ary, [first])
            vec = builder.load(builder.bitcast(ptr, v8d.as_pointer()), align=8)
            return builder.zext(builder.ctpop(bits(builder, builder.fcmp_ordered(">", vec, splat(builder, value, v8d)))),
                                i64)

        return types.int64(values, start, x), codegen

    @intrinsic
    def label_counts(typingctx: Any, labels: Any, scores: Any, i: Any, m: Any) -> Any:
        arrays = (labels, scores)
        if not all(isinstance(a, types.Array) and a.ndim == 2 and a.layout == "C" and a.dtype == types.float64
                   for a in arrays):
            return None
        result = types.UniTuple(types.int64, 2)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            lab, sco, row, width = args
            zero = ir.Constant(i64, 0)
            rows = [pointer(context, builder, signature.args[q], args[q], [row, zero]) for q in (0, 1)]
            sums = [cgutils.alloca_once_value(builder, ir.Constant(v8i, [0] * 8)) for _ in (0, 1)]
            fzero, flimit = ir.Constant(v8d, [0.0] * 8), ir.Constant(v8d, [fb._PACKED_LIMIT] * 8)

            def block(v: Any, s: Any) -> None:  # the loop of _label_counts_py over 8 labels at once
                valid = builder.fcmp_ordered("ord", v, s)
                in_range = builder.and_(builder.fcmp_ordered(">=", v, fzero), builder.fcmp_ordered("<", v, flimit))
                h = builder.fptosi(builder.select(in_range, v, fzero), v8i)
                ok = builder.and_(in_range, builder.fcmp_ordered("==", builder.sitofp(h, v8d), v))
                one = builder.shl(ir.Constant(v8i, [1] * 8), builder.shl(h, ir.Constant(v8i, [3] * 8)))
                adds = (builder.select(valid, one, ir.Constant(v8i, [0] * 8)),
                        builder.zext(builder.and_(valid, builder.not_(ok)), v8i))
                for acc, add in zip(sums, adds, strict=True):
                    builder.store(builder.add(builder.load(acc), add), acc)

            full = builder.sdiv(width, ir.Constant(i64, 8))
            with cgutils.for_range(builder, full) as loop:
                at = builder.mul(loop.index, ir.Constant(i64, 8))
                block(*(builder.load(builder.bitcast(builder.gep(p, [at]), v8d.as_pointer()), align=8) for p in rows))
            at = builder.mul(full, ir.Constant(i64, 8))  # the last width % 8 (NaN beyond: not valid)
            block(*(masked_load(builder, builder.gep(p, [at]), builder.sub(width, at)) for p in rows))
            add = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [v8i]), "llvm.vector.reduce.add.v8i64")
            return context.make_tuple(builder, result, [builder.call(add, [builder.load(acc)]) for acc in sums])

        return result(labels, scores, i, m), codegen

    return {"_mask_ge8": mask_ge8, "_count_gt8": count_gt8, "_label_counts": label_counts}


def warm_up_kernels(keys: Iterable[str] = _ALL) -> bool:
    """Load the compiled kernels named by ``keys`` (both builds) now; whether they are there.

    The first call of a numba function in a process costs most of a second (numba sets itself up,
    then loads the cached machine code, or compiles it the first time: seconds per build): a
    command that reads files first can have that done on a thread meanwhile. Calls each kernel once
    on a tiny input. Follows the policy: nothing under ``numpy``.
    """
    if backend.load_numba_for() is None:
        return False
    kernels = _compile()
    if kernels is None:
        return False
    wanted = set(keys)
    scores = np.array([[0.5, 1.0, np.nan]])
    labels = np.array([[1.0, 0.0, 2.0]])
    order = np.empty((1, 2), dtype=np.int64)
    values = np.empty((1, 2), dtype=np.float64)
    bad = np.full(1, -1, dtype=np.int64)
    discount = np.ones(3)
    gains = np.arange(_HIST_LEVELS, dtype=np.float64)
    cuts = np.array([2], dtype=np.int64)
    calls: dict[str, Callable[[Callable[..., Any]], Any]] = {
        "rank": lambda f: f(scores, 2, order),
        "ndcg": lambda f: f(scores, labels, 2, 2, cuts, gains, True, discount, 0.0, np.empty((1, 1)), bad),
        "ndcg_ideal": lambda f: f(scores, labels, labels, 2, 2, cuts, gains, True, discount, 0.0,
                                  np.empty((1, 1)), bad, bad.copy()),
        "values": lambda f: f(labels, scores, True, 2, values, bad),
        "gain_sum": lambda f: f(values, discount, 2, True, np.empty(1)),
        "gather": lambda f: f(labels, order, np.empty((1, 2))),
    }
    for key, call in calls.items():
        if key in wanted:
            call(kernels[key])
            call(kernels[key + "_serial"])
    return True


def warm_up(fused_only: bool = False) -> None:
    """Deprecated: :func:`ndcg_labeling.metrics.warm_up` (by metric names). Loads the kernels NDCG at
    integer cut-offs needs with ``fused_only``, every kernel otherwise."""
    warm_up_kernels(_FUSED if fused_only else _ALL)


def numba_available() -> bool:
    """Whether the compiled kernels can be used; loads them (False: the NumPy fallback computes the
    same numbers). Which calls use them is the backend policy's decision, not this."""
    if _jit.load_numba() is None:
        return False
    return _compile() is not None


def engage(size: int) -> None:
    """Deprecated, does nothing: each kernel call asks :func:`ndcg_labeling.backend.plan` itself."""


def _kernels_for(plan: Plan | None, size: int) -> tuple[dict[str, Callable[..., Any]] | None, str]:
    """The compiled kernels and the build suffix a call takes (None: the NumPy fallback)."""
    if plan is None:
        plan = backend.plan(size)
    if not plan.numba:
        return None, ""
    return _compile(), "" if plan.parallel else "_serial"


def _chunked(kernels: dict[str, Callable[..., Any]], key: str, build: str, *args: Any) -> None:
    """Call a kernel whose rows come in chunks (``_CHUNKS`` at most); the parallel build's loop over
    them is cut into pieces of :data:`PARALLEL_CHUNKSIZE` chunks.

    The pieces do not balance the threads here: numba's OpenMP layer (``omp for`` without a schedule
    clause, libgomp's static default) deals them out in equal shares up front, so one thread slowed
    down by another process still holds the whole call back. The fused NDCG kernels, which carry the
    time that matters, hand their chunks out themselves (:data:`_SELF_SCHEDULED`, see
    :func:`~ndcg_labeling.metrics._kernel_bodies._next_chunk_py`) and are called without pieces: a
    piece changes nothing for them.
    """
    kernel = kernels[key + build]
    if build or key in _SELF_SCHEDULED:  # the serial build (no threads), or chunks from a counter
        kernel(*args)
        return
    with _jit.load_numba().parallel_chunksize(PARALLEL_CHUNKSIZE):
        kernel(*args)


def gain_sum(values: FloatArray, discount: FloatArray, k: int, exponential: bool,
             plan: Plan | None = None) -> FloatArray | None:
    """DCG of the first ``k`` columns of a C-contiguous float64 array in one pass (None: NumPy's turn)."""
    kernels, build = _kernels_for(plan, values.size)
    if kernels is None or values.dtype != np.float64 or not values.flags.c_contiguous:
        return None
    out = np.empty(values.shape[0], dtype=np.float64)
    kernels["gain_sum" + build](values, discount, k, exponential, out)
    return out


def fused_ndcg(
    scores: FloatArray, labels: FloatArray, ideal: FloatArray | None, cuts: IntArray, k: int, k_ideal: int,
    exponential: bool, empty_value: float, plan: Plan | None = None,
) -> tuple[FloatArray, IntArray, IntArray] | None:
    """NDCG at each of ``cuts`` in one pass per row (see :mod:`ndcg_labeling.metrics._fused_bodies`);
    None where the plan is NumPy (there is no NumPy version of the fused kernel: the general path serves).

    ``k`` ranked and ``k_ideal`` ideal positions (each at most ``_INSERTION_MAX_K``); ``ideal`` None
    means the ideal comes from the row's own labels. Returns ``(values (n, len(cuts)), bad column of
    labels per row, bad column of ideal per row)`` (``-1``: none).
    """
    kernels, build = _kernels_for(plan, scores.size)
    if kernels is None:
        return None
    # The hot kernel reads rows as vectors (LLVM IR that needs contiguous rows; already so from _core).
    scores, labels = np.ascontiguousarray(scores), np.ascontiguousarray(labels)
    n = scores.shape[0]
    out = np.empty((n, len(cuts)), dtype=np.float64)
    bad = np.full(n, -1, dtype=np.int64)
    bad_ideal = np.full(n, -1, dtype=np.int64)
    levels = np.arange(_HIST_LEVELS, dtype=np.float64)
    gains = np.exp2(levels) - 1.0 if exponential else levels
    discount = 1.0 / np.log2(np.arange(2, max(k, k_ideal) + 2, dtype=np.float64))
    if ideal is None:
        _chunked(kernels, "ndcg", build, scores, labels, k, k_ideal, cuts, gains, exponential, discount, empty_value,
                 out, bad)
    else:
        _chunked(kernels, "ndcg_ideal", build, scores, labels, ideal, k, k_ideal, cuts, gains, exponential, discount,
                 empty_value, out, bad, bad_ideal)
    return out, bad, bad_ideal


def rank_top_k(scores: FloatArray, k: int, plan: Plan | None = None) -> IntArray:
    """Column indices of the ``k`` best scores per row (stable, NaN left out, ``-1`` past the end)."""
    n, m = scores.shape
    kernels, build = _kernels_for(plan, scores.size)
    if kernels is not None and n > 0:
        out = np.empty((n, k), dtype=np.int64)
        _chunked(kernels, "rank", build, scores, k, out)
        return out
    return _rank_top_k_numpy(scores, k)


def gather_ranked(labels: FloatArray, order: IntArray, plan: Plan | None = None) -> FloatArray:
    """The labels in rank order: ``labels[i, order[i, p]]``, NaN where ``order`` is -1 (one pass)."""
    kernels, build = _kernels_for(plan, labels.size)
    if (kernels is not None and order.shape[0] > 0 and labels.dtype == np.float64
            and labels.flags.c_contiguous and order.flags.c_contiguous):
        out = np.empty(order.shape, dtype=np.float64)
        kernels["gather" + build](labels, order, out)
        return out
    present = order >= 0
    ranked = np.take_along_axis(labels, np.where(present, order, 0), axis=1).astype(np.float64)
    return np.where(present, ranked, np.nan)


def top_k_values(values: FloatArray, k: int, mask: FloatArray | None = None,
                 plan: Plan | None = None) -> tuple[FloatArray, IntArray]:
    """The ``k`` largest non-NaN values per row, descending, ``0`` past the end.

    With ``mask`` (same shape), positions where ``mask`` is NaN (padding of the scores) are left out.

    Also returns, per row, the column of a negative or infinite value (``-1`` when there is none), so
    the caller can report bad labels without a second pass.
    """
    n, m = values.shape
    kernels, build = _kernels_for(plan, values.size)
    if kernels is not None and n > 0:
        out = np.empty((n, k), dtype=np.float64)
        bad = np.full(n, -1, dtype=np.int64)
        use_mask = mask is not None
        _chunked(kernels, "values", build, values, mask if mask is not None else values, use_mask, k, out, bad)
        return out, bad
    if mask is not None:
        values = np.where(np.isnan(mask), np.nan, values)
    return _top_k_values_numpy(values, k)


def _rank_top_k_numpy(scores: FloatArray, k: int) -> IntArray:
    n, m = scores.shape
    valid = ~np.isnan(scores)
    key = np.where(valid, -scores, np.inf)
    order = np.argsort(key, axis=1, kind="stable")
    # A real score of -inf and padding share the key +inf: a second stable pass puts padding last.
    order = np.take_along_axis(order, np.argsort(~np.take_along_axis(valid, order, 1), axis=1, kind="stable"), 1)
    present = np.take_along_axis(valid, order, 1)
    order = np.where(present, order, -1)
    if k <= m:
        return np.ascontiguousarray(order[:, :k], dtype=np.int64)
    out = np.full((n, k), -1, dtype=np.int64)
    out[:, :m] = order
    return out


def _top_k_values_numpy(values: FloatArray, k: int) -> tuple[FloatArray, IntArray]:
    n, m = values.shape
    with np.errstate(invalid="ignore"):
        bad_mask = (values < 0) | np.isinf(values)
    bad = np.where(bad_mask.any(axis=1), bad_mask.argmax(axis=1), -1).astype(np.int64)
    clean = np.where(np.isnan(values) | bad_mask, 0.0, values)
    srt = -np.sort(-clean, axis=1)
    out = np.zeros((n, k), dtype=np.float64)
    w = min(k, m)
    out[:, :w] = srt[:, :w]
    return out, bad
