# ruff: noqa: F811 - the `spark` fixture is imported from spark_fixture and named as a parameter
"""``online report --engine spark`` against ``--engine duckdb`` on the same simulated A/B test (the one
tests/online checks against pytrec_eval, statsmodels and scipy): the same JSON byte for byte, the same
per-request values in the same order with requests cut into many small batches over several partitions,
and the same ``Error:`` line for a bad row, a missing arm column and a served list the kernels refuse."""

from __future__ import annotations

import json
from dataclasses import fields

import numpy as np
import pandas as pd
import pytest
from spark_fixture import spark  # noqa: F401 - the fixture
from typer.testing import CliRunner

from ndcg_labeling.engines.online_duckdb import read_impressions
from ndcg_labeling.engines.online_spark import SparkImpressions
from ndcg_labeling.experiments.report import (
    SPARK_SCHEMA,
    OnlineOptions,
    load_online_labels,
    row_labels,
    score_requests,
)
from ndcg_labeling.metrics import parse_metric
from ndcg_labeling.online.requests import request_values
from tests.conftest import Database, invoke
from tests.online.online_sim import simulate, write_labels, write_parquet

# One worker runs every Spark test (make test: --dist loadgroup), so one JVM starts.
pytestmark = pytest.mark.xdist_group("spark")

runner = CliRunner()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The label store of tests/online (consensus of two agreeing graders) and the simulated log."""
    sim = simulate(n_requests=1500, n_queries=30, n_users=200)
    tmp = tmp_path_factory.mktemp("online-spark")
    db = Database("sqlite", tmp, migrated=True)
    queries, judgments = write_labels(sim, tmp)
    for args in (("import", "queries", queries), ("import", "judgments", judgments, "--scale", "0-3", "--create-graders"),
                 ("consensus", "--method", "median")):
        result = invoke(runner, db, *args)
        assert result.exit_code == 0, result.output
    log = write_parquet(sim, tmp / "ab.parquet")
    yield db, log, pd.DataFrame(sim.rows), tmp
    db.drop()


def _report(db, log: str, engine: str, *args: str):  # noqa: ANN001, ANN202
    return invoke(runner, db, "online", "report", log, "--baseline", "control", "--engine", engine, *args)


@pytest.mark.parametrize("args", [("--format", "json"), ("--format", "json", "--window", "12h", "--cluster", "session"),
                                  ("--format", "json", "--metric", "ap@5", "--gain", "linear")],
                         ids=["ndcg", "windows", "ap"])
def test_spark_report_is_duckdbs_byte_for_byte(spark, store, args):
    db, log, rows, _ = store
    want, got = _report(db, log, "duckdb", *args), _report(db, log, "spark", *args)
    assert want.exit_code == 0 and got.exit_code == 0, got.output
    assert got.stdout == want.stdout
    report = json.loads(got.stdout)
    assert report["n_rows"] == len(rows) and report["n_requests"] == rows["request_id"].nunique() == 1500
    assert {r["arm"] for r in report["arms"]} == {"control", "better", "same"}


def test_per_request_values_in_small_batches_equal_the_embedded_ones(spark, store):
    db, log, rows, _ = store
    from sqlalchemy.orm import Session

    options = OnlineOptions(baseline="control")
    with Session(db.engine) as session:
        labels = load_online_labels("consensus", session=session)
    metric = parse_metric("ndcg@10")
    imp = read_impressions([log])
    want = request_values(imp, row_labels(imp, labels), labels.query_types, labels.by_query, metric)
    old = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "5")
    try:
        with SparkImpressions([log], spark=spark) as on_spark:
            assert on_spark.n_rows == len(imp) and on_spark.arms == set(imp.arm.tolist())
            got = on_spark.per_request(score_requests, SPARK_SCHEMA, (labels, metric, options), batch_rows=997)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", old)
    first = np.flatnonzero(np.r_[True, imp.request_id[1:] != imp.request_id[:-1]])
    assert got["request_id"].tolist() == imp.request_id[first].tolist()
    for f in fields(want):
        w, g = getattr(want, f.name), got[f.name]
        assert w.shape == g.shape, f.name
        if w.dtype.kind == "f":
            assert np.array_equal(w, g.astype(np.float64), equal_nan=True), f.name  # bit for bit
        else:
            assert w.tolist() == g.tolist(), f.name
    assert np.nanmax(want.metric) > 0.5  # scored, not all zero


def _error_line(db, path: str, engine: str) -> str:  # noqa: ANN001
    result = _report(db, path, engine, "--format", "json")
    assert result.exit_code != 0
    return result.output.strip().splitlines()[-1]


def test_bad_rows_and_refused_lists_give_the_embedded_error(spark, store):
    db, _, rows, tmp = store
    empty_arm = rows.copy()
    empty_arm.loc[rows.index[321], "arm"] = " "
    no_arm = rows.drop(columns=["arm"])
    refused = rows.copy()  # r00700: an arm clash; r00400: two documents at one position (the kernel checks it first)
    refused.loc[refused.index[refused["request_id"] == "r00700"][3], "arm"] = "better-x"
    at = refused.index[refused["request_id"] == "r00400"]
    refused.loc[at[1], "position"] = refused.loc[at[0], "position"]
    cases = {"empty_arm.csv": (empty_arm, ":323: arm is empty (nothing was stored)"),
             "no_arm.parquet": (no_arm, "no column 'arm'"), "refused.parquet": (refused, "r00400")}
    for name, (frame, expected) in cases.items():
        path = str(tmp / name)
        frame.to_csv(path, index=False) if name.endswith(".csv") else frame.to_parquet(path)
        want, got = _error_line(db, path, "duckdb"), _error_line(db, path, "spark")
        assert got == want, name
        assert want.startswith("Error: ") and expected in want, want
