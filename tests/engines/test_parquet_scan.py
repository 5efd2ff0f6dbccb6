"""The compiled Parquet scan gives what the DuckDB engine's SQL gives, and what pandas' groupby gives,
on logs that exercise its edges: text, integer and dictionary ids, timestamp and numeric ``ts``, the
window and the decay, ``watch_ratio`` with nulls, many pairs (its tables grow), bytes beyond ASCII;
where it does not apply (a bad row, a blank id, mixed types, the DBN's lists) it hands over to DuckDB,
whose exact message the user gets."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ndcg_labeling.engines import LogRequest, parquet_scan
from ndcg_labeling.engines.duckdb import DuckDBEngine
from ndcg_labeling.errors import InputFileError, NdcgLabelingError

T0 = 1_760_000_000


def make_log(n: int, n_pairs: int, seed: int = 3, *, ids: str = "text", watch: bool = False) -> pa.Table:
    rng = np.random.default_rng(seed)
    pair = rng.integers(0, n_pairs, n)
    if ids == "text":
        q = pa.array([f"q{p // 7:05d}" for p in pair])
        # "!": the lowest character an id may hold (a space would break the id rule)
        d = pa.array([f"doc-é{p * 7919 % 100_003:x}" if p % 5 else f"Doc!{p}" for p in pair])
    else:
        q, d = pa.array(pair // 7, pa.int64()), pa.array(pair * 13, pa.int64())
    cols = {"request_id": pa.array(rng.integers(0, n // 5 + 1, n)), "query_id": q, "doc_id": d,
            "position": pa.array(rng.integers(1, 13, n).astype(np.int16)),
            "clicked": pa.array((rng.random(n) < 0.3).astype(np.int8)),
            "ts": pa.array(T0 + rng.integers(0, 40 * 86_400, n), pa.int64())}
    if watch:
        values = rng.random(n) * 2
        cols["watch_ratio"] = pa.array(values, mask=rng.random(n) < 0.2)
    return pa.table(cols)


def write(tmp_path, table: pa.Table, parts: int = 3) -> tuple[str, ...]:  # noqa: ANN001
    bounds = np.linspace(0, table.num_rows, parts + 1).astype(int)
    files = []
    for i in range(parts):
        path = tmp_path / f"part-{i}.parquet"
        pq.write_table(table.slice(bounds[i], bounds[i + 1] - bounds[i]), path, row_group_size=5_000)
        files.append(str(path))
    return tuple(files)


def both(request: LogRequest):  # noqa: ANN201
    files = list(request.sources)
    scanned = parquet_scan.aggregate(request, files)
    assert scanned is not None, "the compiled scan did not apply"
    return scanned, DuckDBEngine(compiled_scan=False).aggregate(request)


def assert_same(a, b) -> None:  # noqa: ANN001
    assert a.query_ids == b.query_ids and a.doc_ids == b.doc_ids
    assert (a.as_of, a.first_ts, a.last_ts, a.n_impressions) == pytest.approx((b.as_of, b.first_ts, b.last_ts, b.n_impressions))
    for key in ("pair", "position", "impressions", "clicks"):
        np.testing.assert_array_equal(getattr(a.cells, key), getattr(b.cells, key), err_msg=key)
    for key in ("weight", "weighted_clicks", "weighted_watch"):
        np.testing.assert_allclose(getattr(a.cells, key), getattr(b.cells, key), rtol=1e-12, err_msg=key)
    assert a.cells.n_pairs == b.cells.n_pairs


@pytest.mark.parametrize("ids", ["text", "int"])
def test_same_as_duckdb_with_decay_and_window(tmp_path, ids):
    files = write(tmp_path, make_log(60_000, 40_000, ids=ids, watch=True))  # 40k pairs: the tables grow
    for request in (LogRequest(sources=files, half_life_s=7 * 86_400.0),
                    LogRequest(sources=files, since=T0 + 5 * 86_400, until=T0 + 30 * 86_400, half_life_s=86_400.0),
                    LogRequest(sources=files, as_of=T0 + 20 * 86_400, half_life_s=3 * 86_400.0),
                    LogRequest(sources=files, since=T0 + 90 * 86_400)):  # an empty window
        assert_same(*both(request))


def test_same_as_pandas_groupby(tmp_path):
    table = make_log(30_000, 900)
    files = write(tmp_path, table)
    scanned = parquet_scan.aggregate(LogRequest(sources=files, half_life_s=5 * 86_400.0), list(files))
    df = table.to_pandas()
    df["w"] = 0.5 ** ((df.ts.max() - df.ts) / (5 * 86_400.0))
    df["wc"] = df.w * df.clicked
    want = df.groupby(["query_id", "doc_id", "position"]).agg(n=("clicked", "size"), c=("clicked", "sum"),
                                                               w=("w", "sum"), wc=("wc", "sum")).reset_index()
    pairs = want.groupby(["query_id", "doc_id"]).size().index
    assert scanned.query_ids == [q for q, _ in pairs] and scanned.doc_ids == [d for _, d in pairs]
    np.testing.assert_array_equal(scanned.cells.impressions, want.n)
    np.testing.assert_array_equal(scanned.cells.clicks, want.c)
    np.testing.assert_array_equal(scanned.cells.position, want.position)
    np.testing.assert_allclose(scanned.cells.weight, want.w, rtol=1e-12)
    np.testing.assert_allclose(scanned.cells.weighted_clicks, want.wc, rtol=1e-12)


@pytest.mark.parametrize("kind", ["timestamp_ms", "timestamp_tz", "float", "dictionary", "large_string"])
def test_column_types(tmp_path, kind):
    t = make_log(8_000, 500)
    if kind.startswith("timestamp"):
        ts = pa.array(t["ts"].to_numpy() * 1000, pa.int64()).cast(pa.timestamp("ms", tz="UTC" if kind.endswith("tz") else None))
        t = t.set_column(t.schema.get_field_index("ts"), "ts", ts)
    elif kind == "float":
        t = t.set_column(t.schema.get_field_index("ts"), "ts", pc_cast(t["ts"], pa.float64()))
    elif kind == "dictionary":
        t = t.set_column(t.schema.get_field_index("doc_id"), "doc_id", t["doc_id"].dictionary_encode())
    else:
        t = t.set_column(t.schema.get_field_index("query_id"), "query_id", pc_cast(t["query_id"], pa.large_string()))
    assert_same(*both(LogRequest(sources=write(tmp_path, t), half_life_s=86_400.0)))


def pc_cast(column, to):  # noqa: ANN001, ANN201
    return column.cast(to)


@pytest.mark.parametrize(("column", "value", "message"), [
    ("position", 0, "position \"0\" is not a whole number >= 1"),
    ("clicked", 2, "clicked \"2\" is not 0 or 1"),
    ("doc_id", "   ", "doc_id is empty"),
    ("request_id", None, "request_id is empty"),
    ("doc_id", None, "doc_id is empty"),
])
def test_a_bad_row_hands_over_to_duckdb_and_its_message(tmp_path, column, value, message):
    t = make_log(3_000, 100).to_pydict()
    if column == "request_id":
        t["request_id"] = [str(x) for x in t["request_id"]]
    t[column][1234] = value
    files = write(tmp_path, pa.table(t), parts=1)
    assert parquet_scan.aggregate(LogRequest(sources=files), list(files)) is None
    with pytest.raises(InputFileError) as err:
        DuckDBEngine(compiled_scan=True).aggregate(LogRequest(sources=files))
    assert str(err.value) == f"{files[0]}:row 1234: {message} (nothing was stored)"


def test_a_missing_integer_id_hands_over(tmp_path):
    t = make_log(3_000, 100, ids="int")
    doc = t["doc_id"].to_pylist()
    doc[1234] = None
    files = write(tmp_path, t.set_column(2, "doc_id", pa.array(doc, pa.int64())), parts=1)
    assert parquet_scan.aggregate(LogRequest(sources=files), list(files)) is None  # not hashed as some number
    with pytest.raises(InputFileError) as err:
        DuckDBEngine(compiled_scan=True).aggregate(LogRequest(sources=files))
    assert str(err.value) == f"{files[0]}:row 1234: doc_id is empty (nothing was stored)"


def test_where_the_scan_does_not_apply(tmp_path):
    t = make_log(2_000, 100)
    a = write(tmp_path, t.slice(0, 1_000), parts=1)
    other = t.slice(1_000).set_column(2, "doc_id", t.slice(1_000)["doc_id"].cast(pa.large_string()).cast(pa.string()))
    other = other.set_column(1, "query_id", pa.array(np.arange(1_000), pa.int64()))
    pq.write_table(other, tmp_path / "b.parquet")
    mixed = (*a, str(tmp_path / "b.parquet"))
    assert parquet_scan.aggregate(LogRequest(sources=mixed), list(mixed)) is None  # text ids beside integer ids
    assert parquet_scan.aggregate(LogRequest(sources=a, sessions=True), list(a)) is None  # the DBN's lists
    # the engine's result is DuckDB's where the scan stands aside
    assert DuckDBEngine(compiled_scan=True).aggregate(LogRequest(sources=mixed)).n_impressions == 2_000


def test_more_cells_than_the_reservation_hands_over(tmp_path, monkeypatch):
    files = write(tmp_path, make_log(5_000, 3_000))
    want = DuckDBEngine(compiled_scan=False).aggregate(LogRequest(sources=files))
    monkeypatch.setattr(parquet_scan, "MAX_CELL_BYTES", 1_000 * 12 * parquet_scan.CELL.itemsize)  # 1,000 pairs
    assert parquet_scan.aggregate(LogRequest(sources=files), list(files)) is None
    assert_same(DuckDBEngine(compiled_scan=True).aggregate(LogRequest(sources=files)), want)


def test_a_damaged_file_gets_duckdbs_message(tmp_path):
    files = write(tmp_path, make_log(5_000, 300), parts=1)
    data = open(files[0], "rb").read()
    with open(files[0], "wb") as out:  # cut short: no footer
        out.write(data[: len(data) // 2])
    assert parquet_scan.rows(list(files)) == 0
    assert parquet_scan.aggregate(LogRequest(sources=files), list(files)) is None
    with pytest.raises(NdcgLabelingError, match="cannot read the log"):
        DuckDBEngine(compiled_scan=True).aggregate(LogRequest(sources=files))
