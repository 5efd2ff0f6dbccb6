"""The gate's measures of ``calibrate --judge`` (issue 47): kappas (quadratic-weighted, unweighted,
binarized) and leniency with bootstrap intervals over queries, tau and tau_ap over all systems and the top
5, per-query tau. Kernels against scikit-learn, scipy and the published values of the R package ircor
(Urbano and Marrero 2017, whose tauAP is Yilmaz, Aslam and Robertson's 2008 definition); the calibrate
report against the same peers on a world of eight systems judged by a lenient, noisy fake server."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from fake_llm_server import FakeLLM, serving
from judge_world import SECRET
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from ndcg_labeling.db.session import session_scope
from ndcg_labeling.labels import importing
from ndcg_labeling.quality import judge_agreement, kappa_from_confusion, tau_ap

# ircor's tests/testthat/helper_data.R and test_tauAP.R: (x = truth, y = estimate, y with ties), expected
# tauAP(x, y) and tauAP_a(x, y.ties), to 4 decimals
IRCOR = [
    ([0.897, 0.372, 0.908, 0.898, 0.661, 0.062, 0.177, 0.384, 0.498, 0.992],
     [0.82, 0.406, 0.817, 0.953, 0.673, 0.073, 0.364, 0.547, 0.589, 0.988],
     [0.8, 0.4, 0.8, 1, 0.7, 0.1, 0.4, 0.5, 0.6, 1], 0.8519, 0.7454),
    ([0.266, 0.573, 0.202, 0.945, 0.629, 0.206, 0.687, 0.77, 0.718, 0.38],
     [0.263, 0.843, 0.728, 0.928, 0.08, 0.114, 0.467, 0.641, 0.973, 0.644],
     [0.3, 0.8, 0.7, 0.9, 0.1, 0.1, 0.5, 0.6, 1, 0.6], 0.2504, 0.2692),
    ([0.185, 0.573, 0.944, 0.129, 0.468, 0.553, 0.761, 0.405, 0.976, 0.445],
     [0.845, 0.272, 0.275, 0.924, 0.605, 0.334, 0.162, 0.872, 0.018, 0.25],
     [0.8, 0.3, 0.3, 0.9, 0.6, 0.3, 0.2, 0.9, 0, 0.2], -0.6971, -0.5558),
]


@pytest.mark.parametrize(("x", "y", "y_ties", "expected", "expected_ties"), IRCOR)
def test_tau_ap_equals_the_published_values(x, y, y_ties, expected, expected_ties):
    assert tau_ap(x, y) == pytest.approx(expected, abs=5e-5)
    assert tau_ap(x, y_ties) == pytest.approx(expected_ties, abs=5e-5)


def test_tau_ap_by_hand_weighs_the_top():
    # truth A > B > C > D. Estimate B, A, C, D: C(2) = 0 of 1, C(3) = 2 of 2, C(4) = 3 of 3;
    # tau_ap = 2/3 * (0 + 1 + 1) - 1 = 1/3. Estimate A, B, D, C: 1 + 1 + 2/3 -> 2/3 * 8/3 - 1 = 7/9.
    truth = [4, 3, 2, 1]
    assert tau_ap(truth, [3, 4, 2, 1]) == pytest.approx(1 / 3)
    assert tau_ap(truth, [4, 3, 1, 2]) == pytest.approx(7 / 9)
    assert kendalltau(truth, [3, 4, 2, 1]).statistic == pytest.approx(kendalltau(truth, [4, 3, 1, 2]).statistic)
    assert tau_ap(truth, truth) == 1.0 and tau_ap(truth, truth[::-1]) == -1.0


def test_kappas_and_leniency_equal_scikit_learn_and_the_interval_resamples_queries():
    rng = np.random.default_rng(3)
    human = rng.integers(0, 4, 400)
    judge = np.clip(human + rng.choice([-1, 0, 0, 1, 1], 400), 0, 3)
    query = rng.integers(0, 40, 400)
    got = judge_agreement(human, judge, query, [0, 1, 2, 3], relevant_from=2, replicates=400, seed=1)
    assert got.kappa_quadratic == pytest.approx(cohen_kappa_score(human, judge, weights="quadratic"), abs=1e-12)
    assert got.kappa_unweighted == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)
    assert got.kappa_binary == pytest.approx(cohen_kappa_score(human >= 2, judge >= 2), abs=1e-12)
    assert got.leniency == pytest.approx(float(np.mean(judge - human)))
    for point, (low, high) in ((got.kappa_quadratic, got.kappa_quadratic_ci), (got.kappa_binary, got.kappa_binary_ci),
                               (got.kappa_unweighted, got.kappa_unweighted_ci), (got.leniency, got.leniency_ci)):
        assert low < point < high
    # the percentile interval over queries, replayed by hand with the same draws: resample query ids, pool pairs
    draws = np.random.default_rng(1).integers(0, 40, size=(400, 40))
    q_ids = np.unique(query)
    boot = []
    for row in draws:
        take = np.concatenate([np.flatnonzero(query == q_ids[d]) for d in row])
        boot.append(cohen_kappa_score(human[take], judge[take], weights="quadratic"))
    assert got.kappa_quadratic_ci == pytest.approx(tuple(np.quantile(boot, [0.025, 0.975])), abs=1e-12)
    # one category only: kappa undefined (NaN), as scikit-learn's 0/0
    assert np.isnan(kappa_from_confusion(np.array([[5.0, 0.0], [0.0, 0.0]])))


def cli(runner, db, *args: str):
    from ndcg_labeling.cli import app

    return runner.invoke(app, [*args, "--db", db.url], env={"OPENAI_API_KEY": SECRET, "NDCG_LABELING_PROGRESS": "plain"},
                         catch_exceptions=False)


def more_systems(world, tmp_path, n: int = 6) -> None:
    """Six more systems (eight in all): random orders of the ten documents, some of them of the pooled ones."""
    with session_scope(world.db.engine) as session:
        for s in range(n):
            rng = np.random.default_rng(100 + s)
            rows = [{"query_id": f"q{q:03d}", "doc_id": f"d{d:03d}", "rank": r, "score": 50 - r}
                    for q in range(8) for r, d in enumerate(rng.permutation(10), start=1)]
            path = tmp_path / f"run-extra{s}.csv"
            pd.DataFrame(rows).to_csv(path, index=False)
            importing.import_run(path, system=f"extra{s}", session=session)


def calibrated(runner, world, fake_kwargs: dict, grader: str) -> dict:
    with serving(FakeLLM(truth=world.truth, query_type=world.qtype, **fake_kwargs)) as fake:
        ran = cli(runner, world.db, "judge", "run", "--batch", world.batch, "--grader", grader, "--model", "m",
                  "--base-url", fake.url)
        assert ran.exit_code == 0, ran.output
    out = cli(runner, world.db, "calibrate", "--judge", grader, "--batch", world.batch, "--format", "json")
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def human_and_judge(db, grader: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from sqlalchemy import text

    with db.engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT c.query_id, c.value, j.grade FROM consensus_labels c JOIN judgments j ON j.query_id = c.query_id "
            "AND j.document_id = c.document_id JOIN graders g ON g.id = j.grader_id WHERE g.name = :g"), {"g": grader}).all()
    a = np.array(rows, dtype=float)
    return a[:, 0], np.rint(a[:, 1]).astype(int), a[:, 2].astype(int)


def test_calibrate_reports_the_gate_against_the_peers(runner, world, tmp_path):
    more_systems(world, tmp_path)
    assert cli(runner, world.db, "consensus", "--method", "median", "--batch", world.batch).exit_code == 0
    report = calibrated(runner, world, {"noisy": {"long-tail": 0.6}, "lenient": 0.4}, "lenient-judge")
    row = report["rows"][0]
    query, human, judge = human_and_judge(world.db, "lenient-judge")
    assert row["n"] == human.size
    assert row["kappa_binary"] == pytest.approx(cohen_kappa_score(human >= 2, judge >= 2), abs=1e-4)
    assert row["kappa_quadratic"] == pytest.approx(cohen_kappa_score(human, judge, weights="quadratic"), abs=1e-4)
    assert row["leniency"] == pytest.approx(float(np.mean(judge - human)), abs=1e-4) and row["leniency"] > 0.1
    for name in ("kappa_quadratic", "kappa_unweighted", "kappa_binary", "leniency"):
        assert row[f"{name}_low"] <= row[name] <= row[f"{name}_high"]
    assert report["relevant_from"] == 2 and "over queries" in report["interval"]
    means = row["system_means"]
    names = sorted(means, key=lambda s: -means[s]["human"])
    h = np.array([means[s]["human"] for s in names])
    j = np.array([means[s]["judge"] for s in names])
    assert row["n_systems"] == 8
    assert row["tau"] == pytest.approx(kendalltau(h, j).statistic, abs=1e-4)
    assert row["tau_top5"] == pytest.approx(kendalltau(h[:5], j[:5]).statistic, abs=1e-4)
    assert row["tau_ap"] == pytest.approx(tau_ap(h, j), abs=1e-4)
    assert row["tau_ap_top5"] == pytest.approx(tau_ap(h[:5], j[:5]), abs=1e-4)
    assert 0 < row["query_tau_n"] <= 8 and -1 <= row["query_tau_mean"] <= 1 and row["query_tau_sd"] >= 0
    assert report["model"] == "m" and len(report["template_sha256"]) == 64  # what the verdict measured
    # csv and the terminal carry them too
    csv = cli(runner, world.db, "calibrate", "--judge", "lenient-judge", "--batch", world.batch, "--format", "csv")
    header = csv.stdout.splitlines()[0].split(",")
    assert {"kappa_binary_low", "leniency_high", "tau_ap_top5", "query_tau_mean"} <= set(header)
    table = cli(runner, world.db, "calibrate", "--judge", "lenient-judge", "--batch", world.batch).stdout
    assert "the gate:" in table and "tau_ap top 5" in table and "Canary: none ran" in table
    gate_line = next(line for line in table.splitlines() if line.startswith("all ") and "[" in line)
    assert f"{row['kappa_binary']:.2f} [{row['kappa_binary_low']:.2f}, {row['kappa_binary_high']:.2f}]" in gate_line
    # a query type of two queries: no interval (a bootstrap over two queries says nothing)
    by_type = json.loads(cli(runner, world.db, "calibrate", "--judge", "lenient-judge", "--batch", world.batch, "--by",
                             "query-type", "--format", "json").stdout)["rows"][1]
    assert by_type["n_queries"] == 2 and by_type["kappa_binary"] is not None and by_type["kappa_binary_low"] is None


def test_a_judge_that_is_people_scores_one_everywhere(runner, world, tmp_path):
    more_systems(world, tmp_path)
    assert cli(runner, world.db, "consensus", "--method", "median", "--batch", world.batch).exit_code == 0
    row = calibrated(runner, world, {}, "exact-judge")["rows"][0]
    assert row["kappa_quadratic"] == row["kappa_quadratic_low"] == row["kappa_quadratic_high"] == 1.0
    assert row["leniency"] == row["leniency_low"] == row["leniency_high"] == 0.0
    assert row["tau"] == row["tau_ap"] == row["tau_top5"] == row["tau_ap_top5"] == 1.0
    assert row["query_tau_mean"] == 1.0 and row["query_tau_sd"] == 0.0


def test_per_query_tau_equals_pytrec_eval_and_scipy(runner, world, tmp_path):
    """Per query: NDCG@10 of each system under people's labels and under the judge's (pytrec_eval, with gains
    2^g - 1 as its linear gain, i.e. our exponential gain; unlabelled documents not relevant), then scipy's
    Kendall tau-b across the systems; the mean and standard deviation over the queries where it is defined."""
    import pytrec_eval
    from scipy.stats import kendalltau
    from sqlalchemy import text

    more_systems(world, tmp_path)
    assert cli(runner, world.db, "consensus", "--method", "median", "--batch", world.batch).exit_code == 0
    row = calibrated(runner, world, {"noisy": {"long-tail": 0.6, "navigational": 0.5}, "lenient": 0.4}, "jq")["rows"][0]
    with world.db.engine.connect() as conn:
        labels = conn.execute(text(
            "SELECT q.external_id, d.external_id, c.value, j.grade FROM consensus_labels c JOIN judgments j ON "
            "j.query_id = c.query_id AND j.document_id = c.document_id JOIN graders g ON g.id = j.grader_id "
            "JOIN queries q ON q.id = c.query_id JOIN documents d ON d.id = c.document_id WHERE g.name = 'jq'")).all()
        runs = conn.execute(text(
            "SELECT s.name, q.external_id, d.external_id, r.rank FROM ranking_entries r JOIN systems s ON "
            "s.id = r.system_id JOIN queries q ON q.id = r.query_id JOIN documents d ON d.id = r.document_id")).all()
    qrels = {"human": {}, "judge": {}}
    for q, d, human, judge in labels:
        qrels["human"].setdefault(q, {})[d] = 2 ** round(human) - 1
        qrels["judge"].setdefault(q, {})[d] = 2 ** judge - 1
    systems = sorted({r[0] for r in runs})
    run = {s: {} for s in systems}
    for s, q, d, rank in runs:
        if q in qrels["human"]:
            run[s].setdefault(q, {})[d] = 1000.0 - rank
    scores = {}
    for side in ("human", "judge"):
        evaluator = pytrec_eval.RelevanceEvaluator(qrels[side], {"ndcg_cut.10"})
        scores[side] = {s: evaluator.evaluate(run[s]) for s in systems}
    taus = []
    for q in sorted(qrels["human"]):
        h = [scores["human"][s].get(q, {}).get("ndcg_cut_10", 0.0) for s in systems]
        j = [scores["judge"][s].get(q, {}).get("ndcg_cut_10", 0.0) for s in systems]
        tau = kendalltau(np.round(h, 9), np.round(j, 9)).statistic
        if not np.isnan(tau):
            taus.append(tau)
    assert row["query_tau_n"] == len(taus) >= 4
    assert row["query_tau_mean"] == pytest.approx(np.mean(taus), abs=1e-4)
    assert row["query_tau_sd"] == pytest.approx(np.std(taus, ddof=1), abs=1e-4)
