"""One small local SparkSession for the Spark tests, imported by each test module (not a conftest.py:
a second ``conftest`` module would shadow the one that tests/behavior imports by name) (``local[2]``, 2 shuffle partitions, no UI).

PySpark is installed by the test set-up (the ``spark`` extra) and Java 17 by ``.ci/run``: these tests
run in CI, they are not skipped. The session is started once (Spark's JVM takes tens of seconds to
start on a loaded machine) and stopped at the end.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("ndcg-labeling-tests")
               .config("spark.sql.shuffle.partitions", "2").config("spark.default.parallelism", "2")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.driver.memory", "1g").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
