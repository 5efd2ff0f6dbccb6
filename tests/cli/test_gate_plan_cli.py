"""``report --gate`` and ``plan`` through the CLI, on SQLite and PostgreSQL.

The data set plants known effects on binary labels (so exponential and linear gain agree and
pytrec_eval's ``ndcg_cut_10`` is the peer): ``base``; ``worse``, whose best document drops to the
bottom of most lists (a large, significant drop); ``noisy``, better on some queries and worse on
others (a drop of its mean larger than the allowed one, but nowhere near significant); ``better``,
which ranks the relevant documents first. The expected verdicts are checked against the peers first
(pytrec_eval for the scores, ``scipy.stats.ttest_rel`` for significance), then the gate's exit codes.
The planned numbers of queries are checked against statsmodels' ``TTestPower``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from scipy.stats import ttest_rel
from statsmodels.stats.power import TTestPower

from tests.conftest import invoke

N_QUERIES = 40
SYSTEMS = ("base", "worse", "noisy", "better")


def planted(tmp_path: Path, seed: int = 16) -> dict:
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    runs: dict[str, dict[str, list[str]]] = {s: {} for s in SYSTEMS}
    judgments = ["query_id,doc_id,grader,grade"]
    for i in range(N_QUERIES):
        q = f"q{i:02d}"
        docs = [f"{q}-d{j}" for j in range(12)]
        rel = {d: int(j < 3) for j, d in enumerate(docs)}  # three relevant documents per query
        qrels[q] = rel
        for d, r in rel.items():
            judgments.extend(f"{q},{d},{g},{r}" for g in ("ann", "bob", "cid"))
        base = list(rng.permutation(docs)[:10])
        if not any(rel[d] for d in base[:3]):  # a relevant document near the top, so worse has something to lose
            first = next(d for d in docs if rel[d])
            base = [first] + [d for d in base if d != first][:9]
        runs["base"][q] = base
        top_rel = next(d for d in base if rel[d])
        runs["worse"][q] = ([d for d in base if d != top_rel] + [top_rel]) if i % 10 else base
        ideal = sorted(docs, key=lambda d: -rel[d])[:10]
        runs["better"][q] = ideal
        # noisy: ideal on 3 queries in 10, the worse list on 6 in 10
        runs["noisy"][q] = ideal if i % 10 in (0, 3, 6) else ([d for d in base if d != top_rel] + [top_rel]
                                                             if i % 10 != 9 else base)
    for s in SYSTEMS:
        lines = [f"{q} Q0 {d} {r} {100 - r} {s}" for q, ranked in runs[s].items() for r, d in enumerate(ranked, 1)]
        (tmp_path / f"{s}.run").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "judgments.csv").write_text("\n".join(judgments) + "\n", encoding="utf-8")
    (tmp_path / "queries.csv").write_text("query_id,text,query_type\n" + "".join(
        f"q{i:02d},text {i},{'nav' if i % 2 else 'info'}\n" for i in range(N_QUERIES)), encoding="utf-8")
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut"})
    ndcg = {}
    for s in SYSTEMS:
        run = {q: {d: float(100 - r) for r, d in enumerate(ranked, 1)} for q, ranked in runs[s].items()}
        scores = evaluator.evaluate(run)
        ndcg[s] = np.array([scores[f"q{i:02d}"]["ndcg_cut_10"] for i in range(N_QUERIES)])
    return {"ndcg": ndcg}


def load(runner, db, tmp_path: Path) -> None:
    assert invoke(runner, db, "import", "queries", str(tmp_path / "queries.csv")).exit_code == 0
    for s in SYSTEMS:
        result = invoke(runner, db, "import", "run", str(tmp_path / f"{s}.run"), "--system", s)
        assert result.exit_code == 0, result.output
    result = invoke(runner, db, "import", "judgments", str(tmp_path / "judgments.csv"), "--scale", "0-3",
                    "--create-graders")
    assert result.exit_code == 0, result.output
    assert invoke(runner, db, "consensus", "--method", "median").exit_code == 0


def gate(runner, db, *args: str):
    return invoke(runner, db, "report", "--format", "json", "--gate", "ndcg@10", "--baseline", "base", *args)


def test_gate_exit_codes(runner, db, tmp_path):
    data = planted(tmp_path)
    load(runner, db, tmp_path)
    nd = data["ndcg"]
    # the planted facts, by the peers
    drop_worse = float(np.mean(nd["worse"] - nd["base"]))
    assert drop_worse < -0.05 and ttest_rel(nd["worse"], nd["base"]).pvalue < 1e-4
    drop_noisy = float(np.mean(nd["noisy"] - nd["base"]))
    assert drop_noisy < -0.01 and ttest_rel(nd["noisy"], nd["base"]).pvalue > 0.2
    assert float(np.mean(nd["better"] - nd["base"])) > 0.05

    result = gate(runner, db, "--max-drop", "0.01", "--system", "worse")
    assert result.exit_code == 3, result.output
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("gate failed (a drop significantly larger than 0.01, or too few queries to tell; one "
                           "gated row): worse vs base on ndcg@10 (overall): ")
    assert f"{drop_worse:+.3f}" in line
    report = json.loads(result.stdout)  # the report is still written, with the gate metric in its headline
    assert any(h["kind"] == "worse" and h["system"] == "worse" and h["query_type"] == "all" for h in report["headline"])

    result = gate(runner, db, "--max-drop", "0.01", "--system", "noisy")
    assert result.exit_code == 0, result.output
    assert result.stderr.strip().splitlines()[-1].startswith("gate passed")
    result = gate(runner, db, "--max-drop", "0.01", "--system", "better")
    assert result.exit_code == 0, result.output
    # a drop larger than the planted one is allowed: passes
    result = gate(runner, db, "--max-drop", f"{-drop_worse + 0.01:.3f}", "--system", "worse")
    assert result.exit_code == 0, result.output
    # without --system every compared system is gated; --baseline defaults to the first by name
    assert gate(runner, db, "--max-drop", "0.01").exit_code == 3
    result = invoke(runner, db, "report", "--format", "csv", "--gate", "ndcg@10", "--system", "noisy")
    assert result.exit_code == 0  # baseline: base, the first system by name


def test_gate_errors_are_one_line(runner, sqlite_db, tmp_path):
    planted(tmp_path)
    load(runner, sqlite_db, tmp_path)
    result = gate(runner, sqlite_db, "--system", "base")
    assert result.exit_code == 1
    assert result.stderr.strip() == "Error: --system base is the baseline; name the system to gate"
    result = gate(runner, sqlite_db, "--max-drop", "-1")
    assert result.exit_code == 1
    assert result.stderr.strip() == "Error: --max-drop must be a non-negative number, got -1"
    result = invoke(runner, sqlite_db, "report", "--gate", "ndgc@10")
    assert result.exit_code == 1 and result.stderr.startswith("Error: unknown metric 'ndgc@10'")


@pytest.mark.parametrize(("mde", "sd", "power", "alpha"), [(0.02, 0.1, 0.8, 0.05), (0.01, 0.25, 0.9, 0.05),
                                                            (0.05, 0.3, 0.8, 0.01), (0.1, 0.05, 0.8, 0.05)])
def test_plan_with_a_given_sd_matches_statsmodels(runner, mde, sd, power, alpha):
    result = invoke(runner, None, "plan", "--mde", str(mde), "--sd", str(sd), "--power", str(power), "--alpha",
                    str(alpha), "--format", "json")
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    peer = TTestPower().solve_power(effect_size=mde / sd, alpha=alpha, power=power, alternative="two-sided")
    assert abs(row["queries_needed"] - math.ceil(peer)) <= 1
    assert row["n_queries"] is None and row["mde_at_hand"] is None


def test_plan_measures_the_sd_of_per_query_differences(runner, db, tmp_path):
    data = planted(tmp_path)
    load(runner, db, tmp_path)
    result = invoke(runner, db, "plan", "--metric", "ndcg@10", "--mde", "0.02", "--baseline", "base", "--system",
                    "noisy", "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["query_type"] for r in rows] == ["all", "info", "nav"]
    overall = rows[0]
    diffs = data["ndcg"]["noisy"] - data["ndcg"]["base"]
    sd = float(np.std(diffs, ddof=1))
    assert overall["n_queries"] == N_QUERIES and overall["sd"] == pytest.approx(sd, rel=1e-9)
    peer = TTestPower().solve_power(effect_size=0.02 / sd, alpha=0.05, power=0.8, alternative="two-sided")
    assert abs(overall["queries_needed"] - math.ceil(peer)) <= 1
    at_hand = TTestPower().solve_power(nobs=N_QUERIES, alpha=0.05, power=0.8, alternative="two-sided") * sd
    assert overall["mde_at_hand"] == pytest.approx(at_hand, rel=1e-4)
    nav = rows[2]
    assert nav["n_queries"] == N_QUERIES // 2
    assert nav["sd"] == pytest.approx(float(np.std(diffs[1::2], ddof=1)), rel=1e-9)
    # report carries the same MDE per comparison
    report = json.loads(invoke(runner, db, "report", "--format", "json", "--baseline", "base", "--metric",
                               "ndcg@10").stdout)
    assert report["comparisons"]["noisy"]["all"]["ndcg@10"]["mde"] == pytest.approx(at_hand, rel=1e-4)
    table = invoke(runner, db, "plan", "--mde", "0.02", "--baseline", "base", "--system", "noisy")
    assert table.exit_code == 0 and f"the {N_QUERIES} at hand detect ±{at_hand:.3f}" in table.stdout


def test_plan_errors_are_one_line(runner, sqlite_db, tmp_path):
    result = invoke(runner, sqlite_db, "plan", "--mde", "0.02", "--sd", "0.1", "--baseline", "x")
    assert result.exit_code == 1
    assert result.stderr.strip() == ("Error: give either --sd or --baseline/--system (the sd is then measured), "
                                     "not both")
    result = invoke(runner, None, "plan", "--mde", "-0.02", "--sd", "0.1")
    assert result.exit_code == 1 and result.stderr.strip() == "Error: --mde must be a positive number, got -0.02"
    planted(tmp_path)
    load(runner, sqlite_db, tmp_path)
    result = invoke(runner, sqlite_db, "plan", "--mde", "0.02", "--system", "nope")
    assert result.exit_code == 1 and result.stderr.startswith("Error: unknown system 'nope'")
