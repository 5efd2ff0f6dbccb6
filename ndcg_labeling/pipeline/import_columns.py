"""Id columns as integer codes, for the importers' checks, mapping and ordering at a million rows.

A column of external ids is factorized once (:class:`CodedIds`): the distinct ids in order of first
appearance and, per row, the position of its id among them. The id rule is checked once per distinct
id, duplicate keys are found on integer codes, the database ids are looked up once per distinct id and
spread to the rows with one NumPy ``take``, and trec_eval's ranking is computed on codes that follow
byte order. Nothing here changes what an import stores or which row an error names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ndcg_labeling.io import byte_ids
from ndcg_labeling.io.tables import InputTable


@dataclass
class CodedIds:
    """``ids``: the distinct ids in order of first appearance; ``codes``: per row, the position of its id
    in ``ids``."""

    codes: NDArray[np.intp]
    ids: list[str]

    @classmethod
    def of(cls, values: Sequence[str] | pd.Series | NDArray[np.object_]) -> CodedIds:
        codes, uniques = pd.factorize(pd.Series(values, dtype=object), sort=False)
        return cls(codes, list(uniques))

    @classmethod
    def checked(cls, table: InputTable, column: str, limit: int) -> CodedIds:
        """The column's ids, every one checked against the id rule (else the first bad row's error)."""
        codes, ids = table.id_codes(column, limit)
        return cls(codes, ids)

    def map_to(self, mapping: Mapping[str, int]) -> NDArray[np.int64]:
        """Per row, ``mapping`` of its id (one dictionary look-up per distinct id)."""
        per_id = np.fromiter(map(mapping.__getitem__, self.ids), dtype=np.int64, count=len(self.ids))
        out: NDArray[np.int64] = per_id[self.codes]
        return out

    def values(self) -> NDArray[np.object_]:
        """Per row, its id."""
        out: NDArray[np.object_] = np.asarray(self.ids, dtype=object)[self.codes]
        return out

    def byte_order_codes(self) -> NDArray[np.int64]:
        """Per row, the rank of its id among ``ids`` in byte order (code point order, which is UTF-8 byte
        order: as ``np.unique`` sorts strings in :func:`ndcg_labeling.trec.trec_order`)."""
        if not self.ids:
            return np.zeros(0, dtype=np.int64)
        rank = np.empty(len(self.ids), dtype=np.int64)
        rank[np.argsort(np.asarray(self.ids, dtype=str), kind="stable")] = np.arange(len(self.ids))
        out: NDArray[np.int64] = rank[self.codes]
        return out


def first_repeat(*keys: NDArray[np.integer]) -> int:
    """The first row whose combination of ``keys`` (integer columns) appeared on an earlier row, or -1."""
    if not len(keys) or not len(keys[0]):
        return -1
    combined = np.zeros(len(keys[0]), dtype=np.int64)
    room = 2**62
    for k in keys:  # one integer per combination while it fits: a 1-D hash instead of a frame's
        size = int(k.max()) + 1 if int(k.min()) >= 0 else 0
        if not size or room // size < 1:
            break
        combined = combined * size + k
        room //= size
    else:
        dup = pd.Series(combined).duplicated(keep="first").to_numpy()
        return int(np.argmax(dup)) if dup.any() else -1
    dup = pd.DataFrame({i: k for i, k in enumerate(keys)}).duplicated(keep="first").to_numpy()
    return int(np.argmax(dup)) if dup.any() else -1


def trec_ranking(query: CodedIds, doc: CodedIds, scores: NDArray[np.float64]) -> NDArray[np.int64]:
    """The permutation of :func:`ndcg_labeling.trec.trec_order` (query id, score descending, document id
    descending, ids in byte order), without sorting the document ids when no two lines of a query
    share a score: the document id then decides nothing. With a tie, ``trec_order`` itself decides."""
    q = query.byte_order_codes()
    order = np.lexsort((-scores, q)).astype(np.int64)
    qs, ss = q[order], scores[order]
    if bool(((qs[1:] == qs[:-1]) & (ss[1:] == ss[:-1])).any()):
        from ndcg_labeling.trec import trec_order

        return trec_order(query.values(), doc.values(), scores)
    return order


def join_on_bytes(text: str, count: int, ids: Sequence[str]) -> NDArray[np.int64] | None:
    """The row id of each of ``ids`` in the ``ext`` TAB ``rid`` lines of ``text`` (``count`` of them), or -1:
    :data:`ndcg_labeling.db.bulk.PairJoin` done on bytes (:mod:`ndcg_labeling.io.byte_ids`); None when the
    text or the ids do not suit it (the database layer then joins in Python)."""
    stored = byte_ids.pairs(text.encode(), count)
    wanted = byte_ids.lines("\n".join(ids).encode())
    if stored is None or wanted is None or len(wanted.hash) != len(ids):
        return None
    at = byte_ids.match(stored[0], wanted)
    if at is None:
        return None
    out: NDArray[np.int64] = np.where(at >= 0, stored[1][np.maximum(at, 0)], -1) if count else at
    return out
