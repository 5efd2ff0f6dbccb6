"""``eval -R prefs`` / ``-R qrels_prefs`` (the ``prefs_*`` measures) and ``yaap`` against trec_eval
10.0's own test outputs and, value for value, trec_eval built to print ``%.17g``."""

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


def _same_values(stdout: str, expected: Path, at_least: int) -> None:
    ours = list(csv.reader(io.StringIO(stdout)))[1:]
    theirs = [line.split("\t") for line in expected.read_text().splitlines()]
    assert len(ours) == len(theirs) >= at_least
    for (m, q, x), (tm, tq, y) in zip(ours, theirs, strict=True):
        assert (m, q) == (tm.strip(), tq)
        assert x == y if m == "runid" else float(x) == float(y), (m, q, x, y)


def test_trec_evals_own_prefs_output():
    # trec_eval's test Makefile: -m all_prefs -q -R prefs prefs.test prefs.results.test | diff - out.test.prefs
    # (ECs, preference arrays with transitive preferences, queries without retrieved or relevant docs)
    result = _eval("-m", "all_prefs", "-q", "-R", "prefs", str(DATA / "prefs.test"), str(DATA / "prefs.results.test"))
    assert result.exit_code == 0, result.output
    assert result.stdout == (DATA / "out.test.prefs").read_text()


def test_trec_evals_own_qrels_prefs_output():
    result = _eval("-m", "all_prefs", "-q", "-R", "qrels_prefs", str(DATA / "qrels.test"), str(DATA / "results.test"))
    assert result.exit_code == 0, result.output
    assert result.stdout == (DATA / "out.test.qrels_prefs").read_text()


def test_prefs_set_is_trec_evals():
    result = _eval("-m", "prefs", "-R", "prefs", str(DATA / "prefs.test"), str(DATA / "prefs.results.test"))
    names = [line.split("\t")[0].strip() for line in result.stdout.splitlines()]
    assert names == ["runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret",
                     "prefs_simp", "prefs_pair", "prefs_avgjg"]


def test_random_prefs_bit_for_bit():
    # 1-3 judgment groups per query, 1-3 subgroups each (consistent levels), ties in score (ranked
    # by document id ascending here, as trec_eval's preference code does), -c with a query not in
    # the run, -M 10.
    result = _eval("-q", "-c", "-M", "10", "-R", "prefs", "-m", "all_prefs", "--format", "csv",
                   str(MADE / "prefs.random"), str(MADE / "prefs.random.run"))
    assert result.exit_code == 0, result.output
    _same_values(result.stdout, MADE / "prefs.random.cM10.17g", 90)


def test_random_qrels_prefs_bit_for_bit(tmp_path):
    # made/bits.qrels without its negative labels (with them trec_eval's prefs_avgjg_Rnonrel reads
    # past the end of its lowest class: docs/eval.md).
    qrels = tmp_path / "qrels"
    qrels.write_text("".join(line + "\n" for line in (MADE / "bits.qrels").read_text().splitlines()
                             if int(line.split()[3]) >= 0))
    result = _eval("-q", "-c", "-R", "qrels_prefs", "-m", "all_prefs", "--format", "csv", str(qrels),
                   str(MADE / "bits.run"))
    assert result.exit_code == 0, result.output
    _same_values(result.stdout, MADE / "bits.qrels_prefs.17g", 120)


def test_yaap_bit_for_bit():
    # trec_eval -q -m yaap made/bits.qrels made/bits.run (%.17g build)
    result = _eval("-q", "-m", "yaap", "--format", "csv", str(MADE / "bits.qrels"), str(MADE / "bits.run"))
    theirs = [("q0", -2.244163250248655), ("q1", -1.3510676498346159), ("q2", -2.1801326290053562)]
    ours = list(csv.reader(io.StringIO(result.stdout)))[1:4]
    assert [(q, float(v)) for _, q, v in ours] == theirs


@pytest.mark.parametrize(("text", "message"), [
    ("q1 g s d1\n", "expected 5 whitespace-separated fields"),
    ("q1 g s d1 high\n", "rel_level must be a number, got 'high'"),
])
def test_bad_prefs_lines(tmp_path, text, message):
    prefs = tmp_path / "prefs"
    prefs.write_text(text)
    result = _eval("-R", "prefs", "-m", "prefs_simp", str(prefs), str(DATA / "prefs.results.test"))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {prefs}:1: {message}")


def test_inconsistent_preferences_are_one_error_line(tmp_path):
    # trec_eval aborts (core dump) on "Pref inconsistency found"
    prefs = tmp_path / "prefs"
    prefs.write_text("q1 g s1 d1 2\nq1 g s1 d2 1\nq1 g s2 d2 2\nq1 g s2 d1 1\n")
    run = tmp_path / "run"
    run.write_text("q1 Q0 d1 1 1.0 t\n")
    result = _eval("-R", "prefs", "-m", "prefs_simp", str(prefs), str(run))
    assert result.exit_code == 1
    assert result.stderr.strip() == f"Error: {prefs}: query q1: inconsistent preferences in judgment group g"
