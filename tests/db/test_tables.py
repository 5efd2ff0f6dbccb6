"""``db.tables`` (the Core clauses of the light commands' reads) names only tables and columns that the
models define, each with the model column's type, so it cannot drift from the schema."""

from __future__ import annotations

import subprocess
import sys

from sqlalchemy.sql.expression import TableClause

from ndcg_labeling.db import tables
from ndcg_labeling.db.base import Base
from ndcg_labeling.db.models import Grader  # noqa: F401  (registers every model on Base.metadata)


def test_every_table_and_column_is_the_models():
    for clause in tables.ALL:
        model_table = Base.metadata.tables[clause.name]
        for col in clause.columns:
            assert col.name in model_table.columns, f"{clause.name}.{col.name}"
            model_type = model_table.columns[col.name].type
            assert isinstance(model_type, type(col.type)), f"{clause.name}.{col.name}: {col.type!r} vs {model_type!r}"
            assert col.type._type_affinity is model_type._type_affinity, f"{clause.name}.{col.name}"


def test_every_clause_is_listed():
    clauses = {name for name, value in vars(tables).items() if isinstance(value, TableClause)}
    assert clauses == {t.name for t in tables.ALL}


def test_the_module_needs_no_orm():
    code = "import sys, ndcg_labeling.db.tables; print('sqlalchemy.orm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
