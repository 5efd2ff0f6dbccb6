"""``import run``'s TREC reading (``labels.coded_ids.ranked_trec_run``): the compiled reader of
large runs (``trec.fast.read_run``) gives what the line reader (``trec.files``), the reference, gives:
the same distinct ids in order of first appearance, codes, scores, trec_eval's order and, for a bad file,
the same one-line error; generated layouts with ties, queries in several blocks, non-ASCII and refused
ids, bad fields, and the files the compiled reader leaves to the line reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ndcg_labeling.errors import InputFileError
from ndcg_labeling.labels.coded_ids import ranked_trec_run
from ndcg_labeling.labels.importing import _read_run
from ndcg_labeling.metrics import numba_available
from ndcg_labeling.trec import fast

LIMIT = 512


def _read(path: str, compiled: bool):
    """``ranked_trec_run`` with the compiled reader taken whatever the size (or never)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fast, "worth_it", lambda *paths: compiled)
        return ranked_trec_run(path, LIMIT)


def _outcome(path: str, compiled: bool):
    try:
        _table, query, doc, scores, order = _read(path, compiled)
    except InputFileError as exc:
        return str(exc)
    return (query.ids, query.codes.tolist(), doc.ids, doc.codes.tolist(), scores.tolist(),
            np.signbit(scores).tolist(), order.tolist())


def _same(path: str) -> None:
    if numba_available():
        assert _outcome(path, True) == _outcome(path, False)


def _took_compiled(path: str) -> bool:
    return fast.read_run(path, LIMIT) is not None


# --- generated files ------------------------------------------------------------------------------

PLAIN_IDS = st.text(alphabet=st.sampled_from(["a", "b", "Z", "0", "9", "-", "_", "#", "é", "中", "😀", "ü"]),
                    min_size=1, max_size=6)
REFUSED_IDS = st.sampled_from(["d\u200b1", "x\x7f", "n\xa0b", "l\u2028s", "e\x85", "\u00ad"])
SCORES = st.sampled_from(["1", "0.5", "-2.25", "3.000", "+.5", "7.", "-0", "0", "1e-3", "2E2", "0.001", "12345.678",
                          "0.1", "0.10", "1.0e0", "-1.5e+1", "999999999999999", "0.000000000000001"])
RANKS = st.sampled_from(["1", "2", "10", "1e0", "2.0", "-3", "0"])
BAD_FIELDS = st.sampled_from([("rank", "1.5"), ("rank", "x"), ("rank", "1_0"), ("rank", "inf"), ("score", "nan"),
                              ("score", "inf"), ("score", "1_0"), ("score", "abc"), ("score", "1e400"), ("score", "."),
                              ("score", "0x10"), ("score", "1e"), ("score", "١"), ("fields", "5"), ("fields", "7")])


@st.composite
def run_files(draw: st.DrawFn, refused: bool = False, bad: bool = False) -> bytes:
    """A run file: queries in one or several blocks, few scores (ties), one or several layouts (a query
id starting with '#' would make a comment line: the odd files below have them)."""
    queries = draw(st.lists(PLAIN_IDS.filter(lambda q: q[0] != "#"), min_size=1, max_size=5, unique=True))
    docs = draw(st.lists(PLAIN_IDS, min_size=1, max_size=12, unique=True))
    n = draw(st.integers(1, 40))
    rows = [[draw(st.sampled_from(queries)), "Q0", draw(st.sampled_from(docs)), draw(RANKS), draw(SCORES),
             draw(st.sampled_from(["t", "run-1", "é"]))] for _ in range(n)]
    if draw(st.booleans()):  # retrieval tools' layout: a query's lines together, scores falling
        rows.sort(key=lambda r: (queries.index(r[0]), -float(r[4])))
    if refused:
        at = draw(st.integers(0, n - 1))
        rows[at][draw(st.sampled_from([0, 2]))] = draw(REFUSED_IDS)
    if bad:
        at = draw(st.integers(0, n - 1))
        what, value = draw(BAD_FIELDS)
        if what == "fields":
            rows[at] = rows[at][:5] if value == "5" else [*rows[at], "extra"]
        else:
            rows[at][3 if what == "rank" else 4] = value
    separators = draw(st.sampled_from([[" "], ["\t"], [" ", "\t", "  ", " \t "]]))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    lines = []
    for row in rows:
        text = "".join(f + draw(st.sampled_from(separators)) for f in row[:-1]) + row[-1]
        if draw(st.integers(0, 9)) == 0:
            text = draw(st.sampled_from([" ", "\t"])) + text + draw(st.sampled_from([" ", "\t"]))
        lines.append(text + ending)
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from(["\n", " \n", "\r\n"])))
    body = "".join(lines)
    if draw(st.integers(0, 9)) == 0:
        body = body.rstrip("\r\n")  # no newline at the end
    return body.encode()


def _write(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "run.txt"
    path.write_bytes(data)
    return str(path)


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(run_files())
def test_runs_read_as_the_line_reader_reads_them(tmp_path, data):
    _same(_write(tmp_path, data))


@SETTINGS
@given(run_files(refused=True))
def test_a_refused_id_names_the_same_line(tmp_path, data):
    path = _write(tmp_path, data)
    with pytest.raises(InputFileError):
        _read(path, False)
    _same(path)


@SETTINGS
@given(run_files(bad=True))
def test_bad_lines_keep_their_messages(tmp_path, data):
    _same(_write(tmp_path, data))


@pytest.mark.parametrize("data", [
    b"# a comment\nq1 Q0 d1 1 2 t\n",
    b"q1 Q0 d1 1 2 t\n  # indented comment\nq1 Q0 d2 2 1 t\n",
    b'q1 Q0 "d 1" 1 2 t\n',  # pandas reads a quoted field
    b'q1 Q0 d"1 1 2 t\n',
    b"q1 Q0 d\x0b1 1 2 t\n",  # vertical tab, form feed: not blanks to pandas
    b"q1 Q0 d\x0c1 1 2 t\n",
    b"q1 Q0 d1\r1 2 t\n",  # a lone carriage return ends a line for pandas
    b"q1 Q0 d1 1 2 t\rq1 Q0 d2 2 1 t\n",
    b"\xef\xbb\xbfq1 Q0 d1 1 2 t\n",  # a byte-order mark
    b"q1 Q0 d\xff 1 2 t\n",  # not UTF-8
    b"q1 Q0 d\x001 1 2 t\n",
    b"q1 Q0 d\x1f1 1 2 t\n",
    b"q1 Q0 " + b"d" * 513 + b" 1 2 t\n",  # an id of more than 512 bytes
    b"q1 Q0 " + "é".encode() * 300 + b" 1 2 t\n",  # 600 bytes, 300 characters: valid
    b"q1 Q0 " + b"d" * 512 + b" 1 2 t\n",
    b"", b"\n\n", b"q1 Q0 d1 1 2 t x\n", b"q1 Q0 d1 1 2\n",
    b"q1 Q0 d1 1 2 t\nq1 Q0 d1 2 1 t\n",  # a duplicate: reported after reading, by import_run
])
def test_odd_files(tmp_path, data):
    _same(_write(tmp_path, data))


@pytest.mark.skipif(not numba_available(), reason="numba not available")
def test_unusual_runs_go_to_the_line_reader(tmp_path):
    for data in (b"q1 Q0 d\xc3\xa9 1 2 t\n", b"q1 Q0 d1 1.5 2 t\n", b"q1 Q0 d1 1 2\n", b"q1 Q0 d1 1 x t\n",
                 b"q1 Q0 d\x001 1 2 t\n", b"q1 Q0 d\x7f 1 2 t\n", b"q\x01 Q0 d 1 2 t\n", b"", b"\n"):
        assert not _took_compiled(_write(tmp_path, data))
    assert _took_compiled(_write(tmp_path, b"# c\n q1\tQ0  d1 1 2E1 t \r\n\nq2 Q0 d1 1 -.5 t x"))


def test_first_bad_line_in_file_order(tmp_path):
    # Query ids are checked before document ids (as the pandas path checks its columns); within a column
    # the first line holding a refused id is named, whichever id it is.
    path = _write(tmp_path, "q1 Q0 d1 1 2 t\nq1 Q0 b\u200b 2 1 t\nq\xa0 Q0 d3 1 2 t\nq1 Q0 a\x7f 3 0 t\n".encode())
    with pytest.raises(InputFileError) as info:
        ranked_trec_run(path, LIMIT)
    assert str(info.value) == (f"{path}:3: query_id 'q\\xa0' contains white space (U+00A0); ids are printable "
                               "text without white space")
    path = _write(tmp_path, "q1 Q0 d1 1 2 t\n\nq1 Q0 b\u200b 2 1 t\nq1 Q0 a\x7f 3 0 t\nq1 Q0 b\u200b 4 1 t\n".encode())
    with pytest.raises(InputFileError, match=r"run.txt:3: doc_id 'b\\u200b' contains"):
        ranked_trec_run(path, LIMIT)
    _same(path)


def test_the_run_lines_of_import_run(tmp_path):
    path = _write(tmp_path, b"b Q0 x 1 3 t\nb Q0 y 2 3 t\na Q0 z 1 5 t\nb Q0 v 3 1 t\na Q0 w 9 5 t\n")
    _table, lines = _read_run(path, None)
    assert lines.query.ids == ["b", "a"] and lines.doc.ids == ["x", "y", "z", "v", "w"]
    # trec_eval's order: query id, score descending, document id descending within a tie
    assert [lines.doc.ids[c] for c in lines.doc.codes] == ["z", "w", "y", "x", "v"]
    assert lines.rank.tolist() == [1, 2, 1, 2, 3] and lines.row.tolist() == [2, 4, 1, 0, 3]
    assert lines.score.tolist() == [5.0, 5.0, 3.0, 3.0, 1.0]


def test_long_scores_parse_as_trec_eval_parses_them(tmp_path):
    """Scores of 16 or 17 significant digits (Python's repr) or with an exponent are parsed as trec_eval's
    strtod and ``eval`` parse them (Python's float, correctly rounded)."""
    texts = ["0.48667709617644916", "6.36961687321454e-05", "1.2345678901234567e+300", "0.1", "-2.5E-3",
             "0.04097352393619469", "0.016527635528529094", "0.9127555772777217"]  # the last three: pandas' default is 1 ulp off
    body = "".join(f"q Q0 d{i} {i + 1} {s} t\n" for i, s in enumerate(texts))
    path = _write(tmp_path, body.encode())
    _table, _query, _doc, scores, _order = ranked_trec_run(path, LIMIT)
    assert scores.tolist() == [float(s) for s in texts]
    # A seventh field is ignored, as trec_eval does: the same values, from either reader.
    longer = tmp_path / "seven_fields.txt"
    longer.write_text(body.replace(" t\n", " t extra\n"))
    for compiled in (False, True) if numba_available() else (False,):
        _table, _query, _doc, scores, _order = _read(str(longer), compiled)
        assert scores.tolist() == [float(s) for s in texts]
