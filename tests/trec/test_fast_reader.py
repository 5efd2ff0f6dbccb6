"""The compiled reader of large files gives the line reader's lists and errors, byte for byte: ties,
-M, -J, -c, comments, odd spacing, long and exponent scores, '#' inside ids, duplicates, fallbacks."""

from __future__ import annotations

import numpy as np
import pytest

from ndcg_labeling.errors import InputFileError, NdcgLabelingError
from ndcg_labeling.metrics import numba_available
from ndcg_labeling.trec import fast
from ndcg_labeling.trec.join import Options
from tests.trec.conftest import OPTIONS, assert_same_as_line_reader, random_files

pytestmark = pytest.mark.skipif(not numba_available(), reason="numba not available")


def _same(qrels: str, run: str, options: Options) -> None:
    assert_same_as_line_reader(fast.read_and_join(qrels, run, options), qrels, run, options)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("options", OPTIONS)
def test_random_files(tmp_path, seed, options):
    qrels, run, *_ = random_files(tmp_path, seed=seed, shuffle=seed % 2 == 1)
    _same(qrels, run, options)


def test_odd_but_valid_layouts(tmp_path):
    (tmp_path / "q").write_text("# c\n1\t0  D#1 2\n  1 0 d2 0\r\n2 0 x -1\n\n2 0 y 1\n")
    (tmp_path / "r").write_text("1 Q0 D#1 1 0.48667709617644916 t\n#x\n1  Q0\td2 2 4.8667709617644916e-1 t extra\n"
                                "2 Q0 y 1 1e-3 t\n2 Q0 x 2 0.001 t\n2 Q0 z 3 +0.0010 t\n2 Q0 w 4 -0 last\n")
    for options in OPTIONS:
        _same(str(tmp_path / "q"), str(tmp_path / "r"), options)


@pytest.mark.parametrize(("qrels", "run"), [
    ("1 0 a 1\n", "1 Q0 a 1 2.0\n"),  # short run line
    ("1 0 a 1 x\n", "1 Q0 a 1 2.0 t\n"),  # 5-field qrels
    ("1 0 a 1\n", "1 Q0 a 1 nan t\n"),
    ("1 0 a 1\n", "1 Q0 a 1e0 2 t\n"),  # a rank the scanner leaves to the line reader
    ("1 0 é 1\n", "1 Q0 é 1 2 t\n"),  # non-ASCII ids: the line reader checks UTF-8
])
def test_unusual_files_go_to_the_line_reader(tmp_path, qrels, run):
    (tmp_path / "q").write_text(qrels)
    (tmp_path / "r").write_text(run)
    assert fast.read_and_join(str(tmp_path / "q"), str(tmp_path / "r"), Options()) is None


def test_duplicates_name_the_line(tmp_path):
    (tmp_path / "q").write_text("1 0 a 1\n2 0 a 1\n")
    (tmp_path / "r").write_text("1 Q0 a 1 2.0 t\n2 Q0 c 1 1.0 t\n1 Q0 b 2 1.0 t\n#\n2 Q0 c 3 0.2 t\n1 Q0 a 3 0.5 t\n")
    with pytest.raises(InputFileError) as info:
        fast.read_and_join(str(tmp_path / "q"), str(tmp_path / "r"), Options())
    assert str(info.value) == f"{tmp_path / 'r'}:5: document c appears twice for query 2 in the run"
    (tmp_path / "q").write_text("1 0 a 1\n3 0 x 1\n3 0 y 0\n3 0 x 2\n")
    with pytest.raises(InputFileError, match=r"q:4: document x appears twice for query 3 in the qrels$"):
        fast.read_and_join(str(tmp_path / "q"), str(tmp_path / "r"), Options())


def test_trec_order_is_trec_evals_ranking():
    from ndcg_labeling.trec import trec_order

    order = trec_order(["2", "1", "1", "1", "10", "1"], ["a", "b", "c", "á", "x", "d"], [1.0, 2.0, 2.0, 2.0, 5.0, 3.0])
    # query "1" before "10" before "2"; in "1": 3.0 first, then the 2.0 tie by id descending (á > c > b)
    assert order.tolist() == [5, 3, 2, 1, 4, 0]


def _fnv32(text: bytes) -> int:
    h = 14695981039346656037
    for b in text:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h & 0xFFFFFFFF


def test_documents_with_one_32_bit_hash_stay_apart(tmp_path):
    # The scanner keeps 32-bit hashes of document ids; these two ids share one. A match needs equal
    # bytes too, and a duplicate is found even with the other id between its two lines in hash order.
    a, b = "a732372a1d", "8e45e1b430"
    assert _fnv32(a.encode()) == _fnv32(b.encode())
    (tmp_path / "q").write_text(f"1 0 {b} 2\n1 0 x 1\n")
    (tmp_path / "r").write_text(f"1 Q0 {a} 1 3 t\n1 Q0 {b} 2 2 t\n1 Q0 x 3 1 t\n")
    _same(str(tmp_path / "q"), str(tmp_path / "r"), Options())
    joined = fast.read_and_join(str(tmp_path / "q"), str(tmp_path / "r"), Options())
    assert joined is not None and joined.lists.rel.tolist() == [[-1.0, 2.0, 1.0]]
    (tmp_path / "r").write_text(f"1 Q0 {a} 1 3 t\n1 Q0 {b} 2 2 t\n1 Q0 {a} 3 1 t\n")
    with pytest.raises(InputFileError, match=r"r:3: document a732372a1d appears twice for query 1 in the run$"):
        fast.read_and_join(str(tmp_path / "q"), str(tmp_path / "r"), Options())


# Kept from the NumPy reader's tests (its twin comparisons went with it): what eval's reader gives on
# small files, checked against known lists, whichever reader the size picks.

def test_sorted_run_takes_trec_evals_order(tmp_path):
    # Each query's lines together with scores falling, queries not in byte order; ties by id descending.
    from ndcg_labeling.trec import read_and_join

    (tmp_path / "q").write_text("b 0 x 1\nb 0 y 2\na 0 z 1\na 0 w 0\n")
    (tmp_path / "r").write_text("b Q0 y 1 3 t\nb Q0 x 2 3 t\nb Q0 v 3 1 t\na Q0 w 1 5 t\na Q0 z 2 5 t\n")
    joined = read_and_join(str(tmp_path / "q"), str(tmp_path / "r"), Options())
    assert joined.query_ids == ["a", "b"]
    np.testing.assert_array_equal(joined.lists.rel, [[1.0, 0.0, np.nan], [2.0, 1.0, -1.0]])
    assert joined.lists.rel.tolist()[1] == fast.read_and_join(str(tmp_path / "q"), str(tmp_path / "r"),
                                                              Options()).lists.rel.tolist()[1]


def test_no_judged_query(tmp_path):
    from ndcg_labeling.trec import read_and_join

    (tmp_path / "q").write_text("1 0 a 1\n")
    (tmp_path / "r").write_text("2 Q0 a 1 2.0 t\n")
    for read in (read_and_join, fast.read_and_join):
        with pytest.raises(NdcgLabelingError, match="no query of .* has relevance judgments"):
            read(str(tmp_path / "q"), str(tmp_path / "r"), Options())


def test_a_bad_qrels_line_is_reported_before_a_missing_run(tmp_path):
    from ndcg_labeling.trec import read_and_join

    (tmp_path / "q").write_text("1 0 a x\n")
    with pytest.raises(InputFileError, match=r"q:1: relevance must be an integer, got 'x'$"):
        read_and_join(str(tmp_path / "q"), str(tmp_path / "missing"), Options())
    (tmp_path / "q").write_text("1 0 a 1\n")
    with pytest.raises(InputFileError, match=r"missing: no such file$"):
        read_and_join(str(tmp_path / "q"), str(tmp_path / "missing"), Options())


@pytest.mark.parametrize("score", ["1e", "1e5x", "1e400", "-1E999"])
def test_exponent_scores_that_are_no_finite_number_go_to_the_line_reader(tmp_path, score):
    # The scanner leaves scores with an exponent to NumPy; one that is no finite number is the line
    # reader's to word (it was a ValueError, or an infinite score taken as it was).
    (tmp_path / "q").write_text("1 0 a 1\n")
    (tmp_path / "r").write_text(f"1 Q0 a 1 2 t\n1 Q0 b 2 {score} t\n")
    assert fast.read_and_join(str(tmp_path / "q"), str(tmp_path / "r"), Options()) is None
    assert fast.read_run(str(tmp_path / "r"), 512) is None
