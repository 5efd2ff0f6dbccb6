"""Input checks shared by the metric functions, and the :class:`Ranking` that one sort gives them.

Every check raises ``ValueError`` naming the function, the rule and the value received; none uses
``assert`` (``python -O`` strips those). Inputs are never modified: arrays are converted with
``np.asarray`` (no copy when already float64) and every later step writes to new arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

GAINS = ("exponential", "linear")
TIES = ("ordered", "average")
EMPTIES = ("zero", "nan")


@dataclass(frozen=True)
class Ranking:
    """The result of one sort (:func:`ndcg_labeling.metrics._core.prepare`): NumPy arrays, or torch
    tensors. Shapes: ``n`` queries, ``K`` ranked positions."""

    xp: Any
    ranked: Any  # (n, K) labels in rank order; NaN where unjudged or past the end of the list
    present: Any  # (n, K) bool: a document is at this rank
    ideal: Any  # (n, Ki) every judged label of the query, descending; 0 past the end
    n_relevant: Any  # callable threshold -> (n,) number of relevant judged documents
    log2_ranks: Any  # (max(K, Ki),) log2(rank + 1): each DCG term is a gain divided by it
    width: int  # list length (columns of scores)
    func: str

    @property
    def k_ranked(self) -> int:
        return int(self.ranked.shape[1])

    @property
    def k_ideal(self) -> int:
        return int(self.ideal.shape[1])


def is_torch(x: Any) -> bool:
    """Whether ``x`` is a torch tensor, without importing torch when it is not loaded."""
    return type(x).__module__.startswith("torch") and hasattr(x, "device")


def as_2d(func: str, name: str, x: Any) -> FloatArray:
    """``x`` as a 2-D float64 array (a 1-D input is one query)."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{func}: {name} must be numeric, got {type(x).__name__} ({exc})") from None
    if arr.ndim == 1:
        arr = arr[np.newaxis, :]
    if arr.ndim != 2:
        raise ValueError(f"{func}: {name} must be a 2-D array (queries, list length), got {arr.ndim} dimensions")
    return np.ascontiguousarray(arr)


def check_same_shape(func: str, scores_shape: tuple[int, ...], labels_shape: tuple[int, ...]) -> None:
    if tuple(scores_shape) != tuple(labels_shape):
        raise ValueError(
            f"{func}: scores and labels must have the same shape, got scores {tuple(scores_shape)} "
            f"and labels {tuple(labels_shape)}"
        )


def check_rows(func: str, scores_shape: tuple[int, ...], ideal_shape: tuple[int, ...]) -> None:
    if scores_shape[0] != ideal_shape[0]:
        raise ValueError(
            f"{func}: ideal_labels must have one row per query, got scores {tuple(scores_shape)} "
            f"and ideal_labels {tuple(ideal_shape)}"
        )


def check_k(func: str, k: int | Sequence[int] | None) -> tuple[list[int | None], bool]:
    """The cut-offs as a list, and whether ``k`` was a sequence (then results get one column per k)."""
    if k is None:
        return [None], False
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
        ks: list[int | None] = [int(k)]
        many = False
    elif isinstance(k, Sequence) and not isinstance(k, str):
        ks = []
        for item in k:
            if item is not None and (isinstance(item, bool) or not isinstance(item, (int, np.integer))):
                raise ValueError(f"{func}: k must be an int, a sequence of ints or None, got {item!r} in {k!r}")
            ks.append(None if item is None else int(item))
        if not ks:
            raise ValueError(f"{func}: k must not be an empty sequence")
        many = True
    else:
        raise ValueError(f"{func}: k must be an int, a sequence of ints or None, got {k!r}")
    for cut in ks:
        if cut is not None and cut < 1:
            raise ValueError(f"{func}: k must be >= 1, got {cut}")
    return ks, many


def k_max(ks: Sequence[int | None]) -> int | None:
    """The deepest of the cut-offs ``ks``; None (the whole list) when one of them is None."""
    return None if any(k is None for k in ks) else max(k for k in ks if k is not None)


def check_choice(func: str, param: str, value: object, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{func}: {param} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}")
    return value


def check_threshold(func: str, threshold: float) -> float:
    t = float(threshold)
    if not np.isfinite(t):
        raise ValueError(f"{func}: relevant_threshold must be finite, got {threshold!r}")
    return t


def bad_label_error(func: str, name: str, values: FloatArray, row: int, col: int) -> ValueError:
    value = values[row, col]
    rule = "non-negative" if value < 0 else "finite"
    shown = int(value) if np.isfinite(value) and float(value).is_integer() else float(value)
    return ValueError(f"{func}: {name} must be {rule}, got {shown} at row {row}, column {col}")


def check_bad_columns(func: str, name: str, values: FloatArray, bad_columns: npt.NDArray[np.int64]) -> None:
    """Raise for the first row whose ``bad_columns`` entry (a kernel's first bad label, -1: none) is set."""
    rows = np.flatnonzero(bad_columns >= 0)
    if rows.size:
        row = int(rows[0])
        raise bad_label_error(func, name, values, row, int(bad_columns[row]))


def check_labels(func: str, name: str, values: FloatArray) -> None:
    """Labels may be NaN (unjudged / padding) but never negative or infinite."""
    with np.errstate(invalid="ignore"):
        bad = (values < 0) | np.isinf(values)
    if bad.any():
        flat = int(np.argmax(bad))
        row, col = divmod(flat, values.shape[1])
        raise bad_label_error(func, name, values, row, col)
