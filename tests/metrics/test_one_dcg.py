"""One DCG in the package: ``metrics/dcg.py`` is the only module that takes a ``log2`` (the discount),
and every path that scores NDCG (batch_ndcg's NumPy, compiled and torch builds, the ranked-list engine
of ``report`` / ``eval``, online, budget) gives the same bits on the same lists."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import ndcg_labeling
from ndcg_labeling import backend
from ndcg_labeling.budget.estimators import plain_ndcg
from ndcg_labeling.budget.pool import build_pool
from ndcg_labeling.metrics import batch_ndcg
from ndcg_labeling.metrics.registry import compute_on_lists
from ndcg_labeling.metrics.trec_measures import ranked_lists_from_scores
from ndcg_labeling.online import lists as online_lists

PACKAGE = Path(ndcg_labeling.__file__).parent
ENGINE = PACKAGE / "metrics" / "dcg.py"


def _log2_calls(path: Path) -> list[int]:
    """Lines of ``path`` that call or name ``log2`` (``np.log2``, ``math.log2``, ``torch.log2``, a bare
    ``log2``) or take a logarithm to base 2 with ``log(x, 2)``."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and node.attr in ("log2", "log2_", "frexp"):
            lines.append(node.lineno)
        elif isinstance(node, ast.Name) and node.id == "log2":
            lines.append(node.lineno)
        elif (isinstance(node, ast.Call) and len(node.args) == 2 and isinstance(node.args[1], ast.Constant)
              and node.args[1].value == 2 and getattr(node.func, "attr", getattr(node.func, "id", "")) == "log"):
            lines.append(node.lineno)
    return lines


def test_only_the_engine_takes_a_log2() -> None:
    offenders = {str(p.relative_to(PACKAGE)): lines for p in sorted(PACKAGE.rglob("*.py"))
                 if p != ENGINE and (lines := _log2_calls(p))}
    assert offenders == {}, f"a log2 (a DCG discount) outside metrics/dcg.py: {offenders}"
    assert _log2_calls(ENGINE), "the check finds no log2 in the engine itself: it is looking at nothing"


def test_the_scanner_sees_a_discount() -> None:
    # the check must fail for the forms a second DCG would take
    for text in ("import numpy as np\nd = 1 / np.log2(r + 1)\n", "import math\nd = math.log(r + 1, 2)\n",
                 "from math import log2\nd = 1 / log2(r + 1)\n", "import torch\nd = torch.log2(t)\n"):
        path = PACKAGE.parent / ".test_one_dcg_probe.py"
        try:
            path.write_text(text)
            assert _log2_calls(path), text
        finally:
            path.unlink()


def _lists(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, m = 300, 30
    scores = rng.normal(size=(n, m))
    labels = rng.integers(0, 4, size=(n, m)).astype(np.float64)
    short = rng.integers(1, m + 1, size=n)  # ragged lists: NaN scores past each end
    scores[np.arange(m)[None, :] >= short[:, None]] = np.nan
    labels[rng.random((n, m)) < 0.2] = np.nan  # unjudged
    return scores, labels


@pytest.mark.parametrize("gain", ["exponential", "linear"])
def test_every_path_gives_the_same_bits(gain: str) -> None:
    scores, labels = _lists(7)
    judged = np.where(np.isnan(scores), np.nan, labels)  # the ideal: the judged documents of the list
    with backend.using("numpy"):
        ref = batch_ndcg(scores, labels, k=[5, 10, None], gain=gain)
    eval_engine = compute_on_lists(["ndcg@5", "ndcg@10", "ndcg"],
                                   ranked_lists_from_scores(scores, labels, judged), gain=gain)
    np.testing.assert_array_equal(np.column_stack(list(eval_engine.values())), ref)

    order = np.argsort(np.where(np.isnan(scores), np.inf, -scores), axis=1, kind="stable")
    ranked = np.take_along_axis(np.where(np.isnan(scores), np.nan, labels), order, axis=1)
    for j, k in enumerate((5, 10, None)):
        idcg = online_lists.ideal_dcg([row[~np.isnan(row)] for row in judged], k, gain)
        np.testing.assert_array_equal(online_lists.exact_scores("ndcg", k, ranked, idcg, gain), ref[:, j])

    if backend.numba_importable():
        with backend.using("numba"):
            np.testing.assert_array_equal(batch_ndcg(scores, labels, k=[5, 10], gain=gain), ref[:, :2])
    torch = pytest.importorskip("torch")
    with backend.using("auto,tensors=torch"):
        twin = batch_ndcg(torch.as_tensor(scores), torch.as_tensor(labels), k=[5, 10, None], gain=gain)
    np.testing.assert_array_equal(twin.numpy(), ref)


def test_budget_scores_with_the_engine() -> None:
    # one query, two runs over a pool of four documents: plain NDCG@3 has the eval engine's bits
    pool = build_pool([[[0, 1, 2]], [[3, 2, 1]]], depth=3)
    by_code = {0: 3.0, 1: 0.0, 2: 2.0, 3: np.nan}
    grades = np.array([by_code[int(c)] for c in pool.code])
    scores = np.array([[3.0, 2, 1], [3, 2, 1]])
    labels = np.array([[3.0, 0, 2], [np.nan, 2, 0]])
    ideal = np.tile([3.0, 0, 2, np.nan], (2, 1))
    for gain in ("exponential", "linear"):
        want = compute_on_lists(["ndcg@3"], ranked_lists_from_scores(scores, labels, ideal), gain=gain)["ndcg@3"]
        np.testing.assert_array_equal(plain_ndcg(pool, grades, 3, gain=gain)[:, 0], want)
