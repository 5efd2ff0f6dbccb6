"""The environment the tool reads, in one place: each variable's name, its meaning and its one reader.

Every reader looks at the environment when called (not at import), so a variable set by the root
``--db`` option, or by a test, is seen by the next call. No other module reads ``os.environ``
(tests/test_architecture.py checks it).
"""

from __future__ import annotations

import os

#: the database URL when a command is given no ``--db`` (docs/cli.md); else :data:`DEFAULT_DB_URL`
DB = "NDCG_LABELING_DB"
DEFAULT_DB_URL = "sqlite:///ndcg_labeling.db"
#: the backend policy, ``auto,parallel=auto,tensors=kernels`` when unset (docs/backend.md)
BACKEND = "NDCG_LABELING_BACKEND"
#: ``plain``: progress as plain ``progress: ...`` lines on stderr instead of a Rich display (logs, tests)
PROGRESS = "NDCG_LABELING_PROGRESS"
#: the Python of Spark's executors; set to this interpreter when unset (docs/scale.md)
PYSPARK_PYTHON = "PYSPARK_PYTHON"
#: Spark's own: the address a local-mode driver binds; when unset we bind loopback (docs/scale.md)
SPARK_LOCAL_IP = "SPARK_LOCAL_IP"


def db_url() -> str:
    """``$NDCG_LABELING_DB``, else the SQLite default."""
    return os.environ.get(DB) or DEFAULT_DB_URL


def use_db_url(url: str) -> None:
    """Make ``url`` this process's ``$NDCG_LABELING_DB`` (the root ``--db`` option; a command's own wins)."""
    os.environ[DB] = url


def backend_spec() -> str:
    """``$NDCG_LABELING_BACKEND`` as written (empty when unset)."""
    return os.environ.get(BACKEND, "")


def plain_progress() -> bool:
    """Whether ``$NDCG_LABELING_PROGRESS`` asks for plain progress lines."""
    return os.environ.get(PROGRESS) == "plain"


def secret(name: str) -> str | None:
    """The variable the user named for a secret (``judge run --api-key-env NAME``); None when unset or empty."""
    return os.environ.get(name) or None


def default_pyspark_python(python: str) -> None:
    """``$PYSPARK_PYTHON`` set to ``python`` unless it is already set."""
    os.environ.setdefault(PYSPARK_PYTHON, python)


def spark_local_ip_set() -> bool:
    """Whether ``$SPARK_LOCAL_IP`` is set (then Spark binds where it says, not our loopback default)."""
    return SPARK_LOCAL_IP in os.environ
