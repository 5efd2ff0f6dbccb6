"""The page's words for the use cases' terminal messages (web/wording.py): no option, no Python tuple,
the same facts."""

from __future__ import annotations

import re

import pytest

from ndcg_labeling.labels.consensus import AdjudicationRecord
from ndcg_labeling.web.wording import decision_words, page_words

MESSAGES = [  # (the use case's text, as the CLI prints it; what the page must still say)
    ("judgments.csv:3: grader 'ann' already graded ('Q001', 'D0011') as 2 on 0-3, not 1; use --replace to overwrite",
     "query Q001, document D0011 as 2 on 0-3, not 1; tick the box to overwrite"),
    ("runs.txt: system 'bm25' already has a different ranking for query 'q1' (2 queries differ); use --replace to "
     "replace them", "(2 queries differ); tick the box"),
    ("120 judgments of behavior graders left out (clicks: 120); --include-behavior counts them",
     "120 judgments of behavior graders left out (clicks: 120)"),
    ("3 older grades of a grader on an item graded again in another batch were left out (the newest counts); "
     "use --batch to look at one batch", "choose a batch to look at one batch"),
    ("no judgments in batch 'b1' by human graders (the others are model or behavior graders: pass --include-models "
     "or --include-behavior to count them)", "which are not counted here"),
    ("--depth must be a number of ranks between 1 and 100, got 0", "depth must be a number of ranks"),
    ("no labels to export: run `ndcg-labeling consensus` first", "run consensus (the Consensus page) first"),
]


@pytest.mark.parametrize(("cli", "kept"), MESSAGES)
def test_a_message_on_a_page_names_no_option_and_no_tuple(cli, kept):
    shown = page_words(cli)
    assert not re.search(r"(?<![\w-])--[a-z]", shown) and "('" not in shown and "`" not in shown
    assert kept in shown


def test_the_saved_line_of_a_decision_reads_as_a_sentence():
    record = AdjudicationRecord("Q001", "D0012", 0, "lee", "0-3", previous=2.0, history=2, version=7)
    assert str(record).endswith("2 adjudication(s) on record)")  # the CLI's words stay
    assert decision_words(record) == ("Saved: query Q001, document D0012 now has grade 0 (scale 0-3, was 2), "
                                      "decided by lee; decision number 2 on this pair.")
