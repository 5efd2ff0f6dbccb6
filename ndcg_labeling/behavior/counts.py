"""The sufficient statistics of an impression log, as an engine returns them (arrays, no rows).

Every model of this room needs only these: per (pair, position) cell the number of impressions and
clicks, raw and weighted by the time decay (``0.5 ** (age / half_life)``), and the weighted sum of
``watch_ratio``; the DBN needs, in addition, each served list's click pattern (:class:`SessionPatterns`),
compressed to one row per distinct (list of pairs, clicks) with the summed weight.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class CellCounts:
    """Impressions aggregated per (pair, position) cell; all arrays have one entry per cell.

    ``pair``: 0..n_pairs-1; ``position``: 1-based rank; ``impressions``/``clicks``: raw counts;
    ``weight``/``weighted_clicks``: the same counts with each impression weighted by its decay factor
    (equal to the raw counts without a half-life); ``weighted_watch``: the decayed sum of ``watch_ratio``
    (NaN where the log has none; may be a read-only broadcast NaN array).

    The integer arrays may come in a narrower signed type than annotated: the DuckDB engine hands int32
    pairs and counts and the narrowest type that holds the positions (20M cells: 0.6 GB instead of 1.1 GB);
    every kernel only indexes and sums them.
    """

    pair: NDArray[np.int64]
    position: NDArray[np.int64]
    impressions: NDArray[np.int64]
    clicks: NDArray[np.int64]
    weight: NDArray[np.float64]
    weighted_clicks: NDArray[np.float64]
    weighted_watch: NDArray[np.float64]
    n_pairs: int

    @property
    def n_positions(self) -> int:
        return int(self.position.max()) if self.position.size else 0

    def per_pair(self, values: NDArray[np.floating] | NDArray[np.integer]) -> NDArray[np.float64]:
        """``values`` (one per cell) summed per pair."""
        out: NDArray[np.float64] = np.bincount(self.pair, weights=np.asarray(values, dtype=np.float64),
                                               minlength=self.n_pairs).astype(np.float64)
        return out


def narrow_positions(values: NDArray[np.integer]) -> NDArray[np.int64]:
    """Positions in the smallest integer type that holds them (20M cells: 20 MB as int8, not 160 MB);
    typed as int64, the type :class:`CellCounts` promises its readers (who only index and sum)."""
    out = np.asarray(values)
    top = int(out.max()) if out.size else 0
    for dtype in (np.int8, np.int16, np.int32):
        if top <= np.iinfo(dtype).max:
            return cast("NDArray[np.int64]", out.astype(dtype))
    return out.astype(np.int64)


@dataclass(frozen=True)
class SessionPatterns:
    """Served lists for the DBN: ``pairs[s, r]`` is the pair shown at position ``r + 1`` of pattern ``s``
    (-1: nothing shown there), ``clicks[s, r]`` 0/1, ``weight[s]`` the summed decay weight of the
    served lists with this pattern and ``count[s]`` their number."""

    pairs: NDArray[np.int64]
    clicks: NDArray[np.int8]
    weight: NDArray[np.float64]
    count: NDArray[np.int64]


def cells_from_impressions(pair: NDArray[np.int64], position: NDArray[np.int64], clicked: NDArray[np.integer],
                           weight: NDArray[np.float64] | None = None, watch: NDArray[np.float64] | None = None,
                           n_pairs: int | None = None) -> CellCounts:
    """Aggregate impression arrays (one entry per impression) into :class:`CellCounts` in NumPy: the
    in-memory twin of what an engine computes out of core (tests and small simulations use it)."""
    pair = np.asarray(pair, dtype=np.int64)
    position = np.asarray(position, dtype=np.int64)
    clicked = np.asarray(clicked, dtype=np.int64)
    w = np.ones(pair.size) if weight is None else np.asarray(weight, dtype=np.float64)
    n = int(pair.max()) + 1 if n_pairs is None else n_pairs
    width = int(position.max()) + 1
    keys, inv = np.unique(pair * width + position, return_inverse=True)
    imp = np.bincount(inv)
    wr = np.full(pair.size, np.nan) if watch is None else np.asarray(watch, dtype=np.float64)
    def sums(weights: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.bincount(inv, weights=weights).astype(np.float64)

    return CellCounts(pair=keys // width, position=keys % width, impressions=imp.astype(np.int64),
                      clicks=sums(clicked.astype(np.float64)).astype(np.int64), weight=sums(w),
                      weighted_clicks=sums(w * clicked), weighted_watch=sums(w * wr), n_pairs=n)
