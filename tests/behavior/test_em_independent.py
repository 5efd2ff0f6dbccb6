"""The EM fits against independent implementations written here from the published model definitions
(Chuklin, Markov & de Rijke 2015, ch. 3-4; Chapelle & Zhang 2009), slow pure-Python loops at small n:

* PBM: one impression at a time, the closed-form posteriors of P(E = 1 | C) and P(A = 1 | C);
* DBN: the posteriors by brute force, enumerating every hidden (E, A, S) configuration of a served list
  with its joint probability under the model (no forward-backward recursion at all).

Both run a fixed number of iterations (tolerance 0) from the same start and must agree to 1e-9.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ndcg_labeling.behavior.click_models import pbm
from ndcg_labeling.behavior.counts import SessionPatterns, cells_from_impressions
from ndcg_labeling.behavior.dbn import dbn
from ndcg_labeling.metrics import numba_available

ITER = 12


def pbm_reference(pair, position, clicked, weight, n_pairs, k, iterations):  # noqa: ANN001, ANN201
    # the documented start: gamma from the position CTRs relative to the top (gamma_1 = 1 fixes the PBM's
    # scale), alpha = clicks / expected examinations, both clipped away from 0 and 1
    ctr = [sum(w * c for r2, c, w in zip(position, clicked, weight, strict=True) if r2 == r)
           / sum(w for r2, w in zip(position, weight, strict=True) if r2 == r) for r in range(1, k + 1)]
    gamma = [1.0] + [min(1 - 1e-6, max(1e-6, ctr[r] / ctr[0])) for r in range(1, k)]
    alpha = []
    for v in range(n_pairs):
        clicks = sum(w * c for u, c, w in zip(pair, clicked, weight, strict=True) if u == v)
        seen = sum(w * gamma[r - 1] for u, r, w in zip(pair, position, weight, strict=True) if u == v)
        alpha.append(min(1 - 1e-6, max(1e-6, clicks / seen)))
    for _ in range(iterations):
        a_num, a_den = [0.0] * n_pairs, [0.0] * n_pairs
        g_num, g_den = [0.0] * k, [0.0] * k
        for u, r, c, w in zip(pair, position, clicked, weight, strict=True):
            a, g = alpha[u], gamma[r - 1]
            if c:
                pa = pe = 1.0
            else:
                pa = a * (1 - g) / (1 - g * a)
                pe = g * (1 - a) / (1 - g * a)
            a_num[u] += w * pa
            a_den[u] += w
            g_num[r - 1] += w * pe
            g_den[r - 1] += w
        alpha = [a_num[u] / a_den[u] if a_den[u] else alpha[u] for u in range(n_pairs)]
        gamma = [1.0] + [g_num[r] / g_den[r] if g_den[r] else gamma[r] for r in range(1, k)]
    return np.array(alpha), np.array(gamma)


def small_log_and_reference(seed: int, iterations: int):  # noqa: ANN201
    """3,000 weighted impressions of 30 pairs at 5 positions, and the reference EM's (alpha, gamma) after
    ``iterations`` iterations."""
    rng = np.random.default_rng(seed)
    n, n_pairs, k = 3000, 30, 5
    pair = rng.integers(0, n_pairs, n)
    position = rng.integers(1, k + 1, n)
    clicked = (rng.random(n) < 0.6 ** position * (0.2 + 0.8 * (pair % 5) / 5)).astype(int)
    weight = 0.5 ** rng.uniform(0, 3, n)
    return pair, position, clicked, weight, pbm_reference(pair.tolist(), position.tolist(), clicked.tolist(),
                                                          weight.tolist(), n_pairs, k, iterations)


def test_pbm_em_matches_the_per_impression_reference():
    pair, position, clicked, weight, (ref_alpha, ref_gamma) = small_log_and_reference(11, ITER)
    for use_numba in (False, True) if numba_available() else (False,):
        fit = pbm(cells_from_impressions(pair, position, clicked, weight=weight), tol=0.0, ll_tol=-np.inf,
                  max_iter=ITER, use_numba=use_numba, accelerate=False)
        assert fit.parameters["iterations"] == ITER
        np.testing.assert_allclose(fit.score, ref_alpha, rtol=0, atol=1e-9)
        np.testing.assert_allclose(fit.position_bias, ref_gamma, rtol=0, atol=1e-9)


def test_pbm_stops_when_the_likelihood_stops_rising():
    """The documented stopping rule: the log-likelihood per impression (computed here) rose by less than
    ll_tol in the last iteration, and it rose at every iteration before (EM never lowers it)."""
    rng = np.random.default_rng(3)
    n = 4000
    pair, position = rng.integers(0, 20, n), rng.integers(1, 6, n)
    clicked = (rng.random(n) < 0.7 ** position * (0.3 + 0.7 * (pair % 4) / 4)).astype(int)
    cells = cells_from_impressions(pair, position, clicked)

    def loglik(alpha: np.ndarray, gamma: np.ndarray) -> float:
        p = alpha[pair] * gamma[position - 1]
        return float(np.mean(clicked * np.log(p) + (1 - clicked) * np.log(1 - p)))

    fit = pbm(cells, ll_tol=1e-7, accelerate=False)
    assert fit.parameters["converged"] and fit.parameters["iterations"] < 2000
    before = pbm(cells, tol=0.0, ll_tol=-np.inf, max_iter=int(fit.parameters["iterations"]) - 2, accelerate=False)
    last = pbm(cells, tol=0.0, ll_tol=-np.inf, max_iter=int(fit.parameters["iterations"]) - 1, accelerate=False)
    gain = loglik(last.score, last.position_bias) - loglik(before.score, before.position_bias)
    assert 0 <= gain < 1e-7
    np.testing.assert_allclose(fit.score, last.score, atol=1e-12)


def test_squarem_reaches_the_em_fixed_point_of_the_reference_in_fewer_e_steps():
    """The default fit (EM accelerated by SQUAREM) ends where the independent per-impression EM ends when
    run long enough (400 iterations here: its fixed point, changes below 1e-12), and spends far fewer
    E-steps than plain EM to meet the same stopping rule; its log-likelihood is the plain fit's or higher."""
    pair, position, clicked, weight, (ref_alpha, ref_gamma) = small_log_and_reference(17, 400)
    cells = cells_from_impressions(pair, position, clicked, weight=weight)
    for use_numba in (False, True) if numba_available() else (False,):
        fast = pbm(cells, tol=1e-10, ll_tol=1e-14, use_numba=use_numba)
        plain = pbm(cells, tol=1e-10, ll_tol=1e-14, use_numba=use_numba, accelerate=False)
        assert fast.parameters["converged"] and fast.parameters["accelerator"] == "squarem"
        np.testing.assert_allclose(fast.score, ref_alpha, rtol=0, atol=1e-6)
        np.testing.assert_allclose(fast.position_bias, ref_gamma, rtol=0, atol=1e-6)
        assert fast.parameters["iterations"] * 3 < plain.parameters["iterations"]
        assert fast.parameters["log_likelihood"] >= plain.parameters["log_likelihood"] - 1e-9


def _configs(clicks: tuple[int, ...]) -> list[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
    """Every (E, A, S) with E * A equal to the clicks and S = 0 where there is no click."""
    k = len(clicks)
    out = []
    for e, a, s in itertools.product(itertools.product((0, 1), repeat=k), repeat=3):
        if all(e[r] * a[r] == clicks[r] and (clicks[r] or not s[r]) for r in range(k)):
            out.append((e, a, s))
    return out


def _joint(pairs, e, a, s, alpha, sigma, gamma) -> float:  # noqa: ANN001
    """P(E, A, S) under the DBN (the clicks are implied by E and A)."""
    p = 1.0
    for r, u in enumerate(pairs):
        if r == 0:
            p *= 1.0 if e[0] == 1 else 0.0
        else:
            can = e[r - 1] == 1 and s[r - 1] == 0
            p *= (gamma if e[r] else 1 - gamma) if can else (0.0 if e[r] else 1.0)
        p *= alpha[u] if a[r] else 1 - alpha[u]
        if e[r] * a[r]:
            p *= sigma[u] if s[r] else 1 - sigma[u]
    return p


def dbn_reference(sessions, weights, n_pairs, iterations):  # noqa: ANN001, ANN201
    alpha, sigma, gamma = [0.5] * n_pairs, [0.5] * n_pairs, 0.9
    for _ in range(iterations):
        a_num, a_den = [0.0] * n_pairs, [0.0] * n_pairs
        s_num, s_den = [0.0] * n_pairs, [0.0] * n_pairs
        t_num = t_den = 0.0
        for (pairs, clicks), w in zip(sessions, weights, strict=True):
            configs = _configs(clicks)
            probs = [_joint(pairs, e, a, s, alpha, sigma, gamma) for e, a, s in configs]
            total = sum(probs)
            for r, u in enumerate(pairs):
                a_num[u] += w * sum(p for p, (_, a, _) in zip(probs, configs, strict=True) if a[r]) / total
                a_den[u] += w
                if clicks[r]:
                    s_num[u] += w * sum(p for p, (_, _, s) in zip(probs, configs, strict=True) if s[r]) / total
                    s_den[u] += w
                if r + 1 < len(pairs):
                    t_den += w * sum(p for p, (e, _, s) in zip(probs, configs, strict=True)
                                     if e[r] and not s[r]) / total
                    t_num += w * sum(p for p, (e, _, s) in zip(probs, configs, strict=True)
                                     if e[r] and not s[r] and e[r + 1]) / total
        alpha = [a_num[u] / a_den[u] if a_den[u] else alpha[u] for u in range(n_pairs)]
        sigma = [s_num[u] / s_den[u] if s_den[u] else sigma[u] for u in range(n_pairs)]
        gamma = t_num / t_den
    return np.array(alpha), np.array(sigma), gamma


@pytest.mark.parametrize("use_numba", [False, True])
def test_dbn_em_matches_the_brute_force_reference(use_numba):
    if use_numba and not numba_available():
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(5)
    n_queries, k = 3, 3
    true_a = rng.uniform(0.1, 0.9, n_queries * k)
    true_s = rng.uniform(0.1, 0.9, n_queries * k)
    sessions, weights = [], []
    for _ in range(400):
        q = int(rng.integers(n_queries))
        pairs = tuple(int(q * k + d) for d in rng.permutation(k))
        clicks, examined = [], True
        for u in pairs:
            c = int(examined and rng.random() < true_a[u])
            clicks.append(c)
            examined = examined and not (c and rng.random() < true_s[u]) and rng.random() < 0.75
        sessions.append((pairs, tuple(clicks)))
        weights.append(float(0.5 ** rng.uniform(0, 2)))
    ref_alpha, ref_sigma, ref_gamma = dbn_reference(sessions, weights, n_queries * k, ITER)
    patterns = SessionPatterns(pairs=np.array([p for p, _ in sessions], dtype=np.int64),
                               clicks=np.array([c for _, c in sessions], dtype=np.int8),
                               weight=np.array(weights), count=np.ones(len(sessions), dtype=np.int64))
    fit = dbn(patterns, n_queries * k, tol=0.0, ll_tol=-np.inf, max_iter=ITER, use_numba=use_numba)
    assert fit.parameters["iterations"] == ITER
    np.testing.assert_allclose(fit.attractiveness, ref_alpha, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fit.satisfaction, ref_sigma, rtol=0, atol=1e-9)
    assert abs(float(fit.parameters["gamma"]) - ref_gamma) <= 1e-6  # stored rounded to 6 digits


def test_dbn_with_a_shorter_list_and_fixed_gamma_matches_the_reference():
    """Lists shorter than the widest one (padding -1) and a fixed continuation probability."""
    sessions = [((0, 1, 2), (1, 0, 1)), ((2, 0), (0, 0)), ((1, 2, 0), (0, 1, 0)), ((0, 2), (1, 1)), ((1,), (0,))]
    weights = [1.0, 2.0, 0.5, 1.0, 1.5]
    patterns = SessionPatterns(pairs=np.array([list(p) + [-1] * (3 - len(p)) for p, _ in sessions], dtype=np.int64),
                               clicks=np.array([list(c) + [0] * (3 - len(c)) for _, c in sessions], dtype=np.int8),
                               weight=np.array(weights), count=np.ones(5, dtype=np.int64))
    fit = dbn(patterns, 3, gamma=0.9, tol=0.0, ll_tol=-np.inf, max_iter=1, use_numba=False)
    alpha, sigma = [0.5] * 3, [0.5] * 3
    a_num, a_den, s_num, s_den = [0.0] * 3, [0.0] * 3, [0.0] * 3, [0.0] * 3
    for (pairs, clicks), w in zip(sessions, weights, strict=True):
        configs = _configs(clicks)
        probs = [_joint(pairs, e, a, s, alpha, sigma, 0.9) for e, a, s in configs]
        for r, u in enumerate(pairs):
            a_num[u] += w * sum(p for p, (_, a, _) in zip(probs, configs, strict=True) if a[r]) / sum(probs)
            a_den[u] += w
            if clicks[r]:
                s_num[u] += w * sum(p for p, (_, _, s) in zip(probs, configs, strict=True) if s[r]) / sum(probs)
                s_den[u] += w
    np.testing.assert_allclose(fit.attractiveness, np.array(a_num) / np.array(a_den), atol=1e-12)
    with np.errstate(invalid="ignore"):  # a pair never clicked has no satisfaction (NaN on both sides)
        np.testing.assert_allclose(fit.satisfaction, np.array(s_num) / np.array(s_den), atol=1e-12)
    assert fit.parameters["gamma"] == 0.9


@pytest.mark.parametrize("use_numba", [False, True])
def test_dbn_log_likelihood_is_the_enumerated_probability_of_the_clicks(use_numba):
    """The stopping rule's log-likelihood: sum of w * log P(clicks), P by enumerating every hidden state."""
    if use_numba and not numba_available():
        pytest.skip("numba is not installed")
    from ndcg_labeling.behavior.dbn import _sums_function

    sessions = [((0, 1, 2), (1, 0, 1)), ((2, 0, 1), (0, 0, 0)), ((1, 2, 0), (0, 1, 0)), ((0, 2, 1), (1, 1, 0)),
                ((1, 0), (0, 1)), ((2,), (1,))]
    weights = [1.0, 2.0, 0.5, 1.0, 1.5, 0.7]
    alpha, sigma, gamma = [0.3, 0.6, 0.8], [0.2, 0.5, 0.9], 0.7
    want = sum(w * np.log(sum(_joint(p, e, a, s, alpha, sigma, gamma) for e, a, s in _configs(c)))
               for (p, c), w in zip(sessions, weights, strict=True))
    patterns = SessionPatterns(pairs=np.array([list(p) + [-1] * (3 - len(p)) for p, _ in sessions], dtype=np.int64),
                               clicks=np.array([list(c) + [0] * (3 - len(c)) for _, c in sessions], dtype=np.int8),
                               weight=np.array(weights), count=np.ones(len(sessions), dtype=np.int64))
    sums = _sums_function(use_numba)
    _num, _den, ll = sums(patterns, np.array(alpha), np.array(sigma), gamma, np.zeros(3), np.zeros(3), np.zeros(3))
    assert ll == pytest.approx(want, abs=1e-12)


def test_pbm_skipping_the_log_likelihood_changes_nothing(monkeypatch):
    """The log-likelihood is computed only where the EM gain bound does not already clear ll_tol; with the
    bound switched off (computed at every iteration, as the stopping rule reads) the fit is bit for bit
    the same: the same iterations, scores, examination curve and reported log-likelihood."""
    import ndcg_labeling.behavior.click_models as cm

    rng = np.random.default_rng(5)
    n = 60_000
    pair, position = rng.integers(0, 400, n), rng.integers(1, 11, n)
    clicked = (rng.random(n) < 0.8 ** position * (0.1 + 0.8 * (pair % 7) / 7)).astype(int)
    cells = cells_from_impressions(pair, position, clicked, weight=0.5 ** rng.uniform(0, 2, n))
    for use_numba in (False, True) if numba_available() else (False,):
        fast = pbm(cells, use_numba=use_numba, accelerate=False)
        with monkeypatch.context() as m:
            m.setattr(cm, "_gain_bound", lambda *args: -np.inf)
            every = pbm(cells, use_numba=use_numba, accelerate=False)
        assert fast.parameters == every.parameters and fast.parameters["iterations"] > 10
        assert np.array_equal(fast.score, every.score) and np.array_equal(fast.position_bias, every.position_bias)
