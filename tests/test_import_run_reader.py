"""``import run``'s NumPy reader of plain TREC runs (``trec.columns`` + ``pipeline.import_columns``) gives
what the pandas path gives: the same distinct ids in order of first appearance, codes, scores, trec_eval's
order and, for a bad file, the same one-line error. The reference is the pandas path as it was (frames'
``read_trec_run``, the id rule per column, ``trec_ranking`` on ``trec_order``), run on the same files:
generated layouts with ties, queries in several blocks, non-ASCII and refused ids, bad fields, and the
files the NumPy reader leaves to pandas."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ndcg_labeling.errors import InputFileError
from ndcg_labeling.pipeline import import_columns
from ndcg_labeling.pipeline.import_columns import pandas_trec_run, ranked_trec_run
from ndcg_labeling.pipeline.importing import _read_run
from ndcg_labeling.trec import plain, trec_order
from ndcg_labeling.trec.columns import id_hashes, read_plain_run

LIMIT = 512


def _pandas_path(path: str, limit: int = LIMIT):
    """The TREC branch of ``_read_run`` before the NumPy reader (pandas' parser): the reference."""
    return pandas_trec_run(path, limit)


def _outcome(read, path: str):
    try:
        _table, query, doc, scores, order = read(path, LIMIT)
    except InputFileError as exc:
        return str(exc)
    return (query.ids, query.codes.tolist(), doc.ids, doc.codes.tolist(), scores.tolist(),
            np.signbit(scores).tolist(), order.tolist())


def _same(path: str) -> None:
    assert _outcome(ranked_trec_run, path) == _outcome(_pandas_path, path)


def _took_numpy(path: str) -> bool:
    return read_plain_run(Path(path).read_bytes()) is not None


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
def test_plain_runs_read_as_pandas_reads_them(tmp_path, data):
    path = _write(tmp_path, data)
    assert _took_numpy(path)
    _same(path)


@SETTINGS
@given(run_files(refused=True))
def test_a_refused_id_names_the_same_line(tmp_path, data):
    path = _write(tmp_path, data)
    assert _took_numpy(path)
    with pytest.raises(InputFileError):
        _pandas_path(path)
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


def test_non_plain_files_go_to_pandas(tmp_path):
    for data in (b"# c\nq1 Q0 d1 1 2 t\n", b'q1 Q0 "d" 1 2 t\n', b"q1 Q0 d1 1 2 t\rq1 Q0 d2 1 2 t\n",
                 b"\xef\xbb\xbfq1 Q0 d1 1 2 t\n", b"q1 Q0 d1 1_0 2 t\n", b"q1 Q0 d1 1 2_0 t\n"):
        assert not _took_numpy(_write(tmp_path, data))
    assert _took_numpy(_write(tmp_path, b" q1\tQ0  d1 1e0 2E1 t \r\n\nq2 Q0 d1 1 -.5 t"))


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


def test_a_hash_collision_goes_to_pandas(tmp_path, monkeypatch):
    # Every id hashes alike: the bytes tell them apart, and the pandas path reads the file.
    path = _write(tmp_path, b"q1 Q0 d1 1 2 t\nq2 Q0 d2 2 1 t\nq1 Q0 d3 2 1 t\n")
    monkeypatch.setattr(plain, "_ids", lambda m: plain._Ids(m.view(f"S{m.shape[1]}").ravel(),
                                                            np.zeros(len(m), dtype=np.uint64)))
    assert import_columns._plain_trec_run(path, Path(path).read_bytes(), LIMIT) is None
    _same(path)


def test_ids_keep_their_bytes_and_hashes(tmp_path):
    path = _write(tmp_path, "q1 Q0 dé 1 2 t\nq1 Q0 a-much-longer-document-id 2 1 t\nq1 Q0 dé 3 0 t\n".encode())
    _table, query, doc, _scores, _order = ranked_trec_run(path, LIMIT)
    assert doc.ids == ["dé", "a-much-longer-document-id"] and doc.text is not None and doc.hash is not None
    assert [t.decode() for t in doc.text.tolist()] == doc.ids
    assert doc.hash.tolist() == id_hashes(np.array([s.encode() for s in doc.ids])).tolist()
    assert query.hash is not None and query.hash.tolist() == id_hashes(np.array([b"q1"], dtype="S40")).tolist()


# --- the pieces -----------------------------------------------------------------------------------

TIE_IDS = st.text(alphabet=st.sampled_from(["a", "b", "é", "z", "A", "\u4e00", "😀", "-", "0"]), min_size=1,
                  max_size=14)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(TIE_IDS, TIE_IDS, st.sampled_from([0.0, 1.0, -1.0, 2.5])), min_size=1, max_size=60),
       st.sampled_from([0, 8, 40]))
def test_ranked_is_trec_order(lines, width):
    """plain._ranked (ties: 4-byte prefixes among still-tied lines) is trec_order, at any id width."""
    queries, docs = [q for q, _d, _s in lines], [d for _q, d, _s in lines]
    scores = np.array([s for *_x, s in lines])
    names, codes = np.unique(np.array([q.encode() for q in queries]), return_inverse=True)
    doc_text = np.array([d.encode() for d in docs])
    if width:
        doc_text = doc_text.astype(f"S{max(width, doc_text.dtype.itemsize)}")
    got = plain._ranked(codes.astype(np.int64), scores, doc_text, np.arange(len(names)))
    assert got.tolist() == trec_order(queries, docs, scores).tolist()


NUMBERS = st.one_of(st.floats(allow_nan=False, allow_infinity=False).map(repr),
                    st.integers(0, 18).flatmap(lambda k: st.decimals(allow_nan=False, allow_infinity=False, places=k)).map(str),
                    st.integers(-10**20, 10**20).map(str),
                    st.text(alphabet=st.sampled_from(list("0123456789.-+eE")), min_size=1, max_size=20))


@settings(max_examples=2000, deadline=None)
@given(st.lists(NUMBERS, min_size=1, max_size=20))
def test_decimals_parse_as_float(texts):
    """plain._decimals gives Python's float (correctly rounded, as trec_eval's strtod) for every number."""
    def number(text: str) -> float | None:
        try:
            return float(text)
        except ValueError:
            return None

    data = (" ".join(texts) + "\n").encode()
    buf = np.frombuffer(data, dtype=np.uint8)
    gaps = np.flatnonzero(buf <= 32)
    matrix = plain._text(plain._words(buf), np.r_[0, gaps[:-1] + 1], gaps)
    expected = [number(t) for t in texts]
    if matrix is None:
        return
    if None in expected:
        with pytest.raises(ValueError):
            plain._decimals(matrix)
        return
    got = plain._decimals(matrix)
    assert got.tolist() == expected and np.signbit(got).tolist() == np.signbit(expected).tolist()


def test_long_scores_parse_as_trec_eval_parses_them(tmp_path):
    """Scores of 16 or 17 significant digits (Python's repr) or with an exponent are parsed as trec_eval's
    strtod and ``eval`` parse them (Python's float, correctly rounded); pandas' default parser can be one
    unit in the last place off for such scores, so the pandas path reads with ``float_precision="round_trip"``."""
    texts = ["0.48667709617644916", "6.36961687321454e-05", "1.2345678901234567e+300", "0.1", "-2.5E-3",
             "0.04097352393619469", "0.016527635528529094", "0.9127555772777217"]  # the last three: pandas' default is 1 ulp off
    body = "".join(f"q Q0 d{i} {i + 1} {s} t\n" for i, s in enumerate(texts))
    path = _write(tmp_path, body.encode())
    _table, _query, _doc, scores, _order = ranked_trec_run(path, LIMIT)
    assert scores.tolist() == [float(s) for s in texts]
    # A seventh field (ignored, as trec_eval does) sends the run to the pandas path: the same values.
    longer = tmp_path / "seven_fields.txt"
    longer.write_text(body.replace(" t\n", " t extra\n"))
    _table, _query, _doc, scores, _order = ranked_trec_run(str(longer), LIMIT)
    assert scores.tolist() == [float(s) for s in texts]
