"""trec_eval 10's command line as written: its long options, ``-R qrels``/``-T trec_results``, ``-v``,
checked against trec_eval's own reference outputs (tests/data/trec_eval)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ndcg_labeling.cli import app

DATA = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
runner = CliRunner()


def _eval(*args: str):
    return runner.invoke(app, ["eval", *args])


def test_long_options_as_trec_eval_spells_them():
    # out.test.aql: trec_eval -m all_trec -mrelstring.20 -q -l2 qrels.rel_level results.test
    result = _eval("--measure", "all_trec", "--measure=relstring.20", "--query_eval_wanted", "--level_for_rel=2",
                   "-R", "qrels", "-T", "trec_results", str(DATA / "qrels.rel_level"), str(DATA / "results.test"))
    assert result.exit_code == 0, result.output
    assert result.stdout == (DATA / "out.test.aql").read_text()


def test_long_options_complete_and_max():
    # out.test.aqcM: trec_eval -m all_trec -q -c -M100 qrels.test results.trunc
    result = _eval("--Rel_info_format", "qrels", "--Results_format=trec_results", "--measure", "all_trec",
                   "--query_eval_wanted", "--complete_rel_info_wanted", "--Max_retrieved_per_topic", "100",
                   str(DATA / "qrels.test"), str(DATA / "results.trunc"))
    assert result.exit_code == 0, result.output
    assert result.stdout == (DATA / "out.test.aqcM").read_text()


def test_nosummary_judged_only_and_number_docs():
    args = ["-m", "map", "-m", "utility", str(DATA / "qrels.test"), str(DATA / "results.test")]
    long = _eval("--nosummary", "--query_eval_wanted", "--Judged_docs_only", "--Number_docs_in_coll", "5000", *args)
    short = _eval("-n", "-q", "-J", "-N", "5000", *args)
    assert long.exit_code == 0, long.output
    assert long.stdout == short.stdout and "\tall\t" not in long.stdout and "utility" in long.stdout


def test_version_as_trec_eval_on_stderr():
    for flag in ("-v", "--version"):
        result = _eval(flag)
        assert result.exit_code == 0
        assert result.stdout == "" and "ndcg-labeling eval version" in result.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["-T", "other"], "Error: -T: unknown results format 'other'; known: trec_results"),
    (["-R", "qrels_x"], "Error: -R: unknown qrels format 'qrels_x'"),
    (["-Z", "zfile"], "Error: -Z/--Zscore (trec_eval's z-scores) is not supported"),
    (["--Debug_level", "1"], "Error: -D/--Debug_level (trec_eval's debugging output) is not supported"),
])
def test_unsupported_or_unknown_formats_are_one_error_line(args, message):
    result = _eval(*args, str(DATA / "qrels.test"), str(DATA / "results.test"))
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[0].startswith(message)


def test_level_that_is_not_an_integer_is_refused():
    # trec_eval reads -l x with atol as -l 0; we refuse it (docs/eval.md).
    result = _eval("-l", "x", str(DATA / "qrels.test"), str(DATA / "results.test"))
    assert result.exit_code != 0 and "'x' is not a valid int" in result.output
