"""The ``report`` use case: score every system's stored rankings against the effective labels.

Data flow, all in bulk (one SELECT per table, no ORM object per row):

1. effective labels (consensus value, overridden by the newest adjudication) -> ``(query, document,
   value)`` arrays;
2. the queries with at least one label are the *judged* queries; those without a relevant document
   (``value >= relevant_threshold``) are left out unless ``empty="zero"``;
3. per system, the stored rankings become ranked relevance lists, as ``eval``'s join makes them from
   files (:class:`~ndcg_labeling.metrics.trec_measures.RankedLists`: each query's labels in rank order,
   an unlabelled retrieved document unjudged, i.e. gain 0), with every labelled document of each query
   counted per label, retrieved or not, so the ideal DCG is the same for every system;
4. :func:`ndcg_labeling.metrics.registry.compute_on_lists`, the ranked-list engine of ``eval``, scores
   all queries at once (exponential gain is trec_eval's NDCG over the gains 2^label - 1; binary gain
   scores labels made 0/1 at the relevant threshold with linear gain, trec_eval's NDCG of binary qrels);
5. aggregation per query type and overall: mean, n, a 95 % percentile bootstrap interval; with two or
   more systems the difference to the baseline, a paired t-test (``scipy.stats.ttest_rel``), a paired
   randomization (sign-flip) test, Holm's correction over the systems compared with the baseline, and
   wins / ties / losses.

Conventions (decided here, documented in docs/report.md):

* A judged query for which a system returned nothing scores 0 for that system (``missing="zero"``)
  or is left out of that system's numbers (``missing="skip"``, as trec_eval does).
* ``judged@k`` of a query the system returned nothing for is undefined and left out of judged@k.
* Resampling uses fixed seeds, so the same database gives the same intervals and p-values; the
  resamples of a query group are shared by all systems (paired).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from ndcg_labeling.choices import EmptyQueries, Gain, MissingRuns, ReportGrouping
from ndcg_labeling.db import reads
from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.results import (
    ALL,
    JUDGED_WARN_BELOW,
    POWER,
    SIGNIFICANCE,
    UNTYPED,
    LabelCaveats,
    ReportOptions,
    ReportResult,
    headline_metric,
)
from ndcg_labeling.sources import judge_gate
from ndcg_labeling.stats import TIE_EPS as _EPS
from ndcg_labeling.stats import (
    bonferroni,
    bootstrap_ci,
    contain,
    holm,
    minimum_detectable_effect,
    paired_t_interval,
    randomization_p,
)
from ndcg_labeling.stats import paired_ttest_p as _ttest_p

BY_CHOICES = tuple(c.value for c in ReportGrouping)
GAIN_CHOICES = tuple(c.value for c in Gain)
EMPTY_CHOICES = tuple(c.value for c in EmptyQueries)
MISSING_CHOICES = tuple(c.value for c in MissingRuns)
Array = NDArray[Any]
_DOC_SPAN = 1 << 31  # (query, document) row ids as one int64 key; ids are 32-bit integers


def _check_options(options: ReportOptions) -> list[Any]:
    from ndcg_labeling.metrics import parse_metric

    # The "--name" spelling is kept because callers (and a test) match these messages.
    for name, value, choices in (("--by", options.by, BY_CHOICES), ("--gain", options.gain, GAIN_CHOICES),
                                 ("--empty", options.empty, EMPTY_CHOICES),
                                 ("--missing", options.missing, MISSING_CHOICES)):
        if value not in choices:
            raise NdcgLabelingError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    if not np.isfinite(options.relevant_threshold) or options.relevant_threshold < 0:  # 0: every judged document
        raise NdcgLabelingError(f"relevant_threshold must be a number >= 0, got {options.relevant_threshold}")
    if not options.metrics:
        raise NdcgLabelingError("name at least one metric (such as ndcg@10)")
    parsed = []
    for name in options.metrics:
        try:
            parsed.append(parse_metric(name))
        except ValueError as exc:
            raise NdcgLabelingError(str(exc).removeprefix("parse_metric: ")) from None
    names = [p.name for p in parsed]
    if len(set(names)) != len(names):
        raise NdcgLabelingError(f"a metric is named twice: {', '.join(names)}")
    if options.headline_metric is not None and options.headline_metric not in names:
        raise NdcgLabelingError(f"the headline metric {options.headline_metric} is not among the metrics: "
                                f"{', '.join(names)}")
    return parsed


def gate_metrics(metrics: tuple[str, ...], gate: str | None) -> tuple[tuple[str, ...], str | None]:
    """The metrics of ``report --gate`` and the gate metric's canonical name: names are case-insensitive
    (``--gate NDCG@10`` with the default ``ndcg@10`` is one metric); the gate metric is added first when it
    is not among ``metrics``."""
    from ndcg_labeling.metrics import parse_metric

    if gate is None:
        return metrics, None
    try:
        name = parse_metric(gate).name
        known = {parse_metric(m).name for m in metrics}
    except ValueError as exc:
        raise NdcgLabelingError(str(exc).removeprefix("parse_metric: ")) from None
    return (metrics if name in known else (name, *metrics)), name


@dataclass
class _Loaded:
    """What :func:`_load` read: the systems, the scored queries and their labels, the rankings."""

    systems: list[str]
    baseline: str | None
    labels: reads.EffectiveLabelRows
    queries: pd.DataFrame  # query (row id), query_id, query_type
    scored_q: NDArray[np.int64]  # sorted row ids of the scored queries
    judged_q: NDArray[np.int64]
    n_no_relevant: int
    rank_rows: NDArray[np.int64]  # system id, query, document in rank order
    system_ids: dict[str, int]


@dataclass
class _Scored:
    per_system: dict[str, dict[str, Array]]  # system -> metric -> per-query values (NaN: left out)
    coverage_rows: list[Array]  # per system, judged@k per query
    missing_counts: dict[str, int]


def _resolve_systems(opts: ReportOptions, known: dict[str, int]) -> tuple[list[str], str | None]:
    """The systems to score (baseline first) and the baseline (None with one system)."""
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
    elif opts.compare_single and len(known) >= 2:  # the gate: one named system against the default baseline
        baseline = sorted(s for s in known if s not in systems)[0] if systems[0] == sorted(known)[0] \
            else sorted(known)[0]
        systems.append(baseline)
    if baseline is not None:  # the baseline first, the others in the order given
        systems = [baseline] + [s for s in systems if s != baseline]
    return systems, baseline


def _load(session: Session, opts: ReportOptions, k_cut: int | None) -> _Loaded:
    """Read everything the report needs, in bulk: systems, effective labels, queries, rankings."""
    known = reads.system_ids(session=session)
    systems, baseline = _resolve_systems(opts, known)
    labels = reads.effective_label_rows(session=session)
    if len(labels) == 0:
        raise NdcgLabelingError("no consensus labels in the database: run `ndcg-labeling consensus` first")
    queries = pd.DataFrame(reads.query_rows(session=session), columns=["query", "query_id", "query_type"])
    queries["query"] = queries["query"].astype(np.int64)
    queries["query_type"] = queries["query_type"].fillna(UNTYPED).replace("", UNTYPED)

    # judged queries, and those without a relevant document
    judged_q, inverse = np.unique(labels.query, return_inverse=True)
    best = np.full(judged_q.size, -np.inf)
    np.maximum.at(best, inverse, labels.value)
    no_relevant = best < opts.relevant_threshold - _EPS
    scored_q = np.sort(judged_q if opts.empty == "zero" else judged_q[~no_relevant])
    if scored_q.size == 0:
        raise NdcgLabelingError(f"no query has a relevant document (label >= {opts.relevant_threshold:g}); "
                                "empty = zero scores them anyway")
    rank_rows = reads.ranking_rows([known[s] for s in systems], k_cut, session=session)
    return _Loaded(systems=systems, baseline=baseline, labels=labels, queries=queries, scored_q=scored_q,
                   judged_q=judged_q.astype(np.int64), n_no_relevant=int(no_relevant.sum()), rank_rows=rank_rows,
                   system_ids=known)


def _score(data: _Loaded, opts: ReportOptions, parsed: list[Any], k_cut: int | None, coverage_k: int) -> _Scored:
    """Per system, the stored rankings as ranked relevance lists (the rank order as stored, holes closed
    up), scored by the ranked-list engine of ``eval``
    (:func:`~ndcg_labeling.metrics.registry.compute_on_lists`)."""
    from ndcg_labeling.metrics.registry import Metric, compute_on_lists
    from ndcg_labeling.metrics.trec_measures import NONPOOL, UNJUDGED, RankedLists, level_counts
    from ndcg_labeling.trec.join import fill_lists, positions

    scored_q, nq = data.scored_q, data.scored_q.size
    lab = data.labels
    lab_row = np.searchsorted(scored_q, lab.query)
    inside_q = scored_q[np.minimum(lab_row, nq - 1)] == lab.query
    keys = lab.query[inside_q] * _DOC_SPAN + lab.document[inside_q]
    key_order = np.argsort(keys, kind="stable")
    value, gain, threshold = lab.value, opts.gain, opts.relevant_threshold
    if gain == "binary":  # implicit-feedback NDCG: relevant (the kernels' >= t) is 1, any other judged label 0
        with np.errstate(invalid="ignore"):
            value = np.where(value >= 0, (value >= threshold).astype(np.float64), value)  # sentinels stay
        gain, threshold = "linear", 1.0  # so mrr, map, p and recall see the same relevant documents
    keys_sorted, values_sorted = keys[key_order], value[inside_q][key_order]
    levels, counts = level_counts(np.where(inside_q, lab_row, -1), value, nq)
    coverage = Metric("judged", coverage_k)

    out = _Scored(per_system={}, coverage_rows=[], missing_counts={})
    for s in data.systems:
        rows = data.rank_rows[data.rank_rows[:, 0] == data.system_ids[s]]
        qrow = np.searchsorted(scored_q, rows[:, 1])
        keep = scored_q[np.minimum(qrow, nq - 1)] == rows[:, 1]
        rows, qrow = rows[keep], qrow[keep]
        pos = positions(qrow, nq)  # rows come by query, in rank order
        if k_cut is not None:
            inside = pos < k_cut
            rows, qrow, pos = rows[inside], qrow[inside], pos[inside]
        k = scored_q[qrow] * _DOC_SPAN + rows[:, 2]
        hit = np.minimum(np.searchsorted(keys_sorted, k), max(len(keys_sorted) - 1, 0))
        found = (keys_sorted[hit] == k) if len(keys_sorted) else np.zeros(len(k), bool)
        label = np.where(found, values_sorted[hit] if len(keys_sorted) else 0.0, NONPOOL)
        rel, num_ret = fill_lists(qrow, pos, np.where(found & (label < 0), UNJUDGED, label), nq, False)
        returned = num_ret > 0
        out.missing_counts[s] = int(nq - returned.sum())
        values = compute_on_lists([*parsed, coverage], RankedLists(rel, num_ret, levels, counts), gain=gain,
                                  relevant_threshold=threshold, empty="zero")
        per_metric: dict[str, Array] = {}
        for mt in parsed:
            v = np.asarray(values[mt.name], dtype=np.float64).copy()
            if mt.family == "judged" or opts.missing == "skip":
                v[~returned] = np.nan
            per_metric[mt.name] = v
        out.per_system[s] = per_metric
        cov = values[coverage.name].copy()
        cov[~returned] = np.nan
        out.coverage_rows.append(cov)
    return out


def _summarise(data: _Loaded, scored: _Scored, opts: ReportOptions, metric_names: list[str],
               qtypes: Array) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Per query group: mean, n and bootstrap interval per (system, metric), judged@k coverage, and
    the comparisons with the baseline. Returns ``(summary, comparisons, coverage)``."""
    systems = data.systems
    summary_parts, comparison_parts, coverage_records = [], [], []
    width = len(metric_names)
    for gi, (gname, gmask) in enumerate(_groups(qtypes, opts.by).items()):
        idx = np.flatnonzero(gmask)
        mats = {s: np.column_stack([scored.per_system[s][n][idx] for n in metric_names]) for s in systems}
        parts = []
        for si, s in enumerate(systems):
            mat = mats[s]
            n = np.isfinite(mat).sum(axis=0)
            with np.errstate(invalid="ignore"):
                mean = np.where(n > 0, np.nansum(mat, axis=0) / np.maximum(n, 1), np.nan)
            parts.append(pd.DataFrame({"system": s, "query_type": gname, "metric": metric_names,
                                       "value": mean, "n_queries": n}))
            cov = scored.coverage_rows[si][idx]
            coverage_records.append({"system": s, "query_type": gname, "judged": float(np.nanmean(cov))
                                     if np.isfinite(cov).any() else float("nan"),
                                     "n_queries": int(np.isfinite(cov).sum())})
        blocks = [mats[s] for s in systems]
        comparison = None
        if data.baseline is not None and len(systems) > 1:
            comparison, diffs = _compare(mats, systems, data.baseline, metric_names, gname, opts, gi)
            blocks.append(diffs)
        # one bootstrap pass for every system and every difference of this group (paired resamples)
        low, high = bootstrap_ci(np.hstack(blocks), opts.n_bootstrap, opts.seed + gi, opts.confidence)
        for si, part in enumerate(parts):
            part["ci_low"], part["ci_high"] = contain(low[si * width : (si + 1) * width],
                                                      high[si * width : (si + 1) * width],
                                                      part["value"].to_numpy(np.float64))
            summary_parts.append(part)
        if comparison is not None:
            start = len(systems) * width
            # the interval of the differences' mean must contain the difference of the means as shown
            diff_low, diff_high = contain(low[start:], high[start:], comparison["diff"].to_numpy(np.float64))
            comparison["diff_ci_low"] = diff_low
            comparison["diff_ci_high"] = diff_high
            comparison_parts.append(comparison)
    summary = pd.concat(summary_parts, ignore_index=True)
    summary["n_queries"] = summary["n_queries"].astype(np.int64)
    comparisons = pd.concat(comparison_parts, ignore_index=True) if comparison_parts else pd.DataFrame(
        columns=["system", "baseline", "query_type", "metric", "n_queries", "baseline_value", "value", "diff",
                 "diff_ci_low", "diff_ci_high", "t_p", "t_p_holm", "rand_p", "rand_p_holm", "wins", "ties",
                 "losses", "diff_sd", "mde", "t_ci_low", "t_ci_high", "t_p_bonf", "n_compared", "t_ci_adj_low",
                 "t_ci_adj_high"])
    if len(comparisons):
        # one bisection for every group (each of its steps costs the same for one row or a thousand)
        comparisons["mde"] = minimum_detectable_effect(comparisons["n_queries"].to_numpy(np.float64),
                                                       comparisons["diff_sd"].to_numpy(np.float64),
                                                       SIGNIFICANCE, POWER)
        # the interval of the test that decides the headline (the paired t-test)
        comparisons["t_ci_low"], comparisons["t_ci_high"] = paired_t_interval(
            comparisons["n_queries"].to_numpy(np.float64), comparisons["diff"].to_numpy(np.float64),
            comparisons["diff_sd"].to_numpy(np.float64), 1.0 - SIGNIFICANCE)
        for col in ("t_p", "rand_p"):
            comparisons[f"{col}_holm"] = comparisons.groupby(["query_type", "metric"])[col].transform(
                lambda p: pd.Series(holm(p.to_numpy()), index=p.index))
        _add_simultaneous(comparisons)
    return summary, comparisons, pd.DataFrame(coverage_records)


def _add_simultaneous(comparisons: pd.DataFrame) -> None:
    """The one story the report tells per comparison (issue 45): the paired t-test, Bonferroni-corrected
    over the systems compared with the baseline in the group (``t_p_bonf``, family size ``n_compared``),
    with its simultaneous interval (``t_ci_adj_low/high``, each at ``1 - 0.05 / n_compared``), which
    excludes 0 exactly when ``t_p_bonf < 0.05``."""
    comparisons["t_p_bonf"], comparisons["n_compared"] = np.nan, 0
    comparisons["t_ci_adj_low"], comparisons["t_ci_adj_high"] = np.nan, np.nan
    for _key, idx in comparisons.groupby(["query_type", "metric"]).groups.items():
        rows = comparisons.loc[idx]
        adjusted, m = bonferroni(rows["t_p"].to_numpy(np.float64))
        low, high = paired_t_interval(rows["n_queries"].to_numpy(np.float64), rows["diff"].to_numpy(np.float64),
                                      rows["diff_sd"].to_numpy(np.float64), 1.0 - SIGNIFICANCE / max(m, 1))
        comparisons.loc[idx, "t_p_bonf"], comparisons.loc[idx, "n_compared"] = adjusted, m
        comparisons.loc[idx, "t_ci_adj_low"], comparisons.loc[idx, "t_ci_adj_high"] = low, high


def _per_query_frame(scored: _Scored, systems: list[str], metric_names: list[str], ext_ids: Array,
                     qtypes: Array) -> pd.DataFrame:
    parts = []
    for s in systems:
        for name in metric_names:
            v = scored.per_system[s][name]
            ok = np.isfinite(v)
            parts.append(pd.DataFrame({"system": s, "query_id": ext_ids[ok], "query_type": qtypes[ok],
                                       "metric": name, "value": v[ok]}))
    return pd.concat(parts, ignore_index=True)


def build_report(*, session: Session, options: ReportOptions | None = None) -> ReportResult:
    """Score the stored rankings of ``options.systems`` (default: every system) against the labels:
    load -> score -> summarise (and compare with the baseline).

    Raises :class:`NotFoundError` for an unknown system or baseline, and :class:`NdcgLabelingError`
    when there is nothing to score (no labels, no rankings) or an option is invalid.
    """
    opts = options or ReportOptions()
    parsed = _check_options(opts)
    metric_names = [p.name for p in parsed]
    ks = [p.k for p in parsed]
    k_cut = None if any(k is None for k in ks) else max(k for k in ks if k is not None)
    coverage_k = next((p.k for p in parsed if p.family == "judged" and p.k), None) or (k_cut or 10)

    data = _load(session, opts, k_cut)
    # labels a judge filled cannot score a system built on the judge's own model (issue 47: lineage)
    judge_gate.refuse_lineage(judge_gate.filling_judges(session=session), data.systems,
                              use="report (labels filled by a judge)", session=session)
    qinfo = data.queries.set_index("query").reindex(data.scored_q)
    ext_ids = qinfo["query_id"].to_numpy(dtype=object)
    qtypes = qinfo["query_type"].fillna(UNTYPED).to_numpy(dtype=object)
    scored = _score(data, opts, parsed, k_cut, coverage_k)
    summary, comparisons, coverage = _summarise(data, scored, opts, metric_names, qtypes)
    per_query = _per_query_frame(scored, data.systems, metric_names, ext_ids, qtypes)

    qtype_of = data.queries.set_index("query")["query_type"]
    label_frame = pd.DataFrame({"query_type": qtype_of.reindex(data.labels.query).fillna(UNTYPED).to_numpy(),
                                "value": data.labels.value})
    ranked_queries = np.unique(data.rank_rows[:, 1]) if len(data.rank_rows) else np.empty(0, np.int64)
    counts_info: dict[str, Any] = {
        "judged_queries": int(data.judged_q.size), "scored_queries": int(data.scored_q.size),
        "no_relevant_queries": data.n_no_relevant, "empty": opts.empty, "missing": opts.missing,
        "missing_by_system": scored.missing_counts,
        "ranked_queries_without_labels": int(np.setdiff1d(ranked_queries, data.judged_q).size),
        "labels": len(data.labels),
    }
    query_types = [g for g in _groups(qtypes, opts.by) if g != ALL]
    caveats, moved, lead = _decide(session, data, scored, opts, parsed, coverage_k, ext_ids, qtypes)
    return ReportResult(caveats=caveats, moved=moved, leaders=lead, options=opts, systems=data.systems, baseline=data.baseline, metrics=metric_names,
                        query_types=query_types, summary=summary, per_query=per_query, comparisons=comparisons,
                        coverage=coverage, coverage_k=coverage_k, labels=label_frame, counts=counts_info,
                        notes=_notes(counts_info, opts), warnings=_coverage_warnings(coverage, coverage_k))


def _decide(session: Session, data: _Loaded, scored: _Scored, opts: ReportOptions, parsed: list[Any],
            coverage_k: int, ext_ids: Array, qtypes: Array) -> tuple[LabelCaveats | None, dict[str, Any],
                                                                     pd.DataFrame | None]:
    """The label-quality caveats, the queries that moved and the leader of each group on the headline
    metric (``opts.decide``)."""
    if not opts.decide:
        return None, {}, None
    from ndcg_labeling.scoring.caveats import label_caveats
    from ndcg_labeling.scoring.leaders import leaders
    from ndcg_labeling.scoring.moved import moved_queries

    name = headline_metric([p.name for p in parsed], opts)
    values = {s: scored.per_system[s][name] for s in data.systems}
    lead = leaders(values, _groups(qtypes, opts.by))
    caveats = label_caveats(session=session, labels=data.labels, rank_rows=data.rank_rows, scored_q=data.scored_q,
                            queries=data.queries, k=coverage_k)
    if data.baseline is None:
        return caveats, {}, lead
    k = next(p.k for p in parsed if p.name == name) or coverage_k
    moved = moved_queries(session=session, metric_values=values,
                          baseline=data.baseline, system_ids=data.system_ids, scored_q=data.scored_q, ext_ids=ext_ids,
                          qtypes=qtypes, rank_rows=data.rank_rows, labels=data.labels, k=k, n_moved=opts.n_moved)
    return caveats, moved, lead


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
    interval, which the caller fills from its shared bootstrap, nor the MDE, which it computes for
    every group at once) and the differences (n x columns).
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
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column with fewer than 2 pairs: sd NaN
        diff_sd = np.where(n >= 2, np.nanstd(diffs, axis=0, ddof=1) if len(diffs) else np.nan, np.nan)
    frame = pd.DataFrame({
        "system": np.repeat(others, m_count), "baseline": baseline, "query_type": gname,
        "metric": metric_names * len(others), "n_queries": n,
        "baseline_value": np.where(n > 0, base_mean, np.nan), "value": np.where(n > 0, mean, np.nan),
        "diff": np.where(n > 0, mean - base_mean, np.nan), "diff_ci_low": np.nan, "diff_ci_high": np.nan,
        "t_p": t_p, "t_p_holm": np.nan, "rand_p": r_p, "rand_p_holm": np.nan,
        "wins": (both & (d0 > _EPS)).sum(axis=0), "ties": (both & (np.abs(d0) <= _EPS)).sum(axis=0),
        "losses": (both & (d0 < -_EPS)).sum(axis=0),
        "diff_sd": diff_sd, "mde": np.nan,  # filled by _summarise for every group at once
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
    shares = ", ".join(f"{s} {v:.2f}" for s, v in zip(low["system"], low["judged"], strict=True))
    # the command that pools the holes is the command-line renderers' hint (reports.headline.coverage_advice)
    return [f"unsafe comparison: judged@{k} is below {JUDGED_WARN_BELOW:g} ({shares}); unjudged documents count "
            f"as gain 0, so these numbers are lower bounds"]
