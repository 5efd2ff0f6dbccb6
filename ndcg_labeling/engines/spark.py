"""The Spark log engine: impression logs aggregated on a Spark cluster, for ``implicit derive --engine spark``.

The same :class:`~ndcg_labeling.engines.base.LogEngine` interface as the DuckDB engine, the same
result: the per-(pair, position) sums of :mod:`ndcg_labeling.behavior.counts` (and the DBN's served-list
patterns), computed with Spark's group-bys where the logs lie; only these sums reach the driver, and the
click-model kernels then run on them unchanged. Work is partitioned by (query, document).

* reads Parquet (files, folders, globs), CSV, TSV and JSONL with Spark's readers, every column as
  text or its stored type, normalized by the same rules as the DuckDB engine (``ts`` as epoch
  seconds or ISO 8601, UTC);
* validates every row with the same rules and messages; when a row is bad, the first bad file is
  re-read by the DuckDB engine on the driver to name the line exactly as ``--engine duckdb`` does
  (a file the driver cannot read: the file and the problem, without the line); so is a served list
  with two documents at one position (the DBN), at the request's second row at that position;
* hands the cells over sorted by (pair, position) and the DBN's patterns sorted by their lists, as
  the DuckDB engine does, so the EM fits add in the same order: without a half-life the aggregates
  and the grades are identical; with one, Spark and DuckDB sum the decayed weights in another order
  (equal to ~1e-15), and an EM that converges slowly can carry that to ~1e-4 in a score.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ndcg_labeling.behavior.counts import CellCounts, SessionPatterns
from ndcg_labeling.engines.base import (
    LogAggregates,
    LogRequest,
    bad_rows_message,
    duplicate_position_message,
    first_bad_log_id,
    id_type_problem,
    is_bad_rows_message,
)
from ndcg_labeling.engines.duckdb import resolve_sources
from ndcg_labeling.engines.rules import LogRule, active_rules, spark_checks
from ndcg_labeling.errors import InputFileError


class SparkEngine:
    """:class:`~ndcg_labeling.engines.base.LogEngine` over Spark (``spark``: a caller's session;
    else the active one, or one started on ``master``)."""

    name = "spark"
    #: rules checked before the log's (:mod:`.rules`; the online reader's ``arm``)
    first_rules: tuple[LogRule, ...] = ()

    def __init__(self, master: str | None = None, spark: Any = None) -> None:
        self.master, self.spark = master, spark

    def aggregate(self, request: LogRequest) -> LogAggregates:
        from ndcg_labeling.engines.spark_session import get_session

        request.check_mapping()
        groups = resolve_sources(request.sources)
        spark = get_session(self.master, self.spark)
        old_tz = spark.conf.get("spark.sql.session.timeZone")
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        try:
            logs = self._logs(spark, groups, request).cache()
            try:
                first, last = self._validate(logs, groups, request)
                as_of = request.as_of if request.as_of is not None else last
                result = self._aggregate(logs, request, groups, first, last, as_of)
                self._check_ids(logs, result, request)
                return result
            finally:
                logs.unpersist()
        finally:
            spark.conf.set("spark.sql.session.timeZone", old_tz)

    # --- the normalized frame --------------------------------------------------------------------
    def _logs(self, spark: Any, groups: dict[str, list[str]], request: LogRequest) -> Any:
        names = request.source_names()
        frames = []
        for fmt, files in sorted(groups.items()):
            df = self._read(spark, fmt, files)
            request.check_columns(files[0], df.columns)
            _check_id_types(df, names, files)
            extra = self.frame_hook(df, names, files)
            frames.append(_normalized(df, names, request, first_rules=self.first_rules, extra=extra))
        return functools.reduce(lambda a, b: a.unionByName(b), frames)

    def frame_hook(self, df: Any, names: dict[str, str], files: list[str]) -> list[Any]:
        """The public hook of a subclass (``online report``'s reader): per source, extra columns of the
        normalized frame (``df``: the source as read, ``names``: our column -> its column, ``files``: the
        source's files). None here; rules checked before the log's are :attr:`first_rules`."""
        return []

    def reread(self, file: str, request: LogRequest) -> None:
        """Read ``file`` on the driver with the embedded engine, to raise the ``InputFileError`` that
        names its first bad line (a hook: a subclass reads with its own embedded reader)."""
        from ndcg_labeling.engines.duckdb import DuckDBEngine

        DuckDBEngine().aggregate(LogRequest(sources=(file,), columns=request.columns, watch=request.watch))

    @staticmethod
    def _read(spark: Any, fmt: str, files: list[str]) -> Any:
        from pyspark.sql import functions as F

        paths = [str(Path(f).resolve()) for f in files]
        if fmt == "parquet":
            df = spark.read.parquet(*paths)
        elif fmt in ("csv", "tsv"):
            df = (spark.read.option("header", True).option("sep", "\t" if fmt == "tsv" else ",")
                  .option("quote", '"').option("inferSchema", False).csv(paths))
        else:
            df = _json_lines(spark, paths)
        if "_path" not in df.columns:
            df = df.withColumn("_path", F.col("_metadata.file_path"))
        given = dict(zip(paths, files, strict=True))  # Spark's file:/abs/path back to the name the user gave
        mapping = F.create_map(*[x for k, v in given.items() for x in (F.lit(k), F.lit(v))])
        local = F.regexp_replace(F.col("_path"), "^file:(//)?", "")
        return df.withColumn("_file", F.coalesce(mapping[local], F.col("_path"))).drop("_path")

    # --- pass 1: validation ----------------------------------------------------------------------
    def _validate(self, logs: Any, groups: dict[str, list[str]], request: LogRequest) -> tuple[float | None, float | None]:
        from pyspark.sql import functions as F

        ok = F.col("problem").isNull() & _window(request, None)
        row = logs.agg(F.sum(F.when(F.col("problem").isNotNull(), 1).otherwise(0)).alias("bad"),
                       F.min(F.when(F.col("problem").isNotNull(), F.col("_file"))).alias("bad_file"),
                       F.min(F.when(ok, F.col("ts"))).alias("first"), F.max(F.when(ok, F.col("ts"))).alias("last")).first()
        if row["bad"]:
            raise self._first_bad(logs, str(row["bad_file"]), int(row["bad"]), request)
        return row["first"], row["last"]

    def _first_bad(self, logs: Any, file: str, n_bad: int, request: LogRequest) -> InputFileError:
        """The DuckDB engine's message for the first bad file (its line); else the file and the problem."""
        exc = _driver_error(lambda: self.reread(file, request))
        if exc is not None:  # a bad row's count is the whole log's; a file's own error stays as it is
            problem = bad_rows_message(exc.problem, n_bad) if is_bad_rows_message(exc.problem) else exc.problem
            return InputFileError(exc.path, problem, exc.line)
        problem = logs.filter(f"_file = '{file}' AND problem IS NOT NULL").select("problem").first()
        return InputFileError(file, bad_rows_message(str(problem["problem"]) if problem else "bad rows", n_bad))

    def _check_ids(self, logs: Any, result: LogAggregates, request: LogRequest) -> None:
        """The id rule on the distinct ids (as the DuckDB engine checks it); a bad one is named at its row
        by the embedded engine's re-read of the first file that holds it."""
        from pyspark.sql import functions as F

        bad = first_bad_log_id(result.query_ids, result.doc_ids, request.source_names())
        if bad is None:
            return
        column, value, problem = bad
        file = logs.filter(F.col(column) == value).agg(F.min("_file")).first()[0]
        found = _driver_error(lambda: self.reread(str(file), request))
        raise found or InputFileError(str(file), bad_rows_message(problem, 1))

    # --- pass 2: aggregation ---------------------------------------------------------------------
    def _aggregate(self, logs: Any, request: LogRequest, groups: dict[str, list[str]], first: float | None,
                   last: float | None, as_of: float | None) -> LogAggregates:
        from pyspark.sql import functions as F

        w = F.lit(1.0)
        if request.half_life_s is not None and as_of is not None:
            w = F.pow(F.lit(0.5), (F.lit(float(as_of)) - F.col("ts")) / F.lit(float(request.half_life_s)))
        win = logs.filter(_window(request, as_of)).select("request_id", "query_id", "doc_id", "position", "clicked",
                                                          "watch_ratio", w.alias("w"))
        cells = (win.groupBy("query_id", "doc_id", "position")
                 .agg(F.count("*").alias("n"), F.sum("clicked").alias("c"), F.sum("w").alias("nw"),
                      F.sum(F.col("w") * F.col("clicked")).alias("cw"),
                      F.sum(F.col("w") * F.col("watch_ratio")).alias("ww"))).toPandas()
        files = [f for fs in groups.values() for f in fs]
        keys = sorted(set(zip(cells["query_id"].tolist(), cells["doc_id"].tolist(), strict=True)))  # byte order
        index = {k: i for i, k in enumerate(keys)}
        pair = np.array([index[k] for k in zip(cells["query_id"], cells["doc_id"], strict=True)], dtype=np.int64)
        order = np.lexsort((cells["position"].to_numpy(np.int64), pair)) if len(pair) else np.zeros(0, np.int64)
        ww = cells["ww"].to_numpy(np.float64, na_value=np.nan)[order]
        counts = CellCounts(pair=pair[order], position=cells["position"].to_numpy(np.int64)[order],
                            impressions=cells["n"].to_numpy(np.int64)[order], clicks=cells["c"].to_numpy(np.int64)[order],
                            weight=cells["nw"].to_numpy(np.float64)[order], weighted_clicks=cells["cw"].to_numpy(np.float64)[order],
                            weighted_watch=ww, n_pairs=len(keys))
        sessions, n_requests = (None, None)
        if request.sessions and keys:
            patterns = _patterns(win, keys)
            duplicate = _first_duplicate(patterns)
            if duplicate is not None:
                raise self._duplicate_position(logs, request, as_of, *duplicate)
            sessions, n_requests = _session_matrices(patterns)
        return LogAggregates(query_ids=[q for q, _ in keys], doc_ids=[d for _, d in keys], cells=counts,
                             sessions=sessions, as_of=as_of, n_impressions=int(counts.impressions.sum()),
                             n_requests=n_requests, first_ts=first, last_ts=last, files=files)

    def _duplicate_position(self, logs: Any, request: LogRequest, as_of: float | None, rid: str,
                            positions: list[int]) -> InputFileError:
        """The DuckDB engine's error for a served list with two documents at one position, named at the
        request's second row at that position (files in name order, rows in file order). The error path
        only: Spark finds the files that hold the request's rows in the window, the DuckDB engine re-reads
        them on the driver (the same window) and raises its own error, line included; a file the driver
        cannot read: the file of that second row and the problem, without the line."""
        from pyspark.sql import functions as F

        from ndcg_labeling.engines.duckdb import DuckDBEngine

        position = next(p for p in positions if positions.count(p) > 1)
        problem = duplicate_position_message(rid, positions)
        per_file = (logs.filter((F.col("request_id") == rid) & _window(request, as_of)).groupBy("_file")
                    .agg(F.sum(F.when(F.col("position") == position, 1).otherwise(0)).alias("at"))
                    .orderBy("_file").collect())
        files = [str(r["_file"]) for r in per_file]
        exc = _driver_error(lambda: DuckDBEngine().aggregate(LogRequest(
            sources=tuple(files), columns=request.columns, since=request.since, until=request.until, as_of=as_of,
            watch=request.watch, sessions=True)))
        if exc is not None:
            return exc
        seen = 0
        for row in per_file:
            seen += int(row["at"])
            if seen >= 2:
                return InputFileError(str(row["_file"]), problem)
        return InputFileError(", ".join(files), problem)  # pragma: no cover - two rows are there


def _driver_error(read: Callable[[], object]) -> InputFileError | None:
    """The ``InputFileError`` (its line named) that the embedded engine raises when it re-reads files on the
    driver, or None: where the read passes, or the driver cannot read the files (a cluster path: the caller
    then names the file without a line)."""
    try:
        read()
    except InputFileError as exc:
        return exc
    except Exception:  # noqa: BLE001 - any failure to read on the driver just means no line
        return None
    return None


def _window(request: LogRequest, as_of: float | None) -> Any:
    from pyspark.sql import functions as F

    cond = F.lit(True)
    for op, value in request.bounds(as_of):
        cond = cond & ((F.col("ts") >= value) if op == ">=" else (F.col("ts") <= value))
    return cond


#: the column of a JSON Lines source holding the JSON type of an id field's value (``_kind query_id``)
KIND_PREFIX = "_kind "


def _json_lines(spark: Any, paths: list[str]) -> Any:
    """JSON Lines as text columns (every field of the records, as the reader infers them), and, per field,
    its value's JSON type (:data:`KIND_PREFIX`): an object, an array or a fraction in an id field is
    refused by :data:`~.rules.NOT_AN_ID` instead of becoming the text of an id."""
    from pyspark.sql import functions as F

    fields = [c for c in spark.read.option("primitivesAsString", True).json(paths).columns if c != "_corrupt_record"]
    records = spark.read.option("singleVariantColumn", "_v").json(paths)

    def at(name: str) -> str:  # the field's path (a name with both quotes cannot be one: no such log column)
        return f"$['{name}']" if "'" not in name else f'$["{name}"]'

    cols = [F.try_variant_get("_v", at(c), "string").alias(c) for c in fields]
    kinds = [F.schema_of_variant(F.try_variant_get("_v", at(c), "variant")).alias(KIND_PREFIX + c) for c in fields]
    return records.select(*cols, *kinds, F.col("_metadata.file_path").alias("_path"))


def _check_id_types(df: Any, names: dict[str, str], files: list[str]) -> None:
    """Ids stored as text or integers only (the DuckDB engine's rule): a float column is no id."""
    from pyspark.sql.types import IntegralType, StringType

    for col in ("query_id", "doc_id"):
        kind = df.schema[names[col]].dataType if names[col] in df.columns else StringType()
        if not isinstance(kind, (StringType, IntegralType)):
            raise InputFileError(files[0], id_type_problem(names[col], kind.simpleString().upper()))


def _normalized(df: Any, names: dict[str, str], request: LogRequest, *, first_rules: tuple[LogRule, ...] = (),
                extra: list[Any] | None = None) -> Any:
    """The DuckDB engine's normalized view, in Spark: typed columns and a ``problem`` per row, by the rules
    of :mod:`.rules` (``first_rules``: rules checked before the log's, ``extra``: more columns;
    :meth:`SparkEngine.frame_hook`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DateType, NumericType, TimestampType

    types = {f.name: f.dataType for f in df.schema.fields}

    def raw(col: str) -> Any:
        return F.col(f"`{names[col]}`") if names[col] in types else F.lit(None)

    def num(col: str) -> Any:
        return F.expr(f"try_cast(`{names[col]}` AS DOUBLE)") if names[col] in types else F.lit(None).cast("double")

    ts_type = types.get(names["ts"])
    if isinstance(ts_type, (TimestampType, DateType)):
        ts = F.unix_micros(raw("ts").cast("timestamp")) / 1e6
    elif isinstance(ts_type, NumericType):
        ts = raw("ts").cast("double")
    else:
        ts = F.coalesce(num("ts"), F.unix_micros(F.expr(f"try_cast(`{names['ts']}` AS TIMESTAMP)")) / 1e6)
    pos, clk, wr = num("position"), num("clicked"), num("watch_ratio")
    rules = active_rules(request, types, first=first_rules)
    def kind(col: str) -> Any:  # JSON Lines: the JSON type of a field's value (None: another format)
        return F.col(f"`{KIND_PREFIX}{names[col]}`") if KIND_PREFIX + names[col] in types else None

    pairs = spark_checks(rules, names, raw=raw, number=lambda col: ts if col == "ts" else num(col), kind=kind)
    problem = F.when(*pairs[0])
    for cond, message in pairs[1:]:
        problem = problem.when(cond, message)
    return df.select(F.col("_file"), problem.alias("problem"), raw("request_id").cast("string").alias("request_id"),
                     raw("query_id").cast("string").alias("query_id"), raw("doc_id").cast("string").alias("doc_id"),
                     pos.cast("long").alias("position"), clk.cast("int").alias("clicked"), ts.alias("ts"),
                     wr.alias("watch_ratio"), *(extra or []))


def _patterns(win: Any, keys: list[tuple[str, str]]) -> Any:
    """The DBN's served lists: per request the (position-ordered) pairs and clicks, grouped into patterns
    (a pandas frame: ``lp``, ``lpos``, ``lc``, ``w``, ``n``, ``rid``, one of its requests)."""
    from pyspark.sql import functions as F

    spark = win.sparkSession
    pairs = spark.createDataFrame([(q, d, i) for i, (q, d) in enumerate(keys)], "query_id string, doc_id string, pair long")
    per_request = (win.join(F.broadcast(pairs), ["query_id", "doc_id"])
                   .groupBy("request_id")
                   .agg(F.sort_array(F.collect_list(F.struct("position", "pair", "clicked"))).alias("items"),
                        F.avg("w").alias("w"))
                   .select("request_id", F.col("items.pair").alias("lp"), F.col("items.position").alias("lpos"),
                           F.col("items.clicked").alias("lc"), "w"))
    patterns = (per_request.groupBy("lp", "lpos", "lc")
                .agg(F.sum("w").alias("w"), F.count("*").alias("n"), F.first("request_id").alias("rid"))).toPandas()
    # the DuckDB engine's order (lists compared element by element): the EM sums in the same order
    order = sorted(range(len(patterns)), key=lambda i: (list(patterns["lp"].iloc[i]), list(patterns["lpos"].iloc[i]),
                                                         list(patterns["lc"].iloc[i])))
    return patterns.iloc[order].reset_index(drop=True)


def _first_duplicate(patterns: Any) -> tuple[str, list[int]] | None:
    """``(request, its positions)`` of the first pattern with two documents at one position, or None."""
    for rid, lpos in zip(patterns["rid"], patterns["lpos"], strict=True):
        if len(set(lpos)) < len(lpos):
            return str(rid), [int(x) for x in lpos]
    return None


def _session_matrices(patterns: Any) -> tuple[SessionPatterns, int]:
    """The patterns as the DBN kernel's matrices (a row per pattern, a column per position)."""
    n_s = len(patterns)
    k = max(int(max(p)) for p in patterns["lpos"])
    pair_m = np.full((n_s, k), -1, dtype=np.int64)
    click_m = np.zeros((n_s, k), dtype=np.int8)
    for s, (lp, lpos, lc) in enumerate(zip(patterns["lp"], patterns["lpos"], patterns["lc"], strict=True)):
        at = np.asarray(lpos, dtype=np.int64) - 1
        pair_m[s, at] = np.asarray(lp, dtype=np.int64)
        click_m[s, at] = np.asarray(lc, dtype=np.int8)
    count = patterns["n"].to_numpy(np.int64)
    return SessionPatterns(pairs=pair_m, clicks=click_m, weight=patterns["w"].to_numpy(np.float64), count=count), \
        int(count.sum())
