"""median_seconds_per_item against an independent computation with the standard library."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from ndcg_labeling.quality import median_seconds_per_item


def reference(grader, sequence, seconds, n, max_gap):
    out, counts = [], []
    for g in range(n):
        gaps = []
        for s in sorted({s for gg, s in zip(grader, sequence, strict=True) if gg == g}):
            times = sorted(t for gg, ss, t in zip(grader, sequence, seconds, strict=True) if gg == g and ss == s)
            gaps += [b - a for a, b in zip(times, times[1:], strict=False) if b - a <= max_gap]
        out.append(statistics.median(gaps) if gaps else float("nan"))
        counts.append(len(gaps))
    return out, counts


def test_random_cases_match_the_reference():
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(1, 5))
        size = int(rng.integers(0, 40))
        grader = rng.integers(0, n, size)
        sequence = grader * 10 + rng.integers(0, 3, size)  # a few batches per grader
        seconds = rng.integers(0, 3000, size).astype(float)
        got, counts = median_seconds_per_item(grader, sequence, seconds, n, max_gap=600)
        want, want_counts = reference(grader.tolist(), sequence.tolist(), seconds.tolist(), n, 600)
        np.testing.assert_allclose(got, want, equal_nan=True)
        assert counts.tolist() == want_counts


def test_pauses_and_other_batches_are_not_intervals():
    got, counts = median_seconds_per_item([0, 0, 0, 0, 0], [0, 0, 0, 1, 1], [0, 10, 1000, 5, 9], 2, max_gap=600)
    assert got[0] == 7.0 and counts.tolist() == [2, 0] and np.isnan(got[1])


@pytest.mark.parametrize("bad", [dict(grader=[0, 2], sequence=[0, 0], seconds=[1, 2]),
                                 dict(grader=[0], sequence=[0, 1], seconds=[1]),
                                 dict(grader=[0, 0], sequence=[0, 0], seconds=[1, float("nan")])])
def test_bad_input_is_refused_naming_the_function(bad):
    with pytest.raises(ValueError, match="median_seconds_per_item"):
        median_seconds_per_item(n_graders=2, **bad)
