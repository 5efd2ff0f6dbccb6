"""The grader-quality demo on the simulated set of ``data/quality`` (made by data/make_quality_data.py).

Load the set, create a batch with gold items, let the simulated graders (accurate, random, lenient)
fill their task files from the hidden truth, then: ``graders quality``, consensus with and without
the untrusted graders (the share of labels equal to the truth, before and after), and the calibration
of the simulated judge. Used by ``ndcg-labeling demo`` and by the tests.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from ndcg_labeling.db import models as m

# Installed: data/ ships as the package folder ndcg_labeling/demo_data; in a source checkout: data/.
_PACKAGED = Path(__file__).resolve().parents[1] / "demo_data" / "quality"
QUALITY_DIR = _PACKAGED if (_PACKAGED / "queries.csv").exists() else Path(__file__).resolve().parents[2] / "data" / "quality"
BATCH = "quality"
SYSTEMS = ("exact", "semantic", "hybrid", "random-ish")


def simulate(profile: dict[str, Any], truth: int, rng: np.random.Generator, top: int = 3) -> int:
    """A simulated grade: ``accurate`` (the truth with probability p, else one off), ``random``
    (uniform), ``lenient`` (one too high with probability p)."""
    kind = profile["kind"]
    if kind == "random":
        return int(rng.integers(0, top + 1))
    if kind == "lenient":
        return min(top, truth + 1) if rng.random() < profile["p"] else truth
    if rng.random() < profile["p"]:
        return truth
    return int(np.clip(truth + rng.choice([-1, 1]), 0, top))


def read_truth(folder: Path = QUALITY_DIR) -> dict[tuple[str, str], int]:
    with open(folder / "truth.csv", encoding="utf-8", newline="") as fh:
        return {(r["query_id"], r["doc_id"]): int(r["relevance"]) for r in csv.DictReader(fh)}


def load_quality_data(*, session: Session, folder: Path = QUALITY_DIR) -> None:
    """Queries, documents, the human graders, the judge (kind model) and its judgments, runs, gold items."""
    from ndcg_labeling.labels import importing
    from ndcg_labeling.labels.gold import import_gold

    importing.import_queries(folder / "queries.csv", session=session)
    importing.import_documents(folder / "documents.csv", session=session)
    importing.import_graders(folder / "graders.csv", session=session)
    judge = json.loads((folder / "grader_profiles.json").read_text(encoding="utf-8"))["judge"]["name"]
    importing.add_graders([judge], session=session, kind="model")
    for system in SYSTEMS:
        importing.import_run(folder / "runs" / f"{system}.run", system=system, session=session, fmt="trec")
    import_gold(folder / "gold.csv", scale="0-3", session=session)
    importing.import_judgments(folder / "judge.csv", scale="0-3", session=session)


def fill_task_files(batch: str, graders: list[str], grade_of: Callable[[str, tuple[str, str]], int], out_dir: Path,
                    *, session: Session, prefix: str = "") -> int:
    """Export each grader's task file of ``batch`` into ``out_dir``, fill every item with
    ``grade_of(grader, (query_id, doc_id))`` (what the graders do not see, the simulation needs), import
    it back; returns the number of grades."""
    from ndcg_labeling.labels.tasks import export_tasks, import_graded

    bi, q, d = m.BatchItem, m.Query, m.Document
    keys = {k: (qe, de) for k, qe, de in session.execute(
        select(bi.item_key, q.external_id, d.external_id).join(q, q.id == bi.query_id)
        .join(d, d.id == bi.document_id).join(m.GradingBatch, m.GradingBatch.id == bi.batch_id)
        .where(m.GradingBatch.name == batch))}
    out_dir.mkdir(parents=True, exist_ok=True)
    total = 0
    for grader in graders:
        rows = export_tasks(batch, grader=grader, session=session)
        path = out_dir / f"{prefix}{grader}.csv"
        with open(path, "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(["item_id", "grade"])
            for r in rows:
                writer.writerow([r["item_id"], grade_of(grader, keys[r["item_id"]])])
        import_graded(path, grader=grader, session=session)
        total += len(rows)
    return total


def play_graders(batch: str, *, session: Session, out_dir: Path, folder: Path = QUALITY_DIR) -> int:
    """Export each grader's task file, fill it from the truth with the grader's habit, import it."""
    truth = read_truth(folder)
    spec = json.loads((folder / "grader_profiles.json").read_text(encoding="utf-8"))
    profiles, rng = spec["graders"], np.random.default_rng(spec["seed"])
    return fill_task_files(batch, sorted(profiles), lambda grader, key: simulate(profiles[grader], truth[key], rng),
                           out_dir, session=session, prefix=f"{batch}-")


def truth_share(*, session: Session, folder: Path = QUALITY_DIR) -> tuple[float, int]:
    """Share of the stored consensus labels equal to the true grade, and their number."""
    truth = read_truth(folder)
    label, q, d = m.ConsensusLabel, m.Query, m.Document
    rows = session.execute(select(q.external_id, d.external_id, label.value).join(q, q.id == label.query_id)
                           .join(d, d.id == label.document_id).where(label.value.is_not(None))).all()
    hits = sum(1 for qe, de, v in rows if v is not None and float(v) == truth[(qe, de)])
    return (hits / len(rows) if rows else float("nan")), len(rows)


@dataclass
class QualityDemo:
    quality: Any  # QualityReport
    before: tuple[float, int]
    after: tuple[float, int]
    consensus_after: str
    calibration: Any  # CalibrationReport

    def lines(self) -> list[str]:
        return [f"consensus labels equal to the truth: {self.before[0]:.1%} of {self.before[1]} with every "
                f"grader, {self.after[0]:.1%} of {self.after[1]} without the untrusted ones",
                self.consensus_after]


def run_quality_demo(*, session: Session, out_dir: Path, folder: Path = QUALITY_DIR, seed: int = 7,
                     gold_rate: float = 0.12) -> QualityDemo:
    """The whole quality story on the simulated set, in the caller's transaction."""
    from ndcg_labeling.labels.consensus import run_consensus
    from ndcg_labeling.labels.quality import graders_quality
    from ndcg_labeling.labels.tasks import create_batch
    from ndcg_labeling.sources.calibration import calibrate

    load_quality_data(session=session, folder=folder)
    graders = sorted(json.loads((folder / "grader_profiles.json").read_text(encoding="utf-8"))["graders"])
    create_batch(BATCH, scale="0-3", depth=8, overlap=3, graders=graders, session=session, seed=seed,
                 gold_rate=gold_rate)
    play_graders(BATCH, session=session, out_dir=out_dir, folder=folder)
    quality = graders_quality(session=session, batch=BATCH)
    run_consensus(session=session, batch=BATCH, method="median")
    before = truth_share(session=session, folder=folder)
    summary = run_consensus(session=session, batch=BATCH, method="median", exclude_untrusted=True)
    after = truth_share(session=session, folder=folder)
    calibration = calibrate(session=session, judge="llm-judge", batch=None, by="query-type")
    return QualityDemo(quality=quality, before=before, after=after, consensus_after=str(summary),
                       calibration=calibration)


def quality_step(out_dir: Path) -> QualityDemo:
    """:func:`run_quality_demo` into a fresh ``sqlite:///<out_dir>/quality.db`` (the demo's step)."""
    from ndcg_labeling.db import migrate
    from ndcg_labeling.db.session import make_engine, session_scope

    path = out_dir / "quality.db"
    path.unlink(missing_ok=True)
    engine = make_engine(f"sqlite:///{path}")
    try:
        migrate.upgrade(engine)
        with session_scope(engine) as session:
            return run_quality_demo(session=session, out_dir=out_dir / "quality-tasks")
    finally:
        engine.dispose()
