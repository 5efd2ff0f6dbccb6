"""The project's exceptions: one base, a few named subclasses.

The CLI turns every :class:`NdcgLabelingError` into ``Error: <message>`` and exit code 1.
Kernels (metrics, agreement, consensus) raise plain ``ValueError`` for bad arrays, as numpy and
scikit-learn do; the pipeline wraps what a user can cause into these.
"""

from __future__ import annotations


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
