"""Error rates of the trust and drift rules (issue 35), exactly, by enumerating every binomial outcome.

    python benchmarks/quality_rules.py

Trust: the share of graders of true gold accuracy p called untrusted (and trusted) after n gold answers,
by the old point rule (accuracy >= 0.7 with n >= 5) and by the Wilson interval rule at 90% two-sided
(:func:`ndcg_labeling.quality.trust_codes`). Drift: the share of graders of constant accuracy falsely
flagged for drift with halves of h answers, old rule (second - first < -0.2) and the new one (Newcombe
interval of the difference below 0, halves of at least 5), and the share of a real drop 0.9 -> 0.5 found.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import binom

from ndcg_labeling.quality import MIN_DRIFT_HALF, TRUSTED, UNTRUSTED, newcombe_interval, trust_codes

THRESHOLD = 0.7


def trust_rates(p: float, n: int) -> dict[str, float]:
    k = np.arange(n + 1)
    w = binom.pmf(k, n, p)
    old_untrusted = float(w[(k / n < THRESHOLD)].sum()) if n >= 5 else 0.0
    old_trusted = float(w[(k / n >= THRESHOLD)].sum()) if n >= 5 else 0.0
    codes = trust_codes(k, np.full(k.size, n), THRESHOLD)
    return {"old_untrusted": old_untrusted, "old_trusted": old_trusted,
            "new_untrusted": float(w[codes == UNTRUSTED].sum()), "new_trusted": float(w[codes == TRUSTED].sum())}


def drift_rates(p1: float, p2: float, h: int) -> dict[str, float]:
    k1, k2 = np.meshgrid(np.arange(h + 1), np.arange(h + 1), indexing="ij")
    w = binom.pmf(k1, h, p1) * binom.pmf(k2, h, p2)
    # exactly as the old kernel: a float difference compared with -0.2
    old = (k2 / h - k1 / h) < -0.2
    _, high = newcombe_interval(k2.ravel(), np.full(k2.size, h), k1.ravel(), np.full(k1.size, h))
    new = (high.reshape(k1.shape) < 0) & (h >= MIN_DRIFT_HALF)
    return {"old": float(w[old].sum()), "new": float(w[new].sum())}


def main() -> None:
    print("trust (threshold 0.7): share called untrusted / trusted")
    print(f"{'p':>5} {'n':>3} {'old untrusted':>14} {'new untrusted':>14} {'old trusted':>12} {'new trusted':>12}")
    for p in (0.25, 0.5, 0.75, 0.85, 0.95):
        for n in (5, 10, 20):
            r = trust_rates(p, n)
            print(f"{p:5.2f} {n:3d} {r['old_untrusted']:14.3f} {r['new_untrusted']:14.3f} "
                  f"{r['old_trusted']:12.3f} {r['new_trusted']:12.3f}")
    print("\ndrift: share flagged (constant accuracy: false; 0.9 -> 0.5: found)")
    print(f"{'accuracy':>10} {'half':>4} {'old':>7} {'new':>7}")
    for p1, p2 in ((0.7, 0.7), (0.85, 0.85), (0.9, 0.5)):
        for h in (2, 5, 10, 20):
            r = drift_rates(p1, p2, h)
            print(f"{p1:.2f}->{p2:.2f} {h:4d} {r['old']:7.3f} {r['new']:7.3f}")


if __name__ == "__main__":
    main()
