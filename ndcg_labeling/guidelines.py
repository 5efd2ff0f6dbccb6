"""The rater guidelines: one Markdown file per scale, ``guidelines/relevance-<scale>.md``.

A guideline file carries its version on a line ``Version: x.y`` and one heading per grade in the
fixed form ``### 3 — Perfect`` (an em dash; a plain ``-`` is accepted), followed by the definition:
its first paragraph is the short definition the grading terminal shows. The grade names come from
these files (a test checks that they agree with :data:`ndcg_labeling.scales.SCALES`).

A grading batch stores the guideline's path, version and the sha256 of its content, so that a later
edit of the file cannot silently change what old grades mean: :func:`guideline_changed` tells.

Where the files are: in a wheel they travel as ``ndcg_labeling/guidelines/*.md`` (the data package
``ndcg_labeling.guidelines``); in a source checkout they are in ``guidelines/`` at the top of the
repository. Because this module is itself called ``ndcg_labeling.guidelines``, the import system finds
this module rather than the data folder, so the folder is looked up by path, not by import.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.scales import SCALES, get_scale

_GRADE_HEADING = re.compile(r"^###\s+(\d+)\s+(?:—|–|-)\s+(.+?)\s*$")
_VERSION_LINE = re.compile(r"^Version:\s*(\S+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class GradeDefinition:
    """One grade of a guideline: its value, its name, the short definition and the whole section."""

    grade: int
    name: str
    definition: str
    section: str


@dataclass(frozen=True)
class Guideline:
    """A guideline file as read now: ``path`` is the display path (``guidelines/relevance-0-3.md``)."""

    scale: str
    path: str
    version: str | None
    sha256: str
    text: str
    grades: tuple[GradeDefinition, ...]

    def name_of(self, grade: int) -> str:
        return self.grade(grade).name

    def grade(self, grade: int) -> GradeDefinition:
        for g in self.grades:
            if g.grade == grade:
                return g
        raise KeyError(grade)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(g.name for g in self.grades)


def guideline_filename(scale: str) -> str:
    return f"relevance-{scale}.md"


def display_path(scale: str) -> str:
    """The path recorded in a batch: relative to the repository (or the installed package)."""
    return f"guidelines/{guideline_filename(scale)}"


def guidelines_dir() -> Path:
    """The folder holding the guideline files (installed package first, then the source checkout)."""
    package_dir = Path(__file__).resolve().parent
    # installed: shipped as ndcg_labeling/guideline_files (see pyproject); source checkout: guidelines/
    candidates = [package_dir / "guideline_files", package_dir.parent / "guidelines"]
    for candidate in candidates:
        if candidate.is_dir() and any(candidate.glob("relevance-*.md")):
            return candidate
    raise NotFoundError("the guideline files (relevance-<scale>.md) are missing from "
                        + " and ".join(str(c) for c in candidates))


def content_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parse_guideline(text: str, *, scale: str, path: str, sha256: str | None = None) -> Guideline:
    """Parse a guideline's text: its version line and its grade headings (ascending by grade).

    Raises :class:`NdcgLabelingError` if the grades are not exactly the scale's grades.
    """
    match = _VERSION_LINE.search(text)
    version = match.group(1) if match else None
    lines = text.splitlines()
    headings = [(i, _GRADE_HEADING.match(line)) for i, line in enumerate(lines)]
    found = [(i, mt) for i, mt in headings if mt is not None]
    grades: list[GradeDefinition] = []
    for n, (i, mt) in enumerate(found):
        end = found[n + 1][0] if n + 1 < len(found) else len(lines)
        # The section stops at the next heading of any level.
        section = "\n".join(itertools.takewhile(lambda line: not line.startswith("#"), lines[i + 1 : end])).strip()
        first_paragraph = section.split("\n\n", 1)[0] if section else ""
        definition = " ".join(part.strip() for part in first_paragraph.splitlines())
        grades.append(GradeDefinition(int(mt.group(1)), mt.group(2), definition, section))
    grades.sort(key=lambda g: g.grade)
    expected = SCALES[scale].values if scale in SCALES else ()
    got = tuple(g.grade for g in grades)
    if expected and got != expected:
        raise NdcgLabelingError(f"{path}: the guideline has grade headings {list(got)}, expected {list(expected)} "
                                f"for scale {scale} (headings like '### 3 — Perfect')")
    digest = sha256 if sha256 is not None else content_sha256(text.encode("utf-8"))
    return Guideline(scale, path, version, digest, text, tuple(grades))


def load_guideline(scale: str) -> Guideline:
    """The guideline of ``scale`` as the file reads now (its sha256 is of the file's bytes)."""
    if scale not in SCALES:
        raise NotFoundError(f"unknown scale {scale!r}; known scales: {', '.join(sorted(SCALES))}")
    file = guidelines_dir() / guideline_filename(scale)
    if not file.is_file():
        raise NotFoundError(f"no guideline file for scale {scale}: {file}")
    data = file.read_bytes()
    return parse_guideline(data.decode("utf-8"), scale=scale, path=display_path(scale), sha256=content_sha256(data))


def guideline_changed(scale: str, recorded_sha256: str | None) -> bool:
    """True when the guideline file of ``scale`` no longer has the content hash a batch recorded."""
    try:
        return load_guideline(scale).sha256 != recorded_sha256
    except NdcgLabelingError:
        return True


@lru_cache(maxsize=16)
def _guideline(scale: str, _mtime_ns: int) -> Guideline | None:
    try:
        return load_guideline(scale)
    except NdcgLabelingError:
        return None


def scale_grades(scale: str) -> tuple[list[dict[str, Any]], str]:
    """The grades of ``scale`` as ``[{"value", "name", "definition"}]`` from its guideline, and the guideline text.

    The parsed guideline is kept while its file is unchanged (one ``stat`` per call, not a read and a parse).
    """
    try:
        mtime = (guidelines_dir() / guideline_filename(scale)).stat().st_mtime_ns
    except (OSError, NdcgLabelingError):
        mtime = -1
    guideline = _guideline(scale, mtime)
    if guideline is not None:
        return ([{"value": g.grade, "name": g.name, "definition": g.definition} for g in guideline.grades],
                guideline.text)
    sc = get_scale(scale)
    return [{"value": v, "name": sc.name_of(v), "definition": ""} for v in sc.values], ""
