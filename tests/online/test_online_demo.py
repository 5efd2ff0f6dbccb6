"""The demo's A/B log: on the demo set's labels, the online headline names the planted conflict only."""

from __future__ import annotations

from ndcg_labeling.demo.online import PLANTED, online_demo
from ndcg_labeling.demo.run import DATA_DIR
from tests.conftest import invoke


def test_demo_online_headline(sqlite_db, runner, tmp_path):
    for args in (("import", "queries", str(DATA_DIR / "queries.csv")),
                 ("import", "judgments", str(DATA_DIR / "judgments.csv"), "--scale", "0-3", "--create-graders"),
                 ("consensus", "--method", "median")):
        assert invoke(runner, sqlite_db, *args).exit_code == 0
    lines = online_demo(sqlite_db.url, tmp_path, DATA_DIR)
    conflicts = [line for line in lines if " beats control on ndcg@10 " in line]
    assert len(conflicts) == 1 and conflicts[0].startswith(f"{PLANTED}: new beats control on ndcg@10 by +")
    assert "yet loses on conversion" in conflicts[0]
    assert (tmp_path / "online.html").read_text(encoding="utf-8").count("<svg") == 3
