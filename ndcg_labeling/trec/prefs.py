"""trec_eval's preference files for ``-R prefs`` (``query jg jsg doc_id rel_level``) and ``-R
qrels_prefs`` (a qrels file read as preferences: the iteration column is the judgment group, one
subgroup, the label the level), grouped by query for :mod:`ndcg_labeling.metrics.trec_prefs`.

Lines come from the shared line splitter (:func:`ndcg_labeling.trec.files.lines`) and
:func:`~ndcg_labeling.trec.files.read_qrels`; the run from :func:`~ndcg_labeling.trec.files.read_run`.
"""

from __future__ import annotations

import math

from ndcg_labeling.errors import InputFileError
from ndcg_labeling.trec.files import check_nul, lines, read_bytes, read_qrels, read_run

PREFS_FIELDS = "expected 5 whitespace-separated fields (query_id judgment_group subgroup doc_id rel_level), got {n}"
Pref = tuple[str, str, float, str]


def read_prefs(path: str, rel_info_format: str) -> dict[str, list[Pref]]:
    """Per query, its preference lines ``(jg, jsg, level, doc_id)``."""
    out: dict[str, list[Pref]] = {}
    if rel_info_format == "qrels_prefs":
        qrels = read_qrels(path)
        for q, g, d, rel in zip(qrels.query_id, qrels.iteration, qrels.doc_id, qrels.relevance, strict=True):
            out.setdefault(q, []).append((g, "0", float(rel), d))
        return out
    data = read_bytes(path)
    check_nul(path, data)
    for number, fields in lines(path, data):
        if len(fields) != 5:
            raise InputFileError(path, PREFS_FIELDS.format(n=len(fields)), number)
        try:
            level = float(fields[4])
        except ValueError:
            level = math.nan
        if not math.isfinite(level):
            raise InputFileError(path, f"rel_level must be a number, got {fields[4]!r}", number)
        out.setdefault(fields[0], []).append((fields[1], fields[2], level, fields[3]))
    if not out:
        raise InputFileError(path, "the file is empty")
    return out


def ranked_runs(path: str, max_docs: int | None) -> tuple[dict[str, list[str]], str]:
    """Per query, its document ids as trec_eval's preference code ranks them (score descending, equal
    scores by document id ascending in byte order - the other way round from the qrels path), cut at
    ``max_docs``; the run's tag. The same document twice among them is an error."""
    run = read_run(path)
    rows: dict[str, list[tuple[float, bytes, str, int]]] = {}
    for q, d, s, line in zip(run.query_id, run.doc_id, run.score, run.line, strict=True):
        rows.setdefault(q, []).append((-s, d.encode(), d, line))
    out = {}
    for q, docs in rows.items():
        docs.sort()
        kept = docs if max_docs is None else docs[:max_docs]
        seen: dict[str, int] = {}
        for _, _, d, line in kept:
            if d in seen:
                raise InputFileError(path, f"document {d} appears twice for query {q} in the run", line)
            seen[d] = line
        out[q] = [d for _, _, d, _ in kept]
    return out, run.run_id
