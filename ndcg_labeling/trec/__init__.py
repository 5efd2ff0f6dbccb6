"""trec_eval's file side: reading runs and qrels, the run/qrels join and the tie order.

:func:`read_and_join` is what ``eval`` calls; :func:`read_trec_run` and :func:`read_trec_qrels` give
the same files as pandas frames (pandas is loaded only when they are called, never for ``eval``).
Two readers: the compiled one for large files (:mod:`.fast`) and the line reader (:mod:`.files`),
the reference, which reads standard input and comment lines and words every error.
"""

from __future__ import annotations

from ndcg_labeling.errors import InputFileError
from ndcg_labeling.trec import fast
from ndcg_labeling.trec.files import read_bytes, read_qrels, read_run, read_trec_qrels, read_trec_run
from ndcg_labeling.trec.join import Joined, Options, join, trec_order


def read_and_join(qrels_path: str, run_path: str, options: Options) -> Joined:
    """Both files read (standard input for ``-``) and joined into ranked relevance lists: large files
    by the compiled reader (:mod:`.fast`), any other by the line reader and :func:`.join.join`, the
    reference, which also writes the error messages."""
    if fast.worth_it(qrels_path, run_path):
        joined = fast.read_and_join(qrels_path, run_path, options)
        if joined is not None:
            return joined
    qrels_data = read_bytes(qrels_path)
    try:
        run_data = read_bytes(run_path)
    except InputFileError:
        read_qrels(qrels_path, data=qrels_data)  # a bad qrels line is reported first, as it always was
        raise
    qrels = read_qrels(qrels_path, data=qrels_data)
    run = read_run(run_path, data=run_data)
    return join(run, qrels, options, run_path=run_path, qrels_path=qrels_path)


__all__ = ["Joined", "Options", "join", "read_and_join", "read_qrels", "read_run", "read_trec_qrels",
           "read_trec_run", "trec_order"]
