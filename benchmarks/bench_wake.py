"""How long an idle core takes to join a parallel loop: the cost a parallel kernel pays for threads that
went to sleep between calls (issue 17's kernel goal on an idle machine).

    .venv/bin/python benchmarks/bench_wake.py [--rounds 20]

A numba ``prange`` loop of pure arithmetic (no memory traffic) over 256 equal iterations, run with one
thread, then with every thread back to back and after a pause of 0.5 to 100 ms (the NumPy reference of `bench_metrics.py --ratio` runs about 90 ms between two kernel calls). OpenMP's static
schedule gives each thread its share up front, so a thread that joins late shows in full: back to
back the call takes the one-thread time over the thread count; a median near the one-thread time
after a pause means the other thread arrived when the work was nearly done. On a virtual machine
an idle virtual CPU is taken off its host core, and waking it is the host's business. The fused NDCG
kernels take their chunks from a counter, so a late thread costs them half its delay, not all of it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import cpu_name  # noqa: E402


@numba.njit(parallel=True, cache=False)
def _spin(n: int) -> float:
    acc = np.zeros(256)
    for c in numba.prange(256):
        x = 0.0
        for i in range(n):
            x += np.sqrt(i * 1.0 + c)
        acc[c] = x
    return float(acc.sum())


def _times(n: int, rounds: int, pause: float) -> list[float]:
    out = []
    for _ in range(rounds):
        if pause:
            time.sleep(pause)
        start = time.perf_counter()
        _spin(n)
        out.append((time.perf_counter() - start) * 1e3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--work", type=int, default=20_000, help="square roots per iteration (256 iterations)")
    args = parser.parse_args()
    threads = numba.get_num_threads()
    _spin(10)
    print(f"machine: {os.cpu_count()} cores, {cpu_name()}; numba {numba.__version__}, threading layer "
          f"{numba.threading_layer()}, {threads} threads; GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT', 'unset')}; "
          f"load average {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
    numba.set_num_threads(1)
    one = _times(args.work, args.rounds, 0.0)
    numba.set_num_threads(threads)
    print(f"one thread: best {min(one):.2f} ms, median {float(np.median(one)):.2f} ms")
    print()
    print("| pause before each call | best ms | median ms | median / one-thread best |")
    print("| ---: | ---: | ---: | ---: |")
    for pause in (0.0, 0.0005, 0.002, 0.01, 0.05, 0.1):
        t = _times(args.work, args.rounds, pause)
        print(f"| {pause * 1e3:g} ms | {min(t):.2f} | {float(np.median(t)):.2f} | {float(np.median(t)) / min(one):.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
