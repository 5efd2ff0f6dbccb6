"""Position-blind grading: pool, assign, report progress, export and import task files, and the data
operations of the interactive grading session (next item, save a grade, skip, undo).

Graders judge each document on its own merits: nothing they are shown (task files, the terminal)
carries a rank, a score, a system name or another grader's grade, and every grader sees their items
in their own random order (queries shuffled, documents within a query shuffled), reproducible from
the batch's seed.

Grades are stored as :class:`~ndcg_labeling.db.models.Judgment` rows with ``batch`` = the batch
name, so agreement and consensus see them like any other judgments.

Every function takes the session as a keyword argument and never commits. The grading terminal
calls :func:`save_grade` / :func:`skip_item` / :func:`undo_item` each in its own short transaction.

The use cases live in submodules — :mod:`.create` (``tasks create``), :mod:`..overview` (``tasks status``,
``tasks list``: Core reads), :mod:`.files` (``tasks export``, ``tasks import``), :mod:`.session` (``grade``) — and
are re-exported here. None of them imports pandas, numba or matplotlib at import time.
"""

from __future__ import annotations

from ndcg_labeling.errors import GradedFileError
from ndcg_labeling.labels.overview import BatchStatus, GraderProgress, batch_status, list_batches
from ndcg_labeling.labels.tasks._common import (
    guideline_warning,
    guideline_warnings,
    parse_task_grade,
    require_batch,
)
from ndcg_labeling.labels.tasks.create import BatchCreated, create_batch
from ndcg_labeling.labels.tasks.files import (
    MAX_REPORTED_PROBLEMS,
    GradesImported,
    TasksExported,
    export_tasks,
    export_tasks_file,
    import_graded,
)
from ndcg_labeling.labels.tasks.session import (
    DEFAULT_SKIP_REASON,
    SESSION_SOURCE,
    GradingItem,
    grader_progress,
    next_item,
    save_grade,
    skip_item,
    undo_item,
)

__all__ = [
    "DEFAULT_SKIP_REASON",
    "MAX_REPORTED_PROBLEMS",
    "SESSION_SOURCE",
    "BatchCreated",
    "BatchStatus",
    "GradedFileError",
    "GraderProgress",
    "GradesImported",
    "GradingItem",
    "TasksExported",
    "batch_status",
    "create_batch",
    "export_tasks",
    "export_tasks_file",
    "grader_progress",
    "guideline_warning",
    "guideline_warnings",
    "import_graded",
    "list_batches",
    "next_item",
    "parse_task_grade",
    "require_batch",
    "save_grade",
    "skip_item",
    "undo_item",
]
