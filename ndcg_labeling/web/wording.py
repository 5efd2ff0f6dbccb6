"""The page's words for the messages the use cases write for the terminal.

The use cases (and their errors) speak the CLI's language: ``use --replace to overwrite``,
``--include-behavior counts them``, a (query, document) pair as Python prints a tuple. The CLI's tests
hold those words, so they stay; a page shows the same message through this table instead, which says
what to tick or choose on the page, or leaves the terminal's hint out where the page has no such
choice. The last rules turn any option left over into its plain words (``--gold-rate``: gold rate),
so that no ``--flag`` reaches a person in the browser (``tests/web/test_every_page.py`` checks every page for one).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ndcg_labeling.labels.consensus import AdjudicationRecord

_RULES: tuple[tuple[re.Pattern[str], Any], ...] = (
    # a (query, document) pair as Python prints a tuple: ('Q001', 'D0011')
    (re.compile(r"\('((?:[^'\\]|\\.)*)', '((?:[^'\\]|\\.)*)'\)"), r"query \1, document \2"),
    (re.compile(r"; use --replace to (?:overwrite|replace them|regrade it on \S+)"),
     "; tick the box to overwrite what is stored and upload the file again"),
    (re.compile(r" \(the others are model or behavior graders: pass --include-models or --include-behavior to "
                r"count them\)"), " (the others are model or behavior graders, which are not counted here)"),
    (re.compile(r";? ?\(?`?consensus --include-untrusted`? counts them again\)?"), ""),
    (re.compile(r"[;,] --include-(?:models|behavior) counts them"), ""),
    (re.compile(r"; use --batch to look at one batch"), "; choose a batch to look at one batch"),
    (re.compile(r"select a batch of one scale with --batch"), "choose a batch of one scale"),
    (re.compile(r"; grow the batch with `tasks extend \S+ --budget N`"),
     "; grow it later with “Extend a batch made with a strategy” on the New batch page"),
    (re.compile(r"only a batch made with `tasks create --strategy S --budget N` can be extended"),
     "only a batch made with a strategy and a budget can be extended"),
    (re.compile(r"--strategy (\w+) needs --budget N: how many pairs of the pool to judge"),
     r"the strategy \1 needs a budget: how many pairs of the pool to grade"),
    # whatever is left: a command in backquotes, then an option by its plain name
    (re.compile(r"`ndcg-labeling consensus`"), "consensus (the Consensus page)"),
    (re.compile(r"`ndcg-labeling ([^`]*)`"), r"“\1” in a terminal"),
    (re.compile(r"(?<![\w-])--([a-z][a-z-]*)"), lambda m: m.group(1).replace("-", " ")),
    (re.compile(r"`([^`]*)`"), r"“\1”"),
)


def page_words(message: object) -> str:
    """``message`` (a use case's text, an error's) as a page shows it."""
    text = str(message)
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


def decision_words(record: AdjudicationRecord) -> str:
    """What the adjudication pages say once a lead's decision is stored."""
    before = "no label" if record.previous is None else f"{record.previous:g}"
    times = "the first decision" if record.history == 1 else f"decision number {record.history}"
    return (f"Saved: query {record.query_id}, document {record.doc_id} now has grade {record.grade} "
            f"(scale {record.scale}, was {before}), decided by {record.adjudicator}; {times} on this pair.")


#: the pooling strategies (``tasks create --strategy``) as the new-batch form names them (docs/budget.md)
STRATEGY_WORDS: dict[str, str] = {
    "": "the whole pool (every pair in the top K)",
    "depth": "depth: every query's pool to depth 1, then 2, ... until the budget is spent",
    "mtf": "move-to-front: keep reading a system while it gives relevant documents (finds relevant ones)",
    "bandit": "bandit (MaxMean): the system giving the most relevant documents gives the next pair",
    "weighted": "weighted: the pairs the runs put nearest the top first (NDCG read plainly)",
    "sample": "stratified sample by rank: estimates of NDCG with honest intervals",
}
