"""Properties of the import -> consensus -> report path (hypothesis), on SQLite and PostgreSQL:
- any valid judgments file round-trips through `import judgments` and `export qrels` unchanged;
- shuffling the rows of every input file changes no report value."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import BACKENDS, Database, invoke

IDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1, max_size=8)
PROPERTY_SETTINGS = settings(max_examples=12, deadline=None,
                             suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


class FreshDatabases:
    """A new migrated database per hypothesis example (the pytest fixtures live once per test)."""

    def __init__(self, backend: str, tmp_path: Path) -> None:
        self.backend, self.tmp_path, self.n, self.made = backend, tmp_path, 0, []

    def new(self) -> Database:
        self.n += 1
        folder = self.tmp_path / f"ex{self.n}"
        folder.mkdir()
        db = Database(self.backend, folder, migrated=True)
        self.made.append(db)
        return db

    def drop_all(self) -> None:
        for db in self.made:
            db.drop()
        self.made = []


@pytest.fixture(params=BACKENDS)
def fresh(request, tmp_path):
    dbs = FreshDatabases(request.param, tmp_path)
    yield dbs
    dbs.drop_all()


judgment_sets = st.dictionaries(keys=st.tuples(IDS, IDS), values=st.integers(0, 3), min_size=1, max_size=25)


@PROPERTY_SETTINGS
@given(judgments=judgment_sets)
def test_judgments_round_trip_through_export_qrels(fresh, runner, judgments):
    db = fresh.new()
    try:
        path = fresh.tmp_path / f"j{fresh.n}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(["query_id", "doc_id", "grader", "grade"])
            for (q, d), g in judgments.items():
                writer.writerow([q, d, "ann", g])
        assert invoke(runner, db, "import", "judgments", str(path), "--scale", "0-3", "--create-graders").exit_code == 0
        result = invoke(runner, db, "consensus", "--method", "median", "--min-graders", "1")
        assert result.exit_code == 0, result.output
        out = fresh.tmp_path / f"q{fresh.n}.txt"
        assert invoke(runner, db, "export", "qrels", "--out", str(out)).exit_code == 0
        rows = [line.split() for line in out.read_text().splitlines()]
        assert {(q, d): int(rel) for q, _zero, d, rel in rows} == judgments
        assert all(zero == "0" for _q, zero, _d, _r in rows)
        assert len(rows) == len(judgments)
    finally:
        fresh.drop_all()


@st.composite
def pipelines(draw):
    """Runs of two systems and graded judgments over a few queries, as lists of file rows."""
    queries = draw(st.lists(IDS, min_size=1, max_size=4, unique=True))
    docs = draw(st.lists(IDS, min_size=2, max_size=8, unique=True))
    run_rows = []
    for system in ("sysA", "sysB"):
        for q in queries:
            chosen = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=len(docs), unique=True))
            for rank, d in enumerate(chosen, start=1):
                run_rows.append((system, q, d, rank))
    judged = draw(st.lists(st.tuples(st.sampled_from(queries), st.sampled_from(docs)), min_size=1, max_size=12, unique=True))
    judgment_rows = [(q, d, grader, draw(st.integers(0, 3))) for q, d in judged for grader in ("ann", "bob", "cy")]
    seed = draw(st.integers(0, 2**32 - 1))
    return run_rows, judgment_rows, seed


def _load(runner, db, folder: Path, run_rows, judgment_rows) -> str:
    for system in ("sysA", "sysB"):
        path = folder / f"{system}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(["query_id", "doc_id", "rank"])
            writer.writerows((q, d, r) for s, q, d, r in run_rows if s == system)
        assert invoke(runner, db, "import", "run", str(path), "--system", system).exit_code == 0
    path = folder / "judgments.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["query_id", "doc_id", "grader", "grade"])
        writer.writerows(judgment_rows)
    assert invoke(runner, db, "import", "judgments", str(path), "--scale", "0-3", "--create-graders").exit_code == 0
    assert invoke(runner, db, "consensus", "--method", "median").exit_code == 0
    report = invoke(runner, db, "report", "--per-query", "--format", "csv", "--empty", "zero")
    assert report.exit_code == 0, report.output
    return report.stdout


def _values(report_csv: str) -> dict[tuple[str, str, str], str]:
    return {(r["system"], r["query_id"], r["metric"]): r["value"] for r in csv.DictReader(io.StringIO(report_csv))}


@PROPERTY_SETTINGS
@given(case=pipelines())
def test_shuffling_input_rows_changes_no_report_value(fresh, runner, case):
    import random

    run_rows, judgment_rows, seed = case
    rng = random.Random(seed)
    shuffled_run, shuffled_judgments = run_rows[:], judgment_rows[:]
    rng.shuffle(shuffled_run)
    rng.shuffle(shuffled_judgments)
    try:
        a, b = fresh.new(), fresh.new()
        folder_a, folder_b = fresh.tmp_path / f"a{fresh.n}", fresh.tmp_path / f"b{fresh.n}"
        folder_a.mkdir()
        folder_b.mkdir()
        plain = _values(_load(runner, a, folder_a, run_rows, judgment_rows))
        mixed = _values(_load(runner, b, folder_b, shuffled_run, shuffled_judgments))
        assert plain, "the report scored nothing"
        assert plain == mixed
    finally:
        fresh.drop_all()
