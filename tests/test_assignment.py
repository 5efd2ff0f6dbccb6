"""The assignment kernel: balanced loads, distinct graders per item, and each grader's order equal to
the same order written with pandas (sort by grader and item, one key per (grader, query), one per item,
stable sort by grader, query key, item key), which is how the batch creation computed it before."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from ndcg_labeling.assignment import balanced_assignment, grader_orders


def pandas_orders(item_query: np.ndarray, chosen: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    n, overlap = chosen.shape
    assign = pd.DataFrame({"item": np.repeat(np.arange(n), overlap), "g": chosen.ravel()})
    assign["qid"] = item_query[assign["item"].to_numpy()]
    pairs = assign[["g", "qid"]].drop_duplicates().sort_values(["g", "qid"], kind="stable")
    pairs["qkey"] = rng.random(len(pairs))
    assign = assign.sort_values(["g", "item"], kind="stable").merge(pairs, on=["g", "qid"], how="left")
    assign["dkey"] = rng.random(len(assign))
    assign = assign.sort_values(["g", "qkey", "dkey"], kind="stable").reset_index(drop=True)
    assign["position"] = assign.groupby("g", sort=False).cumcount()
    return assign


@pytest.mark.parametrize("seed", range(12))
def test_orders_equal_the_pandas_formulation(seed: int) -> None:
    draw = np.random.default_rng(seed)
    n, graders = int(draw.integers(1, 400)), int(draw.integers(1, 7))
    overlap = int(draw.integers(1, graders + 1))
    item_query = draw.integers(0, 30, n).astype(np.int64)
    rng = np.random.default_rng(seed + 1000)
    chosen = balanced_assignment(n, graders, overlap, rng)
    state = rng.bit_generator.state
    expected = pandas_orders(item_query, chosen, rng)
    rng.bit_generator.state = state
    item, grader, position = grader_orders(item_query, chosen, rng)
    assert item.tolist() == expected["item"].tolist()
    assert grader.tolist() == expected["g"].tolist()
    assert position.tolist() == expected["position"].tolist()


def test_assignment_is_balanced_with_distinct_graders() -> None:
    chosen = balanced_assignment(101, 4, 3, np.random.default_rng(1))
    assert all(len(set(row)) == 3 for row in chosen.tolist())
    loads = np.bincount(chosen.ravel(), minlength=4)
    assert loads.sum() == 303 and loads.max() - loads.min() <= 1


def test_a_grader_sees_the_documents_of_a_query_together() -> None:
    item_query = np.array([5, 1, 5, 1, 3, 5, 3], dtype=np.int64)
    chosen = balanced_assignment(7, 2, 2, np.random.default_rng(3))
    item, grader, _ = grader_orders(item_query, chosen, np.random.default_rng(4))
    for g in (0, 1):
        queries = item_query[item[grader == g]].tolist()
        runs = [q for i, q in enumerate(queries) if i == 0 or q != queries[i - 1]]
        assert len(runs) == len(set(queries))


@pytest.mark.parametrize(("args", "message"), [
    ((3, 2, 3), "balanced_assignment: overlap must be between 1 and n_graders (2), got 3"),
    ((3, 2, 0), "balanced_assignment: overlap must be between 1 and n_graders (2), got 0"),
    ((-1, 2, 1), "balanced_assignment: n_items must be >= 0, got -1"),
])
def test_bad_arguments_raise_value_error(args: tuple[int, int, int], message: str) -> None:
    with pytest.raises(ValueError) as info:
        balanced_assignment(*args, np.random.default_rng(0))
    assert str(info.value) == message


def test_the_kernel_loads_neither_pandas_nor_sqlalchemy() -> None:
    code = ("import sys, ndcg_labeling.assignment\n"
            "print(','.join(m for m in ('pandas', 'sqlalchemy', 'numba') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
