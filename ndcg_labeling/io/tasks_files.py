"""Task files for graders: writing a grader's open items, reading the files they fill in.

Formats:

- ``csv``: header ``item_id,query,title,body,url,exported_at,grade``; the grade column is empty on
  export; ``exported_at`` is the time of the export (UTC, ``2026-12-04T06:05:00.123456Z``), compared on
  import with the time each stored grade was made, so that a stale file never replaces newer work. A cell
  that a spreadsheet would run as a formula (``=...``, ``+...``, ``-...``, ``@...``) is written with a
  leading ``'`` (:mod:`ndcg_labeling.spreadsheet`); reading the file back removes exactly that mark.
- ``jsonl``: one object per line with the same keys.
- ``label-studio``: on export, a Label Studio task-import JSON list
  ``[{"data": {"item_id": ..., "query": ..., "title": ..., "body": ..., "url": ...}}]``; on import,
  a Label Studio JSON export: a list of tasks with ``data.item_id`` and the grade in
  ``annotations[-1].result[i].value.choices[0]`` (``"2"`` or a grade name such as ``"Highly relevant"``).

Exported files hold nothing that hints at a rank: no rank, score, system or other grader's grade.
Reading returns every row with where it came from (``FILE:LINE`` for CSV/JSONL, ``FILE: task I`` for
JSON, ``I`` the 0-based index in the list) so that the importer can report every bad row.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ndcg_labeling.errors import InputFileError
from ndcg_labeling.io.files import open_output, require_input_file
from ndcg_labeling.io.tables import decode_text, read_table
from ndcg_labeling.spreadsheet import neutralise

TASK_COLUMNS = ("item_id", "query", "title", "body", "url", "exported_at", "grade")  # grade last: the column a grader fills
LABEL_STUDIO_FIELDS = ("item_id", "query", "title", "body", "url", "exported_at")
STAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"  # exported_at: when the file was written, UTC to the microsecond
TASK_FORMATS = ("csv", "jsonl", "label-studio")
_EXTENSIONS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "label-studio"}


def task_format(path: str | Path, fmt: str | None) -> str:
    """The task file format: ``fmt`` if given, else from the extension (.csv, .jsonl, .json)."""
    if fmt:
        fmt_l = fmt.lower().replace("_", "-")
        if fmt_l in ("labelstudio", "ls"):
            fmt_l = "label-studio"
        if fmt_l not in TASK_FORMATS:
            raise InputFileError(str(path), f"unknown task file format {fmt!r}; expected one of {', '.join(TASK_FORMATS)}")
        return fmt_l
    suffix = Path(path).suffix.lower()
    if suffix not in _EXTENSIONS:
        raise InputFileError(str(path), f"cannot tell the format from the extension {suffix or '(none)'!r}; "
                             f"use .csv, .jsonl or .json (Label Studio) or pass --format")
    return _EXTENSIONS[suffix]


def write_tasks(rows: Sequence[dict[str, Any]], path: str | Path, fmt: str | None = None, *,
                force: bool = False) -> str:
    """Write task rows (dicts with the keys of :data:`TASK_COLUMNS`) to ``path``; returns the format.

    Only the task columns are written, whatever else the dicts hold. An existing file is kept (a
    grader's filled-in file must not be wiped by a second export) unless ``force``; a symbolic link is
    never followed (:func:`ndcg_labeling.io.files.open_output`).
    """
    fmt_n = task_format(path, fmt)
    clean = [{c: ("" if row.get(c) is None else str(row.get(c))) for c in TASK_COLUMNS} for row in rows]
    with open_output(path, force=force) as fh:
        if fmt_n == "csv":  # opened in a spreadsheet: no cell may be a formula (ndcg_labeling.spreadsheet)
            writer = csv.DictWriter(fh, fieldnames=list(TASK_COLUMNS), lineterminator="\n")
            # The csv module quotes a field with "\n" but not one with a lone "\r" (lineterminator is
            # "\n"), which a reader would take for a line end: such a row is written fully quoted.
            quoted = csv.DictWriter(fh, fieldnames=list(TASK_COLUMNS), lineterminator="\n", quoting=csv.QUOTE_ALL)
            writer.writeheader()
            for row in clean:
                cells = {c: neutralise(v) for c, v in row.items()}
                (quoted if any("\r" in v for v in cells.values()) else writer).writerow(cells)
        elif fmt_n == "jsonl":
            for row in clean:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            tasks = [{"data": {c: row[c] for c in LABEL_STUDIO_FIELDS}} for row in clean]
            json.dump(tasks, fh, ensure_ascii=False, indent=1)
            fh.write("\n")
    return fmt_n


@dataclass(frozen=True)
class GradedRow:
    """One row of a filled task file: ``grade`` is the raw text ("" when left empty).

    ``line`` is the 1-based file line (CSV/JSONL); ``where`` names the row where there is no line
    (``task 3`` for the third task of a Label Studio file, counted from 1).
    """

    index: int
    where: str
    line: int | None
    item_id: str
    grade: str
    exported_at: str = ""  # the export stamp of the row's file, as written ("" when the file has none)


@dataclass
class GradedFile:
    """The rows of a filled task file, and the problems found while reading its structure
    (``(row index, error)``, one per bad row; those rows are not in ``rows``)."""

    path: str
    fmt: str
    rows: list[GradedRow] = field(default_factory=list)
    problems: list[tuple[int, InputFileError]] = field(default_factory=list)


def read_graded(path: str | Path, fmt: str | None = None) -> GradedFile:
    """Read a filled task file (CSV/JSONL with ``item_id`` and ``grade``, or a Label Studio export).

    Raises :class:`InputFileError` when the file as a whole is unreadable; problems of single rows are
    collected in ``problems`` (one per row) and the row is left out.
    """
    path_s = str(path)
    fmt_n = task_format(path_s, fmt)
    if fmt_n == "label-studio":
        return _read_label_studio(path_s)
    table = read_table(path_s, fmt_n)
    table.require_columns(["item_id", "grade"])
    out = GradedFile(path_s, fmt_n)
    items = table.frame["item_id"].tolist()
    grades = table.frame["grade"].tolist()
    stamps = table.frame["exported_at"].tolist() if "exported_at" in table.frame.columns else [""] * len(items)
    out.rows = [GradedRow(i, f"row {i + 1}", table.line_of(i), item, grade, stamp)
                for i, (item, grade, stamp) in enumerate(zip(items, grades, stamps, strict=True))]
    return out


def parse_stamp(text: str) -> datetime | None:
    """An ``exported_at`` stamp as a naive UTC datetime (None for ""); ``ValueError`` if it is not one."""
    if not text:
        return None
    try:
        return datetime.strptime(text, STAMP_FORMAT)
    except ValueError:
        raise ValueError(f"exported_at {text[:40]!r} is not an export time (expected like "
                         f"2026-12-04T06:05:00.123456Z)") from None


def stamp_of(moment: datetime) -> str:
    """The ``exported_at`` text of a naive UTC datetime."""
    return moment.strftime(STAMP_FORMAT)


def _read_label_studio(path: str) -> GradedFile:
    p = Path(path)
    require_input_file(p)
    try:
        tasks = json.loads(decode_text(path, p.read_bytes()))
    except json.JSONDecodeError as exc:
        raise InputFileError(path, f"not a Label Studio JSON export: {exc.msg}", line=exc.lineno) from None
    except RecursionError:
        raise InputFileError(path, "not a Label Studio JSON export: nested too deeply") from None
    if not isinstance(tasks, list):
        raise InputFileError(path, f"not a Label Studio JSON export: expected a list of tasks, got {type(tasks).__name__}")
    out = GradedFile(path, "label-studio")
    for i, task in enumerate(tasks):
        data = task.get("data") if isinstance(task, dict) else None
        item = data.get("item_id") if isinstance(data, dict) else None
        if item is None or str(item).strip() == "":
            out.problems.append((i, InputFileError(path, f"task {i + 1}: no data.item_id")))
            continue
        if not isinstance(item, str):
            out.problems.append((i, InputFileError(path, f"task {i + 1}: data.item_id must be a string, "
                                                         f"got {type(item).__name__}")))
            continue
        try:
            grade = _label_studio_choice(task)
        except ValueError as exc:
            out.problems.append((i, InputFileError(path, f"task {i + 1}: {exc}")))
            continue
        stamp = data.get("exported_at") if isinstance(data, dict) else None
        out.rows.append(GradedRow(i, f"task {i + 1}", None, str(item).strip(), grade,
                                  stamp.strip() if isinstance(stamp, str) else ""))
    return out


def _label_studio_choice(task: dict[str, Any]) -> str:
    """The chosen grade of the task's latest annotation ("" when not annotated)."""
    annotations = task.get("annotations") or []
    if not isinstance(annotations, list):
        raise ValueError("annotations is not a list")
    if not annotations:
        return ""
    latest = annotations[-1]
    results = latest.get("result") if isinstance(latest, dict) else None
    if not results:
        return ""
    if not isinstance(results, list):
        raise ValueError("annotations[-1].result is not a list")
    for result in results:
        value = result.get("value") if isinstance(result, dict) else None
        if not isinstance(value, dict) or "choices" not in value:
            continue  # another control's result (a text area, a rating...)
        choices = value["choices"]
        if not isinstance(choices, list):
            raise ValueError(f"value.choices must be a list of one choice, got {type(choices).__name__} "
                             f"{json.dumps(choices)[:60]}")
        if len(choices) > 1:
            raise ValueError(f"value.choices holds {len(choices)} choices; a grade is one choice")
        if choices:
            if not isinstance(choices[0], str | int) or isinstance(choices[0], bool):
                raise ValueError(f"value.choices[0] must be text, got {type(choices[0]).__name__}")
            return str(choices[0]).strip()
    return ""


def row_error(path: str, row: GradedRow, problem: str) -> InputFileError:
    """``FILE:LINE: problem`` for a CSV/JSONL row, ``FILE: task I: problem`` for a JSON task."""
    if row.line is not None:
        return InputFileError(path, problem, line=row.line)
    return InputFileError(path, f"{row.where}: {problem}")
