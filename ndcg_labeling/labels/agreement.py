"""The ``agreement`` use case: inter-grader agreement of stored judgments, per scope.

Grades are read in bulk (one SELECT of four integer columns into numpy arrays, never an ORM object
per row), items (query, document) and graders are coded with ``np.unique(return_inverse=True)``, and
the pure kernels of :mod:`ndcg_labeling.agreement` do the statistics.

Decisions:

* **Selection.** ``batch=None`` takes every judgment; ``batch="B"`` only the judgments of batch B.
* **Several scales.** Alpha over grades of different scales (0-3 and 0-4) means nothing, so a
  selection holding judgments of several scales is refused with an error that lists them; narrow it
  with ``--batch`` (a batch has one scale).
* **A grader who graded the same (query, document) in two batches** (only possible without
  ``--batch``): the newest judgment (highest id) counts, the older is dropped and counted in
  ``GradeSelection.n_superseded``. The kernels need one grade per (item, grader).
* **Undefined alpha** (one grader, one value, no item with two grades) gives ``alpha=None`` and a
  ``reason``; it never raises.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from ndcg_labeling.agreement import agreement_stats, grader_stats
from ndcg_labeling.choices import AgreementLevel, AgreementScope, parse_choice
from ndcg_labeling.db import models as m
from ndcg_labeling.db import reads
from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.scales import Scale, get_scale

By = AgreementScope | Literal["query-type", "query", "grader"]
BY_CHOICES: tuple[str, ...] = tuple(s.value for s in AgreementScope)
NO_QUERY_TYPE = "(none)"
HUMAN = "human"  # the grader kind counted by default (the others: "model", "behavior")
MODEL, BEHAVIOR = "model", "behavior"  # counted only with include_models / include_behavior


def counted_kinds(include_models: bool, include_behavior: bool = False) -> list[str]:
    """The grader kinds agreement and consensus count: people, and models / behavior when asked."""
    return [HUMAN] + ([MODEL] if include_models else []) + ([BEHAVIOR] if include_behavior else [])

#: The columns of an agreement row, in output order (``kappa`` is added for ``--by grader`` in json).
AGREEMENT_COLUMNS: tuple[str, ...] = (
    "scope", "level", "alpha", "n_items", "n_pairable", "n_graders", "n_grades", "percent_agreement",
    "ac1", "ac2", "reason", "note",
)
GRADER_COLUMNS: tuple[str, ...] = (
    "scope", "level", "alpha", "n_items", "n_graders", "n_grades", "percent_agreement", "ac1", "ac2",
    "n_compared", "mean_difference", "mean_kappa", "n_partners", "flagged", "reason", "note",
)


@dataclass(eq=False)
class GradeSelection:
    """The judgments of a selection as parallel arrays, one entry per grade.

    ``query_id``, ``document_id``, ``grader_id`` are database ids; ``item`` (0..n_items-1) codes the
    (query, document) pairs, whose ids are ``item_query_id[item]`` / ``item_document_id[item]``;
    ``grader`` (0..n_graders-1) codes graders, whose ids are ``grader_ids[grader]``.
    """

    scale: Scale
    batch: str | None
    query_id: NDArray[np.int64]
    document_id: NDArray[np.int64]
    grader_id: NDArray[np.int64]
    grade: NDArray[np.int64]
    item: NDArray[np.int64]
    item_query_id: NDArray[np.int64]
    item_document_id: NDArray[np.int64]
    grader: NDArray[np.int64]
    grader_ids: NDArray[np.int64]
    n_superseded: int = 0

    @property
    def n_grades(self) -> int:
        return int(self.grade.shape[0])

    @property
    def n_items(self) -> int:
        return int(self.item_query_id.shape[0])


def _grader_filter(include_models: bool, exclude_graders: Sequence[int], include_behavior: bool = False) -> list[Any]:
    """WHERE conditions on ``judgments.grader_id``: human graders only unless ``include_models`` (model
    graders) / ``include_behavior`` (behavior graders), and none of ``exclude_graders`` (row ids)."""
    conditions: list[Any] = []
    if not (include_models and include_behavior):
        kinds = counted_kinds(include_models, include_behavior)
        conditions.append(m.Judgment.grader_id.in_(select(m.Grader.id).where(m.Grader.kind.in_(kinds))))
    if exclude_graders:
        conditions.append(m.Judgment.grader_id.not_in([int(g) for g in exclude_graders]))
    return conditions


def selection_scale(*, session: Session, batch: str | None, include_models: bool = True,
                    exclude_graders: Sequence[int] = (), include_behavior: bool = True) -> Scale:
    """The one scale of the selected judgments; NotFoundError if none, NdcgLabelingError if several."""
    stmt = select(m.Judgment.scale, func.count()).group_by(m.Judgment.scale).order_by(m.Judgment.scale)
    if batch is not None:
        stmt = stmt.where(m.Judgment.batch == batch)
    scales = session.execute(stmt.where(*_grader_filter(include_models, exclude_graders, include_behavior))).all()
    if not scales:
        hint = ""
        if not (include_models and include_behavior) and session.execute(stmt).first() is not None:
            hint = (" by human graders (the others are model or behavior graders: pass --include-models or "
                    "--include-behavior to count them)")
        if batch is not None:
            raise NotFoundError(f"no judgments in batch {batch!r}{hint}")
        raise NotFoundError(f"no judgments in the database{hint}; import some with `ndcg-labeling import judgments`")
    if len(scales) > 1:
        listed = ", ".join(f"{name}: {n} judgments" for name, n in scales)
        where = f"batch {batch!r}" if batch is not None else "the selection"
        raise NdcgLabelingError(
            f"{where} holds judgments on several scales ({listed}); agreement and consensus need one scale: "
            f"select a batch of one scale with --batch")
    return get_scale(scales[0][0])


def left_out_judgments(*, session: Session, batch: str | None, include_models: bool,
                       exclude_graders: Sequence[int] = (), include_behavior: bool = False) -> dict[str, int]:
    """``grader name -> judgments`` of the selection that :func:`load_grades` leaves out (model graders
    without ``include_models``, and ``exclude_graders``)."""
    j, g = m.Judgment, m.Grader
    left: list[Any] = [g.id.in_([int(x) for x in exclude_graders])] if exclude_graders else []
    if not (include_models and include_behavior):
        left.append(g.kind.not_in(counted_kinds(include_models, include_behavior)))
    if not left:
        return {}
    stmt = (select(g.name, func.count()).select_from(j).join(g, g.id == j.grader_id).where(or_(*left))
            .group_by(g.name).order_by(g.name))
    if batch is not None:
        stmt = stmt.where(j.batch == batch)
    return {str(name): int(n) for name, n in session.execute(stmt)}


def load_grades(*, session: Session, batch: str | None = None, include_models: bool = False,
                exclude_graders: Sequence[int] = (), include_behavior: bool = False) -> GradeSelection:
    """Every judgment of the selection (``batch`` or all) in one SELECT, coded for the kernels.

    Only human graders' judgments count unless ``include_models``; ``exclude_graders`` (row ids) leaves
    out some graders (``consensus --exclude-untrusted``).
    """
    scale = selection_scale(session=session, batch=batch, include_models=include_models,
                            exclude_graders=exclude_graders, include_behavior=include_behavior)
    j = m.Judgment
    stmt = select(j.query_id, j.document_id, j.grader_id, j.grade).where(
        *_grader_filter(include_models, exclude_graders, include_behavior))
    if batch is not None:
        stmt = stmt.where(j.batch == batch)
    data = reads.fetch_array(stmt, 4, session=session, dtype=np.int64)
    qid, did, gid, grade = (np.ascontiguousarray(data[:, k]) for k in range(4))
    del data
    span = int(did.max()) + 1 if did.size else 1
    keys, item = np.unique(qid * span + did, return_inverse=True)
    grader_ids, grader = np.unique(gid, return_inverse=True)
    item = item.astype(np.int64, copy=False)
    grader = grader.astype(np.int64, copy=False)

    n_superseded = 0
    pair = item * max(len(grader_ids), 1) + grader
    if np.unique(pair).size < pair.size:
        # A grader graded an item in two batches (only possible without --batch): the newest judgment
        # (highest id) counts. Rare, so the ids are read only then: the selection again, by id.
        data = reads.fetch_array(stmt.add_columns(j.id).order_by(j.id), 5, session=session, dtype=np.int64)
        qid, did, gid, grade = (np.ascontiguousarray(data[:, k]) for k in range(4))
        del data
        item = np.searchsorted(keys, qid * span + did).astype(np.int64)
        grader = np.searchsorted(grader_ids, gid).astype(np.int64)
        pair = item * len(grader_ids) + grader
        # the last occurrence of each pair in id order is the newest
        _, last_reversed = np.unique(pair[::-1], return_index=True)
        keep = np.sort(pair.size - 1 - last_reversed)
        n_superseded = int(pair.size - keep.size)
        qid, did, gid, grade = qid[keep], did[keep], gid[keep], grade[keep]
        item, grader = item[keep], grader[keep]
    return GradeSelection(
        scale=scale, batch=batch, query_id=qid, document_id=did, grader_id=gid, grade=grade, item=item,
        item_query_id=keys // span, item_document_id=keys % span, grader=grader, grader_ids=grader_ids,
        n_superseded=n_superseded)


# --- agreement ---------------------------------------------------------------------------------


@dataclass
class AgreementReport:
    """Rows of ``agreement``: the ``all`` row first, then one row per scope.

    ``notes`` are sentences for people (prevalence paradox, flagged graders, superseded grades); the
    same text is in the ``note`` column of the row it concerns. ``warnings``: sentences that must not be
    missed (an alpha below 0: the graders agree less than chance would).
    """

    level: str
    scale: str
    batch: str | None
    by: str | None
    rows: list[dict[str, Any]]
    columns: tuple[str, ...]
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def below_chance_warning(rows: Sequence[dict[str, Any]]) -> str | None:
    """A plain-language warning naming the scopes whose alpha is below 0 (agreement below chance:
    the graders disagree more often than if they had graded at random), None when none is."""
    below = [(str(r["scope"]), float(r["alpha"])) for r in rows
             if r.get("alpha") is not None and float(r["alpha"]) < 0]
    if not below:
        return None
    shown = ", ".join(f"{scope} {alpha:.3f}" for scope, alpha in below[:5])
    more = f" and {len(below) - 5} more" if len(below) > 5 else ""
    return (f"alpha is below 0 ({shown}{more}): agreement is below chance, the graders disagree more often "
            f"than if they had graded at random; check the guidelines, a grader who may have read the scale "
            f"backwards (agreement --by grader) and the items before using these labels")


def _clean(value: Any) -> Any:
    """NaN / numpy scalars as plain JSON-able Python values (NaN -> None)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _stats_row(scope: str, item: NDArray[np.int64], grader: NDArray[np.int64], grade: NDArray[np.int64],
               scale: Scale, level: AgreementLevel) -> dict[str, Any]:
    # Recode inside the scope so the kernel's count matrix is sized by the scope, not the whole selection.
    _, it = np.unique(item, return_inverse=True)
    _, gr = np.unique(grader, return_inverse=True)
    stats = agreement_stats(it.astype(np.int64), gr.astype(np.int64), grade, scale.values,
                            level=level)
    return {
        "scope": scope, "level": stats.level, "alpha": stats.alpha, "n_items": stats.n_items,
        "n_pairable": stats.n_pairable, "n_graders": stats.n_graders, "n_grades": stats.n_grades,
        "percent_agreement": stats.percent_agreement, "ac1": stats.ac1, "ac2": stats.ac2,
        "reason": stats.reason, "note": stats.note,
    }


def _query_info(session: Session, ids: NDArray[np.int64]) -> tuple[dict[int, str], dict[int, str]]:
    """``id -> external id`` and ``id -> query type`` for the queries ``ids``."""
    wanted = set(int(x) for x in ids)
    ext: dict[int, str] = {}
    qtype: dict[int, str] = {}
    for qid, external_id, query_type in session.execute(
            select(m.Query.id, m.Query.external_id, m.Query.query_type)):
        if qid in wanted:
            ext[qid] = external_id
            qtype[qid] = query_type if query_type else NO_QUERY_TYPE
    return ext, qtype


def agreement_report(*, session: Session, batch: str | None = None, by: By | None = None,
                     level: str = "ordinal", include_models: bool = False,
                     include_behavior: bool = False, exclude_graders: Sequence[int] = ()) -> AgreementReport:
    """Krippendorff's alpha at ``level`` (with percent agreement, AC1, AC2) for the selection and per scope.

    ``by``: ``None`` (only the ``all`` row), ``"query-type"``, ``"query"`` (scope = external query id)
    or ``"grader"`` (per-grader rows: grades, leniency against the leave-one-out mean of the others,
    quadratic-weighted kappa against each overlapping grader, and a flag; see
    :func:`ndcg_labeling.agreement.grader_stats`). Scopes are sorted by name; the ``all`` row is first.
    Model graders' judgments count only with ``include_models`` (a note says how many were left out);
    ``exclude_graders`` (row ids) never count (the report leaves out the graders consensus left out).
    """
    try:
        level_c = parse_choice(AgreementLevel, level, "level")
        if by is not None:
            parse_choice(AgreementScope, by, "agreement grouping")
    except ValueError as exc:
        raise NdcgLabelingError(str(exc)) from None
    sel = load_grades(session=session, batch=batch, include_models=include_models, include_behavior=include_behavior,
                      exclude_graders=exclude_graders)
    rows = [_stats_row("all", sel.item, sel.grader, sel.grade, sel.scale, level_c)]
    columns = AGREEMENT_COLUMNS
    notes: list[str] = []
    for kind, flag, left_out in (
            ("model", "--include-models", left_out_judgments(session=session, batch=batch, include_models=include_models,
                                                             include_behavior=True)),
            ("behavior", "--include-behavior", left_out_judgments(session=session, batch=batch, include_models=True,
                                                                  include_behavior=include_behavior))):
        if left_out:
            notes.append(f"{sum(left_out.values())} judgments of {kind} graders left out "
                         f"({', '.join(f'{k}: {v}' for k, v in left_out.items())}); {flag} counts them")
    if sel.n_superseded:
        notes.append(f"{sel.n_superseded} older grades of a grader on an item graded again in another batch "
                     f"were left out (the newest counts); use --batch to look at one batch")

    if by in ("query-type", "query"):
        queries, q_code = np.unique(sel.query_id, return_inverse=True)
        ext, qtype = _query_info(session, queries)
        names = ext if by == "query" else qtype
        # scope names are worked out per query, then spread to the grades by integer codes
        scope_names, scope_of_query = np.unique(np.array([names[int(q)] for q in queries], dtype=str),
                                                return_inverse=True)
        scope_code = scope_of_query[q_code]
        order = np.argsort(scope_code, kind="stable")
        bounds = np.searchsorted(scope_code[order], np.arange(len(scope_names) + 1))
        for k, name in enumerate(scope_names):
            idx = order[bounds[k]:bounds[k + 1]]
            rows.append(_stats_row(str(name), sel.item[idx], sel.grader[idx], sel.grade[idx], sel.scale, level_c))
    elif by == "grader":
        columns = GRADER_COLUMNS
        rows.extend(_grader_rows(session, sel, level, notes))

    for row in rows:
        if row.get("note") and row["scope"] == "all":
            notes.insert(0, str(row["note"]))
        elif row.get("note") and "alpha" in row and row.get("alpha") is not None:
            notes.append(f"{row['scope']}: {row['note']}")
    cleaned = [{k: (_clean(v) if k != "kappa" else v) for k, v in r.items()} for r in rows]
    warning = below_chance_warning(cleaned)
    return AgreementReport(level=level, scale=sel.scale.name, batch=batch, by=by, rows=cleaned,
                           columns=columns, notes=notes, warnings=[warning] if warning else [])


def _grader_rows(session: Session, sel: GradeSelection, level: str, notes: list[str]) -> list[dict[str, Any]]:
    names = dict(session.execute(select(m.Grader.id, m.Grader.name)).all())
    try:
        gs = grader_stats(sel.item, sel.grader, sel.grade, sel.scale.values, n_graders=len(sel.grader_ids))
    except ValueError as exc:  # e.g. more graders than the pairwise matrix allows
        raise NdcgLabelingError(f"agreement per grader: {exc}") from None
    items_per_grader = np.bincount(sel.grader, minlength=len(sel.grader_ids))
    grader_names = [names[int(g)] for g in sel.grader_ids]
    out: list[dict[str, Any]] = []
    for g, name in enumerate(grader_names):
        partners = []
        for h in np.flatnonzero(gs.overlap[g] > 0):
            k = gs.kappa[g, h]
            partners.append({"grader": grader_names[h], "kappa": None if np.isnan(k) else float(k),
                             "overlap": int(gs.overlap[g, h])})
        partners.sort(key=lambda p: str(p["grader"]))
        n_partners = sum(1 for p in partners if p["kappa"] is not None)
        note = None
        if gs.flagged[g]:
            note = (f"far below the others: mean kappa {gs.mean_kappa[g]:.2f} < {gs.flag_threshold:.2f} "
                    f"(median {gs.median_kappa:.2f})")
            notes.append(f"grader {name} is {note}")
        out.append({
            "scope": name, "level": level, "alpha": None, "n_items": int(items_per_grader[g]), "n_graders": 1,
            "n_grades": int(gs.n_grades[g]), "percent_agreement": None, "ac1": None, "ac2": None,
            "n_compared": int(gs.n_compared[g]), "mean_difference": float(gs.mean_difference[g]),
            "mean_kappa": float(gs.mean_kappa[g]), "n_partners": n_partners, "flagged": bool(gs.flagged[g]),
            "reason": None if n_partners else "no partner with a defined kappa", "note": note,
            "kappa": partners,
        })
    out.sort(key=lambda r: str(r["scope"]))
    return out
