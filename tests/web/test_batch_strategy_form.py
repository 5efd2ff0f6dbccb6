"""The new-batch page with a pooling strategy and a budget, and ``tasks extend`` from the page (issue 45):
the page calls the use cases the CLI calls, so a batch made and grown on the page is the batch the CLI
makes and grows with the same options and seed (every table compared), and the page's words name what
to choose, never a command-line option."""

from __future__ import annotations

import json
import re

from tests.conftest import invoke
from tests.web.test_lead_admin import as_lead, pair, snapshot, visible  # noqa: F401  (pair: the fixture)

FORM = {"batch": "wk2", "scale": "0-3", "depth": "4", "overlap": "1", "graders": ["ann", "bob"],
        "gold_rate": "0", "seed": "77", "strategy": "mtf", "budget": "5"}


def words(page: str) -> str:
    return " ".join(visible(page).split())


def test_strategy_and_budget_create_and_extend_as_the_cli_does(pair, runner):  # noqa: F811
    web, cli = pair
    client, csrf = as_lead(web)
    form = client.get("/lead/create-batch").text
    assert "Which pairs of the pool to grade" in words(form) and 'name="budget"' in form
    assert "No batch was made with a strategy yet" in words(form)
    preview = client.post("/lead/create-batch", data={**FORM, "csrf": csrf, "action": "preview"})
    assert preview.status_code == 200, preview.text
    shown = words(preview.text)
    assert "5 items to grade: 5 pairs chosen by move-to-front" in shown
    assert "grow it later with “Extend a batch made with a strategy”" in shown
    assert not re.search(r"(?<![\w-])--[a-z]|`", shown)
    assert client.post("/lead/create-batch", data={**FORM, "csrf": csrf, "action": "create"}).status_code == 303
    made = invoke(runner, cli.db, "tasks", "create", "wk2", "--scale", "0-3", "--depth", "4", "--overlap", "1",
                  "--graders", "ann,bob", "--seed", "77", "--strategy", "mtf", "--budget", "5", "--format", "json")
    assert made.exit_code == 0, made.output and json.loads(made.stdout)["items"] == 5
    assert snapshot(web.db) == snapshot(cli.db)
    page = client.get("/lead/create-batch").text
    assert "wk2 (mtf, 5 pairs so far)" in words(page)
    grown = client.post("/lead/extend-batch", data={"batch": "wk2", "budget": "3", "csrf": csrf})
    assert grown.status_code == 303, grown.text
    said = words(client.get(grown.headers["location"]).text)
    assert "batch wk2: round 2 (mtf) added 3 items" in said
    assert invoke(runner, cli.db, "tasks", "extend", "wk2", "--budget", "3").exit_code == 0
    assert snapshot(web.db) == snapshot(cli.db)


def test_strategy_mistakes_are_said_in_the_pages_words(pair):  # noqa: F811
    web, _ = pair
    client, csrf = as_lead(web)
    no_budget = client.post("/lead/create-batch", data={**FORM, "budget": "", "csrf": csrf, "action": "preview"})
    assert no_budget.status_code == 400
    assert "the strategy mtf needs a budget: how many pairs of the pool to grade" in words(no_budget.text)
    plain = client.post("/lead/extend-batch", data={"batch": "b1", "budget": "3", "csrf": csrf})
    assert plain.status_code == 400
    shown = words(plain.text)
    assert "only a batch made with a strategy and a budget can be extended" in shown
    assert not re.search(r"(?<![\w-])--[a-z]|`", shown)
