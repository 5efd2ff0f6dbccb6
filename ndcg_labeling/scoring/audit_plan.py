"""``plan --judge GRADER --audit N``: the PPI interval width each audit size should give, predicted from the
judge's labels on every query and people's labels on the audit so far (issue 47; docs/judges.md).

Per system and per paired difference from the baseline, over all queries: the per-query values are the
report's (:func:`ndcg_labeling.scoring.ppi.score_sources`), and :func:`ndcg_labeling.stats.ppi_halfwidths`
turns the audit so far into the 95% half-widths of PPI++ and of people alone at each size (a random audit;
an audit batch's weights are not modelled). It needs three audited queries: before any, nothing measures
how far the judge can be trusted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.results import ReportOptions
from ndcg_labeling.scoring.ppi import score_sources
from ndcg_labeling.stats import ppi_halfwidths

AUDIT_PLAN_COLUMNS = ("metric", "system", "baseline", "queries", "audited_so_far", "audit", "ppi_halfwidth",
                      "human_halfwidth", "width_ratio")


def plan_audit(sizes: Sequence[int], *, session: Session, judge: str, metric: str = "ndcg@10",
               baseline: str | None = None) -> list[dict[str, Any]]:
    """One row per system (and difference from the baseline) and audit size; see the module docstring.
    Raises :class:`NdcgLabelingError` for a size below 3 or an audit so far of fewer than 3 queries, and as
    :func:`~ndcg_labeling.scoring.ppi.score_sources` otherwise."""
    bad = [n for n in sizes if n < 3]
    if not sizes or bad:
        raise NdcgLabelingError(f"--audit must be at least 3 queries, got {bad[0] if bad else 'none'}")
    src = score_sources(session=session, judge=judge, options=ReportOptions(metrics=(metric,), baseline=baseline),
                        min_audit=0)
    n_so_far = int(src.audit.sum())
    if n_so_far < 3:
        raise NdcgLabelingError(f"plan --judge needs people's labels on at least 3 of judge {judge}'s queries to "
                                f"measure the judge against, got {n_so_far} (draw some with `ndcg-labeling tasks "
                                f"create NAME --audit-of BATCH --judge {judge} --budget N`, grade, run consensus)")
    name = src.metrics[0]
    too_many = [n for n in sizes if n > src.population.size]
    if too_many:
        raise NdcgLabelingError(f"--audit {too_many[0]} is more than judge {judge}'s {src.population.size} queries")
    rows: list[dict[str, Any]] = []
    for s in src.systems:
        targets: list[tuple[str | None, np.ndarray, np.ndarray]] = [(None, src.judged[s][name], src.human[s][name])]
        if src.baseline is not None and s != src.baseline:
            b = src.baseline
            targets.append((b, src.judged[s][name] - src.judged[b][name], src.human[s][name] - src.human[b][name]))
        for base, j_vals, h_vals in targets:
            ppi, human = ppi_halfwidths(j_vals, h_vals[src.audit], j_vals[src.audit], np.asarray(sizes))
            for n, p_hw, h_hw in zip(sizes, ppi, human, strict=True):
                rows.append({"metric": name, "system": s, "baseline": base, "queries": int(src.population.size),
                             "audited_so_far": n_so_far, "audit": int(n), "ppi_halfwidth": float(p_hw),
                             "human_halfwidth": float(h_hw),
                             "width_ratio": float(p_hw / h_hw) if h_hw > 0 else None})
    return rows


__all__ = ["AUDIT_PLAN_COLUMNS", "plan_audit"]
