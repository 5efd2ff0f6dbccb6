"""File-level trec_eval: a qrels file and a run file in, per-query and summary measures out.

The use case only: read both files and join them (:mod:`ndcg_labeling.trec`), compute the measures
(:mod:`ndcg_labeling.metrics.trec_measures`), hand back an
:class:`~ndcg_labeling.results.EvalResult` for the renderers. trec_eval 10's rules and where
we differ from it are in ``docs/eval.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ndcg_labeling.choices import EvalEngine
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.metrics import trec_measures
from ndcg_labeling.metrics.trec_measures import Column
from ndcg_labeling.results import EvalResult
from ndcg_labeling.trec import read_and_join
from ndcg_labeling.trec.join import Options

REL_INFO_FORMATS = ("qrels", "qrels_jg", "prefs", "qrels_prefs")
# The measures each -R format can compute (trec_eval: "Can't calculate measure" for any other).
_ANY_FORMAT = ("runid", "num_q")


def evaluate_files(
    qrels_path: str | Path,
    run_path: str | Path,
    measures: Sequence[str] | None = None,
    *,
    complete: bool = False,
    relevance_level: int = 1,
    max_docs: int | None = None,
    judged_only: bool = False,
    num_docs_in_coll: int = 0,
    rel_info_format: str = "qrels",
    results_format: str = "trec_results",
    engine: str = "embedded",
    spark_master: str | None = None,
    spark: Any = None,
) -> EvalResult:
    """Evaluate a TREC run against TREC qrels, as ``trec_eval [-c] [-l N] [-M N] [-J] [-N N] -m ...``.

    ``measures``: trec_eval ``-m`` values (None: ``official``). ``run_path`` ``-`` reads standard input.
    ``rel_info_format`` / ``results_format``: trec_eval's ``-R`` / ``-T`` (``qrels``, ``trec_results``).
    ``engine``: ``embedded`` (this process) or ``spark`` (the same kernels on Spark's executors,
    :mod:`ndcg_labeling.engines.spark_eval`; ``spark``: a caller's SparkSession, else one started on
    ``spark_master``, default ``local[*]``); both give the same values and the same text.
    """
    if results_format != "trec_results":
        raise NdcgLabelingError(f"-T: unknown results format {results_format!r}; known: trec_results")
    if rel_info_format not in REL_INFO_FORMATS:
        raise NdcgLabelingError(f"-R: unknown qrels format {rel_info_format!r}; known: {', '.join(REL_INFO_FORMATS)}")
    try:
        columns = trec_measures.parse_measures(measures).columns()
    except ValueError as exc:
        raise NdcgLabelingError(str(exc)) from None
    _check_format(columns, rel_info_format)
    if max_docs is not None and max_docs < 0:
        raise NdcgLabelingError(f"-M must be at least 0, got {max_docs}")
    options = Options(complete=complete, max_docs=max_docs, judged_only=judged_only)
    if engine == "spark":
        return _on_spark(str(qrels_path), str(run_path), columns, options, relevance_level, num_docs_in_coll,
                         rel_info_format, spark_master, spark)
    if engine != EvalEngine.embedded:
        raise NdcgLabelingError(f"--engine: unknown engine {engine!r}; use {' or '.join(EvalEngine)}")
    if rel_info_format == "qrels_jg":
        return _judgment_groups(str(qrels_path), str(run_path), columns, options, relevance_level)
    if rel_info_format in ("prefs", "qrels_prefs"):
        from ndcg_labeling.scoring.preferences import evaluate_prefs

        return evaluate_prefs(str(qrels_path), str(run_path), columns, options, rel_info_format)
    joined = read_and_join(str(qrels_path), str(run_path), options)
    values = trec_measures.compute(columns, joined.lists, relevance_level=relevance_level,
                                   num_docs_in_coll=num_docs_in_coll)
    return _finish(columns, joined.query_ids, values, joined.missing, joined.run_id, joined.n_positive_judgments,
                   options)


def _on_spark(qrels_path: str, run_path: str, columns: list[Column], options: Options, relevance_level: int,
              num_docs_in_coll: int, rel_info_format: str, spark_master: str | None, spark: Any) -> EvalResult:
    """The per-query values from Spark's executors; the summary as the embedded path makes it."""
    from ndcg_labeling.engines.spark_eval import per_query_values
    from ndcg_labeling.engines.spark_session import get_session

    if rel_info_format != "qrels":
        raise NdcgLabelingError(f"--engine spark evaluates -R qrels only, not -R {rel_info_format}")
    found = per_query_values(get_session(spark_master, spark), qrels_path, run_path, columns, options,
                             relevance_level=relevance_level, num_docs_in_coll=num_docs_in_coll)
    return _finish(columns, found.query_ids, found.values, found.missing, found.run_id, found.n_positive_judgments,
                   options)


def _finish(columns: list[Column], query_ids: list[str], values: dict[str, Any], missing: np.ndarray,
            run_id: str, n_positive_judgments: int, options: Options) -> EvalResult:
    """trec_eval's clean-up of the empty rankings ``-c`` adds, and the summary rows (both engines)."""
    complete, judged_only, max_docs = options.complete, options.judged_only, options.max_docs
    if missing.any():  # trec_eval's clean-up of the empty rankings -c adds
        for col in columns:
            if col.family == "utility":
                values[col.name] = values[col.name] * ~missing
            elif col.family in ("iprec_at_recall", "11pt_avg") and not judged_only and max_docs != 0:
                # trec_eval ranks one made-up unjudged document for such a query: 0, not 0/0 (unless
                # -J or -M 0 drops it)
                values[col.name] = np.where(missing, 0.0, values[col.name])
    summary = trec_measures.summarise(columns, values, run_id=run_id,
                                      num_rel_override=n_positive_judgments if complete else None)
    return EvalResult(columns, query_ids, values, summary)


def _check_format(columns: list[Column], rel_info_format: str) -> None:
    """trec_eval computes the ``*_avgjg`` measures from ``-R qrels_jg`` only, the ``prefs_*`` ones
    from ``-R prefs``/``qrels_prefs`` only, and every other from ``-R qrels`` only."""
    allowed = {"qrels_jg": trec_measures.JUDGMENT_GROUP_FAMILIES, "prefs": trec_measures.PREFERENCE_FAMILIES,
               "qrels_prefs": trec_measures.PREFERENCE_FAMILIES}.get(rel_info_format)
    for col in columns:
        if col.family in _ANY_FORMAT:
            continue
        special = col.family in trec_measures.JUDGMENT_GROUP_FAMILIES + trec_measures.PREFERENCE_FAMILIES
        if (allowed is None and special) or (allowed is not None and col.family not in allowed):
            need = ("-R qrels_jg" if col.family in trec_measures.JUDGMENT_GROUP_FAMILIES
                    else "-R prefs or -R qrels_prefs" if special else "-R qrels")
            raise NdcgLabelingError(f"measure {col.family} needs {need} (trec_eval cannot calculate it from "
                                    f"-R {rel_info_format} either)")


def _judgment_groups(qrels_path: str, run_path: str, columns: list[Column], options: Options,
                     relevance_level: int) -> EvalResult:
    """``-R qrels_jg``: each (query, judgment group) evaluated as a query, then the groups averaged."""
    from ndcg_labeling.trec.judgment_groups import read_and_join_groups

    grouped = read_and_join_groups(qrels_path, run_path, options)
    per_group = trec_measures.compute(columns, grouped.joined.lists, relevance_level=relevance_level)
    values = trec_measures.average_groups(per_group, columns, grouped.starts, len(grouped.joined.query_ids))
    summary = trec_measures.summarise(columns, values, run_id=grouped.joined.run_id)
    return EvalResult(columns, grouped.query_ids, values, summary)
