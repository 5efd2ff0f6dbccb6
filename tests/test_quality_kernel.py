"""The quality kernel against its peers: kappa and the confusion matrix against scikit-learn, tau-b
against scipy, the gold statistics against a plain per-grader loop; and the gold gaps' and the block
insertion's rules."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion

from ndcg_labeling.quality import (
    TRUSTED,
    UNDECIDED,
    UNTRUSTED,
    allocate_gold,
    block_sizes,
    confusion_matrix,
    gold_gaps,
    gold_quality,
    insert_blocks,
    kendall_tau_b,
    newcombe_interval,
    rank_positions,
    trust_codes,
    weighted_kappa,
    wilson_interval,
)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weights", ["quadratic", "linear"])
def test_weighted_kappa_and_confusion_equal_sklearn(seed, weights):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    top = int(rng.choice([3, 4]))
    a = rng.integers(0, top + 1, n)
    b = np.clip(a + rng.integers(-2, 3, n), 0, top) if seed % 2 else rng.integers(0, top + 1, n)
    values = list(range(top + 1))
    assert weighted_kappa(a, b, values, weights=weights) == pytest.approx(
        cohen_kappa_score(a, b, labels=values, weights=weights), abs=1e-12)
    np.testing.assert_array_equal(confusion_matrix(a, b, values), sk_confusion(a, b, labels=values))


def test_unweighted_kappa_equals_sklearn_and_undefined_kappa_is_nan():
    a, b = [0, 1, 2, 2, 3, 1], [0, 2, 2, 2, 3, 0]
    assert weighted_kappa(a, b, range(4), weights="none") == pytest.approx(cohen_kappa_score(a, b, labels=range(4)))
    assert np.isnan(weighted_kappa([2, 2, 2], [2, 2, 2], range(4)))
    assert np.isnan(weighted_kappa([], [], range(4)))


def test_kappa_refuses_grades_outside_the_categories():
    with pytest.raises(ValueError, match="weighted_kappa|confusion_matrix"):
        weighted_kappa([0, 5], [0, 1], range(4))


@pytest.mark.parametrize("seed", range(8))
def test_kendall_tau_b_equals_scipy_with_and_without_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 25))
    x = rng.integers(0, 5, n).astype(float) if seed % 2 else rng.normal(size=n)
    y = x + rng.normal(0, 1, n) if seed % 3 else rng.integers(0, 3, n).astype(float)
    expected = kendalltau(x, y).statistic
    got = kendall_tau_b(x, y)
    if np.isnan(expected):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12)


def test_kendall_tau_b_edge_cases():
    assert np.isnan(kendall_tau_b([1.0], [2.0]))
    assert np.isnan(kendall_tau_b([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="kendall_tau_b"):
        kendall_tau_b([1.0, np.nan], [1.0, 2.0])


def test_rank_positions_best_first_ties_share_the_best_rank():
    np.testing.assert_array_equal(rank_positions([0.5, 0.7, 0.5, 0.1]), [2, 1, 2, 4])


def _loop_quality(grader, answer, expected, n_graders, min_accuracy):
    """The definitions, one grader at a time, in plain Python; the intervals from statsmodels."""
    from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

    out = []
    for g in range(n_graders):
        a = [x for gg, x in zip(grader, answer, strict=True) if gg == g]
        e = [x for gg, x in zip(grader, expected, strict=True) if gg == g]
        n = len(a)
        err = [x - y for x, y in zip(a, e, strict=True)]
        k = sum(v == 0 for v in err)
        acc = k / n if n else float("nan")
        half = n // 2
        k1, k2 = sum(v == 0 for v in err[:half]), sum(v == 0 for v in err[n - half:])
        first = k1 / half if half else float("nan")
        second = k2 / half if half else float("nan")
        trusted = UNDECIDED
        if n:
            low, high = proportion_confint(k, n, alpha=0.1, method="wilson")
            trusted = TRUSTED if low >= min_accuracy else (UNTRUSTED if high < min_accuracy else UNDECIDED)
        flag = False
        if half >= 5:
            _, d_high = confint_proportions_2indep(k2, half, k1, half, method="newcomb", compare="diff", alpha=0.1)
            flag = d_high < 0
        out.append({"n": n, "acc": acc, "within": sum(abs(v) <= 1 for v in err) / n if n else float("nan"),
                    "mae": sum(abs(v) for v in err) / n if n else float("nan"),
                    "bias": sum(err) / n if n else float("nan"), "trusted": trusted, "first": first,
                    "second": second, "flag": flag})
    return out


@pytest.mark.parametrize("seed", range(8))
def test_gold_quality_matches_the_definitions_and_statsmodels(seed):
    rng = np.random.default_rng(seed)
    n_graders = 5
    n = int(rng.integers(0, 120))
    grader = rng.integers(0, n_graders, n)
    expected = rng.integers(0, 4, n)
    p_right = rng.uniform(0.2, 0.98, n_graders)[grader]
    drop = np.arange(n) > n // 2  # later answers worse for some graders: drift happens
    answer = np.where(rng.random(n) < np.where(drop & (grader % 2 == 0), p_right / 3, p_right), expected,
                      (expected + rng.integers(1, 4, n)) % 4)
    q = gold_quality(grader, answer, expected, n_graders, min_accuracy=0.7)
    for g, ref in enumerate(_loop_quality(grader.tolist(), answer.tolist(), expected.tolist(), n_graders, 0.7)):
        assert q.n_gold[g] == ref["n"]
        for name, key in (("accuracy", "acc"), ("within_one", "within"), ("mae", "mae"), ("bias", "bias"),
                          ("accuracy_first", "first"), ("accuracy_second", "second")):
            np.testing.assert_allclose(getattr(q, name)[g], ref[key], equal_nan=True)
        assert q.trusted[g] == ref["trusted"]
        assert bool(q.drift_flagged[g]) == ref["flag"]


def test_wilson_and_newcombe_equal_statsmodels():
    from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

    k, n = np.array([0, 1, 3, 5, 7, 19, 40]), np.array([4, 5, 5, 5, 10, 20, 41])
    low, high = wilson_interval(k, n, 0.9)
    ref = proportion_confint(k, n, alpha=0.1, method="wilson")
    np.testing.assert_allclose(low, ref[0], atol=1e-12)
    np.testing.assert_allclose(high, ref[1], atol=1e-12)
    for k1, n1, k2, n2 in ((3, 10, 8, 10), (0, 5, 5, 5), (9, 10, 9, 10), (12, 20, 19, 20)):
        ours = newcombe_interval(k1, n1, k2, n2, 0.95)
        peer = confint_proportions_2indep(k1, n1, k2, n2, method="newcomb", compare="diff", alpha=0.05)
        np.testing.assert_allclose(ours, peer, atol=1e-12)


def test_gold_quality_decides_from_the_interval_and_rejects_bad_arguments():
    # grader 0: 6 right then 6 wrong -> drift -1, flagged; grader 1: 3 of 3 right, undecided;
    # grader 2: 0 of 4 right: untrusted (it was "undecided" and counted in consensus)
    grader = [0] * 12 + [1] * 3 + [2] * 4
    expected = [2] * 19
    answer = [2] * 6 + [0] * 6 + [2, 2, 2] + [0] * 4
    q = gold_quality(grader, answer, expected, 3)
    assert q.drift[0] == -1.0 and q.drift_flagged[0] and q.trusted[0] == UNDECIDED
    assert q.trusted[1] == UNDECIDED and q.accuracy[1] == 1.0
    assert q.trusted[2] == UNTRUSTED
    # halves of 2 (the old rule flagged 1.0 -> 0.0 and even 0.9 -> 0.7 but not 1.0 -> 0.8) never flag
    q = gold_quality([0] * 4, [2, 2, 0, 0], [2] * 4, 1)
    assert not q.drift_flagged[0]
    with pytest.raises(ValueError, match="gold_quality: min_accuracy"):
        gold_quality(grader, answer, expected, 3, min_accuracy=1.5)
    with pytest.raises(ValueError, match="gold_quality: grader codes"):
        gold_quality([3], [1], [1], 2)


def test_error_rates_of_trust_and_drift_at_small_n():
    """Exact error rates (every binomial outcome) of the new rules at n = 5, 10, 20, and the old ones'
    as the issue measured them: a good grader (p = 0.85) called untrusted, a grader of constant accuracy
    flagged for drift. The figures docs/quality.md prints come from benchmarks/quality_rules.py."""
    from scipy.stats import binom

    for n in (5, 10, 20):
        k = np.arange(n + 1)
        for p in (0.75, 0.85, 0.95):  # good graders: rarely untrusted (old rule: 16.5% at p .85, n 5)
            codes = trust_codes(k, np.full(k.size, n), 0.7)
            assert binom.pmf(k, n, p)[codes == UNTRUSTED].sum() < 0.025
        w = binom.pmf(k, n, 0.25)  # a random grader on a 0-3 scale is found
        assert w[trust_codes(k, np.full(k.size, n), 0.7) == UNTRUSTED].sum() > 0.6
        assert w[trust_codes(k, np.full(k.size, n), 0.7) == TRUSTED].sum() < 1e-5
    old_rate = binom.pmf(np.arange(6), 5, 0.85)[np.arange(6) / 5 < 0.7].sum()
    assert round(old_rate, 3) == 0.165  # the figure, from the old point rule
    for h in (2, 5, 10, 20):  # constant accuracy: false drift at most the one-sided 5% (old: 21% at halves of 2)
        for p in (0.7, 0.85):
            k1, k2 = np.meshgrid(np.arange(h + 1), np.arange(h + 1), indexing="ij")
            w = binom.pmf(k1, h, p) * binom.pmf(k2, h, p)
            q = np.array([gold_quality([0] * (2 * h), [1] * a + [0] * (h - a) + [1] * b + [0] * (h - b),
                                       [1] * (2 * h), 1).drift_flagged[0]
                          for a, b in zip(k1.ravel(), k2.ravel(), strict=True)]).reshape(k1.shape)
            assert w[q].sum() <= 0.055
            if h < 5:
                assert not q.any()


@pytest.mark.parametrize("seed", range(10))
def test_gold_gaps_never_touch_and_follow_the_query_blocks(seed):
    rng = np.random.default_rng(seed)
    blocks = rng.integers(1, 6, size=int(rng.integers(1, 12)))
    item_query = np.repeat(np.arange(blocks.size), blocks)  # the grader's items, query by query
    n = item_query.size
    n_gold = int(rng.integers(0, n + 2))
    gold_query = np.where(rng.random(n_gold) < 0.5, rng.integers(0, blocks.size, n_gold), 1000 + np.arange(n_gold))
    gaps = gold_gaps(item_query, gold_query, rng)
    assert len(set(gaps.tolist())) == n_gold  # one gold item per gap: never two in a row
    assert gaps.min(initial=0) >= 0 and gaps.max(initial=0) <= n
    edges = {0, n} | {i for i in range(1, n) if item_query[i] != item_query[i - 1]}
    for k, (gap, q) in enumerate(zip(gaps.tolist(), gold_query.tolist(), strict=True)):
        taken = set(gaps[:k].tolist())
        if q < 1000:
            allowed = {i for i in range(n + 1) if (i < n and item_query[i] == q) or (i > 0 and item_query[i - 1] == q)}
        else:
            allowed = edges
        if allowed - taken:  # a free gap of the right kind was left: it took one
            assert gap in allowed, (k, gap, q)


def test_gold_gaps_refuses_more_gold_than_gaps():
    with pytest.raises(ValueError, match="gold_gaps"):
        gold_gaps([1, 1], [5, 6, 7, 8], np.random.default_rng(0))


def test_block_sizes_equal_a_groupby_of_the_order():
    from itertools import groupby

    rng = np.random.default_rng(0)
    item_query = np.repeat(rng.permutation(30), rng.integers(1, 7, size=30))
    expected = [n for _, run in groupby(item_query.tolist()) for n in [len(list(run))] for _ in range(n)]
    assert block_sizes(item_query).tolist() == expected
    assert block_sizes([]).size == 0


@pytest.mark.parametrize("seed", range(10))
def test_insert_blocks_keeps_every_query_in_one_block(seed):
    rng = np.random.default_rng(seed)
    blocks = rng.integers(1, 6, size=int(rng.integers(0, 10)))
    item_query = np.repeat(np.arange(blocks.size), blocks)
    n_new = int(rng.integers(1, 15))
    new_query = np.where(rng.random(n_new) < 0.5, rng.integers(0, max(blocks.size, 1), n_new), 100 + rng.integers(0, 3, n_new))
    old_pos, new_pos = insert_blocks(item_query, new_query, rng)
    merged = np.empty(item_query.size + n_new, dtype=np.int64)
    merged[old_pos], merged[new_pos] = item_query, new_query
    assert sorted(np.r_[old_pos, new_pos].tolist()) == list(range(merged.size))  # a permutation
    assert np.all(np.diff(old_pos) > 0)  # the old items keep their order
    runs = [q for k, q in enumerate(merged.tolist()) if k == 0 or q != merged[k - 1]]
    assert len(runs) == len(set(runs))  # every query one block: none split, new ones together
    assert sorted(merged.tolist()) == sorted(np.r_[item_query, new_query].tolist())


def test_insert_blocks_draws_nothing_without_new_items():
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    old_pos, new_pos = insert_blocks([1, 1, 2], [], rng)
    assert old_pos.tolist() == [0, 1, 2] and new_pos.size == 0 and rng.bit_generator.state == state


def test_insert_blocks_puts_a_new_query_at_every_edge_alike():
    # two blocks give three edges (start, between, end): a new query's block goes to each about a third
    # of the time (binomial test)
    from scipy.stats import binomtest

    rng = np.random.default_rng(1)
    where = [int(insert_blocks([1, 1, 2, 2], [9, 9], rng)[1].min()) for _ in range(600)]
    for start in (0, 2, 4):
        assert binomtest(where.count(start), 600, 1 / 3).pvalue > 0.01


def test_allocate_gold_gives_a_grader_without_the_query_one_gold_item_of_it():
    # grader 0 wants two gold items; the two there are of one query nobody has: without gold_query both go
    # to grader 0 (one block of two gold items); with it, the second goes to another grader
    no_query, unseen = np.zeros((2, 3), dtype=bool), np.zeros((2, 3), dtype=bool)
    _, plain = allocate_gold(no_query, unseen, [2, 0, 0], 1, np.random.default_rng(0))
    assert sorted(plain.tolist()) == [0, 0]
    _, graders = allocate_gold(no_query, unseen, [2, 0, 0], 1, np.random.default_rng(0), gold_query=[7, 7])
    assert 0 in graders.tolist() and len(set(graders.tolist())) == 2
    # a grader who has the query may get several of it (they go into that query's block)
    _, own = allocate_gold(np.ones((2, 3), dtype=bool), unseen, [2, 0, 0], 1, np.random.default_rng(0), gold_query=[7, 7])
    assert sorted(own.tolist()) == [0, 0]
