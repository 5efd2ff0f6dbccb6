"""COEC, the position-based model (PBM) fitted by EM, and the watch-time rule: per-pair scores.

Parameter names follow Chuklin, Markov & de Rijke, *Click Models for Web Search* (2015):
**examination** ``gamma[r]`` (probability that position ``r`` is examined), **attractiveness**
``alpha[u]`` (probability that pair ``u`` is clicked once examined), **satisfaction** (the DBN, in
:mod:`.dbn`). Every function takes :class:`~ndcg_labeling.behavior.counts.CellCounts`, so the decay
weights enter as weighted counts and nothing else changes.

EM stopping rule: iterate until the largest absolute change of any parameter in one iteration is below
``tol`` (default :data:`TOLERANCE` = 1e-6), or — PBM — the mean log-likelihood per (weighted) impression
rose by less than ``ll_tol`` (:data:`LL_TOLERANCE` = 1e-9) in the last iteration (pairs whose
attractiveness tends to 1 creep there for thousands of iterations while gaining nothing), or after
``max_iter`` iterations (:data:`MAX_ITER`); the result says which (``converged``, ``iterations``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ndcg_labeling import _jit
from ndcg_labeling.behavior.counts import CellCounts
from ndcg_labeling.behavior.squarem import squarem

TOLERANCE = 1e-6
LL_TOLERANCE = 1e-9
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


def pbm(cells: CellCounts, *, tol: float = TOLERANCE, max_iter: int = MAX_ITER, ll_tol: float = LL_TOLERANCE,
        use_numba: bool | None = None, accelerate: bool = True, conditional: bool = True) -> ModelFit:
    """The position-based model, ``P(C = 1) = gamma[r] * alpha[u]``, fitted by EM (Chuklin et al. 2015,
    section 4.2 and the EM updates of chapter 4):

    * E-step, for an impression that was not clicked: ``P(E = 1 | C = 0) = gamma (1 - alpha) / (1 - gamma alpha)``
      and ``P(A = 1 | C = 0) = alpha (1 - gamma) / (1 - gamma alpha)``; a click means ``E = A = 1``;
    * M-step: ``alpha[u]`` = the weighted mean of ``P(A = 1 | C)`` over the impressions of ``u``,
      ``gamma[r]`` = the weighted mean of ``P(E = 1 | C)`` over the impressions at ``r``.

    The PBM is identified only up to a common factor (``gamma * c``, ``alpha / c`` click alike), so the
    top position is taken as always examined: ``gamma[1] = 1`` is fixed, not estimated. Start (close
    to the optimum, so few iterations): ``gamma[r] = ctr[r] / ctr[1]`` (the position CTR relative to
    the top, clipped to [1e-6, 1 - 1e-6]: EM never moves an examination of exactly 1) and ``alpha[u] = clicks[u] / sum_r impressions[u, r] gamma[r]``
    (clipped to [1e-6, 1 - 1e-6]). The score of a pair is its attractiveness. ``use_numba``: None (the
    compiled E-step where numba is available), True or False (NumPy). ``accelerate`` (default): fitted by
    SQUAREM (:mod:`.squarem`) over the conditional step (``conditional``, default: each attractiveness
    set to its best value given the examination, then EM's update of the examination; see
    :func:`_pbm_conditional_function`) or over EM's own step (``conditional=False``); both end at EM's
    fixed point, the conditional step in a few dozen steps where EM takes hundreds to thousands.
    ``accelerate=False``: plain EM, one E-step and one M-step per iteration.
    """
    r, k = _positions(cells)
    u = cells.pair
    n, c = cells.weight, cells.weighted_clicks
    if u.size > 1 and bool(np.any(u[1:] < u[:-1])):  # the compiled E-step runs over cells sorted by pair
        order = np.argsort(u, kind="stable")
        u, r, n, c = u[order], r[order], n[order], c[order]
    n_pair = np.bincount(u, weights=n, minlength=cells.n_pairs)
    n_pos = np.bincount(r, weights=n, minlength=k)
    ctr = position_ctr(cells)
    gamma = np.clip(np.nan_to_num(ctr / max(float(ctr[0]), _EPS), nan=0.5), 1e-6, 1.0 - 1e-6)
    gamma[0] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = np.clip(np.bincount(u, weights=c, minlength=cells.n_pairs)
                        / np.bincount(u, weights=n * gamma[r], minlength=cells.n_pairs), 1e-6, 1.0 - 1e-6)
    alpha = np.nan_to_num(alpha, nan=0.5)
    sums = _pbm_sums_function(use_numba, u, cells.n_pairs)
    data = _PbmData(u, r, c, n, n_pair, n_pos, max(float(n.sum()), _EPS))
    if accelerate:
        alpha, gamma, state = _pbm_squarem(sums, data, alpha, gamma, tol=tol, ll_tol=ll_tol, max_iter=max_iter,
                                           conditional=conditional)
    else:
        alpha, gamma, state = _pbm_plain(sums, data, alpha, gamma, tol=tol, ll_tol=ll_tol, max_iter=max_iter)
    score = np.where(n_pair > 0, alpha, np.nan)
    bias = np.where(n_pos > 0, gamma, np.nan)
    return ModelFit("pbm", score, bias, "examination", {**state, "tolerance": tol, "ll_tolerance": ll_tol},
                    attractiveness=score)


@dataclass(frozen=True)
class _PbmData:
    """The PBM's cells (sorted by pair) and their weighted impressions per pair and per position."""

    u: NDArray[Any]
    r: NDArray[Any]
    c: NDArray[np.float64]
    n: NDArray[np.float64]
    n_pair: NDArray[Any]
    n_pos: NDArray[Any]
    total: float

    @cached_property
    def not_clicked(self) -> NDArray[np.float64]:
        """``max(n - c, 0)`` per cell, made on first use: the conditional step computes it per cell
        inside its kernel and never asks (160 MB at 20M cells, a third of the fit's memory)."""
        return np.maximum(self.n - self.c, 0.0)


def _pbm_update(data: _PbmData, sum_a: NDArray[np.float64], sum_e: NDArray[np.float64], alpha: NDArray[np.float64],
                gamma: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The M-step: the weighted means of the E-step's posteriors (a parameter without data keeps its value)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        new_alpha = np.where(data.n_pair > 0, sum_a / np.maximum(data.n_pair, _EPS), alpha)
        new_gamma = np.where(data.n_pos > 0, sum_e / np.maximum(data.n_pos, _EPS), gamma)
    new_gamma[0] = 1.0
    return new_alpha, new_gamma


def _pbm_squarem(sums: Callable[..., float], data: _PbmData, alpha: NDArray[np.float64], gamma: NDArray[np.float64], *,
                 tol: float, ll_tol: float, max_iter: int,
                 conditional: bool) -> tuple[NDArray[np.float64], NDArray[np.float64], dict[str, Any]]:
    """The PBM fitted by :func:`~ndcg_labeling.behavior.squarem.squarem` over the conditional step of
    :func:`_pbm_conditional_function` (``conditional``) or over the EM steps of :func:`_pbm_plain`."""
    n_pairs = alpha.size
    best_given = _pbm_conditional_function(sums, data) if conditional else None

    def step(theta: NDArray[np.float64], with_ll: bool) -> tuple[NDArray[np.float64], float | None]:
        a, g = theta[:n_pairs], theta[n_pairs:]
        if best_given is not None:
            new_a, sum_e, value = best_given(a, g, with_ll)
            with np.errstate(invalid="ignore", divide="ignore"):
                new_g = np.where(data.n_pos > 0, sum_e / np.maximum(data.n_pos, _EPS), g)
            new_g[0] = 1.0
        else:
            sum_a, sum_e = np.zeros(n_pairs), np.zeros(g.size)
            value = float(sums(data.u, data.r, data.c, data.not_clicked, a, g, sum_a, sum_e, with_ll))
            new_a, new_g = _pbm_update(data, sum_a, sum_e, a, g)
        return np.concatenate([new_a, new_g]), (value / data.total if with_ll else None)

    lower = np.full(n_pairs + gamma.size, _LOWER)
    upper = np.ones(n_pairs + gamma.size)
    lower[n_pairs] = 1.0  # gamma[1] = 1: the PBM's scale
    fit = squarem(np.concatenate([alpha, gamma]), step, lower=lower, upper=upper, tol=tol, ll_tol=ll_tol,
                  max_steps=max_iter)
    return fit.theta[:n_pairs], fit.theta[n_pairs:], {
        "iterations": fit.e_steps, "converged": fit.converged, "accelerator": "squarem",
        "step": "conditional" if conditional else "em", "extrapolations_kept": fit.jumps_kept,
        "log_likelihood": round(fit.log_likelihood, 9)}


#: the lower bound of a parameter after a SQUAREM jump (EM itself keeps them in (0, 1])
_LOWER = 1e-10


def _pbm_plain(sums: Callable[..., float], data: _PbmData, alpha: NDArray[np.float64], gamma: NDArray[np.float64], *,
               tol: float, ll_tol: float, max_iter: int) -> tuple[NDArray[np.float64], NDArray[np.float64], dict[str, Any]]:
    """Plain EM (one E-step and one M-step per iteration) with the stopping rules of the module."""
    u, r, c, not_clicked, n_pair, n_pos, total = (data.u, data.r, data.c, data.not_clicked, data.n_pair,
                                                  data.n_pos, data.total)
    n_pairs, k = alpha.size, gamma.size
    converged, it = False, 0
    # ll(theta) costs a log or two per cell, the E-step none: it is computed only when the rule may fire,
    # i.e. when the EM lower bound of this iteration's gain (the Q-function's gain, per pair and per
    # position: no per-cell log) is not already above ll_tol; the decisions and the numbers are the ones
    # of computing it at every iteration (see _gain_bound)
    clicked = (np.bincount(u, weights=c, minlength=n_pairs) > 0, np.bincount(r, weights=c, minlength=k) > 0)
    last_ll: float | None = -np.inf  # ll at the previous parameters (None: not computed)
    prev: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
    bound = -np.inf
    for it in range(1, max_iter + 1):  # noqa: B007 - the count is read after the loop
        sum_a, sum_e = np.zeros(n_pairs), np.zeros(k)
        exact = it > 1 and not bound > ll_tol + _BOUND_MARGIN * abs(ll_tol)
        value = float(sums(u, r, c, not_clicked, alpha, gamma, sum_a, sum_e, exact))
        ll = value / total if exact else None
        if ll is not None and prev is not None:
            if last_ll is None:
                last_ll = _pbm_loglik(sums, u, r, c, not_clicked, *prev, n_pairs, k) / total
            if ll - last_ll < ll_tol:  # the last update gained (almost) nothing: keep it and stop
                converged = True
                break
        last_ll, prev = ll, (alpha, gamma)
        new_alpha, new_gamma = _pbm_update(data, sum_a, sum_e, alpha, gamma)
        bound = _gain_bound(sum_a, n_pair, alpha, new_alpha, sum_e, n_pos, gamma, new_gamma, clicked) / total
        change = max(float(np.max(np.abs(new_alpha - alpha), initial=0.0)),
                     float(np.max(np.abs(new_gamma - gamma), initial=0.0)))
        alpha, gamma = new_alpha, new_gamma
        if change < tol:
            converged = True
            break
    if last_ll is None and prev is not None:  # the log-likelihood at the last E-step's parameters
        last_ll = _pbm_loglik(sums, u, r, c, not_clicked, *prev, n_pairs, k) / total
    return alpha, gamma, {"iterations": it, "converged": converged, "log_likelihood": round(float(last_ll or -np.inf), 9)}


_BOUND_MARGIN = 1e-6  # relative: the bound must clear ll_tol by this much to skip the exact ll


def _gain_bound(sum_a: NDArray[Any], n_pair: NDArray[Any], alpha: NDArray[Any], new_alpha: NDArray[Any],
                sum_e: NDArray[Any], n_pos: NDArray[Any], gamma: NDArray[Any], new_gamma: NDArray[Any],
                clicked: tuple[NDArray[np.bool_], NDArray[np.bool_]]) -> float:
    """A lower bound of ``ll(new) - ll(old)`` (weighted, not per impression): EM's ``Q(new | old) -
    Q(old | old)``, Q the expected complete-data log-likelihood under the posteriors of the E-step at
    ``old``, ``sum_a[u] log alpha[u] + (n_pair[u] - sum_a[u]) log(1 - alpha[u])`` summed over pairs, and
    the same over positions (Jensen's inequality: ``ll(new) - ll(old) >= Q(new | old) - Q(old | old)``
    for any ``new``). -inf where it may not hold: when the E-step clipped ``1 - gamma alpha`` at 1e-12 or
    the log-likelihood clipped ``gamma alpha`` of a clicked cell (then ll is computed every iteration)."""
    if float(np.max(alpha, initial=0.0)) * float(np.max(gamma, initial=0.0)) > 1.0 - 1e-9:
        return -np.inf
    low_a, low_g = np.min(alpha[clicked[0]], initial=1.0), np.min(gamma[clicked[1]], initial=1.0)
    if float(min(low_a, np.min(new_alpha[clicked[0]], initial=1.0))) * float(
            min(low_g, np.min(new_gamma[clicked[1]], initial=1.0))) < 1e-11:
        return -np.inf
    gain = 0.0
    for s, n, old, new in ((sum_a, n_pair, alpha, new_alpha), (sum_e, n_pos, gamma, new_gamma)):
        moved = new != old
        s, n, old, new = s[moved], n[moved], old[moved], new[moved]
        with np.errstate(invalid="ignore", divide="ignore"):
            terms = (np.where(s > 0, s * (np.log(new) - np.log(old)), 0.0)
                     + np.where(n - s > 0, (n - s) * (np.log1p(-new) - np.log1p(-old)), 0.0))
        gain += float(np.sum(terms))
    return gain if np.isfinite(gain) else -np.inf


def _pbm_loglik(sums: Callable[..., float], u: Any, r: Any, c: Any, not_clicked: Any, alpha: Any, gamma: Any,
                n_pairs: int, k: int) -> float:
    """The weighted log-likelihood at (alpha, gamma), summed in the order the E-step sums it."""
    return float(sums(u, r, c, not_clicked, alpha, gamma, np.zeros(n_pairs), np.zeros(k), True))


def _pbm_sums_numpy(u: Any, r: Any, c: Any, not_clicked: Any, alpha: Any, gamma: Any, sum_a: Any, sum_e: Any,
                    with_ll: bool = True) -> float:
    """PBM E-step in NumPy: adds the weighted ``P(A = 1 | C)`` per pair to ``sum_a`` and ``P(E = 1 | C)``
    per position to ``sum_e`` (each cell: its clicks, plus its non-clicks times the posterior); returns
    the weighted log-likelihood of the clicks at these parameters (0.0 unless ``with_ll``)."""
    a, g = alpha[u], gamma[r]
    denom = np.maximum(1.0 - g * a, _EPS)
    sum_a += np.bincount(u, weights=c + not_clicked * a * (1.0 - g) / denom, minlength=sum_a.size)
    sum_e += np.bincount(r, weights=c + not_clicked * g * (1.0 - a) / denom, minlength=sum_e.size)
    if not with_ll:
        return 0.0
    return float(np.sum(c * np.log(np.maximum(g * a, _EPS)) + not_clicked * np.log(denom)))


def _pbm_sums_blocks(starts: Any, bounds: Any, r: Any, c: Any, not_clicked: Any, alpha: Any, gamma: Any,
                     sum_a: Any, sum_e_blocks: Any, ll_blocks: Any, with_ll: bool) -> None:  # pragma: no cover - compiled by numba; a test compares it with NumPy
    """The same E-step over cells sorted by pair (pair ``u``'s cells are ``starts[u]:starts[u + 1]``), in
    fixed blocks of pairs (``bounds``) that numba runs in parallel: each block sums its pairs' cells in
    order into ``sum_a`` and its own row of ``sum_e_blocks`` and ``ll_blocks``; the caller adds the rows
    in block order, so the result does not depend on the number of threads. The two logs per cell of the
    log-likelihood (three quarters of the time) only ``with_ll``."""
    for b in prange(bounds.size - 1):
        ll = 0.0
        for u in range(bounds[b], bounds[b + 1]):
            a = alpha[u]
            acc = 0.0
            for i in range(starts[u], starts[u + 1]):
                g = gamma[r[i]]
                d = max(1.0 - g * a, 1e-12)
                acc += c[i] + not_clicked[i] * a * (1.0 - g) / d
                sum_e_blocks[b, r[i]] += c[i] + not_clicked[i] * g * (1.0 - a) / d
                if with_ll:
                    ll += c[i] * np.log(max(g * a, 1e-12)) + not_clicked[i] * np.log(d)
            sum_a[u] += acc
        ll_blocks[b] = ll


def _pbm_conditional_numpy(data: _PbmData, alpha: Any, gamma: Any, with_ll: bool) -> tuple[Any, Any, float]:
    """The conditional step in NumPy (see :func:`_pbm_conditional_function`): each pair's best attractiveness
    given ``gamma`` (``alpha``: where Newton starts, and the value of a pair without impressions), the
    examination's E-step sums there, and the weighted log-likelihood there (0.0 unless ``with_ll``)."""
    u, r, c = data.u, data.r, data.c
    nc = np.maximum(data.n - c, 0.0)
    n_pairs = alpha.size
    g = gamma[r]
    clicks = np.bincount(u, weights=c, minlength=n_pairs)
    seen = np.bincount(u, weights=c + nc, minlength=n_pairs)
    with np.errstate(invalid="ignore", divide="ignore"):
        at_one = clicks >= np.bincount(u, weights=nc * (gamma / np.maximum(1.0 - gamma, _EPS))[r], minlength=n_pairs)
    inside = (clicks > 0) & ~at_one & (seen > 0)
    x = np.where((alpha > 0) & (alpha < 1), alpha, 0.5)
    lo, hi = np.zeros(n_pairs), np.ones(n_pairs)
    for _ in range(_NEWTON_STEPS):
        with np.errstate(invalid="ignore", divide="ignore"):  # pairs outside Newton's case: read nowhere
            d = 1.0 - g * x[u]
            k = clicks - np.bincount(u, weights=nc * g * x[u] / d, minlength=n_pairs)
            slope = -np.bincount(u, weights=nc * g / (d * d), minlength=n_pairs)
            nxt = x - k / slope
        lo, hi = np.where(k > 0, x, lo), np.where(k > 0, hi, x)
        nxt = np.where((nxt > lo) & (nxt < hi), nxt, 0.5 * (lo + hi))
        moved = float(np.max(np.abs(nxt - x)[inside], initial=0.0))
        x = nxt
        if moved <= _NEWTON_TOL:
            break
    best = np.where(seen > 0, np.where(clicks > 0, np.where(at_one, 1.0, x), 0.0), alpha)
    d = np.maximum(1.0 - g * best[u], _EPS)
    sum_e = np.bincount(r, weights=c + nc * g * (1.0 - best[u]) / d, minlength=gamma.size)
    value = float(np.sum(c * np.log(np.maximum(g * best[u], _EPS)) + nc * np.log(d))) if with_ll else 0.0
    return best, sum_e, value


def _pbm_conditional_blocks(starts: Any, bounds: Any, r: Any, c: Any, n: Any, alpha: Any, gamma: Any,
                            log_gamma: Any, odds: Any, best: Any, sum_e_blocks: Any, ll_blocks: Any,
                            with_ll: bool) -> None:  # pragma: no cover - compiled by numba; a test compares it with NumPy
    """The conditional step over cells sorted by pair, in the fixed blocks of :func:`_pbm_sums_blocks`
    (added in block order by the caller). Per pair, its cells read into cache once: the best
    attractiveness given ``gamma`` (safeguarded Newton on ``clicks - sum nc g a / (1 - g a)``, bracketed
    in (0, 1); ``odds[r] = g / (1 - g)``; ``n`` the weighted impressions, of which ``max(n - c, 0)``
    unclicked), the examination's E-step sums at it and the log-likelihood there (one log per cell: a click's ``log(gamma a)`` is ``log gamma + log a``)."""
    for b in prange(bounds.size - 1):
        ll = 0.0
        for u in range(bounds[b], bounds[b + 1]):
            a = alpha[u]
            lo_i, hi_i = starts[u], starts[u + 1]
            clicks, seen, at_one = 0.0, 0.0, 0.0
            for i in range(lo_i, hi_i):
                clicks += c[i]
                seen += c[i] + max(n[i] - c[i], 0.0)
                at_one += max(n[i] - c[i], 0.0) * odds[r[i]]
            if seen <= 0.0:
                x = a
            elif clicks <= 0.0:
                x = 0.0
            elif clicks >= at_one:
                x = 1.0
            else:
                x = a if 0.0 < a < 1.0 else 0.5
                lo, hi = 0.0, 1.0
                for _ in range(_NEWTON_STEPS):
                    k, slope = clicks, 0.0
                    for i in range(lo_i, hi_i):
                        g = gamma[r[i]]
                        inv = 1.0 / (1.0 - g * x)
                        nc = max(n[i] - c[i], 0.0)
                        k -= nc * g * x * inv
                        slope -= nc * g * inv * inv
                    if k > 0.0:
                        lo = x
                    else:
                        hi = x
                    nxt = x - k / slope if slope < 0.0 else 0.5 * (lo + hi)
                    if not lo < nxt < hi:
                        nxt = 0.5 * (lo + hi)
                    moved = abs(nxt - x)
                    x = nxt
                    if moved <= _NEWTON_TOL:
                        break
            best[u] = x
            log_x = np.log(x) if with_ll else 0.0
            for i in range(lo_i, hi_i):
                g = gamma[r[i]]
                d = max(1.0 - g * x, 1e-12)
                nc = max(n[i] - c[i], 0.0)
                sum_e_blocks[b, r[i]] += c[i] + nc * g * (1.0 - x) / d
                if with_ll:
                    ll += nc * np.log(d) + c[i] * max(log_x + log_gamma[r[i]], _LOG_EPS)
        ll_blocks[b] = ll


_LOG_EPS = float(np.log(_EPS))
#: Newton's steps for a pair's best attractiveness: at most, and the step that ends them (Newton converges
#: quadratically: the value after a step of 1e-10 is off by about 1e-20 times the curvature ratio)
_NEWTON_STEPS = 100
_NEWTON_TOL = 1e-10


#: the fixed blocks of pairs of the compiled E-step (more than any thread count: the blocks balance)
_BLOCKS = 64
prange = range  # the name the kernel body uses; numba's prange where it is compiled


def _pbm_sums_compiled(u: Any, n_pairs: int) -> Callable[..., float]:
    """The compiled E-step with the signature of :func:`_pbm_sums_numpy`, for cells sorted by pair ``u``
    (``0 <= u < n_pairs``)."""
    numba = _jit.load_numba()
    kernel = _jit.compile_kernel(_pbm_sums_blocks, {"prange": numba.prange}, "pbm_sums_blocks", parallel=True)
    starts = np.zeros(n_pairs + 1, dtype=np.int64)
    np.cumsum(np.bincount(u, minlength=n_pairs), out=starts[1:])
    # blocks of about equal numbers of cells, cut at pair boundaries
    bounds = np.unique(np.searchsorted(starts, np.linspace(0, u.size, _BLOCKS + 1), side="left"))
    bounds[0], bounds[-1] = 0, n_pairs

    def sums(_u: Any, r: Any, c: Any, not_clicked: Any, alpha: Any, gamma: Any, sum_a: Any, sum_e: Any,
             with_ll: bool = True) -> float:
        blocks = np.zeros((bounds.size - 1, sum_e.size))
        ll = np.zeros(bounds.size - 1)
        kernel(starts, bounds, r, c, not_clicked, alpha, gamma, sum_a, blocks, ll, with_ll)
        for row in blocks:  # in block order: the same sums whatever the threads
            sum_e += row
        return float(ll.sum()) if with_ll else 0.0

    return sums


def _pbm_conditional_function(sums: Callable[..., float], data: _PbmData) -> Callable[..., tuple[Any, Any, float]]:
    """The PBM's conditional step (an ECM step, Meng & Rubin 1993), the map that SQUAREM accelerates.

    EM moves every attractiveness a fraction of the way to its best value and does so again at every
    step: slowly where an impression says little about it (an unclicked impression at a rarely examined
    position). Given the examination, though, the pairs are independent and each one's best
    attractiveness is a root in one variable: the log-likelihood of pair ``u``, ``C log a + sum_i nc_i
    log(1 - g_i a)`` (``C`` its weighted clicks, ``nc_i`` the unclicked impressions at examination
    ``g_i``), is concave in ``a``, maximal at 0 without clicks, at 1 where ``C >= sum_i nc_i g_i / (1 -
    g_i)``, otherwise where ``C = sum_i nc_i g_i a / (1 - g_i a)`` (Newton's method, bracketed). The step
    sets every attractiveness to its best value given ``gamma`` and takes EM's update of the examination
    there. Its output and its log-likelihood, taken at those best values (the most any attractiveness
    reaches with this examination, the profile likelihood), depend on ``gamma`` alone (``alpha`` is where
    Newton starts); each part raises the likelihood (a conditional maximum, then EM), so a step never
    lowers it, and its fixed points are EM's (both parts stand still exactly where EM does). SQUAREM's
    stop rule is unchanged: the parameters (attractiveness and examination) and the likelihood together.
    Compiled where the E-step is (``sums`` is the compiled one), NumPy otherwise. The function returns
    the best attractiveness, the examination's E-step sums there (for the M-step) and the weighted
    log-likelihood there (``with_ll``)."""
    if sums is _pbm_sums_numpy:
        return lambda alpha, gamma, with_ll: _pbm_conditional_numpy(data, alpha, gamma, with_ll)
    numba = _jit.load_numba()
    kernel = _jit.compile_kernel(_pbm_conditional_blocks, {"prange": numba.prange}, "pbm_conditional_blocks",
                                 parallel=True)
    n_pairs = data.n_pair.size
    starts = np.zeros(n_pairs + 1, dtype=np.int64)
    np.cumsum(np.bincount(data.u, minlength=n_pairs), out=starts[1:])
    bounds = np.unique(np.searchsorted(starts, np.linspace(0, data.u.size, _BLOCKS + 1), side="left"))
    bounds[0], bounds[-1] = 0, n_pairs

    def conditional(alpha: Any, gamma: Any, with_ll: bool) -> tuple[Any, Any, float]:
        best = np.empty(n_pairs)
        blocks = np.zeros((bounds.size - 1, gamma.size))
        ll = np.zeros(bounds.size - 1)
        with np.errstate(divide="ignore"):  # log 0 = -inf only meets the clip at log(1e-12)
            log_gamma = np.log(gamma)
            odds = gamma / np.maximum(1.0 - gamma, _EPS)
        kernel(starts, bounds, data.r, data.c, data.n, alpha, gamma, log_gamma, odds, best, blocks, ll,
               with_ll)
        sum_e = np.zeros(gamma.size)
        for row in blocks:  # in block order: the same sums whatever the threads
            sum_e += row
        return best, sum_e, float(ll.sum()) if with_ll else 0.0

    return conditional


def _pbm_sums_function(use_numba: bool | None, u: Any, n_pairs: int) -> Callable[..., float]:
    if use_numba is not False and _jit.load_numba() is not None:
        return _pbm_sums_compiled(u, n_pairs)
    if use_numba:
        raise ValueError(f"pbm: numba is not available ({_jit.failure()})")
    return _pbm_sums_numpy
