# ruff: noqa: F811 - the `spark` fixture is imported from spark_fixture and named as a parameter
"""The Spark log engine against the DuckDB engine on the same logs: the same aggregates (the counts
exactly, the decayed sums to 1e-12 relative), the same DBN patterns, the same Error line for a bad row,
and ``implicit derive --engine spark`` == ``--engine duckdb`` grade for grade, model by model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from spark_fixture import spark  # noqa: F401 - the fixture
from sqlalchemy import text
from typer.testing import CliRunner

from ndcg_labeling.cli import app
from ndcg_labeling.engines import LogRequest, get_engine
from ndcg_labeling.engines.spark import SparkEngine
from ndcg_labeling.errors import InputFileError

# One worker runs every Spark test (make test: --dist loadgroup), so one JVM starts.
pytestmark = pytest.mark.xdist_group("spark")

DEMO_LOG = Path(__file__).resolve().parents[2] / "data" / "behavior_log.csv"
DAY = 86_400.0


@pytest.fixture(scope="module")
def log() -> pd.DataFrame:
    """The first 6,000 impressions of the demo log (a simulated log of the repository)."""
    frame = pd.read_csv(DEMO_LOG, dtype={"request_id": str, "query_id": str, "doc_id": str}, nrows=6_000)
    return frame[frame["request_id"].isin(frame["request_id"].unique()[:-1])]  # whole served lists only


def _write(log: pd.DataFrame, tmp_path: Path, fmt: str) -> str:
    path = tmp_path / f"log.{fmt}"
    if fmt == "parquet":
        log.to_parquet(path)
    elif fmt == "csv":
        log.to_csv(path, index=False)
    else:
        log.to_json(path, orient="records", lines=True)
    return str(path)


def _cells(agg) -> dict[tuple[str, str, int], tuple]:  # noqa: ANN001
    c = agg.cells
    return {(agg.query_ids[p], agg.doc_ids[p], int(pos)): (int(n), int(k), float(w), float(wc), float(ww))
            for p, pos, n, k, w, wc, ww in zip(c.pair, c.position, c.impressions, c.clicks, c.weight,
                                               c.weighted_clicks, c.weighted_watch, strict=True)}


def _patterns(agg) -> dict[tuple, tuple[int, float]]:  # noqa: ANN001
    s = agg.sessions
    out = {}
    for i in range(len(s.count)):
        shown = tuple((agg.query_ids[p], agg.doc_ids[p], int(c)) if p >= 0 else None
                      for p, c in zip(s.pairs[i], s.clicks[i], strict=True))
        out[tuple(x for x in shown if x is not None)] = (int(s.count[i]), float(s.weight[i]))
    return out


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_spark_aggregates_equal_duckdbs(spark, log, tmp_path, fmt):
    path = _write(log, tmp_path, fmt)
    since = float(log["ts"].quantile(0.1))
    request = LogRequest(sources=(path,), half_life_s=3 * DAY, since=since, watch=True, sessions=True)
    want = get_engine("duckdb").aggregate(request)
    got = SparkEngine(spark=spark).aggregate(request)
    assert (got.query_ids, got.doc_ids) == (want.query_ids, want.doc_ids) and len(got.query_ids) > 100
    assert (got.n_impressions, got.n_requests, got.first_ts, got.last_ts, got.as_of) == \
        (want.n_impressions, want.n_requests, want.first_ts, want.last_ts, want.as_of)
    g, w = _cells(got), _cells(want)
    assert g.keys() == w.keys()
    for key in w:
        assert g[key][:2] == w[key][:2]  # impressions and clicks: exactly
        assert np.allclose(g[key][2:], w[key][2:], rtol=1e-12, atol=0)  # decayed sums: summed in another order
    gp, wp = _patterns(got), _patterns(want)
    assert gp.keys() == wp.keys() and all(gp[k][0] == wp[k][0] for k in wp)
    assert all(abs(gp[k][1] - wp[k][1]) <= 1e-12 * max(1.0, wp[k][1]) for k in wp)


def test_a_bad_row_gives_the_duckdb_engines_error(spark, log, tmp_path):
    bad = log.astype({"clicked": str}).copy()
    bad.loc[bad.index[123], "clicked"] = "yes"
    path = _write(bad, tmp_path, "csv")
    with pytest.raises(InputFileError) as want:
        get_engine("duckdb").aggregate(LogRequest(sources=(path,)))
    with pytest.raises(InputFileError) as got:
        SparkEngine(spark=spark).aggregate(LogRequest(sources=(path,)))
    assert str(got.value) == str(want.value) and str(want.value).endswith(':125: clicked "yes" is not 0 or 1 (nothing was stored)')


def test_a_value_beyond_its_bound_gives_the_duckdb_engines_error(spark, log, tmp_path):
    # the bounds of engines/base.py (issue 46): one row of the watch ratio and one of the dwell time too large
    for col, value, word in (("watch_ratio", 1e15, "is above 1000, the largest value accepted"),
                             ("dwell_ms", 1e11, "is above 1e+10, the largest value accepted")):
        bad = log.copy()
        bad[col] = 0.5
        bad.loc[bad.index[40], col] = value
        path = _write(bad, tmp_path, "csv")
        with pytest.raises(InputFileError) as want:
            get_engine("duckdb").aggregate(LogRequest(sources=(path,)))
        with pytest.raises(InputFileError) as got:
            SparkEngine(spark=spark).aggregate(LogRequest(sources=(path,)))
        assert str(got.value) == str(want.value) and f":42: {col} " in str(want.value) and word in str(want.value)


def test_an_id_that_breaks_the_id_rule_and_a_float_id_column_give_the_duckdb_engines_error(spark, log, tmp_path):
    bad = log.copy()
    bad.loc[bad.index[200], "doc_id"] = "D\x1b[31mX"
    path = _write(bad, tmp_path, "csv")
    with pytest.raises(InputFileError) as want:
        get_engine("duckdb").aggregate(LogRequest(sources=(path,)))
    with pytest.raises(InputFileError) as got:
        SparkEngine(spark=spark).aggregate(LogRequest(sources=(path,)))
    assert str(want.value) == (f"{path}:202: doc_id 'D\\x1b[31mX' contains a control or non-printable character "
                               "(U+001B); ids are printable text without white space (nothing was stored)")
    assert str(got.value) == str(want.value)
    floats = _write(log.assign(query_id=1.5), tmp_path, "parquet")
    with pytest.raises(InputFileError) as got:
        SparkEngine(spark=spark).aggregate(LogRequest(sources=(floats,)))
    assert str(got.value) == f"{floats}: column query_id: ids must be text or integers, got DOUBLE"


def test_one_bad_row_in_each_of_two_files_counts_both(spark, log, tmp_path):
    """Spark re-reads the first bad file alone (one bad row there): the count is the whole log's."""
    bad = log.astype({"clicked": str}).copy()
    bad.loc[bad.index[[123, 4_000]], "clicked"] = "yes"
    half = len(bad) // 2
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    paths = (_write(bad.iloc[:half], tmp_path / "a", "csv"), _write(bad.iloc[half:], tmp_path / "b", "csv"))
    with pytest.raises(InputFileError) as want:
        get_engine("duckdb").aggregate(LogRequest(sources=paths))
    with pytest.raises(InputFileError) as got:
        SparkEngine(spark=spark).aggregate(LogRequest(sources=paths))
    assert str(want.value) == f'{paths[0]}:125: clicked "yes" is not 0 or 1 (2 bad rows in all; nothing was stored)'
    assert str(got.value) == str(want.value)


def _two_at_one_position(log: pd.DataFrame) -> tuple[pd.DataFrame, str, int]:
    """The log with request r00007's third document moved to its first position: (log, the problem,
    the 0-based row of that third document, the request's second row at position 1)."""
    bad = log.copy()
    rows = bad.index[bad["request_id"] == "r00007"]
    bad.loc[rows[2], "position"] = 1
    positions = sorted(bad.loc[rows, "position"].astype(int).tolist())
    problem = (f"request 'r00007' shows two documents at one position ({positions}): the DBN needs one document "
               "per position of a served list")
    return bad, problem, bad.index.get_loc(rows[2])


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_two_documents_at_one_position_give_the_duckdb_engines_error(spark, log, tmp_path, fmt):
    bad, problem, row = _two_at_one_position(log)
    path = _write(bad.reset_index(drop=True), tmp_path, fmt)
    request = LogRequest(sources=(path,), sessions=True)
    with pytest.raises(InputFileError) as want:
        get_engine("duckdb").aggregate(request)
    with pytest.raises(InputFileError) as got:
        SparkEngine(spark=spark).aggregate(request)
    where = f"{path}:{row + 2}" if fmt == "csv" else f"{path}:row {row}"  # CSV: the header is line 1
    assert str(want.value) == f"{where}: {problem}"
    assert str(got.value) == str(want.value)


def test_implicit_derive_on_spark_names_the_line_of_two_documents_at_one_position(spark, log, tmp_path):
    from ndcg_labeling.db import migrate
    from ndcg_labeling.db.session import make_engine

    url = f"sqlite:///{tmp_path / 'labels.db'}"
    engine = make_engine(url)
    migrate.upgrade(engine)
    engine.dispose()
    bad, problem, row = _two_at_one_position(log)
    path = _write(bad, tmp_path, "csv")
    result = CliRunner().invoke(app, ["implicit", "derive", path, "--model", "dbn", "--grader", "by-spark",
                                      "--engine", "spark", "--db", url], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.stderr.strip() == f"Error: {path}:{row + 2}: {problem}"


def test_two_documents_at_one_position_across_two_files_name_the_second_file(spark, log, tmp_path):
    """The request's rows in two files: its second row at the position is the second file's first."""
    bad, problem, row = _two_at_one_position(log.reset_index(drop=True))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    paths = (_write(bad.iloc[:row], tmp_path / "a", "csv"), _write(bad.iloc[row:], tmp_path / "b", "jsonl"))
    request = LogRequest(sources=paths, sessions=True)
    with pytest.raises(InputFileError) as want:
        get_engine("duckdb").aggregate(request)
    with pytest.raises(InputFileError) as got:
        SparkEngine(spark=spark).aggregate(request)
    assert str(want.value) == f"{paths[1]}:1: {problem}"
    assert str(got.value) == str(want.value)


def test_two_documents_at_one_position_in_a_file_the_driver_cannot_read_name_the_file(spark, log, tmp_path,
                                                                                      monkeypatch):
    from ndcg_labeling.engines.duckdb import DuckDBEngine

    bad, problem, _ = _two_at_one_position(log)
    path = _write(bad, tmp_path, "parquet")

    def unreadable(self, request):  # noqa: ANN001, ANN202 - as on a cluster path the driver does not see
        raise OSError(f"{request.sources[0]}: no such file")

    monkeypatch.setattr(DuckDBEngine, "aggregate", unreadable)
    with pytest.raises(InputFileError) as got:
        SparkEngine(spark=spark).aggregate(LogRequest(sources=(path,), sessions=True))
    assert str(got.value) == f"{path}: {problem}"


def _grades(db_url: str, grader: str) -> dict[tuple[str, str], int]:
    from sqlalchemy import create_engine

    engine = create_engine(db_url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT q.external_id, d.external_id, j.grade FROM judgments j JOIN graders g "
                                 "ON g.id = j.grader_id JOIN queries q ON q.id = j.query_id JOIN documents d "
                                 "ON d.id = j.document_id WHERE g.name = :g"), {"g": grader}).all()
    engine.dispose()
    return {(q, d): int(grade) for q, d, grade in rows}


@pytest.mark.parametrize("model", ["coec", "pbm", "dbn", "watch"])
def test_derive_on_spark_equals_duckdb_grade_for_grade(spark, log, tmp_path, model):
    from ndcg_labeling.db import migrate
    from ndcg_labeling.db.session import make_engine

    url = f"sqlite:///{tmp_path / 'labels.db'}"
    engine = make_engine(url)
    migrate.upgrade(engine)
    engine.dispose()
    path = _write(log, tmp_path, "parquet")
    runner = CliRunner()
    outs = {}
    for name in ("duckdb", "spark"):
        result = runner.invoke(app, ["implicit", "derive", path, "--model", model, "--grader", f"by-{name}",
                                     "--min-impressions", "5", "--format", "json",
                                     "--engine", name, "--db", url], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        outs[name] = json.loads(result.stdout)
    want, got = _grades(url, "by-duckdb"), _grades(url, "by-spark")
    assert len(want) > 50 and got == want
    assert outs["spark"]["grade_distribution"] == outs["duckdb"]["grade_distribution"]
    assert outs["spark"]["n_impressions"] == outs["duckdb"]["n_impressions"] == len(log)
    assert np.allclose(outs["spark"]["position_bias"], outs["duckdb"]["position_bias"], rtol=1e-9, atol=0)
