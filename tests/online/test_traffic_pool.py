"""``tasks create --from-traffic``: the unjudged pairs with the most (time-decayed) impressions, checked
against a brute-force choice computed here, and the judged share of impressions before and after."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sqlalchemy import text

from ndcg_labeling.online.traffic import judged_share, pick_by_traffic, split_budget
from tests.conftest import invoke

HALF_LIFE_S = 2 * 86400.0


def test_pick_by_traffic_is_the_heaviest_unjudged():
    rng = np.random.default_rng(0)
    weight = rng.integers(0, 20, 300).astype(float)
    judged = rng.random(300) < 0.4
    got = pick_by_traffic(weight, judged, 25)
    ranked = sorted((i for i in range(300) if not judged[i] and weight[i] > 0), key=lambda i: (-weight[i], i))
    assert got.tolist() == sorted(ranked[:25])


def test_split_budget_is_proportional_and_capped():
    quota = split_budget(np.array([60.0, 30.0, 10.0]), np.array([100, 100, 2]), 20)
    assert quota.tolist() == [12, 6, 2]
    quota = split_budget(np.array([50.0, 50.0, 0.0]), np.array([3, 100, 5]), 20)
    assert quota.sum() == 20 and quota[0] == 3
    assert split_budget(np.array([1.0, 1.0]), np.array([2, 3]), 50).tolist() == [2, 3]


def test_by_query_type_fills_each_type_by_weight():
    weight = np.array([9, 8, 7, 6, 5, 1, 1, 1], dtype=float)
    groups = np.array([0, 0, 0, 0, 0, 1, 1, 1])
    got = pick_by_traffic(weight, np.zeros(8, bool), 4, groups)
    # type 0 has 35/38 of the weight: 3.68 -> 3 + the largest remainder; type 1: 0.32 -> 0
    assert got.tolist() == [0, 1, 2, 3]
    assert judged_share(weight, np.arange(8) < 2) == pytest.approx(17 / 38)


def test_tasks_create_from_traffic(db, runner, tmp_path):
    rng = np.random.default_rng(3)
    t_end = 1_700_000_000.0
    lines = ["request_id,query_id,doc_id,position,clicked,ts"]
    for r in range(400):
        q = f"q{r % 4}"
        ts = t_end - float(rng.uniform(0, 10 * 86400))
        for p, d in enumerate(rng.permutation(12)[:5], start=1):
            lines.append(f"r{r},{q},{q}d{d},{p},0,{ts}")
    log = tmp_path / "traffic.csv"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "q.csv").write_text("query_id,text,query_type\n" + "".join(
        f"q{i},t,{('head', 'tail')[i % 2]}\n" for i in range(4)), encoding="utf-8")
    judged = {(f"q{i}", f"q{i}d{d}") for i in range(4) for d in range(4)}
    (tmp_path / "j.csv").write_text("query_id,doc_id,grader,grade\n" + "".join(
        f"{q},{d},{g},1\n" for q, d in sorted(judged) for g in ("ann", "bob")), encoding="utf-8")
    for args in (("import", "queries", str(tmp_path / "q.csv")),
                 ("import", "judgments", str(tmp_path / "j.csv"), "--scale", "0-3", "--create-graders"),
                 ("consensus", "--method", "median")):
        assert invoke(runner, db, *args).exit_code == 0
    # independent: decayed impressions per pair, as of the newest ts
    rows = [line.split(",") for line in lines[1:]]
    newest = max(float(r[5]) for r in rows)
    weight: dict[tuple[str, str], float] = {}
    for r in rows:
        weight[(r[1], r[2])] = weight.get((r[1], r[2]), 0.0) + 0.5 ** ((newest - float(r[5])) / HALF_LIFE_S)
    unjudged = sorted((k for k in weight if k not in judged), key=lambda k: (-weight[k], k))
    want = set(unjudged[:7])
    total = sum(weight.values())
    before = sum(w for k, w in weight.items() if k in judged) / total
    after = before + sum(weight[k] for k in want) / total
    result = invoke(runner, db, "tasks", "create", "traffic", "--from-traffic", str(log), "--budget", "7",
                    "--half-life", "2d", "--scale", "0-3", "--overlap", "1", "--graders", "ann", "--format", "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)["traffic"]
    assert out["pairs_pooled"] == 7 and out["pairs_unjudged"] == len(unjudged)
    assert out["judged_share_before"] == pytest.approx(before, rel=1e-9)
    assert out["judged_share_after"] == pytest.approx(after, rel=1e-9)
    with db.engine.connect() as conn:
        items = conn.execute(text("SELECT q.external_id, d.external_id FROM batch_items i "
                                  "JOIN grading_batches b ON b.id = i.batch_id JOIN queries q ON q.id = i.query_id "
                                  "JOIN documents d ON d.id = i.document_id WHERE b.name = 'traffic'")).all()
    assert {(q, d) for q, d in items} == want
    bad = invoke(runner, db, "tasks", "create", "t2", "--from-traffic", str(log), "--scale", "0-3", "--overlap", "1",
                 "--graders", "ann")
    assert bad.exit_code != 0 and "--budget" in bad.output
