# ruff: noqa: F811 - the `spark` fixture is imported from spark_fixture and named as a parameter
"""The log rules written once (:mod:`ndcg_labeling.engines.rules`), rendered into DuckDB SQL and Spark
expressions: each row of the table, broken by its own example value on the second data row of a CSV log,
gives the same message on both engines, the message the row says. Spark's message is its own rendering
(the re-read on the driver, which would hand it the DuckDB engine's message, is switched off)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spark_fixture import spark  # noqa: F401 - the fixture

from ndcg_labeling.engines import LogRequest
from ndcg_labeling.engines.duckdb import DuckDBEngine
from ndcg_labeling.engines.online_duckdb import read_impressions
from ndcg_labeling.engines.rules import ARM_RULE, LOG_RULES, NOT_AN_ID, LogRule
from ndcg_labeling.engines.spark import SparkEngine
from ndcg_labeling.errors import InputFileError

GOOD = {"request_id": "r1", "query_id": "q1", "doc_id": "d1", "position": "1", "clicked": "0",
        "ts": "1760000000", "watch_ratio": "0.5", "converted": "0", "dwell_ms": "100", "arm": "a"}


class _OwnMessages(SparkEngine):
    """Spark without the driver's re-read: the problem is the one Spark's expressions build."""

    def reread(self, file: str, request: LogRequest) -> None:
        return None


# The tests on the session of spark_fixture run on the worker of the other Spark tests (make test: --dist
# loadgroup), so one JVM starts in the run: without the group both workers started one (tens of seconds and
# a gigabyte each). The fresh-process test below starts its own JVM on purpose and needs no group.
SPARK = pytest.mark.xdist_group("spark")


def _log(tmp_path: Path, rule: LogRule) -> tuple[Path, int]:
    """A log whose second data row breaks ``rule`` (a CSV file; JSON Lines for a rule on JSON values, the
    example then written as JSON), and that row's line."""
    bad = {**GOOD, "request_id": "r2", rule.column: rule.example}
    if NOT_AN_ID in rule.tests:
        path = tmp_path / "log.jsonl"
        second = json.dumps({**bad, rule.column: "@"}).replace('"@"', rule.example)  # the example as JSON
        path.write_text(json.dumps(GOOD) + "\n" + second + "\n")
        return path, 2
    path = tmp_path / "log.csv"
    path.write_text(",".join(GOOD) + "\n" + ",".join(GOOD.values()) + "\n" + ",".join(bad.values()) + "\n")
    return path, 3


def _expected(rule: LogRule) -> str:
    said = f'"{rule.example}" ' if rule.shows_value else ""
    return f"{rule.column} {said}{rule.problem} (nothing was stored)"


def test_every_rule_has_an_example_that_breaks_it_alone():
    assert len(LOG_RULES) == 16 and all(r.example for r in LOG_RULES)


@SPARK
@pytest.mark.parametrize("rule", LOG_RULES, ids=[f"{r.column}-{i}" for i, r in enumerate(LOG_RULES)])
def test_each_rule_gives_one_message_on_both_engines(spark, tmp_path, rule):
    path, line = _log(tmp_path, rule)
    request = LogRequest(sources=(str(path),))
    with pytest.raises(InputFileError) as duck:
        DuckDBEngine().aggregate(request)
    with pytest.raises(InputFileError) as on_spark:
        _OwnMessages(spark=spark).aggregate(request)
    assert str(duck.value) == f"{path}:{line}: {_expected(rule)}"
    assert on_spark.value.problem == duck.value.problem and on_spark.value.path == str(path)


@SPARK
def test_the_online_readers_arm_rule_on_both_engines(spark, tmp_path, monkeypatch):
    from ndcg_labeling.engines import online_spark

    path, _ = _log(tmp_path, ARM_RULE)
    with pytest.raises(InputFileError) as duck:
        read_impressions([str(path)])
    assert str(duck.value) == f"{path}:3: arm is empty (nothing was stored)"
    monkeypatch.setattr(online_spark._OnlineSparkEngine, "reread", lambda self, file, request: None)
    with pytest.raises(InputFileError) as on_spark, online_spark.SparkImpressions([str(path)], spark=spark):
        pass
    assert on_spark.value.problem == duck.value.problem and on_spark.value.path == str(path)


def test_a_refused_derive_on_spark_prints_one_stderr_line(sqlite_db, tmp_path):
    """A fresh process (its own JVM, as a user runs it: 15-60 s by the load): the one Error line, nothing of the
    JVM's start-up or log4j on stderr, and the driver on loopback (no SPARK_LOCAL_IP given)."""
    import os
    import subprocess
    import sys

    path, line = _log(tmp_path, next(r for r in LOG_RULES if r.column == "clicked"))  # clicked "2"
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_LOCAL_IP", "PYSPARK_SUBMIT_ARGS")}
    done = subprocess.run([sys.executable, "-m", "ndcg_labeling", "implicit", "derive", str(path), "--model", "coec",
                           "--grader", "clicks", "--engine", "spark", "--spark-master", "local[1]", "--db", sqlite_db.url],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f'Error: {path}:{line}: clicked "2" is not 0 or 1 (nothing was stored)']


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


NUMERIC = [r for r in LOG_RULES if _is_number(r.example) and NOT_AN_ID not in r.tests]


@pytest.mark.parametrize("rule", NUMERIC, ids=[f"{r.column}-{r.example}" for r in NUMERIC])
def test_the_compiled_scans_numpy_rendering_finds_each_numeric_rules_example(rule):
    """The Parquet scan's first pass asks the same table (in NumPy) whether a batch holds a bad row."""
    import pyarrow as pa

    from ndcg_labeling.engines import parquet_scan

    good = {c: v for c, v in GOOD.items() if c != "arm"}
    cols = {c: pa.array([v, v] if c.endswith("_id") else [float(v), float(v)]) for c, v in good.items()}
    kinds = {c: "text" if c.endswith("_id") else "float" for c in good}
    request = LogRequest(sources=("x.parquet",))

    def bad_row(batch: dict) -> bool:
        return parquet_scan._bad_row(batch, kinds, request, parquet_scan._numbers(batch["position"], "float"),
                                     parquet_scan._numbers(batch["ts"], "float"))

    assert not bad_row(cols)
    broken = {**cols, rule.column: pa.array([float(good[rule.column]), float(rule.example)])}
    assert bad_row(broken)
