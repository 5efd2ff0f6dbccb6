"""xinfAP: average precision inferred from a stratified random sample of a pool.

xinfAP (Yilmaz, Kanoulas & Aslam, "A simple and efficient sampling method for estimating AP and NDCG",
SIGIR 2008; NIST's ``sample_eval.pl`` computes it for TREC and TRECVID) extends infAP (Yilmaz & Aslam,
CIKM 2006; :func:`ndcg_labeling.budget.estimators.inferred_ap`) from a uniform sample of the pool to a
sample drawn at a different rate in each stratum. AP is the mean, over the relevant documents of the pool,
of the precision at each one's rank, and both the mean and the precisions are estimated:

- the number of relevant documents in the pool, ``R = sum over judged relevant d of 1 / pi_d``
  (Horvitz-Thompson; ``pi_d`` its inclusion probability, ``n_h / N_h`` for a simple random sample of
  ``n_h`` of the ``N_h`` pairs of its stratum, as ``sample_eval.pl``'s ``sampled_rel * docs_per_category /
  sampled_docs``);
- the precision at the rank ``k`` of a judged relevant document, from the pooled documents above it, stratum
  by stratum: ``prec(k) = 1/k + (1/k) * sum_h d_h * p_h`` where ``d_h`` is the number of pooled documents
  of stratum ``h`` above rank ``k`` and ``p_h = (r_h + eps) / (n_h + eps / u)`` the precision among them,
  from the ``n_h`` of them that were judged, ``r_h`` of which relevant. Documents outside the pool are not
  relevant and take a rank but no part in ``d_h``. Within a stratum the judged documents above ``k`` are a
  simple random sample of its ``d_h`` documents above ``k`` (given how many there are), so ``p_h`` is
  unbiased where ``n_h > 0``; where ``n_h = 0`` it is the prior ``u``. (These are counts above ``k``:
  no inclusion probability enters ``prec``.)
- AP: ``sum over judged relevant retrieved d of prec(rank of d) / pi_d``, divided by ``R``. (sample_eval
  writes it as ``sum_h (R_h / R) * (mean prec over the judged relevant of stratum h)``, the same number.)

``precision="ht"`` replaces ``d_h * p_h`` by the Horvitz-Thompson count of the relevant documents above
``k``: ``sum over judged relevant j of stratum h above k of 1 / pi_j``, where, for the stratum of the
relevant document itself, ``pi_j`` is the probability given that document was sampled, ``(n - 1)/(N - 1)``
in place of ``n/N`` (simple random sampling of ``n`` of the stratum's ``N``; ``n`` is read as ``pi * N``,
``N`` counted from ``strata``). It needs no prior, and the
numerator ``sum of prec / pi`` is then exactly unbiased: each relevant document ``d`` enters with
probability ``pi_d`` and weight ``1 / pi_d``, and given that it did, its estimated precision is unbiased.
It is noisier: over 500 designs at a quarter of the pool on 12 DL19 queries (tests/budget/test_xinfap.py)
the mean of the ht ratio is off the full AP by -0.001 to +0.016 per system, xinfAP's by -0.017 to +0.029,
but the RMSE is 0.055 against xinfAP's 0.045.

With a single stratum per query (a uniform sample) and ``u = 1/2`` this is trec_eval's ``infAP`` exactly:
``(k-1)/k * (d/(k-1)) * (rel + eps)/(rel + nonrel + 2 eps)`` is ``(1/k) * d * p`` with ``n = rel + nonrel``
and ``eps / u = 2 eps``, and
``R`` is then the judged relevant count times ``N/n``, the same factor as in the numerator.
``sample_eval.pl`` smooths with ``3 eps`` in the denominator, that is ``u = 1/3``: where no document of a
stratum above a relevant one was judged, its documents are taken as relevant with probability 1/3 there
and 1/2 here (and in trec_eval). Neither prior is unbiased; ``u`` is a parameter.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ndcg_labeling.budget.pool import FloatArray, IntArray, Pool

XINFAP_EPSILON = 1e-5  # trec_eval's INFAP_EPSILON and sample_eval.pl's 0.00001


def _check(pool: Pool, grades: npt.ArrayLike, inclusion: npt.ArrayLike, strata: npt.ArrayLike,
           unseen: float, func: str) -> tuple[FloatArray, FloatArray, IntArray]:
    g = np.asarray(grades, dtype=np.float64)
    pi = np.asarray(inclusion, dtype=np.float64)
    st = np.asarray(strata)
    n = pool.n_pairs
    if g.shape != (n,) or pi.shape != (n,) or st.shape != (n,):
        raise ValueError(f"{func}: grades, inclusion and strata must have shape ({n},), got {g.shape}, "
                         f"{pi.shape} and {st.shape}")
    if not np.issubdtype(st.dtype, np.integer):
        raise ValueError(f"{func}: strata must be integers, got {st.dtype}")
    judged = ~np.isnan(g)
    bad = judged & ~(pi > 0) | judged & (pi > 1)
    if bad.any():
        i = int(np.nonzero(bad)[0][0])
        raise ValueError(f"{func}: every judged pair needs an inclusion probability in (0, 1], got {pi[i]} "
                         f"at pair {i}")
    if not 0.0 < unseen <= 1.0:
        raise ValueError(f"{func}: unseen must be in (0, 1], got {unseen}")
    # strata numbered 0 .. H-1 within each query, whatever the caller's numbering (the same id in two
    # queries is two strata)
    local = np.zeros(n, dtype=np.int64)
    for q in range(pool.n_queries):
        sel = pool.query == q
        local[sel] = np.unique(st[sel], return_inverse=True)[1].ravel()
    return g, pi, local


def xinfap_parts(
    pool: Pool,
    grades: npt.ArrayLike,
    inclusion: npt.ArrayLike,
    strata: npt.ArrayLike,
    *,
    relevant: float = 1.0,
    precision: str = "ratio",
    unseen: float = 0.5,
) -> tuple[FloatArray, FloatArray]:
    """The two estimates whose ratio is xinfAP: ``(precision_sum, num_rel)``.

    ``precision_sum`` (systems, queries): ``sum over judged relevant d a run retrieves of prec(rank of d) /
    pi_d``, the estimate of the sum of the precisions at the relevant documents of the pool (the numerator
    of AP); ``num_rel`` (queries,): ``sum over judged relevant d of 1 / pi_d``, the estimate of the number of
    relevant documents in the pool (exactly unbiased). Arguments as :func:`inferred_ap_stratified`.

    With ``precision="ht"``, ``precision_sum`` is exactly unbiased under stratified simple random sampling
    of fixed sizes where every stratum holds a judged pair and each relevant one shares its stratum with
    another judged pair; with ``"ratio"`` (xinfAP's) it is unbiased but for the strata in which none of the
    documents above a relevant one was judged, which get ``unseen``.
    """
    return _parts(pool, grades, inclusion, strata, relevant, precision, unseen, "xinfap_parts")


def _parts(pool: Pool, grades: npt.ArrayLike, inclusion: npt.ArrayLike, strata: npt.ArrayLike, relevant: float,
           precision: str, unseen: float, func: str) -> tuple[FloatArray, FloatArray]:
    if precision not in ("ratio", "ht"):
        raise ValueError(f"{func}: precision must be 'ratio' or 'ht', got {precision!r}")
    g, pi, local = _check(pool, grades, inclusion, strata, unseen, func)
    judged = ~np.isnan(g)
    rel = judged & (np.nan_to_num(g, nan=-np.inf) >= relevant)
    weight = np.where(rel, 1.0 / np.where(rel, pi, 1.0), 0.0)
    num_rel = np.bincount(pool.query, weights=weight, minlength=pool.n_queries).astype(np.float64)
    # "ht": given that d was sampled, another pair of its stratum was sampled with probability
    # (n - 1) / (N - 1), not n / N: the factor that turns the one weight into the other, 0 where n = 1
    key = pool.query * (int(local.max(initial=0)) + 1) + local
    size = np.bincount(key)[key].astype(np.float64)
    sampled = np.where(rel, pi, 0.0) * size
    own = np.where(sampled > 1.0 + 1e-9, np.where(rel, pi, 0.0) * (size - 1.0) / np.maximum(sampled - 1.0, 1e-300),
                   0.0)
    total = np.zeros((pool.n_systems, pool.n_queries))
    for q in range(pool.n_queries):
        lists = pool.run_pairs[:, q, :]
        total[:, q] = _precision_sum(lists, local, judged, rel, weight, own if precision == "ht" else None, unseen)
    return total, num_rel


def _precision_sum(lists: IntArray, local: IntArray, judged: npt.NDArray[np.bool_], rel: npt.NDArray[np.bool_],
                   weight: FloatArray, own: FloatArray | None, unseen: float) -> FloatArray:
    """(systems,) ``sum of prec(k) / pi`` over the judged relevant documents of each list ``lists``
    (systems, width) of one query (pair indices, -1 outside the pool or past the list's end); ``own``:
    the Horvitz-Thompson factor of each pair's own stratum (``"ht"``), None for the ratio (``"ratio"``)."""
    n_sys, width = lists.shape
    if width == 0:
        return np.zeros(n_sys)
    pooled = lists >= 0
    p = np.where(pooled, lists, 0)
    n_strata = int(local[p[pooled]].max(initial=0)) + 1
    onehot = np.zeros((n_sys, width, n_strata))
    s_idx, r_idx = np.nonzero(pooled)
    onehot[s_idx, r_idx, local[p[pooled]]] = 1.0
    if own is None:
        # pooled, judged and judged relevant documents of each stratum strictly above each rank
        above = np.cumsum(onehot, axis=1) - onehot
        seen = onehot * judged[p][:, :, None]
        seen_above = np.cumsum(seen, axis=1) - seen
        hits = onehot * rel[p][:, :, None]
        hits_above = np.cumsum(hits, axis=1) - hits
        share = (hits_above + XINFAP_EPSILON) / (seen_above + XINFAP_EPSILON / unseen)
        found = (above * share).sum(axis=2)
    else:
        # the judged relevant documents above each rank, each weighted 1 / pi; those of the rank's own
        # stratum reweighted by ``own``
        hits = onehot * weight[p][:, :, None]
        hits_above = np.cumsum(hits, axis=1) - hits
        mine = np.take_along_axis(hits_above, local[p][:, :, None], axis=2)[:, :, 0]
        found = hits_above.sum(axis=2) + mine * (own[p] - 1.0)
    rank = np.arange(1, width + 1, dtype=np.float64)
    prec = (1.0 + found) / rank[None, :]
    counted = pooled & rel[p]
    return np.asarray(np.where(counted, prec * weight[p], 0.0).sum(axis=1), dtype=np.float64)


def inferred_ap_stratified(
    pool: Pool,
    grades: npt.ArrayLike,
    inclusion: npt.ArrayLike,
    strata: npt.ArrayLike,
    *,
    relevant: float = 1.0,
    precision: str = "ratio",
    unseen: float = 0.5,
) -> FloatArray:
    """(systems, queries) xinfAP of every run from a stratified random sample of the pool.

    ``grades`` (pairs,): the grade of each judged pair, NaN elsewhere; a pair is relevant where its grade is
    >= ``relevant``. ``inclusion`` (pairs,): each judged pair's inclusion probability, in (0, 1] (ignored
    where unjudged); ``strata`` (pairs,): integer stratum ids, read within each query (see
    :func:`ndcg_labeling.budget.strategies.stratum_ids`). Each run's whole list in ``pool.run_pairs`` is
    read (trec_eval's AP, no cut-off); a pair ranked below the pool depth by one run but pooled by another
    is a pooled document at that rank.

    ``precision``: how the precision above a relevant document is estimated, stratum by stratum (formulas
    in the module docstring): ``"ratio"`` (default) is xinfAP's, the judged share of relevant documents
    times the pooled count, ``unseen`` where none is judged (1/2 as trec_eval's infAP; NIST's
    sample_eval.pl uses 1/3); ``"ht"`` the Horvitz-Thompson count, which needs no prior and leaves the
    numerator exactly unbiased, at a larger variance.

    xinfAP = ``precision_sum / num_rel`` of :func:`xinfap_parts`; a query whose sample holds no relevant
    pair gets 0, as in trec_eval. The ratio is not clipped to [0, 1] and is biased as every ratio of
    estimates is. With every pair judged (inclusion 1) it is AP over the pool within ``eps`` = 1e-5 (the
    smoothing; exactly with ``"ht"``); with one stratum per query, ``"ratio"`` and ``unseen=0.5`` it is
    trec_eval's infAP. Raises ``ValueError`` for arrays that do not fit the pool, a judged pair without an
    inclusion probability in (0, 1], an unknown ``precision`` or ``unseen`` outside (0, 1].
    """
    total, num_rel = _parts(pool, grades, inclusion, strata, relevant, precision, unseen, "inferred_ap_stratified")
    ok = num_rel > 0
    return np.where(ok[None, :], total / np.where(ok, num_rel, 1.0)[None, :], 0.0)
