"""``report --estimator ppi --judge GRADER``: every number equals :func:`ndcg_labeling.stats.ppi_mean` (itself
checked against ppi-python in tests/test_stats_ppi.py) on per-query NDCG computed independently by pytrec_eval
(trec_eval's C code, linear gain) from the test's own qrels: people's grades on the audited queries, the judge's
on every query."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from ndcg_labeling.stats import ppi_mean
from tests.conftest import invoke

SYSTEMS = ("alpha", "beta", "gamma")
TYPES = ("nav", "info")


def _world(tmp_path: Path, seed: int = 3, n_queries: int = 20) -> dict:
    rng = np.random.default_rng(seed)
    queries = [f"q{i:02d}" for i in range(n_queries)]
    qtype = {q: TYPES[i % 2] for i, q in enumerate(queries)}
    audited = [q for i, q in enumerate(queries) if i % 5 in (0, 3)]  # 8 queries, 4 of each type
    human: dict[str, dict[str, int]] = {}
    judge: dict[str, dict[str, int]] = {}
    rows = ["query_id,doc_id,grader,grade"]
    for q in queries:
        judge[q] = {}
        for j in range(12):
            d, truth = f"{q}-d{j:02d}", int(rng.integers(0, 4))
            judge[q][d] = int(np.clip(truth + rng.integers(0, 2), 0, 3))  # lenient by half a grade
            rows.append(f"{q},{d},llm,{judge[q][d]}")
            if q in audited:
                human.setdefault(q, {})[d] = truth
                rows.append(f"{q},{d},ann,{truth}")
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for s_i, s in enumerate(SYSTEMS):
        runs[s], lines = {}, []
        for i, q in enumerate(queries):
            if (i + s_i) % 9 == 4:  # returned nothing for this query: 0 for it
                continue
            docs = rng.choice([f"{q}-d{j:02d}" for j in range(16)], size=10, replace=False)  # some unjudged
            runs[s][q] = {str(d): float(10 - r) for r, d in enumerate(docs)}
            lines += [f"{q} Q0 {d} {r + 1} {10 - r} {s}" for r, d in enumerate(docs)]
        (tmp_path / f"{s}.run").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "judgments.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "queries.csv").write_text(
        "query_id,text,query_type\n" + "".join(f"{q},text {q},{qtype[q]}\n" for q in queries), encoding="utf-8")
    return {"queries": queries, "qtype": qtype, "audited": audited, "human": human, "judge": judge, "runs": runs}


def _load(runner, db, tmp_path: Path) -> None:
    assert invoke(runner, db, "import", "queries", str(tmp_path / "queries.csv")).exit_code == 0
    for s in SYSTEMS:
        assert invoke(runner, db, "import", "run", str(tmp_path / f"{s}.run"), "--system", s).exit_code == 0
    assert invoke(runner, db, "graders", "add", "llm", "--kind", "model").exit_code == 0
    result = invoke(runner, db, "import", "judgments", str(tmp_path / "judgments.csv"), "--scale", "0-3",
                    "--create-graders")
    assert result.exit_code == 0, result.output
    result = invoke(runner, db, "consensus", "--method", "median")  # people only: model graders are left out
    assert result.exit_code == 0, result.output


def _per_query(qrels: dict, runs: dict, queries: list[str]) -> dict[str, np.ndarray]:
    out = {}
    for s in SYSTEMS:
        theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut"}).evaluate(runs[s])
        out[s] = np.array([theirs[q]["ndcg_cut_10"] if q in theirs else 0.0 for q in queries])
    return out


def test_ppi_report_equals_the_kernel_on_trec_eval_values(runner, db, tmp_path):
    w = _world(tmp_path)
    _load(runner, db, tmp_path)
    result = invoke(runner, db, "report", "--estimator", "ppi", "--judge", "llm", "--metric", "ndcg@10",
                    "--gain", "linear", "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["queries"] == 20 and report["audited"] == 8 and report["baseline"] == "alpha"
    qs = w["queries"]
    judge = _per_query(w["judge"], w["runs"], qs)
    human = _per_query(w["human"], w["runs"], qs)  # only the audited queries are read below
    audit = np.array([q in w["audited"] for q in qs])
    rows = {(r["system"], r["baseline"], r["query_type"]): r for r in report["rows"]}
    assert len(rows) == 3 * (len(SYSTEMS) + len(SYSTEMS) - 1)
    checked = 0
    for group in ("all", *TYPES):
        g = np.array([group == "all" or w["qtype"][q] == group for q in qs])
        for s in SYSTEMS:
            for base in (None, "alpha") if s != "alpha" else (None,):
                j = judge[s] - (judge[base] if base else 0)
                h = human[s] - (human[base] if base else 0)
                want = ppi_mean(j[g], h[g & audit], j[g & audit], interval="t")
                got = rows[(s, base, group)]
                assert got["audited"] == int((g & audit).sum()) and got["queries"] == int(g.sum())
                for ours, theirs in (("estimate", want.estimate), ("ci_low", want.ci_low), ("ci_high", want.ci_high),
                                     ("lam", want.lam), ("judge_bias", want.judge_bias), ("human", want.human),
                                     ("human_ci_low", want.human_low), ("human_ci_high", want.human_high),
                                     ("effective_n", want.effective_n), ("judge_only", float(j[g].mean()))):
                    assert got[ours] == pytest.approx(theirs, abs=1e-9), (s, base, group, ours)
                checked += 1
    assert checked == 15
    # the judge is lenient: its measured bias on NDCG is not zero somewhere
    assert any(abs(r["judge_bias"]) > 0.01 for r in report["rows"])


def test_ppi_report_table_and_csv(runner, sqlite_db, tmp_path):
    _world(tmp_path)
    _load(runner, sqlite_db, tmp_path)
    result = invoke(runner, sqlite_db, "report", "--estimator", "ppi", "--judge", "llm", "--by", "none")
    assert result.exit_code == 0, result.output
    assert "20 queries judged, 8 audited" in result.stdout and "beta - alpha" in result.stdout
    result = invoke(runner, sqlite_db, "report", "--estimator", "ppi", "--judge", "llm", "--format", "csv",
                    "--by", "none")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 5 and {"estimate", "ci_low", "effective_n", "judge_bias", "human_ci_low"} <= set(rows[0])


@pytest.mark.parametrize("args,message", [
    (("--judge", "nobody"), "unknown grader 'nobody'"),
    ((), "--estimator ppi needs --judge"),
    (("--judge", "llm", "--metric", "judged@10"), "not judged@10"),
    (("--judge", "llm", "--gate", "ndcg@10"), "--gate does not go with --estimator ppi"),
])
def test_ppi_report_refusals(runner, sqlite_db, tmp_path, args, message):
    _world(tmp_path)
    _load(runner, sqlite_db, tmp_path)
    result = invoke(runner, sqlite_db, "report", "--estimator", "ppi", *args)
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_ppi_report_refuses_an_empty_audit(runner, db, tmp_path):
    _world(tmp_path)
    assert invoke(runner, db, "import", "queries", str(tmp_path / "queries.csv")).exit_code == 0
    for s in SYSTEMS:
        assert invoke(runner, db, "import", "run", str(tmp_path / f"{s}.run"), "--system", s).exit_code == 0
    assert invoke(runner, db, "graders", "add", "llm", "--kind", "model").exit_code == 0
    only_judge = [ln for ln in (tmp_path / "judgments.csv").read_text().splitlines() if ",ann," not in ln]
    (tmp_path / "j.csv").write_text("\n".join(only_judge) + "\n", encoding="utf-8")
    assert invoke(runner, db, "import", "judgments", str(tmp_path / "j.csv"), "--scale", "0-3").exit_code == 0
    result = invoke(runner, db, "report", "--estimator", "ppi", "--judge", "llm")
    assert result.exit_code == 1
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: the audit is 0 queries"), result.output
