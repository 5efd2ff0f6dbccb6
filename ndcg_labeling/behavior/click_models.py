"""COEC, the position-based model (PBM) fitted by EM, and the watch-time rule: per-pair scores.

Parameter names follow Chuklin, Markov & de Rijke, *Click Models for Web Search* (2015):
**examination** ``gamma[r]`` (probability that position ``r`` is examined), **attractiveness**
``alpha[u]`` (probability that pair ``u`` is clicked once examined), **satisfaction** (the DBN, in
:mod:`.dbn`). Every function takes :class:`~ndcg_labeling.behavior.counts.CellCounts`, so the decay
weights enter as weighted counts and nothing else changes.

EM stopping rule (all models): iterate until the largest absolute change of any parameter in one
iteration is below ``tol`` (default :data:`TOLERANCE` = 1e-6), or ``max_iter`` iterations
(default :data:`MAX_ITER`); the result says which (``converged``, ``iterations``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ndcg_labeling.behavior.counts import CellCounts

TOLERANCE = 1e-6
MAX_ITER = 2000
_EPS = 1e-12


@dataclass(frozen=True)
class ModelFit:
    """A model's per-pair ``score`` (NaN for a pair without data) and its position curve.

    ``position_bias[r - 1]`` is the examination probability of position ``r`` (PBM, DBN) or, for COEC
    and watch, the position's click-through rate relative to position 1 (the COEC prior); NaN for a
    position without impressions. ``parameters`` holds what provenance records (iterations, tolerance...).
    """

    model: str
    score: NDArray[np.float64]
    position_bias: NDArray[np.float64]
    position_bias_kind: str
    parameters: dict[str, float | int | bool | str] = field(default_factory=dict)
    attractiveness: NDArray[np.float64] | None = None
    satisfaction: NDArray[np.float64] | None = None


def _positions(cells: CellCounts) -> tuple[NDArray[np.int64], int]:
    if cells.position.size and int(cells.position.min()) < 1:
        raise ValueError(f"click model: positions are 1-based, got {int(cells.position.min())}")
    k = cells.n_positions
    return cells.position - 1, k


def position_ctr(cells: CellCounts) -> NDArray[np.float64]:
    """Weighted click-through rate per position (index r - 1); NaN where a position has no weight."""
    r, k = _positions(cells)
    w = np.bincount(r, weights=cells.weight, minlength=k)
    c = np.bincount(r, weights=cells.weighted_clicks, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(w > 0, c / np.maximum(w, _EPS), np.nan)


def coec(cells: CellCounts) -> ModelFit:
    """Clicks over expected clicks (Zhang & Jones 2007; OpenSearch UBI's implicit judgments).

    ``ctr[r]`` = weighted clicks at ``r`` / weighted impressions at ``r`` (the position prior, from
    the same logs); ``score[u] = clicks[u] / sum_r impressions[u, r] * ctr[r]`` (all weighted).
    A score of 1 means "clicked as often as an average result at the same positions". A pair whose
    expected clicks are 0 (only shown at never-clicked positions) scores NaN.
    """
    ctr = position_ctr(cells)
    r, _ = _positions(cells)
    expected = cells.per_pair(cells.weight * np.nan_to_num(ctr[r]))
    clicks = cells.per_pair(cells.weighted_clicks)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(expected > 0, clicks / np.maximum(expected, _EPS), np.nan)
    relative = ctr / ctr[0] if ctr.size and ctr[0] > 0 else np.full(ctr.size, np.nan)
    return ModelFit("coec", score, relative, "ctr relative to position 1", {})


def watch(cells: CellCounts) -> ModelFit:
    """The watch-time rule: ``score[u]`` = the decayed mean ``watch_ratio`` of pair ``u``,
    ``sum(w * watch_ratio) / sum(w)`` with ``w = 0.5 ** (age / half_life)`` (1 without a half-life)."""
    if np.isnan(cells.weighted_watch).any():
        raise ValueError("watch: every impression needs a watch_ratio")
    w = cells.per_pair(cells.weight)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(w > 0, cells.per_pair(cells.weighted_watch) / np.maximum(w, _EPS), np.nan)
    ctr = position_ctr(cells)
    relative = ctr / ctr[0] if ctr.size and ctr[0] > 0 else np.full(ctr.size, np.nan)
    return ModelFit("watch", score, relative, "ctr relative to position 1", {})


def pbm(cells: CellCounts, *, tol: float = TOLERANCE, max_iter: int = MAX_ITER) -> ModelFit:
    """The position-based model, ``P(C = 1) = gamma[r] * alpha[u]``, fitted by EM (Chuklin et al. 2015,
    section 4.2 and the EM updates of chapter 4):

    * E-step, for an impression that was not clicked: ``P(E = 1 | C = 0) = gamma (1 - alpha) / (1 - gamma alpha)``
      and ``P(A = 1 | C = 0) = alpha (1 - gamma) / (1 - gamma alpha)``; a click means ``E = A = 1``;
    * M-step: ``alpha[u]`` = the weighted mean of ``P(A = 1 | C)`` over the impressions of ``u``,
      ``gamma[r]`` = the weighted mean of ``P(E = 1 | C)`` over the impressions at ``r``.

    The PBM is identified only up to a common factor (``gamma * c``, ``alpha / c`` click alike), so the
    top position is taken as always examined: ``gamma[1] = 1`` is fixed, not estimated. Start:
    ``alpha = 0.5``, ``gamma[r] = 0.5`` for r > 1. The score of a pair is its attractiveness.
    """
    r, k = _positions(cells)
    u = cells.pair
    n, c = cells.weight, cells.weighted_clicks
    not_clicked = np.maximum(n - c, 0.0)
    alpha = np.full(cells.n_pairs, 0.5)
    gamma = np.full(k, 0.5)
    gamma[0] = 1.0
    n_pair = np.bincount(u, weights=n, minlength=cells.n_pairs)
    n_pos = np.bincount(r, weights=n, minlength=k)
    converged, it = False, 0
    for it in range(1, max_iter + 1):
        a, g = alpha[u], gamma[r]
        denom = np.maximum(1.0 - g * a, _EPS)
        post_a = c + not_clicked * a * (1.0 - g) / denom
        post_e = c + not_clicked * g * (1.0 - a) / denom
        with np.errstate(invalid="ignore", divide="ignore"):
            new_alpha = np.where(n_pair > 0, np.bincount(u, weights=post_a, minlength=cells.n_pairs) / n_pair, alpha)
            new_gamma = np.where(n_pos > 0, np.bincount(r, weights=post_e, minlength=k) / n_pos, gamma)
        new_gamma[0] = 1.0
        change = max(float(np.max(np.abs(new_alpha - alpha), initial=0.0)),
                     float(np.max(np.abs(new_gamma - gamma), initial=0.0)))
        alpha, gamma = new_alpha, new_gamma
        if change < tol:
            converged = True
            break
    score = np.where(n_pair > 0, alpha, np.nan)
    bias = np.where(n_pos > 0, gamma, np.nan)
    return ModelFit("pbm", score, bias, "examination", {"iterations": it, "converged": converged, "tolerance": tol},
                    attractiveness=score)
