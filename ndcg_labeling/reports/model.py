"""The report's data model: what to score (:class:`ReportOptions`), the finished result
(:class:`ReportResult`) and its JSON-ready form (:func:`report_as_dict`).

It lives with the renderers so that they never import the pipeline: the pipeline builds a
``ReportResult``, the renderers only format it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ndcg_labeling.choices import EmptyQueries, Gain, MissingRuns, ReportGrouping

DEFAULT_METRICS: tuple[str, ...] = ("ndcg@5", "ndcg@10", "mrr@10", "map@10", "p@10", "judged@10")
ALL = "all"  # the query_type of the overall rows
UNTYPED = "untyped"  # the query_type of queries stored without one
SEED = 20240601
#: the level at which a Holm-corrected p-value counts as significant (headline, stars, gate)
SIGNIFICANCE = 0.05
#: the power at which the report states the minimum detectable difference (MDE) of a comparison
POWER = 0.8
#: judged@k below this (any system, overall) makes the comparison unsafe: the report warns
JUDGED_WARN_BELOW = 0.9


HEADLINE_METRIC = "ndcg@10"


def headline_metric(metrics: Sequence[str], options: ReportOptions | None = None) -> str:
    """The metric a one-metric view shows (the headline, the W/T/L column, the moved queries, the demo's
    tables), the same in every format: ``options.headline_metric`` when set (``report --gate`` sets it),
    else ndcg@10 when it was asked for, else the first metric that is not judged@k, else the first."""
    if options is not None and options.headline_metric is not None:
        return options.headline_metric
    if HEADLINE_METRIC in metrics:
        return HEADLINE_METRIC
    return next((m for m in metrics if not m.startswith("judged")), metrics[0])


def grouping_phrase(by: str) -> str:
    """How the summary rows are grouped, in words for titles: "per query type" only when they are
    (``--by query-type``); with ``none`` or ``query`` the summary holds the overall rows only."""
    return "per query type" if by == "query-type" else "over all queries"


@dataclass(frozen=True)
class ReportOptions:
    """What to score and how. See :func:`build_report`."""

    systems: Sequence[str] = ()
    baseline: str | None = None
    metrics: Sequence[str] = DEFAULT_METRICS
    by: str = ReportGrouping.query_type.value  # a ReportGrouping value
    per_query: bool = False
    gain: str = Gain.exponential.value  # a Gain value
    relevant_threshold: float = 1.0
    empty: str = EmptyQueries.skip.value  # an EmptyQueries value (not the kernels' EmptyValue)
    missing: str = MissingRuns.zero.value  # a MissingRuns value
    n_bootstrap: int = 2000
    n_permutations: int = 10_000
    confidence: float = 0.95
    seed: int = SEED
    #: the metric of the headline, the moved queries and W/T/L; None: ndcg@10 if asked, else the first
    headline_metric: str | None = None
    #: with a single named system, compare it with the default baseline (``report --gate --system S``)
    compare_single: bool = False
    #: label-quality caveats (agreement, pending adjudication) and the queries that moved; off for ``plan``
    decide: bool = True
    #: how many of the largest gains and losses per comparison the report lists
    n_moved: int = 10


@dataclass
class LabelCaveats:
    """How far the labels behind the numbers can be trusted, per query type (``all`` included).

    * ``alpha``: Krippendorff's alpha of the grades per query type (None: not measurable);
    * ``pending``: labelled items flagged for adjudication and not yet adjudicated;
    * ``items``: labelled (query, document) items of the scored queries;
    * ``top_k_rows`` / ``top_k_unjudged`` / ``top_k_pending``: (system, query, rank <= k) rows of the
      scored queries, those without a label and those whose label is pending adjudication;
    * ``untrusted_graders``: graders whose gold accuracy marks them untrusted (None: no quality data);
    * ``judge_filled``: labelled items whose consensus a model judge filled (``consensus --judge-fills``);
    * ``notes``: why a caveat could not be measured.
    """

    k: int
    alpha: dict[str, float | None] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)
    items: dict[str, int] = field(default_factory=dict)
    top_k_rows: dict[str, int] = field(default_factory=dict)
    top_k_unjudged: dict[str, int] = field(default_factory=dict)
    top_k_pending: dict[str, int] = field(default_factory=dict)
    untrusted_graders: list[str] | None = None
    agreement_rows: list[dict[str, Any]] | None = None
    notes: list[str] = field(default_factory=list)
    judge_filled: dict[str, int] = field(default_factory=dict)


@dataclass
class ReportResult:
    """Everything a renderer needs.

    * ``summary``: one row per (system, query_type, metric) with ``value`` (mean), ``n_queries``,
      ``ci_low``, ``ci_high``; query_type ``all`` for the overall rows.
    * ``per_query``: one row per (system, query_id, query_type, metric) with ``value`` (NaN rows left out).
    * ``comparisons``: one row per (system, query_type, metric) for every system but the baseline:
      ``baseline, n_queries, baseline_value, value, diff, diff_ci_low, diff_ci_high, t_p, t_p_holm,
      rand_p, rand_p_holm, wins, ties, losses, diff_sd`` (standard deviation of the per-query
      differences) and ``mde`` (the difference a paired t-test on these queries detects with
      :data:`POWER` at level :data:`SIGNIFICANCE`).
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
    caveats: LabelCaveats | None = None
    #: per compared system: ``{"gains": [...], "losses": [...]}``, each a moved query (see report_moved)
    moved: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    #: per group the best system on the headline metric and its paired t-test against the runner-up
    leaders: pd.DataFrame | None = None


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
    ``coverage[system][query_type] = {judged, n_queries}``, ``headline`` (a list of statements, see
    :func:`ndcg_labeling.reports.headline.headline_items`), ``caveats`` (label quality per query type),
    ``moved[system] = {gains, losses}`` (the queries that moved) and, with per-query output,
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
                              "t_p_holm", "rand_p", "rand_p_holm", "wins", "ties", "losses", "diff_sd", "mde",
                              "t_ci_low", "t_ci_high"]),
        "coverage": _nest(result.coverage, ["system", "query_type"], ["judged", "n_queries"]),
    }
    from ndcg_labeling.reports.headline import headline_items

    data["headline"] = headline_items(result)
    data["caveats"] = None if result.caveats is None else _caveats_dict(result.caveats)
    data["moved"] = result.moved
    if o.per_query or o.by == "query":
        per_query: dict[str, Any] = {}
        pq = result.per_query
        for system, qid, qtype, metric, value in pq[["system", "query_id", "query_type", "metric", "value"]].itertuples(
                index=False, name=None):
            entry = per_query.setdefault(system, {}).setdefault(str(qid), {"query_type": qtype})
            entry[metric] = _plain(value)
        data["per_query"] = per_query
    return data


def _caveats_dict(cv: LabelCaveats) -> dict[str, Any]:
    """The caveats per query type: ``{query_type: {alpha, items, pending, top_k_rows, top_k_unjudged,
    top_k_pending}}`` under ``by_query_type``, with ``k``, ``untrusted_graders`` and ``notes``."""
    types = sorted(set(cv.items) | set(cv.top_k_rows) | set(cv.alpha))
    per_type = {t: {"alpha": cv.alpha.get(t), "items": cv.items.get(t, 0), "pending": cv.pending.get(t, 0),
                    "top_k_rows": cv.top_k_rows.get(t, 0), "top_k_unjudged": cv.top_k_unjudged.get(t, 0),
                    "top_k_pending": cv.top_k_pending.get(t, 0), "judge_filled": cv.judge_filled.get(t, 0)}
                for t in types}
    return {"k": cv.k, "by_query_type": per_type, "untrusted_graders": cv.untrusted_graders, "notes": cv.notes}
