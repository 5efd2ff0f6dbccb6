"""One metric-name grammar: trec_eval names map onto registry names, and the registry computes
trec_eval's measures (bpref, infAP, ...) from score/label matrices, checked against pytrec_eval."""

from __future__ import annotations

import numpy as np
import pytest

from ndcg_labeling.metrics import compute_metrics, parse_metric

pytrec_eval = pytest.importorskip("pytrec_eval")


@pytest.mark.parametrize(("trec", "registry"), [
    ("ndcg_cut.10", "ndcg@10"), ("P.5", "p@5"), ("map", "map"), ("map_cut.20", "map@20"), ("recip_rank", "mrr"),
    ("recall.100", "recall@100"), ("bpref", "bpref"), ("infAP", "infap"), ("Rprec", "rprec"),
    ("success.5", "success@5"), ("relative_P.10", "relative_p@10"), ("set_F", "set_f"), ("Rndcg", "rndcg"),
])
def test_trec_names_are_registry_names(trec, registry):
    assert parse_metric(trec) == parse_metric(registry)
    assert parse_metric(trec).name == registry


@pytest.mark.parametrize("bad", ["bpref@5", "success", "ndcg.1=3", "iprec_at_recall.0.5", "runid", "nope.3"])
def test_names_the_registry_cannot_take(bad):
    with pytest.raises(ValueError, match="parse_metric"):
        parse_metric(bad)


@pytest.mark.parametrize("seed", range(3))
def test_trec_families_from_matrices_match_pytrec_eval(seed):
    rng = np.random.default_rng(seed)
    n, width = 40, 25
    scores = rng.permutation(n * width).reshape(n, width).astype(float)  # distinct: no tie rule involved
    scores[rng.random((n, width)) < 0.1] = np.nan  # ragged lists
    labels = rng.choice([np.nan, np.nan, -1, 0, 0, 1, 2, 3], size=(n, width))
    labels[:, 0] = 1  # every query has a judgment >= 0 (trec_eval crashes otherwise)
    names = ["bpref", "infap", "rprec", "success@5", "relative_p@10", "set_f", "bing", "rndcg", "ndcg_rel",
             "num_rel_ret", "11pt_avg", "utility", "set_map", "g"]
    ours = compute_metrics(names, scores, labels, relevant_threshold=2)
    qrels, run = {}, {}
    for i in range(n):
        q = f"q{i}"
        qrels[q] = {f"d{j}": int(labels[i, j]) for j in range(width) if not np.isnan(labels[i, j])}
        run[q] = {f"d{j}": float(scores[i, j]) for j in range(width) if not np.isnan(scores[i, j])}
    trec = {"bpref": "bpref", "infap": "infAP", "rprec": "Rprec", "success@5": "success_5",
            "relative_p@10": "relative_P_10", "set_f": "set_F", "bing": "binG", "rndcg": "Rndcg",
            "ndcg_rel": "ndcg_rel", "num_rel_ret": "num_rel_ret", "11pt_avg": "11pt_avg", "utility": "utility",
            "set_map": "set_map", "g": "G"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"all_trec"}, relevance_level=2).evaluate(run)
    for name in names:
        for i in range(n):
            if name == "11pt_avg" and any(np.floor(p / 10 * ref[f"q{i}"]["num_rel"] + 0.5)
                                          != int(p / 10 * ref[f"q{i}"]["num_rel"] + 0.9) for p in range(11)):
                continue  # trec_eval 9 turns recall into ranks differently (see tests/trec/test_pytrec_parity.py)
            assert abs(ours[name][i] - ref[f"q{i}"][trec[name]]) <= 1e-9, (name, i)


def test_negative_labels_reach_trec_families_but_never_count_as_relevant():
    scores = np.array([[3.0, 2.0, 1.0]])
    labels = np.array([[-1.0, 0.0, 1.0]])
    out = compute_metrics(["bpref", "num_rel", "num_nonrel_judged_ret", "success@1"], scores, labels,
                          relevant_threshold=1)
    assert out["bpref"][0] == 0.0 and out["num_rel"][0] == 1 and out["num_nonrel_judged_ret"][0] == 1
    assert out["success@1"][0] == 0.0


def test_threshold_zero_never_counts_negative_labels():
    # Defect 1 of issue 13 for the registry (and so for report): at a relevance threshold of 0 a label
    # of -1 stays non-relevant, as trec_eval's -l 0; a label of 0 is relevant there.
    out = compute_metrics(["p@2", "mrr", "recall@2"], np.array([[2.0, 1.0]]), np.array([[-1.0, 0.0]]),
                          relevant_threshold=0.0)
    assert (out["p@2"][0], out["mrr"][0], out["recall@2"][0]) == (0.5, 0.5, 1.0)


def test_negative_labels_are_unjudged_for_judged_at_k_and_gain_zero():
    # trec_eval's "in the pool, not judged": unj.K and -J count a negative label as unjudged, gain 0.
    scores, labels = np.array([[3.0, 2.0, 1.0]]), np.array([[-2.0, 2.0, np.nan]])
    out = compute_metrics(["judged@3", "ndcg@3", "dcg@3"], scores, labels, gain="linear")
    assert out["judged@3"][0] == pytest.approx(1 / 3)
    assert out["dcg@3"][0] == pytest.approx(2 / np.log2(3))
    assert out["ndcg@3"][0] == pytest.approx((2 / np.log2(3)) / 2)


def test_negative_infinite_labels_are_still_refused():
    with pytest.raises(ValueError, match="labels must be"):
        compute_metrics(["p@2"], np.array([[2.0, 1.0]]), np.array([[-np.inf, 1.0]]))


@pytest.mark.parametrize("threshold", [0, 1, 2])
@pytest.mark.parametrize("seed", range(3))
def test_registry_families_with_negative_labels_match_pytrec_eval(seed, threshold):
    # The registry's own kernels (p, recall, map, mrr, ndcg) with negative labels in the rows and in
    # ideal_labels (judged documents never retrieved), at relevance levels 0, 1 and 2.
    rng = np.random.default_rng(100 + seed)
    n, width, extra = 40, 20, 6
    scores = rng.permutation(n * width).reshape(n, width).astype(float)  # distinct: no tie rule involved
    scores[rng.random((n, width)) < 0.1] = np.nan
    labels = rng.choice([np.nan, np.nan, -2, -1, 0, 0, 1, 2, 3], size=(n, width))
    labels[np.isnan(scores)] = np.nan
    unretrieved = rng.choice([np.nan, -1, 0, 1, 2], size=(n, extra))
    unretrieved[:, 0] = 0  # every query has a judgment >= 0 (trec_eval crashes otherwise)
    ideal = np.concatenate((labels, unretrieved), axis=1)
    pairs = {"p@5": "P_5", "p@10": "P_10", "recall@10": "recall_10", "map": "map", "map@10": "map_cut_10",
             "mrr": "recip_rank", "ndcg@10": "ndcg_cut_10"}
    ours = compute_metrics(list(pairs), scores, labels, ideal_labels=ideal, gain="linear",
                           relevant_threshold=threshold)
    # pytrec_eval refuses relevance_level 0: there, the peer gets every label >= 0 raised by 1 at level 1
    # (the same relevant documents; negative labels stay negative) and ndcg, whose gains would move, is
    # compared at the other levels only.
    shift = 1 if threshold == 0 else 0
    qrels, run = {}, {}
    for i in range(n):
        q = f"q{i}"
        qrels[q] = {f"d{j}": int(ideal[i, j]) + (shift if ideal[i, j] >= 0 else 0)
                    for j in range(width + extra) if not np.isnan(ideal[i, j])}
        run[q] = {f"d{j}": float(scores[i, j]) for j in range(width) if not np.isnan(scores[i, j])}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"P", "recall", "map", "map_cut", "recip_rank", "ndcg_cut"},
                                         relevance_level=threshold + shift).evaluate(run)
    for name, trec in pairs.items():
        if shift and name.startswith("ndcg"):
            continue
        for i in range(n):
            assert abs(ours[name][i] - ref[f"q{i}"][trec]) <= 1e-9, (name, i)


def test_threshold_below_zero_is_threshold_zero():
    # No label below 0 is ever relevant, nor a document without a label (trec_eval at -l -1 counts
    # documents its qrels do not name: not here).
    scores = np.array([[4.0, 3.0, 2.0, 1.0]])
    labels = np.array([[np.nan, -1.0, 0.0, 2.0]])
    names = ["p@4", "mrr", "map", "bpref", "success@1", "num_rel_ret", "judged@4"]
    below = compute_metrics(names, scores, labels, relevant_threshold=-1)
    at_zero = compute_metrics(names, scores, labels, relevant_threshold=0)
    assert {k: float(v[0]) for k, v in below.items()} == {k: float(v[0]) for k, v in at_zero.items()}
    assert (below["p@4"][0], below["mrr"][0], below["num_rel_ret"][0], below["success@1"][0]) == (0.5, 1 / 3, 2, 0)


def test_negative_labels_in_tensors_as_in_arrays():
    torch = pytest.importorskip("torch")
    scores = np.array([[3.0, 2.0, 1.0, 0.5]])
    labels = np.array([[-1.0, 0.0, 2.0, 1.0]])
    names = ["p@2", "ndcg@3", "mrr", "judged@4"]
    ours = compute_metrics(names, scores, labels, relevant_threshold=0)
    for lab in (torch.tensor(labels), torch.tensor(labels, dtype=torch.int64)):
        got = compute_metrics(names, torch.tensor(scores), lab, relevant_threshold=0)
        for name in names:
            assert float(got[name][0]) == pytest.approx(float(ours[name][0]), abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_ranked_list_engine_matches_pytrec_eval_and_the_array_api(seed):
    # report's engine (compute_on_lists, eval's RankedLists): exponential NDCG is trec_eval's NDCG over
    # the gains 2^g - 1, for the whole list and at a cut-off; every registry family equals compute_metrics
    from ndcg_labeling.metrics.registry import compute_on_lists
    from ndcg_labeling.metrics.trec_measures import ranked_lists_from_scores

    rng = np.random.default_rng(seed)
    n, width = 30, 20
    scores = rng.permutation(n * width).reshape(n, width).astype(float)
    scores[rng.random((n, width)) < 0.15] = np.nan
    labels = rng.choice([np.nan, np.nan, -1, 0, 1, 2, 3], size=(n, width))
    labels[:, 0] = 2
    lists = ranked_lists_from_scores(scores, labels, labels)  # the labels under padding: judged, not retrieved
    qrels = {f"q{i}": {f"d{j}": int(2 ** labels[i, j] - 1) if labels[i, j] >= 0 else -1 for j in range(width)
                       if not np.isnan(labels[i, j])} for i in range(n)}
    run = {f"q{i}": {f"d{j}": float(scores[i, j]) for j in range(width) if not np.isnan(scores[i, j])}
           for i in range(n)}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg", "ndcg_cut.5"}).evaluate(run)
    ours = compute_on_lists(["ndcg", "ndcg@5"], lists)
    for i in range(n):
        assert ours["ndcg"][i] == pytest.approx(ref[f"q{i}"]["ndcg"], abs=1e-12)
        assert ours["ndcg@5"][i] == pytest.approx(ref[f"q{i}"]["ndcg_cut_5"], abs=1e-12)
    names = ["ndcg@3", "ndcg", "dcg@4", "dcg", "mrr@5", "mrr", "map@5", "map", "p@5", "p", "recall@5", "recall",
             "judged@5", "judged"]
    for gain in ("exponential", "linear"):
        for empty in ("zero", "nan"):
            got = compute_on_lists(names, lists, gain=gain, relevant_threshold=2, empty=empty)
            want = compute_metrics(names, scores, labels, ideal_labels=labels, gain=gain, relevant_threshold=2,
                                   empty=empty)
            for name in names:
                np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-12, err_msg=name)
