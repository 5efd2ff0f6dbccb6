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


def timed(cmd: list[str], out: Path | None = None, timeout: float = 600) -> tuple[float, float, int]:
    """Wall seconds, peak resident MB and exit code of ``cmd`` (its stdout written to ``out``), run with
    :func:`child_env` under a small parent process that reports the child's own ``ru_maxrss`` (exit
    code -1: stopped after ``timeout`` seconds)."""
    import os
    import subprocess
    import sys

    probe = ("import resource, subprocess, sys, time\n"
             "t = time.perf_counter()\n"
             "with open(sys.argv[1], 'wb') as f:\n"
             "    try:\n"
             "        rc = subprocess.run(sys.argv[3:], stdout=f, timeout=float(sys.argv[2])).returncode\n"
             "    except subprocess.TimeoutExpired:\n"
             "        rc = -1\n"
             "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, rc)\n")
    res = subprocess.run([sys.executable, "-c", probe, str(out or os.devnull), str(timeout), *cmd], env=child_env(),
                         capture_output=True, text=True, check=True)
    wall, mb, rc = res.stdout.split()
    return float(wall), float(mb), int(rc)
