"""How far a system ordering from partial judgments keeps the ordering of full judgment: Kendall's tau_AP and
the significantly different pairs put out of order.

- :func:`tau_ap`: the AP rank correlation of Yilmaz, Aslam & Robertson ("A new rank correlation coefficient
  for information retrieval", SIGIR 2008), which weighs a swap near the top of the ordering more than one
  near the bottom.
- :func:`significant_pairs_out_of_order`: the decision criterion of the budget benchmark. The pairs of
  systems whose difference under full judgment is significant (two-sided paired t-test over the queries,
  Holm-corrected over all pairs) are the decisions full judgment supports; a budget loses one when its
  estimates order that pair the other way (or tie it).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ndcg_labeling.budget.pool import FloatArray
from ndcg_labeling.stats import holm, paired_ttest_p


def tau_ap(truth: npt.ArrayLike, estimate: npt.ArrayLike) -> float:
    """tau_AP of the ordering by ``estimate`` against the ordering by ``truth`` (both (systems,), higher is
    better).

    With the systems listed best first by ``estimate``, ``C(i)`` is the number of the ``i - 1`` systems above
    the one at position ``i`` that ``truth`` also puts above it, and
    ``tau_AP = 2 / (N - 1) * sum_{i=2..N} C(i) / (i - 1) - 1`` (Yilmaz et al. 2008, eq. 3). It is 1 for the
    same ordering, -1 for the reversed one, and, unlike Kendall's tau, not symmetric: the estimated ordering
    is the one read from the top. Ties in ``estimate`` are listed in the order of ``truth``'s worst first
    (a tie counts against the estimate); ties in ``truth`` count as correctly ordered. Raises ``ValueError``
    for arrays of different shapes or fewer than two systems.
    """
    t = np.asarray(truth, dtype=np.float64)
    e = np.asarray(estimate, dtype=np.float64)
    if t.shape != e.shape or t.ndim != 1 or t.size < 2:
        raise ValueError(f"tau_ap: truth and estimate must be 1-D of the same length >= 2, got {t.shape} and "
                         f"{e.shape}")
    order = np.lexsort((t, -e))  # best first by the estimate; among its ties the truly worse first
    ranked = t[order]
    n = ranked.size
    above_ok = (ranked[:, None] >= ranked[None, :]) & np.tri(n, k=-1, dtype=bool).T  # [j, i]: j above i, j >= i
    c = above_ok.sum(axis=0)[1:]
    return float(2.0 / (n - 1) * np.sum(c / np.arange(1, n)) - 1.0)


def significant_pairs(per_query: npt.ArrayLike, alpha: float = 0.05) -> tuple[npt.NDArray[np.int64], FloatArray]:
    """The pairs of systems that differ significantly: ``(pairs, sign)``, ``pairs`` (m, 2) system indices
    ``a < b`` whose paired t-test over the queries of ``per_query`` (systems, queries) has a Holm-adjusted p
    below ``alpha`` (the family: all ``systems * (systems - 1) / 2`` pairs), ``sign`` (m,) the sign of the mean
    difference ``a - b``."""
    v = np.asarray(per_query, dtype=np.float64)
    a, b = np.triu_indices(v.shape[0], k=1)
    diffs = (v[a] - v[b]).T
    adjusted = holm(paired_ttest_p(diffs))
    keep = np.nan_to_num(adjusted, nan=1.0) < alpha
    return np.stack([a[keep], b[keep]], axis=1).astype(np.int64), np.sign(diffs.mean(axis=0)[keep])


def significant_pairs_out_of_order(pairs: npt.ArrayLike, sign: npt.ArrayLike, estimate: npt.ArrayLike) -> int:
    """How many of the significant ``pairs`` (from :func:`significant_pairs`) ``estimate`` (systems,) orders
    the other way or ties."""
    p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    e = np.asarray(estimate, dtype=np.float64)
    return int(np.sum(np.sign(e[p[:, 0]] - e[p[:, 1]]) != np.asarray(sign)))
