"""From a model's scores to a scale's grades: fixed cut points, or cut points fitted to people.

``grade = number of cut points <= score`` (so ``k`` increasing cut points give grades 0..k). The
defaults (:data:`DEFAULT_THRESHOLDS`, documented in docs/behavior.md) are per model and scale; the
watch-time ones are the seed practice's ``0.1, 0.4, 0.8`` on 0-3.

:func:`fit_cut_points` chooses the cut points that maximize quadratic-weighted Cohen's kappa between
the mapped scores and reference grades (the human consensus of a batch): start from the cut points
that reproduce the reference grades' distribution (quantiles), then coordinate ascent over candidate
cut points (midpoints between distinct scores, at most ``max_candidates`` quantiles of them) until a
whole sweep improves nothing.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ndcg_labeling.quality import weighted_kappa

#: model -> scale -> cut points (len = number of grades - 1)
DEFAULT_THRESHOLDS: dict[str, dict[str, tuple[float, ...]]] = {
    "watch": {"0-3": (0.1, 0.4, 0.8), "0-4": (0.1, 0.3, 0.6, 0.9)},
    "pbm": {"0-3": (0.15, 0.4, 0.7), "0-4": (0.1, 0.3, 0.5, 0.75)},
    "dbn": {"0-3": (0.1, 0.3, 0.55), "0-4": (0.05, 0.2, 0.4, 0.6)},
    "coec": {"0-3": (0.5, 1.0, 2.0), "0-4": (0.25, 0.5, 1.0, 2.0)},
}


def check_thresholds(thresholds: ArrayLike, n_grades: int) -> NDArray[np.float64]:
    """``thresholds`` as a strictly increasing float array of ``n_grades - 1`` finite values; ValueError otherwise."""
    t = np.asarray(thresholds, dtype=np.float64).ravel()
    if t.size != n_grades - 1:
        raise ValueError(f"thresholds: {n_grades} grades need {n_grades - 1} cut points, got {t.size}")
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise ValueError(f"thresholds: cut points must be finite and strictly increasing, got {t.tolist()}")
    return t


def map_scores(scores: ArrayLike, thresholds: ArrayLike, min_grade: int = 0) -> NDArray[np.int64]:
    """Grade of each score: ``min_grade + number of cut points <= score``. NaN scores: ValueError."""
    s = np.asarray(scores, dtype=np.float64)
    if np.isnan(s).any():
        raise ValueError("map_scores: scores must not be NaN (leave such pairs out first)")
    t = np.asarray(thresholds, dtype=np.float64)
    return min_grade + np.searchsorted(t, s, side="right").astype(np.int64)


def _candidates(scores: NDArray[np.float64], max_candidates: int) -> NDArray[np.float64]:
    u = np.unique(scores)
    if u.size < 2:
        return np.array([u[0] + 1.0]) if u.size else np.array([0.0])
    mids = (u[:-1] + u[1:]) / 2.0
    if mids.size > max_candidates:
        mids = np.unique(np.quantile(mids, np.linspace(0.0, 1.0, max_candidates)))
    return np.concatenate([[u[0] - 1.0], mids, [u[-1] + 1.0]])


def fit_cut_points(scores: ArrayLike, reference: ArrayLike, values: tuple[int, ...], *,
                   max_candidates: int = 200, max_sweeps: int = 50) -> tuple[NDArray[np.float64], float]:
    """Cut points maximizing quadratic-weighted kappa of ``map_scores(scores)`` against ``reference``
    (grades in ``values``); returns ``(cut points, kappa on these pairs)``. See the module docstring."""
    s = np.asarray(scores, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.int64)
    if s.shape != ref.shape or s.size == 0:
        raise ValueError(f"fit_cut_points: scores and reference must be non-empty and of one length, "
                         f"got {s.size} and {ref.size}")
    k = len(values) - 1
    cand = _candidates(s, max_candidates)
    share = np.array([np.mean(ref <= v) for v in values[:-1]])
    start = np.quantile(s, np.clip(share, 0.0, 1.0))
    idx = np.clip(np.searchsorted(cand, start), 0, cand.size - 1)
    idx = np.maximum.accumulate(idx)  # non-decreasing; equal cut points are allowed while fitting
    lo = values[0]

    def kappa_of(ix: NDArray[np.int64]) -> float:
        value = weighted_kappa(ref, map_scores(s, cand[ix], lo), values, weights="quadratic")
        return -np.inf if np.isnan(value) else value

    best = kappa_of(idx)
    for _ in range(max_sweeps):
        improved = False
        for j in range(k):
            low = idx[j - 1] if j > 0 else 0
            high = idx[j + 1] if j < k - 1 else cand.size - 1
            for c in range(low, high + 1):
                if c == idx[j]:
                    continue
                trial = idx.copy()
                trial[j] = c
                value = kappa_of(trial)
                if value > best + 1e-12:
                    best, idx, improved = value, trial, True
        if not improved:
            break
    cuts = cand[idx].astype(np.float64)
    # strictly increasing for map_scores/check_thresholds: nudge equal cut points apart by a hair
    for j in range(1, k):
        if cuts[j] <= cuts[j - 1]:
            cuts[j] = np.nextafter(cuts[j - 1], np.inf)
    return cuts, float(best)
