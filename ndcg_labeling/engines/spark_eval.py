"""``eval --engine spark``: trec_eval's per-query measures computed on Spark's executors.

Nothing here is a second implementation of anything: the executors run the embedded path's own code.

1. **read** - TREC files are split into Spark partitions of whole lines (``textFile``, numbered by
   ``zipWithIndex``); each partition's lines go through :func:`ndcg_labeling.trec.files.read_run` /
   ``read_qrels`` (the same reader, the same messages; a bad line comes back with its file line).
   Parquet: ``query_id, doc_id, score`` (run; an optional ``tag``) and ``query_id, doc_id, relevance``.
2. **partition by query** - run and qrels rows are unioned, hashed on ``query_id`` and sorted within
   each partition; ``mapInPandas`` cuts each partition into batches of whole queries and runs
   :func:`ndcg_labeling.trec.join.join` and :func:`ndcg_labeling.metrics.trec_measures.compute` on each.
3. **collect** the per-query values (a few numbers per query) in query byte order; the summary (the
   ``all`` rows, summed one query at a time in that order) is the embedded path's, in the pipeline.

A query's values depend on that query's lines only, so they equal the embedded path's bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ndcg_labeling.errors import InputFileError, NdcgLabelingError
from ndcg_labeling.metrics import trec_measures
from ndcg_labeling.metrics.trec_measures import Column
from ndcg_labeling.trec.files import QrelsColumns, RunColumns, read_qrels, read_run
from ndcg_labeling.trec.join import Options, join

ROWS_SCHEMA = "kind string, query_id string, doc_id string, value double, line long, tag string, problem string"
OUT_SCHEMA = ("query_id string, missing boolean, nums array<double>, strs array<string>, err_kind string, "
              "err_line long, err string")
BATCH_ROWS = 200_000  # rows joined and scored at once inside a partition (whole queries)
PARQUET_SUFFIXES = (".parquet", ".pq")


@dataclass
class PerQuery:
    """What the executors computed: evaluated queries (byte order), their values, which had no run
    lines (``-c``), the positive judgments of the whole qrels, the run's tag."""

    query_ids: list[str]
    values: dict[str, Any]
    missing: np.ndarray
    n_positive_judgments: int
    run_id: str


def is_parquet(path: str) -> bool:
    p = Path(path)
    return p.suffix.lower() in PARQUET_SUFFIXES or (p.is_dir() and any(p.rglob("*.parquet")))


def _parse_partition(kind: str, path: str, rows: Iterator[tuple[str, int]]) -> Iterator[tuple[Any, ...]]:
    """One partition's lines (text, 0-based file index) through the embedded reader."""
    chunk = list(rows)
    if not chunk:
        return
    first = chunk[0][1]
    data = "\n".join(text for text, _ in chunk).encode()
    try:
        cols: RunColumns | QrelsColumns = read_run(path, data=data) if kind == "run" else read_qrels(path, data=data)
    except InputFileError as exc:
        if exc.problem != "the file is empty":  # a partition of blank or comment lines only
            yield (kind, None, None, None, first + (exc.line or 1), None, exc.problem)
        return
    values = cols.score if isinstance(cols, RunColumns) else cols.relevance
    last = len(cols.line) - 1
    tag = cols.run_id if isinstance(cols, RunColumns) else None
    for i, (q, d, v, n) in enumerate(zip(cols.query_id, cols.doc_id, values, cols.line, strict=True)):
        yield (kind, q, d, float(v), first + n, tag if i == last else None, None)


def read_rows(spark: Any, path: str, kind: str) -> Any:
    """A DataFrame of :data:`ROWS_SCHEMA` (``kind``: run or qrels; ``problem`` set on bad lines)."""
    if is_parquet(path):
        return _parquet_rows(spark, path, kind)
    remote = "://" in path  # s3a://, hdfs://...: Spark reads it, the driver cannot check it
    if not remote and not Path(path).is_file():
        raise InputFileError(path, "no such file" if not Path(path).exists() else "not a regular file")
    numbered = spark.sparkContext.textFile(path if remote else str(Path(path).resolve())).zipWithIndex()
    parsed = numbered.mapPartitions(lambda it: _parse_partition(kind, path, it))
    return spark.createDataFrame(parsed, ROWS_SCHEMA)


def _parquet_rows(spark: Any, path: str, kind: str) -> Any:
    from pyspark.sql import functions as F

    df = spark.read.parquet(path)
    value = "score" if kind == "run" else "relevance"
    for col in ("query_id", "doc_id", value):
        if col not in df.columns:
            raise InputFileError(path, f"no column {col!r} (a Parquet {kind} has query_id, doc_id, {value})")
    v = F.col(value).cast("double")
    bad_value = (v.isNull() | F.isnan(v) | (F.abs(v) == float("inf"))) if kind == "run" else (
        v.isNull() | F.isnan(v) | (v != F.floor(v)))
    shown = F.coalesce(F.col(value).cast("string"), F.lit("(empty)"))
    where = F.concat(F.lit("query "), F.coalesce(F.col("query_id").cast("string"), F.lit("(empty)")),
                     F.lit(" document "), F.coalesce(F.col("doc_id").cast("string"), F.lit("(empty)")), F.lit(": "))
    problem = (F.when(F.col("query_id").isNull() | F.col("doc_id").isNull(), F.concat(where, F.lit("an id is empty")))
               .when(bad_value, F.concat(where, F.lit(f"{value} "), shown, F.lit(
                   " is not a finite number" if kind == "run" else " is not an integer"))))
    tag = F.col("tag").cast("string") if "tag" in df.columns else F.lit(None).cast("string")
    return df.select(F.lit(kind).alias("kind"), F.col("query_id").cast("string").alias("query_id"),
                     F.col("doc_id").cast("string").alias("doc_id"), v.alias("value"),
                     F.lit(-1).cast("long").alias("line"), tag.alias("tag"), problem.alias("problem"))


def _first_problem(rows: Any, path: str) -> None:
    first = rows.filter("problem IS NOT NULL").orderBy("line").select("line", "problem").first()
    if first is not None:
        line = int(first["line"]) if first["line"] is not None and first["line"] >= 0 else None
        raise InputFileError(path, str(first["problem"]), line)


def _batches(pdf: Any) -> Iterator[Any]:
    """A partition's rows (sorted by query) in batches of whole queries of about :data:`BATCH_ROWS`."""
    n = len(pdf)
    start = 0
    q = pdf["query_id"].to_numpy()
    while start < n:
        end = min(start + BATCH_ROWS, n)
        while end < n and q[end] == q[end - 1]:
            end += 1
        yield pdf.iloc[start:end]
        start = end


def _score_batch(batch: Any, columns: list[Column], options: Options, settings: dict[str, Any]) -> Any:
    """The embedded join and kernels on one batch of whole queries; one output row per query."""
    import pandas as pd

    run, qrels = batch[batch["kind"] == "run"], batch[batch["kind"] == "qrels"]
    run_cols = RunColumns(run["query_id"].tolist(), run["doc_id"].tolist(), run["value"].tolist(),
                          run["line"].tolist(), "")
    qrels_cols = QrelsColumns(qrels["query_id"].tolist(), ["0"] * len(qrels), qrels["doc_id"].tolist(),
                              [int(v) for v in qrels["value"].tolist()], qrels["line"].tolist())
    try:
        joined = join(run_cols, qrels_cols, options, run_path=settings["run"], qrels_path=settings["qrels"])
    except InputFileError as exc:
        kind = "qrels" if exc.path == settings["qrels"] else "run"
        return pd.DataFrame([{"query_id": None, "missing": False, "nums": None, "strs": None, "err_kind": kind,
                              "err_line": exc.line, "err": exc.problem}])
    except NdcgLabelingError:  # no query of this batch is evaluated
        return None
    values = trec_measures.compute(columns, joined.lists, relevance_level=settings["relevance_level"],
                                   num_docs_in_coll=settings["num_docs"])
    n = len(joined.query_ids)
    nums = np.full((n, len(columns)), np.nan)
    strs: list[list[str | None]] = [[None] * len(columns) for _ in range(n)]
    for j, col in enumerate(columns):
        v = values[col.name]
        if isinstance(v, list):
            for i in range(n):
                strs[i][j] = v[i]
        elif v is not None:
            nums[:, j] = np.asarray(v, dtype=np.float64)
    return pd.DataFrame({"query_id": joined.query_ids, "missing": joined.missing, "nums": list(nums),
                         "strs": strs, "err_kind": None, "err_line": None, "err": None})


def _scorer(columns: list[Column], options: Options, settings: dict[str, Any]) -> Any:
    def score(batches: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        frames = list(batches)
        if not frames:
            return
        pdf = pd.concat(frames, ignore_index=True)
        for batch in _batches(pdf):
            out = _score_batch(batch, columns, options, settings)
            if out is not None and len(out):
                yield out

    return score


def per_query_values(spark: Any, qrels_path: str, run_path: str, columns: list[Column], options: Options, *,
                     relevance_level: float, num_docs_in_coll: int) -> PerQuery:
    """Per-query values of ``columns`` computed on ``spark``'s executors (see the module docstring)."""
    from pyspark.sql import functions as F

    qrels = read_rows(spark, qrels_path, "qrels").cache()
    run = read_rows(spark, run_path, "run").cache()
    try:
        _first_problem(qrels, qrels_path)
        _first_problem(run, run_path)
        counts = qrels.agg(F.count("*").alias("n"), F.sum(F.when(F.col("value") > 0, 1).otherwise(0)).alias("pos")).first()
        if not counts["n"]:
            raise InputFileError(qrels_path, "the file is empty")
        tag_row = run.filter("tag IS NOT NULL").orderBy(F.col("line").desc()).select("tag").first()
        if run.limit(1).count() == 0:
            raise InputFileError(run_path, "the file is empty")
        settings = {"qrels": qrels_path, "run": run_path, "relevance_level": float(relevance_level),
                    "num_docs": int(num_docs_in_coll)}
        both = qrels.unionByName(run).repartition("query_id").sortWithinPartitions("query_id", "kind", "line")
        out = both.mapInPandas(_scorer(columns, options, settings), OUT_SCHEMA).toPandas()
    finally:
        qrels.unpersist()
        run.unpersist()
    errors = out[out["err"].notna()]
    if len(errors):
        first = errors.assign(order=(errors["err_kind"] == "run")).sort_values(["order", "err_line"]).iloc[0]
        path = qrels_path if first["err_kind"] == "qrels" else run_path
        line = None if first["err_line"] is None or math.isnan(first["err_line"]) or first["err_line"] < 0 \
            else int(first["err_line"])
        raise InputFileError(path, str(first["err"]), line)
    if not len(out):
        raise NdcgLabelingError(f"no query of {run_path} has relevance judgments in {qrels_path}")
    return _assemble(out, columns, int(counts["pos"]), str(tag_row["tag"]) if tag_row is not None else "")


def _assemble(out: Any, columns: list[Column], n_pos: int, run_id: str) -> PerQuery:
    """The collected rows in query byte order (code point order: ``np.argsort`` over ``str``)."""
    ids = np.asarray(out["query_id"].tolist(), dtype=str)
    order = np.argsort(ids, kind="stable")
    nums = np.vstack(out["nums"].to_numpy())[order] if len(out) else np.zeros((0, len(columns)))
    strs = [out["strs"].iloc[i] for i in order]
    values: dict[str, Any] = {}
    for j, col in enumerate(columns):
        if col.family == "runid":
            values[col.name] = None
        elif trec_measures.FAMILIES[col.family].form == "string":
            values[col.name] = [s[j] for s in strs]
        else:
            values[col.name] = nums[:, j].copy()
    return PerQuery([str(q) for q in ids[order]], values, np.asarray(out["missing"].to_numpy()[order], dtype=bool),
                    n_pos, run_id)
