"""``report --estimator ppi --judge GRADER``: judge everything, audit a little (issue 47; docs/judges.md).

The judge's labels (the grader's newest judgment of each pair) score every query it graded; people's labels
(the label in force: the newest adjudication, else the consensus, less the labels a judge filled with
``consensus --judge-fills``) score the audited queries, those of the judge's queries people graded. Both are
scored by the report's own machinery (:func:`ndcg_labeling.scoring.report._score`, the ranked-list engine of
``eval``), on one fixed set of queries: a query with no relevant document scores 0 (as ``--empty zero``) and a
system that returned nothing for a query scores 0, so the judge and people score the same queries. Per system,
query type and metric, and per paired difference from the baseline, :func:`ndcg_labeling.stats.ppi_mean`
(PPI++, power-tuned) turns the two into a point estimate and a 95 % interval (Student's t, n - 2 degrees of
freedom: the small-audit interval, benchmarks/bench_ppi.py); the audit alone gives the human-only t interval
beside it.

The audit's weights: when ``tasks create --audit-of ... --judge GRADER`` drew an audit for this judge (the
newest such batch, ``audit_samples``), the population is the audited batch's queries, the audit is the drawn
queries people have graded, and each counts ``1 / inclusion probability`` (Horvitz-Thompson weights,
normalized: within a stratum of the design this is the stratified estimator of Fisch et al. 2024 with one
lambda); people's labels of other queries are left out (they were not drawn by the design), with a warning.
Without an audit batch (judgments imported from files) the audited queries count equally and the interval
assumes they were drawn at random from the judge's queries.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.db import reads
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.labels.lookups import require_grader
from ndcg_labeling.results import UNTYPED, ReportOptions
from ndcg_labeling.scoring.report import _check_options, _groups, _load, _score
from ndcg_labeling.stats import PpiEstimate, ppi_mean

_SPAN = np.int64(1) << np.int64(31)  # (query, document) row ids as one int64 key, as reads keys them
#: metrics that are not a per-query mean of relevance (judged@k measures the labels, not the system)
NOT_PPI = ("judged",)


@dataclass
class PpiRow:
    system: str
    baseline: str | None  # None: the system's own value; else the row is system - baseline
    query_type: str
    metric: str
    queries: int
    audited: int
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    lam: float | None
    effective_n: float | None
    judge_bias: float | None
    judge_only: float
    human: float | None
    human_ci_low: float | None
    human_ci_high: float | None


@dataclass
class PpiReport:
    """What :func:`ppi_report` found; ``header()`` is the line the CLI prints above the table."""

    judge: str
    queries: int
    audited: int
    baseline: str | None
    design: str | None = None  # the audit batch whose inclusion probabilities weight the audit; None: equal
    rows: list[PpiRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def header(self) -> str:
        vs = f"; diff = system - {self.baseline} (paired, per query)" if self.baseline else ""
        weights = (f"weighted by the inclusion probabilities of audit batch {self.design}" if self.design else
                   "counted equally; the interval assumes they were drawn at random")
        return (f"estimator: ppi (PPI++, power-tuned) with judge {self.judge}: {self.queries} queries judged, "
                f"{self.audited} audited by people ({weights}); 95% t intervals; human = the audit alone; "
                f"n_eff = the audit size people alone would need for the same width{vs}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _judge_labels(grader: m.Grader, *, session: Session) -> reads.EffectiveLabelRows:
    """The grader's newest judgment of each (query, document), as label rows."""
    j = m.Judgment
    stmt = select(j.query_id, j.document_id, j.grade, j.id).where(j.grader_id == grader.id).order_by(j.id)
    rows = reads.fetch_array(stmt, 4, session=session, dtype=np.int64)
    keys = rows[:, 0] * _SPAN + rows[:, 1]
    uniq, last_rev = np.unique(keys[::-1], return_index=True)  # the newest: the last in id order
    grade = rows[len(rows) - 1 - last_rev, 2].astype(np.float64)
    return reads.EffectiveLabelRows(query=uniq // _SPAN, document=uniq % _SPAN, value=grade,
                                    adjudicated=np.zeros(uniq.size, bool))


def _people_labels(*, session: Session) -> reads.EffectiveLabelRows:
    """The labels in force, less those a judge filled (``consensus --judge-fills``) and nobody adjudicated."""
    rows = reads.effective_label_rows(session=session)
    label = m.ConsensusLabel
    filled = reads.fetch_array(select(label.query_id, label.document_id).where(label.filled_by.is_not(None)), 2,
                               session=session, dtype=np.int64)
    if filled.size == 0:
        return rows
    keep = rows.adjudicated | ~np.isin(rows.query * _SPAN + rows.document, filled[:, 0] * _SPAN + filled[:, 1])
    return reads.EffectiveLabelRows(query=rows.query[keep], document=rows.document[keep], value=rows.value[keep],
                                    adjudicated=rows.adjudicated[keep])


def _audit_design(grader: m.Grader, *, session: Session) -> tuple[str, np.ndarray, dict[int, float]] | None:
    """The newest audit batch drawn for ``grader``: its name, the audited batch's queries and each drawn query's
    inclusion probability; None when there is none."""
    a = m.AuditSample
    newest = session.execute(select(a.batch_id, a.source_batch_id).where(a.judge_id == grader.id)
                             .order_by(a.batch_id.desc()).limit(1)).first()
    if newest is None:
        return None
    batch_id, source_id = newest
    name = session.execute(select(m.GradingBatch.name).where(m.GradingBatch.id == batch_id)).scalar_one()
    population = np.unique(np.array(session.execute(select(m.BatchItem.query_id).distinct()
                                                    .where(m.BatchItem.batch_id == source_id)).scalars().all(),
                                    dtype=np.int64))
    inclusion = dict(session.execute(select(a.query_id, a.inclusion).where(a.batch_id == batch_id)).all())
    return name, population, {int(q): float(p) for q, p in inclusion.items()}


def _weigh(population: np.ndarray, audit: np.ndarray, design: tuple[str, np.ndarray, dict[int, float]] | None,
           out: PpiReport) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The population, the audit mask and the per-query weights (1 / inclusion; 1 without a design)."""
    if design is None:
        return population, audit, np.ones(population.size)
    name, source, inclusion = design
    outside = np.setdiff1d(population, source).size
    keep = np.isin(population, source)
    population, audit = population[keep], audit[keep]
    drawn = np.array([int(q) in inclusion for q in population], dtype=bool)
    stray = int((audit & ~drawn).sum())
    pending = int((drawn & ~audit).sum())
    if outside:
        out.warnings.append(f"{outside} queries the judge graded outside the audited batch are left out")
    if stray:
        out.warnings.append(f"{stray} queries people graded that audit batch {name} did not draw are left out")
    if pending:
        out.warnings.append(f"{pending} queries audit batch {name} drew have no people's labels yet")
    weights = np.array([1.0 / inclusion.get(int(q), 1.0) for q in population])
    return population, audit & drawn, weights


@dataclass
class ScoredSources:
    """Per-query values of every system by the judge's labels and by people's (one fixed set of queries, the
    population); ``audit``: the queries people graded (of the design, when there is one); ``weights``: each
    query's 1 / inclusion probability (1 without a design)."""

    population: np.ndarray
    audit: np.ndarray
    weights: np.ndarray
    qtypes: np.ndarray
    systems: list[str]
    baseline: str | None
    metrics: list[str]
    judged: dict[str, dict[str, np.ndarray]]
    human: dict[str, dict[str, np.ndarray]]
    design: str | None
    warnings: list[str]


def score_sources(*, session: Session, judge: str, options: ReportOptions, min_audit: int = 2) -> ScoredSources:
    """The judge's and people's per-query values of ``options.metrics`` for every system (the report's own
    scoring), the audit and its weights: what :func:`ppi_report` and ``plan --judge`` start from.

    Raises :class:`~ndcg_labeling.errors.NotFoundError` for an unknown judge, system or baseline and
    :class:`NdcgLabelingError` for a judge with no judgment, an audit of fewer than ``min_audit`` queries or a
    metric that is not a per-query mean of relevance (judged@k).
    """
    opts = replace(options, empty="zero", missing="zero", decide=False)
    parsed = _check_options(opts)
    bad = [p.name for p in parsed if p.family in NOT_PPI]
    if bad:
        raise NdcgLabelingError(f"--estimator ppi estimates metrics of relevance, not {', '.join(bad)}")
    grader = require_grader(judge, session=session)
    judge_rows = _judge_labels(grader, session=session)
    if len(judge_rows) == 0:
        raise NdcgLabelingError(f"judge {judge!r} has graded nothing: run `ndcg-labeling judge run` or import its "
                                f"judgments first")
    people = _people_labels(session=session)
    population = np.unique(judge_rows.query)
    audit = np.isin(population, people.query)
    design = _audit_design(grader, session=session)
    notes = PpiReport(judge=judge, queries=0, audited=0, baseline=None)
    population, audit, weights = _weigh(population, audit, design, notes)
    n_audit = int(audit.sum())
    if n_audit < min_audit:
        raise NdcgLabelingError(f"the audit is {n_audit} {'query' if n_audit == 1 else 'queries'}: PPI needs at least "
                                f"2 of judge {judge}'s {population.size} queries with people's labels (grade some, then "
                                f"run `ndcg-labeling consensus`)")
    ks = [p.k for p in parsed]
    k_cut = None if any(k is None for k in ks) else max(k for k in ks if k is not None)
    coverage_k = k_cut or 10
    # the report's reads (systems, baseline, rankings, queries); its labels are replaced by each source's
    data = _load(session, opts, k_cut)
    human = _score(replace(data, labels=people, scored_q=population), opts, parsed, k_cut, coverage_k).per_system
    judged = _score(replace(data, labels=judge_rows, scored_q=population), opts, parsed, k_cut, coverage_k).per_system
    qtype_of = data.queries.set_index("query")["query_type"]
    qtypes = qtype_of.reindex(population).fillna(UNTYPED).to_numpy(dtype=object)
    unaudited_people = np.setdiff1d(np.unique(people.query), np.unique(judge_rows.query)).size
    if unaudited_people:
        notes.warnings.append(f"{unaudited_people} queries people labelled were not graded by judge {judge}: they are "
                              f"left out")
    return ScoredSources(population=population, audit=audit, weights=weights, qtypes=qtypes,
                         systems=list(data.systems), baseline=data.baseline, metrics=[p.name for p in parsed],
                         judged=judged, human=human, design=None if design is None else design[0],
                         warnings=notes.warnings)


def ppi_report(*, session: Session, judge: str, options: ReportOptions) -> PpiReport:
    """Every system's metrics (``options.metrics``, per query type and overall) and every paired difference
    from the baseline, estimated by PPI++ from ``judge``'s labels on all its queries and people's labels on
    the audited ones; see the module docstring for what is scored how. Raises as :func:`score_sources`.
    """
    src = score_sources(session=session, judge=judge, options=options)
    audit, weights, judged, human = src.audit, src.weights, src.judged, src.human
    out = PpiReport(judge=judge, queries=int(src.population.size), audited=int(audit.sum()), baseline=src.baseline,
                    design=src.design, warnings=src.warnings)
    for gname, gmask in _groups(src.qtypes, options.by).items():
        for name in src.metrics:
            for s in src.systems:
                pairs: list[tuple[str, str | None, np.ndarray, np.ndarray]] = [(s, None, judged[s][name], human[s][name])]
                if src.baseline is not None and s != src.baseline:
                    b = src.baseline
                    pairs.append((s, b, judged[s][name] - judged[b][name], human[s][name] - human[b][name]))
                for system, base, j_vals, h_vals in pairs:
                    out.rows.append(_row(system, base, gname, name, j_vals[gmask], h_vals[gmask & audit],
                                         j_vals[gmask & audit], weights[gmask & audit]))
    short = sorted({r.query_type for r in out.rows if r.estimate is None})
    if short:
        out.warnings.append(f"query types with fewer than 2 audited queries get no estimate: {', '.join(short)}")
    return out


def _row(system: str, baseline: str | None, group: str, metric: str, judge_all: np.ndarray,
         human_audit: np.ndarray, judge_audit: np.ndarray, weights: np.ndarray) -> PpiRow:
    est: PpiEstimate | None = None
    if human_audit.size >= 2:
        est = ppi_mean(judge_all, human_audit, judge_audit, weights=weights, interval="t")
    return PpiRow(system=system, baseline=baseline, query_type=group, metric=metric, queries=int(judge_all.size),
                  audited=int(human_audit.size), estimate=None if est is None else est.estimate,
                  ci_low=None if est is None else est.ci_low, ci_high=None if est is None else est.ci_high,
                  lam=None if est is None else est.lam,
                  effective_n=None if est is None or not np.isfinite(est.effective_n) else est.effective_n,
                  judge_bias=None if est is None else est.judge_bias, judge_only=float(judge_all.mean()),
                  human=None if est is None else est.human, human_ci_low=None if est is None else est.human_low,
                  human_ci_high=None if est is None else est.human_high)


__all__ = ["PpiReport", "PpiRow", "ScoredSources", "ppi_report", "score_sources"]
