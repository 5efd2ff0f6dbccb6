"""Engines: where raw logs are aggregated in place, behind one small interface.

:class:`~ndcg_labeling.engines.base.LogEngine` (:mod:`.base`) has two implementations with the same
``aggregate``, DuckDB (:mod:`.duckdb`, embedded, out of core) and Spark (:mod:`.spark`, a cluster);
:func:`get_engine` picks one by name. ``eval --engine spark`` lives in :mod:`.spark_eval`.
"""

from __future__ import annotations

from ndcg_labeling.choices import LogEngineName
from ndcg_labeling.engines.base import LogAggregates, LogEngine, LogRequest
from ndcg_labeling.errors import NdcgLabelingError

ENGINES = tuple(e.value for e in LogEngineName)


def check_engine(name: str) -> str:
    """``name`` when it is one of :data:`ENGINES`, else the ``--engine`` error: the one check of a log
    engine's name (:func:`get_engine`, the online report before it reads anything)."""
    if name not in ENGINES:
        raise NdcgLabelingError(f"--engine: unknown engine {name!r}; use {' or '.join(ENGINES)}")
    return name


def get_engine(name: str = "duckdb", *, spark_master: str | None = None) -> LogEngine:
    """The engine called ``name`` (``spark_master``: the Spark master URL of ``spark``)."""
    if check_engine(name) == "duckdb":
        from ndcg_labeling.engines.duckdb import DuckDBEngine

        return DuckDBEngine()
    from ndcg_labeling.engines.spark import SparkEngine

    return SparkEngine(master=spark_master)


__all__ = ["ENGINES", "LogAggregates", "LogEngine", "LogRequest", "check_engine", "get_engine"]
