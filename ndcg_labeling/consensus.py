"""Consensus grades per item from many graders: median, mean, majority vote and Dawid-Skene.

Pure kernel: imports numpy (and, through :mod:`ndcg_labeling.agreement`, krippendorff) only. Grades
come in long format (``item``, ``grader``, ``grade`` parallel integer arrays plus the scale's
``value_domain``; see :mod:`ndcg_labeling.agreement`). Everything is vectorised over an items x values
count matrix (``np.bincount``), so median, mean and majority over 10^6 grades take a fraction of a second.

Methods (``r_i`` grades on item i):

* ``median``: a grade of the scale. With an even ``r_i`` the two middle grades may differ; ``tie``
  picks the lower (``"low"``) or the higher (``"high"``) -- a tie broken by the rule, not flagged.
* ``majority``: the most frequent grade; a tie between modes is broken the same way (lowest / highest
  of the tied modes).
* ``mean``: the arithmetic mean of the grades, a fraction. No ties.
* ``dawid-skene``: EM over one confusion matrix per grader (classes = the full value domain),
  initialised from the vote shares (soft majority vote), with ``smoothing`` pseudo-counts added to every
  confusion cell and class prior. ``point="mean"`` gives the posterior-expected grade (a fraction),
  ``point="mode"`` the most probable grade (exact ties broken by ``tie``). Unlike the other methods its
  value may lie outside the item's own [min, max]: it corrects graders it has learnt to be biased.
  Reference: A. P. Dawid and A. M. Skene (1979), *Maximum likelihood estimation of observer error-rates
  using the EM algorithm*, Applied Statistics 28(1).

Ties and flags. ``tie="low"`` or ``"high"`` always break a tie, so under them no tie is unbreakable.
``tie="flag"`` (library only; the CLI offers low|high) is the rule that breaks nothing: the value falls
back to the low choice and the item is flagged ``"unbreakable tie"`` for adjudication -- for median
(differing middle grades), majority (several modes) and Dawid-Skene with ``point="mode"`` (exactly equal
posteriors); ``mean`` and Dawid-Skene ``point="mean"`` never tie. An item also needs adjudication when it
has fewer than ``min_graders`` grades (``"too few graders"``; this includes items without any grade,
whose value is NaN) or when ``max - min`` of its grades exceeds ``max_spread`` (``"spread above
max"``). Several reasons are joined with ``"; "``.

The even median. With an even number of grades the two middle grades may differ; ``tie`` picks one
(the CLI's default ``low`` takes the lower: 0/2 gives 0, 1/3 gives 1). When they differ by **more than
one grade** no rule is a fair reading of the graders, so the item is flagged ``"even median split by
more than one grade"`` whatever ``max_spread`` is (with the default ``max_spread=1`` such an item is
flagged for its spread too); the value is still the tie rule's, until a person adjudicates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ndcg_labeling.agreement import Grades, check_grades
from ndcg_labeling.choices import ConsensusMethod, DawidSkenePoint, TieRule

# The option strings; the members of ndcg_labeling.choices (StrEnums) are accepted as the same strings.
Method = ConsensusMethod | Literal["median", "mean", "majority", "dawid-skene"]
Tie = TieRule | Literal["low", "high", "flag"]  # "flag": library only (see above)
Point = DawidSkenePoint | Literal["mean", "mode"]

METHODS: tuple[str, ...] = tuple(m.value for m in ConsensusMethod)
TIES: tuple[str, ...] = (*(t.value for t in TieRule), "flag")
POINTS: tuple[str, ...] = tuple(p.value for p in DawidSkenePoint)

REASON_TOO_FEW = "too few graders"
REASON_SPREAD = "spread above max"
REASON_TIE = "unbreakable tie"
REASON_SPLIT = "even median split by more than one grade"

_TOO_FEW, _SPREAD, _TIE, _SPLIT = 1, 2, 4, 8
# reason text for every combination of the four bits above
_REASON_TEXT = np.array(
    [
        "; ".join(
            text
            for bit, text in ((_TOO_FEW, REASON_TOO_FEW), (_SPREAD, REASON_SPREAD), (_TIE, REASON_TIE),
                              (_SPLIT, REASON_SPLIT))
            if code & bit
        )
        for code in range(16)
    ],
    dtype=object,
)


@dataclass(frozen=True, eq=False)
class ConsensusResult:
    """Consensus per item; every array has one entry per item code ``0 .. n_items - 1``.

    * ``value``: the consensus grade (float64; a grade of the scale for median, majority and
      Dawid-Skene ``point="mode"``, a fraction otherwise); NaN for an item without grades.
    * ``n_graders``: grades on the item.
    * ``spread``: max - min of the item's grades in grade units; NaN without grades.
    * ``needs_adjudication``: any reason below applies.
    * ``reason``: ``""`` or the reasons (:data:`REASON_TOO_FEW`, :data:`REASON_SPREAD`,
      :data:`REASON_TIE`, :data:`REASON_SPLIT`) joined with ``"; "`` (object array of str).
    * Dawid-Skene only (None otherwise): ``posterior`` (n_items x q, NaN rows for items without
      grades), ``confusion`` (n_graders x q x q, ``[g, true, given]``, rows sum to 1), ``prior`` (q,),
      ``n_iter`` (EM iterations run) and ``converged``.
    """

    method: str
    value: NDArray[np.float64]
    n_graders: NDArray[np.int64]
    spread: NDArray[np.float64]
    needs_adjudication: NDArray[np.bool_]
    reason: NDArray[np.object_]
    posterior: NDArray[np.float64] | None = None
    confusion: NDArray[np.float64] | None = None
    prior: NDArray[np.float64] | None = None
    n_iter: int | None = None
    converged: bool | None = None


def _pick(candidates: NDArray[np.bool_], tie: Tie) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Per row, the index of the lowest (or highest) True column and whether more than one is True."""
    q = candidates.shape[1]
    chosen = q - 1 - np.argmax(candidates[:, ::-1], axis=1) if tie == "high" else np.argmax(candidates, axis=1)
    tied = np.count_nonzero(candidates, axis=1) > 1
    return chosen.astype(np.int64), tied


def _dawid_skene(
    g: Grades, counts: NDArray[np.int64], *, max_iter: int, tol: float, smoothing: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], int, bool]:
    """EM of Dawid and Skene; returns (posterior, confusion, prior, iterations, converged).

    E step: ``log T[i, k] = log prior[k] + sum over i's grades (g, a) of log confusion[g, k, a]``;
    M step: ``confusion[g, k, a] ∝ smoothing + sum over g's grades a of T[i, k]``,
    ``prior[k] ∝ smoothing + sum_i T[i, k]``. Stops when the observed-data log-likelihood per grade gains less than ``tol``
    (EM never lowers it), or after ``max_iter`` iterations.
    """
    q = g.domain.shape[0]
    n_items, n_gr = g.n_items, g.n_graders
    r = counts.sum(axis=1)
    rated = r > 0
    posterior = counts / np.maximum(r, 1)[:, None]
    posterior[~rated] = 1.0 / q
    n_rated = int(np.count_nonzero(rated))
    cell = g.grader * q + g.value_index  # (grader, given) cell of each grade
    flat_base = (
        g.grader * (q * q) + g.value_index
    )  # + k * q: (grader, true=k, given) in the raveled confusion
    converged = False
    n_iter = 0
    previous = -np.inf
    prior = np.full(q, 1.0 / q)
    confusion = np.full((n_gr, q, q), 1.0 / q)
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (n_iter is reported)
        # M step
        prior = (posterior[rated].sum(axis=0) + smoothing) / (n_rated + q * smoothing)
        for k in range(q):
            confusion[:, k, :] = np.bincount(cell, weights=posterior[g.item, k], minlength=n_gr * q).reshape(
                n_gr, q
            )
        confusion += smoothing
        confusion /= confusion.sum(axis=2, keepdims=True)
        # E step
        log_conf = np.log(confusion).ravel()
        log_like = np.empty((n_items, q))
        for k in range(q):
            log_like[:, k] = np.bincount(g.item, weights=log_conf[flat_base + k * q], minlength=n_items)
        log_like += np.log(prior)
        top = log_like.max(axis=1, keepdims=True)
        log_like -= top
        updated = np.exp(log_like)
        total = updated.sum(axis=1, keepdims=True)
        updated /= total
        posterior = updated
        # observed-data log-likelihood per grade; EM never decreases it
        log_likelihood = float((top + np.log(total))[rated].sum()) / max(g.n_grades, 1)
        if log_likelihood - previous < tol:
            converged = True
            break
        previous = log_likelihood
    posterior[~rated] = np.nan
    return posterior, confusion, prior, n_iter, converged


def _check_options(func: str, method: str, tie: str, point: str, min_graders: int, max_spread: int | None,
                   max_iter: int, tol: float, smoothing: float) -> None:
    """``ValueError`` naming ``func``, the option and the value for any option outside its range."""
    if method not in METHODS:
        raise ValueError(f"{func}: method must be one of {METHODS}, got {method!r}")
    if tie not in TIES:
        raise ValueError(f"{func}: tie must be one of {TIES}, got {tie!r}")
    if point not in POINTS:
        raise ValueError(f"{func}: point must be one of {POINTS}, got {point!r}")
    if min_graders < 1:
        raise ValueError(f"{func}: min_graders must be at least 1, got {min_graders}")
    if max_spread is not None and max_spread < 0:
        raise ValueError(f"{func}: max_spread must be non-negative or None, got {max_spread}")
    if max_iter < 1:
        raise ValueError(f"{func}: max_iter must be at least 1, got {max_iter}")
    if not tol > 0:
        raise ValueError(f"{func}: tol must be positive, got {tol}")
    if not smoothing > 0:
        raise ValueError(f"{func}: smoothing must be positive, got {smoothing}")


def _median(counts: NDArray[np.int64], r: NDArray[np.int64], rated: NDArray[np.bool_], dom: NDArray[np.float64],
            tie: Tie) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The median grade per item (the lower or higher middle value by ``tie``) and whether two differ."""
    q = dom.shape[0]
    cum = np.cumsum(counts, axis=1)
    k_low = (r - 1) // 2
    k_high = r // 2
    i_low = np.count_nonzero(cum <= k_low[:, None], axis=1)
    i_high = np.count_nonzero(cum <= k_high[:, None], axis=1)
    chosen = i_high if tie == "high" else i_low
    tied = rated & (i_low != i_high)
    return dom[np.minimum(chosen, q - 1)], tied


def _even_split(counts: NDArray[np.int64], r: NDArray[np.int64], rated: NDArray[np.bool_],
                dom: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Items whose two middle grades (an even count) differ by more than one grade."""
    low, _ = _median(counts, r, rated, dom, "low")
    high, _ = _median(counts, r, rated, dom, "high")
    out: NDArray[np.bool_] = rated & (high - low > 1)
    return out


def consensus(
    item: ArrayLike,
    grader: ArrayLike,
    grade: ArrayLike,
    value_domain: ArrayLike,
    method: Method = "median",
    *,
    tie: Tie = "low",
    min_graders: int = 2,
    max_spread: int | None = 1,
    point: Point = "mean",
    n_items: int | None = None,
    max_iter: int = 100,
    tol: float = 1e-6,
    smoothing: float = 0.01,
) -> ConsensusResult:
    """One consensus grade per item by ``method``, with the items that need adjudication (the methods,
    tie rules and flags: see the module docstring). ``max_spread=None`` turns the spread check off. ``n_items`` (default: largest item code + 1) sizes the result, so items without
    grades can be included. ``max_iter``, ``tol`` and ``smoothing`` tune Dawid-Skene only.
    """
    func = "consensus"
    _check_options(func, method, tie, point, min_graders, max_spread, max_iter, tol, smoothing)
    g = check_grades(func, item, grader, grade, value_domain, n_items=n_items)
    dom = g.domain.astype(np.float64)
    q = dom.shape[0]
    counts = g.value_counts()
    r = counts.sum(axis=1)
    rated = r > 0
    present = counts > 0
    lowest = np.argmax(present, axis=1)
    highest = q - 1 - np.argmax(present[:, ::-1], axis=1)
    spread = np.where(rated, dom[highest] - dom[lowest], np.nan)

    tied = np.zeros(g.n_items, dtype=bool)
    posterior: NDArray[np.float64] | None = None
    confusion: NDArray[np.float64] | None = None
    prior: NDArray[np.float64] | None = None
    n_iter: int | None = None
    converged: bool | None = None
    if method == "median":
        value, tied = _median(counts, r, rated, dom, tie)
    elif method == "majority":
        modes = counts == counts.max(axis=1, keepdims=True)
        chosen, tied = _pick(modes, tie)
        value = dom[chosen]
    elif method == "mean":
        value = (counts @ dom) / np.maximum(r, 1)
    else:
        posterior, confusion, prior, n_iter, converged = _dawid_skene(
            g, counts, max_iter=max_iter, tol=tol, smoothing=smoothing
        )
        if point == "mean":
            value = np.nan_to_num(posterior) @ dom
        else:
            best = np.nan_to_num(posterior, nan=-1.0)
            chosen, tied = _pick(best == best.max(axis=1, keepdims=True), tie)
            value = dom[chosen]
    value = np.where(rated, value, np.nan)
    tied &= rated

    code = np.where(r < min_graders, _TOO_FEW, 0)
    if max_spread is not None:
        code |= np.where(rated & (spread > max_spread), _SPREAD, 0)
    if tie == "flag":
        code |= np.where(tied, _TIE, 0)
    if method == "median":
        code |= np.where(_even_split(counts, r, rated, dom), _SPLIT, 0)
    return ConsensusResult(
        method=method,
        value=value.astype(np.float64, copy=False),
        n_graders=r.astype(np.int64, copy=False),
        spread=spread,
        needs_adjudication=code > 0,
        reason=_REASON_TEXT[code],
        posterior=posterior,
        confusion=confusion,
        prior=prior,
        n_iter=n_iter,
        converged=converged,
    )
