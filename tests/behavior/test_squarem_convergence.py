"""The PBM fit accelerated by SQUAREM ends where plain EM ends, on a sparse log whose maximum has values on
the bounds (issue 46, item 14): SQUAREM over EM's own step (the map where the item was found) against
plain EM at its default rule, and the default fit (SQUAREM over the conditional step) against plain EM
run on to its fixed point.

600 queries x 10 documents served 2,000 times in random order (each pair seen about 3 times, so many
attractiveness values sit at 0 or 1 at the maximum) and 40 pairs of grade 3 seen only at position 10
(300 impressions each), clicks from the PBM with the known examination and attractiveness of
behavior_sim, numpy seed 42. Before the fix a jump was clipped into [1e-10, 1]: a value clipped to 1 stays
there under EM, and the stop rule fired on a small gain of one jump: the fit stopped 4.6e-6 per
impression below plain EM's log-likelihood with 76 pairs off by more than 0.01 (up to 0.094). Clipping
the jump again fails both tests.
"""

from __future__ import annotations

import numpy as np
from behavior_sim import EXAMINATION, N_DOCS, PBM_ATTRACTIVENESS, true_grades

from ndcg_labeling.behavior.click_models import pbm
from ndcg_labeling.behavior.counts import cells_from_impressions

N_QUERIES, N_REQUESTS, N_TAIL, TAIL_IMPRESSIONS = 600, 2000, 40, 300


def sparse_log_with_a_tail(seed: int = 42) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = true_grades(rng, N_QUERIES)
    query = rng.integers(0, N_QUERIES, N_REQUESTS)
    order = np.argsort(rng.random((N_REQUESTS, N_DOCS)), axis=1)
    pair = (query[:, None] * N_DOCS + order).ravel()
    position = np.tile(np.arange(1, N_DOCS + 1), N_REQUESTS)
    tail = N_QUERIES * N_DOCS + np.repeat(np.arange(N_TAIL), TAIL_IMPRESSIONS)  # seen only at position 10
    pair = np.concatenate([pair, tail])
    position = np.concatenate([position, np.full(tail.size, N_DOCS)])
    grade = np.concatenate([truth, np.full(N_TAIL, 3)])
    clicked = ((rng.random(pair.size) < EXAMINATION[position - 1])
               & (rng.random(pair.size) < PBM_ATTRACTIVENESS[grade[pair]])).astype(np.int64)
    return pair, position, clicked


def log_likelihood(pair: np.ndarray, position: np.ndarray, clicked: np.ndarray, alpha: np.ndarray,
                   gamma: np.ndarray) -> float:
    """Mean log P(click) per impression under the PBM, computed here from the model's definition."""
    p = np.clip(alpha[pair] * gamma[position - 1], 1e-12, 1 - 1e-12)
    return float(np.mean(np.where(clicked == 1, np.log(p), np.log1p(-p))))


def test_squarem_over_em_steps_reaches_plain_em():
    """The stop rule and the guard at the bounds (squarem.py), on EM's own step: the map of item 14."""
    pair, position, clicked = sparse_log_with_a_tail()
    cells = cells_from_impressions(pair, position, clicked)
    fast = pbm(cells, use_numba=False, conditional=False)
    plain = pbm(cells, use_numba=False, accelerate=False)
    assert fast.parameters["step"] == "em"
    _assert_reaches(pair, position, clicked, fast, plain)
    # and still an accelerator: fewer E-steps than plain EM
    assert fast.parameters["iterations"] * 2 < plain.parameters["iterations"]


def test_default_pbm_fit_reaches_the_em_fixed_point():
    """The default fit (SQUAREM over the conditional step) against plain EM run on to its fixed point (its
    likelihood rule at 1e-13: 1,611 steps, every pair within 0.001 of 20,000 steps; at the default rule
    plain EM stops after 627 steps with pairs still 0.026 short of it)."""
    pair, position, clicked = sparse_log_with_a_tail()
    cells = cells_from_impressions(pair, position, clicked)
    fast = pbm(cells, use_numba=False)
    plain = pbm(cells, use_numba=False, accelerate=False, ll_tol=1e-13, max_iter=20_000)
    assert fast.parameters["step"] == "conditional"
    _assert_reaches(pair, position, clicked, fast, plain)
    assert fast.parameters["iterations"] * 5 < plain.parameters["iterations"]


def _assert_reaches(pair: np.ndarray, position: np.ndarray, clicked: np.ndarray, fast, plain) -> None:  # noqa: ANN001
    assert fast.parameters["converged"] and plain.parameters["converged"]
    assert fast.parameters["accelerator"] == "squarem" and fast.parameters["extrapolations_kept"] > 0
    ll_fast = log_likelihood(pair, position, clicked, fast.score, fast.position_bias)
    ll_plain = log_likelihood(pair, position, clicked, plain.score, plain.position_bias)
    assert ll_fast >= ll_plain - 1e-9, (ll_fast, ll_plain)
    off = np.abs(fast.score - plain.score)
    assert int(np.sum(off > 0.01)) == 0, f"{int(np.sum(off > 0.01))} pairs off, up to {np.nanmax(off):.3f}"
    np.testing.assert_allclose(fast.position_bias, plain.position_bias, atol=0.01)
    # the pairs seen only at position 10: none frozen at 1 where plain EM has them inside
    tail = slice(N_QUERIES * N_DOCS, None)
    assert not np.any((fast.score[tail] >= 1.0) & (plain.score[tail] < 0.99))
