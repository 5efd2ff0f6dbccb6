"""Engines: where raw logs are aggregated in place, behind one small interface.

:class:`~ndcg_labeling.engines.base.LogEngine` ("aggregate these logs") takes a
:class:`~ndcg_labeling.engines.base.LogRequest` and returns
:class:`~ndcg_labeling.engines.base.LogAggregates`: the per-(pair, position) sufficient statistics
(and, for the DBN, the served lists' click patterns) that every model of :mod:`ndcg_labeling.behavior`
takes. DuckDB (:mod:`.duckdb`, embedded, out of core) is the one engine today; a Spark engine adds a
module with the same ``aggregate`` and a name in :data:`ENGINES`, and the kernels do not change.
"""

from __future__ import annotations

from ndcg_labeling.engines.base import LogAggregates, LogEngine, LogRequest, get_engine

ENGINES = ("duckdb",)

__all__ = ["ENGINES", "LogAggregates", "LogEngine", "LogRequest", "get_engine"]
