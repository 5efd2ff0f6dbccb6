"""Kernel-level timing of agreement and consensus over 10^6 grades, ours and naive peers in one run.

    .venv/bin/python benchmarks/bench_agreement.py [--items 200000] [--per-item 5] [--graders 1000]
                                                   [--naive-items 200000] [--peer-items 20000]

Data: ``--items`` items, ``--per-item`` distinct graders each out of ``--graders``, grades 0..3 skewed
towards 0 as relevance grades are, graders off by one now and then. Each row of the table is one call:
wall time (best of ``--repeat``) and peak memory of that call (tracemalloc, which sees numpy's
allocations; a separate run so tracing does not slow the timing). The naive peers:

* ``krippendorff.alpha`` on a graders x items reliability matrix (float64 with NaN for missing) -- what
  one writes without value counts; its memory grows with graders x items. ``--naive-items`` caps the
  items it gets (the matrix at full size is 1.6 GB plus a 0.8 GB temporary);
* ``pandas`` groupby median (averages the two middle grades; ours picks low/high);
* ``crowd-kit`` DawidSkene on ``--peer-items`` items (its pandas EM is too slow for 10^6 grades).
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc
import warnings
from collections.abc import Callable
from typing import Any

import krippendorff
import numpy as np
import pandas as pd

from ndcg_labeling.agreement import agreement_stats, grader_stats
from ndcg_labeling.consensus import consensus

DOMAIN = (0, 1, 2, 3)


def make_grades(n_items: int, per_item: int, n_graders: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """(item, grader, grade) in long format, ``per_item`` distinct graders per item."""
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(n_items, dtype=np.int64), per_item)
    # distinct graders per item: a random start plus strictly increasing steps that sum below n_graders
    max_step = max(1, (n_graders - 1) // max(per_item - 1, 1))
    steps = rng.integers(1, max_step + 1, size=(n_items, per_item))
    steps[:, 0] = rng.integers(0, n_graders, size=n_items)
    grader = (np.cumsum(steps, axis=1) % n_graders).ravel().astype(np.int64)
    truth = rng.choice(4, size=n_items, p=[0.55, 0.25, 0.15, 0.05])
    noise = rng.choice([-1, 0, 1], size=item.size, p=[0.15, 0.7, 0.15])
    grade = np.clip(truth[item] + noise, 0, 3).astype(np.int64)
    return item, grader, grade


def measure(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """(best wall seconds, peak traced MiB, result)."""
    best = float("inf")
    result: Any = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best, peak / 2**20, result


def reliability_matrix(
    item: np.ndarray, grader: np.ndarray, grade: np.ndarray, n_items: int, n_graders: int
) -> np.ndarray:
    matrix = np.full((n_graders, n_items), np.nan)
    matrix[grader, item] = grade
    return matrix


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--per-item", type=int, default=5)
    parser.add_argument("--graders", type=int, default=1000)
    parser.add_argument(
        "--naive-items", type=int, default=200_000, help="items given to the naive alpha (0 skips)"
    )
    parser.add_argument(
        "--peer-items", type=int, default=20_000, help="items given to crowd-kit DawidSkene (0 skips)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    item, grader, grade = make_grades(args.items, args.per_item, args.graders)
    n = item.size
    rows: list[tuple[str, str, int, float, float, str]] = []

    def row(
        who: str,
        what: str,
        n_grades: int,
        fn: Callable[[], Any],
        result_text: Callable[[Any], str],
        repeat: int,
    ) -> Any:
        seconds, mib, result = measure(fn, repeat)
        rows.append((who, what, n_grades, seconds, mib, result_text(result)))
        return result

    stats = row(
        "ours",
        "agreement_stats (alpha ordinal, pa, AC1, AC2)",
        n,
        lambda: agreement_stats(item, grader, grade, DOMAIN, "ordinal"),
        lambda s: f"alpha {s.alpha:.4f}, AC1 {s.ac1:.3f}, AC2 {s.ac2:.3f}",
        args.repeat,
    )
    row(
        "ours",
        "consensus median",
        n,
        lambda: consensus(item, grader, grade, DOMAIN, "median"),
        lambda r: f"{int(r.needs_adjudication.sum()):,} items flagged",
        args.repeat,
    )
    row(
        "ours",
        "consensus majority",
        n,
        lambda: consensus(item, grader, grade, DOMAIN, "majority"),
        lambda r: "",
        args.repeat,
    )
    row(
        "ours",
        "consensus mean",
        n,
        lambda: consensus(item, grader, grade, DOMAIN, "mean"),
        lambda r: "",
        args.repeat,
    )
    row(
        "ours",
        "grader_stats (pairwise quadratic kappa)",
        n,
        lambda: grader_stats(item, grader, grade, DOMAIN),
        lambda g: f"{int(g.flagged.sum())} graders flagged",
        1,
    )
    row(
        "ours",
        "consensus dawid-skene (EM)",
        n,
        lambda: consensus(item, grader, grade, DOMAIN, "dawid-skene"),
        lambda r: f"{r.n_iter} iterations",
        1,
    )

    if args.naive_items:
        k = min(args.naive_items, args.items)
        sub = item < k
        row(
            "naive",
            "krippendorff.alpha on a graders x items matrix",
            int(sub.sum()),
            lambda: krippendorff.alpha(
                reliability_data=reliability_matrix(item[sub], grader[sub], grade[sub], k, args.graders),
                value_domain=DOMAIN,
                level_of_measurement="ordinal",
            ),
            lambda a: (
                f"alpha {a:.4f}" + (" (same)" if k == args.items and abs(a - stats.alpha) < 1e-9 else "")
            ),
            1,
        )
    else:
        rows.append(
            (
                "naive",
                "krippendorff.alpha on a graders x items matrix",
                0,
                float("nan"),
                float("nan"),
                "skipped",
            )
        )
    frame = pd.DataFrame({"item": item, "grade": grade})
    row(
        "pandas",
        "groupby median",
        n,
        lambda: frame.groupby("item")["grade"].median(),
        lambda s: "",
        args.repeat,
    )
    if args.peer_items:
        from crowdkit.aggregation import DawidSkene

        k = min(args.peer_items, args.items)
        sub = item < k
        peer = pd.DataFrame({"task": item[sub], "worker": grader[sub], "label": grade[sub]})

        def crowd_kit() -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return DawidSkene(n_iter=100).fit(peer)

        row(
            "crowd-kit",
            "DawidSkene (EM)",
            int(sub.sum()),
            crowd_kit,
            lambda m: f"{len(m.loss_history_)} iterations",
            1,
        )
        row(
            "ours",
            "consensus dawid-skene (EM), same subset",
            int(sub.sum()),
            lambda: consensus(item[sub], grader[sub], grade[sub], DOMAIN, "dawid-skene"),
            lambda r: f"{r.n_iter} iterations",
            1,
        )

    print(
        f"{args.items:,} items x {args.per_item} grades = {n:,} grades, {args.graders:,} graders, scale 0-3"
    )
    print(f"{'who':<10} {'what':<47} {'grades':>10} {'seconds':>8} {'peak MiB':>9}  result")
    for who, what, n_grades, seconds, mib, text in rows:
        print(f"{who:<10} {what:<47} {n_grades:>10,} {seconds:>8.3f} {mib:>9.1f}  {text}")
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process max RSS {max_rss:,.0f} MiB (includes the naive peers and the test data)")


if __name__ == "__main__":
    main()
