"""The project's exceptions, every one of them: one base, its named subclasses, and the two
``ValueError`` subclasses of the kernels (:class:`AnswerError`, :class:`PrefsError`).

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


class JudgeRequestError(NdcgLabelingError):
    """The endpoint refused a request or kept failing; the run stops (answers stored so far stay)."""


class AnswerError(ValueError):
    """An answer that is not exactly ``{"grade": N}`` on the scale; ``str()`` says why."""


class BackendError(NdcgLabelingError, ValueError):
    """An invalid backend policy, or ``numba`` asked for where it cannot be imported."""


class InvalidGrade(NdcgLabelingError):
    """A final grade that is not a whole number (HTTP 422)."""


class AuthenticationError(NdcgLabelingError):
    """No credentials, or a token or session that is unknown, expired or revoked (HTTP 401)."""


class PermissionDenied(NdcgLabelingError):
    """The signed-in grader's role does not allow this (HTTP 403)."""


class AdjudicationConflict(ConflictError):
    """Another decision was recorded since the adjudicator looked (HTTP 409): ``by`` set ``grade``;
    ``version`` is that decision's, for a confirmed retry."""

    def __init__(self, message: str, *, by: str, grade: float, note: str | None, version: int) -> None:
        super().__init__(message)
        self.by, self.grade, self.note, self.version = by, grade, note, version


class InvalidInput(NdcgLabelingError):
    """A grade outside the scale, or a skip reason that is too long (HTTP 422)."""


class EventError(NdcgLabelingError):
    """A posted batch with a bad row (HTTP 422); nothing of the batch was stored."""


class BodyTooLarge(NdcgLabelingError):
    """A posted body over the server's limit (HTTP 413); refused while it is read, nothing stored."""


class DatabaseUrlError(NdcgLabelingError):
    """The database URL cannot be used: not a URL, an unknown dialect, or a driver not installed."""


class OutputFileError(NdcgLabelingError):
    """An output file cannot be written as asked (exists, is a link, folder missing...)."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class PrefsError(ValueError):
    """Preferences trec_eval refuses for a query (it stops with "Can't calculate measure")."""


class SearchEngineError(NdcgLabelingError):
    """A search engine refused a request, kept failing, or answered in a shape the configuration does not
    read; ``snapshot take`` stores nothing (the message never holds the credential)."""
