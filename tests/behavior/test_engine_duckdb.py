"""The DuckDB log engine: every format gives the aggregates NumPy computes from the same impressions;
column mapping, the window, the decay weights; a bad row is one ``FILE:LINE: problem`` (Parquet: the
row index in its file)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from behavior_sim import DAY, simulate_watch

from ndcg_labeling.behavior.counts import cells_from_impressions
from ndcg_labeling.engines import LogRequest, get_engine
from ndcg_labeling.errors import InputFileError, NdcgLabelingError

T0 = 1_700_000_000.0


@pytest.fixture(scope="module")
def log():
    return simulate_watch(20_000, seed=9)


def table(log, n: int | None = None) -> pa.Table:  # noqa: ANN001
    n = log.pair.size if n is None else n
    return pa.table({"request_id": [f"r{x}" for x in log.request[:n]], "query_id": [f"q{p // 10:03d}" for p in log.pair[:n]],
                     "doc_id": [f"d{p:04d}" for p in log.pair[:n]], "position": log.position[:n],
                     "clicked": log.clicked[:n], "ts": log.ts[:n] + T0, "watch_ratio": log.watch_ratio[:n]})


def expected_cells(log, weight=None):  # noqa: ANN001, ANN201
    # our pair order is (query_id, doc_id) sorted: the zero-padded ids sort as the simulated pair numbers
    _, pair = np.unique(log.pair, return_inverse=True)
    return cells_from_impressions(pair, log.position, log.clicked, weight=weight, watch=log.watch_ratio)


def sorted_cells(c):  # noqa: ANN001, ANN201
    order = np.lexsort((c.position, c.pair))
    return {k: getattr(c, k)[order] for k in ("pair", "position", "impressions", "clicks", "weight",
                                              "weighted_clicks", "weighted_watch")}


def assert_same(agg, exp) -> None:  # noqa: ANN001
    got, want = sorted_cells(agg.cells), sorted_cells(exp)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-9, err_msg=key)


@pytest.mark.parametrize("fmt", ["parquet", "csv", "tsv", "jsonl", "folder", "glob"])
def test_every_format_aggregates_as_numpy(log, tmp_path, fmt):
    t = table(log)
    if fmt in ("parquet", "folder", "glob"):
        (tmp_path / "lake").mkdir()
        pq.write_table(t.slice(0, 9_000), tmp_path / "lake" / "part-0.parquet")
        pq.write_table(t.slice(9_000), tmp_path / "lake" / "part-1.parquet")
        source = {"parquet": None, "folder": str(tmp_path / "lake"), "glob": str(tmp_path / "lake" / "*.parquet")}[fmt]
        sources = (source,) if source else (str(tmp_path / "lake" / "part-0.parquet"), str(tmp_path / "lake" / "part-1.parquet"))
    elif fmt == "jsonl":
        path = tmp_path / "log.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in t.to_pylist()), encoding="utf-8")
        sources = (str(path),)
    else:
        path = tmp_path / f"log.{fmt}"
        pacsv.write_csv(t, path, pacsv.WriteOptions(delimiter="\t" if fmt == "tsv" else ","))
        sources = (str(path),)
    agg = get_engine().aggregate(LogRequest(sources=sources, watch=True))
    assert agg.n_impressions == log.pair.size and agg.cells.n_pairs == np.unique(log.pair).size
    assert agg.query_ids[0] == "q000" and agg.doc_ids[0] == f"d{log.pair.min():04d}"
    assert_same(agg, expected_cells(log))


def test_half_life_window_and_iso_timestamps(log, tmp_path):
    t = table(log)
    iso = [np.datetime_as_string(np.datetime64(int(x * 1e6), "us"), unit="us") + "Z" for x in log.ts + T0]
    t = t.set_column(t.schema.get_field_index("ts"), "ts", pa.array(iso))
    path = tmp_path / "log.csv"
    pacsv.write_csv(t, path)
    as_of = T0 + 50 * DAY
    since = T0 + 10 * DAY
    agg = get_engine().aggregate(LogRequest(sources=(str(path),), half_life_s=7 * DAY, as_of=as_of, since=since))
    keep = (log.ts + T0 >= since) & (log.ts + T0 <= as_of)
    sub = type(log)(**{**log.__dict__, "pair": log.pair[keep], "position": log.position[keep],
                       "clicked": log.clicked[keep], "ts": log.ts[keep], "watch_ratio": log.watch_ratio[keep]})
    weight = 0.5 ** ((as_of - (sub.ts + T0)) / (7 * DAY))
    assert agg.as_of == as_of
    assert_same(agg, expected_cells(sub, weight))


def test_column_mapping(log, tmp_path):
    t = table(log, 500).rename_columns(["rid", "qid", "docid", "rank", "click", "time", "watch_ratio"])
    path = tmp_path / "log.parquet"
    pq.write_table(t, path)
    with pytest.raises(InputFileError, match=r"log.parquet: no column 'request_id' \(name it with --column request_id=SOURCE\)"):
        get_engine().aggregate(LogRequest(sources=(str(path),)))
    mapping = {"request_id": "rid", "query_id": "qid", "doc_id": "docid", "position": "rank", "clicked": "click",
               "ts": "time"}
    agg = get_engine().aggregate(LogRequest(sources=(str(path),), columns=mapping))
    assert agg.n_impressions == 500
    with pytest.raises(NdcgLabelingError, match="unknown log column 'rank'"):
        get_engine().aggregate(LogRequest(sources=(str(path),), columns={"rank": "position"}))


BAD = [("position", "2.5", "position \"2.5\" is not a whole number >= 1"),
       ("position", "0", "position \"0\" is not a whole number >= 1"),
       ("clicked", "2", "clicked \"2\" is not 0 or 1"),
       ("ts", "yesterday", "ts \"yesterday\" is neither ISO 8601 nor epoch seconds"),
       ("watch_ratio", "-0.5", "watch_ratio \"-0.5\" is not a number >= 0"),
       ("doc_id", "", "doc_id is empty"),
       ("converted", "2", "converted \"2\" is not 0 or 1"),  # optional columns: blank is allowed,
       ("dwell_ms", "-1", "dwell_ms \"-1\" is not a number >= 0")]  # a value is checked


@pytest.mark.parametrize(("column", "value", "message"), BAD)
def test_a_bad_csv_row_names_its_line(log, tmp_path, column, value, message):
    rows = table(log, 300).to_pylist()
    if column in ("converted", "dwell_ms"):
        for k, r in enumerate(rows):
            r[column] = "" if k % 3 else "1"
    rows[136][column] = value
    rows[200][column] = value
    path = tmp_path / "log.csv"
    cols = list(rows[0])
    path.write_text(",".join(cols) + "\n" + "".join(",".join(str(r[c]) for c in cols) + "\n" for r in rows),
                    encoding="utf-8")
    with pytest.raises(InputFileError) as err:
        get_engine().aggregate(LogRequest(sources=(str(path),), watch=True))
    # data row 137 is line 138 (the header is line 1)
    assert str(err.value) == f"{path}:138: {message} (2 bad rows in all; nothing was stored)"
    rows[200] = rows[199]  # one bad row left: its message says that nothing was stored too
    path.write_text(",".join(cols) + "\n" + "".join(",".join(str(r[c]) for c in cols) + "\n" for r in rows),
                    encoding="utf-8")
    with pytest.raises(InputFileError) as err:
        get_engine().aggregate(LogRequest(sources=(str(path),), watch=True))
    assert str(err.value) == f"{path}:138: {message} (nothing was stored)"


def test_a_bad_jsonl_line_and_a_bad_parquet_row(log, tmp_path):
    rows = table(log, 100).to_pylist()
    rows[41]["clicked"] = 7
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(InputFileError, match=r"log.jsonl:42: clicked \"7\" is not 0 or 1 \(nothing was stored\)$"):
        get_engine().aggregate(LogRequest(sources=(str(path),)))
    t = table(log, 100)
    pos = t.column("position").to_numpy().copy()
    pos[57] = -3
    pq.write_table(t.set_column(t.schema.get_field_index("position"), "position", pa.array(pos)),
                   tmp_path / "part.parquet")
    with pytest.raises(InputFileError, match=r"part.parquet:row 57: position \"-3\" is not a whole number >= 1 "
                       r"\(nothing was stored\)$"):
        get_engine().aggregate(LogRequest(sources=(str(tmp_path / "part.parquet"),)))


def test_missing_files_and_unknown_formats(tmp_path):
    with pytest.raises(InputFileError, match="nope.parquet: no such file or folder"):
        get_engine().aggregate(LogRequest(sources=(str(tmp_path / "nope.parquet"),)))
    (tmp_path / "log.xlsx").write_text("x", encoding="utf-8")
    with pytest.raises(InputFileError, match="unknown log format"):
        get_engine().aggregate(LogRequest(sources=(str(tmp_path / "log.xlsx"),)))
    with pytest.raises(InputFileError, match="no log files found"):
        get_engine().aggregate(LogRequest(sources=(str(tmp_path / "*.parquet"),)))


def test_sessions_for_the_dbn(log, tmp_path):
    path = tmp_path / "log.parquet"
    pq.write_table(table(log), path)
    agg = get_engine().aggregate(LogRequest(sources=(str(path),), sessions=True))
    s = agg.sessions
    assert s is not None and s.count.sum() == log.request.max() + 1 == agg.n_requests
    _, pair = np.unique(log.pair, return_inverse=True)
    # every served list once (the simulated ones are all distinct): the same rows in some order
    want = sorted(map(tuple, np.concatenate([pair.reshape(-1, 10), log.clicked.reshape(-1, 10)], axis=1).tolist()))
    got = sorted(map(tuple, np.concatenate([s.pairs, s.clicks], axis=1).tolist()))
    assert got == want
    rows = table(log, 20).to_pylist()
    rows[3]["position"] = 3
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(NdcgLabelingError, match="request 'r0' shows two documents at one position"):
        get_engine().aggregate(LogRequest(sources=(str(path),), sessions=True))


def test_integer_ids_keep_the_text_order_of_pairs(tmp_path):
    """Integer ids are grouped as integers, but pairs come in the order of their ids as text (9 after 10)."""
    path = tmp_path / "ints.parquet"
    pq.write_table(pa.table({"request_id": [1, 1, 2, 2], "query_id": [9, 9, 10, 10], "doc_id": [100, 20, 100, 3],
                             "position": [1, 2, 1, 2], "clicked": [1, 0, 0, 1], "ts": [T0, T0, T0 + 1, T0 + 1]}), path)
    agg = get_engine().aggregate(LogRequest(sources=(str(path),), sessions=True))
    assert list(zip(agg.query_ids, agg.doc_ids, strict=True)) == [("10", "100"), ("10", "3"), ("9", "100"), ("9", "20")]
    clicks = np.bincount(agg.cells.pair, weights=agg.cells.clicks, minlength=4)
    assert clicks.tolist() == [0, 1, 1, 0]
    assert agg.sessions is not None and sorted(agg.sessions.pairs.tolist()) == [[0, 1], [2, 3]]


def test_pairs_sharing_a_hash_fall_back_to_the_exact_key(log, tmp_path, monkeypatch):
    """The aggregation groups on a hash of (query, document); when two pairs share one (forced here with a
    key of 3 values) the engine notices on the pairs and groups on the ids themselves: the same cells."""
    import ndcg_labeling.engines.duckdb as engine

    path = tmp_path / "log.parquet"
    pq.write_table(table(log), path)
    monkeypatch.setattr(engine, "HASHED_KEY", "hash(query_id, doc_id) % 3")
    agg = get_engine().aggregate(LogRequest(sources=(str(path),), watch=True))
    assert agg.cells.n_pairs == np.unique(log.pair).size and agg.query_ids[0] == "q000"
    assert_same(agg, expected_cells(log))


def test_a_file_of_a_folder_without_a_column_is_named(log, tmp_path):
    t = table(log, 2_000)
    (tmp_path / "lake").mkdir()
    pq.write_table(t.slice(0, 1_000), tmp_path / "lake" / "part-0.parquet")
    pq.write_table(t.slice(1_000).rename_columns(["request_id", "qid", *t.column_names[2:]]),
                   tmp_path / "lake" / "part-1.parquet")
    with pytest.raises(InputFileError) as err:
        get_engine().aggregate(LogRequest(sources=(str(tmp_path / "lake"),)))
    assert str(err.value) == f"{tmp_path / 'lake' / 'part-1.parquet'}: no column 'query_id' (name it with --column query_id=SOURCE)"
