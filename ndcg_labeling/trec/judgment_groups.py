"""trec_eval's ``-R qrels_jg``: qrels whose second column names a judgment group (a user), each group
a qrels of its own for the query (``get_qrels_jg.c``, ``form_res_rels_jg.c``).

No reader of its own: the lines come from :func:`~ndcg_labeling.trec.files.read_qrels` and
:func:`~ndcg_labeling.trec.files.read_run`, and :func:`~ndcg_labeling.trec.join.join` ranks each
(query, group) pair as a query of its own, the run's list of the query repeated for each of its groups
(so ``-c``, ``-M``, ``-J``, ties and labels follow the one rule). The ``*_avgjg`` measures then
average the groups of a query (:func:`ndcg_labeling.metrics.trec_measures.average_groups`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ndcg_labeling.errors import InputFileError
from ndcg_labeling.trec.files import QrelsColumns, RunColumns, read_qrels, read_run
from ndcg_labeling.trec.join import Joined, Options, join

# Between query id and group in the pair's id: below every character a field can hold, so the pairs
# sort as trec_eval sorts them (query id, then group, byte order).
SEP = "\x01"


@dataclass
class GroupedJoin:
    """The joined (query, group) pairs and, per evaluated query, the row where its groups start."""

    joined: Joined
    query_ids: list[str]
    starts: npt.NDArray[np.int64]


def read_and_join_groups(qrels_path: str, run_path: str, options: Options) -> GroupedJoin:
    """Both files read and joined with one list per (query, judgment group)."""
    qrels = read_qrels(qrels_path)
    run = read_run(run_path)
    # The run alone is checked first, as in the plain path (its duplicate-document message names the query).
    first = _first_group_only(qrels)
    join(run, first, Options(complete=True, max_docs=options.max_docs), run_path=run_path, qrels_path=qrels_path)
    groups: dict[str, list[str]] = {}
    for q, g in zip(qrels.query_id, qrels.iteration, strict=True):
        if g not in groups.setdefault(q, []):
            groups[q].append(g)
    pairs = QrelsColumns([f"{q}{SEP}{g}" for q, g in zip(qrels.query_id, qrels.iteration, strict=True)],
                         qrels.iteration, qrels.doc_id, qrels.relevance, qrels.line)
    keep = [i for i, q in enumerate(run.query_id) if q in groups]
    n = [len(groups[run.query_id[i]]) for i in keep]
    pick = np.repeat(np.asarray(keep, dtype=np.int64), n)
    group_of = [g for i in keep for g in groups[run.query_id[i]]]
    repeated = RunColumns([f"{run.query_id[i]}{SEP}{g}" for i, g in zip(pick.tolist(), group_of, strict=True)],
                          [run.doc_id[i] for i in pick], [run.score[i] for i in pick],
                          [run.line[i] for i in pick], run.run_id)
    try:
        joined = join(repeated, pairs, options, run_path=run_path, qrels_path=qrels_path)
    except InputFileError as exc:
        raise InputFileError(exc.path, exc.problem.replace(SEP, " judgment group "), exc.line) from None
    query_of = [pair.split(SEP, 1)[0] for pair in joined.query_ids]
    starts = np.flatnonzero([i == 0 or query_of[i] != query_of[i - 1] for i in range(len(query_of))])
    return GroupedJoin(joined, [query_of[i] for i in starts], starts.astype(np.int64))


def _first_group_only(qrels: QrelsColumns) -> QrelsColumns:
    first: dict[tuple[str, str], int] = {}  # each (query, document)'s first line, in file order
    for i, key in enumerate(zip(qrels.query_id, qrels.doc_id, strict=True)):
        first.setdefault(key, i)
    rows = list(first.values())
    return QrelsColumns([qrels.query_id[i] for i in rows], [qrels.iteration[i] for i in rows],
                        [qrels.doc_id[i] for i in rows], [qrels.relevance[i] for i in rows],
                        [qrels.line[i] for i in rows])
