"""``import judgments`` against what is stored: the same grade and scale is unchanged, another one a
conflict (naming the scales when they differ), or with ``--replace`` deleted and written again."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from sqlalchemy import delete, select, tuple_
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.io.tables import InputTable

if TYPE_CHECKING:
    from ndcg_labeling.pipeline.importing import ImportSummary, _JudgmentLines


def against_stored(table: InputTable, lines: _JudgmentLines, gid: NDArray[np.int64], qid: NDArray[np.int64],
                    did: NDArray[np.int64], scale: str, replace: bool, summary: ImportSummary, *,
                    session: Session) -> NDArray[np.bool_] | None:
    """The file's judgments against the stored ones of the same key: the same grade and scale is
    unchanged, another one a conflict (or, with ``replace``, deleted here and written again). Returns
    the rows to write (None: all, nothing being stored) and counts ``summary``'s unchanged and updated."""
    if session.execute(select(m.Judgment.id).limit(1)).first() is None:
        return None
    frame = pd.DataFrame({"gid": gid, "qid": qid, "did": did, "batch": lines.batch.values(), "grade": lines.grade,
                          "_row": np.arange(len(gid))})
    existing = _existing_judgments(frame, session=session)
    if existing.empty:
        return None
    merged = frame.merge(existing, on=["gid", "qid", "did", "batch"], how="left", suffixes=("", "_old"))
    seen = merged["id_old"].notna().to_numpy()
    differs = seen & ((merged["grade_old"].to_numpy() != merged["grade"].to_numpy())
                      | (merged["scale_old"].to_numpy() != scale))
    if differs.any() and not replace:
        r = merged.iloc[int(np.flatnonzero(differs)[0])]
        ext = table.frame.iloc[int(r["_row"])]
        pair = f"({ext['query_id']!r}, {ext['doc_id']!r})"
        if r["scale_old"] != scale:  # the scale differs: say so, whether or not the number does
            raise table.error(int(r["_row"]), f"grader {ext['grader']!r} already graded {pair} on scale "
                              f"{r['scale_old']} (as {int(r['grade_old'])}); this file is imported on scale {scale} "
                              f"(as {int(r['grade'])}): a judgment keeps one scale; use --replace to regrade it on {scale}")
        raise table.error(int(r["_row"]), f"grader {ext['grader']!r} already graded {pair} as {int(r['grade_old'])} "
                          f"on {r['scale_old']}, not {int(r['grade'])}; use --replace to overwrite")
    if differs.any():
        ids = merged.loc[differs, "id_old"].astype(np.int64).tolist()
        for start in range(0, len(ids), 10_000):
            session.execute(delete(m.Judgment).where(m.Judgment.id.in_(ids[start : start + 10_000])))
        summary.updated = int(differs.sum())
    summary.unchanged = int((seen & ~differs).sum())
    keep: NDArray[np.bool_] = ~(seen & ~differs)
    return keep


def _existing_judgments(frame: pd.DataFrame, *, session: Session) -> pd.DataFrame:
    """Stored judgments of the file's graders that share a (query, document) with the file."""
    cols = ["id_old", "gid", "qid", "did", "batch", "grade_old", "scale_old"]
    graders = [int(g) for g in frame["gid"].unique()]
    stmt = select(m.Judgment.id, m.Judgment.grader_id, m.Judgment.query_id, m.Judgment.document_id,
                  m.Judgment.batch, m.Judgment.grade, m.Judgment.scale).where(m.Judgment.grader_id.in_(graders))
    pairs = frame[["qid", "did"]].drop_duplicates()
    if len(pairs) <= 5_000:
        stmt = stmt.where(tuple_(m.Judgment.query_id, m.Judgment.document_id).in_(list(pairs.itertuples(index=False, name=None))))
    out = pd.DataFrame(session.execute(stmt).all(), columns=cols)
    return out.astype({"gid": np.int64, "qid": np.int64, "did": np.int64})
