"""tau_AP and the significantly different pairs out of order (ndcg_labeling/budget/orderings.py), against hand
computations from the definition and scipy's paired t-test."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau, ttest_rel

from ndcg_labeling.budget.orderings import significant_pairs, significant_pairs_out_of_order, tau_ap

TRUTH = np.array([4.0, 3.0, 2.0, 1.0])  # A > B > C > D


def test_tau_ap_hand_checked() -> None:
    assert tau_ap(TRUTH, TRUTH) == pytest.approx(1.0)
    assert tau_ap(TRUTH, -TRUTH) == pytest.approx(-1.0)
    # B A C D: C(2) = 0 (B above A is wrong), C(3) = 2, C(4) = 3 -> 2/3 * (0 + 1 + 1) - 1 = 1/3
    assert tau_ap(TRUTH, [3.0, 4.0, 2.0, 1.0]) == pytest.approx(1 / 3)
    # A B D C: C(2) = 1, C(3) = 2 (D below A and B), C(4) = 2 of 3 -> 2/3 * (1 + 1 + 2/3) - 1 = 7/9
    assert tau_ap(TRUTH, [4.0, 3.0, 1.0, 2.0]) == pytest.approx(7 / 9)
    # Kendall's tau is the same 2/3 for both single swaps: tau_AP weighs the top one more
    assert kendalltau(TRUTH, [3.0, 4.0, 2.0, 1.0])[0] == pytest.approx(kendalltau(TRUTH, [4.0, 3.0, 1.0, 2.0])[0])


def test_tau_ap_ties_in_the_estimate_count_against_it() -> None:
    assert tau_ap(TRUTH, [1.0, 1.0, 1.0, 1.0]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="tau_ap"):
        tau_ap([1.0], [1.0])


def test_significant_pairs_against_scipy_and_holm() -> None:
    rng = np.random.default_rng(4)
    per_query = rng.normal(0.0, 0.1, (5, 30)) + np.array([0.0, 0.02, 0.08, 0.12, 0.3])[:, None]
    pairs, sign = significant_pairs(per_query)
    a, b = np.triu_indices(5, k=1)
    p = np.array([ttest_rel(per_query[i], per_query[j]).pvalue for i, j in zip(a, b, strict=True)])
    order = np.argsort(p)
    holm = np.maximum.accumulate(np.minimum(1.0, (p.size - np.arange(p.size)) * p[order]))
    expected = sorted((int(a[i]), int(b[i])) for i, adj in zip(order, holm, strict=True) if adj < 0.05)
    assert sorted(map(tuple, pairs.tolist())) == expected and len(expected) >= 3
    means = per_query.mean(axis=1)
    assert significant_pairs_out_of_order(pairs, sign, means) == 0
    swapped = means.copy()
    swapped[[3, 4]] = swapped[[4, 3]]  # 3 vs 4 is far apart: significant
    assert significant_pairs_out_of_order(pairs, sign, swapped) >= 1
