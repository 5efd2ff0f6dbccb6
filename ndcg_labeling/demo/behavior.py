"""The demo's behavior part: labels derived from the simulated log ``data/behavior_log.csv`` (made by
data/make_behavior_log.py) and calibrated against the demo's human consensus.

PBM by EM with a 14-day half-life; the cut points fitted to the demo batch's human consensus (kappa
reported on held-out queries); then ``calibrate --judge clicks-pbm``: labels and system ranking
against people, as for any judge.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

GRADER = "clicks-pbm"
LOG_FILE = "behavior_log.csv"


@dataclass
class BehaviorDemo:
    """What the behavior step did: ``derived`` (DeriveResult.as_dict()), ``calibration`` (its as_dict())."""

    log: str
    derived: dict[str, Any]
    calibration: dict[str, Any]


def behavior_step(folder: Path, *, batch: str, session: Session) -> BehaviorDemo | None:
    """Derive and calibrate the behavior labels of the demo (None where the demo set has no log)."""
    from ndcg_labeling.sources.behavior import DeriveOptions, derive_labels
    from ndcg_labeling.sources.calibration import calibrate

    log = folder / LOG_FILE
    if not log.exists():
        return None
    options = DeriveOptions(model="pbm", grader=GRADER, scale="0-3", half_life_s=14 * 86_400.0, fit_to=batch)
    derived = derive_labels([str(log)], options, session=session)
    report = calibrate(session=session, judge=GRADER, by="query-type")
    return BehaviorDemo(log=str(log), derived=derived.as_dict(), calibration=report.as_dict())
