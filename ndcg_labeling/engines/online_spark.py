"""Impression rows for online experiments on Spark: ``online report --engine spark``.

The same rows as :func:`ndcg_labeling.engines.online_duckdb.read_impressions` (the Spark log engine's
reader and checks, with the online reader's ``arm`` check first and its extra columns, through
:meth:`~ndcg_labeling.engines.spark.SparkEngine.frame_hook`), but never on the driver: the rows are
hashed on ``request_id`` (a served list stays in one partition), sorted by request then position within
each partition, and ``mapInPandas`` hands the caller's function (the online kernels, from the pipeline)
batches of whole requests as :class:`~ndcg_labeling.engines.online_duckdb.ImpressionRows`. Only its
per-request values come back, sorted by ``request_id`` as the embedded reader orders the rows, so every
sum of the report runs in the same order on both paths.

A request the kernels refuse (two documents at one position, two arms ...): each failing batch names
its first failing request (found by bisection, the kernel's own check); the driver reads those
requests' rows and runs the function on them, which raises exactly the embedded path's error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields, replace
from typing import Any

import numpy as np

from ndcg_labeling.engines.base import LogRequest
from ndcg_labeling.engines.duckdb import resolve_sources
from ndcg_labeling.engines.online_duckdb import ImpressionRows, impression_rows, read_impressions
from ndcg_labeling.engines.rules import ARM_RULE, no_arm_column
from ndcg_labeling.engines.spark import SparkEngine
from ndcg_labeling.errors import NdcgLabelingError

#: rows handed to the function at once (whole requests; one longer request is never cut)
BATCH_ROWS = 200_000
ROW_COLUMNS = ("request_id", "query_id", "doc_id", "position", "clicked", "ts", "arm", "converted", "watch_ratio",
               "session_id", "user_id", "_file")
PRESENT = ("converted", "watch_ratio", "session_id", "user_id")
Score = Callable[[ImpressionRows, Any], dict[str, Any]]


class _OnlineSparkEngine(SparkEngine):
    """The Spark log frame with the experiment's columns (and ``arm`` required), as ``_OnlineEngine``."""

    first_rules = (ARM_RULE,)

    def frame_hook(self, df: Any, names: dict[str, str], files: list[str]) -> list[Any]:
        from pyspark.sql import functions as F

        have = set(df.columns)
        if names["arm"] not in have:
            raise no_arm_column(files[0], names["arm"])

        def raw(col: str) -> Any:
            return F.col(f"`{names[col]}`") if names[col] in have else F.lit(None)

        converted = (F.expr(f"try_cast(`{names['converted']}` AS DOUBLE)") if names["converted"] in have
                     else F.lit(None).cast("double"))
        arm = raw("arm").cast("string")
        return [arm.alias("arm"), converted.alias("converted"), raw("session_id").cast("string").alias("session_id"),
                 raw("user_id").cast("string").alias("user_id")]

    def reread(self, file: str, request: LogRequest) -> None:
        read_impressions([file], request.columns)


class SparkImpressions:
    """The impression log read and checked on Spark, kept cached while the block runs::

        with SparkImpressions(["logs/"], master="spark://host:7077") as log:
            log.n_rows, log.arms                       # the size and the arms, for the caller's checks
            values = log.per_request(score, schema, shared)

    ``spark``: a caller's SparkSession (else the active one, or one started on ``master``)."""

    def __init__(self, sources: list[str], columns: dict[str, str] | None = None, *, master: str | None = None,
                 spark: Any = None) -> None:
        self.request = LogRequest(sources=tuple(sources), columns=dict(columns or {}))
        self.master, self.spark = master, spark
        self.n_rows, self.arms, self.present = 0, set[str](), dict.fromkeys(PRESENT, False)

    def __enter__(self) -> SparkImpressions:
        from pyspark.sql import functions as F

        from ndcg_labeling.engines.spark_session import get_session

        groups = resolve_sources(self.request.sources)
        self.request.check_mapping()
        self.session = get_session(self.master, self.spark)
        self._old_tz = self.session.conf.get("spark.sql.session.timeZone")
        self.session.conf.set("spark.sql.session.timeZone", "UTC")
        engine = _OnlineSparkEngine(spark=self.session)
        self.logs = None
        try:
            self.logs = engine._logs(self.session, groups, self.request).cache()
            engine._validate(self.logs, groups, self.request)
            row = self.logs.agg(F.count("*").alias("n"), F.collect_set("arm").alias("arms"),
                                *[F.count(c).alias(c) for c in PRESENT]).first()
        except BaseException:
            self.__exit__()
            raise
        self.n_rows, self.arms = int(row["n"]), {str(a) for a in row["arms"]}
        self.present = {c: bool(row[c]) for c in PRESENT}
        return self

    def __exit__(self, *exc: object) -> None:
        if self.logs is not None:
            self.logs.unpersist()
        self.session.conf.set("spark.sql.session.timeZone", self._old_tz)

    def per_request(self, score: Score, schema: dict[str, str], shared: Any, *,
                    batch_rows: int = BATCH_ROWS) -> dict[str, np.ndarray]:
        """``score(rows, shared)`` on every batch of whole requests (about ``batch_rows`` rows), on the
        executors: it returns one value per request (in the rows' order) for each column of ``schema``
        (name -> Spark SQL type); the result: those columns and ``request_id``, sorted by ``request_id``.
        ``shared`` is broadcast once."""
        if self.logs is None:  # pragma: no cover - used inside the with block only
            raise NdcgLabelingError("SparkImpressions: use it in a with block")
        cols = list(schema)
        out_schema = "request_id string, err string, " + ", ".join(f"`{c}` {t}" for c, t in schema.items())
        broadcast = self.session.sparkContext.broadcast(shared)
        try:
            rows = (self.logs.select(*ROW_COLUMNS).repartition("request_id")
                    .sortWithinPartitions("request_id", "position", "_file"))
            out = rows.mapInPandas(_partition_scorer(score, cols, self.present, broadcast, batch_rows), out_schema).toPandas()
        finally:
            broadcast.unpersist()
        failed = out[out["err"].notna()]
        if len(failed):
            self._raise_first(failed["request_id"].tolist(), str(failed["err"].iloc[0]), score, shared)
        ids = out["request_id"].to_numpy(dtype=object)
        order = np.argsort(ids, kind="stable")  # str order: code points, the byte order of DuckDB and Spark
        return {"request_id": ids[order], **{c: out[c].to_numpy()[order] for c in cols}}

    def _raise_first(self, request_ids: list[str], fallback: str, score: Score, shared: Any) -> None:
        """The embedded path's error: the function on the rows of every batch's first failing request."""
        from pyspark.sql import functions as F

        pdf = (self.logs.filter(F.col("request_id").isin(request_ids)).select(*ROW_COLUMNS).toPandas()  # type: ignore[union-attr]
               .sort_values(["request_id", "position", "_file"], kind="stable"))
        score(impression_rows({c: pdf[c].to_numpy() for c in ROW_COLUMNS}, self.present), shared)
        raise NdcgLabelingError(fallback)  # pragma: no cover - the rows above raise it


def slice_rows(rows: ImpressionRows, stop: int) -> ImpressionRows:
    """The first ``stop`` rows."""
    return replace(rows, **{f.name: getattr(rows, f.name)[:stop] for f in fields(rows)
                            if getattr(rows, f.name) is not None})


def _message(score: Score, rows: ImpressionRows, shared: Any) -> str | None:
    try:
        score(rows, shared)
    except NdcgLabelingError as exc:
        return str(exc)
    return None


def _request_starts(rows: ImpressionRows) -> np.ndarray:
    """Where each request's rows begin (a bool per row)."""
    new = np.ones(len(rows), bool)
    new[1:] = rows.request_id[1:] != rows.request_id[:-1]
    return new


def first_failing_request(score: Score, rows: ImpressionRows, shared: Any, message: str) -> str:
    """The request of ``message`` (what ``score`` raised on ``rows``): the shortest prefix of whole
    requests that raises the same message ends with it (a request's problem is its own rows')."""
    starts = np.append(np.flatnonzero(_request_starts(rows)), len(rows))
    lo, hi = 1, starts.size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if _message(score, slice_rows(rows, int(starts[mid])), shared) == message:
            hi = mid
        else:
            lo = mid + 1
    return str(rows.request_id[starts[lo - 1]])


def _score_batch(pdf: Any, score: Score, cols: list[str], present: dict[str, bool], shared: Any) -> Any:
    import pandas as pd

    rows = impression_rows({c: pdf[c].to_numpy() for c in ROW_COLUMNS}, present)
    try:
        values = score(rows, shared)
    except NdcgLabelingError as exc:
        rid = first_failing_request(score, rows, shared, str(exc))
        return pd.DataFrame({"request_id": [rid], "err": [str(exc)], **{c: [None] for c in cols}})
    return pd.DataFrame({"request_id": rows.request_id[_request_starts(rows)], "err": None,
                         **{c: values[c] for c in cols}})


def _partition_scorer(score: Score, cols: list[str], present: dict[str, bool], broadcast: Any, batch_rows: int) -> Any:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        buffer: list[Any] = []
        size = 0
        for pdf in batches:  # Arrow batches of a partition sorted by request: cut at a request's start
            buffer.append(pdf)
            size += len(pdf)
            if size < batch_rows:
                continue
            whole = pd.concat(buffer, ignore_index=True)
            rid = whole["request_id"].to_numpy(dtype=object)
            cut = int(np.flatnonzero(rid != rid[-1])[-1]) + 1 if (rid != rid[-1]).any() else 0
            buffer, size = [whole.iloc[cut:]], len(whole) - cut
            if cut:
                yield _score_batch(whole.iloc[:cut], score, cols, present, broadcast.value)
        if size:
            yield _score_batch(pd.concat(buffer, ignore_index=True), score, cols, present, broadcast.value)

    return run
