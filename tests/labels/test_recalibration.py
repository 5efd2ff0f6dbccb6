"""Issue 35: a consistently biased grader (one grade too lenient on everything) is recalibrated from
their gold answers instead of dropped, and the summary says how many labels that changed."""

from __future__ import annotations

import json
import shutil
import statistics

from sqlalchemy import select

from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.demo.quality import QUALITY_DIR, load_quality_data, play_graders, truth_share
from ndcg_labeling.labels import tasks
from ndcg_labeling.labels.consensus import run_consensus

GRADERS = ["ana", "ben", "chloe", "dev", "emma"]


def _medians(session, shift: dict[str, int], leave_out: set[str]) -> dict[tuple[int, int], int]:
    """median_low of each item's grades (graders in leave_out dropped, shifts applied, clipped to 0-3)."""
    grades: dict[tuple[int, int], list[int]] = {}
    for name, q, d, g in session.execute(select(m.Grader.name, m.Judgment.query_id, m.Judgment.document_id,
                                                m.Judgment.grade).join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                                         .where(m.Judgment.batch == "q")):
        if name not in leave_out:
            grades.setdefault((q, d), []).append(min(3, max(0, g + shift.get(name, 0))))
    return {k: statistics.median_low(v) for k, v in grades.items()}


def test_a_grader_one_grade_too_lenient_is_recalibrated_not_dropped(sqlite_db, tmp_path):
    folder = tmp_path / "quality"
    shutil.copytree(QUALITY_DIR, folder)
    profiles = json.loads((folder / "grader_profiles.json").read_text(encoding="utf-8"))
    profiles["graders"]["emma"] = {"kind": "lenient", "p": 1.0}  # +1 on everything (capped at 3)
    (folder / "grader_profiles.json").write_text(json.dumps(profiles), encoding="utf-8")
    with session_scope(sqlite_db.engine) as session:
        load_quality_data(session=session, folder=folder)
        tasks.create_batch("q", scale="0-3", depth=8, overlap=3, graders=GRADERS, session=session, seed=7,
                           gold_rate=0.12)
        play_graders("q", session=session, out_dir=tmp_path / "tasks", folder=folder)
        dropped = run_consensus(session=session, batch="q", method="median", exclude_untrusted=True)
        assert set(dropped.excluded) == {"dev", "emma"}  # today: emma's labels are thrown away
        kept = run_consensus(session=session, batch="q", method="median", exclude_untrusted=True, recalibrate=True)
        assert kept.recalibrated == {"emma": -1} and set(kept.excluded) == {"dev"}
        assert "recalibrated 1 biased graders from their gold answers (emma: -1)" in str(kept)
        assert truth_share(session=session, folder=folder)[1] == 288
        raw = _medians(session, {}, {"dev"})
        fixed = _medians(session, {"emma": -1}, {"dev"})
        assert kept.recalibration_changed == sum(raw[k] != fixed[k] for k in raw) > 0
        stored = dict(((q, d), v) for q, d, v in session.execute(
            select(m.ConsensusLabel.query_id, m.ConsensusLabel.document_id, m.ConsensusLabel.value)))
        assert stored == {k: float(v) for k, v in fixed.items()}
