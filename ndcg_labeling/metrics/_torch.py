"""The torch path of :func:`ndcg_labeling.metrics._core.prepare`: the same ranking, as tensors.

Imported only when a torch tensor is passed in. Everything stays on the tensor's device; the sort
is ``torch.sort(stable=True)`` (equal scores keep column order, like the NumPy path), so results
match the NumPy path (float64: to rounding; float32: to float32 precision).
"""

from __future__ import annotations

from typing import Any

import torch

from ndcg_labeling.metrics import dcg as _dcg
from ndcg_labeling.metrics._validation import Ranking, check_rows, check_same_shape


def _as_2d(func: str, name: str, x: Any, like: torch.Tensor | None) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(x, device=like.device if like is not None else None)
    if x.ndim == 1:
        x = x.unsqueeze(0)
    if x.ndim != 2:
        raise ValueError(f"{func}: {name} must be a 2-D array (queries, list length), got {x.ndim} dimensions")
    tensor: torch.Tensor = x
    return tensor


def _check_labels(func: str, name: str, x: torch.Tensor) -> None:
    bad = (x < 0) | torch.isinf(x)
    if bool(bad.any()):
        row, col = (int(v) for v in torch.nonzero(bad)[0])
        value = float(x[row, col])
        rule = "non-negative" if value < 0 else "finite"
        shown: float | int = int(value) if value == value and abs(value) != float("inf") and value.is_integer() else value
        raise ValueError(f"{func}: {name} must be {rule}, got {shown} at row {row}, column {col}")


def cpu_numpy_view(scores: Any, labels: Any, ideal_labels: Any) -> tuple[torch.dtype, tuple[Any, Any, Any]] | None:
    """NumPy views of inputs that are all on the CPU, with the result dtype the torch path would give
    (the scores' float dtype, float64 for integer scores); None when a tensor is on another device."""
    inputs = (scores, labels, ideal_labels)
    if any(isinstance(x, torch.Tensor) and x.device.type != "cpu" for x in inputs):
        return None
    s = scores if isinstance(scores, torch.Tensor) else torch.as_tensor(scores)
    dtype = s.dtype if s.is_floating_point() else torch.float64
    arrays: list[Any] = []
    for x in inputs:
        if not isinstance(x, torch.Tensor):
            arrays.append(x)
            continue
        try:
            arrays.append(x.detach().resolve_neg().resolve_conj().numpy())
        except (TypeError, RuntimeError):  # a dtype NumPy lacks (bfloat16): the torch path serves
            return None
    return dtype, (arrays[0], arrays[1], arrays[2])


def as_tensor(values: Any, dtype: torch.dtype) -> torch.Tensor:
    """A NumPy result as a CPU tensor of ``dtype``."""
    return torch.from_numpy(values).to(dtype)


def ranking_as_tensors(r: Ranking, dtype: torch.dtype) -> Ranking:
    """A ranking made by the NumPy kernels, as CPU tensors of ``dtype`` for the per-metric sums."""

    def n_relevant(threshold: float) -> torch.Tensor:
        return as_tensor(r.n_relevant(threshold), dtype)

    return Ranking(torch, as_tensor(r.ranked, dtype), torch.from_numpy(r.present), as_tensor(r.ideal, dtype),
                   n_relevant, as_tensor(r.log2_ranks, dtype), r.width, r.func)


def prepare_torch(func: str, scores: Any, labels: Any, *, k_max: int | None, ideal_labels: Any) -> Ranking:
    s = _as_2d(func, "scores", scores, None)
    dtype = s.dtype if s.is_floating_point() else torch.float64
    s = s.to(dtype)
    lab = _as_2d(func, "labels", labels, s).to(device=s.device, dtype=dtype)
    check_same_shape(func, tuple(s.shape), tuple(lab.shape))
    n, width = s.shape
    k_rank = width if k_max is None else max(1, min(k_max, width))

    valid = ~torch.isnan(s)
    # One stable ascending sort of the negated scores: highest score first, equal scores in column order,
    # a real score of -inf before the padding (NaN sorts last in torch), as the NumPy path ranks them.
    # (A descending sort with padding as -inf needed a second stable pass for real -inf scores: one more
    # sort, 6.4 ms for 1M x 100 on an H200.)
    order = torch.sort(-s, dim=1, stable=True).indices[:, :k_rank]
    present = valid.gather(1, order)
    ranked = torch.where(present, lab.gather(1, order), torch.full_like(order, 0, dtype=dtype) * float("nan"))

    if ideal_labels is None:
        ideal_src = torch.where(valid, lab, torch.full_like(lab, float("nan")))
        _check_labels(func, "labels", ideal_src)
    else:
        ideal_src = _as_2d(func, "ideal_labels", ideal_labels, s).to(device=s.device, dtype=dtype)
        check_rows(func, tuple(s.shape), tuple(ideal_src.shape))
        _check_labels(func, "labels", torch.where(valid, lab, torch.full_like(lab, float("nan"))))
        _check_labels(func, "ideal_labels", ideal_src)
    ideal_width = ideal_src.shape[1]
    k_id = max(1, ideal_width if k_max is None else min(k_max, ideal_width))
    clean = torch.nan_to_num(ideal_src, nan=0.0)
    ideal = torch.sort(clean, dim=1, descending=True).values[:, :k_id]  # (topk: 1.8x the sort's time)
    if ideal.shape[1] < k_id:  # zero-width ideal source
        ideal = torch.zeros((n, k_id), dtype=dtype, device=s.device)

    def n_relevant(threshold: float) -> torch.Tensor:
        return (ideal_src >= threshold).sum(1).to(dtype)

    # the engine's log2 (the C library's), on the tensor's device: one discount for every backend
    log2_ranks = torch.as_tensor(_dcg.log2_ranks(max(k_rank, k_id)), device=s.device).to(dtype)
    return Ranking(torch, ranked, present, ideal, n_relevant, log2_ranks, width, func)
