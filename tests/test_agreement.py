"""Agreement kernel: published alpha values, Gwet's AC1/AC2 against irrCAC, weighted kappa against
scikit-learn, the prevalence paradox, undefined cases and input checks."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from irrCAC.raw import CAC
from sklearn.metrics import cohen_kappa_score

from ndcg_labeling.agreement import (
    agreement_stats,
    agreement_weights,
    check_grades,
    grader_stats,
)

NAN = np.nan

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers x 12 units,
# values 1..5, with missing values. Published: nominal .743, ordinal .815, interval .849.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)


def long_format(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """graders x items matrix with NaN for missing -> (item, grader, grade) int arrays."""
    grader, item = np.nonzero(~np.isnan(matrix))
    return item, grader, matrix[grader, item].astype(np.int64)


def random_grades(
    seed: int,
    n_items: int = 60,
    n_graders: int = 6,
    p_missing: float = 0.35,
    domain: tuple[int, ...] = (0, 1, 2, 3),
) -> np.ndarray:
    """A graders x items matrix of correlated grades with missing values (NaN)."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(domain, size=n_items)
    noise = rng.integers(-1, 2, size=(n_graders, n_items))
    grades = np.clip(truth[None, :] + noise, domain[0], domain[-1]).astype(float)
    grades[rng.random((n_graders, n_items)) < p_missing] = NAN
    return grades


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_alpha_reproduces_krippendorff_2011(level: str, published: float) -> None:
    item, grader, grade = long_format(KRIPPENDORFF_2011)
    stats = agreement_stats(item, grader, grade, (1, 2, 3, 4, 5), level)  # type: ignore[arg-type]
    assert stats.alpha is not None
    assert round(stats.alpha, 3) == published
    assert stats.reason is None
    assert (stats.n_items, stats.n_pairable, stats.n_graders, stats.n_grades) == (12, 11, 4, 41)


def test_gwet_ac1_reproduces_irrcac_published_example() -> None:
    # irrCAC's documented result on the same 4 x 12 data: AC1 0.77544, pa 0.81818.
    item, grader, grade = long_format(KRIPPENDORFF_2011)
    stats = agreement_stats(item, grader, grade, (1, 2, 3, 4, 5))
    assert stats.ac1 == pytest.approx(0.77544, abs=5e-6)
    assert stats.percent_agreement == pytest.approx(0.81818, abs=5e-6)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_alpha_from_value_counts_equals_reliability_matrix_with_full_domain(level: str, seed: int) -> None:
    # The grade 4 of the domain 0..4 is never used: it must still count in the ordinal distances.
    matrix = random_grades(seed)
    item, grader, grade = long_format(matrix)
    ours = agreement_stats(item, grader, grade, (0, 1, 2, 3, 4), level)  # type: ignore[arg-type]
    expected = krippendorff.alpha(
        reliability_data=matrix, value_domain=[0, 1, 2, 3, 4], level_of_measurement=level
    )
    assert ours.alpha == pytest.approx(expected, rel=1e-12)


@pytest.mark.filterwarnings("ignore::pandas.errors.SettingWithCopyWarning")  # inside irrCAC
@pytest.mark.parametrize("weights", ["ordinal", "quadratic", "linear"])
@pytest.mark.parametrize("seed", [4, 5, 6])
def test_ac1_ac2_match_irrcac_on_random_data_with_missing_grades(weights: str, seed: int) -> None:
    domain = (0, 1, 2, 3, 4)
    matrix = random_grades(seed, domain=domain)
    matrix[:, 0] = NAN  # an item nobody graded: irrCAC drops it, so must we
    matrix[1:, 1] = NAN  # an item with one grade: counts in pi_k, not in p_a
    item, grader, grade = long_format(matrix)
    ours = agreement_stats(item, grader, grade, domain, ac2_weights=weights, n_items=matrix.shape[1])  # type: ignore[arg-type]
    ratings = pd.DataFrame(matrix.T)
    ac1 = CAC(ratings, weights="identity", categories=list(domain), digits=12).gwet()["est"]
    ac2 = CAC(ratings, weights=weights, categories=list(domain), digits=12).gwet()["est"]
    assert ours.ac1 == pytest.approx(ac1["coefficient_value"], abs=1e-10)
    assert ours.percent_agreement == pytest.approx(ac1["pa"], abs=1e-10)
    assert ours.ac2 == pytest.approx(ac2["coefficient_value"], abs=1e-10)
    assert ours.ac2_weights == weights


def test_agreement_weights_match_irrcac() -> None:
    from irrCAC.weights import Weights

    domain = [0, 1, 2, 3]
    for kind in ("identity", "ordinal", "linear", "quadratic"):
        np.testing.assert_allclose(agreement_weights(domain, kind), Weights(domain)[kind], atol=1e-12)  # type: ignore[arg-type]


def test_prevalence_paradox_is_named_in_the_note() -> None:
    # 400 items x 3 graders; 95% of grades are 0 and the rare 1s never coincide: near-total agreement,
    # alpha near zero.
    rng = np.random.default_rng(7)
    n_items = 400
    item = np.repeat(np.arange(n_items), 3)
    grader = np.tile(np.arange(3), n_items)
    grade = np.zeros(item.size, dtype=np.int64)
    odd_items = rng.choice(n_items, size=60, replace=False)
    grade[odd_items * 3 + rng.integers(0, 3, size=60)] = 1
    stats = agreement_stats(item, grader, grade, (0, 1, 2, 3), "ordinal")
    assert stats.alpha is not None and stats.alpha < 0.4
    assert stats.percent_agreement is not None and stats.percent_agreement >= 0.9
    assert stats.prevalence_paradox is True
    assert stats.note is not None
    assert "prevalence paradox" in stats.note and "AC1" in stats.note
    assert f"alpha is {stats.alpha:.2f}" in stats.note
    assert stats.ac1 is not None and stats.ac1 > 0.8


def test_no_paradox_note_when_alpha_is_high() -> None:
    item, grader, grade = long_format(KRIPPENDORFF_2011)
    stats = agreement_stats(item, grader, grade, (1, 2, 3, 4, 5))
    assert stats.prevalence_paradox is False and stats.note is None


@pytest.mark.parametrize(
    ("item", "grader", "grade", "reason"),
    [
        ([], [], [], "no grades"),
        ([0, 1, 2], [0, 0, 0], [1, 2, 3], "a single grader"),
        ([0, 1, 2], [0, 1, 2], [1, 2, 3], "no item with two grades"),
        ([0, 0, 1, 1, 2], [0, 1, 0, 1, 2], [2, 2, 2, 2, 0], "a single value in the data"),
    ],
)
def test_undefined_alpha_gives_none_and_a_reason(
    item: list[int], grader: list[int], grade: list[int], reason: str
) -> None:
    stats = agreement_stats(
        np.array(item, dtype=np.int64),
        np.array(grader, dtype=np.int64),
        np.array(grade, dtype=np.int64),
        (0, 1, 2, 3),
    )
    assert stats.alpha is None
    assert stats.reason == reason
    assert stats.prevalence_paradox is False


def test_single_value_keeps_percent_agreement() -> None:
    stats = agreement_stats(
        np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), np.array([2, 2, 2, 2]), (0, 1, 2, 3)
    )
    assert stats.alpha is None and stats.percent_agreement == 1.0 and stats.n_pairable == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"grade": [0, 1, 7]},
            r"agreement_stats: grades must be in the value domain \(0, 1, 2, 3\), got 7 at row 2",
        ),
        (
            {"grader": [0, 0, 1], "item": [0, 0, 0]},
            r"agreement_stats: a grader may grade an item only once, got grader 0 twice on item 0",
        ),
        ({"item": [0, -1, 1]}, r"agreement_stats: item codes must be non-negative, got -1 at row 1"),
        ({"item": [0, 1]}, r"agreement_stats: item, grader and grade must have the same length, got 2, 3, 3"),
        ({"grade": [0.0, 1.0, 2.0]}, r"agreement_stats: grade must hold integers, got dtype float64"),
        ({"item": [[0, 1, 2]]}, r"agreement_stats: item must be a 1-D array, got shape \(1, 3\)"),
        ({"value_domain": (3, 2, 1)}, r"agreement_stats: value_domain must be strictly increasing"),
        ({"value_domain": (1,)}, r"agreement_stats: value_domain must hold at least two values"),
        ({"level": "ratio"}, r"agreement_stats: level must be one of"),
    ],
)
def test_input_checks_name_function_rule_and_value(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {
        "item": [0, 1, 2],
        "grader": [0, 1, 0],
        "grade": [0, 1, 2],
        "value_domain": (0, 1, 2, 3),
    }
    args.update(kwargs)
    for key in ("item", "grader", "grade"):
        args[key] = np.array(args[key])
    with pytest.raises(ValueError, match=message):
        agreement_stats(**args)  # type: ignore[arg-type]


def test_check_grades_bounds_on_n_items() -> None:
    with pytest.raises(ValueError, match=r"check: item codes must be below n_items=2, got 2 at row 1"):
        check_grades("check", np.array([0, 2]), np.array([0, 0]), np.array([1, 1]), (0, 1), n_items=2)


def test_inputs_are_not_modified() -> None:
    item, grader, grade = long_format(random_grades(8))
    copies = [a.copy() for a in (item, grader, grade)]
    for a in (item, grader, grade):
        a.flags.writeable = False  # any write would raise
    agreement_stats(item, grader, grade, (0, 1, 2, 3))
    grader_stats(item, grader, grade, (0, 1, 2, 3))
    for a, c in zip((item, grader, grade), copies, strict=True):
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("weights", ["quadratic", "linear"])
def test_pairwise_kappa_matches_sklearn(weights: str) -> None:
    matrix = random_grades(9, n_items=80, n_graders=5, p_missing=0.3)
    item, grader, grade = long_format(matrix)
    stats = grader_stats(item, grader, grade, (0, 1, 2, 3), weights=weights)  # type: ignore[arg-type]
    checked = 0
    for g in range(5):
        for h in range(5):
            both = ~np.isnan(matrix[g]) & ~np.isnan(matrix[h])
            if g == h:
                assert np.isnan(stats.kappa[g, h]) and stats.overlap[g, h] == 0
                continue
            assert stats.overlap[g, h] == both.sum()
            expected = cohen_kappa_score(
                matrix[g, both], matrix[h, both], labels=[0, 1, 2, 3], weights=weights
            )
            assert stats.kappa[g, h] == pytest.approx(expected, abs=1e-12)
            checked += 1
    assert checked == 20


def test_kappa_nan_below_min_overlap_and_when_undefined() -> None:
    # graders 0 and 1 share one item; graders 2 and 3 share three items and always give 2.
    item = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    grader = np.array([0, 1, 2, 3, 2, 3, 2, 3])
    grade = np.array([1, 2, 2, 2, 2, 2, 2, 2])
    stats = grader_stats(item, grader, grade, (0, 1, 2, 3))
    assert stats.overlap[0, 1] == 1 and np.isnan(stats.kappa[0, 1])
    assert stats.overlap[2, 3] == 3 and np.isnan(stats.kappa[2, 3])
    assert np.isnan(stats.mean_kappa).all() and not stats.flagged.any() and stats.median_kappa is None


def test_mean_difference_is_against_the_leave_one_out_mean_of_the_others() -> None:
    matrix = random_grades(10, n_items=50, n_graders=4)
    item, grader, grade = long_format(matrix)
    stats = grader_stats(item, grader, grade, (0, 1, 2, 3))
    frame = pd.DataFrame({"item": item, "grader": grader, "grade": grade.astype(float)})
    sums = frame.groupby("item")["grade"].transform("sum")
    counts = frame.groupby("item")["grade"].transform("count")
    frame["diff"] = frame["grade"] - (sums - frame["grade"]) / (counts - 1)
    expected = frame[counts > 1].groupby("grader")["diff"].mean()
    np.testing.assert_allclose(stats.mean_difference[expected.index], expected.to_numpy(), rtol=1e-12)
    np.testing.assert_array_equal(stats.n_grades, np.bincount(grader))
    np.testing.assert_array_equal(stats.n_compared, frame[counts > 1].groupby("grader").size().to_numpy())


def test_mean_difference_sign_shows_a_lenient_grader() -> None:
    # grader 2 always grades one higher than graders 0 and 1
    item = np.repeat(np.arange(30), 3)
    grader = np.tile(np.arange(3), 30)
    base = np.repeat(np.arange(30) % 3, 3)
    grade = base + (grader == 2)
    stats = grader_stats(item, grader, grade, (0, 1, 2, 3))
    assert stats.mean_difference[2] == pytest.approx(1.0)
    assert stats.mean_difference[0] == pytest.approx(-0.5)


def test_a_random_grader_is_flagged_and_the_good_ones_are_not() -> None:
    rng = np.random.default_rng(11)
    n_items, n_graders = 300, 8
    truth = rng.integers(0, 4, n_items)
    grades = np.clip(truth[None, :] + rng.choice([-1, 0, 0, 0, 1], size=(n_graders, n_items)), 0, 3).astype(
        float
    )
    grades[5] = rng.integers(0, 4, n_items)  # grader 5 grades at random
    grades[rng.random(grades.shape) < 0.4] = NAN
    item, grader, grade = long_format(grades)
    stats = grader_stats(item, grader, grade, (0, 1, 2, 3))
    assert stats.flagged.tolist() == [g == 5 for g in range(n_graders)]
    assert stats.flag_threshold is not None and stats.mean_kappa[5] < stats.flag_threshold
    assert stats.median_kappa is not None and stats.median_kappa > 0.6
    np.testing.assert_allclose(stats.kappa, stats.kappa.T, equal_nan=True)


def test_grader_stats_counts_graders_without_grades() -> None:
    stats = grader_stats(np.array([0, 0]), np.array([0, 2]), np.array([1, 1]), (0, 1), n_graders=4)
    assert stats.n_grades.tolist() == [1, 0, 1, 0]
    assert np.isnan(stats.mean_difference[1]) and stats.mean_difference[0] == 0.0
    assert stats.kappa.shape == (4, 4)
