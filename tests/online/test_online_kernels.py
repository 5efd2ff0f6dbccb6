"""The online kernels: the exact NDCG/DCG kernel against the metric registry, rebuilding refusals,
fixed-point sums merging and un-merging exactly, tau-b against scipy, and the report on PostgreSQL."""

from __future__ import annotations

import json

import numpy as np
import pytest
from online_sim import simulate, write_labels, write_parquet
from scipy import stats as sps

from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.metrics import compute_metrics
from ndcg_labeling.online import lists, stats
from ndcg_labeling.online.sums import FIELDS, RequestValues, figures, group_sums, merge
from tests.conftest import invoke


@pytest.mark.parametrize("gain", ["exponential", "linear"])
@pytest.mark.parametrize("k", [3, 10, None])
def test_exact_kernel_equals_registry(gain, k):
    rng = np.random.default_rng(1)
    n, width = 200, 12
    labels = rng.integers(0, 4, (n, width)).astype(float)
    labels[rng.random((n, width)) < 0.1] = np.nan  # unjudged
    lengths = rng.integers(1, width + 1, n)
    present = np.arange(width)[None, :] < lengths[:, None]
    labels[~present] = np.nan
    ideal = rng.integers(0, 4, (n, 15)).astype(float)
    ideal_list = [row for row in ideal]
    idcg = lists.ideal_dcg(ideal_list, k, gain)
    mine = lists.exact_scores("ndcg", k, labels, idcg, gain)
    scores = np.where(present, -np.arange(1, width + 1, dtype=float)[None, :], np.nan)
    name = "ndcg" if k is None else f"ndcg@{k}"
    ref = compute_metrics([name], scores, labels, ideal_labels=ideal, gain=gain)[name]
    np.testing.assert_allclose(mine, ref, rtol=0, atol=1e-12)
    # a row scored alone gives the same bits as in the batch (the live path scores one list at a time)
    for i in (0, 7, 199):
        alone = lists.exact_scores("ndcg", k, labels[i:i + 1, :lengths[i]], idcg[i:i + 1], gain)
        assert alone[0] == mine[i]


def test_rebuild_orders_and_refuses():
    rid = np.array(["a", "a", "a", "b"], dtype=object)
    served = lists.rebuild(rid, np.array([2, 5, 9, 4]), np.array(["x"] * 4, dtype=object),
                           np.array(["q"] * 4, dtype=object))
    assert served.start.tolist() == [0, 3, 4] and served.rank.tolist() == [1, 2, 3, 1]
    with pytest.raises(NdcgLabelingError, match="two values of arm"):
        lists.rebuild(rid, np.array([1, 2, 3, 1]), np.array(["x", "y", "x", "x"], dtype=object),
                      np.array(["q"] * 4, dtype=object))


def _values(n: int, seed: int) -> RequestValues:
    rng = np.random.default_rng(seed)
    conv = np.where(rng.random(n) < 0.3, np.nan, (rng.random(n) < 0.2).astype(float))
    return RequestValues(arm=rng.choice(np.array(["a", "b"], dtype=object), n),
                         query_type=rng.choice(np.array(["x", "y"], dtype=object), n), ts=rng.uniform(0, 7200, n),
                         cluster=np.arange(n).astype(str).astype(object), metric=rng.random(n),
                         judged=rng.integers(0, 11, n), scored=np.full(n, 10), clicked=rng.integers(0, 2, n),
                         converted=conv, watch=rng.random(n))


def test_sums_merge_and_unmerge_exactly():
    v = _values(1000, 2)
    whole = group_sums(v, 3600.0)
    vec = v.vectors()
    live = {}
    for i in np.random.default_rng(3).permutation(1000):  # one request at a time, in another order
        key = (v.arm[i], float(np.floor(v.ts[i] / 3600.0) * 3600.0), v.query_type[i])
        live[key] = live.get(key, np.zeros(len(FIELDS), np.int64)) + vec[i]
        live[key] = live[key] + vec[i] - vec[i]  # taken out and put back (a request updated live)
    assert set(live) == set(whole)
    for key in whole:
        assert (live[key] == whole[key]).all()
    fig = figures(merge(whole, arm="a"))
    a = v.arm == "a"
    assert fig["n"] == a.sum() and fig["ctr"] == v.clicked[a].sum() / a.sum()
    assert fig["metric"] == pytest.approx(v.metric[a].mean(), abs=1e-9)
    assert fig["conversion"] == np.nansum(v.converted[a]) / np.isfinite(v.converted[a]).sum()
    assert fig["metric_sd"] == pytest.approx(v.metric[a].std(ddof=1), rel=1e-6)


def test_kendall_tau_b_equals_scipy():
    rng = np.random.default_rng(4)
    x, y = rng.integers(0, 5, 40).astype(float), rng.integers(0, 5, 40).astype(float)  # with ties
    assert stats.kendall_tau_b(x, y) == pytest.approx(sps.kendalltau(x, y).statistic, abs=1e-12)


def test_report_on_each_backend(db, runner, tmp_path):
    sim = simulate(n_requests=900, n_queries=30, n_users=150, seed=11)
    queries, judgments = write_labels(sim, tmp_path)
    for args in (("import", "queries", queries), ("import", "judgments", judgments, "--scale", "0-3", "--create-graders"),
                 ("consensus", "--method", "median")):
        assert invoke(runner, db, *args).exit_code == 0
    log = write_parquet(sim, tmp_path / "ab.parquet")
    result = invoke(runner, db, "online", "report", log, "--baseline", "control", "--format", "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert sum(r["n"] for r in out["arms"] if r["query_type"] == "all" and r["measure"] == "ctr") == 900


def test_parse_events_fast_and_row_by_row_paths_agree():
    from ndcg_labeling.errors import EventError
    from ndcg_labeling.online.live import parse_events

    plain = [{"request_id": "r1", "query_id": "q", "doc_id": "d", "position": 2, "clicked": 1, "ts": 1700000000,
              "arm": "a", "converted": 0, "watch_ratio": 0.5, "user_id": "u"}]
    odd = [{**plain[0], "position": "2", "ts": "2023-11-14T22:13:20Z", "clicked": 1.0, "user_id": "u"}]
    fast = parse_events(json.dumps(plain).encode())
    slow = parse_events("\n".join(json.dumps(r) for r in odd).encode())  # strings: the row-by-row path
    assert fast == slow and fast[0][5] == 1700000000.0 and isinstance(fast[0][3], int)
    with pytest.raises(EventError, match="^row 1: arm is missing or empty$"):
        parse_events(json.dumps([{**plain[0], "arm": " "}]).encode())
    with pytest.raises(EventError, match="^row 2: not a JSON object$"):
        parse_events(b'{"a": 1}\n{oops\n')
