"""The PostgreSQL bulk write without foreign-key triggers is an optimisation for roles that may set
``session_replication_role``; a plain role (no superuser, as a team's application user usually is)
takes the ordinary path with the triggers. Both must store the same rows."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from sqlalchemy import text

from ndcg_labeling.db import migrate
from ndcg_labeling.db.session import make_engine, session_scope
from ndcg_labeling.labels.importing import add_graders, import_judgments, import_run
from tests.conftest import PG_URL


@pytest.fixture
def plain_role_url():
    if not PG_URL:
        pytest.skip("NDCG_LABELING_TEST_PG_URL is not set")
    role, schema = f"plain_{uuid.uuid4().hex[:10]}", f"t_{uuid.uuid4().hex[:12]}"
    admin = make_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE ROLE "{role}" LOGIN NOSUPERUSER'))
        conn.execute(text(f'CREATE SCHEMA "{schema}" AUTHORIZATION "{role}"'))
    url = make_engine(PG_URL).url.set(username=role).render_as_string(hide_password=False)
    sep = "&" if "?" in url else "?"
    yield f"{url}{sep}options=-csearch_path%3D{schema}", role
    with admin.begin() as conn:
        conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        conn.execute(text(f'DROP ROLE IF EXISTS "{role}"'))
    admin.dispose()


def test_plain_role_imports_through_the_foreign_key_triggers(plain_role_url, tmp_path: Path):
    url, role = plain_role_url
    engine = make_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")).scalar_one() is False
        with pytest.raises(Exception, match="permission denied"):
            conn.execute(text("SET LOCAL session_replication_role = replica"))
    migrate.upgrade(engine)
    n = 3_000  # above the size where the bulk path would try to drop the triggers
    judgments = tmp_path / "j.csv"
    judgments.write_text("query_id,doc_id,grader,grade\n" + "".join(
        f"q{i % 50},d{i},g{i % 3},{i % 4}\n" for i in range(n)))
    run = tmp_path / "run.txt"
    run.write_text("".join(f"q{i // 100} Q0 d{i} {i % 100 + 1} {1000 - i % 100} t\n" for i in range(n)))
    with session_scope(engine) as session:
        add_graders(["g0", "g1", "g2"], session=session)
        import_judgments(judgments, scale="0-3", session=session)
        import_run(run, system="s", session=session)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM judgments")).scalar_one() == n
        assert conn.execute(text("SELECT count(*) FROM ranking_entries")).scalar_one() == n
        # every stored row references existing rows (the triggers ran; nothing was skipped)
        orphans = conn.execute(text(
            "SELECT count(*) FROM judgments j LEFT JOIN documents d ON d.id = j.document_id "
            "LEFT JOIN queries q ON q.id = j.query_id WHERE d.id IS NULL OR q.id IS NULL")).scalar_one()
        assert orphans == 0
        sums = conn.execute(text("SELECT sum(grade) FROM judgments")).scalar_one()
        assert sums == sum(i % 4 for i in range(n))
    engine.dispose()
