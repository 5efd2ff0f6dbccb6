"""``report --gate``: the decision, taken on a finished report; :func:`ndcg_labeling.reports.headline.gate_line`
says it in one line.

Each gated (system, group) row is tested one-sided: is the true difference (system - baseline) below
``-max_drop``? (paired t-test of the per-query differences against ``-max_drop``, as
``scipy.stats.ttest_1samp(d + max_drop, 0, alternative="less")``). The p-values are Holm-corrected over
every gated row; the gate fails when one is below 0.05, or when a gated row has fewer than
:data:`~ndcg_labeling.stats.MIN_TEST_QUERIES` queries (nothing can be shown either way).
"""

from __future__ import annotations

import math

import numpy as np

from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.results import ALL, POWER, SIGNIFICANCE, GateDecision, GateRow, ReportResult
from ndcg_labeling.stats import MIN_TEST_QUERIES, holm, minimum_detectable_effect, paired_t_p_below


def decide_gate(result: ReportResult, metric: str, max_drop: float, system: str | None = None,
                by_group: bool = False) -> GateDecision:
    """The gate's decision on ``metric``. Rows: the overall group, and every query type with ``by_group``;
    ``system`` (else every compared system). Each row's MDE is the drop beyond ``max_drop`` the test finds
    with 80% power at the strictest Holm level. Raises :class:`NdcgLabelingError` when there is nothing
    to compare."""
    if not (math.isfinite(max_drop) and max_drop >= 0):
        raise NdcgLabelingError(f"--max-drop must be a non-negative number, got {max_drop:g}")
    c = result.comparisons
    if system is not None and system == result.baseline:
        raise NdcgLabelingError(f"--system {system} is the baseline; name the system to gate")
    if result.baseline is None or c.empty:
        raise NdcgLabelingError("the gate compares systems with a baseline: score at least two systems")
    groups = [ALL, *result.query_types] if by_group else [ALL]
    rows = c[(c["metric"] == metric) & (c["query_type"].isin(groups))]
    if system is not None:
        rows = rows[rows["system"] == system]
    rows = rows[rows["n_queries"] > 0]
    if rows.empty:
        raise NdcgLabelingError(f"nothing to gate: no queries scored by both the baseline and the system on {metric}")
    n, diff, sd = (rows[k].to_numpy(np.float64) for k in ("n_queries", "diff", "diff_sd"))
    p_holm = holm(paired_t_p_below(n, diff, sd, -max_drop))
    level = SIGNIFICANCE / len(rows)  # Holm's first (strictest) step
    mde = minimum_detectable_effect(n, sd, alpha=min(2 * level, 0.999), power=POWER)
    out = []
    for i, (_, r) in enumerate(rows.iterrows()):
        n_i = int(r["n_queries"])
        outcome = "too few" if n_i < MIN_TEST_QUERIES else "drop" if p_holm[i] < SIGNIFICANCE else "pass"
        out.append(GateRow(system=str(r["system"]), query_type=str(r["query_type"]), n_queries=n_i,
                           diff=float(r["diff"]), ci_low=float(r.get("t_ci_low", math.nan)),
                           ci_high=float(r.get("t_ci_high", math.nan)), p_holm=float(p_holm[i]),
                           mde=float(mde[i]), outcome=outcome))
    return GateDecision(metric=metric, baseline=result.baseline, max_drop=max_drop, rows=out)
