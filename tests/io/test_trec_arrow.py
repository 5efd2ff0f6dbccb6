"""The pyarrow fast path of the TREC readers gives what the pandas reader gives, and steps aside
(to the pandas reader and its exact errors) for any other layout."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ndcg_labeling.errors import InputFileError
from ndcg_labeling.io import trec


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(**{c: frame[c].astype(str) for c in ("query_id", "doc_id")}).reset_index(drop=True)


def test_arrow_run_equals_pandas_run(tmp_path: Path):
    rng = np.random.default_rng(3)
    lines = [f"q{q} Q0 d{rng.integers(0, 50)}_{i} {i + 1} {rng.normal():.6f} tag" for q in range(30) for i in range(40)]
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines) + "\n")
    fast = trec._read_run_scores_arrow(path)
    assert fast is not None and isinstance(fast["doc_id"].dtype, pd.CategoricalDtype)
    slow = trec._read_run(path, ["query_id", "doc_id", "score"], categorical=True)
    pd.testing.assert_frame_equal(_plain(fast), _plain(slow))


def test_arrow_qrels_equals_pandas_qrels(tmp_path: Path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 NA 2\nq1 0 d2 -1\nq2 0 null 0\n")  # ids that look like missing values stay ids
    fast = trec.read_trec_qrels_codes(path)
    slow = trec.read_trec_qrels(path)[["query_id", "doc_id", "relevance"]]
    pd.testing.assert_frame_equal(_plain(fast), _plain(slow))
    assert fast["doc_id"].astype(str).tolist() == ["NA", "d2", "null"]


@pytest.mark.parametrize("content", ["q1\tQ0\td1\t1\t2.0\ttag\n", "q1 Q0  d1 1 2.0 tag\n", "q1 Q0 d1 1 2.0 tag extra\n",
                                     "q1 Q0 d1 1 abc tag\n"])
def test_other_layouts_fall_back_to_pandas(tmp_path: Path, content: str):
    path = tmp_path / "run.txt"
    path.write_text(content)
    assert trec._read_run_scores_arrow(path) is None


def test_non_finite_score_is_reported_with_its_line(tmp_path: Path):
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 inf t\n")
    with pytest.raises(InputFileError) as info:
        trec.read_trec_run_scores(path)
    assert str(info.value) == f"{path}:2: score must be a finite number, got 'inf'"
