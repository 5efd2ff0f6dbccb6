"""Issue 36: one rule for a TREC run's rank column: it is ignored, whatever it holds (trec_eval ranks by
score and never reads it). A run whose ranks are ``x``, ``1.5``, ``NaN``, ``1e309``, ``1e20`` or ``-3``
evaluates and imports exactly like the same run with ranks 1, 2, 3."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from tests.conftest import invoke

QRELS = "q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\nq2 0 d1 1\nq2 0 d4 3\n"
LINES = [("q1", "d1", 1.5), ("q1", "d2", 2.5), ("q1", "d3", 0.5), ("q2", "d4", 3.0), ("q2", "d1", 1.0)]
ODD_RANKS = ["x", "1.5", "NaN", "1e309", "1e20", "-3"]


def _run(tmp_path, name, ranks, comment=False):
    path = tmp_path / name
    body = "".join(f"{q} Q0 {d} {r} {s} tag\n" for (q, d, s), r in zip(LINES, ranks, strict=True))
    path.write_text(("# a comment\n" if comment else "") + body)
    return path


@pytest.mark.parametrize("comment", [False, True], ids=["plain", "with-comment"])
@pytest.mark.parametrize("rank", ODD_RANKS)
def test_eval_ignores_the_rank(runner, tmp_path, rank, comment):
    qrels = tmp_path / "qrels"
    qrels.write_text(QRELS)
    plain = _run(tmp_path, "plain.run", ["1", "2", "3", "1", "2"])
    odd = _run(tmp_path, "odd.run", [rank] * len(LINES), comment=comment)
    expected = invoke(runner, None, "eval", str(qrels), str(plain), "--format", "json")
    got = invoke(runner, None, "eval", str(qrels), str(odd), "--format", "json")
    assert expected.exit_code == 0 and got.exit_code == 0, got.output
    assert got.stdout == expected.stdout


@pytest.mark.parametrize("rank", ODD_RANKS)
def test_import_run_ignores_the_rank(runner, sqlite_db, tmp_path, rank):
    path = _run(tmp_path, "odd.run", [rank] * len(LINES))
    result = invoke(runner, sqlite_db, "import", "run", str(path), "--system", "s", "--format", "trec")
    assert result.exit_code == 0, result.output
    with sqlite_db.engine.connect() as conn:
        stored = conn.execute(text("SELECT q.external_id, d.external_id, r.rank FROM ranking_entries r "
                                   "JOIN queries q ON q.id = r.query_id JOIN documents d ON d.id = r.document_id "
                                   "ORDER BY 1, 3")).all()
    # ranked by score, descending, within each query
    assert [tuple(r) for r in stored] == [("q1", "d2", 1), ("q1", "d1", 2), ("q1", "d3", 3), ("q2", "d4", 1),
                                          ("q2", "d1", 2)]
