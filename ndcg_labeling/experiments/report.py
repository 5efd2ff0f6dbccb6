"""``online report``: NDCG per arm beside the business metrics, from impression logs and the label store.

A thin use case: the log rows come from :func:`ndcg_labeling.engines.online_duckdb.read_impressions`,
the labels from the label store (:func:`load_online_labels`), the served lists are rebuilt and scored
by :mod:`ndcg_labeling.online.requests`, and :func:`ndcg_labeling.online.analysis.analyse` does the rest.
With ``engine="spark"`` the rows stay on Spark (:class:`ndcg_labeling.engines.online_spark.SparkImpressions`):
the same scoring function runs on the executors over whole requests, and only its per-request values
reach this process, in the embedded path's order, so the report is the same to the last digit.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.engines import check_engine
from ndcg_labeling.engines.online_duckdb import ImpressionRows, read_impressions
from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.metrics import parse_metric
from ndcg_labeling.online.analysis import AnalysisOptions, analyse
from ndcg_labeling.online.requests import request_values
from ndcg_labeling.online.sums import RequestValues
from ndcg_labeling.sources.behavior import parse_duration

CONSENSUS = "consensus"


@dataclass(frozen=True)
class OnlineOptions:
    baseline: str
    metric: str = "ndcg@10"
    window: str | None = None
    labels: str = CONSENSUS
    gain: str = "exponential"
    relevant_threshold: float = 1.0
    cluster: str = "auto"
    columns: dict[str, str] = field(default_factory=dict)
    n_resamples: int = 1000
    seed: int = 0
    engine: str = "duckdb"
    spark_master: str | None = None
    unjudged: str = "skip"  # a request whose query has no label: skip it in the metric's mean, or zero


@dataclass
class OnlineLabels:
    """The labels in force for the online figures: ``(query_id, doc_id) -> value``, per query every
    judged value, the query types, and where the labels came from."""

    value: dict[tuple[str, str], float]
    by_query: dict[str, np.ndarray]
    query_types: dict[str, str | None]
    source: str


def parse_window(text: str, option: str) -> float:
    """Seconds of a window such as ``15m``, ``1h``, ``1d`` (an error naming ``option`` otherwise)."""
    try:
        return parse_duration(text)
    except NdcgLabelingError:
        raise NdcgLabelingError(f"{option}: {text!r} is not a positive duration such as 15m, 1h or 1d") from None


def _grader_labels(name: str, *, session: Session) -> dict[tuple[str, str], float]:
    grader = session.execute(select(m.Grader).where(m.Grader.name == name)).scalar_one_or_none()
    if grader is None:
        raise NotFoundError(f"--labels: no grader {name!r}")
    stmt = (select(m.Query.external_id, m.Document.external_id, m.Judgment.grade)
            .join(m.Query, m.Query.id == m.Judgment.query_id).join(m.Document, m.Document.id == m.Judgment.document_id)
            .where(m.Judgment.grader_id == grader.id).order_by(m.Judgment.id))
    return {(q, d): float(g) for q, d, g in session.execute(stmt)}  # the newest judgment of a pair wins


def _consensus_labels(*, session: Session) -> dict[tuple[str, str], float]:
    from ndcg_labeling.labels.consensus import effective_labels

    frame = effective_labels(session=session)
    return {(str(q), str(d)): float(v) for q, d, v in zip(frame["query_id"], frame["doc_id"], frame["value"], strict=True)}


def load_online_labels(spec: str, *, session: Session) -> OnlineLabels:
    """``consensus`` (the label in force: adjudication, else consensus), ``GRADER`` (a behavior or model
    grader's judgments), or ``consensus,GRADER`` (consensus first, the grader where people have none)."""
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if not parts or len(parts) > 2 or (len(parts) == 2 and parts[0] != CONSENSUS):
        raise NdcgLabelingError(f"--labels: {spec!r} is not consensus, GRADER or consensus,GRADER")
    value: dict[tuple[str, str], float] = {}
    for part in reversed(parts):  # the first source wins: applied last
        value.update(_consensus_labels(session=session) if part == CONSENSUS else _grader_labels(part, session=session))
    grouped: dict[str, list[float]] = {}
    for (q, _), v in value.items():
        grouped.setdefault(q, []).append(v)
    types = {q: t for q, t in session.execute(select(m.Query.external_id, m.Query.query_type))}
    return OnlineLabels(value, {q: np.asarray(v) for q, v in grouped.items()}, types, ",".join(parts))


def row_labels(rows: ImpressionRows, labels: OnlineLabels) -> np.ndarray:
    """The label of every row (NaN: unjudged)."""
    get = labels.value.get
    return np.fromiter((get((q, d), np.nan) for q, d in zip(rows.query_id, rows.doc_id, strict=True)),
                       dtype=np.float64, count=len(rows))


#: the per-request values as Spark columns (:class:`~ndcg_labeling.online.sums.RequestValues`' fields)
SPARK_SCHEMA = {"arm": "string", "query_type": "string", "ts": "double", "cluster": "string", "metric": "double",
                "judged": "bigint", "scored": "bigint", "clicked": "bigint", "converted": "double", "watch": "double",
                "labelled": "bigint"}


def score_requests(rows: ImpressionRows, shared: tuple[OnlineLabels, Any, OnlineOptions]) -> dict[str, Any]:
    """The per-request values of ``rows`` (whole requests) as columns: what the executors run."""
    labels, metric, options = shared
    values = request_values(rows, row_labels(rows, labels), labels.query_types, labels.by_query, metric,
                            gain=options.gain, relevant_threshold=options.relevant_threshold,
                            cluster_by=options.cluster)
    return {f.name: getattr(values, f.name) for f in fields(values)}


def _check(logs: list[str], n_rows: int, arms: set[str], options: OnlineOptions) -> None:
    if n_rows == 0:
        raise NdcgLabelingError(f"{', '.join(logs)}: no impression rows")
    if options.baseline not in arms:
        raise NdcgLabelingError(f"--baseline: no arm {options.baseline!r} in the logs (arms: {', '.join(sorted(arms))})")


def _values(logs: list[str], labels: OnlineLabels, metric: Any, options: OnlineOptions,
            spark: Any) -> tuple[RequestValues, int]:
    """The per-request values and the number of rows, on the engine of ``options``."""
    if options.engine == "duckdb" and spark is None:
        rows = read_impressions(logs, options.columns)
        _check(logs, len(rows), set(rows.arm.tolist()), options)
        return RequestValues(**score_requests(rows, (labels, metric, options))), len(rows)
    from ndcg_labeling.engines.online_spark import SparkImpressions

    with SparkImpressions(logs, options.columns, master=options.spark_master, spark=spark) as log:
        _check(logs, log.n_rows, log.arms, options)
        cols = log.per_request(score_requests, SPARK_SCHEMA, (labels, metric, options))
    return RequestValues(**{name: cols[name] for name in SPARK_SCHEMA}), log.n_rows


def online_report(logs: list[str], options: OnlineOptions, *, session: Session, spark: Any = None) -> dict[str, Any]:
    """The report as plain data (``arms``, ``windows``, ``agreement``, ``headline``, ``warnings`` ...);
    ``spark``: a caller's SparkSession (implies the Spark engine)."""
    if options.gain not in ("exponential", "linear"):  # binary: `report --gain binary` only
        raise NdcgLabelingError(f"--gain: online report takes exponential or linear, got {options.gain!r}")
    check_engine(options.engine)
    try:
        metric = parse_metric(options.metric)
    except ValueError as exc:
        raise NdcgLabelingError(f"--metric: {str(exc).removeprefix('parse_metric: ')}") from None
    window_s = None if options.window is None else parse_window(options.window, "--window")
    labels = load_online_labels(options.labels, session=session)
    values, n_rows = _values(logs, labels, metric, options, spark)
    result = analyse(values, AnalysisOptions(metric=metric.name, baseline=options.baseline, window_s=window_s,
                                             n_resamples=options.n_resamples, seed=options.seed,
                                             unjudged=options.unjudged))
    result.update(metric=metric.name, baseline=options.baseline, labels=labels.source, window=options.window,
                  window_s=window_s, cluster=options.cluster, n_rows=n_rows, n_requests=int(values.metric.size),
                  unjudged=options.unjudged)
    return result
