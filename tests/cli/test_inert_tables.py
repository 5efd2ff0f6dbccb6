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


def test_a_table_written_to_a_pipe_is_plain_aligned_text_with_nothing_cut():
    import unicodedata

    from ndcg_labeling.reports.rows import plain_table

    long = "a query id far longer than any terminal's column would allow, kept whole"
    rows = [{"query_id": long, "grade": 3, "spread": 0.5, "grader": "\x1b[2Jeve"},
            {"query_id": "q2", "grade": 12, "spread": None, "grader": "日本語の名前"}]
    text = plain_table(rows, ["query_id", "grade", "spread", "grader"], title="2 items")
    lines = text.splitlines()
    assert lines[0] == "2 items" and len(lines) == 5  # title, header, rule, one line per row

    def cols(line: str) -> int:  # display columns, as a terminal counts them
        return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)

    rule = lines[2].split("  ")
    starts = [sum(len(r) + 2 for r in rule[:i]) for i in range(len(rule))]
    for line in (lines[1], lines[3]):  # every column starts where the rule's does
        assert all(line[s - 2:s] == "  " for s in starts[1:])
    assert long in lines[3] and "\x1b" not in text and "\\x1b[2Jeve" in lines[3]
    assert lines[3].split()[-3:-1] == ["3", "0.5000"] and lines[4].split()[1] == "12"
    assert lines[4].index("12") + 2 == lines[3].index(" 3") + 2 == starts[1] + len(rule[1])  # numbers right-aligned
    assert cols(lines[4]) <= cols(lines[2]) + 2 and lines[4].endswith("日本語の名前")
