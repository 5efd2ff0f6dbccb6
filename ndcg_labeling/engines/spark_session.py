"""The SparkSession of ``--engine spark``: the caller's own, or one this package starts.

PySpark is an optional extra (``pip install 'ndcg-labeling[spark]'``) and needs Java 17; neither is
imported before a Spark command runs. Executors run this package's kernels in Python worker processes:
they must find the same Python and the same ``ndcg_labeling`` (on a real cluster: the same wheel on
every node, or ``spark-submit --py-files``; docs/scale.md).
"""

from __future__ import annotations

import sys
from typing import Any

from ndcg_labeling import settings
from ndcg_labeling.errors import NdcgLabelingError

DEFAULT_MASTER = "local[*]"


def require_pyspark() -> Any:
    """The ``pyspark`` module, or one clear message saying how to install it."""
    try:
        import pyspark
    except ImportError:
        raise NdcgLabelingError("--engine spark needs PySpark: pip install 'ndcg-labeling[spark]' "
                                "(and Java 17)") from None
    return pyspark


def get_session(master: str | None = None, spark: Any = None) -> Any:
    """``spark`` when given (a library caller's session, used as it is); else the active session, or
    a new one on ``master`` (default ``local[*]``) whose Python workers run this interpreter."""
    if spark is not None:
        return spark
    require_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    # The executors' Python must be the one that has ndcg_labeling (this venv), not the first python3.
    settings.default_pyspark_python(sys.executable)
    try:
        session = (SparkSession.builder.master(master or DEFAULT_MASTER).appName("ndcg-labeling")
                .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                .config("spark.sql.execution.arrow.pyspark.enabled", "true")
                .getOrCreate())
        session.sparkContext.setLogLevel("ERROR")
        return session
    except Exception as exc:  # Java missing, a bad master URL: one line, not a Py4J traceback
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise NdcgLabelingError(f"cannot start Spark on {master or DEFAULT_MASTER}: {detail}") from None


def spark_error(exc: Exception) -> str:
    """The first meaningful line of a Spark/Py4J error (the Python worker's own message when one)."""
    text = str(exc)
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("ndcg_labeling.errors.", "ValueError:", "RuntimeError:")):
            return line.split(":", 1)[1].strip()
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first[:300]
