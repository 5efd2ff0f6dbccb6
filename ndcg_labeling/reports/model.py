"""The report's JSON-ready form (:func:`report_as_dict`) and the words of its grouping.

The result types themselves live in :mod:`ndcg_labeling.results`: the pipeline builds a
``ReportResult``, the renderers only format it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ndcg_labeling.reports.headline import headline_items
from ndcg_labeling.results import LabelCaveats, ReportResult


def grouping_phrase(by: str) -> str:
    """How the summary rows are grouped, in words for titles: "per query type" only when they are
    (``--by query-type``); with ``none`` or ``query`` the summary holds the overall rows only."""
    return "per query type" if by == "query-type" else "over all queries"


def gain_phrase(options: Any) -> str:
    """The gain in words for titles: "linear gain", or for binary the threshold that makes a label 1."""
    if options.gain == "binary":
        return f"binary gain: a label >= {options.relevant_threshold:g} is 1"
    return f"{options.gain} gain"


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
    diff_ci_high, t_p, t_p_holm, rand_p, rand_p_holm, wins, ties, losses, ..., t_p_bonf, n_compared,
    t_ci_adj_low, t_ci_adj_high}`` (against ``baseline``; the last four are what the headline and the
    tables show: the paired t-test Bonferroni-corrected over ``n_compared`` systems, and its simultaneous
    interval),
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
                              "t_ci_low", "t_ci_high", "t_p_bonf", "n_compared", "t_ci_adj_low", "t_ci_adj_high"]),
        "coverage": _nest(result.coverage, ["system", "query_type"], ["judged", "n_queries"]),
    }
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
