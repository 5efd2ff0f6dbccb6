"""The importers' fast paths give what the plain rules give (issue 17): trec_eval's order, the id rule,
the edge-space check of the CSV reader, and the id maps read from the database."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from ndcg_labeling.db import bulk, pairs, references
from ndcg_labeling.db import models as m
from ndcg_labeling.db import repository as repo
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.io.ids import first_bad_id, id_problem
from ndcg_labeling.io.tables import _may_have_edge_spaces
from ndcg_labeling.labels.coded_ids import (
    CodedIds,
    StoredKeys,
    first_repeat,
    join_on_bytes,
    trec_ranking,
)
from ndcg_labeling.trec import trec_order

IDS = st.sampled_from(["a", "b", "B", "a1", "é", "z", "ä", "Z9", "\u4e00", "😀", "aa", "a_b"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(IDS, IDS, st.sampled_from([0.0, 1.0, -1.0, 2.5, 1e-9, 3.0])), min_size=1, max_size=40),
       st.booleans())
def test_trec_ranking_is_trec_order(lines, distinct_scores):
    queries = [q for q, _d, _s in lines]
    docs = [d for _q, d, _s in lines]
    # Half the cases have no tie (the fast path), half have what the draw gives (ties: trec_order itself).
    scores = np.arange(len(lines), dtype=np.float64)[::-1] * 0.5 if distinct_scores else np.array([s for *_x, s in lines])
    got = trec_ranking(CodedIds.of(queries), CodedIds.of(docs), scores)
    assert np.array_equal(got, trec_order(queries, docs, scores))


TEXTS = st.lists(st.text(alphabet=st.sampled_from(["a", "Z", "9", " ", "\t", "\n", "\x01", "\x7f", "é", "\u200b",
                                                   "\u3000", "\xa0", "-", "\\", '"']), max_size=6), min_size=1, max_size=30)


@settings(max_examples=400, deadline=None)
@given(TEXTS, st.sampled_from([3, 512]))
def test_first_bad_id_is_the_first_value_the_rule_refuses(values, limit):
    expected = next(((i, p) for i, v in enumerate(values) if (p := id_problem(v, "doc_id", limit))), None)
    assert first_bad_id(pd.Series(values, dtype=object), "doc_id", limit) == expected


_OLD_EDGE = r'(?:^|[{d}\n"]){e}|{e}(?:$|[{d}\r\n"])'


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(["a", " ", "\t", ",", "\n", "\r", '"', "é", "\ufeff"]), max_size=20),
       st.sampled_from([",", "\t"]))
def test_edge_space_check_finds_every_edge_space(body, delimiter):
    """The byte check may answer yes more often than the former regex over the text, never less."""
    textual = body[1:] if body.startswith("\ufeff") else body
    edge = "[ \t]" if delimiter != "\t" else " "
    pattern = _OLD_EDGE.format(d=re.escape(delimiter), e=edge)
    if re.search(pattern, textual, re.MULTILINE):
        assert _may_have_edge_spaces(body.encode(), delimiter)
    if " " not in body and "\t" not in body:
        assert not _may_have_edge_spaces(body.encode(), delimiter)


def test_first_repeat():
    assert first_repeat(np.array([1, 2, 1, 2]), np.array([5, 6, 6, 6])) == 3
    assert first_repeat(np.array([1, 2]), np.array([5, 5])) == -1
    assert first_repeat(np.array([], dtype=np.int64)) == -1


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 4), st.integers(1, 40), st.sampled_from([2, 5, 2**20, 2**40]), st.integers(0, 2**32))
def test_first_repeat_is_pandas_duplicated(n_keys, n, high, seed):
    """One combined integer key while the combinations fit in 62 bits, a frame beyond: both give
    pandas' first duplicated row."""
    rng = np.random.default_rng(seed)
    keys = [rng.integers(0, high, n) for _ in range(n_keys)]
    if n > 1:
        keys = [np.append(k, k[rng.integers(0, n)]) if seed % 2 else k for k in keys]  # half: a repeated key
    dup = pd.DataFrame(dict(enumerate(keys))).duplicated(keep="first").to_numpy()
    assert first_repeat(*keys) == (int(np.argmax(dup)) if dup.any() else -1)


@pytest.mark.parametrize("tab_id", [False, True])
@pytest.mark.parametrize("stored_extra", [0, 20_000])
def test_external_row_ids_joined_on_bytes(db, tab_id, stored_extra):
    """The importers' join on bytes gives every id the row id the database stores for it: the whole table
    read (few other stored ids) or the ids sent to the database (many: SQLite's json_each, PostgreSQL's
    temporary table), and a stored id with a tab, whose text
    cannot be split, sends the join back to Python."""
    ids = [f"d{i}\\\"'{{,}}é" for i in range(3_000)]
    with db.engine.begin() as conn:
        if tab_id:
            conn.execute(text("INSERT INTO documents (external_id) VALUES ('old\tid')"))
    with session_scope(db.engine) as session:
        bulk.ensure_external_ids(m.Document, [f"other{i}" for i in range(stored_extra)] + ids[:1_000], session=session)
    with session_scope(db.engine) as session:
        got, created = bulk.external_row_ids(m.Document, ids, session=session, join=join_on_bytes)
        assert created == 2_000
    with db.engine.connect() as conn:
        stored = dict(conn.execute(text("SELECT external_id, id FROM documents")).all())
    assert got.tolist() == [stored[x] for x in ids]


def test_whole_table_pairs_read_in_id_ranges_with_gaps(db):
    """A whole table's pairs, read a range of row ids at a time, are every stored pair once, empty ranges
    (ids far apart) included."""
    with db.engine.begin() as conn:
        conn.execute(text("INSERT INTO documents (id, external_id) VALUES (1, 'a'), (70000, 'b\\\"é'), "
                          "(65536, 'c'), (65537, 'd'), (400000, 'e')"))
    with db.engine.connect() as conn:
        stored = dict(conn.execute(text("SELECT external_id, id FROM documents")).all())
        whole = pairs.whole_table("documents")
        read = pairs.pairs_text(conn, whole)
        assert read.total == 5 and dict(zip(*pairs.fetch_pairs(conn, whole), strict=True)) == stored
    # line for line: each id beside its own row id (PostgreSQL: 8 bytes each, big-endian; SQLite: decimal lines)
    rids = np.frombuffer(read.rid, ">i8").tolist() if db.backend == "postgresql" else list(map(int, read.rid.split("\n")))
    assert dict(zip(read.ext.split("\n"), rids, strict=True)) == stored


def test_new_ids_get_row_ids_in_external_id_order(db):
    """Many new ids (the one-statement path) are created in external-id order, whatever the file's order:
    one lock order for concurrent writers, and no trace of a ranking's order in the internal ids."""
    ids = [f"doc-{i:05d}-é" for i in np.random.default_rng(5).permutation(5_000)]
    with session_scope(db.engine) as session:
        _rows, created = bulk.external_row_ids(m.Document, ids, session=session)
    with db.engine.connect() as conn:
        stored = [r[0] for r in conn.execute(text("SELECT external_id FROM documents ORDER BY id")).all()]
    assert created == 5_000 and stored == sorted(ids)


@pytest.mark.parametrize("n", [10, 3_000])
def test_ensure_external_ids_maps_every_id(db, n):
    """Small and large id lists (the large one read back as aggregated text), odd but valid characters,
    and a stored id the id rule would refuse today (a tab: the aggregated text is then not trusted)."""
    ids = [f"d{i}\\\"'{{,}}é" for i in range(n)]
    with db.engine.begin() as conn:
        conn.execute(text("INSERT INTO documents (external_id) VALUES ('old\tid')"))
    with session_scope(db.engine) as session:
        found, created = bulk.ensure_external_ids(m.Document, ids[: n // 2], session=session)
        assert created == n // 2
        found, created = bulk.ensure_external_ids(m.Document, ids, session=session)
        assert created == n - n // 2
    with db.engine.connect() as conn:
        stored = dict(conn.execute(text("SELECT external_id, id FROM documents")).all())
    assert {k: found[k] for k in ids} == {k: stored[k] for k in ids}
    with db.engine.connect() as conn:
        assert dict(zip(*pairs.fetch_pairs(conn, pairs.PairsSql("SELECT external_id AS ext, id AS rid FROM documents")), strict=True)) == stored
    with session_scope(db.engine) as session:
        rows, created = bulk.external_row_ids(m.Document, [*ids[::-1], "new"], session=session)
    assert created == 1 and rows[:-1].tolist() == [stored[k] for k in ids[::-1]]


@pytest.mark.pg
@pytest.mark.parametrize("db", ["postgresql"], indirect=True)  # PostgreSQL array literals only
def test_array_literal_round_trips(db):
    values = ['plain', 'a"b', "back\\slash", "{brace}", "com,ma", "0-3", "NULL"]
    literal = "{" + ",".join(map(references._array_element, values)) + "}"
    with db.engine.connect() as conn:
        got = conn.exec_driver_sql("SELECT %(v)s::text[]", {"v": literal}).scalar_one()
    assert got == values


def test_column_rows_iterate_as_tuples():
    rows = bulk.ColumnRows([7, np.array([1, 2]), np.array([0.5, np.nan]), ["a", "b"]], 2)
    assert list(rows) == [(7, 1, 0.5, "a"), (7, 2, None, "b")]
    assert len(rows) == 2 and rows.distinct(1) == [1, 2] and rows.distinct(2) == [0.5]


@pytest.mark.pg
@pytest.mark.parametrize("db", ["postgresql"], indirect=True)  # PostgreSQL COPY only
def test_binary_copy_stores_what_the_text_copy_stores(db):
    """The same rows through bulk_insert's binary COPY (set_types; columns or tuples) and psycopg's text COPY
    read back equal: NULLs, -0.0, 2**40, non-ASCII and escape characters, microseconds."""
    from datetime import datetime

    from sqlalchemy import column, table

    cols = "a integer, b bigint, c double precision, d text, e varchar(20), f timestamp without time zone"
    names = ["a", "b", "c", "d", "e", "f"]
    rows = [(1, 2**40, 1.5, "héllo", "x", datetime(2026, 12, 3, 9, 0, 0, 123456)),
            (-5, None, None, None, "x", datetime(1999, 1, 1)),
            (2**31 - 1, 0, -0.0, "", 'yy\\t"', datetime(2000, 1, 1))]
    columnar = bulk.ColumnRows([np.array([1, -5, 2**31 - 1]), [2**40, None, 0], np.array([1.5, np.nan, -0.0]),
                                ["héllo", None, ""], ["x", "x", 'yy\\t"'], [r[5] for r in rows]], 3)
    got = {}
    with session_scope(db.engine) as session:
        con = session.connection()
        for name in ("t_text", "t_rows", "t_cols"):
            con.exec_driver_sql(f"CREATE TEMP TABLE {name} ({cols})")
        with con.connection.driver_connection.cursor() as cur, cur.copy("COPY t_text FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        for name, given in (("t_rows", rows), ("t_cols", columnar)):
            assert bulk.bulk_insert(table(name, *map(column, names)), names, given, session=session) == 3
        for name in ("t_text", "t_rows", "t_cols"):
            got[name] = [tuple(r) for r in con.exec_driver_sql(f"SELECT * FROM {name}").all()]
    assert got["t_text"] == rows and got["t_rows"] == rows and got["t_cols"] == rows
    assert str(got["t_cols"][2][2]) == "-0.0"


def test_few_of_many_stored_ids_go_through_a_temporary_table(db):
    """1,500 ids among 5,000 stored: the ids are copied to a temporary table and joined."""
    with session_scope(db.engine) as session:
        bulk.ensure_external_ids(m.Document, [f"s{i}" for i in range(5_000)], session=session)
    wanted = [f"s{i}" for i in range(0, 4_500, 3)] + ["fresh\\1", 'fresh"2']
    with session_scope(db.engine) as session:
        rows, created = bulk.external_row_ids(m.Document, wanted, session=session)
    with db.engine.connect() as conn:
        stored = dict(conn.execute(text("SELECT external_id, id FROM documents")).all())
    assert created == 2 and rows.tolist() == [stored[k] for k in wanted]


@pytest.mark.parametrize("decoded", [False, True])
def test_pairs_read_meanwhile_map_as_a_read_after(db, decoded):
    """The whole table's pairs, read by a worker while the caller works, map the stored ids as a read after
    would, and ids not stored yet are created and mapped after (the read cannot hold them). Decoded by
    the worker too (``prepare``, as ``import run`` does), they map alike."""
    stored_ids = [f"d{i}\\\"'é" for i in range(2_000)]
    with session_scope(db.engine) as session:
        bulk.ensure_external_ids(m.Document, stored_ids, session=session)
    wanted = stored_ids[500:] + [f"new{i}" for i in range(500)]
    with session_scope(db.engine) as session:
        with bulk.pairs_meanwhile(m.Document, len(wanted), session=session,
                                  prepare=CodedIds.decode_stored if decoded else None) as read:
            assert read is not None and read.table == "documents"
        assert isinstance(read.prepared(), StoredKeys) if decoded else read.prepared() is None
        got, created = bulk.external_row_ids(m.Document, wanted, session=session, join=join_on_bytes, prefetched=read)
        held = sorted(read.held.tolist())
        if db.backend == "postgresql":  # the rows read are locked until the commit: a delete must wait
            with db.engine.connect() as other:
                other.execute(text("SET lock_timeout = '200ms'"))
                with pytest.raises(OperationalError, match="lock timeout"):
                    other.execute(text("DELETE FROM documents WHERE id = :i"), {"i": held[0]})
                other.rollback()
    with db.engine.connect() as conn:
        stored = dict(conn.execute(text("SELECT external_id, id FROM documents")).all())
    assert created == 500 and got.tolist() == [stored[x] for x in wanted]
    assert held == sorted(stored[x] for x in stored_ids[500:])  # the new ones are not held by the read


def test_held_ids_are_not_checked_again_and_the_others_are(db):
    """A bulk write's foreign-key check skips the referenced ids the transaction holds, and still refuses
    an id that is not stored."""
    from sqlalchemy.exc import IntegrityError

    assert bulk.ColumnRows([np.array([1, 2, 3, 3, 4])], 5, held={0: np.array([2, 4])}).distinct(0) == [1, 3]
    with session_scope(db.engine) as session:
        bulk.ensure_external_ids(m.Document, [f"d{i}" for i in range(3_000)], session=session)
        bulk.ensure_external_ids(m.Query, ["q"], session=session)
        session.add(m.System(name="s"))
    cols = ["system_id", "query_id", "document_id", "rank"]
    with session_scope(db.engine) as session:
        repo.begin_bulk(session)
        sys_id, q_id = session.execute(text("SELECT (SELECT id FROM systems), (SELECT id FROM queries)")).one()
        docs = np.array(sorted(session.execute(text("SELECT id FROM documents")).scalars()), dtype=np.int64)
        with session.begin_nested():
            ok = bulk.ColumnRows([sys_id, q_id, docs, np.arange(1, len(docs) + 1)], len(docs), held={2: docs[:2_000]})
            assert bulk.bulk_insert(m.RankingEntry, cols, ok, session=session) == 3_000
        bad_docs = np.append(docs[:2_000], 10**9)
        bad = bulk.ColumnRows([sys_id, q_id, bad_docs, np.arange(5_001, 5_002 + 2_000)], len(bad_docs),
                              held={2: docs[:2_000]})
        with pytest.raises(IntegrityError), session.begin_nested():
            bulk.bulk_insert(m.RankingEntry, cols, bad, session=session)


def test_pairs_are_not_read_meanwhile_when_a_lookup_costs_less(db):
    """No worker for a few ids, an empty table, or a table more than twice the ids (the ids are then looked
    up); the block still runs."""
    with session_scope(db.engine) as session:
        with bulk.pairs_meanwhile(m.Document, 5_000, session=session) as read:
            assert read is None  # nothing stored
        bulk.ensure_external_ids(m.Document, [f"d{i}" for i in range(3_000)], session=session)
        for expected in (500, 1_400):
            with bulk.pairs_meanwhile(m.Document, expected, session=session) as read:
                assert read is None
        with bulk.pairs_meanwhile(m.Document, 1_500, session=session) as read:
            assert read is not None


def test_a_bad_run_read_while_the_pairs_are_read_leaves_the_database_unchanged(db, tmp_path):
    """The file's error is the one reported, the worker is done before the transaction rolls back, and
    nothing is stored; the next import on the same engine works."""
    from ndcg_labeling.errors import InputFileError
    from ndcg_labeling.labels.importing import import_run

    docs = [f"doc{i:05d}" for i in range(3_000)]
    with session_scope(db.engine) as session:
        bulk.ensure_external_ids(m.Document, docs, session=session)
    lines = [f"q{i // 100} Q0 {d} {i % 100 + 1} {1 - (i % 100) / 100:.2f} t" for i, d in enumerate(docs)]
    bad, good = tmp_path / "bad.txt", tmp_path / "good.txt"
    bad.write_text("\n".join(lines[:2_500] + ["q9 Q0 docX 1 notanumber t"] + lines[2_500:]) + "\n")
    good.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputFileError, match=r"bad\.txt:2501:"), session_scope(db.engine) as session:
        import_run(bad, system="s", session=session)
    with db.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM ranking_entries")).scalar_one() == 0
        assert conn.execute(text("SELECT count(*) FROM systems")).scalar_one() == 0
    with session_scope(db.engine) as session:
        summary = import_run(good, system="s", session=session)
    assert summary.new == 3_000 and summary.created == {"queries": 30, "documents": 0}


def test_ids_sent_in_several_json_texts_map_and_create_alike(db, monkeypatch):
    """SQLite sends at most JSON_IDS ids in one JSON text (its limit on one value is 1 GB): with a small
    limit, a lookup of many ids among many more stored ones and the creation of many new ids go through
    several texts and give every id its row, new ones in external-id order."""
    monkeypatch.setattr(bulk, "JSON_IDS", 700)
    with session_scope(db.engine) as session:
        bulk.ensure_external_ids(m.Document, [f"other{i}" for i in range(10_000)], session=session)
    ids = [f"d{i:05d}é" for i in np.random.default_rng(3).permutation(3_000)]
    with session_scope(db.engine) as session:
        _rows, created = bulk.external_row_ids(m.Document, ids[:1_500], session=session)
        got, created_after = bulk.external_row_ids(m.Document, ids, session=session, join=join_on_bytes)
    with db.engine.connect() as conn:
        stored = dict(conn.execute(text("SELECT external_id, id FROM documents")).all())
        order = [r[0] for r in conn.execute(text("SELECT external_id FROM documents WHERE id > "
                                                 "(SELECT max(id) FROM documents WHERE external_id LIKE 'other%') "
                                                 "ORDER BY id")).all()]
    assert (created, created_after) == (1_500, 1_500) and got.tolist() == [stored[x] for x in ids]
    assert order == sorted(ids[:1_500]) + sorted(ids[1_500:])


