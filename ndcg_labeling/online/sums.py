"""Sufficient statistics per (arm, window, query type), in fixed point so that merging is exact.

A request contributes one vector of :data:`FIELDS`: ``n`` (1), ``metric`` and ``metric_sq`` (its metric
value and square, in units of ``1 / SCALE``; 0 for a request whose query has no label at all), ``judged`` and ``scored`` (judged positions of the
scored ones), ``clicks`` (1 when any document was clicked), ``n_converted`` / ``conversions`` (1 / any
conversion, where the log has ``converted`` for the request), ``n_watch`` / ``watch`` / ``watch_sq``
(where it has ``watch_ratio``: the mean over the request's rows, fixed point), ``n_labelled`` (1 when
the request's query has a label: the requests the metric's mean counts by default). All integers: sums
merge and un-merge (a request updated live is taken out and put back) exactly, in any order, so the
live figures and the batch report agree to the last digit. ``SCALE = 2**32`` keeps 2.3e-10 of a
metric value (the rounding is the same on both paths; it is far below any interval shown).

No overflow. A request's vector is int64: each field is bounded by the bounds of the events and log rows
(``watch_ratio`` <= 1000, so ``watch_sq`` <= 10^6 * 2^32 < 2^53; a metric value is at most the DCG of
10,000 positions of gain 15, about 1.3e4, so ``metric_sq`` < 2^60), and :func:`fixed` refuses a value
that would not fit instead of wrapping. The sums of vectors are Python integers (object arrays), which
do not overflow at all; :func:`group_sums` adds the int64 vectors in two 32-bit halves (each half sums
exactly in int64 for fewer than 2^31 requests) and joins them as Python integers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ndcg_labeling.choices import Unjudged

F = NDArray[np.float64]
I = NDArray[np.int64]  # noqa: E741
SCALE = float(2 ** 32)
FIELDS = ("n", "metric", "metric_sq", "judged", "scored", "clicks", "n_converted", "conversions", "n_watch", "watch",
          "watch_sq", "n_labelled")
_AT = {f: i for i, f in enumerate(FIELDS)}
#: the business metrics: name -> (count field, numerator field)
BUSINESS = {"ctr": ("n", "clicks"), "conversion": ("n_converted", "conversions"), "watch_ratio": ("n_watch", "watch")}
Key = tuple[str, float | None, str]  # (arm, window start in epoch seconds or None, query type)
#: how the metric's mean treats a request whose query has no label at all: ``skip`` it (as ``report``
#: skips unjudged queries; the default) or count it as ``zero``
UNJUDGED = tuple(u.value for u in Unjudged)
_FIT = float(2 ** 63 - 2 ** 11)  # the largest float64 below 2^63: a scaled value must stay under it


def fixed(values: F) -> I:
    """``values`` in units of ``1 / SCALE`` (NaN -> 0; callers count presence separately); ValueError for
    a value whose scaled form does not fit int64 (the bounds of the inputs keep every value well inside)."""
    scaled = np.rint(np.where(np.isfinite(values), values, 0.0) * SCALE)
    if scaled.size and not bool(np.all(np.abs(scaled) <= _FIT)):
        raise ValueError(f"fixed: a value of {float(np.max(np.abs(values[np.isfinite(values)]))):g} does not fit "
                         "the fixed-point sums")
    out: I = scaled.astype(np.int64)
    return out


def zeros() -> NDArray[Any]:
    """An empty sum vector of Python integers (object array: sums of any size, never wrapping)."""
    return np.array([0] * len(FIELDS), dtype=object)


def check_unjudged(value: str) -> str:
    if value not in UNJUDGED:
        raise ValueError(f"unjudged must be one of {', '.join(UNJUDGED)}, got {value!r}")
    return value


@dataclass
class RequestValues:
    """One entry per request: its arm, query type, time (smallest ``ts``), cluster key (user, session or
    the request), metric value, judged and scored positions, any click (0/1), any conversion (NaN: no
    ``converted`` value), mean watch ratio (NaN: none)."""

    arm: NDArray[Any]
    query_type: NDArray[Any]
    ts: F
    cluster: NDArray[Any]
    metric: F
    judged: I
    scored: I
    clicked: I
    converted: F
    watch: F
    #: 1 when the request's query has a label at all (None: every request's)
    labelled: I | None = None

    def labelled_mask(self) -> NDArray[np.bool_]:
        return np.ones(self.metric.size, bool) if self.labelled is None else np.asarray(self.labelled) > 0

    def metric_values(self, unjudged: str = "skip") -> F:
        """The metric per request as the means count it: NaN for an unlabelled query's request under
        ``skip``, its score (0) under ``zero``."""
        check_unjudged(unjudged)
        return self.metric if unjudged == "zero" else np.where(self.labelled_mask(), self.metric, np.nan)

    def vectors(self) -> I:
        """(n, len(FIELDS)) contributions of the requests (int64; see the module docstring)."""
        conv_ok, watch_ok = np.isfinite(self.converted), np.isfinite(self.watch)
        cols = [np.ones(self.metric.size, np.int64), fixed(self.metric), fixed(self.metric * self.metric),
                self.judged, self.scored, self.clicked, conv_ok.astype(np.int64),
                np.where(conv_ok & (self.converted > 0), 1, 0), watch_ok.astype(np.int64), fixed(self.watch),
                fixed(self.watch * self.watch), self.labelled_mask().astype(np.int64)]
        return np.stack([np.asarray(c, np.int64) for c in cols], axis=1)


def window_start(ts: F, window_s: float | None) -> NDArray[Any]:
    """The start of each time's window (epoch-aligned multiples of ``window_s``); None: one window."""
    if window_s is None:
        return np.full(ts.size, None, dtype=object)
    return np.floor(ts / window_s) * window_s


def group_sums(values: RequestValues, window_s: float | None) -> dict[Key, NDArray[Any]]:
    """Sums per (arm, window, query type) of the requests' vectors, as Python integers (exact, any size)."""
    vec = values.vectors()
    starts = window_start(values.ts, window_s)
    keys = list(zip(values.arm.tolist(), starts.tolist(), values.query_type.tolist(), strict=True))
    index: dict[Key, int] = {}
    codes = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64, count=len(keys))
    if len(keys) >= 2 ** 31:  # pragma: no cover - the halves below would no longer sum exactly
        raise ValueError("group_sums: more than 2^31 requests")
    # vec = high * 2^32 + low with 0 <= low < 2^32 and |high| < 2^31: each half sums in int64 exactly
    low, high = vec & 0xFFFFFFFF, vec >> 32
    out_low = np.zeros((len(index), len(FIELDS)), np.int64)
    out_high = np.zeros((len(index), len(FIELDS)), np.int64)
    np.add.at(out_low, codes, low)
    np.add.at(out_high, codes, high)
    joined = out_high.astype(object) * (1 << 32) + out_low.astype(object)
    return {k: joined[i] for k, i in index.items()}


def merge(sums: dict[Key, NDArray[Any]], *, arm: str | None = None, window: float | None | str = "any",
          query_type: str | None = None) -> NDArray[Any]:
    """The sum of every cell matching the given arm / window / query type (None / "any": all)."""
    total = zeros()
    for (a, w, q), v in sums.items():
        if (arm is None or a == arm) and (window == "any" or w == window) and (query_type is None or q == query_type):
            total += v
    return total


def figures(vec: NDArray[Any], unjudged: str = "skip") -> dict[str, Any]:
    """Means of one sum vector: the metric, its standard deviation, the judged share, CTR, conversion
    rate and mean watch ratio (None where nothing was counted), with their counts. The metric's mean is
    over ``n_metric`` requests: those whose query has a label (``unjudged="skip"``) or all of them
    (``"zero"``: an unlabelled query's request scores 0)."""
    v = {f: int(vec[i]) for f, i in _AT.items()}
    n = v["n_metric"] = v["n_labelled"] if check_unjudged(unjudged) == "skip" else v["n"]

    def mean(num: str, den: str, scaled: bool) -> float | None:
        if v[den] == 0:
            return None
        return (v[num] / SCALE if scaled else float(v[num])) / v[den]

    out: dict[str, Any] = {"n": v["n"], "n_metric": n, "metric": mean("metric", "n_metric", True), "metric_sd": None,
                           "judged_share": None if v["scored"] == 0 else v["judged"] / v["scored"],
                           "ctr": mean("clicks", "n", False), "n_converted": v["n_converted"],
                           "conversion": mean("conversions", "n_converted", False), "n_watch": v["n_watch"],
                           "watch_ratio": mean("watch", "n_watch", True)}
    if n > 1:
        m = v["metric"] / SCALE / n
        out["metric_sd"] = float(np.sqrt(max(v["metric_sq"] / SCALE / n - m * m, 0.0) * n / (n - 1)))
    return out
