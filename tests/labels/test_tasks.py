"""Position-blind grading batches, on SQLite and PostgreSQL: pooling, incremental pooling, overlap and
balance, hidden fields, order uncorrelated with rank, reproducibility, export -> fill -> import."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau
from sqlalchemy import select

from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.errors import ConflictError, NdcgLabelingError, NotFoundError
from ndcg_labeling.io.tasks_files import TASK_COLUMNS
from ndcg_labeling.labels import importing
from ndcg_labeling.labels import tasks as t

QUERY_TYPES = ("navigational", "informational", "transactional", "long-tail")


def make_corpus(db, tmp_path: Path, *, queries: int = 4, docs: int = 10, systems: dict[str, int] | None = None,
                graders: tuple[str, ...] = ("ann", "bob", "cat"), run_depth: int | None = None) -> dict[str, pd.DataFrame]:
    """Queries q000.., documents d000.., and one run per system (a seeded permutation of the documents
    per query, ranks 1..run_depth, scores 700.xxxx that appear nowhere else). Returns the runs."""
    systems = systems if systems is not None else {"bm25": 1, "dense": 2}
    run_depth = run_depth or docs
    qpath, dpath = tmp_path / "queries.csv", tmp_path / "documents.csv"
    pd.DataFrame({"query_id": [f"q{i:03d}" for i in range(queries)],
                  "text": [f"question number {i}" for i in range(queries)],
                  "query_type": [QUERY_TYPES[i % 4] for i in range(queries)]}).to_csv(qpath, index=False)
    pd.DataFrame({"doc_id": [f"d{i:03d}" for i in range(docs)], "title": [f"Page {i}" for i in range(docs)],
                  "body": [f"Text of page {i}." for i in range(docs)],
                  "url": [f"https://example.org/{i}" for i in range(docs)]}).to_csv(dpath, index=False)
    runs = {}
    with session_scope(db.engine) as session:
        importing.import_queries(qpath, session=session)
        importing.import_documents(dpath, session=session)
        importing.add_graders(list(graders), session=session)
        for name, seed in systems.items():
            runs[name] = add_run(session, tmp_path, name, seed, queries=queries, docs=docs, depth=run_depth)
    return runs


def add_run(session, tmp_path: Path, name: str, seed: int, *, queries: int, docs: int, depth: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(queries):
        for rank, d in enumerate(rng.permutation(docs)[:depth], start=1):
            rows.append({"query_id": f"q{q:03d}", "doc_id": f"d{d:03d}", "rank": rank,
                         "score": round(700 + seed / 10 + (depth - rank) / 1000 + 0.0001234, 7)})
    run = pd.DataFrame(rows)
    path = tmp_path / f"run-{name}.csv"
    run.to_csv(path, index=False)
    importing.import_run(path, system=name, session=session)
    return run


def batch_items(db, name: str) -> set[tuple[str, str]]:
    with db.engine.connect() as conn:
        rows = conn.execute(select(m.Query.external_id, m.Document.external_id)
                            .join(m.BatchItem, m.BatchItem.query_id == m.Query.id)
                            .join(m.Document, m.Document.id == m.BatchItem.document_id)
                            .join(m.GradingBatch, m.GradingBatch.id == m.BatchItem.batch_id)
                            .where(m.GradingBatch.name == name)).all()
    return {(q, d) for q, d in rows}


def assignments(db, name: str) -> pd.DataFrame:
    """grader, query, doc, position, item_key of every assignment of batch ``name``."""
    with db.engine.connect() as conn:
        rows = conn.execute(select(m.Grader.name, m.Query.external_id, m.Document.external_id, m.Assignment.position,
                                   m.BatchItem.item_key, m.Assignment.status)
                            .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
                            .join(m.BatchItem, m.BatchItem.id == m.Assignment.item_id)
                            .join(m.Query, m.Query.id == m.BatchItem.query_id)
                            .join(m.Document, m.Document.id == m.BatchItem.document_id)
                            .join(m.GradingBatch, m.GradingBatch.id == m.Assignment.batch_id)
                            .where(m.GradingBatch.name == name)).all()
    frame = pd.DataFrame(rows, columns=["grader", "query", "doc", "position", "item_key", "status"])
    return frame.sort_values(["grader", "position"]).reset_index(drop=True)


def top_k(run: pd.DataFrame, k: int) -> set[tuple[str, str]]:
    return set(run.loc[run["rank"] <= k, ["query_id", "doc_id"]].itertuples(index=False, name=None))


def create(db, name: str = "b1", **kwargs):
    args = {"scale": "0-3", "depth": 3, "overlap": 2, "graders": ["ann", "bob", "cat"], "seed": 7} | kwargs
    with session_scope(db.engine) as session:
        return t.create_batch(name, session=session, **args)


def grade_everything(db, name: str, grade: int = 1) -> None:
    frame = assignments(db, name)
    with session_scope(db.engine) as session:
        for row in frame.itertuples():
            t.save_grade(name, row.item_key, grade, grader=row.grader, session=session)


# --- pooling -------------------------------------------------------------------------------------


def test_pool_is_the_union_of_the_top_k(db, tmp_path):
    runs = make_corpus(db, tmp_path, queries=5, docs=12)
    result = create(db, depth=3)
    expected = top_k(runs["bm25"], 3) | top_k(runs["dense"], 3)
    assert batch_items(db, "b1") == expected
    assert result.items == len(expected) and result.queries == 5
    assert result.systems == ["bm25", "dense"]
    # depth 1 of one system: exactly one document per query
    create(db, "only-bm25", depth=1, systems=["bm25"])
    assert batch_items(db, "only-bm25") == top_k(runs["bm25"], 1)


def test_pool_filters_queries_by_type_and_id(db, tmp_path):
    runs = make_corpus(db, tmp_path, queries=8, docs=6)
    create(db, "nav", depth=2, query_types=["navigational"])
    nav = {f"q{i:03d}" for i in range(8) if QUERY_TYPES[i % 4] == "navigational"}
    assert {q for q, _ in batch_items(db, "nav")} == nav
    create(db, "one", depth=2, query_ids=["q003"], systems=["dense"])
    assert batch_items(db, "one") == {p for p in top_k(runs["dense"], 2) if p[0] == "q003"}


def test_incremental_pooling_after_a_new_system(db, tmp_path):
    runs = make_corpus(db, tmp_path, queries=4, docs=15, systems={"bm25": 1})
    create(db, "first", depth=4, overlap=2)
    grade_everything(db, "first")
    with session_scope(db.engine) as session:
        runs["dense"] = add_run(session, tmp_path, "dense", 2, queries=4, docs=15, depth=15)
    result = create(db, "second", depth=4, overlap=2)
    new_pairs = top_k(runs["dense"], 4) - top_k(runs["bm25"], 4)
    assert new_pairs, "the test needs the new system to bring new pairs"
    assert batch_items(db, "second") == new_pairs
    assert result.already_judged == len(top_k(runs["dense"], 4) | top_k(runs["bm25"], 4)) - len(new_pairs)
    # with overlap 3 the pairs judged twice are not enough, so everything is pooled again
    assert create(db, "third", depth=4, overlap=3).items == len(top_k(runs["dense"], 4) | top_k(runs["bm25"], 4))


def test_nothing_left_to_pool_is_an_error(db, tmp_path):
    make_corpus(db, tmp_path, queries=2, docs=4, systems={"bm25": 1})
    create(db, "first", depth=2, overlap=1)
    grade_everything(db, "first")
    before = db.counts()
    with pytest.raises(NdcgLabelingError, match="nothing to grade: all 4 pooled pairs already have 1 judgments"):
        create(db, "second", depth=2, overlap=1)
    assert db.counts() == before


# --- assignment -----------------------------------------------------------------------------------


def test_overlap_balance_and_distinct_graders(db, tmp_path):
    graders = ("g1", "g2", "g3", "g4", "g5")
    make_corpus(db, tmp_path, queries=9, docs=9, graders=graders)
    result = create(db, depth=4, overlap=3, graders=list(graders))
    frame = assignments(db, "b1")
    per_item = frame.groupby("item_key")["grader"].agg(["count", "nunique"])
    assert len(per_item) == result.items
    assert (per_item["count"] == 3).all() and (per_item["nunique"] == 3).all()
    loads = frame.groupby("grader").size()
    assert set(loads.index) == set(graders)
    assert loads.max() - loads.min() <= 1
    assert result.assignments == 3 * result.items == len(frame)
    # positions are 0..n-1 per grader
    for _, group in frame.groupby("grader"):
        assert sorted(group["position"]) == list(range(len(group)))


def test_each_grader_sees_queries_as_blocks_in_a_shuffled_order(db, tmp_path):
    make_corpus(db, tmp_path, queries=12, docs=8)
    create(db, depth=5, overlap=1, graders=["ann"])
    frame = assignments(db, "b1")
    order = frame["query"].tolist()
    blocks = [q for i, q in enumerate(order) if i == 0 or order[i - 1] != q]
    assert len(blocks) == 12, "the documents of one query are presented together"
    assert blocks != sorted(blocks)


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"overlap": 4}, NdcgLabelingError, "overlap 4 needs at least 4 graders, got 3 (ann, bob, cat)"),
    ({"overlap": 0}, NdcgLabelingError, "overlap must be at least 1, got 0"),
    ({"depth": 0}, NdcgLabelingError, "depth must be at least 1, got 0"),
    ({"graders": ["ann", "zed"]}, NotFoundError, "unknown grader 'zed'; add it with `ndcg-labeling graders add zed`"),
    ({"graders": ["ann", "ann"]}, NdcgLabelingError, "grader 'ann' is named twice"),
    ({"systems": ["bm99"]}, NotFoundError, "unknown system 'bm99'; known systems: bm25, dense"),
    ({"query_types": ["weird"]}, NotFoundError,
     "unknown query type 'weird'; known query types: informational, long-tail, navigational, transactional"),
    ({"query_ids": ["nope"]}, NotFoundError, "unknown query id 'nope'"),
    ({"scale": "1-10"}, NdcgLabelingError, "unknown scale '1-10'; known scales: 0-3, 0-4"),
])
def test_create_refuses_bad_arguments(db, tmp_path, kwargs, error, message):
    make_corpus(db, tmp_path)
    before = db.counts()
    with pytest.raises(error) as info:
        create(db, **kwargs)
    assert str(info.value) == message
    assert db.counts() == before


def test_create_refuses_an_existing_batch_name(db, tmp_path):
    make_corpus(db, tmp_path)
    create(db)
    before = db.counts()
    with pytest.raises(ConflictError, match="batch 'b1' already exists"):
        create(db, seed=8)
    assert db.counts() == before


def test_batch_records_scale_and_guideline(db, tmp_path):
    from ndcg_labeling.guidelines import load_guideline

    make_corpus(db, tmp_path)
    create(db, scale="0-4")
    with db.engine.connect() as conn:
        batch = conn.execute(select(m.GradingBatch)).one()
    guideline = load_guideline("0-4")
    assert (batch.scale, batch.guideline_path, batch.guideline_version) == ("0-4", "guidelines/relevance-0-4.md", "1.0")
    assert batch.guideline_sha256 == guideline.sha256 and batch.seed == 7


# --- reproducibility and blindness ------------------------------------------------------------------


def test_same_seed_same_assignment_and_order(db, tmp_path):
    make_corpus(db, tmp_path, queries=6, docs=10)
    create(db, "s1", depth=5, seed=123)
    create(db, "s2", depth=5, seed=123)
    create(db, "s3", depth=5, seed=124)
    a1, a2, a3 = (assignments(db, n)[["grader", "query", "doc", "position"]] for n in ("s1", "s2", "s3"))
    pd.testing.assert_frame_equal(a1, a2)
    assert not a1.equals(a3)
    keys = set(assignments(db, "s1")["item_key"])
    assert keys.isdisjoint(set(assignments(db, "s2")["item_key"])), "item ids are unique across batches"
    assert all(len(k) == 24 and int(k, 16) >= 0 for k in keys)


def test_item_keys_tell_nothing_of_rank(db, tmp_path):
    # Item keys come from a cryptographic source (no seed): 2,000 items make |tau| >= 0.1 a 6.7-sigma
    # event under independence (200 items made it a 3% flake).
    runs = make_corpus(db, tmp_path, queries=40, docs=50, systems={"bm25": 3})
    create(db, depth=50, overlap=1, graders=["ann"])
    frame = assignments(db, "b1").merge(runs["bm25"], left_on=["query", "doc"], right_on=["query_id", "doc_id"])
    tau, _ = kendalltau(frame["item_key"].rank(), frame["rank"])
    assert abs(tau) < 0.1


def test_exported_order_is_uncorrelated_with_rank(db, tmp_path):
    runs = make_corpus(db, tmp_path, queries=40, docs=60, systems={"bm25": 5})
    create(db, depth=60, overlap=1, graders=["ann", "bob"])
    for grader in ("ann", "bob"):
        out = tmp_path / f"{grader}.csv"
        with session_scope(db.engine) as session:
            t.export_tasks_file("b1", grader=grader, out=out, session=session)
        exported = pd.read_csv(out, dtype=str, keep_default_na=False)
        frame = assignments(db, "b1")
        frame = frame[frame["grader"] == grader].set_index("item_key")
        ranks = runs["bm25"].set_index(["query_id", "doc_id"])["rank"]
        exported_ranks = [ranks[(frame.loc[k, "query"], frame.loc[k, "doc"])] for k in exported["item_id"]]
        assert len(exported_ranks) > 1000
        tau, _ = kendalltau(np.arange(len(exported_ranks)), exported_ranks)
        assert abs(tau) < 0.1, tau


def test_export_hides_rank_score_system_and_other_grades(db, tmp_path):
    runs = make_corpus(db, tmp_path, queries=4, docs=10)
    create(db, depth=5, overlap=2)
    # bob grades everything: ann's export must not show it
    frame = assignments(db, "b1")
    with session_scope(db.engine) as session:
        for row in frame[frame["grader"] == "bob"].itertuples():
            t.save_grade("b1", row.item_key, 3, grader="bob", session=session)
    scores = {str(s) for run in runs.values() for s in run["score"]}
    for fmt, name in (("csv", "ann.csv"), ("jsonl", "ann.jsonl"), ("label-studio", "ann.json")):
        out = tmp_path / name
        with session_scope(db.engine) as session:
            summary = t.export_tasks_file("b1", grader="ann", out=out, session=session, fmt=fmt)
        assert summary.rows == (frame["grader"] == "ann").sum()
        text = out.read_text(encoding="utf-8")
        for hidden in ("bm25", "dense", "rank", "score", "system", *scores):
            assert hidden not in text, (fmt, hidden)
        if fmt == "csv":
            assert text.splitlines()[0] == ",".join(TASK_COLUMNS)
            assert set(pd.read_csv(out, dtype=str, keep_default_na=False)["grade"]) == {""}
        elif fmt == "jsonl":
            records = [json.loads(line) for line in text.splitlines()]
            assert all(list(r) == list(TASK_COLUMNS) and r["grade"] == "" for r in records)
        else:
            tasks = json.loads(text)
            assert all(list(task) == ["data"] and list(task["data"]) == ["item_id", "query", "title", "body", "url", "exported_at"]
                       for task in tasks)


def test_export_lists_only_open_items_in_the_graders_order(db, tmp_path):
    make_corpus(db, tmp_path)
    create(db, depth=3, overlap=1)
    frame = assignments(db, "b1")
    ann = frame[frame["grader"] == "ann"]
    with session_scope(db.engine) as session:
        t.save_grade("b1", ann["item_key"].iloc[0], 2, grader="ann", session=session)
        t.skip_item("b1", ann["item_key"].iloc[1], grader="ann", session=session)
        rows = t.export_tasks("b1", grader="ann", session=session)
    assert [r["item_id"] for r in rows] == ann["item_key"].iloc[2:].tolist()
    assert rows[0]["title"].startswith("Page ") and rows[0]["query"].startswith("question number")


# --- import of graded files --------------------------------------------------------------------------


def fill(path: Path, fmt: str, grades: dict[str, str]) -> Path:
    """Fill an exported file as a grader would; for label-studio, write a Label Studio export."""
    if fmt == "csv":
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        frame["grade"] = [grades.get(k, "") for k in frame["item_id"]]
        frame.to_csv(path, index=False)
    elif fmt == "jsonl":
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        path.write_text("".join(json.dumps(r | {"grade": grades.get(r["item_id"], "")}) + "\n" for r in records))
    else:
        tasks = json.loads(path.read_text(encoding="utf-8"))
        exported = []
        for i, task in enumerate(tasks):
            grade = grades.get(task["data"]["item_id"], "")
            result = [{"from_name": "relevance", "to_name": "text", "type": "choices",
                       "value": {"choices": [grade]}}] if grade else []
            exported.append({"id": i + 1, "data": task["data"],
                             "annotations": [{"id": 1, "result": [{"value": {"choices": ["0"]}}]},
                                             {"id": 2, "result": result}]})
        path.write_text(json.dumps(exported), encoding="utf-8")
    return path


@pytest.mark.parametrize(("fmt", "suffix"), [("csv", "csv"), ("jsonl", "jsonl"), ("label-studio", "json")])
def test_export_fill_import_round_trip(db, tmp_path, fmt, suffix):
    make_corpus(db, tmp_path)
    create(db, depth=3, overlap=2)
    out = tmp_path / f"ann.{suffix}"
    with session_scope(db.engine) as session:
        t.export_tasks_file("b1", grader="ann", out=out, session=session, fmt=fmt)
    keys = assignments(db, "b1").query("grader == 'ann'")["item_key"].tolist()
    grades = {k: str(i % 4) for i, k in enumerate(keys[:-1])}  # the last one is left open
    if fmt == "label-studio":
        grades[keys[0]] = "Highly relevant"  # a grade name, as a Label Studio choice
    fill(out, fmt, grades)
    with session_scope(db.engine) as session:
        summary = t.import_graded(out, grader="ann", session=session, fmt=fmt)
    assert (summary.new, summary.unchanged, summary.replaced, summary.left_open) == (len(keys) - 1, 0, 0, 1)
    assert str(summary) == (f"grades from {out} (batch b1, grader ann): {len(keys) - 1} new, 0 unchanged, "
                            f"1 left open (empty grade)")
    with db.engine.connect() as conn:
        stored = conn.execute(select(m.Judgment.batch, m.Judgment.scale, m.Judgment.grade, m.Judgment.source_file)).all()
    assert len(stored) == len(keys) - 1
    assert {(b, s, f) for b, s, _, f in stored} == {("b1", "0-3", str(out))}
    expected_grades = sorted(2 if g == "Highly relevant" else int(g) for g in grades.values())
    assert sorted(g for _, _, g, _ in stored) == expected_grades
    frame = assignments(db, "b1").query("grader == 'ann'")
    assert frame["status"].tolist() == ["done"] * (len(keys) - 1) + ["open"]

    # the same file again: idempotent
    with session_scope(db.engine) as session:
        again = t.import_graded(out, grader="ann", session=session, fmt=fmt)
    assert (again.new, again.unchanged, again.replaced) == (0, len(keys) - 1, 0)
    # a changed grade replaces the stored one
    grades[keys[1]] = str((int(grades[keys[1]]) + 1) % 4)
    fill(out, fmt, grades)
    with session_scope(db.engine) as session:
        changed = t.import_graded(out, grader="ann", session=session, fmt=fmt)
    assert (changed.new, changed.unchanged, changed.replaced) == (0, len(keys) - 2, 1)
    assert "1 replaced (a different grade than before: the latest file wins)" in str(changed)
    with db.engine.connect() as conn:
        assert conn.execute(select(m.Judgment.grade).join(m.BatchItem, (m.BatchItem.query_id == m.Judgment.query_id)
                                                          & (m.BatchItem.document_id == m.Judgment.document_id))
                            .where(m.BatchItem.item_key == keys[1])).scalar_one() == int(grades[keys[1]])


def test_bad_grades_and_wrong_grader_rows_are_rejected_with_nothing_written(db, tmp_path):
    make_corpus(db, tmp_path)
    create(db, depth=3, overlap=1)
    frame = assignments(db, "b1")
    ann, bob = frame.query("grader == 'ann'")["item_key"].tolist(), frame.query("grader == 'bob'")["item_key"].tolist()
    path = tmp_path / "ann.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["item_id", "query", "grade"])
        writer.writerows([[ann[0], "q", "2"], [ann[1], "q", "7"], [bob[0], "q", "1"], ["ffff", "q", "1"],
                          [ann[2], "q", "two"], [ann[0], "q", "1"], [ann[3], "q", ""]])
    before = db.counts()
    with pytest.raises(t.GradedFileError) as info, session_scope(db.engine) as session:
        t.import_graded(path, grader="ann", session=session)
    assert info.value.lines == [
        f"{path}:3: grade 7 is outside the scale 0-3 (0..3)",
        f"{path}:4: item_id {bob[0]!r} is not assigned to grader 'ann'",
        f"{path}:5: unknown item_id 'ffff'",
        f"{path}:6: grade 'two' is not a grade of scale 0-3 (0..3 or a grade name)",
        f"{path}:7: duplicate item_id {ann[0]!r}, first seen at line 2",
    ]
    assert db.counts() == before


def test_label_studio_export_of_another_batch_is_rejected(db, tmp_path):
    make_corpus(db, tmp_path, queries=6)
    create(db, "one", depth=2, overlap=1, query_ids=["q000", "q001"])
    create(db, "two", depth=2, overlap=1, query_ids=["q002", "q003"])
    keys_one = assignments(db, "one").query("grader == 'ann'")["item_key"].tolist()
    keys_two = assignments(db, "two").query("grader == 'ann'")["item_key"].tolist()
    path = tmp_path / "ls.json"
    tasks = [{"data": {"item_id": k}, "annotations": [{"result": [{"value": {"choices": ["Perfect"]}}]}]}
             for k in keys_one + keys_two[:1]]
    tasks.append({"data": {}, "annotations": []})
    path.write_text(json.dumps(tasks))
    before = db.counts()
    with pytest.raises(t.GradedFileError) as info, session_scope(db.engine) as session:
        t.import_graded(path, grader="ann", session=session)
    n = len(keys_one) + 1  # tasks are numbered from 1 in messages
    assert info.value.lines == [f"{path}: task {n}: item_id {keys_two[0]!r} belongs to batch 'two', not 'one'",
                                f"{path}: task {n + 1}: no data.item_id"]
    assert db.counts() == before
    with pytest.raises(t.GradedFileError) as info, session_scope(db.engine) as session:
        t.import_graded(path, grader="ann", session=session, batch="two")
    assert info.value.lines[0] == f"{path}: task 1: item_id {keys_one[0]!r} belongs to batch 'one', not 'two'"


# --- status and the session's data operations ---------------------------------------------------------


def test_status_list_and_session_operations(db, tmp_path):
    make_corpus(db, tmp_path, queries=2, docs=4, systems={"bm25": 1})
    create(db, depth=2, overlap=2, graders=["ann", "bob"])  # 4 items, each to both graders
    with session_scope(db.engine) as session:
        first = t.next_item("b1", grader="ann", session=session)
        assert first is not None and first.position == 0
        assert t.save_grade("b1", first.item_id, "Perfect", grader="ann", session=session) == 3
        second = t.next_item("b1", grader="ann", session=session)
        assert second is not None and second.position == 1
        t.skip_item("b1", second.item_id, grader="ann", session=session, reason="")
        third = t.next_item("b1", grader="ann", session=session)
        assert third is not None and third.position == 2
        t.save_grade("b1", third.item_id, 1, grader="ann", session=session)
        t.undo_item("b1", third.item_id, grader="ann", session=session)
        assert t.next_item("b1", grader="ann", session=session) == third
        with pytest.raises(NdcgLabelingError, match=r"grade 4 is outside the scale 0-3 \(0..3\)"):
            t.save_grade("b1", third.item_id, 4, grader="ann", session=session)
        progress = t.grader_progress("b1", grader="ann", session=session)
        assert (progress.done, progress.skipped, progress.total, progress.open) == (1, 1, 4, 2)
        # bob grades the first item too: it becomes complete
        t.save_grade("b1", first.item_id, 2, grader="bob", session=session)
        status = t.batch_status("b1", session=session)
        rows = t.list_batches(session=session)
    skipped = assignments(db, "b1").query("grader == 'ann' and status == 'skipped'")
    assert len(skipped) == 1
    with db.engine.connect() as conn:
        assert conn.execute(select(m.Assignment.skip_reason).where(m.Assignment.status == "skipped")).scalar_one() == "cannot judge"
    assert status.as_dict() == {
        "batch": "b1", "scale": "0-3", "items": 4, "complete_items": 1, "open_items": 3,
        "graders": [{"grader": "ann", "done": 1, "skipped": 1, "total": 4},
                    {"grader": "bob", "done": 1, "skipped": 0, "total": 4}],
        "overlap": 2, "guideline_path": "guidelines/relevance-0-3.md", "guideline_version": "1.0",
        "guideline_changed": False}
    assert status.warnings == []
    assert [(r["batch"], r["items"], r["done"], r["total"], r["progress"]) for r in rows] == [("b1", 4, 2, 8, 0.25)]


def test_status_warns_when_the_guideline_changed(db, tmp_path):
    make_corpus(db, tmp_path)
    create(db)
    with db.engine.begin() as conn:
        conn.execute(m.GradingBatch.__table__.update().values(guideline_sha256="0" * 64))
    with session_scope(db.engine) as session:
        status = t.batch_status("b1", session=session)
    assert status.guideline_changed
    assert status.warnings == ["the guideline guidelines/relevance-0-3.md has changed since batch 'b1' was created "
                               "(it was version 1.0; its sha256 differs now): the grades of this batch follow the "
                               "text as it was then"]


@pytest.mark.slow
def test_a_batch_of_50k_items_is_pooled_and_assigned_in_bulk(sqlite_db, tmp_path):
    # Scale, not speed: speed is measured in benchmarks/, never asserted in a unit test.
    queries, docs = 500, 100
    run = pd.DataFrame({"query_id": np.repeat([f"q{q}" for q in range(queries)], docs),
                        "doc_id": [f"d{q}_{r}" for q in range(queries) for r in range(docs)],
                        "rank": np.tile(np.arange(1, docs + 1), queries)})
    run.to_csv(tmp_path / "run.csv", index=False)
    with session_scope(sqlite_db.engine) as session:
        importing.import_run(tmp_path / "run.csv", system="bm25", session=session)
        importing.add_graders(["a", "b", "c", "d"], session=session)
    with session_scope(sqlite_db.engine) as session:
        result = t.create_batch("big", scale="0-3", depth=docs, overlap=2, graders=["a", "b", "c", "d"],
                                session=session, seed=1)
    assert result.items == 50_000 and result.assignments == 100_000
    counts = sqlite_db.counts()
    assert (counts["batch_items"], counts["assignments"]) == (50_000, 100_000)


def test_item_ids_cannot_be_recomputed_from_seed_and_batch_name(db, tmp_path):
    # two databases with the same data, the same seed and the same batch name: the assignment and the
    # orders are the same (the seed governs them), the item ids are not (a cryptographic source)
    from tests.conftest import Database

    other_dir = tmp_path / "other"
    other_dir.mkdir()
    other = Database("sqlite", other_dir, migrated=True)
    try:
        for database, folder in ((db, tmp_path), (other, other_dir)):
            make_corpus(database, folder, queries=5, docs=12)
            create(database, "same", depth=6, seed=99)
        mine, theirs = assignments(db, "same"), assignments(other, "same")
        cols = ["grader", "query", "doc", "position"]
        pd.testing.assert_frame_equal(mine[cols], theirs[cols])
        assert set(mine["item_key"]).isdisjoint(set(theirs["item_key"]))
    finally:
        other.drop()


def test_order_shown_to_a_grader_is_not_the_document_id_order(db, tmp_path):
    # the documents were created in the first system's rank order of q000 (import run creates them in
    # file order), so ascending document ids would be that ranking
    qpath, rpath = tmp_path / "queries.csv", tmp_path / "run.csv"
    pd.DataFrame({"query_id": ["q000"], "text": ["one question"], "query_type": ["nav"]}).to_csv(qpath, index=False)
    pd.DataFrame({"query_id": "q000", "doc_id": [f"doc{i:02d}" for i in range(30)], "rank": range(1, 31),
                  "score": [100.0 - i for i in range(30)]}).to_csv(rpath, index=False)
    with session_scope(db.engine) as session:
        importing.import_queries(qpath, session=session)
        importing.add_graders(["ann", "bob"], session=session)
        importing.import_run(rpath, system="bm25", session=session)
    create(db, "blind", depth=30, overlap=1, graders=["ann", "bob"], seed=5)
    with db.engine.connect() as conn:
        ids = dict(conn.execute(select(m.Document.external_id, m.Document.id)).all())
    for grader, frame in assignments(db, "blind").groupby("grader"):
        shown = [ids[d] for d in frame.sort_values("position")["doc"]]
        assert len(shown) == 15
        assert shown != sorted(shown) and shown != sorted(shown, reverse=True)
        tau, _ = kendalltau(np.arange(len(shown)), shown)
        assert abs(tau) < 0.7, (grader, tau)
