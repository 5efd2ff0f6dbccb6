"""The ``demo`` use case: the whole pipeline on the bundled demo set, into a fresh database.

Steps: create the schema; import queries, documents, graders and three TREC runs; pool a 0-3 grading
batch at depth 10 with 3 graders per item (the tasks pipeline: position-blind, shuffled per grader);
play the five graders (each grader's task file is exported, filled from the hidden true relevance
with that grader's habits, and imported back); agreement per query type; median consensus; the report
(``report.html`` and ``report.csv`` in the output folder).

The graders are simulated from ``data/truth.csv`` and ``data/grader_profiles.json``, which the tool
itself never imports; ``data/judgments.csv`` holds a batch graded the same way, for trying
``import judgments`` by hand (and for the demo where no tasks pipeline is available).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import inspect, text
from sqlalchemy.orm import Session

from ndcg_labeling.db import repository as repo
from ndcg_labeling.errors import ConflictError, NdcgLabelingError

# Installed: data/ ships as the package folder ndcg_labeling/demo_data; in a source checkout: data/.
_PACKAGED_DATA = Path(__file__).resolve().parents[1] / "demo_data"
DATA_DIR = _PACKAGED_DATA if (_PACKAGED_DATA / "queries.csv").exists() else Path(__file__).resolve().parents[2] / "data"
BATCH = "demo-0-3"
SCALE = "0-3"
DEPTH = 10
OVERLAP = 3
SEED = 7
SYSTEMS = ("bm25", "dense", "hybrid")
STEPS = ("create the database", "import queries, documents, graders and runs", "pool a grading batch",
         "grade the batch (simulated graders)", "consensus (median)", "report (with agreement per query type)",
         "gold items, grader quality and a judge's calibration")


def simulate_grade(truth: int, bias: float, noise: float, rng: np.random.Generator) -> int:
    """One simulated grader's 0-3 grade of a document whose true relevance is ``truth``:
    ``clip(round(truth + bias + N(0, noise)), 0, 3)``."""
    return int(np.clip(np.rint(truth + bias + rng.normal(0.0, noise)), 0, 3))


@dataclass
class DemoResult:
    """What the demo did; the report itself is in ``report``."""

    db_url: str
    out_dir: Path
    html_path: Path
    csv_path: Path
    report: Any  # ReportResult
    agreement: list[dict[str, Any]] | None
    agreement_note: str | None
    batch_summary: str
    consensus_summary: str
    timings: list[tuple[str, float]] = field(default_factory=list)
    quality: Any = None  # QualityDemo (ndcg_labeling.demo.quality), in its own SQLite database
    behavior: Any = None  # BehaviorDemo (ndcg_labeling.demo.behavior): labels from the simulated log


def _check_fresh(engine: Any, url: str) -> None:
    """Refuse a database that already holds data (the demo would mix with it)."""
    names = set(inspect(engine).get_table_names())
    with engine.connect() as conn:
        for table in ("queries", "documents", "judgments", "ranking_entries", "consensus_labels"):
            if table in names and conn.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar_one():
                raise ConflictError(f"the database {url} is not empty (table {table} has rows); the demo needs a "
                                    "fresh one: pass another --db or delete it")


def _data_dir(data_dir: Path | None) -> Path:
    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    if not (folder / "queries.csv").exists():
        raise NdcgLabelingError(f"demo data not found in {folder}: run the demo from a source checkout "
                                "(the data/ folder), or make it with data/make_demo_data.py")
    return folder


def _play_graders(folder: Path, out_dir: Path, *, session: Any) -> str:
    """Export each grader's tasks, fill them from the hidden truth with the grader's habits, import them."""
    from ndcg_labeling.demo.quality import fill_task_files, read_truth

    truth = read_truth(folder)
    profiles = json.loads((folder / "grader_profiles.json").read_text(encoding="utf-8"))
    rng = np.random.default_rng(SEED)
    tasks_dir = out_dir / "tasks"
    total = fill_task_files(BATCH, sorted(profiles), lambda grader, key: simulate_grade(
        truth.get(key, 0), profiles[grader]["bias"], profiles[grader]["noise"], rng), tasks_dir, session=session)
    return f"{total} grades by {len(profiles)} graders (task files in {tasks_dir})"


def run_demo(*, db: str | None = None, out: str | Path = "demo-out", data_dir: Path | None = None,
             on_step: Callable[[str], None] | None = None) -> DemoResult:
    """Run the whole pipeline on the demo set into a fresh database (default ``sqlite:///<out>/demo.db``).

    ``on_step(name)`` is called before each of :data:`STEPS`. Raises :class:`ConflictError` for a
    database that already holds data.
    """
    from ndcg_labeling.db import migrate
    from ndcg_labeling.db.session import make_engine, session_scope
    from ndcg_labeling.labels.tasks import create_batch
    from ndcg_labeling.reports import render_csv, render_html
    from ndcg_labeling.results import ReportOptions
    from ndcg_labeling.scoring.report import build_report

    folder = _data_dir(data_dir)
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    url = db or f"sqlite:///{out_dir / 'demo.db'}"
    timings: list[tuple[str, float]] = []
    clock = [time.perf_counter()]

    def step(i: int) -> None:
        now = time.perf_counter()
        if i > 0:
            timings.append((STEPS[i - 1], now - clock[0]))
        clock[0] = now
        if i < len(STEPS) and on_step is not None:
            on_step(STEPS[i])

    engine = make_engine(url)
    try:
        step(0)
        _check_fresh(engine, url)
        migrate.upgrade(engine)
        step(1)
        with session_scope(engine) as session:
            _import_demo_data(folder, session=session)
        step(2)
        graders = sorted(json.loads((folder / "grader_profiles.json").read_text(encoding="utf-8")))
        with session_scope(engine) as session:
            batch_summary = str(create_batch(BATCH, scale=SCALE, depth=DEPTH, overlap=OVERLAP, graders=graders,
                                             session=session, systems=list(SYSTEMS), seed=SEED))
        step(3)
        with session_scope(engine) as session:
            batch_summary += "; " + _play_graders(folder, out_dir, session=session)
        step(4)
        from ndcg_labeling.labels.consensus import run_consensus

        with session_scope(engine) as session:
            consensus_summary = str(run_consensus(session=session, method="median"))
        step(5)
        with session_scope(engine) as session:
            report = build_report(session=session, options=ReportOptions())
        # agreement per query type was measured once, with the report's label caveats
        caveats = report.caveats
        agreement, agreement_note = (caveats.agreement_rows, caveats.agreement_note) if caveats else (None, None)
        html_path = out_dir / "report.html"
        html_path.write_text(render_html(report, title="ndcg-labeling demo report"), encoding="utf-8")
        csv_path = out_dir / "report.csv"
        csv_path.write_text(render_csv(report), encoding="utf-8")
        step(len(STEPS) - 1)
        from ndcg_labeling.demo.quality import quality_step

        quality = quality_step(out_dir)
        behavior = _behavior(folder, engine)
        step(len(STEPS))
    finally:
        engine.dispose()
    return DemoResult(db_url=url, out_dir=out_dir, html_path=html_path, csv_path=csv_path, report=report,
                      agreement=agreement, agreement_note=agreement_note, batch_summary=batch_summary,
                      consensus_summary=consensus_summary, timings=timings, quality=quality, behavior=behavior)


def _behavior(folder: Path, engine: Any) -> Any:
    """Behavior labels from the demo's simulated log, calibrated against the human consensus."""
    from ndcg_labeling.db.session import session_scope
    from ndcg_labeling.demo.behavior import behavior_step

    with session_scope(engine) as session:
        return behavior_step(folder, batch=BATCH, session=session)


def _import_demo_data(folder: Path, *, session: Session) -> None:
    """Queries, documents, graders and the systems' runs of the demo set."""
    from ndcg_labeling.labels import importing

    importing.import_queries(folder / "queries.csv", session=session)
    importing.import_documents(folder / "documents.csv", session=session)
    importing.import_graders(folder / "graders.csv", session=session)
    for system in SYSTEMS:
        importing.import_run(folder / "runs" / f"{system}.run", system=system, session=session, fmt="trec")


def counts(url: str) -> dict[str, int]:
    """Row counts of the demo database (for the summary line)."""
    from ndcg_labeling.db.session import make_engine, session_scope

    engine = make_engine(url)
    try:
        with session_scope(engine) as session:
            return repo.table_counts(session=session)
    finally:
        engine.dispose()
