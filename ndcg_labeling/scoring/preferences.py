"""``eval -R prefs`` / ``-R qrels_prefs``: trec_eval's preference measures (``prefs_*``) of a run.

The use case: read the preferences and the run (:mod:`ndcg_labeling.trec.prefs`), count each query's
preferences and compute the measures (:mod:`ndcg_labeling.metrics.trec_prefs`), summarise as
trec_eval does (counts summed, ratios averaged over the queries).
"""

from __future__ import annotations

import numpy as np

from ndcg_labeling.errors import NdcgLabelingError, PrefsError
from ndcg_labeling.metrics import trec_measures, trec_prefs
from ndcg_labeling.metrics.trec_measures import Column
from ndcg_labeling.results import EvalResult
from ndcg_labeling.trec.join import Options
from ndcg_labeling.trec.prefs import ranked_runs, read_prefs


def evaluate_prefs(prefs_path: str, run_path: str, columns: list[Column], options: Options,
                   rel_info_format: str) -> EvalResult:
    """Queries with preferences and run lines (every query with preferences under ``-c``, a missing
    one with an empty ranking), in byte order of their ids."""
    prefs = read_prefs(prefs_path, rel_info_format)
    runs, run_id = ranked_runs(run_path, options.max_docs)
    query_ids = sorted((q for q in prefs if options.complete or q in runs), key=str.encode)
    if not query_ids:
        raise NdcgLabelingError(f"no query of {run_path} has preferences in {prefs_path}")
    counted = []
    for q in query_ids:
        try:
            counted.append(trec_prefs.form_prefs_counts(runs.get(q, []), prefs[q]))
        except PrefsError as exc:
            raise NdcgLabelingError(f"{prefs_path}: query {q}: {exc}") from None
    names = [c.name for c in columns if c.family in trec_measures.PREFERENCE_FAMILIES]
    values = trec_prefs.values(counted, names)
    for col in columns:
        if col.family == "num_q":
            values[col.name] = np.ones(len(query_ids))
        elif col.family == "runid":
            values[col.name] = [None]
    summary = trec_measures.summarise(columns, values, run_id=run_id)
    return EvalResult(columns, query_ids, values, summary)
