"""Consensus runs, adjudication, effective labels and qrels export on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.labels.consensus import (
    EFFECTIVE_COLUMNS,
    effective_labels,
    export_qrels,
    flagged_items,
    run_consensus,
    set_adjudication,
)
from ndcg_labeling.labels.importing import import_judgments, import_queries

# q1/d1: 2, 2, 3 -> median 2, spread 1 (ok); q1/d2: 0, 3 -> spread 3 (flag), median low 0, mean 1.5;
# q2/d1: one grade 1 (too few graders)
GRADES = [("q1", "d1", "a", 2), ("q1", "d1", "b", 2), ("q1", "d1", "c", 3),
          ("q1", "d2", "a", 0), ("q1", "d2", "b", 3), ("q2", "d1", "c", 1)]


def load(db, tmp_path: Path, rows, scale: str = "0-3", name: str = "j.csv", batch: str = "") -> None:
    path = tmp_path / name
    path.write_text("query_id,doc_id,grader,grade,batch\n" + "".join(f"{q},{d},{g},{v},{batch}\n" for q, d, g, v in rows))
    with session_scope(db.engine) as session:
        import_judgments(path, scale=scale, session=session, create_graders=True)


def labels(db) -> dict[tuple[str, str], tuple]:
    with db.engine.connect() as conn:
        rows = conn.execute(select(m.Query.external_id, m.Document.external_id, m.ConsensusLabel.value,
                                   m.ConsensusLabel.method, m.ConsensusLabel.batch, m.ConsensusLabel.n_graders,
                                   m.ConsensusLabel.spread, m.ConsensusLabel.needs_adjudication,
                                   m.ConsensusLabel.reason)
                            .join(m.Query, m.Query.id == m.ConsensusLabel.query_id)
                            .join(m.Document, m.Document.id == m.ConsensusLabel.document_id)).all()
    return {(r[0], r[1]): tuple(r[2:]) for r in rows}


def consensus(db, **kwargs):
    with session_scope(db.engine) as session:
        return run_consensus(session=session, **kwargs)


def test_median_labels_and_flags(db, tmp_path):
    load(db, tmp_path, GRADES)
    summary = consensus(db, method="median")
    assert (summary.items, summary.flagged, summary.replaced) == (3, 2, 0)
    assert summary.by_reason == {"spread above max": 1, "too few graders": 1,
                                 "even median split by more than one grade": 1}
    got = labels(db)
    assert got[("q1", "d1")] == (2.0, "median", "", 3, 1.0, False, None)
    assert got[("q1", "d2")] == (0.0, "median", "", 2, 3.0, True,
                                 "spread above max; even median split by more than one grade")
    assert got[("q2", "d1")] == (1.0, "median", "", 1, 0.0, True, "too few graders")


def test_thresholds_and_tie_rule_are_applied(db, tmp_path):
    load(db, tmp_path, GRADES)
    summary = consensus(db, method="median", tie="high", min_graders=1, max_spread=3)
    assert summary.by_reason == {"even median split by more than one grade": 1}  # 0 and 3: flagged still
    assert labels(db)[("q1", "d2")][0] == 3.0  # the higher middle grade
    summary = consensus(db, method="mean", min_graders=3, max_spread=0)
    assert summary.by_reason == {"too few graders": 2, "spread above max": 2}
    assert labels(db)[("q1", "d2")][0] == pytest.approx(1.5)


def test_rerun_replaces_the_previous_consensus(db, tmp_path):
    load(db, tmp_path, GRADES)
    consensus(db, method="median")
    summary = consensus(db, method="majority")
    assert summary.replaced == 3
    got = labels(db)
    assert len(got) == 3 and {v[1] for v in got.values()} == {"majority"}
    assert db.counts()["consensus_labels"] == 3


def test_batch_scope_counts_only_its_grades_and_replaces_its_items(db, tmp_path):
    load(db, tmp_path, [("q1", "d1", "a", 0), ("q1", "d1", "b", 0)], name="1.csv", batch="b1")
    load(db, tmp_path, [("q1", "d1", "a", 3), ("q1", "d1", "b", 3), ("q1", "d1", "c", 3),
                        ("q9", "d9", "a", 2), ("q9", "d9", "b", 2)], name="2.csv", batch="b2")
    consensus(db, method="mean")  # all grades: a and b graded q1/d1 twice, the newest (b2) counts
    assert labels(db)[("q1", "d1")][:3] == (3.0, "mean", "")
    summary = consensus(db, method="mean", batch="b1")
    assert summary.items == 1 and summary.replaced == 1  # only q1/d1's label, graded in b1
    got = labels(db)
    assert got[("q1", "d1")][:4] == (0.0, "mean", "b1", 2)
    assert got[("q9", "d9")][:3] == (2.0, "mean", "")  # outside b1: untouched
    consensus(db, method="mean", batch="b2")
    got = labels(db)
    assert got[("q1", "d1")][:4] == (3.0, "mean", "b2", 3) and len(got) == 2


def test_several_scales_need_a_batch(db, tmp_path):
    load(db, tmp_path, [("q1", "d1", "a", 0)], name="1.csv", batch="x")
    load(db, tmp_path, [("q1", "d1", "a", 4)], scale="0-4", name="2.csv", batch="y")
    with pytest.raises(NdcgLabelingError, match="several scales"):
        consensus(db, method="median")
    assert db.counts()["consensus_labels"] == 0
    assert consensus(db, method="median", batch="y").scale == "0-4"


def test_adjudication_overrides_and_keeps_history(db, tmp_path):
    (tmp_path / "q.csv").write_text("query_id,text,query_type\nq1,x,nav\nq2,y,\n")
    with session_scope(db.engine) as session:
        import_queries(tmp_path / "q.csv", session=session)
    load(db, tmp_path, GRADES)
    consensus(db, method="median")
    with session_scope(db.engine) as session:
        first = set_adjudication("q1", "d2", 3, adjudicator="ann", note="clearly perfect", session=session)
    assert first.previous == 0.0 and first.history == 1
    with session_scope(db.engine) as session:
        second = set_adjudication("q1", "d2", 2, adjudicator="bo", session=session)
    assert second.previous == 3.0 and second.history == 2
    assert db.counts()["adjudications"] == 2
    with session_scope(db.engine) as session:
        eff = effective_labels(session=session)
        flagged = flagged_items(session=session)
    assert tuple(eff.columns) == EFFECTIVE_COLUMNS
    assert eff[["query_id", "doc_id"]].values.tolist() == [["q1", "d1"], ["q1", "d2"], ["q2", "d1"]]
    assert eff["value"].tolist() == [2.0, 2.0, 1.0]
    assert eff["source"].tolist() == ["consensus", "adjudication", "consensus"]
    assert eff["query_type"].tolist() == ["nav", "nav", None]
    by_pair = {(r["query_id"], r["doc_id"]): r for r in flagged}
    assert set(by_pair) == {("q1", "d2"), ("q2", "d1")}
    assert by_pair[("q1", "d2")]["grades"] == "a: 0, b: 3"
    assert by_pair[("q1", "d2")]["adjudicated"] == 2.0 and by_pair[("q1", "d2")]["adjudicator"] == "bo"
    # a later consensus run does not undo the adjudication
    consensus(db, method="mean")
    with session_scope(db.engine) as session:
        assert effective_labels(session=session)["value"].tolist() == [pytest.approx(7 / 3), 2.0, 1.0]


def test_adjudication_errors(db, tmp_path):
    load(db, tmp_path, GRADES)
    with session_scope(db.engine) as session:
        with pytest.raises(NotFoundError, match="unknown query 'nope'"):
            set_adjudication("nope", "d1", 1, adjudicator="ann", session=session)
        with pytest.raises(NotFoundError, match="unknown document 'nope'"):
            set_adjudication("q1", "nope", 1, adjudicator="ann", session=session)
        with pytest.raises(NotFoundError, match=r"\(q2, d2\) has no judgments"):
            set_adjudication("q2", "d2", 1, adjudicator="ann", session=session)
        # no consensus yet: the scale comes from the judgments
        with pytest.raises(NdcgLabelingError, match=r"grade 4 is outside the scale 0-3 \(0..3\) of \(q1, d1\)"):
            set_adjudication("q1", "d1", 4, adjudicator="ann", session=session)
        with pytest.raises(NdcgLabelingError, match="--by needs"):
            set_adjudication("q1", "d1", 1, adjudicator=" ", session=session)
    assert db.counts()["adjudications"] == 0


def test_adjudicated_pair_without_consensus_is_an_effective_label(db, tmp_path):
    load(db, tmp_path, GRADES)
    with session_scope(db.engine) as session:
        set_adjudication("q2", "d1", 3, adjudicator="ann", session=session)
        eff = effective_labels(session=session)
    assert eff.to_dict("records") == [
        {"query_id": "q2", "doc_id": "d1", "value": 3.0, "query_type": None, "source": "adjudication"}]


def test_effective_labels_of_an_empty_database(db):
    with session_scope(db.engine) as session:
        eff = effective_labels(session=session)
    assert eff.empty and tuple(eff.columns) == EFFECTIVE_COLUMNS


def test_export_qrels_rounding_rules(db, tmp_path):
    load(db, tmp_path, GRADES)
    consensus(db, method="mean")  # q1/d1 = 7/3, q1/d2 = 1.5, q2/d1 = 1
    with session_scope(db.engine) as session:
        with pytest.raises(NdcgLabelingError, match=r"2 labels are fractional .*--round half-up\|floor.*--keep-fraction"):
            export_qrels(session=session)
        assert export_qrels(session=session, rounding="half-up").text == "q1 0 d1 2\nq1 0 d2 2\nq2 0 d1 1\n"
        assert export_qrels(session=session, rounding="floor").text == "q1 0 d1 2\nq1 0 d2 1\nq2 0 d1 1\n"
        kept = export_qrels(session=session, keep_fraction=True)
        assert kept.text == "q1 0 d1 2.33333\nq1 0 d2 1.5\nq2 0 d1 1\n"
        assert kept.warning is not None and "trec_eval expects integer" in kept.warning
        with pytest.raises(NdcgLabelingError, match="exclude each other"):
            export_qrels(session=session, rounding="floor", keep_fraction=True)


def test_export_without_labels_is_an_error(db):
    with session_scope(db.engine) as session, pytest.raises(NotFoundError, match="run `ndcg-labeling consensus`"):
        export_qrels(session=session)


def test_consensus_counts_one_row_per_item(db, tmp_path):
    load(db, tmp_path, GRADES)
    consensus(db, method="dawid-skene", point="mode")
    with db.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(m.ConsensusLabel)).scalar_one() == 3
    assert {v[1] for v in labels(db).values()} == {"dawid-skene"}
