"""Id columns as integer codes, for the importers' checks, mapping and ordering at a million rows.

A column of external ids is factorized once (:class:`CodedIds`): the distinct ids in order of first
appearance and, per row, the position of its id among them. The id rule is checked once per distinct
id, duplicate keys are found on integer codes, the database ids are looked up once per distinct id and
spread to the rows with one NumPy ``take``, and trec_eval's ranking is computed on codes that follow
byte order. Nothing here changes what an import stores or which row an error names.

A TREC run (:func:`ranked_trec_run`) is ranked in trec_eval's order comparing document ids only
where two lines of a query tie on score (:func:`trec_ranking`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ndcg_labeling.db.pairs import PairsText
from ndcg_labeling.io import byte_ids
from ndcg_labeling.io.tables import InputTable


@dataclass
class CodedIds:
    """``ids``: the distinct ids in order of first appearance; ``codes``: per row, the position of its id
    in ``ids``."""

    codes: NDArray[np.intp]
    ids: Sequence[str]

    @classmethod
    def of(cls, values: Sequence[str] | pd.Series | NDArray[np.object_]) -> CodedIds:
        codes, uniques = pd.factorize(pd.Series(values, dtype=object), sort=False)
        return cls(codes, list(uniques))

    @classmethod
    def checked(cls, table: InputTable, column: str, limit: int) -> CodedIds:
        """The column's ids, every one checked against the id rule (else the first bad row's error)."""
        codes, ids = table.id_codes(column, limit)
        return cls(codes, ids)

    def take(self, rows: NDArray[np.integer]) -> CodedIds:
        """The ids of ``rows`` (the same distinct ids)."""
        return CodedIds(self.codes[rows], self.ids)

    @staticmethod
    def decode_stored(stored: PairsText) -> StoredKeys | None:
        """:func:`stored_keys`, for :meth:`join`: what the worker of
        :func:`ndcg_labeling.db.bulk.pairs_meanwhile` makes of the pairs while the file is read."""
        return stored_keys(stored)

    def map_to(self, mapping: Mapping[str, int]) -> NDArray[np.int64]:
        """Per row, ``mapping`` of its id (one dictionary look-up per distinct id)."""
        per_id = np.fromiter(map(mapping.__getitem__, self.ids), dtype=np.int64, count=len(self.ids))
        out: NDArray[np.int64] = per_id[self.codes]
        return out

    def values(self) -> NDArray[np.object_]:
        """Per row, its id."""
        out: NDArray[np.object_] = np.asarray(list(self.ids), dtype=object)[self.codes]
        return out

    def byte_order_codes(self) -> NDArray[np.int64]:
        """Per row, the rank of its id among ``ids`` in byte order (code point order, which is UTF-8 byte
        order: as ``np.unique`` sorts strings in :func:`ndcg_labeling.trec.trec_order`)."""
        if not self.ids:
            return np.zeros(0, dtype=np.int64)
        rank = np.empty(len(self.ids), dtype=np.int64)
        rank[np.argsort(np.asarray(list(self.ids), dtype=str), kind="stable")] = np.arange(len(self.ids))
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
    descending, ids in byte order): one ``lexsort`` of the queries' byte-order codes and the scores, then
    the document ids are ordered only among the lines tied on both (about 5% of a run with 3-decimal
    scores), instead of coding every line's ids by ``np.unique``."""
    q = query.byte_order_codes()
    order = np.lexsort((-scores, q)).astype(np.int64)
    qs, ss = q[order], scores[order]
    tie = (qs[1:] == qs[:-1]) & (ss[1:] == ss[:-1])
    if tie.any():
        tied = np.flatnonzero(np.r_[False, tie] | np.r_[tie, False])
        group = np.cumsum(np.r_[True, ~tie])[tied]
        docs = np.asarray(doc.ids, dtype=object)[doc.codes[order[tied]]].astype(str)
        _, doc_rank = np.unique(docs, return_inverse=True)  # code point order: UTF-8 byte order
        order[tied] = order[tied][np.lexsort((-doc_rank.ravel(), group))]
    return order


class StoredKeys(NamedTuple):
    """Stored pairs decoded for :func:`join_on_bytes`: the external ids as bytes and hashes, and their row ids."""

    keys: byte_ids.ByteIds
    rids: NDArray[np.int64]


def stored_keys(stored: PairsText) -> StoredKeys | None:
    """``stored`` decoded for :func:`join_on_bytes` (None: they do not suit it). Given to
    :func:`ndcg_labeling.db.bulk.pairs_meanwhile`, the worker that read the pairs decodes them while the
    importer reads its file."""
    if not stored.total:
        return StoredKeys(byte_ids.ByteIds(np.zeros(0, dtype="S8"), np.zeros(0, dtype=np.uint64)),
                          np.zeros(0, dtype=np.int64))
    keys, rids = byte_ids.lines(stored.ext.encode()), _row_ids(stored)
    if keys is None or rids is None or not len(keys.hash) == len(rids) == stored.total:
        return None
    return StoredKeys(keys, rids)


def _row_ids(stored: PairsText) -> NDArray[np.int64] | None:
    """The row ids of ``stored`` as an array (None: not integers, or an 8-byte row id cut short)."""
    if isinstance(stored.rid, bytes):
        if len(stored.rid) % 8:
            return None
        return np.frombuffer(stored.rid, dtype=">i8").astype(np.int64)
    return byte_ids.numbers(stored.rid.encode())


def join_on_bytes(stored: PairsText | StoredKeys | None, ids: Sequence[str], *,
                  known: byte_ids.ByteIds | None = None) -> NDArray[np.int64] | None:
    """The row id of each of ``ids`` in the ``stored`` pairs (or those pairs decoded by :func:`stored_keys`),
    or -1: :data:`ndcg_labeling.db.bulk.PairJoin` done on bytes (:mod:`ndcg_labeling.io.byte_ids`); None
    when the pairs or the ids do not suit it (the database layer then joins in Python). ``known``: the
    ids' bytes and hashes, when a reader made them."""
    decoded = stored if isinstance(stored, StoredKeys) or stored is None else stored_keys(stored)
    wanted = known if known is not None else byte_ids.lines("\n".join(ids).encode())
    if decoded is None or wanted is None or len(wanted.hash) != len(ids):
        return None
    at = byte_ids.match(decoded.keys, wanted)
    if at is None:
        return None
    out: NDArray[np.int64] = np.where(at >= 0, decoded.rids[np.maximum(at, 0)], -1) if len(decoded.rids) else at
    return out


def ranked_trec_run(path: str, limit: int) -> tuple[InputTable, CodedIds, CodedIds, NDArray[np.float64], NDArray[np.int64]]:
    """A TREC run's table (for the line of an error), its query and document ids (every distinct id checked
    against the id rule, at most ``limit`` characters), its scores in file order and the permutation of
    trec_eval's order (:func:`trec_ranking`). A large run is read by the compiled reader
    (:func:`ndcg_labeling.trec.fast.read_run`); any other, or one it leaves (comments, odd bytes, a bad
    line), by the line reader (:func:`ndcg_labeling.trec.files.read_run`), which words every format error."""
    from ndcg_labeling.io.files import refuse_nul
    from ndcg_labeling.trec import fast, files

    refuse_nul(path)  # also refuses anything but a regular file
    found = fast.read_run(path, limit) if fast.worth_it(path) else None
    if found is not None:  # ids the id rule takes (the compiled reader leaves the others): not checked again
        query_ids, query_codes, doc_ids, doc_codes, scores = found
        table = InputTable(path, "trec", pd.DataFrame({"score": scores}))
        query, doc = CodedIds(query_codes.astype(np.intp), query_ids), CodedIds(doc_codes.astype(np.intp), doc_ids)
    else:
        run = files.read_run(path)
        table = InputTable(path, "trec", pd.DataFrame({"query_id": run.query_id, "doc_id": run.doc_id}),
                           _row_lines=run.line)
        query, doc = (CodedIds.checked(table, c, limit) for c in ("query_id", "doc_id"))
        scores = np.asarray(run.score, dtype=np.float64)
    return table, query, doc, scores, trec_ranking(query, doc, scores)
