"""The project's exceptions: one base, a few named subclasses.

The CLI turns every :class:`NdcgLabelingError` into ``Error: <message>`` and exit code 1.
Kernels (metrics, agreement, consensus) raise plain ``ValueError`` for bad arrays, as numpy and
scikit-learn do; the pipeline wraps what a user can cause into these.
"""

from __future__ import annotations

from collections.abc import Sequence


class NdcgLabelingError(Exception):
    """Base class of every error the tool reports to a user as ``Error: ...``."""


class InputFileError(NdcgLabelingError):
    """A file a user gave is unreadable or has bad content.

    The message names the file and, where there is one, the line: ``judgments.csv:12: grade 5 is
    outside the scale 0-3``. ``line`` is the 1-based line of the file (the header is line 1).
    """

    def __init__(self, path: str, problem: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


class DatabaseNotAtHead(NdcgLabelingError):
    """The database schema is older (or newer) than this version of the tool expects."""


class NotFoundError(NdcgLabelingError):
    """A named thing (grader, system, batch, query type, ...) does not exist."""


class ConflictError(NdcgLabelingError):
    """The command would change or duplicate data that already exists (use --replace where offered)."""


class GradedFileError(NdcgLabelingError):
    """Bad rows of a graded task file, one :class:`InputFileError` per row; nothing was written.

    ``str()`` has one line per bad row (``FILE:LINE: problem`` or ``FILE: task I: problem``).
    """

    def __init__(self, problems: Sequence[InputFileError], total: int | None = None) -> None:
        self.problems = list(problems)
        self.total = total if total is not None else len(self.problems)
        lines = [str(p) for p in self.problems]
        if self.total > len(self.problems):
            lines.append(f"... and {self.total - len(self.problems)} more bad rows")
        self.lines = lines
        super().__init__("\n".join(lines))


class TooManyRetries(NdcgLabelingError):
    """A transaction collided with concurrent writers more often than allowed."""
