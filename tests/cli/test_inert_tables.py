"""Tables printed for leads show the data as it is: Rich markup and escape sequences in names stay
literal text (``render_rows`` hands Rich ``Text`` cells, never markup strings)."""

from __future__ import annotations

from tests.conftest import invoke


def test_graders_list_table_prints_markup_in_names_literally(runner, sqlite_db):
    name = "[red]eve[/red]"
    assert invoke(runner, sqlite_db, "graders", "add", name).exit_code == 0
    result = invoke(runner, sqlite_db, "graders", "list", "--format", "table")
    assert result.exit_code == 0, result.output
    assert name in result.stdout
    assert "\x1b" not in result.stdout
