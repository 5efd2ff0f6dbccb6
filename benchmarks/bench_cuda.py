"""NDCG on a GPU: ``batch_ndcg`` on CUDA tensors against the NumPy reference and the CPU kernels, in one run.

    python3 benchmarks/bench_cuda.py                  # on a machine with CUDA (the figures in RESULTS.md)
    .venv/bin/python benchmarks/bench_cuda.py --dry-run  # here: the same code path on CPU tensors, small

Realistic lists, not uniform noise: each query has 20-100 documents (NaN padding after the list's end),
scores quantised to 1/16 so that about a third of a list shares its score with a neighbour (retrieval
scores tie, and the tie order is where implementations part), and grades 0-3 with most documents 0.

1. **Agreement.** On 200k queries, ``batch_ndcg`` on CUDA tensors (float64 and float32) is compared with
   the NumPy path on the same data for exponential and linear gain, one and several cut-offs, the whole
   list, a separate ideal list (trec_eval's convention) and averaged ties. The largest absolute
   difference is printed; float64 must agree to 1e-12, float32 to 1e-5, or the script exits non-zero.
2. **Speed.** NDCG@10 at 1M, 10M and 30M queries x 100 documents (float32 on the GPU): the time of the
   CUDA path (data already on the GPU, median of 5 after a warm-up, ``torch.cuda.synchronize``), the
   host-to-device copy of the same arrays, a plain torch version (``torch.sort`` + ``gather``, the
   straightforward way on a GPU), and the CPU kernels on all cores (NumPy float64 arrays; up to 10M).
   Sizes above 1M repeat the first million lists (generating 30M takes longer than the whole GPU run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from ndcg_labeling import backend  # noqa: E402
from ndcg_labeling.metrics import batch_ndcg  # noqa: E402

DOCS = 100


def lists(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scores, labels, ideal) for ``n`` queries: 20-100 documents each, tied scores, sparse grades."""
    length = rng.integers(20, DOCS + 1, n)
    scores = np.floor(rng.normal(8.0, 3.0, (n, DOCS)) * 16.0) / 16.0
    labels = rng.choice(np.array([0.0, 1.0, 2.0, 3.0]), size=(n, DOCS), p=[0.7, 0.15, 0.1, 0.05])
    pad = np.arange(DOCS)[None, :] >= length[:, None]
    scores[pad] = np.nan
    labels[pad] = np.nan
    # the judged pool of a query holds more than the list: a few judged documents the list misses
    extra = rng.choice(np.array([0.0, 1.0, 2.0, 3.0]), size=(n, 10), p=[0.5, 0.2, 0.2, 0.1])
    ideal = np.concatenate([np.where(pad, np.nan, labels), extra], axis=1)
    return scores, labels, ideal


def straightforward_torch(torch: Any, scores: Any, labels: Any, k: int) -> Any:
    """NDCG@k the plain torch way: sort by score (stable, descending), gather the gains, divide."""
    s = torch.nan_to_num(scores, nan=-float("inf"))
    order = torch.sort(s, dim=1, descending=True, stable=True).indices[:, :k]
    gains = torch.pow(2.0, torch.nan_to_num(labels, nan=0.0)) - 1.0
    disc = 1.0 / torch.log2(torch.arange(2, k + 2, device=scores.device, dtype=scores.dtype))
    dcg = (torch.gather(gains, 1, order) * disc).sum(dim=1)
    idcg = (torch.sort(gains, dim=1, descending=True).values[:, :k] * disc).sum(dim=1)
    return torch.where(idcg > 0, dcg / torch.where(idcg > 0, idcg, 1.0), 0.0)


def median_of(fn: Callable[[], Any], repeats: int, sync: Callable[[], None]) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


CASES: list[tuple[str, dict[str, Any]]] = [
    ("exponential, k=10", {"k": 10}),
    ("linear, k=10", {"k": 10, "gain": "linear"}),
    ("exponential, k=(1, 5, 10, 20)", {"k": [1, 5, 10, 20]}),
    ("exponential, whole list", {"k": None}),
    ("linear, k=10, ideal list given", {"k": 10, "gain": "linear", "ideal": True}),
    ("exponential, k=10, ties averaged", {"k": 10, "ties": "average"}),
]


def agreement(torch: Any, device: str, n: int, rng: np.random.Generator) -> bool:
    scores, labels, ideal = lists(n, rng)
    print(f"\n## Agreement with the NumPy path ({n:,} queries x {DOCS}, {device})\n")
    print("| case | float64: max abs diff | float32: max abs diff |")
    print("|---|---:|---:|")
    ok = True
    for name, opts in CASES:
        kw = {k: v for k, v in opts.items() if k != "ideal"}
        ref = np.asarray(batch_ndcg(scores, labels, ideal_labels=ideal if opts.get("ideal") else None, **kw))
        diffs = []
        for dtype, tol in ((torch.float64, 1e-12), (torch.float32, 1e-5)):
            t = [torch.as_tensor(a, device=device, dtype=dtype) for a in (scores, labels, ideal)]
            got = batch_ndcg(t[0], t[1], ideal_labels=t[2] if opts.get("ideal") else None, **kw)
            got = got.double().cpu().numpy() if hasattr(got, "cpu") else np.asarray(got)
            d = float(np.max(np.abs(got - ref)))
            diffs.append(d)
            ok &= d <= tol and got.shape == ref.shape
        print(f"| {name} | {diffs[0]:.1e} | {diffs[1]:.1e} |")
    return ok


def speed(torch: Any, device: str, sizes: list[int], cpu_max: int, rng: np.random.Generator) -> None:
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    print(f"\n## NDCG@10, {DOCS} documents a list, median of 5 (seconds; {device} float32, CPU kernels float64 "
          f"on {os.cpu_count()} cores)\n")
    print("| queries | batch_ndcg on the GPU | plain torch (sort + gather) | host-to-device copy "
          "| CPU kernels (NumPy) | CPU / GPU |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        print(_one_size(torch, device, n, n <= cpu_max, rng, sync))


def _copy(torch: Any, device: str, *arrays: np.ndarray) -> list[Any]:
    return [torch.from_numpy(a).to(device) for a in arrays]


def _one_size(torch: Any, device: str, n: int, with_cpu: bool, rng: np.random.Generator,
              sync: Callable[[], None]) -> str:
    chunk = lists(min(n, 1_000_000), rng)  # larger sizes repeat it: a GPU gains nothing from that
    reps = max(n // chunk[0].shape[0], 1)
    s_host = np.tile(chunk[0].astype(np.float32), (reps, 1))
    l_host = np.tile(chunk[1].astype(np.float32), (reps, 1))
    del chunk
    copy = median_of(partial(_copy, torch, device, s_host, l_host), 3, sync)
    s, lab = _copy(torch, device, s_host, l_host)
    ours = median_of(partial(batch_ndcg, s, lab, 10), 5, sync)
    plain = median_of(partial(straightforward_torch, torch, s, lab, 10), 5, sync)
    check = float((batch_ndcg(s[:100_000], lab[:100_000], 10).double()
                   - straightforward_torch(torch, s[:100_000].double(), lab[:100_000].double(), 10)).abs().max())
    cpu_txt = "- | -"
    if with_cpu:
        sd, ld = s_host.astype(np.float64), l_host.astype(np.float64)
        cpu = median_of(partial(batch_ndcg, sd, ld, 10), 5, lambda: None)
        cpu_txt = f"{cpu:.3f} | {cpu / ours:.1f}x"
    return (f"| {n:,} | {ours:.4f} | {plain:.4f} | {copy:.3f} | {cpu_txt} |  "
            f"(plain torch vs ours, first 100k: {check:.1e})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true", help="CPU tensors through the torch path, small sizes")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000, 30_000_000])
    ap.add_argument("--cpu-max", type=int, default=10_000_000, help="largest size also timed on the CPU")
    args = ap.parse_args()
    import torch

    rng = np.random.default_rng(20261204)
    if args.dry_run:
        device, n_check, sizes = "cpu", 2_000, [20_000]
    else:
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA device (use --dry-run to try the code path on the CPU)")
        device, n_check, sizes = "cuda", 200_000, args.sizes
        print(f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, numpy {np.__version__}")
    # on the CPU, tensors go through the NumPy kernels by default; the dry run takes the torch operations
    with backend.using(f"{backend.policy().kind},tensors=torch"):
        ok = agreement(torch, device, n_check, rng)
        speed(torch, device, sizes, args.cpu_max, rng)
    if not ok:
        raise SystemExit("the CUDA path and the NumPy path disagree beyond the tolerance")


if __name__ == "__main__":
    main()
