"""The ``report`` use case: score every system's stored rankings against the effective labels.

Data flow, all in bulk (one SELECT per table, no ORM object per row):

1. effective labels (consensus value, overridden by the newest adjudication) -> ``(query, document,
   value)`` arrays;
2. the queries with at least one label are the *judged* queries; those without a relevant document
   (``value >= relevant_threshold``) are left out unless ``empty="zero"``;
3. per system, the stored rankings become NaN-padded 2-D ``scores`` / ``labels`` arrays (queries x
   list length; an unlabelled retrieved document gets a NaN label, i.e. gain 0), and ``ideal_labels``
   holds every labelled document of each query, retrieved or not, so the ideal DCG is the same for
   every system;
4. :func:`ndcg_labeling.metrics.compute_metrics` scores all queries at once;
5. aggregation per query type and overall: mean, n, a 95 % percentile bootstrap interval; with two or
   more systems the difference to the baseline, a paired t-test (``scipy.stats.ttest_rel``), a paired
   randomization (sign-flip) test, Holm's correction over the systems compared with the baseline, and
   wins / ties / losses.

Conventions (decided here, documented in the README):

* A judged query for which a system returned nothing scores 0 for that system (``missing="zero"``)
  or is left out of that system's numbers (``missing="skip"``, as trec_eval does).
* ``judged@k`` of a query the system returned nothing for is undefined and left out of judged@k.
* Resampling uses fixed seeds, so the same database gives the same intervals and p-values; the
  resamples of a query group are shared by all systems (paired).
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.errors import NdcgLabelingError, NotFoundError

DEFAULT_METRICS: tuple[str, ...] = ("ndcg@5", "ndcg@10", "mrr@10", "map@10", "p@10", "judged@10")
BY_CHOICES = ("query-type", "query", "none")
GAIN_CHOICES = ("exponential", "linear")
EMPTY_CHOICES = ("skip", "zero")
MISSING_CHOICES = ("zero", "skip")
ALL = "all"  # the query_type of the overall rows
UNTYPED = "untyped"  # the query_type of queries stored without one
JUDGED_WARN_BELOW = 0.9
SEED = 20240601
_EPS = 1e-12
Array = NDArray[Any]


@dataclass(frozen=True)
class ReportOptions:
    """What to score and how. See :func:`build_report`."""

    systems: Sequence[str] = ()
    baseline: str | None = None
    metrics: Sequence[str] = DEFAULT_METRICS
    by: str = "query-type"
    per_query: bool = False
    gain: str = "exponential"
    relevant_threshold: float = 1.0
    empty: str = "skip"
    missing: str = "zero"
    n_bootstrap: int = 2000
    n_permutations: int = 10_000
    confidence: float = 0.95
    seed: int = SEED


@dataclass
class ReportResult:
    """Everything a renderer needs.

    * ``summary``: one row per (system, query_type, metric) with ``value`` (mean), ``n_queries``,
      ``ci_low``, ``ci_high``; query_type ``all`` for the overall rows.
    * ``per_query``: one row per (system, query_id, query_type, metric) with ``value`` (NaN rows left out).
    * ``comparisons``: one row per (system, query_type, metric) for every system but the baseline:
      ``baseline, n_queries, baseline_value, value, diff, diff_ci_low, diff_ci_high, t_p, t_p_holm,
      rand_p, rand_p_holm, wins, ties, losses``.
    * ``coverage``: judged@k per (system, query_type) at ``coverage_k``.
    * ``labels``: the effective labels used (query_id, query_type, value) for the grade distribution.
    * ``notes``: counts of what was left out or set to zero, in words; ``warnings``: unsafe comparisons.
    """

    options: ReportOptions
    systems: list[str]
    baseline: str | None
    metrics: list[str]
    query_types: list[str]
    summary: pd.DataFrame
    per_query: pd.DataFrame
    comparisons: pd.DataFrame
    coverage: pd.DataFrame
    coverage_k: int
    labels: pd.DataFrame
    counts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# --- bulk loading ----------------------------------------------------------------------------------


def _fetch(session: Session, sql: str, ncols: int) -> Array:
    """Run ``sql`` through the driver and return a float64 ``(rows, ncols)`` array.

    PostgreSQL: ``COPY (sql) TO STDOUT`` read by pandas' C parser; SQLite: ``fetchall`` of tuples.
    Both avoid SQLAlchemy's per-row objects, which dominate the time for millions of rows.
    """
    conn = session.connection()
    raw: Any = conn.connection.driver_connection
    if repo.dialect_name(session) == "postgresql":
        buf = io.BytesIO()
        with raw.cursor() as cursor, cursor.copy(f"COPY ({sql}) TO STDOUT WITH (FORMAT csv)") as copy:
            for block in copy:
                buf.write(block)
        if buf.tell() == 0:
            return np.empty((0, ncols))
        buf.seek(0)
        frame = pd.read_csv(buf, header=None, dtype=np.float64, na_values=[""], keep_default_na=False)
        out: Array = frame.to_numpy(dtype=np.float64).reshape(-1, ncols)
        return out
    cursor = raw.cursor()
    try:
        cursor.execute(sql)
        rows = cursor.fetchall()
    finally:
        cursor.close()
    if not rows:
        return np.empty((0, ncols))
    return np.array(rows, dtype=np.float64).reshape(-1, ncols)


def _effective_labels(session: Session) -> pd.DataFrame:
    """``query`` (row id), ``document`` (row id), ``value``: consensus labels with adjudications applied.

    The newest adjudication of a (query, document) overrides its consensus value (and labels a pair
    that has no consensus row). Pairs whose value is NULL are not labelled.
    # Kept private and small so it can be swapped for pipeline.consensus.effective_labels once that
    # lands (it returns external ids; map them with repository.external_id_map).
    """
    cl = _fetch(session, f"SELECT query_id, document_id, value FROM {m.ConsensusLabel.__tablename__} "
                         "WHERE value IS NOT NULL", 3)
    adj = _fetch(session, f"SELECT query_id, document_id, grade, id FROM {m.Adjudication.__tablename__}", 4)
    labels = pd.DataFrame({"query": cl[:, 0].astype(np.int64), "document": cl[:, 1].astype(np.int64),
                           "value": cl[:, 2]})
    if len(adj):
        a = pd.DataFrame({"query": adj[:, 0].astype(np.int64), "document": adj[:, 1].astype(np.int64),
                          "value": adj[:, 2], "id": adj[:, 3]})
        a = a.sort_values("id").drop_duplicates(["query", "document"], keep="last").drop(columns="id")
        labels = pd.concat([labels, a], ignore_index=True).drop_duplicates(["query", "document"], keep="last")
    return labels.reset_index(drop=True)


def _load_rankings(session: Session, system_ids: list[int], k: int | None) -> Array:
    """``(rows, 3)`` int64 ``system, query, document`` ordered by system, query, rank: the first ``k``
    documents of every stored list (all of them for ``k=None``).

    Only ranks ``<= k`` travel from the database. A list whose ranks have holes (a CSV run may skip
    ranks) is read whole, so its first ``k`` documents are right all the same.
    """
    ids = ", ".join(str(i) for i in system_ids)
    table = m.RankingEntry.__tablename__
    cols = "system_id, query_id, document_id, rank"
    if k is None:
        rows = _fetch(session, f"SELECT {cols} FROM {table} WHERE system_id IN ({ids}) "
                               "ORDER BY system_id, query_id, rank", 4).astype(np.int64)
        return rows[:, :3]
    rows = _fetch(session, f"SELECT {cols} FROM {table} WHERE system_id IN ({ids}) AND rank <= {int(k)} "
                           "ORDER BY system_id, query_id, rank", 4).astype(np.int64)
    gaps = _fetch(session, f"SELECT system_id, query_id FROM {table} WHERE system_id IN ({ids}) "
                           "GROUP BY system_id, query_id HAVING max(rank) <> count(*)", 2).astype(np.int64)
    if len(gaps) == 0:
        return rows[:, :3]
    span = int(max(rows[:, 1].max() if len(rows) else 0, gaps[:, 1].max())) + 1
    gap_keys = gaps[:, 0] * span + gaps[:, 1]
    parts = [rows[~np.isin(rows[:, 0] * span + rows[:, 1], gap_keys)]]
    for sid in np.unique(gaps[:, 0]):
        qs = gaps[gaps[:, 0] == sid, 1]
        for start in range(0, len(qs), 5000):
            q_list = ", ".join(str(int(q)) for q in qs[start : start + 5000])
            parts.append(_fetch(session, f"SELECT {cols} FROM {table} WHERE system_id = {int(sid)} "
                                         f"AND query_id IN ({q_list})", 4).astype(np.int64))
    allrows = np.vstack(parts)
    allrows = allrows[np.lexsort((allrows[:, 3], allrows[:, 1], allrows[:, 0]))]
    key = allrows[:, 0] * span + allrows[:, 1]
    starts = np.r_[0, np.flatnonzero(np.diff(key)) + 1]
    pos = np.arange(len(allrows)) - np.repeat(starts, np.diff(np.r_[starts, len(allrows)]))
    out: Array = allrows[pos < k, :3]
    return out


def _queries(session: Session) -> pd.DataFrame:
    conn = session.connection()
    rows = conn.exec_driver_sql(f"SELECT id, external_id, query_type FROM {m.Query.__tablename__}").fetchall()
    frame = pd.DataFrame(rows, columns=["query", "query_id", "query_type"])
    frame["query"] = frame["query"].astype(np.int64)
    frame["query_type"] = frame["query_type"].fillna(UNTYPED).replace("", UNTYPED)
    return frame


def _systems(session: Session) -> dict[str, int]:
    conn = session.connection()
    return {str(n): int(i) for i, n in conn.exec_driver_sql(f"SELECT id, name FROM {m.System.__tablename__}")}


# --- statistics --------------------------------------------------------------------------------------


def bootstrap_counts(n: int, n_resamples: int, seed: int, block: int | None = None) -> Iterator[Array]:
    """Blocks of the ``(n_resamples, n)`` matrix of how often each of ``n`` items is drawn in each
    resample (a block at a time, so memory stays small). A resample's mean of a column ``v`` is
    ``counts @ v / n``: one matrix product per block gives the bootstrap means of every column."""
    rng = np.random.default_rng(seed)
    step = block or max(1, 1_000_000 // max(n, 1))
    for start in range(0, n_resamples, step):
        b = min(step, n_resamples - start)
        draws = rng.integers(0, n, size=(b, n))
        flat = np.bincount((draws + (np.arange(b) * n)[:, None]).ravel(), minlength=b * n)
        # float32 holds the counts exactly and halves the memory traffic of the products
        yield flat.reshape(b, n).astype(np.float32)


def bootstrap_ci(values: Array, n_resamples: int, seed: int, confidence: float) -> tuple[Array, Array]:
    """Percentile bootstrap interval of the mean of each column of ``values`` (n x c; NaN = left out).

    All columns share the same resamples of the rows (queries), so intervals of paired systems and of
    their differences come from the same draws. Fixed ``seed``: the same input gives the same interval.
    """
    n, c = values.shape
    if n == 0 or n_resamples == 0:
        return np.full(c, np.nan), np.full(c, np.nan)
    finite = np.isfinite(values)
    complete = bool(finite.all())
    # float32 products: a resample mean is off by ~1e-7 relative, far below the interval's own noise
    filled = (values if complete else np.where(finite, values, 0.0)).astype(np.float32)
    weights = finite.astype(np.float32)
    means = np.empty((n_resamples, c))
    row = 0
    for counts in bootstrap_counts(n, n_resamples, seed):
        b = counts.shape[0]
        if complete:  # the common case: every resample has n values in every column
            means[row : row + b] = (counts @ filled) / n
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                means[row : row + b] = (counts @ filled) / (counts @ weights)
        row += b
    alpha = (1.0 - confidence) / 2
    if complete:
        low, high = np.quantile(means, [alpha, 1 - alpha], axis=0)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: its interval is NaN
            low = np.nanquantile(means, alpha, axis=0)
            high = np.nanquantile(means, 1 - alpha, axis=0)
    none = finite.sum(axis=0) == 0
    low[none] = np.nan
    high[none] = np.nan
    return low, high


def randomization_p(diffs: Array, n_permutations: int, seed: int) -> Array:
    """Two-sided paired randomization test of mean ``diffs == 0`` for each column (n x c, no NaN).

    Each permutation flips the sign of every query's difference at random. Vectorised: with random
    bits ``b`` (0/1), the flipped sum is ``2 * (b @ d) - sum(d)``, one matrix product per block of
    permutations for every column (metric x system) at once.
    ``p = (1 + #{|mean*| >= |mean|}) / (1 + n_permutations)``.
    """
    n, c = diffs.shape
    if n == 0:
        return np.full(c, np.nan)
    d32 = diffs.astype(np.float32)
    total = d32.astype(np.float64).sum(axis=0)
    observed = np.abs(total)
    # The products run in float32 (half the memory traffic); their rounding error is below
    # n * eps32 * max|d|, so a flipped sum that equals the observed one exactly (discrete metrics)
    # still counts as a tie, while distinct sums of such metrics differ by far more than this.
    tol = 4.0 * n * float(np.finfo(np.float32).eps) * np.maximum(np.abs(diffs).max(axis=0), 1e-12)
    rng = np.random.default_rng(seed)
    hits = np.zeros(c)
    step = max(1, 2_000_000 // n)
    for start in range(0, n_permutations, step):
        b = min(step, n_permutations - start)
        raw = np.frombuffer(rng.bytes((b * n + 7) // 8), dtype=np.uint8)
        bits = np.unpackbits(raw)[: b * n].reshape(b, n).astype(np.float32)
        flipped = np.abs(2.0 * (bits @ d32).astype(np.float64) - total)
        hits += (flipped >= observed - tol).sum(axis=0)
    out: Array = (1 + hits) / (1 + n_permutations)
    return out


def holm(pvalues: Array) -> Array:
    """Holm's step-down adjusted p-values (NaN stays NaN and does not count in the family)."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full_like(p, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if ok.size == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    mcount = order.size
    adjusted = np.minimum(1.0, np.maximum.accumulate((mcount - np.arange(mcount)) * p[order]))
    out[order] = adjusted
    return out


def _ttest_p(diffs: Array) -> Array:
    """Two-sided paired t-test p-value per column of differences (scipy's ``ttest_rel``).

    t = mean / (sd / sqrt(n)) with n - 1 degrees of freedom; p = 2 * P(T <= -|t|). Computed here
    with ``scipy.special.stdtr`` rather than through ``scipy.stats``, whose import alone takes over a
    second of a report's start-up; a test compares the values with ``scipy.stats.ttest_rel``.
    """
    from scipy.special import stdtr

    n, c = diffs.shape
    out = np.full(c, np.nan)
    if n < 2:
        return out
    zero = np.all(np.abs(diffs) <= _EPS, axis=0)
    if (~zero).any():
        d = diffs[:, ~zero]
        with np.errstate(invalid="ignore", divide="ignore"):
            # Constant non-zero differences: sd 0, |t| infinite, p 0 (as scipy).
            t = d.mean(axis=0) / (d.std(axis=0, ddof=1) / np.sqrt(n))
            out[~zero] = 2.0 * stdtr(n - 1, -np.abs(t))
    out[zero] = 1.0  # identical scores on every query: no evidence of a difference
    return out


# --- the report ----------------------------------------------------------------------------------------


def _check_options(options: ReportOptions) -> list[Any]:
    from ndcg_labeling.metrics import parse_metric

    for name, value, choices in (("--by", options.by, BY_CHOICES), ("--gain", options.gain, GAIN_CHOICES),
                                 ("--empty", options.empty, EMPTY_CHOICES),
                                 ("--missing", options.missing, MISSING_CHOICES)):
        if value not in choices:
            raise NdcgLabelingError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    if not np.isfinite(options.relevant_threshold) or options.relevant_threshold <= 0:
        raise NdcgLabelingError(f"--relevant-threshold must be a positive number, got {options.relevant_threshold}")
    if not options.metrics:
        raise NdcgLabelingError("name at least one metric (--metric ndcg@10)")
    parsed = []
    for name in options.metrics:
        try:
            parsed.append(parse_metric(name))
        except ValueError as exc:
            raise NdcgLabelingError(str(exc).removeprefix("parse_metric: ")) from None
    names = [p.name for p in parsed]
    if len(set(names)) != len(names):
        raise NdcgLabelingError(f"a metric is named twice: {', '.join(names)}")
    return parsed


def build_report(*, session: Session, options: ReportOptions | None = None) -> ReportResult:
    """Score the stored rankings of ``options.systems`` (default: every system) against the labels.

    Raises :class:`NotFoundError` for an unknown system or baseline, and :class:`NdcgLabelingError`
    when there is nothing to score (no labels, no rankings) or an option is invalid.
    """
    from ndcg_labeling.metrics import compute_metrics, judged_at_k

    opts = options or ReportOptions()
    parsed = _check_options(opts)
    metric_names = [p.name for p in parsed]
    ks = [p.k for p in parsed]
    k_cut = None if any(k is None for k in ks) else max(k for k in ks if k is not None)
    coverage_k = next((p.k for p in parsed if p.family == "judged" and p.k), None) or (k_cut or 10)

    known = _systems(session)
    if not known:
        raise NdcgLabelingError("no system rankings in the database: import one with "
                                "`ndcg-labeling import run FILE --system NAME`")
    systems = list(dict.fromkeys(opts.systems)) if opts.systems else sorted(known)
    unknown = [s for s in systems if s not in known]
    if unknown:
        raise NotFoundError(f"unknown system {unknown[0]!r}; known systems: {', '.join(sorted(known))}")
    baseline: str | None = None
    if opts.baseline is not None:
        if opts.baseline not in known:
            raise NotFoundError(f"unknown baseline system {opts.baseline!r}; known systems: {', '.join(sorted(known))}")
        baseline = opts.baseline
        if baseline not in systems:
            systems.append(baseline)
    elif len(systems) >= 2:
        baseline = sorted(systems)[0]
    if baseline is not None:  # the baseline first, the others in the order given
        systems = [baseline] + [s for s in systems if s != baseline]

    labels = _effective_labels(session)
    if labels.empty:
        raise NdcgLabelingError("no consensus labels in the database: run `ndcg-labeling consensus` first")
    queries = _queries(session)

    # judged queries, and those without a relevant document
    best = labels.groupby("query")["value"].max()
    judged_q = best.index.to_numpy(dtype=np.int64)
    no_relevant = best.to_numpy() < opts.relevant_threshold - _EPS
    n_no_relevant = int(no_relevant.sum())
    scored_q = judged_q if opts.empty == "zero" else judged_q[~no_relevant]
    scored_q = np.sort(scored_q)
    if scored_q.size == 0:
        raise NdcgLabelingError(f"no query has a relevant document (label >= {opts.relevant_threshold:g}); "
                                "use --empty zero to score them anyway")
    qinfo = queries.set_index("query").reindex(scored_q)
    ext_ids = qinfo["query_id"].to_numpy(dtype=object)
    qtypes = qinfo["query_type"].fillna(UNTYPED).to_numpy(dtype=object)
    nq = scored_q.size

    # labels as sorted integer keys for vectorised lookup, and the ideal_labels array
    doc_span = 1 << 31  # (query, document) row ids as one int64 key; ids are 32-bit integers
    lab = labels[labels["query"].isin(scored_q)]
    lab_q = lab["query"].to_numpy(dtype=np.int64)
    lab_d = lab["document"].to_numpy(dtype=np.int64)
    lab_v = lab["value"].to_numpy(dtype=np.float64)
    keys = lab_q * doc_span + lab_d
    key_order = np.argsort(keys, kind="stable")
    keys_sorted, values_sorted = keys[key_order], lab_v[key_order]
    row_of_lab = np.searchsorted(scored_q, lab_q)
    by_row = np.argsort(row_of_lab, kind="stable")
    ideal = _pad(row_of_lab[by_row], lab_v[by_row], nq)

    # rankings of the chosen systems, ordered, in one SELECT
    rank_rows = _load_rankings(session, [known[s] for s in systems], k_cut)
    ranked_queries = np.unique(rank_rows[:, 1]) if len(rank_rows) else np.empty(0, np.int64)

    per_system: dict[str, dict[str, Array]] = {}
    missing_counts: dict[str, int] = {}
    coverage_rows: list[Array] = []
    for s in systems:
        rows = rank_rows[rank_rows[:, 0] == known[s]]
        qrow = np.searchsorted(scored_q, rows[:, 1])
        qrow_c = np.minimum(qrow, nq - 1)
        keep = scored_q[qrow_c] == rows[:, 1]
        rows, qrow = rows[keep], qrow[keep]
        returned = np.zeros(nq, dtype=bool)
        returned[qrow] = True
        missing_counts[s] = int(nq - returned.sum())
        if len(rows):
            starts = np.r_[0, np.flatnonzero(np.diff(qrow)) + 1]
            lengths = np.diff(np.r_[starts, len(rows)])
            pos = np.arange(len(rows)) - np.repeat(starts, lengths)
        else:
            pos = np.empty(0, np.int64)
        width = int(pos.max()) + 1 if len(pos) else 1
        if k_cut is not None:
            width = min(width, k_cut)
        inside = pos < width
        r, p, d = qrow[inside], pos[inside], rows[inside, 2]
        scores = np.full((nq, width), np.nan)
        scores[r, p] = width - p  # distinct, descending: the stored rank order
        label_arr = np.full((nq, width), np.nan)
        k = scored_q[r] * doc_span + d
        hit = np.searchsorted(keys_sorted, k)
        hit_c = np.minimum(hit, max(len(keys_sorted) - 1, 0))
        found = (keys_sorted[hit_c] == k) if len(keys_sorted) else np.zeros(len(k), bool)
        label_arr[r[found], p[found]] = values_sorted[hit_c[found]]
        values = compute_metrics(parsed, scores, label_arr, ideal_labels=ideal, gain=opts.gain,
                                 relevant_threshold=opts.relevant_threshold, empty="zero")
        out: dict[str, Array] = {}
        for mt in parsed:
            v = np.asarray(values[mt.name], dtype=np.float64).copy()
            if mt.family == "judged" or opts.missing == "skip":
                v[~returned] = np.nan
            out[mt.name] = v
        per_system[s] = out
        cov = np.asarray(judged_at_k(scores, label_arr, coverage_k, empty="nan"), dtype=np.float64)
        cov[~returned] = np.nan
        coverage_rows.append(cov)

    groups = _groups(qtypes, opts.by)
    query_types = [g for g in groups if g != ALL]

    # summary: mean, n and bootstrap CI per (system, group, metric); resamples shared by all systems
    summary_parts = []
    comparison_parts = []
    coverage_records = []
    for gi, (gname, gmask) in enumerate(groups.items()):
        idx = np.flatnonzero(gmask)
        mats = {s: np.column_stack([per_system[s][n][idx] for n in metric_names]) for s in systems}
        parts = []
        for si, s in enumerate(systems):
            mat = mats[s]
            finite = np.isfinite(mat)
            n = finite.sum(axis=0)
            with np.errstate(invalid="ignore"):
                mean = np.where(n > 0, np.nansum(mat, axis=0) / np.maximum(n, 1), np.nan)
            parts.append(pd.DataFrame({"system": s, "query_type": gname, "metric": metric_names,
                                       "value": mean, "n_queries": n}))
            cov = coverage_rows[si][idx]
            coverage_records.append({"system": s, "query_type": gname, "judged": float(np.nanmean(cov))
                                     if np.isfinite(cov).any() else float("nan"),
                                     "n_queries": int(np.isfinite(cov).sum())})
        blocks = [mats[s] for s in systems]
        comparison = None
        if baseline is not None and len(systems) > 1:
            comparison, diffs = _compare(mats, systems, baseline, metric_names, gname, opts, gi)
            blocks.append(diffs)
        # one bootstrap pass for every system and every difference of this group (paired resamples)
        low, high = bootstrap_ci(np.hstack(blocks), opts.n_bootstrap, opts.seed + gi, opts.confidence)
        width = len(metric_names)
        for si, part in enumerate(parts):
            part["ci_low"] = low[si * width : (si + 1) * width]
            part["ci_high"] = high[si * width : (si + 1) * width]
            summary_parts.append(part)
        if comparison is not None:
            start = len(systems) * width
            comparison["diff_ci_low"] = low[start:]
            comparison["diff_ci_high"] = high[start:]
            comparison_parts.append(comparison)
    summary = pd.concat(summary_parts, ignore_index=True)
    summary["n_queries"] = summary["n_queries"].astype(np.int64)
    comparisons = pd.concat(comparison_parts, ignore_index=True) if comparison_parts else pd.DataFrame(
        columns=["system", "baseline", "query_type", "metric", "n_queries", "baseline_value", "value", "diff",
                 "diff_ci_low", "diff_ci_high", "t_p", "t_p_holm", "rand_p", "rand_p_holm", "wins", "ties",
                 "losses"])
    if len(comparisons):
        for col in ("t_p", "rand_p"):
            comparisons[f"{col}_holm"] = comparisons.groupby(["query_type", "metric"])[col].transform(
                lambda p: pd.Series(holm(p.to_numpy()), index=p.index))
    coverage = pd.DataFrame(coverage_records)

    per_query_parts = []
    for s in systems:
        for name in metric_names:
            v = per_system[s][name]
            ok = np.isfinite(v)
            per_query_parts.append(pd.DataFrame({"system": s, "query_id": ext_ids[ok], "query_type": qtypes[ok],
                                                 "metric": name, "value": v[ok]}))
    per_query = pd.concat(per_query_parts, ignore_index=True)

    qtype_of = queries.set_index("query")["query_type"]
    label_frame = pd.DataFrame({"query_type": qtype_of.reindex(labels["query"]).fillna(UNTYPED).to_numpy(),
                                "value": labels["value"].to_numpy()})

    counts_info: dict[str, Any] = {
        "judged_queries": int(judged_q.size), "scored_queries": int(nq),
        "no_relevant_queries": n_no_relevant, "empty": opts.empty, "missing": opts.missing,
        "missing_by_system": missing_counts,
        "ranked_queries_without_labels": int(np.setdiff1d(ranked_queries, judged_q).size),
        "labels": len(labels),
    }
    notes = _notes(counts_info, opts)
    warnings = _coverage_warnings(coverage, coverage_k)
    return ReportResult(options=opts, systems=systems, baseline=baseline, metrics=metric_names,
                        query_types=query_types, summary=summary, per_query=per_query, comparisons=comparisons,
                        coverage=coverage, coverage_k=coverage_k, labels=label_frame, counts=counts_info,
                        notes=notes, warnings=warnings)


def _pad(rows: Array, values: Array, n_rows: int) -> Array:
    """NaN-padded ``(n_rows, max count)`` array from values grouped by (sorted) ``rows``."""
    counts = np.bincount(rows, minlength=n_rows)
    width = max(int(counts.max()) if counts.size else 0, 1)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    pos = np.arange(len(rows)) - np.repeat(starts, counts)
    out = np.full((n_rows, width), np.nan)
    out[rows, pos] = values
    return out


def _groups(qtypes: Array, by: str) -> dict[str, Array]:
    groups: dict[str, Array] = {}
    if by == "query-type":
        for t in sorted(set(qtypes.tolist())):
            groups[str(t)] = qtypes == t
    groups[ALL] = np.ones(len(qtypes), dtype=bool)
    return groups


def _compare(mats: dict[str, Array], systems: list[str], baseline: str, metric_names: list[str],
             gname: str, opts: ReportOptions, gi: int) -> tuple[pd.DataFrame, Array]:
    """Paired comparison of every other system with the baseline in one query group.

    The differences of all systems and metrics are columns of one matrix, so the sign flips are
    shared and computed with one matrix product. Returns the rows (without the difference's
    interval, which the caller fills from its shared bootstrap) and the differences (n x columns).
    """
    others = [s for s in systems if s != baseline]
    base = mats[baseline]
    m_count = len(metric_names)
    other = np.hstack([mats[s] for s in others])
    base_rep = np.tile(base, (1, len(others)))
    both = np.isfinite(base_rep) & np.isfinite(other)
    diffs = np.where(both, other - base_rep, np.nan)
    n = both.sum(axis=0)
    t_p = np.full(diffs.shape[1], np.nan)
    r_p = np.full(diffs.shape[1], np.nan)
    full = both.all(axis=0)
    seed = opts.seed + 7919 * (gi + 1)
    if full.any():  # the common case: every query scored for both systems; one vectorised test
        t_p[full] = _ttest_p(diffs[:, full])
        r_p[full] = randomization_p(diffs[:, full], opts.n_permutations, seed)
    for j in np.flatnonzero(~full):
        d = diffs[both[:, j], j][:, None]
        t_p[j] = _ttest_p(d)[0]
        r_p[j] = randomization_p(d, opts.n_permutations, seed + 1 + int(j))[0]
    with np.errstate(invalid="ignore"):
        base_mean = np.where(both, base_rep, 0).sum(axis=0) / np.maximum(n, 1)
        mean = np.where(both, other, 0).sum(axis=0) / np.maximum(n, 1)
    d0 = np.nan_to_num(diffs)
    frame = pd.DataFrame({
        "system": np.repeat(others, m_count), "baseline": baseline, "query_type": gname,
        "metric": metric_names * len(others), "n_queries": n,
        "baseline_value": np.where(n > 0, base_mean, np.nan), "value": np.where(n > 0, mean, np.nan),
        "diff": np.where(n > 0, mean - base_mean, np.nan), "diff_ci_low": np.nan, "diff_ci_high": np.nan,
        "t_p": t_p, "t_p_holm": np.nan, "rand_p": r_p, "rand_p_holm": np.nan,
        "wins": (both & (d0 > _EPS)).sum(axis=0), "ties": (both & (np.abs(d0) <= _EPS)).sum(axis=0),
        "losses": (both & (d0 < -_EPS)).sum(axis=0),
    })
    return frame, diffs


def _notes(c: dict[str, Any], opts: ReportOptions) -> list[str]:
    notes = [f"{c['scored_queries']} queries scored ({c['judged_queries']} with at least one label, "
             f"{c['labels']:,} labels)"]
    k = c["no_relevant_queries"]
    if k:
        be = "is" if k == 1 else "are"
        verb = f"{be} scored as 0 (--empty zero)" if opts.empty == "zero" else f"{be} left out (--empty zero includes them)"
        notes.append(f"{k} {'query has' if k == 1 else 'queries have'} no relevant document "
                     f"(label >= {opts.relevant_threshold:g}) and {verb}")
    for s, k in c["missing_by_system"].items():
        if k:
            how = "left out of its numbers (--missing skip)" if opts.missing == "skip" else "counted as 0"
            notes.append(f"{s} returned nothing for {k} judged {'query' if k == 1 else 'queries'}: {how}")
    if c["ranked_queries_without_labels"]:
        k = c["ranked_queries_without_labels"]
        notes.append(f"{k} ranked {'query has' if k == 1 else 'queries have'} no label and "
                     f"{'is' if k == 1 else 'are'} not scored")
    return notes


def _coverage_warnings(coverage: pd.DataFrame, k: int) -> list[str]:
    overall = coverage[coverage["query_type"] == ALL]
    low = overall[overall["judged"] < JUDGED_WARN_BELOW]
    if low.empty:
        return []
    names = low["system"].tolist()
    shares = ", ".join(f"{s} {v:.2f}" for s, v in zip(low["system"], low["judged"], strict=True))
    opts = " ".join(f"--system {s}" for s in names)
    return [f"unsafe comparison: judged@{k} is below {JUDGED_WARN_BELOW:g} ({shares}); unjudged documents count "
            f"as gain 0, so these numbers are lower bounds. Pool the holes with: "
            f"ndcg-labeling tasks create BATCH {opts} --depth {k} --scale SCALE --overlap N --graders A,B,C"]


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


def _nest(frame: pd.DataFrame, keys: list[str], fields: list[str]) -> dict[str, Any]:
    """``{key1: {key2: ... {field: value}}}`` from the rows of ``frame`` (NaN -> None)."""
    out: dict[str, Any] = {}
    for row in frame[keys + fields].itertuples(index=False, name=None):
        node = out
        for k in row[: len(keys) - 1]:
            node = node.setdefault(str(k), {})
        node[str(row[len(keys) - 1])] = {f: _plain(v) for f, v in zip(fields, row[len(keys):], strict=True)}
    return out


def report_as_dict(result: ReportResult) -> dict[str, Any]:
    """The report as nested JSON-ready data (NaN -> None):

    ``results[system][query_type][metric] = {value, n_queries, ci_low, ci_high}``,
    ``comparisons[system][query_type][metric] = {n_queries, baseline_value, value, diff, diff_ci_low,
    diff_ci_high, t_p, t_p_holm, rand_p, rand_p_holm, wins, ties, losses}`` (against ``baseline``),
    ``coverage[system][query_type] = {judged, n_queries}`` and, with per-query output,
    ``per_query[system][query_id] = {query_type, <metric>: value, ...}``.
    """
    o = result.options
    data: dict[str, Any] = {
        "options": {"systems": result.systems, "baseline": result.baseline, "metrics": result.metrics,
                    "by": o.by, "gain": o.gain, "relevant_threshold": o.relevant_threshold, "empty": o.empty,
                    "missing": o.missing, "confidence": o.confidence, "n_bootstrap": o.n_bootstrap,
                    "n_permutations": o.n_permutations, "seed": o.seed, "judged_k": result.coverage_k},
        "baseline": result.baseline,
        "counts": result.counts,
        "notes": result.notes,
        "warnings": result.warnings,
        "results": _nest(result.summary, ["system", "query_type", "metric"],
                         ["value", "n_queries", "ci_low", "ci_high"]),
        "comparisons": _nest(result.comparisons, ["system", "query_type", "metric"],
                             ["n_queries", "baseline_value", "value", "diff", "diff_ci_low", "diff_ci_high", "t_p",
                              "t_p_holm", "rand_p", "rand_p_holm", "wins", "ties", "losses"]),
        "coverage": _nest(result.coverage, ["system", "query_type"], ["judged", "n_queries"]),
    }
    if o.per_query or o.by == "query":
        per_query: dict[str, Any] = {}
        pq = result.per_query
        for system, qid, qtype, metric, value in pq[["system", "query_id", "query_type", "metric", "value"]].itertuples(
                index=False, name=None):
            entry = per_query.setdefault(system, {}).setdefault(str(qid), {"query_type": qtype})
            entry[metric] = _plain(value)
        data["per_query"] = per_query
    return data


def agreement_by_query_type(*, session: Session) -> tuple[list[dict[str, Any]] | None, str | None]:
    """Agreement rows (``scope`` = query type, ``all`` first) from the agreement pipeline, and a note.

    Returns ``(None, reason)`` when the agreement pipeline is not available or there is nothing to
    measure, so a report can leave the section out and say why.
    """
    try:
        from ndcg_labeling.pipeline.agreement import agreement_report
    except ImportError:
        return None, "Agreement is not shown: this version has no agreement pipeline."
    try:
        rep = agreement_report(session=session, by="query-type")
    except NdcgLabelingError as exc:
        return None, f"Agreement is not shown: {exc}"
    note = "; ".join(rep.notes) if rep.notes else None
    return list(rep.rows), note
