"""``online report`` on a simulated A/B test with known truth: every figure against an independent
computation here (pytrec_eval on the rebuilt lists for NDCG, direct counts for rates, statsmodels'
cluster-robust standard errors, scipy's Kendall tau), and the headline names the planted conflict only."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
import statsmodels.api as sm
from online_sim import LIST_LEN, N_DOCS, did, qid, simulate, write_labels, write_parquet
from scipy import stats as sps

from tests.conftest import Database, invoke

DAY = 86400.0


@pytest.fixture(scope="module")
def sim():
    return simulate()


@pytest.fixture(scope="module")
def store(sim, tmp_path_factory):
    """A SQLite label store: queries with types, two agreeing graders (consensus = truth where judged),
    then a third grader 'clicky' (batch b2, every pair, grade min(truth + 1, 3)) after the consensus."""
    from typer.testing import CliRunner

    tmp = tmp_path_factory.mktemp("online")
    db = Database("sqlite", tmp, migrated=True)
    runner = CliRunner()
    queries, judgments = write_labels(sim, tmp)
    for args in (("import", "queries", queries), ("import", "judgments", judgments, "--scale", "0-3", "--create-graders"),
                 ("consensus", "--method", "median")):
        result = invoke(runner, db, *args)
        assert result.exit_code == 0, result.output
    clicky = tmp / "clicky.csv"
    clicky.write_text("query_id,doc_id,grader,grade,batch\n" + "".join(
        f"{qid(q)},{did(q, d)},clicky,{min(sim.truth[q, d] + 1, 3)},b2\n"
        for q in range(sim.truth.shape[0]) for d in range(N_DOCS)), encoding="utf-8")
    assert invoke(runner, db, "import", "judgments", str(clicky), "--scale", "0-3", "--create-graders").exit_code == 0
    log = write_parquet(sim, tmp / "ab.parquet")
    yield db, log
    db.drop()


def report(runner, db, log, *args):  # noqa: ANN001, ANN201
    result = invoke(runner, db, "online", "report", log, "--baseline", "control", "--format", "json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def requests_frame(sim, labels: dict[tuple[str, str], float]) -> pd.DataFrame:  # noqa: ANN001
    """One row per request, computed here: pytrec_eval's ndcg_cut.10 (gain 2^g - 1 as the qrels' integer
    relevance), any click, any conversion, first ts, user; the judged positions."""
    df = pd.DataFrame(sim.rows)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for rid, g in df.groupby("request_id"):
        q = g["query_id"].iloc[0]
        qrels[rid] = {d: int(2 ** v - 1) for (qq, d), v in labels.items() if qq == q}
        run[rid] = {d: -float(p) for d, p in zip(g["doc_id"], g["position"], strict=True)}
    ndcg = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    df["judged"] = [(q, d) in labels for q, d in zip(df["query_id"], df["doc_id"], strict=True)]
    out = df.groupby("request_id").agg(arm=("arm", "first"), query_id=("query_id", "first"), ts=("ts", "min"),
                                       user=("user_id", "first"), clicked=("clicked", "max"),
                                       converted=("converted", "max"), judged=("judged", "sum"),
                                       positions=("doc_id", "size"))
    out["ndcg"] = [ndcg[r]["ndcg_cut_10"] for r in out.index]
    out["qtype"] = [sim.qtype[int(q[1:])] for q in out["query_id"]]
    return out


def truth_labels(sim) -> dict[tuple[str, str], float]:  # noqa: ANN001
    return {(qid(q), did(q, d)): float(sim.truth[q, d]) for q in range(sim.truth.shape[0]) for d in range(N_DOCS)
            if sim.judged[q, d]}


def cluster_se(y: np.ndarray, groups: np.ndarray) -> float:
    fit = sm.OLS(y, np.ones((y.size, 1))).fit(cov_type="cluster", cov_kwds={"groups": pd.factorize(groups)[0]})
    return float(fit.bse[0])


@pytest.fixture(scope="module")
def expected(sim):
    return requests_frame(sim, truth_labels(sim))


@pytest.fixture(scope="module")
def out(store, runner_module):
    db, log = store
    return report(runner_module, db, log, "--window", "1d")


@pytest.fixture(scope="module")
def runner_module():
    from typer.testing import CliRunner

    return CliRunner()


MEASURES = {"ndcg@10": "ndcg", "ctr": "clicked", "conversion": "converted"}


def test_arm_figures_equal_independent_computation(out, expected):
    rows = {(r["query_type"], r["arm"], r["measure"]): r for r in out["arms"]}
    assert {m for _, _, m in rows} == set(MEASURES)  # no watch_ratio column in this log
    for qt in ("all", "head", "torso", "tail"):
        sub = expected if qt == "all" else expected[expected["qtype"] == qt]
        for measure, col in MEASURES.items():
            base = sub[sub["arm"] == "control"]
            se_b = cluster_se(base[col].to_numpy(float), base["user"].to_numpy())
            for arm in ("control", "better", "same"):
                got, mine = rows[(qt, arm, measure)], sub[sub["arm"] == arm]
                y = mine[col].to_numpy(float)
                assert got["n"] == len(mine)
                assert got["mean"] == pytest.approx(y.mean(), abs=1e-9)
                se = cluster_se(y, mine["user"].to_numpy())
                assert got["n_clusters"] == mine["user"].nunique()
                assert got["ci_low"] <= got["mean"] <= got["ci_high"]
                width = got["ci_high"] - got["ci_low"]
                assert width == pytest.approx(2 * 1.959964 * se, rel=0.3)  # percentile bootstrap vs normal
                if arm == "control":
                    assert got["diff"] is None
                    continue
                diff = y.mean() - base[col].mean()
                se_d = math.hypot(se, se_b)
                assert got["diff"] == pytest.approx(diff, abs=1e-9)
                assert got["diff_low"] == pytest.approx(diff - 1.959964 * se_d, abs=1e-6)
                assert got["diff_high"] == pytest.approx(diff + 1.959964 * se_d, abs=1e-6)
                assert got["p"] == pytest.approx(2 * sps.norm.sf(abs(diff) / se_d), rel=1e-6, abs=1e-12)


def test_judged_share_per_arm(out, expected):
    for arm, share in out["judged"].items():
        mine = expected[expected["arm"] == arm]
        assert share == pytest.approx(mine["judged"].sum() / mine["positions"].sum(), abs=1e-12)
        assert share < 1.0  # some documents are unjudged in the simulation
    assert out["warnings"] == []  # above 90% in every arm


def test_headline_names_exactly_the_planted_conflict(out):
    assert [(h["query_type"], h["arm"], h["measure"]) for h in out["headline"]] == [("head", "better", "conversion")]
    assert out["headline"][0]["text"].startswith("head: better beats control on ndcg@10 by +")
    assert "yet loses on conversion by -" in out["headline"][0]["text"]


def test_windows_equal_direct_counts(out, expected):
    e = expected.assign(window=np.floor(expected["ts"] / DAY) * DAY)
    got = {(r["window_start_s"], r["arm"], r["query_type"]): r for r in out["windows"]}
    n_cells = 0
    for (w, arm, qt), g in e.groupby(["window", "arm", "qtype"]):
        r = got[(w, arm, qt)]
        assert r["n"] == len(g)
        assert r["metric"] == pytest.approx(g["ndcg"].mean(), abs=1e-9)
        assert r["ctr"] == g["clicked"].sum() / len(g)
        assert r["conversion"] == g["converted"].sum() / len(g)
        assert r["metric_ci_low"] <= r["metric"] <= r["metric_ci_high"]
        base = e[(e["window"] == w) & (e["arm"] == "control") & (e["qtype"] == qt)]
        if arm != "control" and g["user"].nunique() > 1 and base["user"].nunique() > 1:
            assert r["ctr_diff"] == pytest.approx(g["clicked"].mean() - base["clicked"].mean(), abs=1e-12)
            se_d = math.hypot(cluster_se(g["ndcg"].to_numpy(float), g["user"].to_numpy()),
                              cluster_se(base["ndcg"].to_numpy(float), base["user"].to_numpy()))
            diff = g["ndcg"].mean() - base["ndcg"].mean()
            assert r["metric_diff"] == pytest.approx(diff, abs=1e-9)
            assert r["metric_p"] == pytest.approx(2 * sps.norm.sf(abs(diff) / se_d), rel=1e-6, abs=1e-12)
        n_cells += 1
    for (w, arm), g in e.groupby(["window", "arm"]):
        assert got[(w, arm, "all")]["n"] == len(g)
        n_cells += 1
    assert n_cells == len(out["windows"])


def test_agreement_is_kendall_tau_of_the_cell_differences(out, expected):
    e = expected.assign(window=np.floor(expected["ts"] / DAY) * DAY)
    means = e.groupby(["window", "qtype", "arm"])[["ndcg", "clicked", "converted"]].mean()
    rows = {(r["arm"], r["measure"]): r for r in out["agreement"]}
    for arm in ("better", "same"):
        for measure, col in (("ctr", "clicked"), ("conversion", "converted")):
            dx, dy = [], []
            for (w, qt), _ in e.groupby(["window", "qtype"]):
                a, b = means.loc[(w, qt, arm)], means.loc[(w, qt, "control")]
                dx.append(a["ndcg"] - b["ndcg"])
                dy.append(a[col] - b[col])
            tau = sps.kendalltau(dx, dy).statistic
            r = rows[(arm, measure)]
            assert r["n_cells"] == len(dx)
            assert r["tau"] == pytest.approx(tau, abs=1e-12)
            assert r["ci_low"] <= r["tau"] <= r["ci_high"]


def test_labels_from_a_grader_and_consensus_first(store, runner_module, sim):
    db, log = store
    clicky = {(qid(q), did(q, d)): float(min(sim.truth[q, d] + 1, 3)) for q in range(sim.truth.shape[0])
              for d in range(N_DOCS)}
    both = {**clicky, **truth_labels(sim)}
    for spec, labels in (("clicky", clicky), ("consensus,clicky", both)):
        got = report(runner_module, db, log, "--labels", spec)
        e = requests_frame(sim, labels)
        rows = {(r["query_type"], r["arm"], r["measure"]): r for r in got["arms"]}
        for arm in ("control", "better", "same"):
            assert rows[("all", arm, "ndcg@10")]["mean"] == pytest.approx(e[e["arm"] == arm]["ndcg"].mean(), abs=1e-9)
            assert got["judged"][arm] == 1.0
        assert got["labels"] == spec


def test_other_registry_metric_and_linear_gain(store, runner_module, sim, expected):
    db, log = store
    labels = truth_labels(sim)
    got = report(runner_module, db, log, "--metric", "p@5")
    df = pd.DataFrame(sim.rows)
    df["rel"] = [labels.get((q, d), 0.0) >= 1 for q, d in zip(df["query_id"], df["doc_id"], strict=True)]
    df = df.sort_values(["request_id", "position"])
    p5 = df.groupby("request_id")["rel"].apply(lambda s: s.iloc[:5].sum() / 5)
    rows = {(r["query_type"], r["arm"], r["measure"]): r for r in got["arms"]}
    for arm in ("control", "better"):
        ids = expected.index[expected["arm"] == arm]
        assert rows[("all", arm, "p@5")]["mean"] == pytest.approx(p5.loc[ids].mean(), abs=1e-9)
    # linear gain: pytrec_eval with the grades themselves as relevance
    lin = report(runner_module, db, log, "--gain", "linear")
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for rid, g in df.groupby("request_id"):
        q = g["query_id"].iloc[0]
        qrels[rid] = {d: int(v) for (qq, d), v in labels.items() if qq == q}
        run[rid] = {d: -float(p) for d, p in zip(g["doc_id"], g["position"], strict=True)}
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    rows = {(r["query_type"], r["arm"], r["measure"]): r for r in lin["arms"]}
    ids = expected.index[expected["arm"] == "same"]
    assert rows[("all", "same", "ndcg@10")]["mean"] == pytest.approx(np.mean([ev[r]["ndcg_cut_10"] for r in ids]),
                                                                      abs=1e-9)
    assert LIST_LEN == 10


def test_formats(store, runner_module, tmp_path):
    db, log = store
    base = ["online", "report", log, "--baseline", "control", "--window", "1d"]
    table = invoke(runner_module, db, *base)
    assert table.exit_code == 0 and "head: better beats control on ndcg@10" in table.stdout
    csv = invoke(runner_module, db, *base, "--format", "csv")
    assert csv.stdout.startswith("section,query_type,arm,measure,n,mean")
    assert "\nheadline,head,better,conversion," in csv.stdout
    page = invoke(runner_module, db, *base, "--format", "html")
    assert page.stdout.count("<svg") == 3 and "<script" not in page.stdout  # ndcg, ctr, conversion
    data = json.loads(invoke(runner_module, db, *base, "--format", "json").stdout)
    assert {"arms", "windows", "agreement", "headline"} <= set(data)


def test_bad_input_is_one_line(store, runner_module, tmp_path):
    db, log = store
    bad = tmp_path / "bad.csv"
    bad.write_text("request_id,query_id,doc_id,position,clicked,ts,arm\nr1,q000,q000d00,1,0,5,a\n"
                   "r1,q000,q000d01,2,0,5,\n", encoding="utf-8")
    result = invoke(runner_module, db, "online", "report", str(bad), "--baseline", "a")
    assert result.exit_code == 1
    assert result.stderr.strip() == f"Error: {bad}:3: arm is empty (nothing was stored)"
    twice = tmp_path / "twice.csv"
    twice.write_text("request_id,query_id,doc_id,position,clicked,ts,arm\nr1,q000,q000d00,1,0,5,a\n"
                     "r1,q000,q000d01,1,0,5,a\n", encoding="utf-8")
    result = invoke(runner_module, db, "online", "report", str(twice), "--baseline", "a")
    assert result.exit_code == 1 and "request 'r1': two documents at position 1" in result.stderr
    result = invoke(runner_module, db, "online", "report", log, "--baseline", "nope")
    assert result.exit_code == 1 and "--baseline: no arm 'nope'" in result.stderr
    result = invoke(runner_module, db, "online", "report", log, "--baseline", "control", "--labels", "nobody")
    assert result.exit_code == 1 and "no grader 'nobody'" in result.stderr


def test_an_unknown_engine_has_one_message_and_nothing_is_read():
    from ndcg_labeling.engines import get_engine
    from ndcg_labeling.errors import NdcgLabelingError
    from ndcg_labeling.experiments.report import OnlineOptions, online_report

    message = "--engine: unknown engine 'nope'; use duckdb or spark"
    with pytest.raises(NdcgLabelingError) as err:  # no session, no such log: refused before either is used
        online_report(["no/such/log.csv"], OnlineOptions(baseline="a", engine="nope"), session=None)
    assert str(err.value) == message
    with pytest.raises(NdcgLabelingError) as err:
        get_engine("nope")
    assert str(err.value) == message


def test_option_and_column_errors_name_the_option_and_the_file(store, runner_module, tmp_path):
    db, log = store
    result = invoke(runner_module, db, "online", "report", log, "--baseline", "control", "--window", "soon")
    assert result.exit_code == 1
    assert result.stderr.strip() == "Error: --window: 'soon' is not a positive duration such as 15m, 1h or 1d"
    no_arm = tmp_path / "no_arm.csv"
    no_arm.write_text("request_id,query_id,doc_id,position,clicked,ts\nr1,q000,q000d00,1,0,5\n", encoding="utf-8")
    result = invoke(runner_module, db, "online", "report", str(no_arm), "--baseline", "a")
    assert result.exit_code == 1 and result.stderr.startswith(f"Error: {no_arm}: no column 'arm'")


def test_watch_ratio_is_the_mean_of_request_means(store, runner_module, tmp_path):
    db, _ = store
    rng = np.random.default_rng(9)
    lines = ["request_id,query_id,doc_id,position,clicked,ts,arm,watch_ratio"]
    per_request: dict[str, tuple[str, list[float]]] = {}
    for r in range(200):
        arm = ("a", "b")[r % 2]
        seen = []
        for p in range(1, 4):
            w = "" if rng.random() < 0.3 else f"{rng.random() * 2:.3f}"
            if w:
                seen.append(float(w))
            lines.append(f"r{r},q000,q000d{p:02d},{p},0,{1000 + r},{arm},{w}")
        per_request[f"r{r}"] = (arm, seen)
    log = tmp_path / "watch.csv"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = json.loads(invoke(runner_module, db, "online", "report", str(log), "--baseline", "a", "--format",
                            "json").stdout)
    rows = {(r["arm"], r["measure"]): r for r in out["arms"] if r["query_type"] == "all"}
    for arm in ("a", "b"):
        means = [sum(v) / len(v) for a, v in per_request.values() if a == arm and v]
        assert rows[(arm, "watch_ratio")]["n"] == len(means)
        assert rows[(arm, "watch_ratio")]["mean"] == pytest.approx(float(np.mean(means)), abs=1e-9)
    assert ("a", "conversion") not in rows  # no converted column: no conversion rate


def test_low_judged_share_warns(store, runner_module, tmp_path):
    db, _ = store
    lines = ["request_id,query_id,doc_id,position,clicked,ts,arm"]
    for r in range(20):
        docs = ["q000d00", "unknown1", "unknown2"]  # one judged document of three: 33% judged
        lines += [f"r{r},q000,{d},{p},0,{r},{('a', 'b')[r % 2]}" for p, d in enumerate(docs, start=1)]
    log = tmp_path / "thin.csv"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = json.loads(invoke(runner_module, db, "online", "report", str(log), "--baseline", "a", "--format",
                            "json").stdout)
    assert out["judged"] == {"a": pytest.approx(1 / 3), "b": pytest.approx(1 / 3)}
    assert out["warnings"] == [f"arm {a}: only 33.3% of the scored positions are judged (below 90%); unjudged "
                               "documents count as not relevant" for a in ("a", "b")]


def test_table_shows_arm_names_and_labels_inert(store, runner_module, tmp_path):
    """An arm name from the log and a --labels value with a terminal escape (ESC [2J clears the screen)
    print as visible text in the table; JSON keeps the value as it is."""
    db, _ = store
    evil = "\x1b[2Jevil"
    lines = ["request_id,query_id,doc_id,position,clicked,ts,arm"]
    for r in range(40):
        arm = ("control", evil)[r % 2]
        lines += [f"r{r},q000,q000d{p:02d},{p},{int(p == 1)},{1000 + r},{arm}" for p in range(1, 4)]
    log = tmp_path / "esc.csv"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = invoke(runner_module, db, "online", "report", str(log), "--baseline", "control")
    assert table.exit_code == 0, table.output
    assert "\x1b" not in table.stdout and "\\x1b[2Jevil" in table.stdout
    data = json.loads(invoke(runner_module, db, "online", "report", str(log), "--baseline", "control",
                             "--format", "json").stdout)
    assert evil in {r["arm"] for r in data["arms"]}
