"""Headings say what the rows are (issue 11.9): ``adjudicate list`` counts open and adjudicated items,
``report --by none`` is not titled "per query type"."""

from __future__ import annotations

from tests.cli.test_agreement_cli import ok, setup_round_trip
from tests.cli.test_report_cli import load, make_dataset
from tests.conftest import invoke


def test_adjudicate_list_title_counts_what_is_still_open(runner, db, tmp_path):
    setup_round_trip(runner, db, tmp_path)
    ok(invoke(runner, db, "consensus", "--method", "median"))  # q1/d3 and q2/d2 flagged
    assert "2 items flagged for adjudication" in ok(invoke(runner, db, "adjudicate", "list"))
    ok(invoke(runner, db, "adjudicate", "set", "q1", "d3", "2", "--adjudicator", "dana"))
    out = ok(invoke(runner, db, "adjudicate", "list"))
    assert "2 items flagged for adjudication: 1 open, 1 adjudicated" in out
    ok(invoke(runner, db, "adjudicate", "set", "q2", "d2", "1", "--adjudicator", "dana"))
    out = ok(invoke(runner, db, "adjudicate", "list"))
    assert "2 flagged items, all adjudicated" in out and "2 items flagged for adjudication" not in out


def test_report_by_none_is_not_titled_per_query_type(runner, sqlite_db, tmp_path):
    make_dataset(tmp_path, seed=5)
    load(runner, sqlite_db, tmp_path)
    by_type = ok(invoke(runner, sqlite_db, "report", "--format", "md"))
    assert "## Mean per query type" in by_type
    # the grade distribution and agreement of the html page are per query type whatever --by says
    expected = {"md": ("## Mean over all queries", "## Mean per query type"),
                "table": ("mean over all queries", "mean per query type"),
                "html": ("<h2>Metrics over all queries</h2>", "<h2>Metrics per query type</h2>")}
    for fmt, (wanted, unwanted) in expected.items():
        out = ok(invoke(runner, sqlite_db, "report", "--by", "none", "--format", fmt))
        assert wanted in out and unwanted not in out, fmt
