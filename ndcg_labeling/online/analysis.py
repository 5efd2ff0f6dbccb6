"""The online report from per-request values: arms, windows, offline-online agreement, headline.

Pure: :class:`~ndcg_labeling.online.sums.RequestValues` in, plain rows out. Means come from the
fixed-point sums (:mod:`ndcg_labeling.online.sums`), so they equal the live figures exactly; the
intervals, standard errors and tests from the cluster statistics (:mod:`ndcg_labeling.online.stats`).
A difference is significant when its two-sided p is below :data:`SIGNIFICANCE` (no correction for
multiplicity: the headline is a prompt to look, the table gives every p).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ndcg_labeling.online import stats
from ndcg_labeling.online.sums import BUSINESS, RequestValues, figures, group_sums, merge, window_start

ALL = "all"
SIGNIFICANCE = 0.05
JUDGED_WARN_BELOW = 0.9


@dataclass(frozen=True)
class AnalysisOptions:
    metric: str
    baseline: str
    window_s: float | None = None
    n_resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95
    #: a request whose query has no label: ``skip`` it in the metric's mean (as ``report`` does) or ``zero``
    unjudged: str = "skip"


def iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


def _measures(values: RequestValues, metric: str, unjudged: str = "skip") -> dict[str, NDArray[np.float64]]:
    out = {metric: values.metric_values(unjudged), "ctr": values.clicked.astype(np.float64)}
    if np.isfinite(values.converted).any():
        out["conversion"] = values.converted
    if np.isfinite(values.watch).any():
        out["watch_ratio"] = values.watch
    return out


def _fig_mean(fig: dict[str, Any], measure: str, metric: str) -> tuple[float | None, int]:
    if measure == metric:
        return fig["metric"], fig["n_metric"]
    count = {"ctr": "n", "conversion": "n_converted", "watch_ratio": "n_watch"}[measure]
    return fig[measure], int(fig[count])


def _groups(*columns: NDArray[Any]) -> dict[tuple[Any, ...], NDArray[np.int64]]:
    """Request indices per distinct combination of ``columns`` (one sort, no per-group scan)."""
    if not columns[0].size:
        return {}
    codes, uniques = [], []
    for col in columns:
        u, inv = np.unique(np.asarray([str(v) for v in col.tolist()]), return_inverse=True)
        codes.append(inv.astype(np.int64))
        uniques.append(u)
    key = np.zeros(columns[0].size, np.int64)
    for inv, u in zip(codes, uniques, strict=True):
        key = key * len(u) + inv
    order = np.argsort(key, kind="stable")
    bounds = np.flatnonzero(np.diff(key[order])) + 1
    out = {}
    for part in np.split(order, bounds):
        i = int(part[0])
        out[tuple(col[i] for col in columns)] = part.astype(np.int64)
    return out


def _measure_rows(values: RequestValues, opts: AnalysisOptions, cluster: NDArray[np.int64],
                  idx_of: dict[str, NDArray[np.int64]], fig_of: dict[str, dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (arm, measure) of one scope: the mean (fixed-point sums), cluster bootstrap interval,
    cluster-robust standard error, and the difference to the baseline arm of the same scope."""
    cell: dict[tuple[str, str], dict[str, Any]] = {}
    for arm, idx in idx_of.items():
        fig = fig_of[arm]
        local = np.unique(cluster[idx], return_inverse=True)[1].astype(np.int64)
        for name, vals in _measures(values, opts.metric, opts.unjudged).items():
            mean, n = _fig_mean(fig, name, opts.metric)
            s, c = stats.cluster_sums(vals[idx], local)
            se = stats.cluster_se(s, c, mean) if mean is not None else math.nan
            lo, hi = stats.cluster_bootstrap_ci(s, c, opts.n_resamples, opts.seed, opts.confidence)
            cell[(arm, name)] = {"arm": arm, "measure": name, "n": n, "n_clusters": int(s.size), "mean": mean,
                                 "ci_low": lo, "ci_high": hi, "se": se,
                                 "judged_share": fig["judged_share"] if name == opts.metric else None}
    for (arm, name), row in cell.items():
        base = cell.get((opts.baseline, name))
        diff = (math.nan,) * 4
        if arm != opts.baseline and base is not None and row["mean"] is not None and base["mean"] is not None:
            diff = stats.difference(row["mean"], row["se"], base["mean"], base["se"])
        row.update(diff=None if arm == opts.baseline else diff[0], diff_low=diff[1], diff_high=diff[2], p=diff[3])
    return cell


def _cluster_codes(values: RequestValues) -> NDArray[np.int64]:
    return np.unique(values.cluster.astype(str), return_inverse=True)[1].astype(np.int64)


def _arm_rows(values: RequestValues, opts: AnalysisOptions, arms: list[str], qtypes: list[str]) -> list[dict[str, Any]]:
    sums = group_sums(values, None)
    cluster = _cluster_codes(values)
    by_arm = _groups(values.arm)
    by_arm_qt = _groups(values.arm, values.query_type)
    rows: list[dict[str, Any]] = []
    for qt in [ALL, *qtypes]:
        idx_of = {a: (by_arm[(a,)] if qt == ALL else by_arm_qt[(a, qt)]) for a in arms
                  if (qt == ALL and (a,) in by_arm) or (a, qt) in by_arm_qt}
        fig_of = {a: figures(merge(sums, arm=a, query_type=None if qt == ALL else qt), opts.unjudged) for a in idx_of}
        rows += [{"query_type": qt, **r} for r in _measure_rows(values, opts, cluster, idx_of, fig_of).values()]
    return rows


WINDOW_MEASURE_KEYS = ("ci_low", "ci_high", "diff", "diff_low", "diff_high", "p")


def _window_rows(values: RequestValues, opts: AnalysisOptions) -> list[dict[str, Any]]:
    """Per (window, arm, query type and all): the figures of the sums, and per measure its interval and
    difference to the baseline (``metric_ci_low``, ``ctr_p``, ...; the metric's keys start ``metric_``)."""
    sums = group_sums(values, opts.window_s)
    cluster = _cluster_codes(values)
    starts = window_start(values.ts, opts.window_s)
    by_w_arm = _groups(starts, values.arm)
    by_w_arm_qt = _groups(starts, values.arm, values.query_type)
    windows = sorted({w for _, w, _ in sums}, key=lambda w: (w is None, w or 0.0))
    qtypes = sorted({q for _, _, q in sums})
    rows = []
    for w in windows:
        for qt in [ALL, *qtypes]:
            vecs = {a: merge(sums, arm=a, window=w, query_type=None if qt == ALL else qt) for a in sorted({a for a, _, _ in sums})}
            fig_of = {a: figures(v, opts.unjudged) for a, v in vecs.items() if v[0] > 0}
            idx_of = {a: (by_w_arm[(w, a)] if qt == ALL else by_w_arm_qt[(w, a, qt)]) for a in fig_of}
            cell = _measure_rows(values, opts, cluster, idx_of, fig_of)
            for a, fig in fig_of.items():
                row = {"window_start": iso(w), "window_start_s": w, "arm": a, "query_type": qt, **fig}
                for (arm, name), r in cell.items():
                    if arm == a:
                        prefix = "metric" if name == opts.metric else name
                        row.update({f"{prefix}_{k}": r[k] for k in WINDOW_MEASURE_KEYS})
                rows.append(row)
    return rows


def _agreement(windows: list[dict[str, Any]], opts: AnalysisOptions, arms: list[str],
               business: list[str]) -> list[dict[str, Any]]:
    by = {(r["arm"], r["window_start_s"], r["query_type"]): r for r in windows if r["query_type"] != ALL}
    out = []
    for arm in arms:
        if arm == opts.baseline:
            continue
        for name in business:
            dx, dy = [], []
            for (a, w, qt), r in sorted(by.items(), key=lambda kv: (kv[0][1] or 0.0, kv[0][2])):
                base = by.get((opts.baseline, w, qt))
                if a != arm or base is None or None in (r[name], base[name], r["metric"], base["metric"]):
                    continue
                dx.append(r["metric"] - base["metric"])
                dy.append(r[name] - base[name])
            x, y = np.asarray(dx), np.asarray(dy)
            lo, hi = stats.kendall_ci(x, y, opts.n_resamples, opts.seed, opts.confidence)
            tau = stats.kendall_tau_b(x, y)
            out.append({"arm": arm, "baseline": opts.baseline, "metric": opts.metric, "measure": name,
                        "n_cells": int(x.size), "tau": tau, "ci_low": lo, "ci_high": hi})
    return out


def _p(p: float) -> str:
    return "p n/a" if p is None or math.isnan(p) else ("p < 0.001" if p < 0.001 else f"p = {p:.3f}")


def _change(r: dict[str, Any]) -> str:
    return f"{r['diff']:+.3f} [{r['diff_low']:+.3f}, {r['diff_high']:+.3f}], {_p(r['p'])}"


def _significant(r: dict[str, Any], sign: int) -> bool:
    p, d = r.get("p"), r.get("diff")
    return p is not None and d is not None and not math.isnan(p) and p < SIGNIFICANCE and d * sign > 0


def headline(arm_rows: list[dict[str, Any]], opts: AnalysisOptions) -> list[dict[str, Any]]:
    """One line per (query type, arm, business metric) where the metric improves significantly on the
    baseline while the business metric drops significantly (query types only, not ``all``)."""
    idx = {(r["query_type"], r["arm"], r["measure"]): r for r in arm_rows}
    out = []
    for (qt, arm, name), r in idx.items():
        if qt == ALL or name != opts.metric or arm == opts.baseline or not _significant(r, +1):
            continue
        for bname in BUSINESS:
            b = idx.get((qt, arm, bname))
            if b is None or not _significant(b, -1):
                continue
            text = (f"{qt}: {arm} beats {opts.baseline} on {opts.metric} by {_change(r)}, yet loses on {bname} by "
                    f"{_change(b)} ({r['n']} requests)")
            out.append({"query_type": qt, "arm": arm, "baseline": opts.baseline, "metric": opts.metric,
                        "measure": bname, "text": text})
    return out


def analyse(values: RequestValues, opts: AnalysisOptions) -> dict[str, Any]:
    """``{arms, windows, agreement, headline, warnings, judged}`` of the online report."""
    arms = sorted(set(values.arm.tolist()))
    qtypes = sorted(set(values.query_type.tolist()))
    arm_rows = _arm_rows(values, opts, arms, qtypes)
    windows = _window_rows(values, opts)
    business = [m for m in _measures(values, opts.metric) if m != opts.metric]
    judged = {r["arm"]: r["judged_share"] for r in arm_rows if r["query_type"] == ALL and r["measure"] == opts.metric}
    warnings = [f"arm {a}: only {s:.1%} of the scored positions are judged (below {JUDGED_WARN_BELOW:.0%}); "
                f"unjudged documents count as not relevant" for a, s in judged.items()
                if s is not None and s < JUDGED_WARN_BELOW]
    labelled = values.labelled_mask()
    for a in arms:
        mine = values.arm == a
        n_out = int(np.count_nonzero(mine & ~labelled))
        if n_out:
            how = ("left out of" if opts.unjudged == "skip" else "scored 0 in")
            warnings.append(f"arm {a}: {n_out} of {int(mine.sum())} requests are for queries without any label, "
                            f"{how} the {opts.metric} mean (unjudged={opts.unjudged})")
    return {"arms": arm_rows, "windows": windows, "agreement": _agreement(windows, opts, arms, business),
            "headline": headline(arm_rows, opts), "warnings": warnings, "judged": judged}
