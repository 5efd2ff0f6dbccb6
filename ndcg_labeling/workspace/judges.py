"""The lead's judges page (``/lead/judges``): per LLM judge its runs (requests, cache hits, tokens, price
and cost), the calibration verdicts in force per query type, the labels it filled, the PPI estimate
(``report --estimator ppi --judge``) and its canary results.

Reads only: a judge is run (``judge run``) and calibrated (``calibrate --judge``) from the terminal;
this page shows what they stored. Every function takes the session as a keyword argument.

**Extending it**: a new stored fact about a judge is one more key in :class:`JudgeView` filled by one more
reader here, and one more section in ``lead_admin_judges.html``. The canary section reads
:func:`canary_rows` (the ``judge_checks`` rows of kind ``canary``, revision 0016); the
calibration rows carry the kappa's stored 95 % interval (tau, over systems, has none).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.results import ReportOptions


@dataclass
class JudgeView:
    """One judge: its runs, totals, verdicts in force, the labels it filled, PPI rows and canary rows."""

    name: str
    runs: list[dict[str, Any]] = field(default_factory=list)
    totals: dict[str, Any] = field(default_factory=dict)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    filled: list[dict[str, Any]] = field(default_factory=list)
    ppi: dict[str, Any] | None = None
    ppi_note: str | None = None
    canary: list[dict[str, Any]] = field(default_factory=list)


def _runs(grader: m.Grader, *, session: Session) -> list[dict[str, Any]]:
    r, b = m.JudgeRun, m.GradingBatch
    rows = session.execute(select(r, b.name).join(b, b.id == r.batch_id).where(r.grader_id == grader.id)
                           .order_by(r.id.desc())).all()
    return [{"id": run.id, "batch": batch, "model": run.model, "template": f"{run.template_name} {run.template_version}",
             "n_items": run.n_items, "cached": run.n_cached, "sent": run.n_sent, "graded": run.n_graded,
             "skipped": run.n_skipped, "prompt_tokens": run.prompt_tokens, "completion_tokens": run.completion_tokens,
             "price_in": run.price_in, "price_out": run.price_out, "cost": run.cost,
             "started": run.started_at.strftime("%Y-%m-%d %H:%M") + " UTC",
             "finished": run.finished_at is not None} for run, batch in rows]


def _totals(runs: list[dict[str, Any]]) -> dict[str, Any]:
    costs = [r["cost"] for r in runs if r["cost"] is not None]
    return {"runs": len(runs), "sent": sum(r["sent"] for r in runs), "cached": sum(r["cached"] for r in runs),
            "graded": sum(r["graded"] for r in runs),
            "tokens": sum(r["prompt_tokens"] + r["completion_tokens"] for r in runs),
            "cost": sum(costs) if costs else None, "unpriced": sum(r["cost"] is None for r in runs)}


def _verdicts(grader: m.Grader, *, session: Session) -> list[dict[str, Any]]:
    """The newest stored verdict per (batch, scope): the ``all`` row first, then the query types."""
    newest: dict[tuple[str, str], m.CalibrationVerdict] = {}
    for v in session.execute(select(m.CalibrationVerdict).where(m.CalibrationVerdict.grader_id == grader.id)
                             .order_by(m.CalibrationVerdict.id)).scalars():
        newest[(v.batch, v.scope)] = v
    rows = []
    for (batch, scope), v in sorted(newest.items(), key=lambda kv: (kv[0][0], kv[0][1] != "all", kv[0][1])):
        rows.append({"batch": batch or "every batch", "scope": scope, "agrees": v.agrees, "n": v.n,
                     "verdict": v.verdict, "when": v.created_at.strftime("%Y-%m-%d %H:%M") + " UTC",
                     "kappa": v.kappa, "kappa_interval": (v.kappa_ci_low, v.kappa_ci_high), "tau": v.tau})
    return rows


def _filled(grader: m.Grader, *, session: Session) -> list[dict[str, Any]]:
    """Labels in force that ``consensus --judge-fills`` filled with this judge's grade, per batch."""
    c = m.ConsensusLabel
    rows = session.execute(select(c.batch, func.count()).where(c.filled_by == grader.name).group_by(c.batch)
                           .order_by(c.batch)).all()
    return [{"batch": batch or "every batch", "labels": int(n)} for batch, n in rows]


def canary_rows(grader: m.Grader, *, session: Session) -> list[dict[str, Any]]:
    """The judge's canaries (``judge canary``), newest first: per kind of canary, the share it graded
    relevant (the fooled rate) against the gate's threshold, and the model and prompt it measured."""
    c = m.JudgeCheck
    found = session.execute(select(c).where(c.grader_id == grader.id, c.kind == "canary")
                            .order_by(c.id.desc()).limit(20)).scalars()
    rows = []
    for check in found:
        for kind, v in ((check.result or {}).get("kinds") or {}).items():
            rows.append({"when": f"{check.created_at:%Y-%m-%d %H:%M}", "canary": str(kind).replace("_", " "),
                         "graded relevant": f"{v['fooled_rate']:.0%} of {v['n']}",
                         "allowed": "—" if check.threshold is None else f"{check.threshold:.0%}",
                         "gate": "passed" if check.passed else "failed", "model": check.model,
                         "prompt": check.template_sha256[:12]})
    return rows


def _ppi(name: str, *, session: Session) -> tuple[dict[str, Any] | None, str | None]:
    """``report --estimator ppi --judge NAME`` with the report's defaults (ndcg@10 per query type)."""
    from ndcg_labeling.scoring.ppi import ppi_report

    try:
        result = ppi_report(session=session, judge=name, options=ReportOptions(metrics=("ndcg@10",)))
    except NdcgLabelingError as exc:
        return None, str(exc)
    return {"header": result.header(), "rows": [vars(r) for r in result.rows], "warnings": result.warnings,
            "queries": result.queries, "audited": result.audited}, None


def judges_overview(*, session: Session) -> list[JudgeView]:
    """Every model grader (an LLM judge) by name, with what :class:`JudgeView` holds."""
    views = []
    for grader in session.execute(select(m.Grader).where(m.Grader.kind == "model").order_by(m.Grader.name)).scalars():
        runs = _runs(grader, session=session)
        view = JudgeView(grader.name, runs=runs, totals=_totals(runs), verdicts=_verdicts(grader, session=session),
                         filled=_filled(grader, session=session), canary=canary_rows(grader, session=session))
        view.ppi, view.ppi_note = _ppi(grader.name, session=session)
        views.append(view)
    return views
