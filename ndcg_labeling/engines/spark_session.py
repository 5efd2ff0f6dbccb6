"""The SparkSession of ``--engine spark``: the caller's own, or one this package starts.

PySpark is an optional extra (``pip install 'ndcg-labeling[spark]'``) and needs Java 17; neither is
imported before a Spark command runs. Executors run this package's kernels in Python worker processes:
they must find the same Python and the same ``ndcg_labeling`` (on a real cluster: the same wheel on
every node, or ``spark-submit --py-files``; docs/scale.md).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ndcg_labeling import settings
from ndcg_labeling.errors import NdcgLabelingError

DEFAULT_MASTER = "local[*]"
#: the JVM's logging: errors only (a refused command prints its one ``Error:`` line, not log4j's start-up)
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
LOOPBACK = "127.0.0.1"


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
    url = master or DEFAULT_MASTER
    builder = (SparkSession.builder.master(url).appName("ndcg-labeling")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{LOG4J_CONFIG}"))
    if url.startswith("local") and not settings.spark_local_ip_set():
        # local mode needs no network: listen on loopback only, never on the host's address
        builder = builder.config("spark.driver.bindAddress", LOOPBACK).config("spark.driver.host", LOOPBACK)
    try:
        with _jvm_output_to_file() as jvm_log:
            try:
                session = builder.getOrCreate()
            except Exception as exc:  # Java missing, a bad master URL: one line, not a Py4J traceback
                lines = [x for x in jvm_log.read_text(errors="replace").splitlines() if x.strip()]
                detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                if lines:
                    detail = f"{detail} ({lines[-1].strip()[:300]})"
                raise NdcgLabelingError(f"cannot start Spark on {url}: {detail}") from None
        session.sparkContext.setLogLevel("ERROR")
        return session
    except OSError as exc:  # the temporary file for the JVM's output
        raise NdcgLabelingError(f"cannot start Spark on {url}: {exc}") from None


@contextmanager
def _jvm_output_to_file() -> Iterator[Path]:
    """While the JVM starts, file descriptors 1 and 2 point at a temporary file, which the JVM inherits
    for good: its start-up notices (JDK warnings, Hadoop's native library note) never reach the
    terminal nor ``--format json`` on stdout; errors still come back as Py4J exceptions, and the file's
    last line is named when the start fails."""
    fd, name = tempfile.mkstemp(prefix="ndcg-spark-jvm-", suffix=".log")
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield Path(name)
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (*saved, fd):
            os.close(f)
        os.unlink(name)  # the JVM keeps writing to its descriptor; nothing is left behind

