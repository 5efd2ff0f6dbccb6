"""The DuckDB log engine: impression logs aggregated in place (embedded, out of core).

Reads Parquet (a file, a folder of Parquet files, a glob), CSV, TSV and JSONL with DuckDB's own
readers; nothing is copied row by row anywhere: two SQL passes over the files, both streaming, with a
memory limit (:data:`MEMORY_LIMIT`) and a temporary folder to spill to. The big one groups on a 64-bit
hash of (query, document) (:data:`HASHED_KEY`), never on the ids as text (with 40-character document
ids, 20M (pair, position) cells keyed by text need several GB):

1. **pairs**: one row per (query, document) (2M rows for 100M impressions), the window's span of
   ``ts``, and a count of bad rows (a cheap boolean per row); the pairs are numbered in the text order
   of their ids, with their key. When a row is bad, the exact validation finds the first one and
   raises ``InputFileError`` naming the file and the line (CSV/TSV: the data row + 1 for the header,
   JSONL: the line; Parquet: ``row N``, the 0-based row index in the file);
2. **aggregate** the window per (pair key, position) (and, for the DBN, per served list's click
   pattern), join the pair numbers on the integer key, and hand over the arrays of
   :mod:`ndcg_labeling.behavior.counts` sorted by (pair, position).
"""

from __future__ import annotations

import glob
import tempfile
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ndcg_labeling.behavior.counts import CellCounts, SessionPatterns, narrow_positions
from ndcg_labeling.engines.base import (
    LogAggregates,
    LogRequest,
    bad_rows_message,
    duplicate_position_message,
    first_bad_log_id,
    id_type_problem,
)
from ndcg_labeling.engines.rules import LogRule, active_rules, sql_checks
from ndcg_labeling.errors import InputFileError, NdcgLabelingError

MEMORY_LIMIT = "1500MB"
#: DuckDB's limit while the cells stream into NumPy arrays (the two share the process's 2 GB)
FETCH_MEMORY_LIMIT = "600MB"
#: the pair key the aggregation groups and joins on: a 64-bit hash of (query, document), so it never
#: carries the ids as text; when two pairs of a log share a hash (checked on the pairs: about 1e-7 for
#: 2M pairs) the exact key (the two ids) is used instead
HASHED_KEY = "hash(query_id, doc_id)"
EXACT_KEY = "{'q': query_id, 'd': doc_id}"
FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv", ".tab": "tsv",
           ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}
ID_COLUMNS = ("request_id", "query_id", "doc_id")
_TIME_TYPES = ("TIMESTAMP", "DATE")
_INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                  "UBIGINT")
_NUMERIC_TYPES = (*_INTEGER_TYPES, "FLOAT", "DOUBLE", "DECIMAL")


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def resolve_sources(sources: tuple[str, ...]) -> dict[str, list[str]]:
    """``format -> files``: each source is a file, a folder (its Parquet files, recursively) or a glob.
    A file reached twice (named twice, or by a file and a folder or glob that holds it) is refused: its
    impressions would count twice; so is a CSV/TSV header naming a column twice (:func:`check_header`)."""
    out: dict[str, list[str]] = {}
    seen: dict[Path, str] = {}
    for source in sources:
        path = Path(source)
        if any(ch in source for ch in "*?["):
            files = sorted(f for f in glob.glob(source, recursive=True) if Path(f).is_file())
        elif path.is_dir():
            files = sorted(str(f) for f in path.rglob("*") if f.suffix.lower() in (".parquet", ".pq"))
        elif path.is_file():
            files = [source]
        else:
            raise InputFileError(source, "no such file or folder")
        if not files:
            raise InputFileError(source, "no log files found there")
        for f in files:
            fmt = FORMATS.get(Path(f).suffix.lower())
            if fmt is None:
                raise InputFileError(f, "unknown log format: use .parquet, .csv, .tsv or .jsonl")
            real = Path(f).resolve()
            if real in seen:
                again = f"again as {f}" if f != seen[real] else "twice"
                raise InputFileError(seen[real], f"this log file is given {again}: its impressions would count twice")
            seen[real] = f
            if fmt in ("csv", "tsv"):
                check_header(f, "\t" if fmt == "tsv" else ",")
            out.setdefault(fmt, []).append(f)
    return out


def check_header(file: str, delimiter: str) -> None:
    """``InputFileError`` naming ``file``'s line 1 when its header names a column twice (a reader would
    rename one of them and read the other silently)."""
    import csv

    try:
        with open(file, newline="", encoding="utf-8", errors="replace") as handle:
            header = next(csv.reader(handle, delimiter=delimiter), [])
    except (OSError, csv.Error):
        return  # the reader says what is wrong with the file
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise InputFileError(file, f"the header names the column {name!r} twice", line=1)
        seen.add(name)


def _reader(fmt: str, files: list[str], names: list[str], ids: Collection[str] = ()) -> str:
    """The DuckDB table function reading ``files``; JSON Lines: the columns ``names`` as text, the ``ids``
    as JSON (so that an object, an array or a fraction in an id field is seen as one)."""
    listed = "[" + ", ".join(_lit(f) for f in files) + "]"
    if fmt == "parquet":
        return f"read_parquet({listed}, filename=true, file_row_number=true, union_by_name=true)"
    if fmt in ("csv", "tsv"):
        delim = "\\t" if fmt == "tsv" else ","
        return (f"read_csv({listed}, all_varchar=true, header=true, delim=E'{delim}', quote='\"', filename=true, "
                f"union_by_name=true)")
    cols = "{" + ", ".join(f"{_lit(n)}: '{'JSON' if n in ids else 'VARCHAR'}'" for n in names) + "}"
    return f"read_json({listed}, format='newline_delimited', columns={cols}, filename=true)"


@contextmanager
def connection(groups: dict[str, list[str]]) -> Iterator[Any]:
    """A DuckDB connection for reading the logs of ``groups``: within :data:`MEMORY_LIMIT`, spilling into
    a temporary folder, in UTC, without DuckDB's progress bar (it would print on stdout, into
    ``--format json``; the CLI shows a spinner on stderr). A DuckDB error inside becomes one
    ``NdcgLabelingError`` naming the files and the error's first line."""
    import duckdb

    with tempfile.TemporaryDirectory(prefix="ndcg-duckdb-") as tmp:
        con = duckdb.connect(config={"memory_limit": MEMORY_LIMIT, "temp_directory": tmp})
        try:
            con.execute("SET TimeZone = 'UTC'")
            con.execute("SET enable_progress_bar = false")
            con.execute("SET preserve_insertion_order = false")  # less memory for the big tables; ORDER BY still holds
            yield con
        except duckdb.Error as exc:
            files = ", ".join(f for fs in groups.values() for f in fs)
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise NdcgLabelingError(f"{files}: cannot read the log: {detail}") from None
        finally:
            con.close()


def _fetch_columns(relation: Any) -> dict[str, np.ndarray]:
    """The result of ``relation`` as one NumPy array per column, read in batches of 1M rows (NULL: NaN)."""
    chunks: dict[str, list[np.ndarray]] = {}
    for batch in relation.to_arrow_reader(1 << 20):
        for name, column in zip(batch.schema.names, batch.columns, strict=True):
            values = column.to_numpy(zero_copy_only=False)
            chunks.setdefault(name, []).append(values)
    out = {}
    for name in [str(n) for n in relation.columns]:  # one column at a time: its batches are freed as it is joined
        parts = chunks.pop(name, [])
        out[name] = np.concatenate(parts) if parts else np.zeros(0)
        del parts
    return out


class DuckDBEngine:
    """:class:`~ndcg_labeling.engines.base.LogEngine` over DuckDB."""

    name = "duckdb"
    #: rules checked before the log's (:mod:`.rules`; the online reader's ``arm``)
    first_rules: tuple[LogRule, ...] = ()

    def __init__(self, compiled_scan: bool | None = None) -> None:
        #: whether typed Parquet logs go through :mod:`.parquet_scan`: None (default) from
        #: :data:`~.parquet_scan.MIN_ROWS` rows on, True wherever it applies, False never (SQL only)
        self.compiled_scan = compiled_scan

    def aggregate(self, request: LogRequest) -> LogAggregates:
        groups = resolve_sources(request.sources)
        request.check_mapping()
        if self.compiled_scan is not False and set(groups) == {"parquet"}:
            from ndcg_labeling.engines import parquet_scan  # the same result, faster on large logs

            if self.compiled_scan or parquet_scan.rows(groups["parquet"]) >= parquet_scan.MIN_ROWS:
                scanned = parquet_scan.aggregate(request, groups["parquet"])
                if scanned is not None:
                    return scanned
        with connection(groups) as con:
            watched = self._create_views(con, groups, request)
            n_bad, first, last = self._pairs(con, request)
            if n_bad:
                self._validate(con, groups, request)  # raises, naming the first bad row
            key = self._number_pairs(con)
            as_of = request.as_of if request.as_of is not None else last
            result = self._aggregate(con, request, groups, key, watched, first, last, as_of)
            bad_id = first_bad_log_id(result.query_ids, result.doc_ids, request.source_names())
            if bad_id is not None:  # checked on the distinct ids; the row is looked for on this path only
                column, value, problem = bad_id
                raise self._nth_row(con, f"CAST({column} AS VARCHAR) = ?", [value], bad_rows_message(problem, 1))
            return result

    # --- the normalized view -------------------------------------------------------------------
    def _create_views(self, con: Any, groups: dict[str, list[str]], request: LogRequest) -> bool:
        """The ``logs`` view over every source; returns whether any source has a ``watch_ratio`` column."""
        names = request.source_names()
        parts, watched = [], False
        for i, (fmt, files) in enumerate(sorted(groups.items())):
            reader = _reader(fmt, files, sorted(set(names.values())), {names[c] for c in ID_COLUMNS})
            types = {str(r[0]): str(r[1]).upper() for r in con.execute(f"DESCRIBE SELECT * FROM {reader}").fetchall()}
            request.check_columns(files[0], types)
            self._check_id_types(con, fmt, files, names, types)
            watched = watched or names["watch_ratio"] in types
            con.execute(f"CREATE TEMP VIEW src{i} AS SELECT * FROM {reader}")
            parts.append(self._normalized(f"src{i}", fmt, names, types, request, native_ids=len(groups) == 1))
        con.execute("CREATE TEMP VIEW logs AS " + " UNION ALL ".join(parts))
        return watched

    @staticmethod
    def _check_id_types(con: Any, fmt: str, files: list[str], names: dict[str, str], types: dict[str, str]) -> None:
        """Ids stored as text or integers only: a float column (``1.5``), a date or a struct is no id
        (as the importers refuse it). Each Parquet file of a folder or glob is asked for its own types
        (from its footer): reading them together makes a float column of one file text."""
        per_file = [(f, types) for f in files[:1]]
        if fmt == "parquet" and len(files) > 1:
            per_file = [(f, {str(r[0]): str(r[1]).upper() for r in con.execute(
                f"DESCRIBE SELECT * FROM {_reader(fmt, [f], [])}").fetchall()}) for f in files]
        for file, kinds in per_file:
            for col in ("query_id", "doc_id"):
                kind = kinds.get(names[col], "VARCHAR")
                if not (kind.startswith("VARCHAR") or kind == "JSON" or kind in _INTEGER_TYPES):
                    raise InputFileError(file, id_type_problem(names[col], kind))

    def _normalized(self, src: str, fmt: str, names: dict[str, str], types: dict[str, str],
                    request: LogRequest, *, native_ids: bool) -> str:
        """One source's rows in our names and types, with ``problem`` (NULL for a good row). Ids keep
        their own type when there is one source format (grouping integers is faster than text);
        they become text in the pairs table."""
        def is_json(col: str) -> bool:
            return types.get(names[col]) == "JSON"

        def raw(col: str) -> str:
            if names[col] not in types:
                return "NULL"
            return f"({src}.{_q(names[col])} ->> '$')" if is_json(col) else f"{src}.{_q(names[col])}"

        def is_text(col: str) -> bool:
            return is_json(col) or types.get(names[col], "VARCHAR").startswith("VARCHAR")

        def ident(col: str) -> str:
            keep = native_ids and not is_text(col)
            return raw(col) if keep else f"CAST({raw(col)} AS VARCHAR)"

        ts_type = types.get(names["ts"], "VARCHAR")
        if ts_type.startswith(_TIME_TYPES):
            ts = f"epoch({raw('ts')})"
        elif ts_type.startswith(_NUMERIC_TYPES):
            ts = f"CAST({raw('ts')} AS DOUBLE)"
        else:
            ts = f"COALESCE(TRY_CAST({raw('ts')} AS DOUBLE), epoch(TRY_CAST({raw('ts')} AS TIMESTAMPTZ)))"
        row = {"parquet": "file_row_number", "jsonl": "NULL", "csv": "NULL", "tsv": "NULL"}[fmt]
        pos, clk = f"TRY_CAST({raw('position')} AS DOUBLE)", f"TRY_CAST({raw('clicked')} AS DOUBLE)"
        wr = f"TRY_CAST({raw('watch_ratio')} AS DOUBLE)"
        def number(col: str) -> str:
            return ts if col == "ts" else f"TRY_CAST({raw(col)} AS DOUBLE)"

        def kind(col: str) -> str | None:  # JSON Lines: the JSON type of an id field's value
            return f"json_type({src}.{_q(names[col])})" if is_json(col) else None

        checks = sql_checks(active_rules(request, types, first=self.first_rules), names, raw=raw, number=number,
                            is_text=is_text, kind=kind)
        problem = "CASE " + " ".join(f"WHEN {cond} THEN {message}" for cond, message in checks) + " END"
        # bad: whether any check holds (the same conditions, without building the message)
        bad = "COALESCE(" + " OR ".join(f"({cond})" for cond, _ in checks) + ", FALSE)"
        return (f"SELECT filename AS _file, {row} AS _row, {_lit(fmt)} AS _fmt, {problem} AS problem, {bad} AS bad, "
                f"{ident('request_id')} AS request_id, {ident('query_id')} AS query_id, "
                f"{ident('doc_id')} AS doc_id, TRY_CAST({pos} AS BIGINT) AS position, "
                f"TRY_CAST({clk} AS INTEGER) AS clicked, {ts} AS ts, {wr} AS watch_ratio FROM {src}")

    # --- the exact validation: where the first bad row is (the error path) --------------------------
    def _validate(self, con: Any, groups: dict[str, list[str]], request: LogRequest) -> None:
        bad, bad_file = con.execute("SELECT count(*) FILTER (WHERE problem IS NOT NULL), "
                                    "min(_file) FILTER (WHERE problem IS NOT NULL) FROM logs").fetchone()
        if bad:
            self._check_file_columns(con, str(bad_file), request)
            raise self._first_bad(con, str(bad_file), int(bad))

    @staticmethod
    def _check_file_columns(con: Any, file: str, request: LogRequest) -> None:
        """A file of a folder or glob without a required column (the others have it): its name, not
        "empty" rows (reading by name fills the column with NULL there)."""
        fmt = FORMATS[Path(file).suffix.lower()]
        names = request.source_names()
        reader = _reader(fmt, [file], sorted(set(names.values())), {names[c] for c in ID_COLUMNS})
        request.check_columns(file, {str(r[0]) for r in con.execute(f"DESCRIBE SELECT * FROM {reader}").fetchall()})

    def _first_bad(self, con: Any, file: str, n_bad: int) -> InputFileError:
        path, line, problem = self._row_at(con, file, "problem IS NOT NULL", [], column="problem")
        return InputFileError(path, bad_rows_message(str(problem), n_bad), line)

    def _nth_row(self, con: Any, cond: str, params: list[Any], problem: str, nth: int = 1) -> InputFileError:
        """The error ``problem`` at the ``nth`` row of the logs (files in name order, rows in file order)
        where the SQL ``cond`` (with ``params``) holds: a rule checked on aggregates (an id, a served
        list) names a row too. The error path only: a scan or two of the logs."""
        found = con.execute(f"SELECT _file, count(*) FROM logs WHERE {cond} GROUP BY _file ORDER BY _file",
                            params).fetchall()
        for file, n in found:
            if nth <= n:
                path, line, _ = self._row_at(con, str(file), cond, params, nth=nth)
                return InputFileError(path, problem, line)
            nth -= n
        return InputFileError(", ".join(str(f) for f, _ in found) or "(logs)", problem)  # pragma: no cover

    @staticmethod
    def _row_at(con: Any, file: str, cond: str, params: list[Any], nth: int = 1,
                column: str = "NULL") -> tuple[str, int | None, Any]:
        """``(path, line, value)``: where the ``nth`` row of ``file`` with ``cond`` is (CSV/TSV: its line,
        the header being line 1; JSONL: its line; Parquet: ``FILE:row N``, N 0-based, and no line) and
        its value of ``column``."""
        fmt = FORMATS[Path(file).suffix.lower()]
        if fmt == "parquet":
            row, value = con.execute(f"SELECT _row, {column} FROM logs WHERE _file = ? AND {cond} ORDER BY _row "
                                     f"LIMIT 1 OFFSET {int(nth) - 1}", [file, *params]).fetchone()
            return f"{file}:row {int(row)}", None, value
        # scan order is file order (preserve_insertion_order, one thread): count rows up to the nth hit
        con.execute("SET threads = 1")
        con.execute("SET preserve_insertion_order = true")
        result = con.execute(f"SELECT COALESCE({cond}, FALSE), {column} FROM logs WHERE _file = ?", [*params, file])
        seen, header = 0, 1 if fmt in ("csv", "tsv") else 0
        while chunk := result.fetchmany(65_536):
            for k, (hit, value) in enumerate(chunk):
                nth -= 1 if hit else 0
                if hit and nth == 0:
                    return file, seen + k + 1 + header, value
            seen += len(chunk)
        return file, None, None  # pragma: no cover - counted above, so found there

    @staticmethod
    def _window(request: LogRequest, as_of: float | None) -> str:
        # the times are finite floats of the years 1 to 9999 (LogRequest checks them; ``as_of`` is a log's
        # own ts): a float's repr is a plain SQL number, never text of the user's
        return " AND ".join(["TRUE", *(f"ts {op} {value!r}" for op, value in request.bounds(as_of))])

    # --- pass 1: the pairs, the window's span, a count of bad rows --------------------------------
    def _pairs(self, con: Any, request: LogRequest) -> tuple[int, float | None, float | None]:
        """Scan 1: one row per (query, document) (``dict``: 2M rows for 100M impressions) with its
        impressions in the window, the number of bad rows (counted only: the message is built when there
        is one) and the window's span of ``ts``."""
        con.execute(
            "CREATE TEMP TABLE dict AS SELECT query_id, doc_id, count(*) FILTER (WHERE bad) AS n_bad, "
            f"count(*) FILTER (WHERE {self._window(request, request.as_of)}) AS n_win, "
            f"min(ts) FILTER (WHERE {self._window(request, None)}) AS first, "
            f"max(ts) FILTER (WHERE {self._window(request, None)}) AS last FROM logs GROUP BY query_id, doc_id")
        n_bad, first, last = con.execute("SELECT sum(n_bad), min(first), max(last) FROM dict").fetchone()
        return int(n_bad or 0), first, last

    @staticmethod
    def _number_pairs(con: Any) -> str:
        """``pairs``: the pairs of the window numbered in the text order of their ids (the order the other
        engines give too), with their key; returns the key expression (:data:`HASHED_KEY`, or
        :data:`EXACT_KEY` when two pairs share a hash)."""
        for key in (HASHED_KEY, EXACT_KEY):
            con.execute("DROP TABLE IF EXISTS pairs")
            con.execute(f"CREATE TEMP TABLE pairs AS SELECT {key} AS k, CAST(row_number() OVER (ORDER BY qs, ds) - 1 "
                        "AS INTEGER) AS pair, qs, ds FROM (SELECT query_id, doc_id, CAST(query_id AS VARCHAR) AS qs, "
                        "CAST(doc_id AS VARCHAR) AS ds FROM dict WHERE n_win > 0)")
            n, distinct = con.execute("SELECT count(*), count(DISTINCT k) FROM pairs").fetchone()
            if n == distinct:
                break
        con.execute("DROP TABLE dict")
        return key

    # --- pass 2: aggregation ---------------------------------------------------------------------
    def _aggregate(self, con: Any, request: LogRequest, groups: dict[str, list[str]], key: str, watched: bool,
                   first: float | None, last: float | None, as_of: float | None) -> LogAggregates:
        window = self._window(request, as_of)
        if request.half_life_s is not None and as_of is not None:
            weight = f"pow(0.5, ({float(as_of)!r} - ts) / {float(request.half_life_s)!r})"
        else:
            weight = "CAST(1.0 AS DOUBLE)"  # a bare 1.0 is a DECIMAL: its sums would arrive as Python objects
        con.execute(f"CREATE TEMP VIEW win AS SELECT {key} AS k, request_id, position, clicked, watch_ratio, "
                    f"{weight} AS w FROM logs WHERE {window}")
        ids = con.sql("SELECT qs, ds FROM pairs ORDER BY pair").to_arrow_table()
        n_pairs = ids.num_rows
        # streamed in batches into NumPy (no second copy of 20M cells inside DuckDB), with less memory for
        # DuckDB meanwhile: its sort spills to the temporary folder instead of sharing RAM with the arrays
        con.execute(f"SET memory_limit = '{FETCH_MEMORY_LIMIT}'")
        arr = _fetch_columns(con.sql(
            f"SELECT p.pair, c.position, c.n, c.c, c.nw, c.cw{', c.ww' if watched else ''} FROM ("
            "SELECT k, position, CAST(count(*) AS INTEGER) AS n, CAST(count(*) FILTER (WHERE clicked = 1) AS INTEGER) AS c, "
            f"sum(w) AS nw, sum(w * clicked) AS cw{', sum(w * watch_ratio) AS ww' if watched else ''} FROM win "
            "GROUP BY k, position) c JOIN pairs p USING (k) ORDER BY p.pair, c.position"))  # EM sums: fixed order
        n_cells = len(arr["pair"])
        if watched:
            ww = np.asarray(arr["ww"], dtype=np.float64)
        else:  # no watch_ratio anywhere: NaN for every cell, without the memory
            ww = np.broadcast_to(np.float64(np.nan), (n_cells,))
        cells = CellCounts(pair=np.asarray(arr["pair"], np.int32), position=narrow_positions(arr["position"]),
                           impressions=arr["n"], clicks=arr["c"], weight=np.asarray(arr["nw"], np.float64),
                           weighted_clicks=np.asarray(arr["cw"], np.float64), weighted_watch=ww, n_pairs=n_pairs)
        del arr
        n_imp = int(np.sum(cells.impressions)) if n_cells else 0
        sessions, n_requests = self._sessions(con, window) if request.sessions and n_pairs else (None, None)
        return LogAggregates(query_ids=ids.column("qs").to_pylist(), doc_ids=ids.column("ds").to_pylist(), cells=cells,
                             sessions=sessions, as_of=as_of, n_impressions=n_imp, n_requests=n_requests,
                             first_ts=first, last_ts=last, files=[f for fs in groups.values() for f in fs])

    def _sessions(self, con: Any, window: str) -> tuple[SessionPatterns, int]:
        con.execute(
            "CREATE TEMP TABLE patterns AS SELECT CAST(row_number() OVER (ORDER BY lp, lpos, lc) - 1 AS BIGINT) AS sid, * FROM ("
            "SELECT lp, lpos, lc, sum(w) AS w, count(*) AS n, any_value(request_id) AS rid FROM ("
            "SELECT request_id, list(p.pair ORDER BY position) AS lp, list(position ORDER BY position) AS lpos, "
            "list(clicked ORDER BY position) AS lc, avg(w) AS w FROM win JOIN pairs p USING (k) "
            "GROUP BY request_id) GROUP BY lp, lpos, lc)")
        dup = con.execute("SELECT rid, lpos FROM patterns WHERE len(list_distinct(lpos)) < len(lpos) LIMIT 1").fetchone()
        if dup is not None:  # named at the request's second row at that position (the error path only)
            position = next(p for p in dup[1] if dup[1].count(p) > 1)
            raise self._nth_row(con, f"CAST(request_id AS VARCHAR) = ? AND position = ? AND {window}",
                                [str(dup[0]), int(position)], duplicate_position_message(dup[0], dup[1]), nth=2)
        head = con.execute("SELECT sid, w, n FROM patterns ORDER BY sid").fetchnumpy()
        flat = con.execute("SELECT sid, unnest(lp) AS pair, unnest(lpos) AS pos, unnest(lc) AS c FROM patterns").fetchnumpy()
        n_s, k = len(head["sid"]), int(np.max(flat["pos"]))
        pairs = np.full((n_s, k), -1, dtype=np.int64)
        clicks = np.zeros((n_s, k), dtype=np.int8)
        sid, pos = np.asarray(flat["sid"], np.int64), np.asarray(flat["pos"], np.int64) - 1
        pairs[sid, pos] = np.asarray(flat["pair"], np.int64)
        clicks[sid, pos] = np.asarray(flat["c"], np.int8)
        count = np.asarray(head["n"], np.int64)
        return SessionPatterns(pairs=pairs, clicks=clicks, weight=np.asarray(head["w"], np.float64), count=count), \
            int(count.sum())
