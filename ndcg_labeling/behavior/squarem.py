"""SQUAREM: EM accelerated by squared extrapolation (Varadhan & Roland, *Simple and globally convergent
methods for accelerating the convergence of any EM algorithm*, Scand. J. Statist. 35, 2008), scheme S3.

EM converges linearly, and slowly where the data say little about a parameter (a pair seen a few
times, an attractiveness near 0 or 1): the PBM at 100M impressions takes about 250 EM steps. SQUAREM
takes two EM steps from ``theta0``, ``theta1 = F(theta0)`` and ``theta2 = F(theta1)``, and jumps along
``r = theta1 - theta0``, ``v = theta2 - theta1 - r``:

    theta' = theta0 - 2 s r + s^2 v,   s = -||r|| / ||v||  (at most -1; s = -1 is theta2)

clipped into the parameter box. The jump is kept only when the log-likelihood at ``theta'`` is not lower
than at ``theta0`` (so the log-likelihoods of the accepted points never fall, as in EM); otherwise the
cycle falls back to the EM point ``theta2``. A kept jump's E-step is also the next cycle's first EM step,
so a cycle costs two E-steps (one with the log-likelihood) where it is kept.

Stopping rules, as the plain EM of :func:`ndcg_labeling.behavior.click_models.pbm`: the largest
parameter change of one EM step is below ``tol``, or the log-likelihood per impression rose by less
than ``ll_tol`` from one accepted point to the next, or ``max_steps`` E-steps were spent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

#: ``step(theta, with_ll)``: the EM update ``F(theta)`` and, when asked, the log-likelihood at ``theta``
Step = Callable[[NDArray[np.float64], bool], tuple[NDArray[np.float64], float | None]]


@dataclass(frozen=True)
class SquaremResult:
    theta: NDArray[np.float64]
    log_likelihood: float
    e_steps: int
    converged: bool
    jumps_kept: int


def squarem(theta0: NDArray[np.float64], step: Step, *, lower: NDArray[np.float64], upper: NDArray[np.float64],
            tol: float, ll_tol: float, max_steps: int) -> SquaremResult:
    """Run SQUAREM from ``theta0``; ``lower``/``upper`` bound each parameter (a jump is clipped into them)."""
    theta1, first = step(theta0, True)
    theta, ll, steps, kept = theta0, _value(first), 1, 0
    while steps < max_steps:
        if float(np.max(np.abs(theta1 - theta), initial=0.0)) < tol:
            return SquaremResult(theta1, ll, steps, True, kept)
        theta2, _ = step(theta1, False)
        steps += 1
        r = theta1 - theta
        v = theta2 - theta1 - r
        rr, vv = float(r @ r), float(v @ v)
        s = min(-np.sqrt(rr / vv), -1.0) if vv > 0 else -1.0
        jump = np.clip(theta - 2.0 * s * r + s * s * v, lower, upper)
        after, ll_jump = step(jump, True)
        steps += 1
        if ll_jump is not None and ll_jump >= ll:
            theta, theta1, gain, ll, kept = jump, after, ll_jump - ll, ll_jump, kept + 1
        else:  # the jump lost likelihood: take the EM point theta2 (EM never loses any)
            theta, (theta1, ll2) = theta2, step(theta2, True)
            steps += 1
            gain, ll = _value(ll2) - ll, _value(ll2)
        if gain < ll_tol:
            return SquaremResult(theta, ll, steps, True, kept)
    return SquaremResult(theta1, ll, steps, False, kept)


def _value(ll: float | None) -> float:
    return -np.inf if ll is None else float(ll)
