"""The results the use cases hand to the renderers (``report``'s, ``report --gate``'s, ``eval``'s), and what
they were asked for.

The pipeline builds these; the renderers (:mod:`ndcg_labeling.reports`) only format them, so neither
imports the other's internals and the renderers never import the pipeline. Plain data: nothing here
touches the database or formats text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ndcg_labeling.choices import EmptyQueries, Gain, MissingRuns, ReportGrouping
from ndcg_labeling.metrics.trec_measures import FAMILIES, Column

if TYPE_CHECKING:
    import pandas as pd

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
    #: why ``agreement_rows`` is None or what it left out (the agreement pipeline's note), else None
    agreement_note: str | None = None
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
    #: per compared system: ``{"gains": [...], "losses": [...]}``, each a moved query (see scoring.moved)
    moved: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    #: per group the best system on the headline metric and its paired t-test against the runner-up
    leaders: pd.DataFrame | None = None


@dataclass(frozen=True)
class GateRow:
    """One gated (system, group) row of ``report --gate``: the difference to the baseline with the
    t-test's interval, the one-sided Holm-corrected p of a drop beyond ``max_drop``, and the MDE."""

    system: str
    query_type: str
    n_queries: int
    diff: float
    ci_low: float
    ci_high: float
    p_holm: float
    mde: float
    #: ``too few``: fewer queries than a test needs; ``drop``: a significant drop; ``pass``
    outcome: str


@dataclass(frozen=True)
class GateDecision:
    """``report --gate``'s decision: ``failed`` when any row is a significant drop beyond ``max_drop``
    or has too few queries to tell (the rows say which)."""

    metric: str
    baseline: str
    max_drop: float
    rows: list[GateRow]

    @property
    def failed(self) -> bool:
        return any(r.outcome != "pass" for r in self.rows)


@dataclass
class EvalResult:
    """Per-query values of each column (``values[name]``: float array over ``query_ids``, or a list
    of strings for relstring) and the summary row of each (None: the measure has none)."""

    columns: list[Column]
    query_ids: list[str]
    values: dict[str, Any]
    summary: dict[str, Any] = field(default_factory=dict)

    def table(self) -> npt.NDArray[np.float64]:
        """``(queries, numeric columns)`` per-query values (relstring and runid left out)."""
        cols = [c for c in self.columns if FAMILIES[c.family].form != "string"]
        if not cols:
            return np.zeros((len(self.query_ids), 0))
        return np.column_stack([np.asarray(self.values[c.name], dtype=np.float64) for c in cols])

    def rows(self, per_query: bool, summary: bool = True) -> list[tuple[str, str, Any]]:
        """``(measure, query_id, value)`` rows in trec_eval's order."""
        out: list[tuple[str, str, Any]] = []
        if per_query:
            shown = [c for c in self.columns if FAMILIES[c.family].per_query]
            series = [(c, self.values[c.name]) for c in shown]
            per = [v.tolist() if isinstance(v, np.ndarray) else v for _, v in series]
            for i, q in enumerate(self.query_ids):
                out.extend((c.name, q, vals[i]) for (c, _), vals in zip(series, per, strict=True))
        if summary:
            out.extend((c.name, "all", self.summary[c.name]) for c in self.columns if self.summary.get(c.name) is not None)
        return out
