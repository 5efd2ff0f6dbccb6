"""File-level trec_eval: a qrels file and a run file in, per-query and summary measures out.

The use case only: read both files and join them (:mod:`ndcg_labeling.trec`), compute the measures
(:mod:`ndcg_labeling.metrics.trec_measures`), hand back an
:class:`~ndcg_labeling.reports.trec_eval.EvalResult` for the renderers. trec_eval 10's rules and where
we differ from it are in ``docs/eval.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.metrics import trec_measures
from ndcg_labeling.reports.trec_eval import EvalResult
from ndcg_labeling.trec import read_and_join
from ndcg_labeling.trec.join import Options


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
) -> EvalResult:
    """Evaluate a TREC run against TREC qrels, as ``trec_eval [-c] [-l N] [-M N] [-J] [-N N] -m ...``.

    ``measures``: trec_eval ``-m`` values (None: ``official``). ``run_path`` ``-`` reads standard input.
    ``rel_info_format`` / ``results_format``: trec_eval's ``-R`` / ``-T`` (``qrels``, ``trec_results``).
    """
    if results_format != "trec_results":
        raise NdcgLabelingError(f"-T: unknown results format {results_format!r}; known: trec_results")
    if rel_info_format != "qrels":
        raise NdcgLabelingError(f"-R: unknown qrels format {rel_info_format!r}; known: qrels")
    try:
        columns = trec_measures.parse_measures(measures).columns()
    except ValueError as exc:
        raise NdcgLabelingError(str(exc)) from None
    if max_docs is not None and max_docs < 0:
        raise NdcgLabelingError(f"-M must be at least 0, got {max_docs}")
    options = Options(complete=complete, max_docs=max_docs, judged_only=judged_only)
    joined = read_and_join(str(qrels_path), str(run_path), options)
    values = trec_measures.compute(columns, joined.lists, relevance_level=relevance_level,
                                   num_docs_in_coll=num_docs_in_coll)
    if joined.missing.any():  # trec_eval's clean-up of the empty rankings -c adds
        for col in columns:
            if col.family == "utility":
                values[col.name] = values[col.name] * ~joined.missing
            elif col.family in ("iprec_at_recall", "11pt_avg") and not judged_only and max_docs != 0:
                # trec_eval ranks one made-up unjudged document for such a query: 0, not 0/0 (unless
                # -J or -M 0 drops it)
                values[col.name] = np.where(joined.missing, 0.0, values[col.name])
    summary = trec_measures.summarise(columns, values, run_id=joined.run_id,
                                      num_rel_override=joined.n_positive_judgments if complete else None)
    return EvalResult(columns, joined.query_ids, values, summary)
