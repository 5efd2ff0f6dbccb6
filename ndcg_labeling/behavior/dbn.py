"""The dynamic Bayesian network click model (Chapelle & Zhang 2009) fitted by EM.

Names as in Chuklin, Markov & de Rijke (2015), section 3.8 and chapter 4: at position ``r`` of a served
list, ``E_r`` examination, ``A_r`` attractiveness, ``C_r = E_r A_r`` the click, ``S_r`` satisfaction:

* ``E_1 = 1``; ``P(A_r = 1) = alpha[u_r]``; ``P(S_r = 1 | C_r = 1) = sigma[u_r]``, ``S_r = 0`` without a click;
* ``P(E_{r+1} = 1 | E_r = 1, S_r = 0) = gamma`` (the continuation probability); no examination after
  a satisfied click or after an unexamined position.

E-step (exact, per served list, with ``l`` the last clicked position, ``Z_r = P(no click at r.. | E_r = 1)
= (1 - alpha_r)(1 - gamma + gamma Z_{r+1})`` and ``Z_{K+1} = 1``):

* after the last click, ``P(E_r = 1 | C) = e * prod_{j=l+1}^{r-1} (1 - alpha_j) gamma * Z_r / ((1 - e) + e Z_{l+1})``
  with ``e = gamma (1 - sigma_l)`` (``e = 1`` and ``l = 0`` for a list without clicks); ``E_r = 1`` up to ``l``;
* ``P(A_r = 1 | C) = 1`` if clicked, ``alpha_r (1 - P(E_r = 1 | C))`` otherwise;
* ``P(S_l = 1 | C) = sigma_l / (sigma_l + (1 - sigma_l)(1 - gamma + gamma Z_{l+1}))``; earlier clicks were not satisfying.

M-step: ``alpha[u]`` = weighted mean of ``P(A = 1 | C)`` over the impressions of ``u``; ``sigma[u]`` = weighted
mean of ``P(S = 1 | C)`` over the clicks on ``u``; ``gamma`` = expected transitions ``E_r = 1, S_r = 0 ->
E_{r+1} = 1`` over expected ``E_r = 1, S_r = 0`` (positions whose next position shows a result).

The score of a pair is its relevance ``alpha * sigma`` (Chapelle & Zhang). Stops as the PBM: no parameter
moved by ``tol`` or the log-likelihood per served list rose by less than ``ll_tol``
(:data:`~ndcg_labeling.behavior.click_models.LL_TOLERANCE`). Start: alpha = sigma = 0.5, gamma = 0.9.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ndcg_labeling import _jit
from ndcg_labeling.behavior.click_models import LL_TOLERANCE, MAX_ITER, TOLERANCE, ModelFit
from ndcg_labeling.behavior.counts import SessionPatterns

_EPS = 1e-12
_TINY = 1e-300


def _sums_numpy(p: SessionPatterns, alpha: NDArray[np.float64], sigma: NDArray[np.float64], gamma: float,
                sum_a: NDArray[np.float64], sum_s: NDArray[np.float64], sum_e: NDArray[np.float64]) -> tuple[
                    float, float, float]:
    """The E-step in NumPy, vectorized over served lists: adds the weighted posteriors ``P(A=1|C)`` per
    pair to ``sum_a``, ``P(S=1|C)`` per pair to ``sum_s``, ``P(E=1|C)`` per position to ``sum_e``;
    returns the weighted transition sums (numerator, denominator) of the gamma update and the weighted
    log-likelihood of the clicks."""
    valid = p.pairs >= 0
    s_n, k = p.pairs.shape
    idx = np.where(valid, p.pairs, 0)
    a = np.where(valid, alpha[idx], 0.0)
    sg = np.where(valid, sigma[idx], 0.0)
    clicks = p.clicks.astype(bool) & valid
    rows = np.arange(s_n)
    any_click = clicks.any(axis=1)
    last = np.where(any_click, k - 1 - np.argmax(clicks[:, ::-1], axis=1), -1)
    z = np.ones((s_n, k + 1))
    for r in range(k - 1, -1, -1):
        z[:, r] = (1.0 - a[:, r]) * (1.0 - gamma + gamma * z[:, r + 1])
    start = last + 1
    sig_l = np.where(any_click, sg[rows, np.maximum(last, 0)], 0.0)
    e = np.where(any_click, gamma * (1.0 - sig_l), 1.0)
    norm = np.maximum((1.0 - e) + e * z[rows, start], _EPS)
    post_e = np.zeros((s_n, k))
    run = e.copy()  # e * prod_{j=start}^{r-1} (1 - a_j) gamma
    for r in range(k):
        before = r < start
        post_e[:, r] = np.where(before, 1.0, run * z[:, r] / norm)
        run = np.where(before, run, run * (1.0 - a[:, r]) * gamma)
    post_e = np.where(valid, post_e, 0.0)
    post_a = np.where(clicks, 1.0, a * (1.0 - post_e))
    d_last = np.maximum(sig_l + (1.0 - sig_l) * (1.0 - gamma + gamma * z[rows, start]), _EPS)
    post_s = np.zeros((s_n, k))
    post_s[rows[any_click], last[any_click]] = (sig_l / d_last)[any_click]
    nxt = np.zeros((s_n, k), dtype=bool)  # transitions r -> r + 1 where r + 1 shows a result
    nxt[:, :-1] = valid[:, 1:]
    pos = np.arange(k)[None, :]
    w = p.weight[:, None]
    lcol = last[:, None]
    num = np.where(pos < lcol, 1.0, 0.0)
    den = num.copy()
    s_free = ((1.0 - sig_l) / d_last)[:, None]
    z_next = z[:, 1:]
    num = np.where(pos == lcol, s_free * gamma * z_next, num)
    den = np.where(pos == lcol, s_free * (1.0 - gamma + gamma * z_next), den)
    e_next = np.concatenate([post_e[:, 1:], np.zeros((s_n, 1))], axis=1)
    num = np.where(pos > lcol, e_next, num)
    den = np.where(pos > lcol, post_e, den)
    wv = np.where(valid, w, 0.0)
    sum_a += np.bincount(idx.ravel(), weights=(wv * post_a).ravel(), minlength=sum_a.size)
    sum_s += np.bincount(idx.ravel(), weights=(wv * post_s).ravel(), minlength=sum_s.size)
    sum_e += np.sum(wv * post_e, axis=0)
    # log P(C) of each list: before the last click every position was examined and passed on (clicked and
    # not satisfied, or not clicked), then the last click and nothing after it; no click at all: Z_1
    step = np.where(clicks, a * (1.0 - sg) * gamma, (1.0 - a) * gamma)
    before_last = np.sum(np.where(pos < lcol, np.log(np.maximum(step, _TINY)), 0.0), axis=1)
    a_last = a[rows, np.maximum(last, 0)]
    lp = np.where(any_click, before_last + np.log(np.maximum(a_last, _TINY)) + np.log(d_last),
                  np.log(np.maximum(z[:, 0], _TINY)))
    return (float(np.sum(np.where(nxt, num, 0.0) * w)), float(np.sum(np.where(nxt, den, 0.0) * w)),
            float(np.sum(p.weight * lp)))


def _sums_loop(pairs: Any, clicks: Any, weight: Any, alpha: Any, sigma: Any, gamma: float, sum_a: Any, sum_s: Any,
               sum_e: Any) -> tuple[float, float, float]:  # pragma: no cover - compiled by numba; a test runs it in Python too
    """The same E-step as :func:`_sums_numpy`, one served list at a time (the body numba compiles)."""
    n_s, k = pairs.shape
    z = np.ones(k + 1)
    pe = np.zeros(k + 1)
    num = 0.0
    den = 0.0
    ll = 0.0
    for s in range(n_s):
        w = weight[s]
        last = -1
        for r in range(k):
            if pairs[s, r] >= 0 and clicks[s, r] != 0:
                last = r
        z[k] = 1.0
        for r in range(k - 1, -1, -1):
            a = alpha[pairs[s, r]] if pairs[s, r] >= 0 else 0.0
            z[r] = (1.0 - a) * (1.0 - gamma + gamma * z[r + 1])
        start = last + 1
        sl = sigma[pairs[s, last]] if last >= 0 else 0.0
        e = gamma * (1.0 - sl) if last >= 0 else 1.0
        norm = max((1.0 - e) + e * z[start], 1e-12)
        d_last = max(sl + (1.0 - sl) * (1.0 - gamma + gamma * z[start]), 1e-12)
        run = e
        for r in range(k):
            u = pairs[s, r]
            if r < start:
                pe[r] = 1.0
            else:
                pe[r] = run * z[r] / norm
                run = run * (1.0 - (alpha[u] if u >= 0 else 0.0)) * gamma
            if u < 0:
                pe[r] = 0.0
        pe[k] = 0.0
        if last < 0:
            ll += w * np.log(max(z[0], 1e-300))
        else:
            lp = np.log(max(alpha[pairs[s, last]], 1e-300)) + np.log(d_last)
            for r in range(last):
                u = pairs[s, r]
                a = alpha[u] if u >= 0 else 0.0
                step = a * (1.0 - sigma[u]) * gamma if clicks[s, r] != 0 and u >= 0 else (1.0 - a) * gamma
                lp += np.log(max(step, 1e-300))
            ll += w * lp
        for r in range(k):
            u = pairs[s, r]
            if u < 0:
                continue
            sum_e[r] += w * pe[r]
            if clicks[s, r] != 0:
                sum_a[u] += w
                if r == last:
                    sum_s[u] += w * sl / d_last
            else:
                sum_a[u] += w * alpha[u] * (1.0 - pe[r])
            if r + 1 < k and pairs[s, r + 1] >= 0:
                if r < last:
                    num += w
                    den += w
                elif r == last:
                    free = (1.0 - sl) / d_last
                    num += w * free * gamma * z[r + 1]
                    den += w * free * (1.0 - gamma + gamma * z[r + 1])
                else:
                    num += w * pe[r + 1]
                    den += w * pe[r]
    return num, den, ll


def _sums_function(use_numba: bool | None) -> Callable[..., tuple[float, float, float]]:
    """The E-step to use: the compiled loop where numba is available (unless ``use_numba`` is False), else NumPy."""
    if use_numba is not False and _jit.load_numba() is not None:
        compiled = _jit.compile_kernel(_sums_loop, {}, "dbn_sums_loop")

        def run(p: SessionPatterns, alpha: Any, sigma: Any, gamma: float, sa: Any, ss: Any, se: Any) -> tuple[
                float, float, float]:
            out: tuple[float, float, float] = compiled(p.pairs, p.clicks, p.weight, alpha, sigma, gamma, sa, ss, se)
            return out

        return run
    if use_numba:
        raise ValueError(f"dbn: numba is not available ({_jit.failure()})")
    return _sums_numpy


def dbn(patterns: SessionPatterns, n_pairs: int, *, gamma: float | None = None, tol: float = TOLERANCE,
        max_iter: int = MAX_ITER, ll_tol: float = LL_TOLERANCE, use_numba: bool | None = None) -> ModelFit:
    """Fit the DBN by EM on ``patterns`` (see the module docstring); ``gamma`` fixed when given, else
    estimated. ``position_bias`` is the weighted mean posterior examination per position.
    ``use_numba``: None (the compiled E-step where numba is available), True or False."""
    if patterns.pairs.shape != patterns.clicks.shape or patterns.pairs.shape[0] != patterns.weight.size:
        raise ValueError("dbn: pairs, clicks and weight must describe the same served lists")
    sums = _sums_function(use_numba)
    valid = patterns.pairs >= 0
    idx = np.where(valid, patterns.pairs, 0).ravel()
    w_cell = np.where(valid, patterns.weight[:, None], 0.0).ravel()
    clicked = (patterns.clicks.astype(bool) & valid).ravel()
    n_imp = np.bincount(idx, weights=w_cell, minlength=n_pairs)
    n_click = np.bincount(idx, weights=w_cell * clicked, minlength=n_pairs)
    k = patterns.pairs.shape[1]
    w_pos = np.sum(np.where(valid, patterns.weight[:, None], 0.0), axis=0)
    alpha, sigma = np.full(n_pairs, 0.5), np.full(n_pairs, 0.5)
    g = 0.9 if gamma is None else float(gamma)
    converged, it = False, 0
    sum_e = np.zeros(k)
    total, last_ll = max(float(patterns.weight.sum()), _EPS), -np.inf
    for it in range(1, max_iter + 1):  # noqa: B007 - the count is read after the loop
        sum_a, sum_s, sum_e = np.zeros(n_pairs), np.zeros(n_pairs), np.zeros(k)
        num, den, ll = sums(patterns, alpha, sigma, g, sum_a, sum_s, sum_e)
        if it > 1 and ll / total - last_ll < ll_tol:  # the last update gained (almost) nothing: stop
            converged = True
            break
        last_ll = ll / total
        with np.errstate(invalid="ignore", divide="ignore"):
            new_alpha = np.where(n_imp > 0, sum_a / np.maximum(n_imp, _EPS), alpha)
            new_sigma = np.where(n_click > 0, sum_s / np.maximum(n_click, _EPS), sigma)
        new_g = g if gamma is not None or den <= 0 else num / den
        change = max(float(np.max(np.abs(new_alpha - alpha), initial=0.0)),
                     float(np.max(np.abs(new_sigma - sigma), initial=0.0)), abs(new_g - g))
        alpha, sigma, g = new_alpha, new_sigma, new_g
        if change < tol:
            converged = True
            break
    with np.errstate(invalid="ignore", divide="ignore"):
        bias = np.where(w_pos > 0, sum_e / np.maximum(w_pos, _EPS), np.nan)
    seen = n_imp > 0
    score = np.where(seen, alpha * np.where(n_click > 0, sigma, 0.0), np.nan)
    return ModelFit("dbn", score, bias, "examination (mean posterior)",
                    {"iterations": it, "converged": converged, "tolerance": tol, "ll_tolerance": ll_tol,
                     "log_likelihood": round(last_ll, 9), "gamma": round(float(g), 6),
                     "gamma_fitted": gamma is None},
                    attractiveness=np.where(seen, alpha, np.nan), satisfaction=np.where(n_click > 0, sigma, np.nan))
