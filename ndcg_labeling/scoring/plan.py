"""The ``plan`` use case: how many queries a paired comparison needs to detect a given difference.

Topic-set-size design (Sakai) with the paired t-test: from the standard deviation ``sd`` of the
per-query differences between two systems, the number of queries that detects a true mean
difference ``mde`` with probability ``power`` at two-sided level ``alpha`` (see
:func:`ndcg_labeling.stats.queries_needed`), and the difference the queries at hand can detect.

``sd`` comes from the database (the report's per-query scores of ``system`` minus ``baseline``,
per query type and overall) or is given by the caller (no database needed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.stats import DEFAULT_ALPHA, DEFAULT_POWER, minimum_detectable_effect, queries_needed

#: the columns of a plan row, in output order
PLAN_COLUMNS = ("query_type", "system", "baseline", "metric", "n_queries", "sd", "mde", "power", "alpha",
                "queries_needed", "mde_at_hand")


@dataclass(frozen=True)
class PlanOptions:
    """What to plan for: ``metric`` (a name such as ``ndcg@10``), the difference ``mde`` to detect,
    ``power`` and two-sided ``alpha``; ``sd`` given, or ``baseline`` / ``system`` to measure it
    (default: the report's baseline and every other system)."""

    mde: float
    metric: str = "ndcg@10"
    power: float = DEFAULT_POWER
    alpha: float = DEFAULT_ALPHA
    baseline: str | None = None
    system: str | None = None
    sd: float | None = None


def _check(opts: PlanOptions) -> None:
    if not (math.isfinite(opts.mde) and opts.mde > 0):
        raise NdcgLabelingError(f"--mde must be a positive number, got {opts.mde:g}")
    if not 0 < opts.power < 1:
        raise NdcgLabelingError(f"--power must be between 0 and 1, got {opts.power:g}")
    if not 0 < opts.alpha < 1:
        raise NdcgLabelingError(f"--alpha must be between 0 and 1, got {opts.alpha:g}")
    if opts.sd is not None:
        if not (math.isfinite(opts.sd) and opts.sd >= 0):
            raise NdcgLabelingError(f"--sd must be a non-negative number, got {opts.sd:g}")
        if opts.baseline is not None or opts.system is not None:
            raise NdcgLabelingError("give either --sd or --baseline/--system (the sd is then measured), not both")


def _row(opts: PlanOptions, sd: float, n_at_hand: int | None, **names: Any) -> dict[str, Any]:
    needed: int | None = None
    if math.isfinite(sd):
        try:
            needed = queries_needed(opts.mde, sd, opts.alpha, opts.power)
        except ValueError as exc:
            raise NdcgLabelingError(str(exc).removeprefix("queries_needed: ")) from None
    at_hand = None
    if n_at_hand is not None and math.isfinite(sd) and n_at_hand >= 2:
        at_hand = float(minimum_detectable_effect(n_at_hand, sd, opts.alpha, opts.power))
    return {"query_type": names.get("query_type", "all"), "system": names.get("system"),
            "baseline": names.get("baseline"), "metric": opts.metric, "n_queries": n_at_hand,
            "sd": sd if math.isfinite(sd) else None, "mde": opts.mde, "power": opts.power, "alpha": opts.alpha,
            "queries_needed": needed, "mde_at_hand": at_hand}


def plan_queries(*, session: Session | None, options: PlanOptions) -> list[dict[str, Any]]:
    """Plan rows (:data:`PLAN_COLUMNS`): one for a given ``sd``; else one per (system, query type)
    compared with the baseline, the ``all`` rows first. ``session`` may be None when ``sd`` is given.

    Raises :class:`NdcgLabelingError` for invalid options, fewer than two systems, or an unknown system.
    """
    _check(options)
    if options.sd is not None:
        return [_row(options, float(options.sd), None)]
    if session is None:
        raise NdcgLabelingError("a database is needed to measure the sd (or give --sd)")
    from ndcg_labeling.results import ALL, ReportOptions
    from ndcg_labeling.scoring.report import build_report

    systems = tuple(s for s in (options.baseline, options.system) if s is not None)
    if options.system is not None and options.baseline is None:
        systems = ()  # every system, so the default baseline is the report's
    report_opts = ReportOptions(systems=systems, baseline=options.baseline, metrics=(options.metric,),
                                n_bootstrap=0, n_permutations=0)
    result = build_report(session=session, options=report_opts)
    comparisons = result.comparisons
    if result.baseline is None or comparisons.empty:
        raise NdcgLabelingError("planning needs two systems: name --baseline and --system, or give --sd")
    if options.system is not None:
        if options.system not in result.systems:
            raise NotFoundError(f"unknown system {options.system!r}; known systems: {', '.join(sorted(result.systems))}")
        if options.system == result.baseline:
            raise NdcgLabelingError(f"--system {options.system} is the baseline; name another system")
        comparisons = comparisons[comparisons["system"] == options.system]
    comparisons = comparisons.assign(_all=comparisons["query_type"] != ALL)
    rows = []
    for r in comparisons.sort_values(["_all", "system", "query_type"], kind="stable").itertuples(index=False):
        rows.append(_row(options, float(r.diff_sd), int(r.n_queries), query_type=r.query_type, system=r.system,
                         baseline=r.baseline))
    return rows


def plan_sentence(row: dict[str, Any]) -> str:
    """One plan row in words (for the terminal)."""
    pct = f"{row['power']:.0%} power, alpha {row['alpha']:g}"
    if row["sd"] is None:
        return (f"{row['system']} vs {row['baseline']} ({row['query_type']}): too few queries to measure the sd "
                f"of per-query differences")
    who = "" if row["system"] is None else f"{row['system']} vs {row['baseline']} ({row['query_type']}): "
    text = (f"{who}{row['queries_needed']:,} queries detect a {row['metric']} difference of ±{row['mde']:g} "
            f"at {pct} (sd of per-query differences {row['sd']:.3f})")
    if row["mde_at_hand"] is not None:
        text += f"; the {row['n_queries']} at hand detect ±{row['mde_at_hand']:.3f}"
    return text
