"""Sufficient statistics per (arm, window, query type), in fixed point so that merging is exact.

A request contributes one vector of :data:`FIELDS`: ``n`` (1), ``metric`` and ``metric_sq`` (its metric
value and square, in units of ``1 / SCALE``), ``judged`` and ``scored`` (judged positions of the
scored ones), ``clicks`` (1 when any document was clicked), ``n_converted`` / ``conversions`` (1 / any
conversion, where the log has ``converted`` for the request), ``n_watch`` / ``watch`` / ``watch_sq``
(where it has ``watch_ratio``: the mean over the request's rows, fixed point). All integers: sums
merge and un-merge (a request updated live is taken out and put back) exactly, in any order, so the
live figures and the batch report agree to the last digit. ``SCALE = 2**32`` keeps 2.3e-10 of a
metric value (the rounding is the same on both paths; it is far below any interval shown).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

F = NDArray[np.float64]
I = NDArray[np.int64]  # noqa: E741
SCALE = float(2 ** 32)
FIELDS = ("n", "metric", "metric_sq", "judged", "scored", "clicks", "n_converted", "conversions", "n_watch", "watch",
          "watch_sq")
_AT = {f: i for i, f in enumerate(FIELDS)}
#: the business metrics: name -> (count field, numerator field)
BUSINESS = {"ctr": ("n", "clicks"), "conversion": ("n_converted", "conversions"), "watch_ratio": ("n_watch", "watch")}
Key = tuple[str, float | None, str]  # (arm, window start in epoch seconds or None, query type)


def fixed(values: F) -> I:
    """``values`` in units of ``1 / SCALE`` (NaN -> 0; callers count presence separately)."""
    out: I = np.rint(np.where(np.isfinite(values), values, 0.0) * SCALE).astype(np.int64)
    return out


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

    def vectors(self) -> I:
        """(n, len(FIELDS)) contributions of the requests."""
        conv_ok, watch_ok = np.isfinite(self.converted), np.isfinite(self.watch)
        cols = [np.ones(self.metric.size, np.int64), fixed(self.metric), fixed(self.metric * self.metric),
                self.judged, self.scored, self.clicked, conv_ok.astype(np.int64),
                np.where(conv_ok & (self.converted > 0), 1, 0), watch_ok.astype(np.int64), fixed(self.watch),
                fixed(self.watch * self.watch)]
        return np.stack([np.asarray(c, np.int64) for c in cols], axis=1)


def window_start(ts: F, window_s: float | None) -> NDArray[Any]:
    """The start of each time's window (epoch-aligned multiples of ``window_s``); None: one window."""
    if window_s is None:
        return np.full(ts.size, None, dtype=object)
    return np.floor(ts / window_s) * window_s


def group_sums(values: RequestValues, window_s: float | None) -> dict[Key, I]:
    """Sums per (arm, window, query type) of the requests' vectors."""
    vec = values.vectors()
    starts = window_start(values.ts, window_s)
    keys = list(zip(values.arm.tolist(), starts.tolist(), values.query_type.tolist(), strict=True))
    index: dict[Key, int] = {}
    codes = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64, count=len(keys))
    out = np.zeros((len(index), len(FIELDS)), np.int64)
    np.add.at(out, codes, vec)
    return {k: out[i] for k, i in index.items()}


def merge(sums: dict[Key, I], *, arm: str | None = None, window: float | None | str = "any",
          query_type: str | None = None) -> I:
    """The sum of every cell matching the given arm / window / query type (None / "any": all)."""
    total = np.zeros(len(FIELDS), np.int64)
    for (a, w, q), v in sums.items():
        if (arm is None or a == arm) and (window == "any" or w == window) and (query_type is None or q == query_type):
            total += v
    return total


def figures(vec: I) -> dict[str, Any]:
    """Means of one sum vector: the metric, its standard deviation, the judged share, CTR, conversion
    rate and mean watch ratio (None where nothing was counted), with their counts."""
    v = {f: int(vec[i]) for f, i in _AT.items()}
    n = v["n"]

    def mean(num: str, den: str, scaled: bool) -> float | None:
        if v[den] == 0:
            return None
        return (v[num] / SCALE if scaled else float(v[num])) / v[den]

    out: dict[str, Any] = {"n": n, "metric": mean("metric", "n", True), "metric_sd": None,
                           "judged_share": None if v["scored"] == 0 else v["judged"] / v["scored"],
                           "ctr": mean("clicks", "n", False), "n_converted": v["n_converted"],
                           "conversion": mean("conversions", "n_converted", False), "n_watch": v["n_watch"],
                           "watch_ratio": mean("watch", "n_watch", True)}
    if n > 1:
        m = v["metric"] / SCALE / n
        out["metric_sd"] = float(np.sqrt(max(v["metric_sq"] / SCALE / n - m * m, 0.0) * n / (n - 1)))
    return out
