"""Engines: where raw logs are aggregated in place, behind one small interface.

:class:`~ndcg_labeling.engines.base.LogEngine` ("aggregate these logs") takes a
:class:`~ndcg_labeling.engines.base.LogRequest` and returns
:class:`~ndcg_labeling.engines.base.LogAggregates`: the per-(pair, position) sufficient statistics
(and, for the DBN, the served lists' click patterns) that every model of :mod:`ndcg_labeling.behavior`
takes. DuckDB (:mod:`.duckdb`, embedded, out of core) and Spark (:mod:`.spark`, a cluster) have the
same ``aggregate``; the kernels do not change. ``eval --engine spark`` lives in :mod:`.spark_eval`.
:func:`get_engine` picks one by name (it imports the implementations, which import only :mod:`.base`);
:func:`check_engine` is the one check of a name.
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
