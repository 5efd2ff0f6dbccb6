"""Agreement between graders: Krippendorff's alpha and its companion statistics.

Pure kernel: imports numpy and krippendorff only. Every function takes grades in long format, three
parallel 1-D integer arrays of equal length:

* ``item``  -- dense item codes ``0 .. n_items - 1``,
* ``grader`` -- dense grader codes ``0 .. n_graders - 1``,
* ``grade`` -- the grade, one of the scale's ``value_domain`` (e.g. ``(0, 1, 2, 3)``),

plus the ``value_domain`` itself (strictly increasing integers, at least two). A grader grades an item at
most once; the inputs are never modified. Bad input raises ``ValueError`` naming the function, the rule
and the value received.

Definitions (``r_i`` = number of grades of item ``i``, ``r_ik`` = those equal to the k-th value; an item
is *pairable* when ``r_i >= 2``):

* **Krippendorff's alpha** ``1 - D_o / D_e`` at the nominal, ordinal or interval level, computed by
  ``krippendorff.alpha`` from the items x values count matrix with the full value domain (so an unused
  grade still counts in the ordinal distances). Reference: K. Krippendorff (2011), *Computing
  Krippendorff's Alpha-Reliability*.
* **Percent agreement** ``p_a = mean over pairable items of sum_k r_ik (r_ik - 1) / (r_i (r_i - 1))``:
  the share of agreeing ordered pairs of grades on an item, every pairable item weighted equally. This
  is the ``p_a`` of Gwet's AC1 as computed by irrCAC (and Gwet's R functions).
* **Gwet's AC1 / AC2** ``(p_a - p_e) / (1 - p_e)`` with agreement weights ``w_kl`` (identity for AC1;
  ordinal by default for AC2, quadratic or linear on request), ``p_a`` as above with ``r_ik`` replaced by
  ``sum_l w_kl r_il`` in the first factor, and ``p_e = sum(w) / (q (q - 1)) * sum_k pi_k (1 - pi_k)``
  where ``pi_k`` is the mean over items with at least one grade of ``r_ik / r_i`` and ``q`` is the size
  of the full value domain. Reference: K. L. Gwet (2014), *Handbook of Inter-Rater Reliability*, 4th ed.
  Matches ``irrCAC.raw.CAC(..., categories=value_domain).gwet()``.
* **Prevalence paradox**: alpha (and kappa-type coefficients) fall towards zero when nearly all grades
  sit on one value, even though graders almost always agree. :func:`agreement_stats` sets
  ``prevalence_paradox`` when alpha is defined, ``alpha < 0.4`` and ``percent_agreement >= 0.9``, and
  says so in ``note``; AC1/AC2 do not collapse in that case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import krippendorff
import numpy as np
from numpy.typing import ArrayLike, NDArray

from ndcg_labeling.choices import AgreementLevel

# The members of ndcg_labeling.choices.AgreementLevel are accepted as the same strings.
Level = AgreementLevel | Literal["nominal", "ordinal", "interval"]
_KRIPPENDORFF_LEVEL: dict[str, Literal["nominal", "ordinal", "interval"]] = {
    "nominal": "nominal", "ordinal": "ordinal", "interval": "interval"}
WeightKind = Literal["identity", "ordinal", "linear", "quadratic"]

LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval")
WEIGHT_KINDS: tuple[str, ...] = ("identity", "ordinal", "linear", "quadratic")

#: The prevalence-paradox rule: alpha below this ...
PARADOX_ALPHA_BELOW = 0.4
#: ... while the percent agreement is at least this.
PARADOX_AGREEMENT_AT_LEAST = 0.9

#: grader_stats builds dense n_graders x n_graders matrices; beyond this it refuses (memory).
MAX_GRADERS_PAIRWISE = 5000

# The scale factor that makes the median absolute deviation estimate a normal standard deviation.
_MAD_TO_SD = 1.4826


@dataclass(frozen=True, eq=False)
class Grades:
    """Validated long-format grades (see :func:`check_grades`).

    ``value_index[r]`` is the position of row r's grade in ``domain``. The int64 arrays may share memory
    with the caller's arrays; nothing here writes to them.
    """

    item: NDArray[np.int64]
    grader: NDArray[np.int64]
    value_index: NDArray[np.int64]
    domain: NDArray[np.int64]
    n_items: int
    n_graders: int

    @property
    def n_grades(self) -> int:
        return int(self.item.shape[0])

    def value_counts(self) -> NDArray[np.int64]:
        """The ``n_items x len(domain)`` matrix: how many grades of each value each item received."""
        v = self.domain.shape[0]
        flat = np.bincount(self.item * v + self.value_index, minlength=self.n_items * v)
        return flat.reshape(self.n_items, v).astype(np.int64, copy=False)


def _int_array(func: str, name: str, values: ArrayLike) -> NDArray[np.int64]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{func}: {name} must be a 1-D array, got shape {arr.shape}")
    if arr.dtype.kind not in "iu" and not (arr.dtype.kind in "fO" and arr.size == 0):
        raise ValueError(f"{func}: {name} must hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def check_domain(func: str, value_domain: ArrayLike) -> NDArray[np.int64]:
    """``value_domain`` as an int64 array; ``ValueError`` unless it is >= 2 strictly increasing integers."""
    dom = np.asarray(value_domain)
    if dom.ndim != 1 or dom.dtype.kind not in "iu":
        raise ValueError(f"{func}: value_domain must be a 1-D sequence of integers, got {value_domain!r}")
    if dom.shape[0] < 2:
        raise ValueError(f"{func}: value_domain must hold at least two values, got {value_domain!r}")
    if np.any(np.diff(dom) <= 0):
        raise ValueError(f"{func}: value_domain must be strictly increasing, got {value_domain!r}")
    return dom.astype(np.int64, copy=False)


def check_grades(
    func: str,
    item: ArrayLike,
    grader: ArrayLike,
    grade: ArrayLike,
    value_domain: ArrayLike,
    *,
    n_items: int | None = None,
    n_graders: int | None = None,
) -> Grades:
    """Validate long-format grades for the kernel ``func`` (its name goes into every message).

    Rules: three 1-D integer arrays of equal length; ``item`` and ``grader`` non-negative (and below
    ``n_items`` / ``n_graders`` when given); every grade in ``value_domain``; no (item, grader) pair twice.
    ``n_items`` / ``n_graders`` default to the largest code + 1 (0 for no grades).
    """
    dom = check_domain(func, value_domain)
    it = _int_array(func, "item", item)
    gr = _int_array(func, "grader", grader)
    gd = _int_array(func, "grade", grade)
    if not (it.shape[0] == gr.shape[0] == gd.shape[0]):
        raise ValueError(
            f"{func}: item, grader and grade must have the same length, got {it.shape[0]}, {gr.shape[0]}, {gd.shape[0]}"
        )
    n = it.shape[0]
    for name, arr, bound in (("item", it, n_items), ("grader", gr, n_graders)):
        if bound is not None and bound < 0:
            raise ValueError(f"{func}: n_{name}s must be non-negative, got {bound}")
        if n == 0:
            continue
        low = int(arr.min())
        if low < 0:
            row = int(np.argmax(arr < 0))
            raise ValueError(f"{func}: {name} codes must be non-negative, got {low} at row {row}")
        high = int(arr.max())
        if bound is not None and high >= bound:
            row = int(np.argmax(arr >= bound))
            raise ValueError(f"{func}: {name} codes must be below n_{name}s={bound}, got {high} at row {row}")
    n_it = int(n_items) if n_items is not None else (int(it.max()) + 1 if n else 0)
    n_gr = int(n_graders) if n_graders is not None else (int(gr.max()) + 1 if n else 0)

    vidx = np.searchsorted(dom, gd)
    np.clip(vidx, 0, dom.shape[0] - 1, out=vidx)
    bad = dom[vidx] != gd
    if bad.any():
        row = int(np.argmax(bad))
        raise ValueError(
            f"{func}: grades must be in the value domain {tuple(int(v) for v in dom)}, got {int(gd[row])} at row {row}"
        )

    if n > 1:
        keys = np.sort(it * n_gr + gr)
        dup = keys[1:] == keys[:-1]
        if dup.any():
            key = int(keys[1:][dup][0])
            raise ValueError(
                f"{func}: a grader may grade an item only once, got grader {key % n_gr} twice on item {key // n_gr}"
            )
    return Grades(it, gr, vidx.astype(np.int64, copy=False), dom, n_it, n_gr)


def agreement_weights(value_domain: ArrayLike, kind: WeightKind = "ordinal") -> NDArray[np.float64]:
    """The ``q x q`` agreement-weight matrix ``w`` (1 on the diagonal, 0 for the farthest pair) of Gwet.

    * ``identity``: 1 if k == l else 0 (unweighted, AC1);
    * ``ordinal``: ``1 - M_kl / max M`` with ``M_kl = C(|k - l| + 1, 2)`` on the ranks k, l;
    * ``linear``: ``1 - |v_k - v_l| / (v_max - v_min)`` on the values;
    * ``quadratic``: ``1 - (v_k - v_l)^2 / (v_max - v_min)^2`` on the values.

    These are irrCAC's definitions (``irrCAC.weights.Weights``).
    """
    dom = check_domain("agreement_weights", value_domain).astype(np.float64)
    q = dom.shape[0]
    if kind == "identity":
        return np.eye(q)
    if kind == "ordinal":
        ranks = np.arange(q, dtype=np.float64)
        d = np.abs(ranks[:, None] - ranks[None, :])
        m = (d + 1) * d / 2
        ordinal: NDArray[np.float64] = 1.0 - m / m.max()
        return ordinal
    diff = np.abs(dom[:, None] - dom[None, :])
    span = float(dom[-1] - dom[0])
    if kind == "linear":
        linear: NDArray[np.float64] = 1.0 - diff / span
        return linear
    if kind == "quadratic":
        quadratic: NDArray[np.float64] = 1.0 - (diff / span) ** 2
        return quadratic
    raise ValueError(f"agreement_weights: kind must be one of {WEIGHT_KINDS}, got {kind!r}")


@dataclass(frozen=True)
class AgreementStats:
    """Agreement over one set of grades; see the module docstring for the definitions.

    ``alpha`` is None (and ``reason`` says why) when Krippendorff's alpha is undefined: no grades, a
    single grader, no item with two grades, or a single value among the pairable grades. ``ac1``, ``ac2``
    and ``percent_agreement`` are None when no item has two grades. Counts: ``n_items`` items with at
    least one grade, ``n_pairable`` items with at least two, ``n_graders`` graders with at least one grade.
    """

    level: str
    alpha: float | None
    reason: str | None
    n_items: int
    n_pairable: int
    n_graders: int
    n_grades: int
    percent_agreement: float | None
    ac1: float | None
    ac2: float | None
    ac2_weights: str
    prevalence_paradox: bool
    note: str | None


def _gwet(counts: NDArray[np.int64], weights: NDArray[np.float64]) -> tuple[float, float]:
    """(p_a, coefficient) of Gwet's AC over items with >= 1 grade; needs >= 1 pairable item."""
    r = counts.sum(axis=1)
    counts = counts[r > 0]
    r = r[r > 0]
    cf = counts.astype(np.float64)
    weighted = cf @ weights.T
    pairable = r >= 2
    rp = r[pairable].astype(np.float64)
    per_item = (cf[pairable] * (weighted[pairable] - 1.0)).sum(axis=1) / (rp * (rp - 1.0))
    pa = float(per_item.mean())
    pi = (cf / r[:, None]).mean(axis=0)
    q = counts.shape[1]
    pe = float(weights.sum() * (pi * (1.0 - pi)).sum() / (q * (q - 1)))
    return pa, (pa - pe) / (1.0 - pe)


def _alpha_or_reason(paired: NDArray[np.int64], domain: NDArray[np.int64], level: Level, n_grades: int,
                     n_graders: int) -> tuple[float | None, str | None]:
    """Krippendorff's alpha of the pairable items' value counts, or None and why it is undefined."""
    if n_grades == 0:
        return None, "no grades"
    if n_graders == 1:
        return None, "a single grader"
    if len(paired) == 0:
        return None, "no item with two grades"
    if np.count_nonzero(paired.sum(axis=0)) == 1:
        return None, "a single value in the data"
    alpha = krippendorff.alpha(value_counts=paired, value_domain=domain,
                               level_of_measurement=_KRIPPENDORFF_LEVEL[str(level)])
    return float(alpha), None


def _paradox_note(paired: NDArray[np.int64], domain: NDArray[np.int64], alpha: float | None, pa: float | None,
                  ac1: float | None, ac2: float | None) -> str | None:
    """The prevalence-paradox explanation: high raw agreement, low alpha, grades on one value."""
    if alpha is None or pa is None or ac1 is None or ac2 is None:
        return None
    totals = paired.sum(axis=0)
    top = int(np.argmax(totals))
    share = totals[top] / totals.sum()
    return (
        f"graders agree on {pa:.0%} of pairs but alpha is {alpha:.2f}: the grades are concentrated on "
        f"one value ({share:.0%} of paired grades are {int(domain[top])}) (prevalence paradox); "
        f"read AC1 ({ac1:.2f}) and AC2 ({ac2:.2f}) too"
    )


def agreement_stats(
    item: ArrayLike,
    grader: ArrayLike,
    grade: ArrayLike,
    value_domain: ArrayLike,
    level: Level = "ordinal",
    *,
    ac2_weights: WeightKind = "ordinal",
    n_items: int | None = None,
) -> AgreementStats:
    """Krippendorff's alpha at ``level`` with percent agreement, Gwet's AC1 and AC2 (``ac2_weights``).

    Vectorised over an items x values count matrix (``np.bincount``): about 0.1 s for 10^6 grades.
    Undefined cases never raise: alpha is None with a ``reason``. See the module docstring for the
    formulas, the prevalence-paradox rule and the references.
    """
    func = "agreement_stats"
    if level not in LEVELS:
        raise ValueError(f"{func}: level must be one of {LEVELS}, got {level!r}")
    if ac2_weights not in WEIGHT_KINDS:
        raise ValueError(f"{func}: ac2_weights must be one of {WEIGHT_KINDS}, got {ac2_weights!r}")
    g = check_grades(func, item, grader, grade, value_domain, n_items=n_items)
    counts = g.value_counts()
    per_item = counts.sum(axis=1)
    n_rated = int(np.count_nonzero(per_item))
    pairable = per_item >= 2
    n_pairable = int(np.count_nonzero(pairable))
    n_graders = int(np.count_nonzero(np.bincount(g.grader))) if g.n_grades else 0

    pa: float | None = None
    ac1: float | None = None
    ac2: float | None = None
    if n_pairable:
        pa, ac1 = _gwet(counts, agreement_weights(g.domain, "identity"))
        _, ac2 = _gwet(counts, agreement_weights(g.domain, ac2_weights))

    paired = counts[pairable]
    alpha, reason = _alpha_or_reason(paired, g.domain, level, g.n_grades, n_graders)
    paradox = (
        alpha is not None
        and pa is not None
        and alpha < PARADOX_ALPHA_BELOW
        and pa >= PARADOX_AGREEMENT_AT_LEAST
    )
    note = _paradox_note(paired, g.domain, alpha, pa, ac1, ac2) if paradox else None
    return AgreementStats(level=level, alpha=alpha, reason=reason, n_items=n_rated, n_pairable=n_pairable,
                          n_graders=n_graders, n_grades=g.n_grades, percent_agreement=pa, ac1=ac1, ac2=ac2,
                          ac2_weights=ac2_weights, prevalence_paradox=paradox, note=note)


@dataclass(frozen=True, eq=False)
class GraderStats:
    """Per-grader statistics; every array is indexed by grader code ``0 .. n_graders - 1``.

    * ``n_grades[g]``: grades given by g.
    * ``n_compared[g]``: those on items someone else graded too.
    * ``mean_difference[g]``: mean over those grades of ``grade - mean of the other graders' grades on
      the item`` (leave-one-out consensus), in grade units; positive = g grades higher. NaN if none.
    * ``kappa[g, h]``: weighted Cohen's kappa of g against h over their shared items (``weights``), NaN
      on the diagonal, with fewer than ``min_overlap`` shared items, or when undefined (no disagreement
      is possible under the two marginals, e.g. both always gave the same single grade).
    * ``overlap[g, h]``: number of shared items (0 on the diagonal).
    * ``mean_kappa[g]``: mean of g's defined pairwise kappas weighted by the overlap; NaN if none.
    * ``flagged[g]``: ``mean_kappa[g] < flag_threshold``, where ``flag_threshold = median_kappa -
      max(flag_gap, flag_mads * 1.4826 * MAD)`` over the graders with a defined mean kappa (needs at least
      three of them; otherwise nobody is flagged and both are None). A grader must be both far below the
      others in absolute terms (``flag_gap`` kappa) and unusual given their spread.
    """

    weights: str
    n_graders: int
    n_grades: NDArray[np.int64]
    n_compared: NDArray[np.int64]
    mean_difference: NDArray[np.float64]
    kappa: NDArray[np.float64]
    overlap: NDArray[np.int64]
    mean_kappa: NDArray[np.float64]
    flagged: NDArray[np.bool_]
    median_kappa: float | None
    flag_threshold: float | None


def _within_item_pairs(
    item: NDArray[np.int64], grader: NDArray[np.int64], n_graders: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Row indices (left, right) of every unordered pair of grades on the same item, ``grader[left] <
    grader[right]``. Memory grows with sum over items of r_i (r_i - 1) / 2."""
    order = np.argsort(item * max(n_graders, 1) + grader, kind="stable")
    it = item[order]
    n = it.shape[0]
    starts = np.flatnonzero(np.r_[True, it[1:] != it[:-1]]) if n else np.zeros(0, dtype=np.int64)
    sizes = np.diff(np.r_[starts, n])
    size_of_row = np.repeat(sizes, sizes)
    pos = np.arange(n) - np.repeat(starts, sizes)
    n_after = (size_of_row - 1 - pos).astype(np.int64)
    left = np.repeat(np.arange(n, dtype=np.int64), n_after)
    block_start = np.repeat(np.cumsum(n_after) - n_after, n_after)
    right = left + 1 + (np.arange(left.shape[0], dtype=np.int64) - block_start)
    return order[left], order[right]


def _pairwise_kappa(g: Grades, dom: NDArray[np.float64], weights: Literal["linear", "quadratic"],
                    min_overlap: int) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    """Weighted kappa of every grader pair that shares items (``kappa``, ``overlap``: n x n) and each
    grader's overlap-weighted mean kappa against the others."""
    n_gr = g.n_graders
    # Pairwise kappa over the unordered grader pairs that share items, accumulated per distinct pair.
    left, right = _within_item_pairs(g.item, g.grader, n_gr)
    v = dom.shape[0]
    d = 1.0 - agreement_weights(g.domain, weights)
    a, b = g.value_index[left], g.value_index[right]
    pair_key = g.grader[left] * n_gr + g.grader[right]
    keys, inverse = np.unique(pair_key, return_inverse=True)
    p = keys.shape[0]
    n_pair = np.bincount(inverse, minlength=p).astype(np.int64)
    observed = np.bincount(inverse, weights=d[a, b], minlength=p)
    marg_a = np.bincount(inverse * v + a, minlength=p * v).reshape(p, v).astype(np.float64)
    marg_b = np.bincount(inverse * v + b, minlength=p * v).reshape(p, v).astype(np.float64)
    expected = np.einsum("pv,vw,pw->p", marg_a, d, marg_b)
    defined = (n_pair >= min_overlap) & (expected > 0)
    kappa_pair = np.full(p, np.nan)
    kappa_pair[defined] = 1.0 - observed[defined] * n_pair[defined] / expected[defined]

    g1, g2 = keys // max(n_gr, 1), keys % max(n_gr, 1)
    kappa = np.full((n_gr, n_gr), np.nan)
    kappa[g1, g2] = kappa_pair
    kappa[g2, g1] = kappa_pair
    overlap = np.zeros((n_gr, n_gr), dtype=np.int64)
    overlap[g1, g2] = n_pair
    overlap[g2, g1] = n_pair

    w = np.where(defined, n_pair, 0).astype(np.float64)
    kw = np.where(defined, kappa_pair, 0.0) * w
    weight_sum = np.bincount(g1, weights=w, minlength=n_gr) + np.bincount(g2, weights=w, minlength=n_gr)
    kappa_sum = np.bincount(g1, weights=kw, minlength=n_gr) + np.bincount(g2, weights=kw, minlength=n_gr)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_kappa = np.where(weight_sum > 0, kappa_sum / np.maximum(weight_sum, 1e-300), np.nan)

    return kappa, overlap, mean_kappa


def _flag_graders(mean_kappa: NDArray[np.float64], flag_gap: float,
                  flag_mads: float) -> tuple[NDArray[np.bool_], float | None, float | None]:
    """Graders whose mean kappa is below ``median - max(flag_gap, flag_mads * MAD)`` (three or more known)."""
    n_gr = mean_kappa.shape[0]
    flagged = np.zeros(n_gr, dtype=bool)
    median_kappa: float | None = None
    threshold: float | None = None
    known = ~np.isnan(mean_kappa)
    if np.count_nonzero(known) >= 3:
        median_kappa = float(np.median(mean_kappa[known]))
        mad = float(np.median(np.abs(mean_kappa[known] - median_kappa))) * _MAD_TO_SD
        threshold = median_kappa - max(flag_gap, flag_mads * mad)
        flagged[known] = mean_kappa[known] < threshold
    return flagged, median_kappa, threshold


def grader_stats(
    item: ArrayLike,
    grader: ArrayLike,
    grade: ArrayLike,
    value_domain: ArrayLike,
    *,
    weights: Literal["linear", "quadratic"] = "quadratic",
    min_overlap: int = 2,
    flag_gap: float = 0.2,
    flag_mads: float = 2.0,
    n_graders: int | None = None,
) -> GraderStats:
    """Per-grader counts, bias against the leave-one-out consensus, pairwise weighted kappa and a flag.

    Weighted Cohen's kappa: ``1 - sum_ab d_ab O_ab / sum_ab d_ab E_ab`` with disagreement weights
    ``d_ab = (v_a - v_b)^2`` (quadratic, the default: big disagreements on an ordinal relevance scale
    cost more, and it is the usual choice for graded relevance) or ``|v_a - v_b|`` (linear), ``O`` the
    joint counts of the two graders on shared items and ``E`` the product of their marginals over those
    items divided by the overlap. Equals ``sklearn.metrics.cohen_kappa_score(weights=...,
    labels=value_domain)`` for a consecutive domain. See :class:`GraderStats` for every field.
    """
    func = "grader_stats"
    if weights not in ("linear", "quadratic"):
        raise ValueError(f"{func}: weights must be 'linear' or 'quadratic', got {weights!r}")
    if min_overlap < 1:
        raise ValueError(f"{func}: min_overlap must be at least 1, got {min_overlap}")
    if flag_gap < 0 or flag_mads < 0:
        raise ValueError(f"{func}: flag_gap and flag_mads must be non-negative, got {flag_gap}, {flag_mads}")
    g = check_grades(func, item, grader, grade, value_domain, n_graders=n_graders)
    n_gr = g.n_graders
    if n_gr > MAX_GRADERS_PAIRWISE:
        raise ValueError(
            f"{func}: the pairwise kappa matrix needs n_graders <= {MAX_GRADERS_PAIRWISE}, got {n_gr}"
        )
    dom = g.domain.astype(np.float64)
    value = dom[g.value_index]

    n_grades = np.bincount(g.grader, minlength=n_gr).astype(np.int64)
    item_sum = np.bincount(g.item, weights=value, minlength=g.n_items)
    item_cnt = np.bincount(g.item, minlength=g.n_items)
    cnt = item_cnt[g.item]
    shared = cnt >= 2
    others = (item_sum[g.item][shared] - value[shared]) / (cnt[shared] - 1)
    diff_sum = np.bincount(g.grader[shared], weights=value[shared] - others, minlength=n_gr)
    n_compared = np.bincount(g.grader[shared], minlength=n_gr).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_difference = np.where(n_compared > 0, diff_sum / np.maximum(n_compared, 1), np.nan)

    kappa, overlap, mean_kappa = _pairwise_kappa(g, dom, weights, min_overlap)
    flagged, median_kappa, threshold = _flag_graders(mean_kappa, flag_gap, flag_mads)
    return GraderStats(weights=weights, n_graders=n_gr, n_grades=n_grades, n_compared=n_compared,
                       mean_difference=mean_difference, kappa=kappa, overlap=overlap,
                       mean_kappa=mean_kappa, flagged=flagged, median_kappa=median_kappa,
                       flag_threshold=threshold)
