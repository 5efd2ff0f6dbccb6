"""``ndcg-labeling serve`` refuses a database that is not at head with one ``Error:`` line."""

from __future__ import annotations

from tests.conftest import invoke


def test_serve_needs_a_database_at_head(runner, tmp_path):
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    result = invoke(runner, None, "serve", "--db", url, "--port", "1")
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: the database") and "db upgrade" in lines[0]
