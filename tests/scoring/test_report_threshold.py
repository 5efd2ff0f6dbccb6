"""report's relevance threshold 0 (issue 13, defect 1): every judged document is relevant there, as at
trec_eval's ``-l 0``. The database never holds a negative label (imports refuse grades outside the
0-3 / 0-4 scales; consensus values are means and medians of those), so negative labels reach only
the library path: tests/metrics/test_trec_registry.py tests them against pytrec_eval."""

from __future__ import annotations

import pytest
import pytrec_eval

from ndcg_labeling.db.session import session_scope
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.scoring.report import ReportOptions, build_report
from tests.scoring.test_report import per_query, random_data, write


def test_threshold_zero_counts_every_judged_document_as_trec_eval_l0(sqlite_db):
    data = random_data(4)
    write(sqlite_db, **data)
    with session_scope(sqlite_db.engine) as session:
        result = build_report(session=session, options=ReportOptions(
            metrics=("p@10", "mrr", "map", "recall@10"), relevant_threshold=0.0, per_query=True, empty="zero"))
    # pytrec_eval refuses relevance_level 0: the same relevant documents are its labels + 1 at level 1.
    qrels = {q: {d: int(v) + 1 for d, v in rel.items()} for q, rel in data["labels"].items()}
    run = {q: {d: float(1000 - r) for d, r in lst} for q, lst in data["runs"]["a"].items()}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"P", "recip_rank", "map", "recall"}).evaluate(run)
    for metric, trec in (("p@10", "P_10"), ("mrr", "recip_rank"), ("map", "map"), ("recall@10", "recall_10")):
        assert per_query(result, "a", metric) == pytest.approx({q: v[trec] for q, v in theirs.items()}, abs=1e-12)


def test_negative_threshold_is_refused(sqlite_db):
    write(sqlite_db, **random_data(5, n_queries=3))
    with session_scope(sqlite_db.engine) as session, pytest.raises(NdcgLabelingError) as info:
        build_report(session=session, options=ReportOptions(metrics=("p@10",), relevant_threshold=-0.5))
    assert str(info.value) == "relevant_threshold must be a number >= 0, got -0.5"
