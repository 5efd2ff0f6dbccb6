"""Engines: where raw logs are aggregated in place, behind one small interface.

:class:`~ndcg_labeling.engines.base.LogEngine` ("aggregate these logs") takes a
:class:`~ndcg_labeling.engines.base.LogRequest` and returns
:class:`~ndcg_labeling.engines.base.LogAggregates`: the per-(pair, position) sufficient statistics
(and, for the DBN, the served lists' click patterns) that every model of :mod:`ndcg_labeling.behavior`
takes. DuckDB (:mod:`.duckdb`, embedded, out of core) and Spark (:mod:`.spark`, a cluster) have the
same ``aggregate``; the kernels do not change. ``eval --engine spark`` lives in :mod:`.spark_eval`.
"""

from __future__ import annotations

from ndcg_labeling.engines.base import LogAggregates, LogEngine, LogRequest, get_engine

ENGINES = ("duckdb", "spark")

__all__ = ["ENGINES", "LogAggregates", "LogEngine", "LogRequest", "get_engine"]
