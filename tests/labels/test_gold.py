"""Gold items in batches: the rate, never two in a row, indistinguishable from ordinary items in every
grader's export, answers kept out of judgments and consensus, and the feedback after a gold item."""

from __future__ import annotations

import csv
import dataclasses
import json
import re

import numpy as np
import pytest
from scipy.stats import chisquare, kstest
from sqlalchemy import func, select

from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.demo.quality import QUALITY_DIR, load_quality_data, play_graders
from ndcg_labeling.labels import tasks
from ndcg_labeling.labels.gold import gold_feedback, list_gold
from ndcg_labeling.labels.tasks import create as tasks_create
from ndcg_labeling.labels.tasks.gold_mix import gold_count
from tests.conftest import invoke

GRADERS = ["ana", "ben", "chloe", "dev", "emma"]


def _gold_flags(session, batch: str) -> dict[str, list[tuple[int, bool, int]]]:
    """grader -> [(position, is gold, query row id)] in position order (what the test may know)."""
    a, bi = m.Assignment, m.BatchItem
    gold_items = set(session.execute(select(m.BatchGoldItem.item_id)).scalars())
    out: dict[str, list[tuple[int, bool, int]]] = {}
    for name, pos, item_id, qid in session.execute(
            select(m.Grader.name, a.position, a.item_id, bi.query_id).join(m.Grader, m.Grader.id == a.grader_id)
            .join(bi, bi.id == a.item_id).join(m.GradingBatch, m.GradingBatch.id == a.batch_id)
            .where(m.GradingBatch.name == batch).order_by(m.Grader.name, a.position)):
        out.setdefault(name, []).append((pos, item_id in gold_items, qid))
    return out


def test_gold_rate_positions_and_never_two_in_a_row(db):
    with session_scope(db.engine) as session:
        load_quality_data(session=session)
        created = tasks.create_batch("g", scale="0-3", depth=8, overlap=3, graders=GRADERS, session=session,
                                     seed=11, gold_rate=0.12)
        assert created.items == 288 and created.gold_rate == 0.12
        flags = _gold_flags(session, "g")
        for grader, rows in flags.items():
            positions = [p for p, _, _ in rows]
            assert positions == list(range(len(rows))), grader
            gold = [g for _, g, _ in rows]
            n_ordinary = gold.count(False)
            assert 0 < gold.count(True) <= gold_count(n_ordinary, 0.12) + 1
            assert not any(x and y for x, y in zip(gold, gold[1:], strict=False)), f"{grader}: two gold items in a row"
        # a gold item is a batch item of its own, its (query, document) one of the gold items
        n_marked = session.execute(select(func.count()).select_from(m.BatchGoldItem)).scalar_one()
        assert 0 < n_marked <= 36
        assert created.assignments == sum(len(r) for r in flags.values())
        # 36 gold items, each to 3 graders as every item: 108 gold assignments, fewer than 0.12 asks for
        n_gold = sum(g for rows in flags.values() for _, g, _ in rows)
        assert n_gold == 3 * n_marked == created.gold_assignments
        assert created.gold_rate_achieved == round(n_gold / created.assignments, 4) < 0.12
        assert any("below the 0.12 asked" in w for w in created.warnings)
        assert "achieved" in str(created)


def test_gold_rate_needs_gold_items_and_a_sane_rate(sqlite_db):
    from ndcg_labeling.errors import NdcgLabelingError
    from ndcg_labeling.labels import importing

    with session_scope(sqlite_db.engine) as session:
        importing.import_queries(QUALITY_DIR / "queries.csv", session=session)
        importing.import_documents(QUALITY_DIR / "documents.csv", session=session)
        importing.import_graders(QUALITY_DIR / "graders.csv", session=session)
        importing.import_run(QUALITY_DIR / "runs" / "exact.run", system="exact", session=session, fmt="trec")
        with pytest.raises(NdcgLabelingError, match="gold rate must be between 0 and 0.5"):
            tasks.create_batch("g", scale="0-3", depth=8, overlap=1, graders=GRADERS, session=session, gold_rate=0.7)
        with pytest.raises(NdcgLabelingError, match="needs gold items on scale 0-3"):
            tasks.create_batch("g", scale="0-3", depth=8, overlap=1, graders=GRADERS, session=session, gold_rate=0.1)


def test_without_gold_the_batch_is_drawn_as_before(sqlite_db):
    """The gold draws have their own generator: the ordinary items' order is the same with and without."""
    with session_scope(sqlite_db.engine) as session:
        load_quality_data(session=session)
        tasks.create_batch("plain", scale="0-3", depth=8, overlap=3, graders=GRADERS, session=session, seed=5)
        tasks.create_batch("gold", scale="0-3", depth=8, overlap=3, graders=GRADERS, session=session, seed=5,
                           gold_rate=0.2)
        a, bi = m.Assignment, m.BatchItem
        order = {}
        for batch in ("plain", "gold"):
            order[batch] = [(g, q, d) for g, q, d in session.execute(
                select(a.grader_id, bi.query_id, bi.document_id).join(bi, bi.id == a.item_id)
                .join(m.GradingBatch, m.GradingBatch.id == a.batch_id).where(m.GradingBatch.name == batch)
                .where(bi.id.not_in(select(m.BatchGoldItem.item_id))).order_by(a.grader_id, a.position))]
        assert order["plain"] == order["gold"]


def _read_export(path):
    if str(path).endswith(".jsonl"):
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_gold_items_are_indistinguishable_in_every_graders_export(runner, sqlite_db, tmp_path, monkeypatch):
    """Fields, id pattern, query grouping and positions: nothing tells gold from ordinary items.

    The item ids come from a seeded source here (the product draws them from :mod:`secrets`), so the
    statistical checks below judge one fixed draw and the test cannot fail at random."""
    import random

    draw = random.Random(20261203)
    monkeypatch.setattr(tasks_create.secrets, "token_bytes", draw.randbytes)
    # the fields a grader is shown carry nothing gold-specific
    assert [f.name for f in dataclasses.fields(tasks.GradingItem)] == [
        "batch", "item_id", "position", "query", "title", "body", "url"]
    with session_scope(sqlite_db.engine) as session:
        load_quality_data(session=session)
        for seed in (1, 2, 3):  # three batches over the same pool: more gold positions for the tests below
            tasks.create_batch(f"b{seed}", scale="0-3", depth=8, overlap=3, graders=GRADERS, session=session,
                               seed=seed, gold_rate=0.15)
        gold_keys = set(session.execute(select(m.BatchItem.item_key).join(
            m.BatchGoldItem, m.BatchGoldItem.item_id == m.BatchItem.id)).scalars())
    rel_positions, runs_ok = [], 0
    seen_keys: dict[str, bool] = {}
    batch_keys: dict[int, dict[str, bool]] = {}  # per batch: every item id an export showed, gold or not
    for seed in (1, 2, 3):
        for grader in GRADERS:
            for ext in ("csv", "jsonl"):
                out = tmp_path / f"b{seed}-{grader}.{ext}"
                assert invoke(runner, sqlite_db, "tasks", "export", f"b{seed}", "--grader", grader, "--out",
                              str(out)).exit_code == 0
                rows = _read_export(out)
                assert {tuple(r.keys()) for r in rows} == {("item_id", "query", "title", "body", "url", "exported_at", "grade")}
                assert len({r["exported_at"] for r in rows}) == 1  # one stamp per file: nothing marks a gold item
            is_gold = [r["item_id"] in gold_keys for r in rows]
            assert any(is_gold) and not all(is_gold)
            for r, g in zip(rows, is_gold, strict=True):
                assert re.fullmatch(r"[0-9a-f]{24}", r["item_id"])
                assert r["grade"] == "" and r["title"] and r["body"] and r["query"]
                seen_keys[r["item_id"]] = g
            assert not any(x and y for x, y in zip(is_gold, is_gold[1:], strict=False))
            n = len(rows)
            rel_positions += [(i + 0.5) / n for i, g in enumerate(is_gold) if g]
            # a query's items, gold ones included, come together: one run per query, as for ordinary items
            queries = [r["query"] for r in rows]
            starts = [q for i, q in enumerate(queries) if i == 0 or queries[i - 1] != q]
            runs_ok += len(starts) == len(set(queries))
            batch_keys.setdefault(seed, {}).update((r["item_id"], g) for r, g in zip(rows, is_gold, strict=True))
    assert runs_ok == 15
    assert len(rel_positions) > 150
    # positions and the ids' order are uniform for gold items: not rejected at a strict level
    assert kstest(rel_positions, "uniform").pvalue > 0.001
    # the rank of each gold item's id among its batch's ids, each item once (an item shown to three
    # graders counted three times made the samples dependent and the test fail at random)
    key_ranks = [(i + 0.5) / len(keys) for keys in batch_keys.values() for i, k in enumerate(sorted(keys)) if keys[k]]
    assert len(key_ranks) > 40
    assert kstest(key_ranks, "uniform").pvalue > 0.001
    # the hex digits of gold ids are distributed like those of ordinary ids (each distinct id counted once)
    hex_digits = {kind: np.bincount([int(c, 16) for k, g in seen_keys.items() if g == (kind == "gold") for c in k],
                                    minlength=16) for kind in ("gold", "ordinary")}
    expected = hex_digits["ordinary"] / hex_digits["ordinary"].sum() * hex_digits["gold"].sum()
    assert chisquare(hex_digits["gold"], expected).pvalue > 0.001


def test_gold_answers_stay_out_of_judgments_and_consensus(db, tmp_path):
    from ndcg_labeling.labels.consensus import run_consensus

    with session_scope(db.engine) as session:
        load_quality_data(session=session)
        created = tasks.create_batch("g", scale="0-3", depth=8, overlap=3, graders=GRADERS, session=session,
                                     seed=3, gold_rate=0.1)
        total = play_graders("g", session=session, out_dir=tmp_path)
        n_answers = session.execute(select(func.count()).select_from(m.GoldAnswer)).scalar_one()
        n_batch_judgments = session.execute(select(func.count()).select_from(m.Judgment)
                                            .where(m.Judgment.batch == "g")).scalar_one()
        assert total == created.assignments == n_answers + n_batch_judgments
        assert n_answers > 0 and n_batch_judgments == created.items * 3
        gold_pairs = set(session.execute(select(m.GoldItem.query_id, m.GoldItem.document_id)).all())
        judged = set(session.execute(select(m.Judgment.query_id, m.Judgment.document_id)).all())
        assert not gold_pairs & judged
        summary = run_consensus(session=session, batch="g", method="median")
        assert summary.items == created.items
        labelled = set(session.execute(select(m.ConsensusLabel.query_id, m.ConsensusLabel.document_id)).all())
        assert not gold_pairs & labelled
        rows = {(r["query_id"], r["doc_id"]): r for r in list_gold(session=session)}
        assert sum(r["answers"] for r in rows.values()) == n_answers


def _first_gold_and_ordinary(session, batch: str, grader: str) -> tuple[str, str]:
    gold = set(session.execute(select(m.BatchGoldItem.item_id)).scalars())
    keys = session.execute(select(m.BatchItem.item_key, m.BatchItem.id).join(
        m.Assignment, m.Assignment.item_id == m.BatchItem.id).join(m.Grader, m.Grader.id == m.Assignment.grader_id)
        .join(m.GradingBatch, m.GradingBatch.id == m.BatchItem.batch_id)
        .where(m.Grader.name == grader, m.GradingBatch.name == batch).order_by(m.Assignment.position)).all()
    return next(k for k, i in keys if i in gold), next(k for k, i in keys if i not in gold)


def test_grading_a_gold_item_saves_an_answer_and_feedback_tells_the_reference(db):
    with session_scope(db.engine) as session:
        load_quality_data(session=session)
        tasks.create_batch("fb", scale="0-3", depth=8, overlap=1, graders=GRADERS, session=session, seed=4,
                           gold_rate=0.1, gold_feedback=True)
        tasks.create_batch("quiet", scale="0-3", depth=8, overlap=1, graders=GRADERS, session=session, seed=4,
                           gold_rate=0.1)
        gold_key, plain_key = _first_gold_and_ordinary(session, "fb", "ana")
        expected, explanation = session.execute(
            select(m.GoldItem.grade, m.GoldItem.explanation).join(m.BatchGoldItem, m.BatchGoldItem.gold_item_id == m.GoldItem.id)
            .join(m.BatchItem, m.BatchItem.id == m.BatchGoldItem.item_id).where(m.BatchItem.item_key == gold_key)).one()
        wrong = (expected + 2) % 4
        before = session.execute(select(func.count()).select_from(m.Judgment)).scalar_one()
        assert tasks.save_grade("fb", gold_key, wrong, grader="ana", session=session) == wrong
        assert session.execute(select(func.count()).select_from(m.Judgment)).scalar_one() == before
        feedback = gold_feedback("fb", gold_key, grader="ana", session=session)
        assert feedback is not None and not feedback.correct
        assert feedback.expected_grade == expected and feedback.explanation == explanation
        assert f"the reference grade is {expected}" in str(feedback)
        tasks.save_grade("fb", plain_key, 1, grader="ana", session=session)
        assert gold_feedback("fb", plain_key, grader="ana", session=session) is None  # ordinary item
        assert tasks.grader_progress("fb", grader="ana", session=session).done == 2
        quiet_gold, _ = _first_gold_and_ordinary(session, "quiet", "ana")
        tasks.save_grade("quiet", quiet_gold, 0, grader="ana", session=session)
        assert gold_feedback("quiet", quiet_gold, grader="ana", session=session) is None  # no --gold-feedback


def test_the_web_grading_function_returns_the_feedback_with_the_same_keys_for_every_item(sqlite_db):
    from ndcg_labeling.workspace import grading as workspace
    from ndcg_labeling.workspace.auth import WebUser

    with session_scope(sqlite_db.engine) as session:
        load_quality_data(session=session)
        tasks.create_batch("fb", scale="0-3", depth=8, overlap=1, graders=GRADERS, session=session, seed=4,
                           gold_rate=0.1, gold_feedback=True)
        tasks.create_batch("quiet", scale="0-3", depth=8, overlap=1, graders=GRADERS, session=session, seed=4,
                           gold_rate=0.1)
        ana = session.execute(select(m.Grader).where(m.Grader.name == "ana")).scalar_one()
        user = WebUser(grader_id=ana.id, grader="ana", role="grader")
        gold_key, plain_key = _first_gold_and_ordinary(session, "fb", "ana")
        plain = workspace.grade_item("fb", plain_key, 1, user, session=session)
        gold = workspace.grade_item("fb", gold_key, 0, user, session=session)
        assert set(plain) == set(gold) == {"done", "skipped", "open", "total", "feedback"}
        assert plain["feedback"] is None
        assert gold["feedback"]["your_grade"] == 0 and gold["feedback"]["expected_grade"] in range(4)
        quiet_gold, _ = _first_gold_and_ordinary(session, "quiet", "ana")
        assert "feedback" not in workspace.grade_item("quiet", quiet_gold, 0, user, session=session)


def test_a_batch_of_some_query_types_uses_only_their_gold_items(sqlite_db):
    from ndcg_labeling.errors import NdcgLabelingError

    with session_scope(sqlite_db.engine) as session:
        load_quality_data(session=session)
        session.execute(m.GoldItem.__table__.delete().where(m.GoldItem.query_id.in_(
            select(m.Query.id).where(m.Query.query_type == "informational"))))
        with pytest.raises(NdcgLabelingError, match="gold items on scale 0-3 of the batch's queries"):
            tasks.create_batch("info", scale="0-3", depth=8, overlap=2, graders=GRADERS, session=session, seed=2,
                               gold_rate=0.2, query_types=["informational"])
        tasks.create_batch("nav", scale="0-3", depth=8, overlap=2, graders=GRADERS, session=session, seed=2,
                           gold_rate=0.2, query_types=["navigational"])
        types = set(session.execute(select(m.Query.query_type).join(m.GoldItem, m.GoldItem.query_id == m.Query.id)
                                    .join(m.BatchGoldItem, m.BatchGoldItem.gold_item_id == m.GoldItem.id)).scalars())
        assert types == {"navigational"}


def test_feedback_cannot_be_gamed_the_first_answer_counts_and_stands(db):
    """Issue 35: a grader shown the reference grade posts it again (or undoes and regrades): the first
    answer still counts, later ones are kept for the record, undo and skip are refused."""
    from ndcg_labeling.errors import ConflictError
    from ndcg_labeling.labels.quality import graders_quality

    with session_scope(db.engine) as session:
        load_quality_data(session=session)
        tasks.create_batch("fb", scale="0-3", depth=8, overlap=1, graders=GRADERS, session=session, seed=4,
                           gold_rate=0.2, gold_feedback=True)
        gold = set(session.execute(select(m.BatchGoldItem.item_id)).scalars())
        keys = [k for k, i in session.execute(
            select(m.BatchItem.item_key, m.BatchItem.id).join(m.Assignment, m.Assignment.item_id == m.BatchItem.id)
            .join(m.Grader, m.Grader.id == m.Assignment.grader_id).where(m.Grader.name == "dev")) if i in gold]
        assert len(keys) >= 5
        for key in keys:  # always wrong first, then the reference grade the feedback showed
            expected = session.execute(select(m.GoldItem.grade).join(
                m.BatchGoldItem, m.BatchGoldItem.gold_item_id == m.GoldItem.id).join(
                m.BatchItem, m.BatchItem.id == m.BatchGoldItem.item_id).where(m.BatchItem.item_key == key)).scalar_one()
            tasks.save_grade("fb", key, (expected + 2) % 4, grader="dev", session=session)
            shown = gold_feedback("fb", key, grader="dev", session=session)
            assert shown is not None and not shown.correct
            tasks.save_grade("fb", key, shown.expected_grade, grader="dev", session=session)
            with pytest.raises(ConflictError, match="your first answer stands"):
                tasks.undo_item("fb", key, grader="dev", session=session)
            with pytest.raises(ConflictError, match="your first answer stands"):
                tasks.skip_item("fb", key, grader="dev", session=session)
        row = next(r for r in graders_quality(session=session, batch="fb").rows if r["grader"] == "dev")
        assert row["n_gold"] == len(keys) and row["gold_accuracy"] == 0.0
        later = session.execute(select(m.GoldAnswer.later_grade, m.GoldAnswer.n_later)).all()
        assert sum(n for _, n in later) == len(keys) and all(g is not None for g, n in later if n)
        # without feedback nothing was shown: undo still withdraws the answer, like a judgment
        tasks.create_batch("quiet", scale="0-3", depth=8, overlap=1, graders=GRADERS, session=session, seed=4,
                           gold_rate=0.1)
        quiet_gold, _ = _first_gold_and_ordinary(session, "quiet", "ana")
        n_before = session.execute(select(func.count()).select_from(m.GoldAnswer)).scalar_one()
        tasks.save_grade("quiet", quiet_gold, 0, grader="ana", session=session)
        tasks.undo_item("quiet", quiet_gold, grader="ana", session=session)
        assert session.execute(select(func.count()).select_from(m.GoldAnswer)).scalar_one() == n_before
