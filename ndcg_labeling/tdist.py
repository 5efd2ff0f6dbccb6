"""Student's t and the non-central t distribution, with the standard library's ``math`` alone.

Pure kernel: what the paired t-test (:func:`ndcg_labeling.stats.paired_ttest_p`) and its power
(:func:`ndcg_labeling.stats.paired_t_power`) need, in place of ``scipy.special``'s ``stdtr``,
``stdtrit`` and ``nctdtr``. Importing ``scipy.special`` took 0.12-0.17 s of every ``report``'s 2 s
(it loads ``numpy.f2py`` through ``array_api_compat``; issue 17); these take microseconds to
milliseconds for the few values a report needs. ``tests/test_tdist.py`` holds them against scipy over
grids of degrees of freedom (0.5 to 10 million), arguments and non-centralities.

* :func:`betainc`: the regularized incomplete beta function ``I_x(a, b)`` (continued fraction, modified
  Lentz, Numerical Recipes 6.4), with ``1 - x`` given separately so no precision is lost near 1;
* :func:`t_sf` / :func:`t_cdf` / :func:`t_isf`: Student's t (``P(T > t) = I_{df/(df+t^2)}(df/2, 1/2) / 2``
  for ``t >= 0``), the inverse by a safeguarded Newton iteration on the upper tail;
* :func:`nct_cdf`: the non-central t, ``P(T <= t) = Phi(-d) + 1/2 sum_j (p_j I_x(j+1/2, df/2) +
  q_j I_x(j+1, df/2))`` with ``x = t^2/(t^2+df)`` and Poisson-type weights of ``d^2/2`` (Lenth 1989,
  AS 243), summed outward from the weights' mode (Benton and Krishnamoorthy 2003) with the recurrences
  of ``I_x`` in its first argument, so only two continued fractions are evaluated per value.

Every function works on one float; callers use them on the handful of values they need. Against
scipy the tests allow a relative error of 1e-9 (t, its inverse, the incomplete beta) and of 1e-7 or an
absolute one of 1e-10 (the non-central t, whose smallest values at 10 million degrees of freedom scipy
itself gets wrong by a percent).
"""

from __future__ import annotations

import math

_EPS = 1e-16
_TINY = 1e-300
_MAX_TERMS = 100_000
_SQRT2 = math.sqrt(2.0)


def _lentz(a: float, b: float, x: float) -> float:
    """The continued fraction of ``I_x(a, b)`` (converges fast for ``x < (a + 1) / (a + b + 2)``)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_TERMS):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"betainc({a}, {b}, {x}): the continued fraction did not converge")


def _stirling_tail(z: float) -> float:
    """``lgamma(z) - ((z - 1/2) log z - z + log(2 pi) / 2)`` for ``z >= 10`` (its asymptotic series)."""
    z2 = z * z
    return (1.0 / 12.0 - (1.0 / 360.0 - (1.0 / 1260.0 - (1.0 / 1680.0) / z2) / z2) / z2) / z


def _log_beta(a: float, b: float) -> float:
    """``log B(a, b)``. Where one argument is large, ``lgamma(big + small) - lgamma(big)`` is taken from
    Stirling's series, not as the difference of two large numbers (whose rounding, about 1e-16 of
    ``lgamma(5e6)`` = 7e7, would be an error of 1e-8)."""
    small, big = (a, b) if a <= b else (b, a)
    if big < 10.0:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    rise = ((big - 0.5) * math.log1p(small / big) + small * math.log(big + small) - small
            + _stirling_tail(big + small) - _stirling_tail(big))  # lgamma(big + small) - lgamma(big)
    return math.lgamma(small) - rise


def _log_front(a: float, b: float, lx: float, ly: float) -> float:
    """``log(x^a y^b / B(a, b))`` from ``lx = log x`` and ``ly = log y``."""
    return a * lx + b * ly - _log_beta(a, b)


def betainc(a: float, b: float, x: float, y: float | None = None, lx: float | None = None,
            ly: float | None = None) -> float:
    """The regularized incomplete beta function ``I_x(a, b)`` for ``a, b > 0``. ``y = 1 - x`` and the
    logarithms ``lx``, ``ly`` of ``x`` and ``y`` may be given when they are known more precisely than
    computed from ``x`` (with ``a`` in the millions, ``a log x`` needs ``log x`` to the last bit)."""
    y = 1.0 - x if y is None else y
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    lx = math.log(x) if lx is None else lx
    ly = math.log1p(-x) if ly is None else ly
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(_log_front(a, b, lx, ly)) * _lentz(a, b, x) / a
    return 1.0 - math.exp(_log_front(a, b, lx, ly)) * _lentz(b, a, y) / b


def _xy(t: float, df: float) -> tuple[float, float, float, float]:
    """``x = t^2/(t^2+df)``, ``y = df/(t^2+df)`` and their logarithms, each computed directly."""
    t2 = t * t
    return t2 / (t2 + df), df / (t2 + df), -math.log1p(df / t2), -math.log1p(t2 / df)


def t_sf(t: float, df: float) -> float:
    """``P(T > t)`` for Student's t with ``df > 0`` degrees of freedom (NaN for NaN arguments)."""
    if math.isnan(t) or math.isnan(df):
        return math.nan
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    if t == 0.0:
        return 0.5
    x, y, lx, ly = _xy(t, df)
    tail = 0.5 * betainc(df / 2.0, 0.5, y, x, ly, lx)  # P(T > |t|)
    return tail if t >= 0 else 1.0 - tail


def t_cdf(t: float, df: float) -> float:
    """``P(T <= t)`` for Student's t (``scipy.special.stdtr(df, t)``)."""
    return t_sf(-t, df)


def _t_pdf(t: float, df: float) -> float:
    return math.exp(math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)
                    - (df + 1.0) / 2.0 * math.log1p(t * t / df))


def t_isf(q: float, df: float) -> float:
    """The ``t`` with ``P(T > t) = q`` for ``0 < q <= 1/2`` (``scipy.special.stdtrit(df, 1 - q)``): the
    root is bracketed, then found by Newton steps kept inside the bracket (bisection otherwise)."""
    if math.isnan(q) or math.isnan(df):
        return math.nan
    if not 0.0 < q <= 0.5:
        raise ValueError(f"t_isf: q must be in (0, 1/2], got {q}")
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > q:
        lo, hi = hi, hi * 2.0
    t = (lo + hi) / 2.0
    for _ in range(200):
        f = t_sf(t, df) - q  # decreasing in t
        if f > 0:
            lo = t
        else:
            hi = t
        step = f / _t_pdf(t, df)  # Newton: t - f / f', f' = -pdf
        nxt = t + step
        if not lo < nxt < hi:
            nxt = (lo + hi) / 2.0
        if abs(nxt - t) <= 1e-15 * max(1.0, abs(t)) or hi - lo <= 1e-15 * max(1.0, hi):
            return nxt
        t = nxt
    return t


def _phi(z: float) -> float:
    """The standard normal ``P(Z <= z)``."""
    return 0.5 * math.erfc(-z / _SQRT2)


def nct_cdf(t: float, df: float, nc: float) -> float:
    """``P(T <= t)`` for the non-central t with ``df > 0`` degrees of freedom and non-centrality ``nc``
    (``scipy.special.nctdtr(df, nc, t)``; far in a tail this gives the small value, where scipy gives NaN)."""
    if math.isnan(t) or math.isnan(df) or math.isnan(nc):
        return math.nan
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    if t < 0:  # 1 - P(T' <= -t | -nc) = Phi(-nc) - S/2: no cancellation against 1
        return max(0.0, _phi(-nc) - 0.5 * _series(-t, df, -nc))
    return min(1.0, _phi(-nc) + 0.5 * _series(t, df, nc))


def _series(t: float, df: float, nc: float) -> float:
    """``sum_j p_j I_x(j + 1/2, df/2) + q_j I_x(j + 1, df/2)`` for ``t >= 0``."""
    if t == 0.0:
        return 0.0
    x, y, lx, ly = _xy(t, df)
    b = df / 2.0
    lam = nc * nc / 2.0
    k = int(lam)
    if lam > 0.0:  # p_k = e^-lam lam^k / k!, q_k = nc/sqrt(2) e^-lam lam^k / Gamma(k + 3/2), nc/sqrt(2) = +-sqrt(lam)
        log_w = -lam + k * math.log(lam)
        p0 = math.exp(log_w - math.lgamma(k + 1.0))
        q0 = math.copysign(math.exp(log_w - math.lgamma(k + 1.5) + 0.5 * math.log(lam)), nc)
    else:
        p0, q0 = 1.0, 0.0
    ip0, iq0 = betainc(k + 0.5, b, x, y, lx, ly), betainc(k + 1.0, b, x, y, lx, ly)
    # g(a) = x^a y^b / (a B(a, b)): I_x(a + 1, b) = I_x(a, b) - g(a)
    gp0 = math.exp(_log_front(k + 0.5, b, lx, ly)) / (k + 0.5)
    gq0 = math.exp(_log_front(k + 1.0, b, lx, ly)) / (k + 1.0)
    total = p0 * ip0 + q0 * iq0

    # forward: j = k + 1, k + 2, ...
    p, q, ip, iq, gp, gq = p0, q0, ip0, iq0, gp0, gq0
    for j in range(k + 1, k + _MAX_TERMS):
        a_p, a_q = j - 0.5, float(j)  # the first arguments of the previous terms
        ip, iq = ip - gp, iq - gq
        gp *= x * (a_p + b) / (a_p + 1.0)
        gq *= x * (a_q + b) / (a_q + 1.0)
        p *= lam / j
        q *= lam / (j + 0.5)
        total += p * max(ip, 0.0) + q * max(iq, 0.0)
        if (p + abs(q)) * max(ip, iq, 0.0) < _EPS * 1e-2 and j > lam:
            break
    # backward: j = k - 1, ..., 0
    p, q, ip, iq, gp, gq = p0, q0, ip0, iq0, gp0, gq0
    for j in range(k - 1, -1, -1):
        a_p, a_q = j + 0.5, j + 1.0  # the first arguments of the new terms
        gp *= (a_p + 1.0) / (x * (a_p + b))
        gq *= (a_q + 1.0) / (x * (a_q + b))
        ip, iq = ip + gp, iq + gq
        p *= (j + 1) / lam
        q *= (j + 1.5) / lam
        total += p * min(ip, 1.0) + q * min(iq, 1.0)
        if p + abs(q) < _EPS * 1e-2:
            break
    return total
