"""``agreement``, ``consensus``, ``adjudicate list|set`` and ``export qrels`` through the CLI, on SQLite
and PostgreSQL: published alpha values from an imported file, the full round trip to a qrels file,
re-runs, adjudication overrides, and the error messages (exit 1, ``Error: ...``)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from tests.conftest import invoke

DATA = Path(__file__).resolve().parents[1] / "data"

QUERIES = "query_id,text,query_type\nq1,cheap flights,transactional\nq2,python docs,navigational\n"
# q1/d1: 3,3,2 -> median 3; q1/d2: 0,1,0 -> 0; q1/d3: 0,3 -> median (low) 0, spread 3: flagged;
# q2/d1: 2,2,2 -> 2; q2/d2: 1 (one grader): flagged
JUDGMENTS = """query_id,doc_id,grader,grade
q1,d1,alice,3
q1,d1,bob,3
q1,d1,carol,2
q1,d2,alice,0
q1,d2,bob,1
q1,d2,carol,0
q1,d3,alice,0
q1,d3,bob,3
q2,d1,alice,2
q2,d1,bob,2
q2,d1,carol,2
q2,d2,carol,1
"""
EXPECTED_QRELS = "q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 0\nq2 0 d1 2\nq2 0 d2 1\n"


def write(tmp_path: Path, name: str, content: str) -> Path:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    return path


def ok(result) -> str:
    assert result.exit_code == 0, result.output
    return result.stdout


def error(result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def setup_round_trip(runner, db, tmp_path) -> None:
    ok(invoke(runner, db, "import", "queries", str(write(tmp_path, "q.csv", QUERIES))))
    ok(invoke(runner, db, "import", "judgments", str(write(tmp_path, "j.csv", JUDGMENTS)), "--scale", "0-3",
              "--create-graders"))


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize(("level", "published"), [("nominal", "0.743"), ("ordinal", "0.815"), ("interval", "0.849")])
def test_krippendorff_2011_published_values(runner, db, level, published):
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers x 12 units with
    # missing values. The paper's values 1..5 are stored as grades 0..4 on the 0-4 scale (v -> v - 1):
    # a shift changes no difference between values, so alpha is unchanged at all three levels.
    ok(invoke(runner, db, "import", "judgments", str(DATA / "krippendorff2011.csv"), "--scale", "0-4",
              "--create-graders"))
    rows = csv_rows(ok(invoke(runner, db, "agreement", "--level", level, "--format", "csv")))
    assert rows[0]["scope"] == "all" and rows[0]["level"] == level
    assert f"{float(rows[0]['alpha']):.3f}" == published
    assert (rows[0]["n_items"], rows[0]["n_graders"], rows[0]["n_grades"]) == ("12", "4", "41")


def test_round_trip_import_agreement_consensus_export(runner, db, tmp_path):
    setup_round_trip(runner, db, tmp_path)
    rows = csv_rows(ok(invoke(runner, db, "agreement", "--by", "query-type", "--format", "csv")))
    assert [r["scope"] for r in rows] == ["all", "navigational", "transactional"]
    assert rows[0]["n_grades"] == "12" and rows[0]["n_items"] == "5"
    assert rows[1]["alpha"] == "" and rows[1]["reason"] == "a single value in the data"

    out = ok(invoke(runner, db, "consensus", "--method", "median"))
    assert out.splitlines()[0] == ("consensus (median, scale 0-3) of all judgments: 5 items from 12 grades, "
                                   "2 flagged for adjudication, 0 previous labels replaced")
    assert db.counts()["consensus_labels"] == 5

    qrels = tmp_path / "out.qrels"
    result = invoke(runner, db, "export", "qrels", "--out", str(qrels))
    ok(result)
    assert qrels.read_text() == EXPECTED_QRELS
    assert "5 qrels lines written" in result.stderr

    # re-run with another method replaces the five labels, not adds to them
    summary = json.loads(ok(invoke(runner, db, "consensus", "--method", "majority", "--format", "json")))
    assert summary["replaced"] == 5 and summary["items"] == 5 and summary["method"] == "majority"
    assert summary["by_reason"] == {"spread above max": 1, "too few graders": 1}
    assert db.counts()["consensus_labels"] == 5

    # adjudication overrides the consensus in the export
    out = ok(invoke(runner, db, "adjudicate", "set", "q1", "d3", "2", "--adjudicator", "dana", "--note", "doc is relevant"))
    assert out.strip() == "adjudicated (q1, d3) = 2 on scale 0-3 by dana (was 0; 1 adjudication(s) on record)"
    assert ok(invoke(runner, db, "export", "qrels")) == EXPECTED_QRELS.replace("q1 0 d3 0", "q1 0 d3 2")


def test_min_graders_and_spread_flags(runner, db, tmp_path):
    setup_round_trip(runner, db, tmp_path)
    ok(invoke(runner, db, "consensus", "--method", "median", "--min-graders", "3", "--max-spread", "0"))
    rows = csv_rows(ok(invoke(runner, db, "adjudicate", "list", "--format", "csv")))
    flagged = {(r["query_id"], r["doc_id"]): r["reason"] for r in rows}
    assert flagged == {("q1", "d1"): "spread above max", ("q1", "d2"): "spread above max",
                       ("q1", "d3"): "too few graders; spread above max; even median split by more than one grade",
                       ("q2", "d2"): "too few graders"}
    q1d3 = next(r for r in rows if r["doc_id"] == "d3" and r["query_id"] == "q1")
    assert q1d3["grades"] == "alice: 0, bob: 3" and q1d3["consensus"] == "0.0"


def test_adjudicate_list_shows_grades_and_adjudication(runner, db, tmp_path):
    setup_round_trip(runner, db, tmp_path)
    ok(invoke(runner, db, "consensus", "--method", "median"))
    ok(invoke(runner, db, "adjudicate", "set", "q2", "d2", "0", "--adjudicator", "dana"))
    rows = json.loads(ok(invoke(runner, db, "adjudicate", "list", "--format", "json")))
    assert [(r["query_id"], r["doc_id"]) for r in rows] == [("q1", "d3"), ("q2", "d2")]
    assert rows[1]["grades"] == "carol: 1" and rows[1]["adjudicated"] == 0.0 and rows[1]["adjudicator"] == "dana"


def test_adjudicate_set_errors(runner, db, tmp_path):
    setup_round_trip(runner, db, tmp_path)
    before = db.counts()
    assert error(invoke(runner, db, "adjudicate", "set", "nope", "d1", "2", "--adjudicator", "dana")) == \
        "Error: unknown query 'nope'"
    assert error(invoke(runner, db, "adjudicate", "set", "q1", "nope", "2", "--adjudicator", "dana")) == \
        "Error: unknown document 'nope'"
    assert error(invoke(runner, db, "adjudicate", "set", "q1", "d1", "7", "--adjudicator", "dana")) == \
        "Error: grade 7 is outside the scale 0-3 (0..3) of (q1, d1)"
    assert db.counts() == before


def test_export_fractional_needs_a_rule(runner, db, tmp_path):
    setup_round_trip(runner, db, tmp_path)
    ok(invoke(runner, db, "consensus", "--method", "mean"))  # q1/d1 = 8/3, q1/d2 = 1/3, q1/d3 = 1.5
    assert error(invoke(runner, db, "export", "qrels")) == (
        "Error: 3 labels are fractional (e.g. q1 d1 = 2.66667); choose a rule with --round half-up|floor, "
        "or pass --keep-fraction")
    assert ok(invoke(runner, db, "export", "qrels", "--round", "half-up")) == \
        "q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d1 2\nq2 0 d2 1\n"
    assert ok(invoke(runner, db, "export", "qrels", "--round", "floor")) == \
        "q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\nq2 0 d1 2\nq2 0 d2 1\n"
    result = invoke(runner, db, "export", "qrels", "--keep-fraction")
    assert ok(result).splitlines()[2] == "q1 0 d3 1.5"
    assert "Warning: 3 fractional relevance values" in result.stderr and "trec_eval expects integer" in result.stderr


def test_export_without_consensus_is_an_error(runner, db):
    assert error(invoke(runner, db, "export", "qrels")) == \
        "Error: no labels to export: run `ndcg-labeling consensus` first"


def test_agreement_errors(runner, db, tmp_path):
    assert error(invoke(runner, db, "agreement")) == \
        "Error: no judgments in the database; import some with `ndcg-labeling import judgments`"
    ok(invoke(runner, db, "import", "judgments", str(write(tmp_path, "a.csv", "query_id,doc_id,grader,grade,batch\n"
                                                            "q1,d1,a,1,b3\nq1,d1,b,2,b3\n")),
              "--scale", "0-3", "--create-graders"))
    ok(invoke(runner, db, "import", "judgments", str(write(tmp_path, "b.csv", "query_id,doc_id,grader,grade,batch\n"
                                                            "q1,d1,a,4,b4\n")), "--scale", "0-4"))
    assert error(invoke(runner, db, "agreement")) == (
        "Error: the selection holds judgments on several scales (0-3: 2 judgments, 0-4: 1 judgments); "
        "agreement and consensus need one scale: select a batch of one scale with --batch")
    assert error(invoke(runner, db, "consensus", "--method", "median")).startswith("Error: the selection holds")
    assert error(invoke(runner, db, "agreement", "--batch", "zz")) == "Error: no judgments in batch 'zz'"
    rows = csv_rows(ok(invoke(runner, db, "agreement", "--batch", "b3", "--format", "csv")))
    assert rows[0]["n_grades"] == "2" and rows[0]["alpha"] != ""


def test_prevalence_paradox_in_words(runner, db, tmp_path):
    lines = ["query_id,doc_id,grader,grade"]
    for i in range(40):
        lines += [f"q1,d{i},a,0", f"q1,d{i},b,{0 if i else 1}"]
    ok(invoke(runner, db, "import", "judgments", str(write(tmp_path, "p.csv", "\n".join(lines) + "\n")),
              "--scale", "0-3", "--create-graders"))
    table = ok(invoke(runner, db, "agreement"))
    assert "Note: graders agree on 98% of pairs" in table and "(prevalence paradox)" in table
    rows = csv_rows(ok(invoke(runner, db, "agreement", "--format", "csv")))
    assert "prevalence paradox" in rows[0]["note"]


def test_by_grader_json_nests_pairwise_kappa(runner, db):
    ok(invoke(runner, db, "import", "judgments", str(DATA / "krippendorff2011.csv"), "--scale", "0-4",
              "--create-graders"))
    rows = json.loads(ok(invoke(runner, db, "agreement", "--by", "grader", "--format", "json")))
    assert [r["scope"] for r in rows] == ["all", "observer_A", "observer_B", "observer_C", "observer_D"]
    a = rows[1]
    assert a["n_grades"] == 9 and a["n_partners"] == 3 and a["flagged"] is False
    assert [p["grader"] for p in a["kappa"]] == ["observer_B", "observer_C", "observer_D"]
    assert all(-1 <= p["kappa"] <= 1 and p["overlap"] > 0 for p in a["kappa"])
    rows_csv = csv_rows(ok(invoke(runner, db, "agreement", "--by", "grader", "--format", "csv")))
    assert "kappa" not in rows_csv[0] and rows_csv[1]["n_partners"] == "3"


def test_batch_scoped_consensus_and_adjudication_list(runner, db, tmp_path):
    # q1/d1 is graded in both batches: with --batch only that batch's grades count, without both pool
    two_batches = ("query_id,doc_id,grader,grade,batch\n"
                   "q1,d1,alice,0,b1\nq1,d1,bob,0,b1\n"
                   "q1,d1,carol,3,b2\nq1,d1,dave,3,b2\nq1,d1,erin,3,b2\nq2,d1,carol,1,b2\n")
    ok(invoke(runner, db, "import", "judgments", str(write(tmp_path, "b.csv", two_batches)), "--scale", "0-3",
              "--create-graders"))
    ok(invoke(runner, db, "consensus", "--method", "median", "--max-spread", "3"))
    assert ok(invoke(runner, db, "export", "qrels")) == "q1 0 d1 3\nq2 0 d1 1\n"  # 0,0,3,3,3 -> 3
    out = ok(invoke(runner, db, "consensus", "--method", "median", "--batch", "b1"))
    assert out.splitlines()[0] == ("consensus (median, scale 0-3) of batch 'b1': 1 items from 2 grades, "
                                   "0 flagged for adjudication, 1 previous labels replaced")
    assert ok(invoke(runner, db, "export", "qrels")) == "q1 0 d1 0\nq2 0 d1 1\n"
    assert db.counts()["consensus_labels"] == 2
    assert json.loads(ok(invoke(runner, db, "adjudicate", "list", "--batch", "b1", "--format", "json"))) == []
    assert ok(invoke(runner, db, "adjudicate", "list", "--batch", "b1")).strip() == "no items flagged for adjudication"
    rows = json.loads(ok(invoke(runner, db, "adjudicate", "list", "--format", "json")))
    assert [(r["query_id"], r["batch"], r["reason"], r["grades"]) for r in rows] == \
        [("q2", "", "too few graders", "carol: 1")]
    assert error(invoke(runner, db, "consensus", "--method", "median", "--batch", "b9")) == \
        "Error: no judgments in batch 'b9'"


def test_alpha_below_zero_is_shown_with_a_plain_warning(runner, db, tmp_path):
    """Two graders who read the scale in opposite directions: alpha < 0 (checked with the krippendorff
    package here), and the table and the CSV output both say that agreement is below chance."""
    import krippendorff
    import numpy as np

    grades = [0, 1, 2, 3, 0, 1, 2, 3, 1, 2]
    rows = "".join(f"q{i},d1,alice,{g}\nq{i},d1,bob,{3 - g}\n" for i, g in enumerate(grades))
    ok(invoke(runner, db, "import", "judgments", str(write(tmp_path, "j.csv", "query_id,doc_id,grader,grade\n" + rows)),
              "--scale", "0-3", "--create-graders"))
    want = krippendorff.alpha(reliability_data=np.array([grades, [3 - g for g in grades]], dtype=float),
                              level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    assert want < 0
    table = ok(invoke(runner, db, "agreement"))
    assert f"Warning: alpha is below 0 (all {want:.3f})" in table and "below chance" in table
    result = invoke(runner, db, "agreement", "--format", "csv")
    assert result.exit_code == 0 and "below chance" in result.stderr and "below chance" not in result.stdout
    assert float(csv_rows(result.stdout)[0]["alpha"]) == pytest.approx(want, abs=1e-9)


def test_no_warning_when_alpha_is_not_below_zero(runner, db, tmp_path):
    setup_round_trip(runner, db, tmp_path)
    assert "below chance" not in ok(invoke(runner, db, "agreement"))
