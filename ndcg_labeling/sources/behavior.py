"""``implicit derive``: labels from behavior, stored as the judgments of a grader of kind ``behavior``.

A thin use case: an engine aggregates the logs in place (:mod:`ndcg_labeling.engines`), a kernel of
:mod:`ndcg_labeling.behavior` fits the model and scores every (query, document) pair, the scores become
grades (fixed cut points, or cut points fitted to a batch's human consensus: :func:`_fit_to_batch`), and
one transaction stores the judgments with their provenance (tables of migration 0010). Pairs with
fewer than ``min_impressions`` impressions in the window are left ungraded (and counted).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from ndcg_labeling.behavior.click_models import ModelFit, coec, pbm, watch
from ndcg_labeling.behavior.dbn import dbn
from ndcg_labeling.behavior.grades import DEFAULT_THRESHOLDS, check_thresholds, fit_cut_points, map_scores
from ndcg_labeling.choices import ConsensusMethod, TieRule
from ndcg_labeling.consensus import consensus
from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.db.bulk import ColumnRows, external_row_ids
from ndcg_labeling.engines import LogAggregates, LogRequest, get_engine
from ndcg_labeling.engines.base import TS_MAX, TS_MIN, TS_RANGE_PROBLEM
from ndcg_labeling.errors import ConflictError, NdcgLabelingError
from ndcg_labeling.labels.agreement import BEHAVIOR, load_grades
from ndcg_labeling.quality import weighted_kappa
from ndcg_labeling.scales import Scale, get_scale

MODELS = ("coec", "pbm", "dbn", "watch")
MIN_IMPRESSIONS = 20
MAX_MIN_IMPRESSIONS = 2**31 - 1  # behavior_derivations.min_impressions is an INTEGER
HELD_OUT_SEED = 0  # the split of a --fit-to batch's queries into fitted and held-out halves
_SPAN = np.int64(1) << np.int64(31)
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(text: str) -> float:
    """Seconds of ``14d``, ``36h``, ``90m``, ``3600s``, ``2w`` (a bare number: days)."""
    found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([smhdw]?)\s*", text or "")
    seconds = float(found.group(1)) * _UNITS[found.group(2) or "d"] if found is not None else math.nan
    if not (math.isfinite(seconds) and seconds > 0):  # 400 nines of days: inf, never a weight
        raise NdcgLabelingError(f"--half-life: {text!r} is not a positive duration such as 14d, 36h or 90m")
    return seconds


def parse_time(text: str, option: str) -> float:
    """Epoch seconds of an ISO 8601 time (UTC unless it names a zone) or of epoch seconds, a finite time
    of the years 1 to 9999 (``nan``, ``inf`` and ``1e300`` are refused: the value goes into the engines'
    SQL and into the stored window)."""
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
            seconds = (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
        except (ValueError, OverflowError):
            seconds = math.nan
    if not math.isfinite(seconds):
        raise NdcgLabelingError(f"{option}: {text!r} is neither ISO 8601 nor epoch seconds")
    if not TS_MIN <= seconds <= TS_MAX:
        raise NdcgLabelingError(f"{option}: {text!r} {TS_RANGE_PROBLEM}")
    return seconds


def _iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


@dataclass
class DeriveResult:
    """What ``implicit derive`` did: counts, the position curve, the grade distribution, the mapping."""

    grader: str
    model: str
    scale: str
    batch: str
    n_impressions: int
    n_pairs: int
    n_pairs_graded: int
    n_pairs_left_out: int
    min_impressions: int
    thresholds: list[float]
    thresholds_source: str
    position_bias: list[float | None]
    position_bias_kind: str
    grade_distribution: dict[int, int]
    parameters: dict[str, Any]
    window: dict[str, Any]
    fit: dict[str, Any] | None = None
    pairs: list[dict[str, Any]] = field(default_factory=list)
    n_left_out_few: int = 0  # of the left-out pairs: those under min_impressions (the others had no score)

    def as_dict(self) -> dict[str, Any]:
        return {"grader": self.grader, "model": self.model, "scale": self.scale, "batch": self.batch,
                "n_impressions": self.n_impressions, "n_pairs": self.n_pairs, "pairs_graded": self.n_pairs_graded,
                "pairs_left_out": self.n_pairs_left_out, "pairs_left_out_few_impressions": self.n_left_out_few,
                "pairs_left_out_no_score": self.n_pairs_left_out - self.n_left_out_few,
                "min_impressions": self.min_impressions,
                "thresholds": self.thresholds, "thresholds_source": self.thresholds_source,
                "position_bias": self.position_bias, "position_bias_kind": self.position_bias_kind,
                "grade_distribution": {str(k): v for k, v in self.grade_distribution.items()},
                "parameters": self.parameters, "window": self.window, "fit": self.fit}


def fit_model(model: str, agg: LogAggregates) -> ModelFit:
    """The model's per-pair scores from the aggregated logs."""
    if model == "coec":
        return coec(agg.cells)
    if model == "pbm":
        return pbm(agg.cells)
    if model == "watch":
        return watch(agg.cells)
    if agg.sessions is None:
        raise NdcgLabelingError("dbn: the engine returned no served lists")
    return dbn(agg.sessions, agg.cells.n_pairs)


def _behavior_grader(name: str, *, replace: bool, session: Session) -> m.Grader:
    grader = repo.grader_by_name(name, session=session)
    if grader is None:
        grader = m.Grader(name=name, active=True, kind=BEHAVIOR)
        session.add(grader)
        session.flush()
        return grader
    if grader.kind != BEHAVIOR:
        raise ConflictError(f"grader {name!r} is a {grader.kind} grader; behavior labels need a grader of "
                            "their own (a new name)")
    has = session.execute(select(m.Judgment.id).where(m.Judgment.grader_id == grader.id).limit(1)).first()
    if has is not None and not replace:
        raise ConflictError(f"grader {name!r} already has judgments; pass --replace to derive them again")
    session.execute(delete(m.Judgment).where(m.Judgment.grader_id == grader.id))
    ids = select(m.BehaviorDerivation.id).where(m.BehaviorDerivation.grader_id == grader.id)
    session.execute(delete(m.BehaviorPair).where(m.BehaviorPair.derivation_id.in_(ids)))
    session.execute(delete(m.BehaviorDerivation).where(m.BehaviorDerivation.grader_id == grader.id))
    return grader


def _fit_to_batch(batch: str, keys: NDArray[np.int64], scores: NDArray[np.float64], scale: Scale, *,
                  session: Session) -> tuple[NDArray[np.float64], dict[str, Any]]:
    """Cut points maximizing quadratic-weighted kappa with the median human consensus (ties low) of
    ``batch`` on the pairs both have, fitted on half of the queries (seeded split) and reported on the
    other half: the held-out kappa is never computed on pairs the cut points were fitted on."""
    sel = load_grades(session=session, batch=batch, include_models=False)
    if sel.scale.name != scale.name:
        raise NdcgLabelingError(f"--fit-to {batch}: its judgments are on scale {sel.scale.name}, not {scale.name}")
    result = consensus(sel.item, sel.grader, sel.grade, sel.scale.values, ConsensusMethod.median, tie=TieRule.low,
                       min_graders=1, max_spread=None, n_items=sel.n_items)
    human_keys = sel.item_query_id * _SPAN + sel.item_document_id
    common, hi, bi = np.intersect1d(human_keys, keys, return_indices=True)
    queries = np.unique(common // _SPAN)
    if queries.size < 2:
        raise NdcgLabelingError(f"--fit-to {batch}: {common.size} graded pairs in {queries.size} queries are also "
                                "in the logs; fitting cut points needs pairs of at least 2 queries")
    held = np.random.default_rng(HELD_OUT_SEED).permutation(queries)[: queries.size // 2]
    is_held = np.isin(common // _SPAN, held)
    human = np.rint(result.value[hi]).astype(np.int64)
    cuts, kappa_fit = fit_cut_points(scores[bi][~is_held], human[~is_held], scale.values)
    mapped = map_scores(scores[bi][is_held], cuts, scale.min_grade)
    kappa_held = weighted_kappa(human[is_held], mapped, scale.values, weights="quadratic")
    return cuts, {"batch": batch, "n_pairs": int(common.size), "n_fit_pairs": int((~is_held).sum()),
                  "n_held_out_pairs": int(is_held.sum()), "n_held_out_queries": int(held.size),
                  "kappa_fit": round(kappa_fit, 4),
                  "kappa_held_out": None if math.isnan(kappa_held) else round(float(kappa_held), 4)}


@dataclass(frozen=True)
class DeriveOptions:
    """The options of ``implicit derive`` (see the CLI for their meaning); times in epoch seconds."""

    model: str
    grader: str
    scale: str = "0-3"
    half_life_s: float | None = None
    as_of: float | None = None
    since: float | None = None
    until: float | None = None
    min_impressions: int = MIN_IMPRESSIONS
    thresholds: tuple[float, ...] | None = None
    fit_to: str | None = None
    batch: str = ""
    columns: dict[str, str] = field(default_factory=dict)
    replace: bool = False
    engine: str = "duckdb"
    spark_master: str | None = None


def _check(options: DeriveOptions) -> Scale:
    if options.model not in MODELS:
        raise NdcgLabelingError(f"unknown model {options.model!r}; use one of {', '.join(MODELS)}")
    try:
        scale = get_scale(options.scale)
    except ValueError as exc:
        raise NdcgLabelingError(str(exc)) from None
    if options.min_impressions < 1:
        raise NdcgLabelingError(f"--min-impressions must be at least 1, got {options.min_impressions}")
    if options.min_impressions > MAX_MIN_IMPRESSIONS:
        raise NdcgLabelingError(f"--min-impressions must be at most {MAX_MIN_IMPRESSIONS} (the stored column's "
                                f"width), got {options.min_impressions}")
    from ndcg_labeling.labels.importing import grader_name_problem

    problem = grader_name_problem(options.grader)
    if problem is not None:
        raise NdcgLabelingError(f"--grader: {problem}")
    if options.thresholds is not None and options.fit_to is not None:
        raise NdcgLabelingError("--thresholds and --fit-to exclude each other: give fixed cut points or fit them")
    if options.thresholds is not None:
        try:
            check_thresholds(options.thresholds, len(scale.values))
        except ValueError as exc:
            raise NdcgLabelingError(f"--thresholds: {str(exc).split(': ', 1)[1]}") from None
    if options.since is not None and options.until is not None and options.since > options.until:
        raise NdcgLabelingError("--since is after --until: the window is empty")
    return scale


def derive_labels(sources: list[str], options: DeriveOptions, *, session: Session) -> DeriveResult:
    """Aggregate ``sources``, fit ``options.model``, map to grades and store (see the module docstring).
    Nothing is stored when anything fails (the caller's transaction)."""
    scale = _check(options)
    request = LogRequest(sources=tuple(sources), columns=dict(options.columns), since=options.since,
                         until=options.until, as_of=options.as_of, half_life_s=options.half_life_s,
                         watch=options.model == "watch", sessions=options.model == "dbn")
    agg = get_engine(options.engine, spark_master=options.spark_master).aggregate(request)
    if agg.cells.n_pairs == 0:
        raise NdcgLabelingError(f"{', '.join(sources)}: no impressions in the window; nothing to derive")
    fit = fit_model(options.model, agg)
    n_pairs, files = agg.cells.n_pairs, agg.files
    per: dict[str, NDArray[np.float64]] = {
        name: np.bincount(agg.cells.pair, weights=getattr(agg.cells, name), minlength=n_pairs).astype(np.float64)
        for name in ("impressions", "clicks", "weight", "weighted_clicks")}
    enough = per["impressions"] >= options.min_impressions
    keep = np.flatnonzero(enough & np.isfinite(fit.score))
    n_few = int(n_pairs - np.count_nonzero(enough))
    per = {name: values[keep] for name, values in per.items()}
    window = {"since": _iso(options.since), "until": _iso(options.until), "as_of": _iso(agg.as_of),
              "half_life_s": options.half_life_s, "first_ts": _iso(agg.first_ts), "last_ts": _iso(agg.last_ts)}
    queries, documents = [agg.query_ids[i] for i in keep], [agg.doc_ids[i] for i in keep]
    n_impressions, as_of = agg.n_impressions, agg.as_of
    del agg  # the cells (0.6 GB for 100M impressions) are not needed while the ids are stored
    grader = _behavior_grader(options.grader, replace=options.replace, session=session)
    q_ids, _ = external_row_ids(m.Query, queries, session=session)
    d_ids, _ = external_row_ids(m.Document, documents, session=session)
    del queries, documents
    scores = fit.score[keep]
    fit_info = None
    if options.fit_to is not None:
        cuts, fit_info = _fit_to_batch(options.fit_to, q_ids * _SPAN + d_ids, scores, scale, session=session)
        source = f"fitted to batch {options.fit_to} (held-out kappa {fit_info['kappa_held_out']})"
    elif options.thresholds is not None:
        cuts, source = np.asarray(options.thresholds, dtype=np.float64), "--thresholds"
    else:
        cuts, source = np.asarray(DEFAULT_THRESHOLDS[options.model][scale.name]), "default"
    grades = map_scores(scores, cuts, scale.min_grade) if keep.size else np.zeros(0, np.int64)
    result = DeriveResult(
        grader=grader.name, model=options.model, scale=scale.name, batch=options.batch,
        n_impressions=n_impressions, n_pairs=n_pairs, n_pairs_graded=int(keep.size),
        n_pairs_left_out=int(n_pairs - keep.size), min_impressions=options.min_impressions,
        thresholds=[float(c) for c in cuts], thresholds_source=source,
        position_bias=[None if not math.isfinite(v) else round(float(v), 6) for v in fit.position_bias],
        position_bias_kind=fit.position_bias_kind,
        grade_distribution={g: int(np.sum(grades == g)) for g in scale.values}, parameters=dict(fit.parameters),
        window=window, fit=fit_info, n_left_out_few=n_few)
    _store(result, files, as_of, per, options, grader, q_ids, d_ids, scores, grades, session=session)
    return result


def _store(result: DeriveResult, files: list[str], as_of: float | None, per: dict[str, NDArray[np.float64]],
           options: DeriveOptions, grader: m.Grader, q_ids: NDArray[np.int64], d_ids: NDArray[np.int64],
           scores: NDArray[np.float64], grades: NDArray[np.int64], *, session: Session) -> None:
    """The judgments, the derivation and its graded pairs (``per``: their impressions, clicks, weight and
    weighted clicks), in the caller's transaction."""
    source = ", ".join(files) if len(files) <= 3 else f"{files[0]} and {len(files) - 1} more files"
    n = len(q_ids)  # rows held column by column (2M pairs: no 2M tuples), one timestamp as an import has
    repo.bulk_insert(m.Judgment, ["grader_id", "query_id", "document_id", "grade", "scale", "batch", "source_file",
                                  "created_at"],
                     ColumnRows([grader.id, q_ids, d_ids, grades, result.scale, options.batch, source,
                                 repo.db_datetime(session, m.utcnow())], n), session=session)
    derivation = m.BehaviorDerivation(
        grader_id=grader.id, model=result.model, scale=result.scale, batch=options.batch, sources=list(files),
        parameters={**result.parameters, "columns": dict(options.columns), "engine": options.engine,
                    "thresholds_source": result.thresholds_source},
        since=options.since, until=options.until, as_of=as_of, half_life_s=options.half_life_s,
        min_impressions=options.min_impressions, thresholds=result.thresholds, fit_to=options.fit_to,
        held_out_kappa=(result.fit or {}).get("kappa_held_out"), position_bias=result.position_bias,
        position_bias_kind=result.position_bias_kind, n_impressions=result.n_impressions,
        n_pairs_graded=result.n_pairs_graded, n_pairs_left_out=result.n_pairs_left_out)
    session.add(derivation)
    session.flush()
    repo.bulk_insert(m.BehaviorPair, ["derivation_id", "query_id", "document_id", "impressions", "clicks",
                                      "weighted_impressions", "weighted_clicks", "score", "grade"],
                     ColumnRows([derivation.id, q_ids, d_ids, per["impressions"].astype(np.int64),
                                 per["clicks"].astype(np.int64), per["weight"], per["weighted_clicks"],
                                 np.asarray(scores, np.float64), np.asarray(grades, np.int64)], n), session=session)
