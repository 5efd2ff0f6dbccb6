"""`ndcg-labeling eval` against trec_eval 10's own test outputs (tests/data/trec_eval, copied unchanged
from usnistgov/trec_eval): every line, with the command lines that produced them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ndcg_labeling.cli import app

DATA = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
runner = CliRunner()

# trec_eval's test Makefile: the expected output and the arguments that produced it.
CASES = [
    ("out.test.aq", ["-m", "all_trec", "-q", "qrels.test", "results.test"]),
    ("out.test.aqc", ["-m", "all_trec", "-q", "-c", "qrels.test", "results.trunc"]),
    ("out.test.aqcM", ["-m", "all_trec", "-q", "-c", "-M100", "qrels.test", "results.trunc"]),
    ("out.test.aql", ["-m", "all_trec", "-mrelstring.20", "-q", "-l2", "qrels.rel_level", "results.test"]),
    ("out.test.meas_params", ["-q", "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "recall.20,2000",
                              "-m", "Rprec_mult.5.0,0.2,0.35", "-mutility.2,-1,0,0", "-m", "11pt_avg..25,.5,.75",
                              "-mndcg.1=3,2=9,4=4.5", "-mndcg_cut.10,20,23.4", "-msuccess.2,5,20",
                              "qrels.test", "results.test"]),
]


def _eval(args: list[str], stdin: str | None = None):
    files = {"qrels.test", "qrels.rel_level", "results.test", "results.trunc"}
    return runner.invoke(app, ["eval", *[str(DATA / a) if a in files else a for a in args]], input=stdin)


@pytest.mark.parametrize(("expected", "args"), CASES, ids=[c[0] for c in CASES])
def test_every_line_of_trec_evals_reference_outputs(expected, args):
    result = _eval(args)
    assert result.exit_code == 0, result.output
    want = (DATA / expected).read_text().splitlines()
    got = result.stdout.splitlines()
    assert len(got) == len(want) > 80
    for ours, theirs in zip(got, want, strict=True):
        assert ours == theirs  # name, query, value as printed (4 decimals, integers, relstring, runid)


def test_reference_values_in_full_precision_formats():
    # The csv rows are the same measures and queries; each value rounds to trec_eval's 4 decimals.
    result = _eval(["-m", "all_trec", "-q", "--format", "csv", "qrels.test", "results.test"])
    rows = [line.split(",", 2) for line in result.stdout.splitlines()[1:]]
    want = [line.split("\t") for line in (DATA / "out.test.aq").read_text().splitlines()]
    assert [(m, q) for m, q, _ in rows] == [(m.strip(), q) for m, q, _ in want]
    for (m, q, ours), (_, _, theirs) in zip(rows, want, strict=True):
        if theirs.startswith("'") or not theirs[-1].isdigit() or m == "runid":
            assert ours.strip("'") == theirs.strip("'"), m
        elif "." in theirs:
            assert abs(float(ours) - float(theirs)) <= 5e-5 + 1e-12, (m, q)
        else:
            assert float(ours) == int(theirs), (m, q)


def test_comment_lines_are_skipped(tmp_path):
    # trec_eval 10 skips lines starting with '#' (its qrels.test.with-comments); a '#' inside an id stays.
    lines = (DATA / "qrels.test").read_text().splitlines(keepends=True)
    commented = ["# comment here\n", *lines[:2], "# and comment here\n", "   # indented comment\n", *lines[2:]]
    (tmp_path / "qrels").write_text("".join(commented))
    run_lines = (DATA / "results.test").read_text().splitlines(keepends=True)
    (tmp_path / "run").write_text("".join(["#run comment\n", *run_lines[:5], "# mid-file\n", *run_lines[5:]]))
    plain = _eval(["-m", "all_trec", "-q", "qrels.test", "results.test"])
    ours = runner.invoke(app, ["eval", "-m", "all_trec", "-q", str(tmp_path / "qrels"), str(tmp_path / "run")])
    assert ours.exit_code == 0, ours.output
    assert ours.stdout == plain.stdout == (DATA / "out.test.aq").read_text()


def test_hash_inside_a_document_id_is_part_of_it(tmp_path):
    (tmp_path / "qrels").write_text("1 0 CR#93 1\n1 0 CR 0\n")
    (tmp_path / "run").write_text("1 Q0 CR#93 1 2.0 t\n1 Q0 CR 2 1.0 t\n")
    result = runner.invoke(app, ["eval", "-m", "P.1", str(tmp_path / "qrels"), str(tmp_path / "run")])
    assert result.stdout == "P_1                   \tall\t1.0000\n"


def test_run_from_standard_input():
    result = _eval(["-m", "all_trec", "-q", "qrels.test", "-"], stdin=(DATA / "results.test").read_text())
    assert result.exit_code == 0, result.output
    assert result.stdout == (DATA / "out.test.aq").read_text()


def test_no_summary_flag_drops_the_all_rows():
    result = _eval(["-m", "P.5", "-q", "-n", "qrels.test", "results.test"])
    want = [line for line in (DATA / "out.test.aq").read_text().splitlines()
            if line.startswith("P_5 ") and "\tall\t" not in line]
    assert result.stdout.splitlines() == want


def test_the_data_folder_says_where_the_files_come_from():
    readme = (DATA / "README.md").read_text()
    assert "unchanged" in readme and "10.0" in readme and "usnistgov/trec_eval" in readme
    assert "NIST-developed software" in (DATA / "LICENSE.md").read_text()
    assert sys.version_info >= (3, 11)
