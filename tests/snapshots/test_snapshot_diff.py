"""``snapshot diff`` and ``tasks create --from-snapshot``: two snapshots of an engine whose answer changed;
the diff names the documents that entered, left and moved, the NDCG@3 change (checked against
scikit-learn's ndcg_score on the exponential gains 2^rel - 1, the report's default), and the unjudged
documents; the batch pools exactly those unjudged pairs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fake_engines import FakeEngine, serving
from sklearn.metrics import ndcg_score
from snapshot_world import add_config
from sqlalchemy import text

from tests.conftest import invoke

LABELS = {("Q1", "D1"): 3, ("Q1", "D2"): 0, ("Q1", "D3"): 1, ("Q3", "D9"): 2}
BEFORE = {"github login": [("D1", 3.0), ("D2", 2.0), ("D3", 1.0)], "cheap flights": [("D9", 2.0), ("D8", 1.0)]}
AFTER = {"github login": [("D2", 3.0), ("D1", 2.0), ("D5", 1.0)], "cheap flights": [("D9", 2.0), ("D8", 1.0)]}


def peer_ndcg(query: str, ranked: list[str], k: int = 3) -> float:
    docs = sorted({d for (q, d) in LABELS if q == query} | set(ranked))
    gains = [[2.0 ** LABELS.get((query, d), 0) - 1 for d in docs]]
    scores = [[float(len(ranked) - ranked.index(d)) if d in ranked else 0.0 for d in docs]]
    return float(ndcg_score(np.array(gains), np.array(scores), k=k))


@pytest.fixture
def two_snapshots(qdb, runner, template_file, tmp_path):
    judgments = tmp_path / "j.csv"
    judgments.write_text("query_id,doc_id,grader,grade\n" + "".join(f"{q},{d},ana,{g}\n" for (q, d), g in LABELS.items()))
    assert invoke(runner, qdb, "import", "judgments", str(judgments), "--scale", "0-3", "--create-graders").exit_code == 0
    assert invoke(runner, qdb, "consensus", "--method", "median", "--min-graders", "1").exit_code == 0
    engine = FakeEngine("elasticsearch", results=dict(BEFORE))
    names = []
    with serving(engine):
        assert add_config(runner, qdb, "es", "elasticsearch", engine.url, template_file("elasticsearch")).exit_code == 0
        for results in (BEFORE, AFTER):
            engine.results = dict(results)
            taken = invoke(runner, qdb, "snapshot", "take", "es", "--format", "json")
            assert taken.exit_code == 0, taken.output
            names.append(json.loads(taken.stdout)["snapshot"])
    return qdb, names


def test_diff_names_entering_leaving_moved_the_ndcg_change_and_the_unjudged(two_snapshots, runner):
    db, (a, b) = two_snapshots
    result = invoke(runner, db, "snapshot", "diff", a, b, "-k", "3", "--format", "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    rows = {r["query_id"]: r for r in out["queries"]}
    q1 = rows["Q1"]
    assert (q1["entered"], q1["left"], q1["moved"], q1["unjudged"]) == ("D5", "D3", "D2 2->1; D1 1->2", "D5")
    assert q1["ndcg@3_from"] == pytest.approx(peer_ndcg("Q1", ["D1", "D2", "D3"]), abs=1e-9)
    assert q1["ndcg@3_to"] == pytest.approx(peer_ndcg("Q1", ["D2", "D1", "D5"]), abs=1e-9)
    assert q1["ndcg_change"] == pytest.approx(q1["ndcg@3_to"] - q1["ndcg@3_from"])
    q3 = rows["Q3"]  # unchanged, but D8 is unjudged in the newer top 3
    assert (q3["entered"], q3["left"], q3["moved"], q3["unjudged"], q3["ndcg_change"]) == ("", "", "", "D8", 0.0)
    assert out["pairs"] == [{"from": a, "to": b, "queries_changed": 1, "mean_ndcg_change": q1["ndcg_change"],
                             "unjudged_brought": 2}]
    table = invoke(runner, db, "snapshot", "diff", a, b, "-k", "3")
    assert table.exit_code == 0 and "1 queries changed in the top 3" in table.stdout
    assert f"tasks create --from-snapshot {b}" in table.stdout
    csv = invoke(runner, db, "snapshot", "diff", a, b, "-k", "3", "--format", "csv")
    assert csv.stdout.splitlines()[0].startswith("from,to,query_id,entered,left,moved,unjudged")
    missing = invoke(runner, db, "snapshot", "diff", a, "es@nope")
    assert missing.exit_code == 1 and "no stored run or snapshot named 'es@nope'" in missing.stderr


def test_tasks_create_from_snapshot_pools_exactly_the_unjudged_pairs(two_snapshots, runner):
    db, (_a, b) = two_snapshots
    result = invoke(runner, db, "tasks", "create", "fresh", "--from-snapshot", b, "--scale", "0-3", "--overlap", "1",
                    "--graders", "ana")
    assert result.exit_code == 0, result.output
    assert "2 of its 5 top-10 pairs have no label in force" in result.stdout
    with db.engine.connect() as conn:
        items = conn.execute(text("SELECT q.external_id, d.external_id FROM batch_items i JOIN queries q ON "
                                  "q.id = i.query_id JOIN documents d ON d.id = i.document_id")).all()
    assert sorted(items) == [("Q1", "D5"), ("Q3", "D8")]
    again = invoke(runner, db, "tasks", "create", "x", "--from-snapshot", b, "--scale", "0-3", "--overlap", "1",
                   "--graders", "ana", "--system", "s")
    assert again.exit_code == 2 and "--from-snapshot" in again.output
