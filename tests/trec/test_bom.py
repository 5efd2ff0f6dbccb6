"""A UTF-8 byte-order mark at the start of a qrels or run file is not part of the first query id
(docs/input-rules.md: "a byte-order mark is fine"): eval gives the same numbers as without it, on the
line reader and on the compiled reader, and import run stores the plain id. Before, eval counted a query
'\\ufeffQ001' apart (NDCG@10 0.8110 instead of 0.8177 on the demo's bm25 run) and import refused the file."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ndcg_labeling.cli import app
from ndcg_labeling.metrics import numba_available
from ndcg_labeling.trec import fast, files
from ndcg_labeling.trec.join import Options
from tests.trec.conftest import assert_same_as_line_reader, random_files

BOM = b"\xef\xbb\xbf"


def _with_bom(path, out):
    out.write_bytes(BOM + open(path, "rb").read())
    return str(out)


def test_eval_reads_past_a_bom(tmp_path):
    qrels, run, *_ = random_files(tmp_path, seed=3)
    plain = CliRunner().invoke(app, ["eval", "-q", "-m", "ndcg_cut.10", "-m", "map", qrels, run])
    both = CliRunner().invoke(app, ["eval", "-q", "-m", "ndcg_cut.10", "-m", "map", _with_bom(qrels, tmp_path / "bq"),
                                    _with_bom(run, tmp_path / "br")])
    assert plain.exit_code == 0 and both.exit_code == 0, both.output
    assert both.output == plain.output
    assert "\ufeff" not in both.output


def test_line_reader_drops_the_bom(tmp_path):
    qrels, run, *_ = random_files(tmp_path, seed=4)
    first = files.read_run(run).query_id[0]
    assert files.read_run(_with_bom(run, tmp_path / "br")).query_id[0] == first
    assert files.read_qrels(_with_bom(qrels, tmp_path / "bq")).query_id == files.read_qrels(qrels).query_id


@pytest.mark.skipif(not numba_available(), reason="numba not available")
def test_compiled_reader_drops_the_bom(tmp_path):
    qrels, run, *_ = random_files(tmp_path, seed=5)
    joined = fast.read_and_join(_with_bom(qrels, tmp_path / "bq"), _with_bom(run, tmp_path / "br"), Options())
    assert_same_as_line_reader(joined, qrels, run, Options())


def test_import_run_with_a_bom_stores_the_plain_id(tmp_path):
    db = f"sqlite:///{tmp_path / 'x.db'}"
    (tmp_path / "q.csv").write_text("query_id,text,query_type\nQ1,first,info\nQ2,second,info\n")
    (tmp_path / "d.csv").write_text("doc_id,title,body\nD1,a,x\nD2,b,y\n")
    (tmp_path / "r.run").write_bytes(BOM + b"Q1 Q0 D1 1 2.0 s\nQ1 Q0 D2 2 1.0 s\nQ2 Q0 D2 1 3.0 s\n")
    r = CliRunner()
    for args in (["db", "upgrade"], ["import", "queries", str(tmp_path / "q.csv")],
                 ["import", "documents", str(tmp_path / "d.csv")],
                 ["import", "run", str(tmp_path / "r.run"), "--system", "s"]):
        res = r.invoke(app, [*args, "--db", db])
        assert res.exit_code == 0, res.output
    listed = r.invoke(app, ["status", "--db", db, "--format", "json"])
    assert "\\ufeff" not in listed.output and "\ufeff" not in listed.output
    import sqlite3

    rows = sqlite3.connect(tmp_path / "x.db").execute("select external_id from queries order by 1").fetchall()
    assert rows == [("Q1",), ("Q2",)]
