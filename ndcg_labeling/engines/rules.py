"""The rules a behavior-log row must hold, written once as data and rendered into each engine's language.

:data:`LOG_RULES` is one table of ``(column, condition, problem)``: a row is bad when a rule's condition
holds on its column, and the first such rule (in table order) names the problem, as
``position "0" is not a whole number >= 1``. The DuckDB engine renders the table into one SQL ``CASE``
(:func:`sql_checks`), the Spark engine into ``when`` expressions (:func:`spark_checks`): both engines
give the same message from the same row of the table. A condition is a few :class:`Test` s (any of them
holding makes the row bad) on the column's value read as a number (``TRY_CAST ... AS DOUBLE``; ``ts``:
epoch seconds or ISO 8601, the engine's own parse) or, for :data:`BLANK`, on the value as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import numpy as np

from ndcg_labeling.engines.base import (
    DWELL_MS_MAX,
    MAX_POSITION,
    TS_MAX,
    TS_MIN,
    TS_RANGE_PROBLEM,
    WATCH_RATIO_MAX,
    LogRequest,
    above_max_problem,
)
from ndcg_labeling.errors import InputFileError


@dataclass(frozen=True)
class Test:
    """One test on a value: ``blank`` (NULL, or only spaces), ``missing`` (not a number), ``not_finite``,
    ``not_whole``, ``below`` / ``above`` ``arg`` (strictly), ``not_in`` ``arg`` (a tuple of numbers)."""

    op: str
    arg: float | tuple[float, ...] | None = None


BLANK, MISSING, NOT_FINITE, NOT_WHOLE = Test("blank"), Test("missing"), Test("not_finite"), Test("not_whole")
#: JSON Lines only: the value is an object, an array, a boolean or a number with a fraction (an id is JSON
#: text or a whole number; a source of another format has its column's type, checked per file)
NOT_AN_ID = Test("not_an_id")


def below(x: float) -> Test:
    return Test("below", float(x))


def above(x: float) -> Test:
    return Test("above", float(x))


def not_in(*values: float) -> Test:
    return Test("not_in", tuple(float(v) for v in values))


@dataclass(frozen=True)
class LogRule:
    """A row is bad when any of ``tests`` holds on ``column`` (our name); the message is the column's
    name in the log, its value in double quotes (``(empty)`` for none) and ``problem``, or, without
    ``shows_value``, the name and ``problem``. ``optional``: a log may lack the column and a row may leave
    it empty (the rule is then checked on values only). ``example``: a value that breaks this rule and
    no rule before it (the docs and the tests show it)."""

    column: str
    tests: tuple[Test, ...]
    problem: str
    example: str
    optional: bool = False
    shows_value: bool = True


_NOT_A_COUNT = (MISSING, NOT_FINITE, below(0))
#: the log's rules, in the order they are checked (the first that holds names a bad row's problem)
LOG_RULES: tuple[LogRule, ...] = (
    LogRule("request_id", (BLANK,), "is empty", " ", shows_value=False),
    LogRule("query_id", (BLANK,), "is empty", " ", shows_value=False),
    LogRule("doc_id", (BLANK,), "is empty", " ", shows_value=False),
    LogRule("request_id", (NOT_AN_ID,), "is not text or an integer", '{"x":1}'),
    LogRule("query_id", (NOT_AN_ID,), "is not text or an integer", "[1,2]"),
    LogRule("doc_id", (NOT_AN_ID,), "is not text or an integer", "1.5"),
    LogRule("position", (MISSING, NOT_FINITE, below(1), NOT_WHOLE), "is not a whole number >= 1", "1.5"),
    LogRule("position", (above(MAX_POSITION),), f"is beyond the deepest position read ({MAX_POSITION})",
            str(MAX_POSITION + 1)),
    LogRule("clicked", (MISSING, not_in(0, 1)), "is not 0 or 1", "2"),
    LogRule("ts", (MISSING, NOT_FINITE), "is neither ISO 8601 nor epoch seconds", "yesterday"),
    LogRule("ts", (below(TS_MIN), above(TS_MAX)), TS_RANGE_PROBLEM, "1e300"),
    LogRule("watch_ratio", _NOT_A_COUNT, "is not a number >= 0", "-0.5", optional=True),
    LogRule("watch_ratio", (above(WATCH_RATIO_MAX),), above_max_problem(WATCH_RATIO_MAX), "1001", optional=True),
    LogRule("converted", (MISSING, not_in(0, 1)), "is not 0 or 1", "yes", optional=True),
    LogRule("dwell_ms", _NOT_A_COUNT, "is not a number >= 0", "inf", optional=True),
    LogRule("dwell_ms", (above(DWELL_MS_MAX),), above_max_problem(DWELL_MS_MAX), "2e10", optional=True),
)
#: the online report's rule, checked before the log's: a served list belongs to an arm
ARM_RULE = LogRule("arm", (BLANK,), "is empty", " ", shows_value=False)


def no_arm_column(file: str, name: str) -> InputFileError:
    """The online readers' refusal of a log without the experiment's ``arm`` column (``name`` in the log)."""
    return InputFileError(file, f"no column {name!r} (the experiment's arm; name it with --column arm=SOURCE)")


def active_rules(request: LogRequest, present: Collection[str], *, first: tuple[LogRule, ...] = ()) -> list[
        tuple[LogRule, bool]]:
    """``(rule, optional)`` for the rules a source with columns ``present`` (the log's names) is checked
    by: an optional column's rules only where the source has it, and ``watch_ratio`` required (a row
    without it is bad) for ``--model watch``. ``first``: rules checked before the log's (the online
    report's :data:`ARM_RULE`)."""
    names = request.source_names()
    out = []
    for rule in (*first, *LOG_RULES):
        required = not rule.optional or (rule.column == "watch_ratio" and request.watch)
        if required or names[rule.column] in present:
            out.append((rule, not required))
    return out


# --- DuckDB SQL ------------------------------------------------------------------------------------

def _sql_lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


#: the JSON types of an id field's value that make an id (DuckDB's ``json_type``, Spark's
#: ``schema_of_variant``)
SQL_ID_KINDS = ("VARCHAR", "BIGINT", "UBIGINT")
SPARK_ID_KINDS = ("STRING", "TINYINT", "SMALLINT", "INT", "BIGINT")


def _sql_test(test: Test, number: str, raw: str, text: bool, kind: str | None) -> str | None:
    if test.op == "not_an_id":
        return None if kind is None else f"{kind} NOT IN ({', '.join(map(_sql_lit, SQL_ID_KINDS))})"
    if test.op == "blank":
        # blank = only spaces (TRIM's set), all of which sort before '!': the cheap comparison spares TRIM
        # on every id (a third of the scan's time with 40-character ids)
        return f"({raw} IS NULL OR ({raw} < '!' AND TRIM({raw}) = ''))" if text else f"{raw} IS NULL"
    sql = {"missing": "{n} IS NULL", "not_finite": "NOT isfinite({n})", "not_whole": "{n} <> floor({n})",
           "below": "{n} < {a!r}", "above": "{n} > {a!r}"}
    if test.op == "not_in":
        return f"({number}) NOT IN ({', '.join(repr(v) for v in test.arg)})"  # type: ignore[union-attr]
    return sql[test.op].format(n=f"({number})", a=test.arg)


def sql_checks(rules: list[tuple[LogRule, bool]], names: dict[str, str], *, raw: Callable[[str], str],
               number: Callable[[str], str], is_text: Callable[[str], bool],
               kind: Callable[[str], str | None]) -> list[tuple[str, str]]:
    """``(condition, message)`` in DuckDB SQL per rule: ``raw(col)`` the column as read (text for a JSON
    field), ``number(col)`` its value as a DOUBLE (NULL where it is none), ``is_text(col)`` whether it is
    read as text, ``kind(col)`` the JSON type of a JSON field's value (None: no JSON field; a rule made
    of tests that do not apply is left out)."""
    out = []
    for rule, optional in rules:
        col = rule.column
        tests = [_sql_test(t, number(col) if t.op not in ("blank", "not_an_id") else "", raw(col), is_text(col),
                           kind(col)) for t in rule.tests]
        if not any(tests):
            continue
        cond = " OR ".join(t for t in tests if t)
        if optional:
            cond = f"{raw(col)} IS NOT NULL AND ({cond})"
        if rule.shows_value:
            shown = f"COALESCE('\"' || CAST({raw(col)} AS VARCHAR) || '\"', '(empty)')"
            message = f"{_sql_lit(names[col] + ' ')} || {shown} || {_sql_lit(' ' + rule.problem)}"
        else:
            message = _sql_lit(f"{names[col]} {rule.problem}")
        out.append((cond, message))
    return out


# --- Spark ----------------------------------------------------------------------------------------

def _spark_test(test: Test, number: Any, raw: Any, kind: Any) -> Any:
    from pyspark.sql import functions as F

    if test.op == "not_an_id":
        return None if kind is None else ~kind.isin(*SPARK_ID_KINDS)
    if test.op == "blank":
        return raw.isNull() | (F.trim(raw.cast("string")) == "")
    tests: dict[str, Callable[[], Any]] = {
        "missing": lambda: number.isNull(), "not_finite": lambda: F.isnan(number) | (F.abs(number) == float("inf")),
        "not_whole": lambda: number != F.floor(number), "below": lambda: number < test.arg,
        "above": lambda: number > test.arg, "not_in": lambda: ~number.isin(*test.arg)}  # type: ignore[misc]
    return tests[test.op]()


def spark_checks(rules: list[tuple[LogRule, bool]], names: dict[str, str], *, raw: Callable[[str], Any],
                 number: Callable[[str], Any], kind: Callable[[str], Any]) -> list[tuple[Any, Any]]:
    """``(condition, message)`` as Spark column expressions per rule (``raw``, ``number``, ``kind``: as
    for :func:`sql_checks`)."""
    from pyspark.sql import functions as F

    out = []
    for rule, optional in rules:
        col = rule.column
        cond = None
        for t in rule.tests:
            one = _spark_test(t, number(col) if t.op not in ("blank", "not_an_id") else None, raw(col), kind(col))
            if one is not None:
                cond = one if cond is None else cond | one
        if cond is None:
            continue
        if optional:
            cond = raw(col).isNotNull() & cond
        if rule.shows_value:
            shown = F.coalesce(F.concat(F.lit('"'), raw(col).cast("string"), F.lit('"')), F.lit("(empty)"))
            message = F.concat(F.lit(names[col] + " "), shown, F.lit(" " + rule.problem))
        else:
            message = F.lit(f"{names[col]} {rule.problem}")
        out.append((cond, message))
    return out


# --- NumPy (the compiled Parquet scan's first pass) -----------------------------------------------

def numpy_any_bad(rules: list[tuple[LogRule, bool]], *, number: Callable[[str], np.ndarray],
                  valid: Callable[[str], np.ndarray], any_blank: Callable[[str], bool]) -> bool:
    """Whether any row of a batch breaks one of ``rules`` (the scan only asks whether; DuckDB then names
    the row): ``number(col)`` the column as float64 (NaN for a null), ``valid(col)`` where it is not
    null, ``any_blank(col)`` whether a value is blank. :data:`NOT_AN_ID` is JSON's and not checked here."""
    for rule, optional in rules:
        keep = valid(rule.column) if optional else None
        for t in rule.tests:
            if t.op == "not_an_id":
                continue
            if t.op == "blank":
                if any_blank(rule.column):
                    return True
                continue
            v = number(rule.column)
            v = v[keep] if keep is not None else v
            with np.errstate(invalid="ignore"):
                hit = _numpy_test(t, v)
            if np.any(hit):
                return True
    return False


_NUMPY_TESTS: dict[str, Callable[[np.ndarray, Any], Any]] = {
    "missing": lambda v, _: np.isnan(v), "not_finite": lambda v, _: ~np.isfinite(v),
    "not_whole": lambda v, _: v != np.floor(v), "below": lambda v, a: v < a, "above": lambda v, a: v > a,
    "not_in": lambda v, a: ~np.isin(v, a),
}


def _numpy_test(test: Test, v: np.ndarray) -> np.ndarray:
    return np.asarray(_NUMPY_TESTS[test.op](v, test.arg), dtype=bool)


def value_problem(column: str, value: float | None) -> str | None:
    """The problem of the first rule of :data:`LOG_RULES` that one numeric ``value`` of ``column`` breaks
    (None: not a number), or None: the posted events' check (:mod:`ndcg_labeling.online.live`)."""
    v = np.array([np.nan if value is None else value], dtype=np.float64)
    for rule in LOG_RULES:
        if rule.column == column and any(
                _numpy_test(t, v).any() for t in rule.tests if t.op not in ("blank", "not_an_id")):
            return rule.problem
    return None
