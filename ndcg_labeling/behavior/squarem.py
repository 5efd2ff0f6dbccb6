"""SQUAREM: EM accelerated by squared extrapolation (Varadhan & Roland, *Simple and globally convergent
methods for accelerating the convergence of any EM algorithm*, Scand. J. Statist. 35, 2008), scheme S3.

EM converges linearly, and slowly where the data say little about a parameter (a pair seen a few
times, an attractiveness near 0 or 1): the PBM at 100M impressions takes about 250 EM steps. SQUAREM
takes two EM steps from ``theta0``, ``theta1 = F(theta0)`` and ``theta2 = F(theta1)``, and jumps along
``r = theta1 - theta0``, ``v = theta2 - theta1 - r``:

    theta' = theta0 - 2 s r + s^2 v,   s = -||r|| / ||v||  (at most -1; s = -1 is theta2)

kept inside the parameter box: where a value would come much closer to a bound than the EM point
``theta2`` is (see :func:`_inside_jump`), the EM point's value is taken for it; a jump is never clipped,
since EM never moves a value of exactly 1 off 1 and a clipped jump froze the fit short of its maximum
(issue 46). The jump is kept only when the log-likelihood at ``theta'`` is not lower than at ``theta0``
(so the log-likelihoods of the accepted points never fall, as in EM); otherwise the cycle falls back to
the EM point ``theta2``. A kept jump's E-step is also the next cycle's first EM step, so a cycle costs
two E-steps (one with the log-likelihood) where it is kept.

Stopping rules: the largest parameter change of one EM step is below ``tol``; or the likelihood and the
parameters together: a cycle gained less than ``ll_tol`` per impression, one plain EM step from its end
gains less than ``ll_tol`` too and changes no parameter by ``sqrt(tol)`` or more (a poor jump gains
little while the parameters still move: a cycle's small gain alone stopped the fit early); or
``max_steps`` E-steps were spent.
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
    """Run SQUAREM from ``theta0``; ``lower``/``upper`` bound each parameter (a jump never leaves them)."""
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
        jump = _inside_jump(theta, r, v, s, theta2, lower, upper)
        after, ll_jump = step(jump, True)
        steps += 1
        if ll_jump is not None and ll_jump >= ll:
            theta, theta1, gain, ll, kept = jump, after, ll_jump - ll, ll_jump, kept + 1
        else:  # the jump left the box or lost likelihood: take the EM point theta2 (EM never loses any)
            theta, (theta1, ll2) = theta2, step(theta2, True)
            steps += 1
            gain, ll = _value(ll2) - ll, _value(ll2)
        if gain < ll_tol and steps < max_steps:
            # a small gain of one cycle is no proof of convergence (a poor jump gains little while the
            # parameters still move): stop only where one plain EM step from here gains less than ll_tol
            # too, and its parameter change is already small (below sqrt(tol), PyClick-like: the
            # likelihood and the parameters together)
            theta_next, ll_next = step(theta1, True)
            steps += 1
            em_gain = _value(ll_next) - ll
            change = float(np.max(np.abs(theta1 - theta), initial=0.0))
            if em_gain < ll_tol and change < np.sqrt(tol):
                return SquaremResult(theta1, _value(ll_next), steps, True, kept)
            theta, theta1, ll = theta1, theta_next, _value(ll_next)
    return SquaremResult(theta1, ll, steps, False, kept)


#: a jump may bring a value at most this many times closer to a bound than its EM point is, and never
#: closer than _MARGIN unless the EM point is
_APPROACH = 10.0
_MARGIN = 1e-8


def _inside_jump(theta: NDArray[np.float64], r: NDArray[np.float64], v: NDArray[np.float64], s: float,
                 theta2: NDArray[np.float64], lower: NDArray[np.float64],
                 upper: NDArray[np.float64]) -> NDArray[np.float64]:
    """The S3 jump ``theta - 2 s r + s^2 v``, except where a value would come :data:`_APPROACH` times
    closer to a bound than its EM point ``theta2`` is (or cross it): there, the EM point's value (the
    plain EM step). Never clipped: EM keeps a value of exactly 1 at 1 (an attractiveness, an
    examination) and leaves a value within 1e-15 of it only after thousands of steps, so a jump that
    pinned a value at a bound froze the fit short of its maximum. A value whose EM point sits on a bound
    (a pair clicked at every impression) may stay there."""
    jump = theta - 2.0 * s * r + s * s * v
    refused = np.zeros(jump.shape, dtype=bool)
    for to_jump, to_em in ((jump - lower, theta2 - lower), (upper - jump, upper - theta2)):
        nearest = np.minimum(to_em, np.maximum(to_em / _APPROACH, _MARGIN))
        refused |= to_jump < nearest
    return np.where(refused, theta2, jump)


def _value(ll: float | None) -> float:
    return -np.inf if ll is None else float(ll)
