"""The agreement use case on SQLite and PostgreSQL: published values, scopes, undefined cases,
several scales, grades superseded across batches, per-grader rows and the prevalence paradox."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ndcg_labeling.db.session import session_scope
from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.labels.agreement import agreement_report, load_grades
from ndcg_labeling.labels.importing import import_judgments, import_queries

DATA = Path(__file__).resolve().parents[1] / "data"


def load(db, tmp_path: Path, rows: list[tuple], scale: str = "0-3", name: str = "j.csv") -> None:
    """Import judgments ``(query, doc, grader, grade[, batch])``."""
    with_batch = any(len(r) == 5 for r in rows)
    header = "query_id,doc_id,grader,grade" + (",batch" if with_batch else "")
    lines = [",".join(str(x) for x in (r if len(r) == 5 or not with_batch else (*r, ""))) for r in rows]
    path = tmp_path / name
    path.write_text(header + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
    with session_scope(db.engine) as session:
        import_judgments(path, scale=scale, session=session, create_graders=True)


def report(db, **kwargs):
    with session_scope(db.engine) as session:
        return agreement_report(session=session, **kwargs)


@pytest.mark.parametrize(("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_krippendorff_2011_example(db, level, published):
    # The paper's values 1..5 are stored as grades 0..4 (v - 1): a shift changes no difference, so
    # alpha is the same at the nominal, ordinal and interval levels.
    with session_scope(db.engine) as session:
        import_judgments(DATA / "krippendorff2011.csv", scale="0-4", session=session, create_graders=True)
    rep = report(db, level=level)
    row = rep.rows[0]
    assert row["scope"] == "all" and row["level"] == level
    assert round(row["alpha"], 3) == published
    assert (row["n_items"], row["n_pairable"], row["n_graders"], row["n_grades"]) == (12, 11, 4, 41)


def test_load_grades_codes_items_and_graders(db, tmp_path):
    load(db, tmp_path, [("q1", "d1", "a", 1), ("q1", "d1", "b", 2), ("q2", "d1", "a", 0)])
    with session_scope(db.engine) as session:
        sel = load_grades(session=session)
    assert sel.n_grades == 3 and sel.n_items == 2 and len(sel.grader_ids) == 2
    assert sel.item.dtype == np.int64 and sorted(sel.item.tolist()) == [0, 0, 1]
    # every grade's item decodes back to its own (query, document)
    assert (sel.item_query_id[sel.item] == sel.query_id).all()
    assert (sel.item_document_id[sel.item] == sel.document_id).all()
    assert sel.scale.name == "0-3"


@pytest.mark.parametrize(("rows", "reason"), [
    ([("q1", "d1", "a", 1), ("q1", "d2", "a", 2)], "a single grader"),
    ([("q1", "d1", "a", 2), ("q1", "d1", "b", 2), ("q1", "d2", "a", 2), ("q1", "d2", "b", 2)],
     "a single value in the data"),
    ([("q1", "d1", "a", 2), ("q1", "d2", "b", 1)], "no item with two grades"),
])
def test_undefined_alpha_gives_reason_not_crash(db, tmp_path, rows, reason):
    load(db, tmp_path, rows)
    row = report(db).rows[0]
    assert row["alpha"] is None
    assert row["reason"] == reason


def test_several_scales_are_refused_unless_batch_narrows(db, tmp_path):
    load(db, tmp_path, [("q1", "d1", "a", 1, "b3"), ("q1", "d1", "b", 2, "b3")], scale="0-3", name="a.csv")
    load(db, tmp_path, [("q1", "d1", "a", 4, "b4"), ("q1", "d1", "b", 3, "b4")], scale="0-4", name="b.csv")
    with pytest.raises(NdcgLabelingError, match=r"several scales \(0-3: 2 judgments, 0-4: 2 judgments\).*--batch"):
        report(db)
    rep = report(db, batch="b4")
    assert rep.scale == "0-4" and rep.rows[0]["n_grades"] == 2
    with pytest.raises(NotFoundError, match="no judgments in batch 'nope'"):
        report(db, batch="nope")


def test_newest_grade_counts_when_a_grader_graded_an_item_in_two_batches(db, tmp_path):
    load(db, tmp_path, [("q1", "d1", "a", 0, "b1"), ("q1", "d1", "b", 0, "b1")], name="1.csv")
    load(db, tmp_path, [("q1", "d1", "a", 3, "b2")], name="2.csv")
    rep = report(db)
    assert rep.rows[0]["n_grades"] == 2
    assert any("1 older grades" in n for n in rep.notes)
    with session_scope(db.engine) as session:
        sel = load_grades(session=session)
    assert sorted(sel.grade.tolist()) == [0, 3]  # a's newer 3 replaced a's 0


def test_by_query_type_rows_all_first_then_sorted(db, tmp_path):
    (tmp_path / "q.csv").write_text("query_id,text,query_type\nq1,x,nav\nq2,y,info\nq3,z,\n")
    with session_scope(db.engine) as session:
        import_queries(tmp_path / "q.csv", session=session)
    rows = [("q1", "d1", "a", 1), ("q1", "d1", "b", 1), ("q1", "d2", "a", 0), ("q1", "d2", "b", 0),
            ("q2", "d1", "a", 3), ("q2", "d1", "b", 0), ("q2", "d2", "a", 0), ("q2", "d2", "b", 3),
            ("q3", "d1", "a", 2)]
    load(db, tmp_path, rows)
    rep = report(db, by="query-type")
    assert [r["scope"] for r in rep.rows] == ["all", "(none)", "info", "nav"]
    by_scope = {r["scope"]: r for r in rep.rows}
    assert by_scope["nav"]["alpha"] == pytest.approx(1.0)
    assert by_scope["info"]["alpha"] < 0
    assert by_scope["(none)"]["alpha"] is None and by_scope["(none)"]["reason"] == "a single grader"
    assert by_scope["all"]["n_grades"] == 9
    rep_q = report(db, by="query")
    assert [r["scope"] for r in rep_q.rows] == ["all", "q1", "q2", "q3"]


def test_by_grader_flags_the_random_grader(db, tmp_path):
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 4, size=60)
    rows = []
    for i, t in enumerate(truth):
        for g in ("g1", "g2", "g3", "g4"):
            rows.append(("q1", f"d{i}", g, int(t)))
        rows.append(("q1", f"d{i}", "noisy", int(rng.integers(0, 4))))
        rows.append(("q1", f"d{i}", "lenient", int(min(t + 1, 3))))
    load(db, tmp_path, rows)
    rep = report(db, by="grader")
    assert rep.rows[0]["scope"] == "all"
    graders = {r["scope"]: r for r in rep.rows[1:]}
    assert set(graders) == {"g1", "g2", "g3", "g4", "noisy", "lenient"}
    assert graders["noisy"]["flagged"] is True
    assert not graders["g1"]["flagged"]
    assert graders["lenient"]["mean_difference"] > 0.4  # grades higher than the others
    assert graders["g1"]["n_grades"] == 60 and graders["g1"]["n_partners"] == 5
    partners = {p["grader"]: p for p in graders["g1"]["kappa"]}
    assert partners["g2"]["kappa"] == pytest.approx(1.0) and partners["g2"]["overlap"] == 60
    assert any(n.startswith("grader noisy is far below the others") for n in rep.notes)


def test_prevalence_paradox_is_said_in_words(db, tmp_path):
    rows = []
    for i in range(40):
        rows += [("q1", f"d{i}", "a", 0), ("q1", f"d{i}", "b", 0 if i else 1)]
    load(db, tmp_path, rows)
    rep = report(db)
    row = rep.rows[0]
    assert row["percent_agreement"] >= 0.9 and row["alpha"] < 0.4
    assert "prevalence paradox" in row["note"]
    assert rep.notes and "prevalence paradox" in rep.notes[0]


def test_bad_level_is_a_clear_error(db, tmp_path):
    load(db, tmp_path, [("q1", "d1", "a", 1), ("q1", "d1", "b", 2)])
    with pytest.raises(NdcgLabelingError, match="unknown level 'ratio'"):
        report(db, level="ratio")
