"""Impression logs simulated from each generative model with known truth (the tests' ground truth).

200 queries x 10 documents = 2,000 pairs with a true 0-3 grade each; every served list shows one
query's 10 documents in a random order at positions 1..10, so each pair is seen at many positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

N_QUERIES, N_DOCS = 200, 10
EXAMINATION = np.array([1.0, 0.85, 0.7, 0.58, 0.48, 0.4, 0.33, 0.28, 0.24, 0.2])
PBM_ATTRACTIVENESS = np.array([0.05, 0.25, 0.55, 0.85])  # by true grade 0..3
DBN_ATTRACTIVENESS = np.array([0.05, 0.3, 0.6, 0.9])
DBN_SATISFACTION = np.array([0.1, 0.35, 0.6, 0.85])
DBN_GAMMA = 0.8
WATCH_LEVEL = np.array([0.0, 0.25, 0.6, 1.0])  # mean watch_ratio by grade (before the floor at 0); cut points 0.1, 0.4, 0.8
DAY = 86_400.0


@dataclass
class Log:
    """One row per impression; ``pair = query * N_DOCS + doc``; ``truth`` per pair (at the end of the log)."""

    request: np.ndarray
    pair: np.ndarray
    position: np.ndarray
    clicked: np.ndarray
    ts: np.ndarray
    watch_ratio: np.ndarray
    truth: np.ndarray
    truth_before: np.ndarray


def true_grades(rng: np.random.Generator, n_queries: int = N_QUERIES) -> np.ndarray:
    return rng.choice(4, size=n_queries * N_DOCS, p=[0.4, 0.25, 0.2, 0.15])


def served_lists(n_requests: int, rng: np.random.Generator, days: float = 60.0,
                 n_queries: int = N_QUERIES) -> tuple[np.ndarray, ...]:
    """``(request, pair, position, ts)`` of ``n_requests`` lists of 10 documents in random order."""
    query = rng.integers(0, n_queries, n_requests)
    order = np.argsort(rng.random((n_requests, N_DOCS)), axis=1)
    pair = (query[:, None] * N_DOCS + order).astype(np.int64)
    position = np.broadcast_to(np.arange(1, N_DOCS + 1), pair.shape)
    ts = np.sort(rng.uniform(0.0, days * DAY, n_requests))
    return np.arange(n_requests), pair, position, ts


def simulate_pbm(n_impressions: int = 1_000_000, seed: int = 1, drift_at: float | None = None,
                 n_queries: int = N_QUERIES) -> Log:
    """PBM clicks: ``C = E * A`` with ``P(E) = EXAMINATION[r]``, ``P(A) = PBM_ATTRACTIVENESS[grade]``;
    with ``drift_at`` (seconds) a third of the pairs get a new grade from then on."""
    rng = np.random.default_rng(seed)
    truth = true_grades(rng, n_queries)
    before = truth.copy()
    n_req = n_impressions // N_DOCS
    req, pair, pos, ts = served_lists(n_req, rng, n_queries=n_queries)
    grade = np.broadcast_to(truth, (n_req, truth.size))[0][pair]
    if drift_at is not None:
        before = _drift(truth, rng)
        grade = np.where(ts[:, None] < drift_at, before[pair], truth[pair])
    clicked = (rng.random(pair.shape) < EXAMINATION[pos - 1]) & (rng.random(pair.shape) < PBM_ATTRACTIVENESS[grade])
    return _flat(req, pair, pos, clicked, ts, np.zeros(pair.shape), truth, before)


def _drift(truth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Grades before the drift: a third of the pairs were 2 grades away (mirrored), the rest the same."""
    before = truth.copy()
    moved = rng.random(truth.size) < 1 / 3
    before[moved] = np.where(truth[moved] >= 2, truth[moved] - 2, truth[moved] + 2)
    return before


def simulate_dbn(n_impressions: int = 1_000_000, seed: int = 2) -> Log:
    """DBN cascade: examine position 1; click if attracted; satisfied after a click with
    ``DBN_SATISFACTION``; else continue with probability ``DBN_GAMMA``."""
    rng = np.random.default_rng(seed)
    truth = true_grades(rng)
    n_req = n_impressions // N_DOCS
    req, pair, pos, ts = served_lists(n_req, rng)
    a = DBN_ATTRACTIVENESS[truth[pair]]
    s = DBN_SATISFACTION[truth[pair]]
    examined = np.ones(n_req, dtype=bool)
    clicked = np.zeros(pair.shape, dtype=bool)
    for r in range(N_DOCS):
        c = examined & (rng.random(n_req) < a[:, r])
        clicked[:, r] = c
        satisfied = c & (rng.random(n_req) < s[:, r])
        examined = examined & ~satisfied & (rng.random(n_req) < DBN_GAMMA)
    return _flat(req, pair, pos, clicked, ts, np.zeros(pair.shape), truth, truth)


def simulate_watch(n_impressions: int = 1_000_000, seed: int = 3, drift_at: float | None = 30 * DAY) -> Log:
    """The seed's rule backwards: each impression's ``watch_ratio ~ max(N(WATCH_LEVEL[grade], 0.1), 0)``;
    a third of the pairs drift at ``drift_at``; clicks follow the PBM."""
    rng = np.random.default_rng(seed)
    truth = true_grades(rng)
    before = _drift(truth, rng) if drift_at is not None else truth.copy()
    n_req = n_impressions // N_DOCS
    req, pair, pos, ts = served_lists(n_req, rng)
    grade = np.where(ts[:, None] < (drift_at if drift_at is not None else -1.0), before[pair], truth[pair])
    ratio = np.maximum(rng.normal(WATCH_LEVEL[grade], 0.1), 0.0)  # a rewatch can exceed 1
    clicked = (rng.random(pair.shape) < EXAMINATION[pos - 1]) & (rng.random(pair.shape) < PBM_ATTRACTIVENESS[grade])
    return _flat(req, pair, pos, clicked, ts, ratio, truth, before)


def _flat(req, pair, pos, clicked, ts, ratio, truth, before) -> Log:  # noqa: ANN001
    n_req, k = pair.shape
    return Log(request=np.repeat(req, k), pair=pair.ravel(), position=np.asarray(pos).ravel().astype(np.int64),
               clicked=clicked.ravel().astype(np.int64), ts=np.repeat(ts, k), watch_ratio=np.asarray(ratio).ravel(),
               truth=truth, truth_before=before)


def dbn_examination(n_impressions: int, seed: int = 2) -> np.ndarray:
    """The true examination frequency per position of :func:`simulate_dbn` with the same seed and size
    (the simulation replayed, recording the hidden examination)."""
    rng = np.random.default_rng(seed)
    truth = true_grades(rng)
    n_req = n_impressions // N_DOCS
    _req, pair, _pos, _ts = served_lists(n_req, rng)
    a = DBN_ATTRACTIVENESS[truth[pair]]
    s = DBN_SATISFACTION[truth[pair]]
    examined = np.ones(n_req, dtype=bool)
    seen = np.zeros(N_DOCS)
    for r in range(N_DOCS):
        seen[r] = examined.mean()
        c = examined & (rng.random(n_req) < a[:, r])
        satisfied = c & (rng.random(n_req) < s[:, r])
        examined = examined & ~satisfied & (rng.random(n_req) < DBN_GAMMA)
    return seen


def patterns_of(log: Log, weight: np.ndarray | None = None):  # noqa: ANN201
    """The log's served lists as SessionPatterns (one row per request, in request order)."""
    from ndcg_labeling.behavior.counts import SessionPatterns

    n_req = int(log.request.max()) + 1
    w = np.ones(n_req) if weight is None else weight
    return SessionPatterns(pairs=log.pair.reshape(n_req, N_DOCS).copy(),
                           clicks=log.clicked.reshape(n_req, N_DOCS).astype(np.int8), weight=w,
                           count=np.ones(n_req, dtype=np.int64))
