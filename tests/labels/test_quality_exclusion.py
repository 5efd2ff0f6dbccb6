"""Issue 35 / issue 30: trust is a grader's over all gold answers, exclusion from consensus is a recorded
setting later runs honour, and the report's caveats describe the labels in force."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import select

from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.demo.quality import load_quality_data, play_graders
from ndcg_labeling.labels import tasks
from ndcg_labeling.labels.consensus import run_consensus

GRADERS = ["ana", "ben", "chloe", "dev", "emma"]


@pytest.fixture
def played(sqlite_db, tmp_path):
    with session_scope(sqlite_db.engine) as session:
        load_quality_data(session=session)
        tasks.create_batch("q", scale="0-3", depth=8, overlap=3, graders=GRADERS, session=session, seed=11,
                           gold_rate=0.12)
        play_graders("q", session=session, out_dir=tmp_path)
    return sqlite_db.engine


def _gold_keys(session, batch: str, grader: str) -> list[tuple[str, int]]:
    return session.execute(
        select(m.BatchItem.item_key, m.GoldItem.grade).join(m.BatchGoldItem, m.BatchGoldItem.item_id == m.BatchItem.id)
        .join(m.GoldItem, m.GoldItem.id == m.BatchGoldItem.gold_item_id)
        .join(m.Assignment, m.Assignment.item_id == m.BatchItem.id).join(m.Grader, m.Grader.id == m.Assignment.grader_id)
        .join(m.GradingBatch, m.GradingBatch.id == m.BatchItem.batch_id)
        .where(m.GradingBatch.name == batch, m.Grader.name == grader)).all()


def test_trust_is_over_all_gold_answers_not_the_batch_alone(sqlite_db):
    """chloe is right on every gold item of w1 (too few to decide there) and wrong on every one of w2:
    over all her answers she is untrusted, also for consensus of w1 alone."""
    from ndcg_labeling.labels.quality import graders_quality

    with session_scope(sqlite_db.engine) as session:
        load_quality_data(session=session)
        for name in ("w1", "w2"):
            tasks.create_batch(name, scale="0-3", depth=8, overlap=2, graders=GRADERS, session=session,
                               seed=len(name) + int(name[1]), gold_rate=0.08)
        w1, w2 = _gold_keys(session, "w1", "chloe"), _gold_keys(session, "w2", "chloe")
        for key, grade in w1[:3]:
            tasks.save_grade("w1", key, grade, grader="chloe", session=session)
        for key, grade in w2:
            tasks.save_grade("w2", key, (grade + 2) % 4, grader="chloe", session=session)
        assert len(w2) >= 4
        row = next(r for r in graders_quality(session=session, batch="w1").rows if r["grader"] == "chloe")
        assert row["n_gold"] == 3 and row["gold_accuracy"] == 1.0
        assert row["n_gold_all"] == 3 + len(w2) and row["trusted"] is False
        # chloe grades an ordinary item of w1; consensus of w1 leaves her out
        for grader in ("chloe", "ana", "ben"):
            key = session.execute(select(m.BatchItem.item_key).join(m.Assignment, m.Assignment.item_id == m.BatchItem.id)
                                  .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
                                  .join(m.GradingBatch, m.GradingBatch.id == m.BatchItem.batch_id)
                                  .where(m.GradingBatch.name == "w1", m.Grader.name == grader,
                                         m.BatchItem.id.not_in(select(m.BatchGoldItem.item_id))).limit(1)).scalar_one()
            tasks.save_grade("w1", key, 1, grader=grader, session=session)
        summary = run_consensus(session=session, batch="w1", method="median", exclude_untrusted=True)
        assert summary.excluded == {"chloe": 1}
        # ana answered 2 gold items right: undecided (Wilson 90% lower bound 0.42 < 0.7); counted unless asked
        for key, grade in _gold_keys(session, "w1", "ana")[:2]:
            tasks.save_grade("w1", key, grade, grader="ana", session=session)
        row = next(r for r in graders_quality(session=session, batch="w1").rows if r["grader"] == "ana")
        assert row["trusted"] == "undecided"
        assert run_consensus(session=session, batch="w1", method="median").excluded == {"chloe": 1}  # recorded
        for key, grade in _gold_keys(session, "w1", "ben"):  # ben: every gold item right, trusted
            tasks.save_grade("w1", key, grade, grader="ben", session=session)
        assert next(r for r in graders_quality(session=session, batch="w1").rows if r["grader"] == "ben")["trusted"] is True
        both = run_consensus(session=session, batch="w1", method="median", exclude_undecided=True)
        assert both.excluded == {"chloe": 1, "ana": 1} and both.exclude_undecided  # ben counts
        assert "untrusted or undecided graders" in str(both)


def test_exclusion_is_recorded_and_later_runs_honour_it(played):
    with session_scope(played) as session:
        first = run_consensus(session=session, batch="q", method="median", exclude_untrusted=True)
        assert set(first.excluded) == {"dev", "emma"} and not first.exclusion_recorded
        later = run_consensus(session=session, batch="q", method="median")  # a plain run: it sticks
        assert later.excluded == first.excluded and later.exclusion_recorded
        assert "recorded setting" in str(later) and "--include-untrusted" in str(later)
        back = run_consensus(session=session, batch="q", method="median", exclude_untrusted=False)
        assert back.excluded == {} and not back.exclude_untrusted
        again = run_consensus(session=session, batch="q", method="median")
        assert again.excluded == {} and not again.exclude_untrusted


def test_report_caveats_describe_the_labels_in_force(played):
    """After consensus without the untrusted graders the report no longer says they contributed, and
    alpha no longer counts their grades (checked with the krippendorff package on the grades left)."""
    import krippendorff

    from ndcg_labeling.reports.headline import caveat_warnings
    from ndcg_labeling.scoring.report import build_report

    with session_scope(played) as session:
        run_consensus(session=session, batch="q", method="median")
        before = build_report(session=session)
        assert set(before.caveats.untrusted_graders) == {"dev", "emma"}
        assert any("untrusted graders contributed labels" in w for w in caveat_warnings(before))
        run_consensus(session=session, batch="q", method="median", exclude_untrusted=True)
        after = build_report(session=session)
        assert after.caveats.untrusted_graders == []
        assert not any("untrusted graders contributed" in w for w in caveat_warnings(after))
        assert any("left out of consensus" in n and "dev" in n for n in after.caveats.notes)
        rows = session.execute(select(m.Grader.name, m.Judgment.query_id, m.Judgment.document_id, m.Judgment.grade)
                               .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                               .where(m.Judgment.batch == "q", m.Grader.name.in_(["ana", "ben", "chloe"]))).all()
    items = sorted({(q, d) for _, q, d, _ in rows})
    col = {it: k for k, it in enumerate(items)}
    names = ["ana", "ben", "chloe"]
    data = np.full((3, len(items)), np.nan)
    for name, q, d, grade in rows:
        data[names.index(name), col[(q, d)]] = grade
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    assert after.caveats.alpha["all"] == pytest.approx(expected, abs=1e-9)
    assert before.caveats.alpha["all"] != pytest.approx(expected, abs=1e-3)
