"""Which pairs of a pool to judge next: depth, move-to-front, bandit and stratified-sampling strategies.

Every strategy is one call, :func:`select_next`, that picks the next ``n`` pairs given what is known so far:
``grades`` (pairs,) with a grade where judged and NaN where not, and ``pending`` (pairs,) marking pairs
already chosen whose grades have not come back. A batch grown in rounds calls it once a round; a simulation
that calls it with a small ``n`` many times gets the fully sequential strategy.

- ``depth``: every query's pool to depth 1, then depth 2, ...; the last level, when the budget ends inside
  it, is taken in a random order (so no query is favoured). At a budget that is a whole depth it is plain
  depth-k pooling.
- ``mtf``: move-to-front pooling (Cormack, Palmer & Clarke, "Efficient construction of large test
  collections", SIGIR 1998), in its local form: each query's runs are read from the top; a run's priority
  is minus the number of non-relevant documents in the judged head of its list, so a run keeps being read
  while it supplies relevant documents and falls back behind the others on each non-relevant one.
- ``bandit``: MaxMean (Losada, Parapar & Barreiro, "Multi-armed bandits for adjudicating documents in
  pooling-based evaluation of information retrieval systems", IP&M 2017): each run is an arm; its value is
  ``(sum of rewards + 1) / (judged + 2)`` over the judged documents of its pooled list (reward = grade /
  ``max_grade``); the run of highest value gives its best-ranked unjudged document. A pair chosen in the
  same round but not yet graded counts as judged with the query's mean reward so far, so a large round
  spreads over several runs instead of draining one.
- ``sample``: stratified random sampling by rank (Yilmaz, Kanoulas & Aslam, SIGIR 2008): each query's pool
  is cut into strata by best rank (:data:`DEFAULT_EDGES`); a stratum's share of the budget follows the rank
  discount of NDCG; within a stratum the pairs are a simple random sample, so the inclusion probability of
  a pair is (judged in its stratum) / (size of its stratum): :func:`inclusion_probabilities`.

- ``weighted``: the pairs of a query in the order of their summed weight in the measure over the runs
  (Moffat, Webber & Zobel, "Strategic system comparisons via targeted relevance judgments", SIGIR 2007, in
  its static form, with the NDCG discount in place of RBP's weights): a pair's priority is the sum over
  the runs of ``1 / log2(rank + 1)`` at its rank in each run within the pool depth (0 where a run does not
  rank it there). A document that several runs put near the top comes first; one that a single run ranks
  deep comes last. It uses no grades, so rounds simply continue the order.

``mtf``, ``bandit``, ``sample`` and ``weighted`` share the budget among queries in proportion to their
pool sizes.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ndcg_labeling.budget.pool import FloatArray, IntArray, Pool
from ndcg_labeling.choices import PoolStrategy
from ndcg_labeling.metrics import dcg as _dcg

STRATEGIES = tuple(s.value for s in PoolStrategy)  # depth, mtf, bandit, sample, weighted
# best-rank strata of the sampling design: [1], [2], [3,4], [5,7], [8,10], [11,15], [16,20], [21, ...)
DEFAULT_EDGES = (1, 2, 3, 5, 8, 11, 16, 21)
# coarser designs for smaller budgets: a stratum left without a sampled pair would have inclusion probability 0
# and drop out of every estimate, so the finest set that still gives each stratum two pairs is used
EDGE_SETS = (DEFAULT_EDGES, (1, 3, 8, 16), (1, 11), (1,))
BoolArray = npt.NDArray[np.bool_]


def select_next(
    pool: Pool,
    strategy: str,
    n: int,
    grades: npt.ArrayLike,
    *,
    pending: npt.ArrayLike | None = None,
    rng: np.random.Generator | None = None,
    relevant: float = 1.0,
    max_grade: float = 3.0,
    k: int = 10,
    edges: tuple[int, ...] | None = None,
) -> IntArray:
    """The next ``n`` pairs to judge (fewer when the pool runs out), as pair indices in the order chosen.

    ``relevant``: the grade from which a document counts as relevant for ``mtf``; ``max_grade``: the top
    grade (``bandit``'s reward scale); ``k``: the NDCG cut-off the ``sample`` design serves; ``edges``: its
    strata (default :func:`design_edges` of the pairs taken after this call; a batch grown in rounds must
    pass the edges of its first round). Raises
    ``ValueError`` for an unknown strategy, a negative ``n`` or arrays that do not fit the pool.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"select_next: strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if n < 0:
        raise ValueError(f"select_next: n must be >= 0, got {n}")
    g = np.asarray(grades, dtype=np.float64)
    busy = np.zeros(pool.n_pairs, dtype=bool) if pending is None else np.asarray(pending, dtype=bool).copy()
    if g.shape != (pool.n_pairs,) or busy.shape != (pool.n_pairs,):
        raise ValueError(f"select_next: grades and pending must have shape ({pool.n_pairs},), got {g.shape} "
                         f"and {busy.shape}")
    rng = rng if rng is not None else np.random.default_rng(0)
    taken = ~np.isnan(g) | busy
    if strategy == "depth":
        return _depth(pool, n, taken, rng)
    quotas = _quotas(pool, n, taken)
    picks: list[int] = []
    if strategy == "weighted":
        weight = summed_weights(pool)
        for q in np.nonzero(quotas)[0]:
            sel = np.nonzero((pool.query == q) & ~taken)[0]
            picks.extend(sel[np.argsort(-weight[sel], kind="stable")][: int(quotas[q])].tolist())
        return np.asarray(picks, dtype=np.int64)
    strata = stratum_ids(pool, edges if edges is not None else design_edges(pool, int(taken.sum()) + n))
    for q in np.nonzero(quotas)[0]:
        m = int(quotas[q])
        if strategy == "mtf":
            picks.extend(_mtf(pool, int(q), m, g, busy, relevant))
        elif strategy == "bandit":
            picks.extend(_bandit(pool, int(q), m, g, busy, max_grade))
        else:
            picks.extend(_sample(pool, int(q), m, taken, strata, rng, k))
    return np.asarray(picks, dtype=np.int64)


def _depth(pool: Pool, n: int, taken: BoolArray, rng: np.random.Generator) -> IntArray:
    free = np.nonzero(~taken)[0]
    tiebreak = rng.permutation(free.size)
    order = np.lexsort((tiebreak, pool.min_rank[free]))
    return free[order[:n]].astype(np.int64)


def summed_weights(pool: Pool) -> FloatArray:
    """(pairs,): each pair's summed NDCG discount over the runs, ``sum of 1 / log2(rank + 1)`` over the runs
    that rank it within the pool depth (the ``weighted`` strategy's priority)."""
    lists = pool.run_pairs[:, :, : pool.depth]
    ok = lists >= 0
    weights = np.broadcast_to(_dcg.discount(np.arange(1, lists.shape[2] + 1)), lists.shape)[ok]
    return np.bincount(lists[ok], weights=weights, minlength=pool.n_pairs).astype(np.float64)


def _quotas(pool: Pool, n: int, taken: BoolArray) -> IntArray:
    """How many of the ``n`` picks fall to each query: the one furthest behind its share (taken / pool
    size) gets the next pick, until ``n`` are placed or every query is exhausted."""
    sizes = pool.query_sizes().astype(np.float64)
    done = np.bincount(pool.query, weights=taken.astype(np.float64), minlength=pool.n_queries)
    free = sizes - done
    quotas = np.zeros(pool.n_queries, dtype=np.int64)
    share = np.where(sizes > 0, done / np.maximum(sizes, 1.0), np.inf)
    for _ in range(min(n, int(free.sum()))):
        cand = np.where(free - quotas > 0, share, np.inf)
        q = int(np.argmin(cand))
        quotas[q] += 1
        share[q] = (done[q] + quotas[q]) / sizes[q]
    return quotas


def _lists(pool: Pool, q: int) -> IntArray:
    return pool.run_pairs[:, q, : pool.depth]


def _mtf(pool: Pool, q: int, m: int, g: FloatArray, busy: BoolArray, relevant: float) -> list[int]:
    lists = _lists(pool, q)
    busy = busy.copy()
    picks: list[int] = []
    for _ in range(m):
        best: tuple[float, float, int] | None = None
        best_pair = -1
        for s in range(lists.shape[0]):
            nonrel = rel = 0
            nxt = -1
            for p in lists[s]:
                if p < 0:
                    continue
                if busy[p]:
                    continue
                if np.isnan(g[p]):
                    nxt = int(p)
                    break
                if g[p] >= relevant:
                    rel += 1
                else:
                    nonrel += 1
            if nxt < 0:
                continue
            key = (float(nonrel), -float(rel), s)
            if best is None or key < best:
                best, best_pair = key, nxt
        if best_pair < 0:
            break
        picks.append(best_pair)
        busy[best_pair] = True
    return picks


def _bandit(pool: Pool, q: int, m: int, g: FloatArray, busy: BoolArray, max_grade: float) -> list[int]:
    lists = _lists(pool, q)
    busy = busy.copy()
    known = pool.query == q
    rewards_q = np.clip(g[known & ~np.isnan(g)] / max_grade, 0.0, 1.0)
    fill = float(rewards_q.mean()) if rewards_q.size else 0.5
    picks: list[int] = []
    for _ in range(m):
        best_value, best_pair = -np.inf, -1
        for s in range(lists.shape[0]):
            row = lists[s][lists[s] >= 0]
            judged = ~np.isnan(g[row])
            waiting = busy[row] & ~judged
            free = row[~judged & ~waiting]
            if free.size == 0:
                continue
            reward = float(np.clip(g[row[judged]] / max_grade, 0.0, 1.0).sum()) + fill * int(waiting.sum())
            value = (reward + 1.0) / (int(judged.sum()) + int(waiting.sum()) + 2.0)
            if value > best_value:
                best_value, best_pair = value, int(free[0])
        if best_pair < 0:
            break
        picks.append(best_pair)
        busy[best_pair] = True
    return picks


def design_edges(pool: Pool, budget: int) -> tuple[int, ...]:
    """The finest of :data:`EDGE_SETS` whose strata can each get two sampled pairs at ``budget``: a query's
    share of the budget (in proportion to its pool) must be at least twice its number of strata, for the
    median query; a single stratum per query below that."""
    if pool.n_queries == 0:
        return EDGE_SETS[-1]
    share = float(np.median(budget * pool.query_sizes() / max(pool.n_pairs, 1)))
    for edges in EDGE_SETS:
        bands = np.unique(np.searchsorted(np.asarray(edges), pool.min_rank, side="right") - 1)
        per_query = bands.size
        if share >= 2 * per_query:
            return edges
    return EDGE_SETS[-1]


def stratum_ids(pool: Pool, edges: tuple[int, ...] = DEFAULT_EDGES) -> IntArray:
    """(pairs,): the stratum of each pair, ``query * (len(edges)) + band``, where band ``b`` holds best ranks
    ``edges[b] <= rank < edges[b+1]`` (the last band is open). ``edges`` must start at 1 and increase."""
    e = np.asarray(edges, dtype=np.int64)
    if e.size == 0 or e[0] != 1 or (np.diff(e) <= 0).any():
        raise ValueError(f"stratum_ids: edges must start at 1 and increase, got {edges}")
    band = np.searchsorted(e, pool.min_rank, side="right") - 1
    return (pool.query * e.size + band).astype(np.int64)


def inclusion_probabilities(strata: npt.ArrayLike, judged: npt.ArrayLike) -> FloatArray:
    """(pairs,): the inclusion probability of each pair under stratified simple random sampling: the
    number judged in its stratum over the stratum's size (0 in a stratum where nothing was judged)."""
    st = np.unique(np.asarray(strata, dtype=np.int64), return_inverse=True)[1].ravel()
    jd = np.asarray(judged, dtype=bool)
    size = np.bincount(st)
    hit = np.bincount(st, weights=jd.astype(np.float64), minlength=size.size)
    return (hit[st] / size[st]).astype(np.float64)


def _rank_weight(rank: IntArray, k: int) -> FloatArray:
    # the share of attention a stratum deserves: the NDCG discount at its best rank; below the cut-off
    # a document only counts through the ideal DCG (how many relevant there are), weighted at half the
    # last discount
    return np.where(rank <= k, _dcg.discount(np.clip(rank, 1, k)), 0.5 * _dcg.discount(k))


def _sample(pool: Pool, q: int, m: int, taken: BoolArray, strata: IntArray, rng: np.random.Generator,
            k: int) -> list[int]:
    sel = np.nonzero(pool.query == q)[0]
    st = strata[sel]
    labels, inverse = np.unique(st, return_inverse=True)
    size = np.bincount(inverse).astype(np.int64)
    have = np.bincount(inverse, weights=taken[sel].astype(np.float64)).astype(np.int64)
    best = np.array([pool.min_rank[sel][inverse == h].min() for h in range(labels.size)])
    target = _allocate(int(have.sum()) + m, size, _rank_weight(best, k))
    extra = np.maximum(target - have, 0)
    # the allocation may move a pick between strata (rounding against what is already taken): trim or
    # top up so exactly min(m, free) are picked, in the order of the weights
    free = size - have
    extra = np.minimum(extra, free)
    order = np.argsort(-_rank_weight(best, k), kind="stable")
    while extra.sum() > m:
        h = next(h for h in order[::-1] if extra[h] > 0)
        extra[h] -= 1
    while extra.sum() < min(m, int(free.sum())):
        h = next(h for h in order if extra[h] < free[h])
        extra[h] += 1
    picks: list[int] = []
    for h in range(labels.size):
        if extra[h]:
            cand = sel[(inverse == h) & ~taken[sel]]
            picks.extend(rng.choice(cand, size=int(extra[h]), replace=False).tolist())
    return picks


def _allocate(total: int, size: IntArray, weight: FloatArray) -> IntArray:
    """Split ``total`` picks over strata in proportion to ``size * weight``, at least two per stratum (one
    where it has one) while the budget allows, never more than a stratum holds."""
    total = min(total, int(size.sum()))
    out = np.minimum(size, 2)
    if out.sum() >= total:
        out = np.zeros_like(size)
        for h in np.argsort(-weight, kind="stable"):
            out[h] = min(int(size[h]), 2, total - int(out.sum()))
        return out
    open_ = out < size
    while open_.any():
        left = total - int(out.sum())
        if left <= 0:
            break
        share = size * weight * open_
        want = left * share / share.sum()
        add = np.minimum(np.floor(want).astype(np.int64), size - out)
        if add.sum() == 0:
            h = int(np.argmax(np.where(open_, want - np.floor(want) + share * 1e-12, -1.0)))
            add[h] = 1
        out = out + add
        open_ = out < size
    return out
