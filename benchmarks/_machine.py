"""What the benchmarks print about the machine they ran on."""

from __future__ import annotations

import platform
from pathlib import Path


def cpu_name() -> str:
    """The CPU model as /proc/cpuinfo names it (else what platform knows)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def child_env() -> dict[str, str]:
    """The environment for the timed processes: this one's, without ``PYTHONDONTWRITEBYTECODE``.

    ``pip install .`` compiles the package's bytecode at install time, so a user's process never
    compiles it; an editable checkout gets the same once one process has written the cache. With the
    variable set (some shells and CI images set it), every timed process would compile every module
    of the package again (about 50 ms of each start-up), which no installed copy pays.
    """
    import os

    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env
