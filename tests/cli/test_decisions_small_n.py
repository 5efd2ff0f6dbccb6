"""Issue 35 / issue 30: decisions that hold at small n, one test per headline line, and a gate that tests
the drop against --max-drop in every group. Scores from pytrec_eval, tests from scipy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from scipy.stats import ttest_1samp, ttest_rel

from tests.conftest import invoke


def _write(tmp_path: Path, runs: dict[str, dict[str, list[str]]], qrels: dict[str, dict[str, int]],
           qtype: dict[str, str]) -> dict[str, np.ndarray]:
    judgments = ["query_id,doc_id,grader,grade"]
    for q, rel in qrels.items():
        for d, r in rel.items():
            judgments.extend(f"{q},{d},{g},{r}" for g in ("ann", "bob", "cid"))
    for s, lists in runs.items():
        lines = [f"{q} Q0 {d} {r} {100 - r} {s}" for q, ranked in lists.items() for r, d in enumerate(ranked, 1)]
        (tmp_path / f"{s}.run").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "judgments.csv").write_text("\n".join(judgments) + "\n", encoding="utf-8")
    (tmp_path / "queries.csv").write_text("query_id,text,query_type\n" + "".join(
        f"{q},text {q},{t}\n" for q, t in qtype.items()), encoding="utf-8")
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut"})
    out = {}
    for s, lists in runs.items():
        scores = evaluator.evaluate({q: {d: float(100 - r) for r, d in enumerate(ranked, 1)}
                                     for q, ranked in lists.items()})
        out[s] = np.array([scores[q]["ndcg_cut_10"] for q in sorted(qrels)])
    return out


def _load(runner, db, tmp_path: Path, systems) -> None:
    assert invoke(runner, db, "import", "queries", str(tmp_path / "queries.csv")).exit_code == 0
    for s in systems:
        assert invoke(runner, db, "import", "run", str(tmp_path / f"{s}.run"), "--system", s).exit_code == 0
    assert invoke(runner, db, "import", "judgments", str(tmp_path / "judgments.csv"), "--scale", "0-3",
                  "--create-graders").exit_code == 0
    assert invoke(runner, db, "consensus", "--method", "median").exit_code == 0


def _planted(n: int, seed: int, drop_types: tuple[str, ...] = ("nav", "info"), n_nav: int | None = None):
    """base; 'worse': the first relevant document moved to the bottom on the queries of drop_types;
    'same': base again."""
    rng = np.random.default_rng(seed)
    runs: dict[str, dict[str, list[str]]] = {"base": {}, "worse": {}, "same": {}}
    qrels, qtype = {}, {}
    n_nav = n // 2 if n_nav is None else n_nav
    for i in range(n):
        q = f"q{i:02d}"
        qtype[q] = "nav" if i < n_nav else "info"
        docs = [f"{q}-d{j}" for j in range(12)]
        qrels[q] = {d: int(j < 3) for j, d in enumerate(docs)}
        base = list(rng.permutation(docs)[:10])
        first = next(d for d in docs if qrels[q][d])
        base = [first] + [d for d in base if d != first][:9]
        runs["base"][q] = runs["same"][q] = base
        runs["worse"][q] = base[1:] + [first] if qtype[q] in drop_types else base
    return runs, qrels, qtype


def test_three_queries_are_too_few_and_identical_systems_say_so(runner, sqlite_db, tmp_path):
    runs, qrels, qtype = _planted(3, seed=1)
    nd = _write(tmp_path, runs, qrels, qtype)
    _load(runner, sqlite_db, tmp_path, runs)
    assert np.all(nd["worse"] < nd["base"])  # worse on every one of the 3 queries
    report = json.loads(invoke(runner, sqlite_db, "report", "--format", "json", "--metric", "ndcg@10",
                               "--baseline", "base").stdout)
    overall = {h["system"]: h for h in report["headline"] if h["query_type"] == "all" and h["kind"] != "best"}
    assert overall["worse"]["kind"] == "too few queries"
    assert "too few queries to test (n = 3; a sign-flip test needs >= 6)" in overall["worse"]["text"]
    assert "identical on every one of 3 queries" in overall["same"]["text"]
    assert not any("MDE ±0.00" in h["text"] for h in report["headline"])
    # the gate cannot pass on what it cannot test
    gate = invoke(runner, sqlite_db, "report", "--gate", "ndcg@10", "--baseline", "base", "--system", "same", "--quiet")
    assert gate.exit_code == 3 and "too few queries to test" in gate.stderr


def test_headline_lines_show_the_deciding_tests_interval_and_p(runner, sqlite_db, tmp_path):
    runs, qrels, qtype = _planted(30, seed=3)
    nd = _write(tmp_path, runs, qrels, qtype)
    _load(runner, sqlite_db, tmp_path, runs)
    report = json.loads(invoke(runner, sqlite_db, "report", "--format", "json", "--metric", "ndcg@10",
                               "--baseline", "base").stdout)
    c = report["comparisons"]["worse"]["all"]["ndcg@10"]
    peer = ttest_rel(nd["worse"], nd["base"])
    low, high = peer.confidence_interval(0.95)
    assert c["t_ci_low"] == pytest.approx(low, abs=1e-9) and c["t_ci_high"] == pytest.approx(high, abs=1e-9)
    # the line shows the Bonferroni-corrected p and its simultaneous interval (each at 1 - 0.05 / m)
    m = c["n_compared"]
    assert m == len(report["comparisons"]) >= 2
    low, high = peer.confidence_interval(1 - 0.05 / m)
    assert c["t_ci_adj_low"] == pytest.approx(low, abs=1e-9) and c["t_ci_adj_high"] == pytest.approx(high, abs=1e-9)
    assert c["t_p_bonf"] == pytest.approx(min(1.0, m * peer.pvalue), abs=1e-12)
    line = next(h for h in report["headline"] if h["query_type"] == "all" and h["system"] == "worse")
    assert line["kind"] == "worse" and f"[{low:+.3f}, {high:+.3f}]" in line["text"]
    for h in report["headline"]:  # never "no detectable difference" beside an interval excluding 0
        if h["kind"] == "no detectable difference" and "[" in h["text"]:
            lo, hi = (float(x) for x in h["text"].split("[", 1)[1].split("]", 1)[0].split(","))
            assert lo <= 0 <= hi, h["text"]
    assert "paired t-test" in invoke(runner, sqlite_db, "report", "--metric", "ndcg@10").stdout


def test_gate_tests_the_drop_against_max_drop_one_sided(runner, sqlite_db, tmp_path):
    runs, qrels, qtype = _planted(40, seed=5)
    nd = _write(tmp_path, runs, qrels, qtype)
    _load(runner, sqlite_db, tmp_path, runs)
    d = nd["worse"] - nd["base"]
    low, high = ttest_rel(nd["worse"], nd["base"]).confidence_interval(0.95)
    allowed = round(float(-d.mean()) - 0.005, 3)  # the interval [low, high] straddles -allowed
    assert low < -allowed < high
    assert ttest_1samp(d + allowed, 0, alternative="less").pvalue > 0.05  # not significantly beyond it
    # the old gate failed this system (its drop is significant against 0 and larger than max-drop)
    assert ttest_rel(nd["worse"], nd["base"]).pvalue < 0.05 and d.mean() < -allowed
    result = invoke(runner, sqlite_db, "report", "--gate", "NDCG@10", "--baseline", "base", "--system", "worse",
                    "--max-drop", str(allowed), "--quiet")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # --quiet: the verdict only
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith(f"gate passed (no drop significantly larger than {allowed:g}")
    assert "would be found with 80% power (MDE ±" in line
    strict = ttest_1samp(d + 0.01, 0, alternative="less").pvalue
    assert strict < 0.05
    failed = invoke(runner, sqlite_db, "report", "--gate", "ndcg@10", "--baseline", "base", "--system", "worse",
                    "--max-drop", "0.01", "--quiet")
    assert failed.exit_code == 3
    p_text = "p < 0.001" if strict < 0.001 else f"p = {strict:.3f}"
    assert f"one-sided {p_text} (Holm)" in failed.stderr


def test_gate_by_query_type_finds_a_drop_on_one_type(runner, sqlite_db, tmp_path):
    runs, qrels, qtype = _planted(60, seed=7, drop_types=("nav",), n_nav=12)
    nd = _write(tmp_path, runs, qrels, qtype)
    _load(runner, sqlite_db, tmp_path, runs)
    d = nd["worse"] - nd["base"]
    nav = np.array([qtype[q] == "nav" for q in sorted(qrels)])
    max_drop = 0.08
    p_all = ttest_1samp(d + max_drop, 0, alternative="less").pvalue
    p_nav = ttest_1samp(d[nav] + max_drop, 0, alternative="less").pvalue
    p_info = ttest_1samp(d[~nav] + max_drop, 0, alternative="less").pvalue
    assert p_all > 0.05 and min(3 * p_nav, 1) < 0.05  # overall passes; nav fails even after Holm over 3
    overall = invoke(runner, sqlite_db, "report", "--gate", "ndcg@10", "--baseline", "base", "--system", "worse",
                     "--max-drop", str(max_drop), "--quiet")
    assert overall.exit_code == 0, overall.output
    grouped = invoke(runner, sqlite_db, "report", "--gate", "ndcg@10", "--baseline", "base", "--system", "worse",
                     "--max-drop", str(max_drop), "--by", "query-type", "--quiet")
    assert grouped.exit_code == 3, grouped.output
    line = grouped.stderr.strip().splitlines()[-1]
    assert "over 3 gated rows, Holm-corrected" in line and "worse vs base on ndcg@10 (nav)" in line
    holm_nav = min(1.0, 3 * p_nav)  # the smallest of the three p-values gets the factor 3
    assert p_nav <= min(p_all, p_info)
    text = "p < 0.001" if holm_nav < 0.001 else f"p = {holm_nav:.3f}"
    assert "(nav): " in line and f"one-sided {text} (Holm)" in line
