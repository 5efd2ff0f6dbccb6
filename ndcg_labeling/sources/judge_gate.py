"""The judge gate's rules: when a judge may be used, and for what (issue 47; docs/judges.md).

* **Canary**: the newest ``judge canary`` of a judge must have passed (its fooled rate at most the
  threshold for every kind of canary): :func:`require_canary_passed` refuses ``calibrate --judge`` and
  ``consensus --judge-fills`` otherwise. A judge never put through a canary is not refused (there is
  nothing measured to refuse it on); ``calibrate`` shows that no canary ran.
* **Lineage**: a judge declared to share a model with a system under test (``judge lineage add``) is
  refused for every comparison involving that system (:func:`refuse_lineage`): a judge grading a ranker
  built on its own model favours it (Clarke and Dietz 2024 saw tau over the top 5 fall to -0.40).
* **Provenance**: a calibration verdict holds only for the model and prompt template it measured
  (:func:`measured_provenance` at calibration, :func:`require_calibrated_provenance` at use).

Every function takes the session as a keyword argument and never commits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m
from ndcg_labeling.errors import ConflictError, NdcgLabelingError, NotFoundError
from ndcg_labeling.labels.lookups import require_grader

CANARY, RECHECK = "canary", "recheck"
LINEAGE_COLUMNS: tuple[str, ...] = ("judge", "system", "note", "created_at")


def _short(sha: str | None) -> str:
    return "none" if sha is None else sha[:12]


def latest_check(grader_id: int, kind: str, *, session: Session) -> m.JudgeCheck | None:
    c = m.JudgeCheck
    return session.execute(select(c).where(c.grader_id == grader_id, c.kind == kind)
                           .order_by(c.id.desc()).limit(1)).scalar_one_or_none()


def check_as_dict(check: m.JudgeCheck) -> dict[str, Any]:
    return {"kind": check.kind, "batch": check.batch, "model": check.model, "base_url": check.base_url,
            "template_sha256": check.template_sha256, "n": check.n, "passed": check.passed,
            "threshold": check.threshold, "result": check.result, "created_at": check.created_at.isoformat()}


def newest_checks(grader: m.Grader, *, session: Session) -> list[dict[str, Any]]:
    """The newest canary and the newest recheck of ``grader`` (those that ran), as plain dicts."""
    found = (latest_check(grader.id, kind, session=session) for kind in (CANARY, RECHECK))
    return [check_as_dict(c) for c in found if c is not None]


def require_canary_passed(grader: m.Grader, *, session: Session) -> None:
    """Raise when the newest ``judge canary`` of ``grader`` failed (see the module docstring)."""
    check = latest_check(grader.id, CANARY, session=session)
    if check is None or check.passed:
        return
    rates = (check.result or {}).get("kinds", {})
    shown = ", ".join(f"{kind} {v['fooled_rate']:.0%} of {v['n']}" for kind, v in rates.items())
    raise NdcgLabelingError(
        f"judge {grader.name} failed its newest canary ({check.created_at:%Y-%m-%d %H:%M}, model {check.model}, "
        f"prompt {_short(check.template_sha256)}: graded relevant {shown}; the gate allows at most "
        f"{check.threshold:.0%}): it is refused until `ndcg-labeling judge canary --grader {grader.name}` passes")


# --- provenance: what a verdict measured ----------------------------------------------------------------


def _provenance(grader_id: int, *, session: Session) -> tuple[NDArray[np.int64], list[tuple[str | None, str | None]]]:
    """``(judgment ids, (model, template sha256) of each)`` of every judgment of the grader (``(None, None)``
    for a judgment without provenance: imported from a file)."""
    j, p = m.Judgment, m.JudgmentProvenance
    rows = session.execute(select(j.id, p.model, p.template_sha256).outerjoin(p, p.judgment_id == j.id)
                           .where(j.grader_id == grader_id).order_by(j.id)).all()
    return np.array([r[0] for r in rows], dtype=np.int64), [(r[1], r[2]) for r in rows]


def _combos(grader_id: int, judgment_ids: NDArray[np.int64], *, session: Session) -> dict[tuple[str | None, str | None], int]:
    ids, prov = _provenance(grader_id, session=session)
    keep = np.isin(ids, judgment_ids)
    out: dict[tuple[str | None, str | None], int] = {}
    for flag, combo in zip(keep.tolist(), prov, strict=True):
        if flag:
            out[combo] = out.get(combo, 0) + 1
    return out


def measured_provenance(judgment_ids: NDArray[np.int64], *, session: Session) -> tuple[str | None, str | None]:
    """The one ``(model, prompt template sha256)`` of the judgments ``judgment_ids`` (``(None, None)``:
    none carries provenance); a mix is refused: one verdict cannot hold for two prompts."""
    if judgment_ids.size == 0:
        return None, None
    grader_id = session.scalar(select(m.Judgment.grader_id).where(m.Judgment.id == int(judgment_ids[0])))
    combos = _combos(int(grader_id or 0), judgment_ids, session=session)
    if len(combos) > 1:
        shown = "; ".join(f"{n} of model {mo} with prompt {_short(sh)}" for (mo, sh), n in combos.items())
        raise NdcgLabelingError(f"the judge's labels mix models or prompt templates ({shown}): a verdict holds for "
                                f"one model and prompt; grade with one (a new grader name per model or prompt)")
    return next(iter(combos)) if combos else (None, None)


def _label_combos(grader_id: int, *, batch: str | None, session: Session) -> dict[tuple[str | None, str | None], int]:
    """``(model, template sha256) -> count`` over the grader's judgments (of ``batch``, when given), counted
    by the database (one GROUP BY, whatever the number of labels)."""
    j, p = m.Judgment, m.JudgmentProvenance
    stmt = (select(p.model, p.template_sha256, func.count()).select_from(j).outerjoin(p, p.judgment_id == j.id)
            .where(j.grader_id == grader_id).group_by(p.model, p.template_sha256))
    if batch is not None:
        stmt = stmt.where(j.batch == batch)
    return {(model, sha): int(n) for model, sha, n in session.execute(stmt)}


def require_calibrated_provenance(grader: m.Grader, *, batch: str | None, use: str, session: Session) -> None:
    """Refuse ``use`` (e.g. ``--judge-fills``) of the judge's labels (of ``batch``, or all) when a model or
    prompt template among them differs from the one its newest calibration verdict measured (no verdict:
    nothing to hold them to)."""
    v = m.CalibrationVerdict
    newest = session.execute(select(v.model, v.template_sha256).where(v.grader_id == grader.id)
                             .order_by(v.id.desc()).limit(1)).first()
    if newest is None:
        return
    calibrated = (newest[0], newest[1])
    other = {c: n for c, n in _label_combos(grader.id, batch=batch, session=session).items() if c != calibrated}
    if not other:
        return
    (model, sha), n = next(iter(sorted(other.items(), key=lambda kv: -kv[1])))
    raise NdcgLabelingError(
        f"{use}: {n} labels of judge {grader.name} come from model {model} with prompt template {_short(sha)}, but its "
        f"calibration measured model {calibrated[0]} with prompt template {_short(calibrated[1])}: a verdict holds "
        f"only for what it measured; run `ndcg-labeling calibrate --judge {grader.name}` on these labels first")


# --- lineage: a judge that shares a model with a system under test ----------------------------------------


def _system(name: str, *, session: Session) -> m.System:
    system = session.execute(select(m.System).where(m.System.name == name)).scalar_one_or_none()
    if system is None:
        raise NotFoundError(f"no system named {name!r} (import its run first)")
    return system


def add_lineage(judge: str, system: str, *, note: str | None, session: Session) -> dict[str, Any]:
    """Declare that ``judge`` shares a model with ``system``; a second declaration of the pair is refused."""
    grader = require_grader(judge, session=session)
    sys_row = _system(system, session=session)
    lin = m.JudgeLineage
    if session.scalar(select(func.count()).where(lin.grader_id == grader.id, lin.system_id == sys_row.id)):
        raise ConflictError(f"judge {grader.name} is already declared to share a model with system {sys_row.name}")
    row = lin(grader_id=grader.id, system_id=sys_row.id, note=note, created_at=m.utcnow())
    session.add(row)
    session.flush()
    return {"judge": grader.name, "system": sys_row.name, "note": note, "created_at": row.created_at.isoformat()}


def remove_lineage(judge: str, system: str, *, session: Session) -> None:
    grader = require_grader(judge, session=session)
    sys_row = _system(system, session=session)
    lin = m.JudgeLineage
    row = session.execute(select(lin).where(lin.grader_id == grader.id, lin.system_id == sys_row.id)).scalar_one_or_none()
    if row is None:
        raise NotFoundError(f"judge {grader.name} is not declared to share a model with system {sys_row.name}")
    session.delete(row)
    session.flush()


def list_lineage(*, session: Session, judge: str | None = None) -> list[dict[str, Any]]:
    lin, g, s = m.JudgeLineage, m.Grader, m.System
    stmt = (select(g.name, s.name, lin.note, lin.created_at).select_from(lin).join(g, g.id == lin.grader_id)
            .join(s, s.id == lin.system_id).order_by(g.name, s.name))
    if judge is not None:
        stmt = stmt.where(lin.grader_id == require_grader(judge, session=session).id)
    return [{"judge": a, "system": b, "note": c, "created_at": d.isoformat()} for a, b, c, d in session.execute(stmt)]


def refuse_lineage(judges: list[str], systems: list[str] | None, *, use: str, session: Session) -> None:
    """Raise when any of ``judges`` is declared to share a model with any of ``systems`` (None: every
    stored system), naming the judge, the system and ``use`` (e.g. ``report --estimator ppi``)."""
    if not judges:
        return
    lin, g, s = m.JudgeLineage, m.Grader, m.System
    stmt = (select(g.name, s.name).select_from(lin).join(g, g.id == lin.grader_id).join(s, s.id == lin.system_id)
            .where(g.name.in_(judges)).order_by(g.name, s.name))
    if systems is not None:
        stmt = stmt.where(s.name.in_(systems))
    found = session.execute(stmt).first()
    if found is None:
        return
    raise NdcgLabelingError(
        f"{use}: judge {found[0]} is declared to share a model with system {found[1]} (`ndcg-labeling judge lineage "
        f"list`): its labels cannot compare {found[1]} with other systems; leave {found[1]} out (--system) or use "
        f"another judge")


def filling_judges(*, session: Session) -> list[str]:
    """The judges that filled consensus labels (``consensus --judge-fills``), by name."""
    label = m.ConsensusLabel
    return sorted(str(n) for n in session.execute(select(label.filled_by).where(
        label.filled_by.is_not(None), label.value.is_not(None)).distinct()).scalars())


def check_judge_use(judge: str, systems: list[str] | None, *, use: str, session: Session) -> None:
    """The gate before a judge's labels score ``systems`` (None: every stored system) in ``use`` (e.g.
    ``report --estimator ppi``): refused for a system it shares a model with, and when its labels' model or
    prompt differ from what its newest calibration measured."""
    grader = require_grader(judge, session=session)
    refuse_lineage([grader.name], systems, use=use, session=session)
    require_calibrated_provenance(grader, batch=None, use=use, session=session)
