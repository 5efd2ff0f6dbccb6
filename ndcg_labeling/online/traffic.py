"""Pooling by traffic: the unjudged (query, document) pairs users see most, so that the judged share of
impressions rises fastest per grade bought.

* :func:`pick_by_traffic`: the ``budget`` unjudged pairs of largest (time-decayed) impression weight;
  ties by pair order (the caller's order, e.g. query then document id). With ``groups`` (a query type
  per pair) the budget is first split across groups in proportion to their unjudged weight (largest
  remainders; a group never gets more than it has), then filled by weight inside each group.
* :func:`judged_share`: the judged share of the impression weight.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F = NDArray[np.float64]
I = NDArray[np.int64]  # noqa: E741


def judged_share(weight: F, judged: NDArray[np.bool_]) -> float:
    """``sum(weight[judged]) / sum(weight)`` (NaN without impressions)."""
    total = float(weight.sum())
    return float(weight[judged].sum()) / total if total > 0 else float("nan")


def _top(weight: F, candidates: I, n: int) -> I:
    order = np.lexsort((candidates, -weight[candidates]))  # heaviest first, ties by pair index
    out: I = candidates[order[:n]]
    return out


def split_budget(totals: F, available: I, budget: int) -> I:
    """Quotas per group proportional to ``totals``, capped at ``available``, summing to
    ``min(budget, available.sum())`` (largest remainders; ties to the lower group index)."""
    quota = np.zeros(totals.size, np.int64)
    left = int(min(budget, int(available.sum())))
    while left > 0:
        open_ = (available - quota) > 0
        share = np.where(open_, totals, 0.0)
        if share.sum() <= 0:
            share = open_.astype(np.float64)
        ideal = left * share / share.sum()
        add = np.minimum(np.floor(ideal).astype(np.int64), available - quota)
        rest = left - int(add.sum())
        if rest > 0:
            frac = np.where(open_ & (available - quota - add > 0), ideal - np.floor(ideal), -1.0)
            for g in np.lexsort((np.arange(frac.size), -frac))[:rest]:
                if frac[g] >= 0:
                    add[g] += 1
        if add.sum() == 0:
            break
        quota += add
        left -= int(add.sum())
    return quota


def pick_by_traffic(weight: F, judged: NDArray[np.bool_], budget: int, groups: I | None = None) -> I:
    """Indices of the pairs to grade (see the module docstring); pairs with no weight are never picked."""
    if budget < 1:
        raise ValueError(f"pick_by_traffic: budget must be >= 1, got {budget}")
    candidates = np.flatnonzero(~judged & (weight > 0)).astype(np.int64)
    if groups is None:
        return np.sort(_top(weight, candidates, budget))
    g = groups[candidates]
    n_groups = int(groups.max()) + 1 if groups.size else 0
    totals: F = np.bincount(g, weights=weight[candidates], minlength=n_groups).astype(np.float64)
    available = np.bincount(g, minlength=n_groups).astype(np.int64)
    quota = split_budget(totals, available, budget)
    picked = [_top(weight, candidates[g == k], int(quota[k])) for k in range(n_groups) if quota[k] > 0]
    return np.sort(np.concatenate(picked)) if picked else np.zeros(0, np.int64)
