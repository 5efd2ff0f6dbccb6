"""Scores to grades: the mapping rule and the cut points fitted for quadratic-weighted kappa, checked
against an exhaustive search (scikit-learn's kappa) on a small grid."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from ndcg_labeling.behavior.grades import DEFAULT_THRESHOLDS, check_thresholds, fit_cut_points, map_scores


def test_map_scores_counts_the_cut_points_at_or_below():
    assert map_scores([0.0, 0.1, 0.39, 0.4, 0.9, 5.0], [0.1, 0.4, 0.8]).tolist() == [0, 1, 1, 2, 3, 3]
    with pytest.raises(ValueError, match="NaN"):
        map_scores([np.nan], [0.1, 0.4, 0.8])
    with pytest.raises(ValueError, match="strictly increasing"):
        check_thresholds([0.4, 0.1, 0.8], 4)
    for model, scales in DEFAULT_THRESHOLDS.items():
        for scale, cuts in scales.items():
            check_thresholds(cuts, 4 if scale == "0-3" else 5), model


def test_fitted_cut_points_reach_the_best_kappa_of_an_exhaustive_search():
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 4, 120)
    scores = np.round(truth * 0.3 + rng.normal(0, 0.25, truth.size), 1)
    cuts, kappa = fit_cut_points(scores, truth, (0, 1, 2, 3))
    assert kappa == pytest.approx(cohen_kappa_score(truth, map_scores(scores, cuts), weights="quadratic"), abs=1e-12)
    grid = np.unique(scores)[1:]  # a cut point at a distinct score: every distinct mapping once
    best = max(cohen_kappa_score(truth, map_scores(scores, np.array(c)), weights="quadratic")
               for c in itertools.combinations(grid, 3))
    assert kappa >= best - 0.01
