"""``eval -R qrels_jg`` (judgment groups, the ``*_avgjg`` measures) against trec_eval 10.0's own test
output and, value for value, against trec_eval built to print ``%.17g`` (tests/data/trec_eval/made)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ndcg_labeling.cli import app

DATA = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
MADE = DATA / "made"
runner = CliRunner()


def _eval(*args: str):
    return runner.invoke(app, ["eval", *args])


def test_trec_evals_own_qrels_jg_output():
    # trec_eval's test Makefile: -m qrels_jg -q -R qrels_jg qrels.123 results.test | diff - out.test.qrels_jg
    result = _eval("-m", "qrels_jg", "-q", "-R", "qrels_jg", str(DATA / "qrels.123"), str(DATA / "results.test"))
    assert result.exit_code == 0, result.output
    assert result.stdout == (DATA / "out.test.qrels_jg").read_text()


@pytest.mark.parametrize(("flags", "expected"), [(["-c"], "jg.qrels_jg.17g"),
                                                 (["-c", "-J", "-l2"], "jg.Jl2.qrels_jg.17g")])
def test_qrels_jg_bit_for_bit(flags, expected):
    # Groups 0/1/A/b2, one to three per query, lines shuffled; q4 judged but not in the run (-c).
    result = _eval("-q", *flags, "-R", "qrels_jg", "-m", "qrels_jg", "--format", "csv",
                   str(MADE / "jg.qrels"), str(MADE / "jg.run"))
    assert result.exit_code == 0, result.output
    ours = list(csv.reader(io.StringIO(result.stdout)))[1:]
    theirs = [line.split("\t") for line in (MADE / expected).read_text().splitlines()]
    assert len(ours) == len(theirs) > 100
    for (m, q, x), (tm, tq, y) in zip(ours, theirs, strict=True):
        assert (m, q) == (tm.strip(), tq)
        assert x == y if m == "runid" else float(x) == float(y), (m, q, x, y)


@pytest.mark.parametrize(("args", "message"), [
    (["-R", "qrels_jg", "-m", "map"], "Error: measure map needs -R qrels (trec_eval cannot calculate it"),
    (["-m", "map_avgjg"], "Error: measure map_avgjg needs -R qrels_jg"),
])
def test_measures_of_the_other_format_are_refused(args, message):
    result = _eval(*args, str(DATA / "qrels.123"), str(DATA / "results.test"))
    assert result.exit_code == 1
    assert result.stderr.startswith(message)


def test_duplicate_in_one_group_names_query_and_group(tmp_path):
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 A d1 1\nq1 B d1 0\nq1 A d1 0\n")
    run = tmp_path / "run"
    run.write_text("q1 Q0 d1 1 1.0 t\n")
    result = _eval("-R", "qrels_jg", "-m", "map_avgjg", str(qrels), str(run))
    assert result.exit_code == 1
    assert result.stderr.strip() == f"Error: {qrels}:3: document d1 appears twice for query q1 judgment group A in the qrels"
