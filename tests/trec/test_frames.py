"""TREC run and qrels readers: columns, dtypes, file order, and one-line errors with the file line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ndcg_labeling.errors import InputFileError
from ndcg_labeling.trec import read_trec_qrels, read_trec_run

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "trec_eval"


def _write(tmp_path: Path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def test_run_columns_dtypes_and_file_order(tmp_path):
    path = _write(tmp_path, "run.txt", "q2 Q0 NA 1 2.5 sys\n\nq1\tQ0  d-01 2   -1e3 sys extra fields\n001 Q0 null 3 7 sys\n")
    run = read_trec_run(path)
    assert list(run.columns) == ["query_id", "doc_id", "rank", "score", "tag"]
    assert run["query_id"].tolist() == ["q2", "q1", "001"]  # "001" stays a string
    assert run["doc_id"].tolist() == ["NA", "d-01", "null"]  # no NA guessing
    assert run["rank"].tolist() == ["1", "2", "3"]  # as written: the rank column is ignored (issue 36)
    assert run["score"].dtype == np.float64 and run["score"].tolist() == [2.5, -1000.0, 7.0]
    assert run["tag"].tolist() == ["sys", "sys", "sys"]
    assert list(read_trec_run(path)["doc_id"]) == ["NA", "d-01", "null"]


def test_qrels_columns_and_negative_labels(tmp_path):
    path = _write(tmp_path, "qrels.txt", "1 0 d1 2\n1 0 d2 -1\n2 iter d3 0\n")
    qrels = read_trec_qrels(path)
    assert list(qrels.columns) == ["query_id", "iteration", "doc_id", "relevance"]
    assert qrels["relevance"].dtype == np.int64 and qrels["relevance"].tolist() == [2, -1, 0]
    assert qrels["iteration"].tolist() == ["0", "0", "iter"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q Q0 d 1 1.0 t\nq Q0 d2 2 0.5\n", "{path}:2: expected 6 whitespace-separated fields (query_id Q0 doc_id rank score tag), got 5"),
        ("q Q0 d 1 1.0 t\n\nq Q0 d2 2 abc t\n", "{path}:3: score must be a number, got 'abc'"),
        ("q Q0 d 1 nan t\n", "{path}:1: score must be a finite number, got 'nan'"),
        ("q Q0 d 1 1.0 t\nq Q0 e 2 -inf t\n", "{path}:2: score must be a finite number, got '-inf'"),
        ("", "{path}: the file is empty"),
        (b"q Q0 d 1 1.0 t\nq Q0 \xe9 2 0.5 t\n", "{path}:2: the file is not UTF-8 text"),
    ],
)
def test_run_errors(tmp_path, text, message):
    path = _write(tmp_path, "run.txt", text)
    with pytest.raises(InputFileError) as info:
        read_trec_run(path)
    assert str(info.value) == message.format(path=path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 0 d1 1\n1 0 d2 1.5\n", "{path}:2: relevance must be an integer, got '1.5'"),
        ("1 0 d1 1\n1 0 d2 yes\n", "{path}:2: relevance must be an integer, got 'yes'"),
        ("1 0 d1 1\n1 0 d2\n", "{path}:2: expected 4 whitespace-separated fields (query_id iteration doc_id relevance), got 3"),
        ("1 0 d1 1\n1 0 d2 1 x\n", "{path}:2: expected 4 whitespace-separated fields (query_id iteration doc_id relevance), got 5"),
        ("\n\n", "{path}: the file is empty"),
    ],
)
def test_qrels_errors(tmp_path, text, message):
    path = _write(tmp_path, "qrels.txt", text)
    with pytest.raises(InputFileError) as info:
        read_trec_qrels(path)
    assert str(info.value) == message.format(path=path)


def test_unreadable_paths(tmp_path):
    missing = str(tmp_path / "missing.txt")
    with pytest.raises(InputFileError, match=r"missing.txt: no such file$"):
        read_trec_run(missing)
    with pytest.raises(InputFileError, match="is a folder, not a file"):
        read_trec_qrels(str(tmp_path))


def test_reads_trec_eval_test_files():
    run = read_trec_run(REFERENCE / "results.trunc")  # lines with extra fields after the tag
    assert len(run) == 584 and set(run["query_id"]) == {"301", "303"}
    qrels = read_trec_qrels(REFERENCE / "qrels.test")
    assert len(qrels) == 3681 and (qrels["relevance"] >= 1).sum() == 561
