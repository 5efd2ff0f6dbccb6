"""Issue 35: gold items a grader cannot spot by their place, their sharing or their recurrence, and the
gold rate achieved printed beside the one asked."""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import cross_val_score
from sklearn.tree import DecisionTreeClassifier
from sqlalchemy import func, select

from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.demo.quality import load_quality_data
from ndcg_labeling.labels import tasks

GRADERS = ["ana", "ben", "chloe", "dev", "emma"]


def _judge_half_the_queries(session) -> None:
    """Two graders already judged every run pair of half the queries: a new batch pools the other half
    only, while gold items exist for every query (the case where gold became one-document blocks)."""
    qids = sorted(session.execute(select(m.Query.id)).scalars())[::2]
    pairs = session.execute(select(m.RankingEntry.query_id, m.RankingEntry.document_id).distinct()
                            .where(m.RankingEntry.query_id.in_(qids))).all()
    ids = dict(session.execute(select(m.Grader.name, m.Grader.id)).all())
    for name in ("ana", "ben"):
        session.add_all([m.Judgment(grader_id=ids[name], query_id=q, document_id=d, grade=1, scale="0-3", batch="old",
                                    source_file="t") for q, d in pairs])
    session.flush()


def _features(session, batch: str) -> tuple[np.ndarray, np.ndarray]:
    """Per assignment, what a grader sees: the size of its query block, its place in the block and in
    the grader's order, its item id as a number, the length of the text; and whether it is gold."""
    a, bi, d = m.Assignment, m.BatchItem, m.Document
    gold = set(session.execute(select(m.BatchGoldItem.item_id)).scalars())
    rows = session.execute(select(a.grader_id, a.position, bi.id, bi.item_key, bi.query_id, d.title, d.body)
                           .join(bi, bi.id == a.item_id).join(d, d.id == bi.document_id)
                           .join(m.GradingBatch, m.GradingBatch.id == a.batch_id)
                           .where(m.GradingBatch.name == batch).order_by(a.grader_id, a.position)).all()
    feats, labels = [], []
    by_grader: dict[int, list] = {}
    for r in rows:
        by_grader.setdefault(r[0], []).append(r)
    for items in by_grader.values():
        queries = [r[4] for r in items]
        starts = [i for i in range(len(items)) if i == 0 or queries[i] != queries[i - 1]]
        bounds = list(zip(starts, starts[1:] + [len(items)], strict=True))
        for s, e in bounds:
            for i in range(s, e):
                r = items[i]
                feats.append([e - s, i - s, i / len(items), int(r[3][:8], 16), len(r[5] or "") + len(r[6] or "")])
                labels.append(r[2] in gold)
    return np.array(feats, dtype=float), np.array(labels)


def test_gold_items_cannot_be_told_apart_by_block_position_id_or_length(sqlite_db, monkeypatch):
    # item ids are uniform random bytes from the OS; drawn here from a seeded generator of the same
    # distribution, so the classifier below sees the same ids on every run (with fresh ids its accuracy
    # moves by about a percent from run to run, around the bound)
    import ndcg_labeling.labels.tasks.create as create_module

    rng = np.random.default_rng(11)
    monkeypatch.setattr(create_module.secrets, "token_bytes", lambda n: rng.bytes(n))
    with session_scope(sqlite_db.engine) as session:
        load_quality_data(session=session)
        _judge_half_the_queries(session)
        created = tasks.create_batch("b", scale="0-3", depth=8, overlap=2, graders=GRADERS, session=session,
                                     seed=7, gold_rate=0.1)
        assert created.gold_short_block == 0 and not any("one-document" in w for w in created.warnings)
        x, y = _features(session, "b")
    base = y.mean()
    assert 0.05 < base < 0.15
    single = x[:, 0] == 1
    # a one-document block is no more likely gold than any item (it was 0.67 against 0.05)
    assert single.sum() == 0 or y[single].mean() <= 2 * base
    # a classifier over every feature a grader sees does no better than always saying "ordinary"
    accuracy = cross_val_score(DecisionTreeClassifier(max_depth=3, random_state=0), x, y, cv=5).mean()
    assert accuracy <= 1 - base + 0.01


def test_each_gold_item_goes_to_overlap_graders_like_every_item(sqlite_db):
    with session_scope(sqlite_db.engine) as session:
        load_quality_data(session=session)
        tasks.create_batch("b", scale="0-3", depth=8, overlap=2, graders=GRADERS, session=session, seed=3,
                           gold_rate=0.08)
        per_item = session.execute(select(func.count()).select_from(m.Assignment)
                                   .group_by(m.Assignment.item_id)).scalars().all()
        gold_per_item = session.execute(select(func.count()).select_from(m.Assignment).join(
            m.BatchGoldItem, m.BatchGoldItem.item_id == m.Assignment.item_id).group_by(m.Assignment.item_id)).scalars().all()
    assert set(per_item) == {2} and gold_per_item and set(gold_per_item) == {2}


def _gold_of(session, batch: str) -> set[tuple[int, int]]:
    return set(session.execute(select(m.Assignment.grader_id, m.BatchGoldItem.gold_item_id)
                               .join(m.BatchGoldItem, m.BatchGoldItem.item_id == m.Assignment.item_id)
                               .join(m.GradingBatch, m.GradingBatch.id == m.Assignment.batch_id)
                               .where(m.GradingBatch.name == batch)).all())


def test_a_grader_gets_gold_items_not_seen_before_and_reuse_is_reported(sqlite_db):
    with session_scope(sqlite_db.engine) as session:
        load_quality_data(session=session)
        first = tasks.create_batch("w1", scale="0-3", depth=8, overlap=2, graders=GRADERS, session=session, seed=1,
                                   gold_rate=0.05)
        second = tasks.create_batch("w2", scale="0-3", depth=8, overlap=2, graders=GRADERS, session=session, seed=2,
                                    gold_rate=0.05)
        third = tasks.create_batch("w3", scale="0-3", depth=8, overlap=2, graders=GRADERS, session=session, seed=3,
                                   gold_rate=0.05)
        w1, w2, w3 = _gold_of(session, "w1"), _gold_of(session, "w2"), _gold_of(session, "w3")
    assert first.gold_reused == 0
    # 36 gold items, each grader needs ~3 per batch: two batches fit without reuse
    assert second.gold_reused == len(w1 & w2) == 0
    assert third.gold_reused == len(w3 & (w1 | w2))
    if third.gold_reused:
        assert any("earlier batch" in w for w in third.warnings)


def _outside_gold_set(session, rng: np.random.Generator) -> list[str]:
    """A set where every gold item is of a query the batch does not pool: 160 queries with documents
    (texts of random length) in one run, 4 to 14 each for the last 80, which have no gold item; 16 to 22
    for the first 80, which are already judged twice (so a new batch pools the last 80 only) and have two
    more documents each, in no run, that are gold items."""
    graders = [f"g{k}" for k in range(6)]
    session.add_all([m.Grader(name=g) for g in graders])
    system = m.System(name="bm25")
    session.add(system)
    session.flush()
    gids = [session.execute(select(m.Grader.id).where(m.Grader.name == g)).scalar_one() for g in graders[:2]]
    for q in range(160):
        query = m.Query(external_id=f"q{q:03d}", text=f"query {q}")
        n_docs = int(rng.integers(18, 25) if q < 80 else rng.integers(4, 15))
        docs = [m.Document(external_id=f"q{q:03d}-d{k:02d}", title="t" * int(rng.integers(5, 60)),
                           body="b" * int(rng.integers(50, 2000))) for k in range(n_docs)]
        session.add_all([query, *docs])
        session.flush()
        ranked = docs[:-2] if q < 80 else docs  # the gold documents of a query are in no run
        session.add_all([m.RankingEntry(system_id=system.id, query_id=query.id, document_id=d.id, rank=k + 1)
                         for k, d in enumerate(ranked)])
        if q < 80:
            session.add_all([m.Judgment(grader_id=g, query_id=query.id, document_id=d.id, grade=1, scale="0-3",
                                        batch="old", source_file="t") for g in gids for d in docs[:-2]])
            session.add_all([m.GoldItem(query_id=query.id, document_id=d.id, scale="0-3", grade=2) for d in docs[-2:]])
    session.flush()
    return graders


def test_gold_of_queries_outside_the_batch_sits_in_blocks_like_any_other(sqlite_db, monkeypatch):
    # the case the previous test leaves out: no gold item of the batch's own queries at all. Each gold
    # item is padded with documents of its query to a block whose size follows the batch's blocks
    from scipy.stats import chi2_contingency

    import ndcg_labeling.labels.tasks.create as create_module

    rng = np.random.default_rng(35)
    monkeypatch.setattr(create_module.secrets, "token_bytes", lambda n: rng.bytes(n))
    with session_scope(sqlite_db.engine) as session:
        graders = _outside_gold_set(session, np.random.default_rng(5))
        created = tasks.create_batch("b", scale="0-3", depth=20, overlap=2, graders=graders, session=session,
                                     seed=4, gold_rate=0.1)
        x, y = _features(session, "b")
        per_item = session.execute(select(func.count()).select_from(m.Assignment)
                                   .group_by(m.Assignment.item_id)).scalars().all()
        order = session.execute(select(m.Assignment.grader_id, m.BatchItem.query_id)
                                .join(m.BatchItem, m.BatchItem.id == m.Assignment.item_id)
                                .order_by(m.Assignment.grader_id, m.Assignment.position)).all()
    assert created.queries == 80 and created.gold_padding > 0 and created.gold_short_block == 0
    assert not any("one-document" in w for w in created.warnings)
    assert abs(created.gold_rate_achieved - 0.1) < 0.02  # the padding counts as ordinary items
    assert set(per_item) == {2}  # padding items too go to `overlap` graders
    blocks = [key for k, key in enumerate(order) if k == 0 or key != order[k - 1]]
    assert len(blocks) == len(set(blocks))  # every query is one block in a grader's order
    base = y.mean()
    # the block size says nothing about gold (before: every one-document block was gold)
    sizes = np.minimum(x[:, 0], 8)
    table = np.array([[np.sum((sizes == s) & y), np.sum((sizes == s) & ~y)] for s in np.unique(sizes)])
    assert chi2_contingency(table).pvalue > 0.05
    # and a classifier over every feature a grader sees does no better than always saying "ordinary"
    # (tolerance 0.01: about one standard error of a cross-validated accuracy over these ~1,300 items)
    accuracy = cross_val_score(DecisionTreeClassifier(max_depth=3, random_state=0), x, y, cv=5).mean()
    assert accuracy <= 1 - base + 0.01


def test_padding_takes_documents_not_yet_judged_enough_first(sqlite_db):
    # query "in" is pooled (depth 3); query "out" is judged twice at ranks 1-3 and has four unjudged
    # documents at ranks 4-7 (below the depth) and a gold item: the gold item's padding comes from those
    with session_scope(sqlite_db.engine) as session:
        session.add_all([m.Grader(name="ana"), m.Grader(name="ben"), m.System(name="s")])
        session.flush()
        ana, ben = (session.execute(select(m.Grader.id).where(m.Grader.name == n)).scalar_one() for n in ("ana", "ben"))
        system = session.execute(select(m.System.id)).scalar_one()
        docs = {}
        for q, n in (("in", 3), ("out", 8)):
            query = m.Query(external_id=q, text=q)
            session.add(query)
            session.flush()
            for k in range(n):
                doc = m.Document(external_id=f"{q}{k}", title="t", body="b")
                session.add(doc)
                session.flush()
                docs[(q, k)] = doc.id
                if k < 7:
                    session.add(m.RankingEntry(system_id=system, query_id=query.id, document_id=doc.id, rank=k + 1))
                if q == "out" and k < 3:
                    session.add_all([m.Judgment(grader_id=g, query_id=query.id, document_id=doc.id, grade=1,
                                                scale="0-3", source_file="t") for g in (ana, ben)])
            if q == "out":
                session.add(m.GoldItem(query_id=query.id, document_id=docs[("out", 7)], scale="0-3", grade=2))
        session.flush()
        created = tasks.create_batch("b", scale="0-3", depth=3, overlap=1, graders=["ana", "ben"], session=session,
                                     seed=3, gold_rate=0.3)
        out_items = set(session.execute(select(m.BatchItem.document_id).join(m.Query, m.Query.id == m.BatchItem.query_id)
                                        .where(m.Query.external_id == "out")).scalars())
    unjudged = {docs[("out", k)] for k in range(3, 7)}
    assert created.queries == 1 and created.gold_assignments >= 1
    padding = out_items - {docs[("out", 7)]}
    assert len(padding) == created.gold_padding > 0 and padding <= unjudged
