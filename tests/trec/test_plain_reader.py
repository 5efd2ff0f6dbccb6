"""The NumPy reader of plain files gives the line reader's lists and errors, byte for byte: ties, -M,
-J, -c, odd spacing, exponent scores, '#' inside ids, non-ASCII ids, duplicates, and the files it
leaves to the line reader."""

from __future__ import annotations

import numpy as np
import pytest

from ndcg_labeling.errors import InputFileError, NdcgLabelingError
from ndcg_labeling.trec import plain, read_and_join
from ndcg_labeling.trec.join import Options
from tests.trec.conftest import OPTIONS, assert_same_as_line_reader, random_files


def _plain(qrels: str, run: str, options: Options):
    with open(qrels, "rb") as fq, open(run, "rb") as fr:
        return plain.read_and_join(fq.read(), fr.read(), options, qrels_path=qrels, run_path=run)


def _same(qrels: str, run: str, options: Options) -> None:
    assert_same_as_line_reader(_plain(qrels, run, options), qrels, run, options)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("options", OPTIONS)
def test_random_files(tmp_path, seed, options):
    qrels, run, *_ = random_files(tmp_path, seed=seed, shuffle=seed % 2 == 1)
    _same(qrels, run, options)


def test_sorted_run_takes_the_same_order(tmp_path):
    # Each query's lines together with scores falling (the no-sort path), queries not in byte order.
    (tmp_path / "q").write_text("b 0 x 1\nb 0 y 2\na 0 z 1\na 0 w 0\n")
    (tmp_path / "r").write_text("b Q0 y 1 3 t\nb Q0 x 2 3 t\nb Q0 v 3 1 t\na Q0 w 1 5 t\na Q0 z 2 5 t\n")
    _same(str(tmp_path / "q"), str(tmp_path / "r"), Options())
    joined = _plain(str(tmp_path / "q"), str(tmp_path / "r"), Options())
    assert joined is not None and joined.query_ids == ["a", "b"]
    np.testing.assert_array_equal(joined.lists.rel, [[1.0, 0.0, np.nan], [2.0, 1.0, -1.0]])  # ties: id descending


def test_odd_but_valid_layouts(tmp_path):
    (tmp_path / "q").write_text("1\t0  D#1 2\n  1 0 d2 0\r\n2 0 x -1\n\n2 0 y 1\n2 0 ü 3\n")
    (tmp_path / "r").write_text("1 Q0 D#1 1 0.48667709617644916 t\n1  Q0\td2 2 4.8667709617644916e-1 t\n"
                                "2 Q0 y 1 1e-3 t\n2 Q0 x 2 0.001 t\n2 Q0 z 3 +0.0010 t\n2 Q0 ü 4 -0 last\n"
                                "2 Q0 ý 5 -0.0 last\n")
    for options in OPTIONS:
        _same(str(tmp_path / "q"), str(tmp_path / "r"), options)


@pytest.mark.parametrize(("qrels", "run"), [
    ("# c\n1 0 a 1\n", "1 Q0 a 1 2.0 t\n"),  # a comment line
    ("1 0 a 1\n", "1 Q0 a 1 2.0\n"),  # short run line
    ("1 0 a 1\n", "1 Q0 a 1 2.0 t x\n"),  # a seventh field
    ("1 0 a 1 x\n", "1 Q0 a 1 2.0 t\n"),  # 5-field qrels
    ("1 0 a 1\n", "1 Q0 a 1 nan t\n"),
    ("1 0 a 1\n", "1 Q0 a 1 1e999 t\n"),
    ("1 0 a 1\n", "1 Q0 a 1.5 2 t\n"),
    ("1 0 a 1.0\n", "1 Q0 a 1 2 t\n"),  # a label the line reader parses
    ("1 0 a\x1f 1\n", "1 Q0 a 1 2 t\n"),  # str.split splits at 0x1F
    ("1 0 a 1\n", "1 Q0 \xff 1 2 t\n"),  # not UTF-8
    ("1 0 a 1\n", "1 Q0 a\x00 1 2 t\n"),
    ("", "1 Q0 a 1 2 t\n"),
    ("1 0 " + "a" * 600 + " 1\n", "1 Q0 a 1 2 t\n"),  # an id longer than MAX_ID_BYTES
])
def test_unusual_files_go_to_the_line_reader(tmp_path, qrels, run):
    (tmp_path / "q").write_bytes(qrels.encode("latin-1") if "\xff" in qrels else qrels.encode())
    (tmp_path / "r").write_bytes(run.encode("latin-1") if "\xff" in run else run.encode())
    assert _plain(str(tmp_path / "q"), str(tmp_path / "r"), Options()) is None


def test_exponent_ranks_are_integers(tmp_path):
    (tmp_path / "q").write_text("1 0 a 1\n")
    (tmp_path / "r").write_text("1 Q0 a 1e0 2 t\n1 Q0 b -3 1 t\n")
    _same(str(tmp_path / "q"), str(tmp_path / "r"), Options())


def test_duplicates_name_the_line(tmp_path):
    (tmp_path / "q").write_text("1 0 a 1\n2 0 a 1\n")
    (tmp_path / "r").write_text("1 Q0 a 1 2.0 t\n2 Q0 c 1 1.0 t\n1 Q0 b 2 1.0 t\n\n2 Q0 c 3 0.2 t\n1 Q0 a 3 0.5 t\n")
    with pytest.raises(InputFileError) as info:
        _plain(str(tmp_path / "q"), str(tmp_path / "r"), Options())
    assert str(info.value) == f"{tmp_path / 'r'}:5: document c appears twice for query 2 in the run"
    (tmp_path / "q").write_text("1 0 a 1\n3 0 x 1\n3 0 y 0\n3 0 x 2\n3 0 x 0\n")
    with pytest.raises(InputFileError, match=r"q:4: document x appears twice for query 3 in the qrels$"):
        _plain(str(tmp_path / "q"), str(tmp_path / "r"), Options())


def test_no_judged_query(tmp_path):
    (tmp_path / "q").write_text("1 0 a 1\n")
    (tmp_path / "r").write_text("2 Q0 a 1 2.0 t\n")
    with pytest.raises(NdcgLabelingError, match="no query of .* has relevance judgments"):
        _plain(str(tmp_path / "q"), str(tmp_path / "r"), Options())


def test_hash_collision_goes_to_the_line_reader(tmp_path, monkeypatch):
    # Every document hashes alike: the bytes tell them apart, and the line reader takes the files.
    monkeypatch.setattr(plain, "_ids", lambda m: plain._Ids(m.view(f"S{m.shape[1]}").ravel(),
                                                            np.zeros(len(m), dtype=np.uint64)))
    (tmp_path / "q").write_text("1 0 a 1\n1 0 b 2\n")
    (tmp_path / "r").write_text("1 Q0 b 1 2.0 t\n1 Q0 c 2 1.0 t\n")
    assert _plain(str(tmp_path / "q"), str(tmp_path / "r"), Options()) is None
    joined = read_and_join(str(tmp_path / "q"), str(tmp_path / "r"), Options())
    assert joined.lists.rel.tolist() == [[2.0, -1.0]]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("options", OPTIONS)
def test_random_files_in_run_order(tmp_path, seed, options):
    # Runs as retrieval tools write them: a query's lines together, scores falling (no sort needed).
    qrels, run, *_ = random_files(tmp_path, seed=seed)
    lines = [line.split() for line in open(run).read().splitlines()]
    first = {}
    for fields in lines:
        first.setdefault(fields[0], len(first))
    lines.sort(key=lambda f: (first[f[0]], -float(f[4])))
    with open(run, "w") as fh:
        fh.write("".join(" ".join(f) + "\n" for f in lines))
    _same(qrels, run, options)


def test_a_bad_qrels_line_is_reported_before_a_missing_run(tmp_path):
    (tmp_path / "q").write_text("1 0 a x\n")
    with pytest.raises(InputFileError, match=r"q:1: relevance must be an integer, got 'x'$"):
        read_and_join(str(tmp_path / "q"), str(tmp_path / "missing"), Options())
    (tmp_path / "q").write_text("1 0 a 1\n")
    with pytest.raises(InputFileError, match=r"missing: no such file$"):
        read_and_join(str(tmp_path / "q"), str(tmp_path / "missing"), Options())
