"""Writes the bad-input corpus of this folder (run once; the files are committed).

Each file is broken in one way that spreadsheets, crowd platforms or other tools really produce.
tests/cli/test_bad_corpus.py lists what each file must be refused with.
"""

from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent


def w(name: str, content: str | bytes) -> None:
    path = HERE / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


# queries
w("queries_wrong_delimiter.csv", "query_id;text;query_type\nq1;cheap flights;transactional\n")
w("queries_missing_column.csv", "query_id,text\nq1,cheap flights\n")
w("queries_misspelt_column.csv", "qid,text,query_type\nq1,cheap flights,transactional\n")
w("queries_empty.csv", "")
w("queries_header_only.csv", "query_id,text,query_type\n")
w("queries_latin1.csv", "query_id,text,query_type\nq1,café près de moi,long-tail\n".encode("latin-1"))
w("queries_empty_id.tsv", "query_id\ttext\tquery_type\nq1\tflights\ttransactional\n\tno id\tnavigational\n")
w("queries_long_id.csv", f"query_id,text,query_type\n{'q' * 10_000},long,long-tail\n")
w("queries_duplicate.jsonl", '{"query_id": "q1", "text": "a", "query_type": "navigational"}\n'
                             '{"query_id": "q1", "text": "b", "query_type": "navigational"}\n')
w("queries_not_json.jsonl", '{"query_id": "q1", "text": "a", "query_type": "navigational"}\nquery_id,text\n')
# documents and graders
w("documents_no_body_or_url.csv", "doc_id,title\nd1,Flights\n")
w("documents_empty_id.jsonl", '{"doc_id": "d1", "title": "A", "body": "x"}\n{"doc_id": "", "title": "B", "body": "y"}\n')
w("graders_missing_column.csv", "name,display_name\nalice,Alice\n")
# judgments
J = "query_id,doc_id,grader,grade\n"
w("judgments_grade_fraction.csv", J + "q1,d1,alice,2\nq1,d2,alice,3.5\n")
w("judgments_grade_negative.csv", J + "q1,d1,alice,-1\n")
w("judgments_grade_5_on_0-4.csv", J + "q1,d1,alice,4\nq1,d2,alice,5\n")
w("judgments_grade_word.tsv", "query_id\tdoc_id\tgrader\tgrade\nq1\td1\talice\tthree\n")
w("judgments_grade_empty.csv", J + "q1,d1,alice,\n")
w("judgments_duplicate_rows.csv", J + "q1,d1,alice,2\nq1,d2,alice,1\nq1,d1,alice,2\n")
w("judgments_unknown_grader.csv", J + "q1,d1,alice,2\nq1,d1,mallory,2\n")
w("judgments_empty_doc_id.jsonl", '{"query_id": "q1", "doc_id": "", "grader": "alice", "grade": 1}\n')
pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "grader": ["alice", "alice"],
              "grade": ["high", "low"]}).to_parquet(HERE / "judgments_wrong_types.parquet")
w("judgments_corrupt.parquet", b"PAR1\x00\x01 truncated parquet")
w("qrels_non_integer.txt", "q1 0 d1 2\nq1 0 d2 relevant\n")
w("qrels_three_columns.txt", "q1 0 d1 2\nq1 d2 1\n")
# runs
w("run_nan_score.txt", "q1 Q0 d1 1 2.0 sys\nq1 Q0 d2 2 nan sys\n")
w("run_inf_score.txt", "q1 Q0 d1 1 inf sys\n")
w("run_five_columns.txt", "q1 Q0 d1 1 2.0 sys\nq1 Q0 d2 2 1.0\n")
w("run_duplicate_doc.txt", "q1 Q0 d1 1 2.0 sys\nq1 Q0 d1 2 1.0 sys\n")
w("run_empty.txt", "")
w("run_duplicate_rank.csv", "query_id,doc_id,rank,score\nq1,d1,1,2.0\nq1,d2,1,1.0\n")
w("run_missing_rank.csv", "query_id,doc_id,score\nq1,d1,2.0\n")
# tasks import (graded task files); {alice_b1}, {bob_b1}, {alice_b2} are filled in by the test with
# real item ids of a batch created there
w("tasks_other_graders_item.csv", "item_id,query,title,body,url,grade\n{alice_b1},q,t,b,,2\n{bob_b1},q,t,b,,1\n")
w("tasks_grade_outside_scale.csv", "item_id,grade\n{alice_b1},7\n")
w("tasks_grade_fraction.jsonl", '{"item_id": "{alice_b1}", "grade": "2.5"}\n')
w("tasks_unknown_item.jsonl", '{"item_id": "{alice_b1}", "grade": 1}\n{"item_id": "not-an-item", "grade": 1}\n')
w("tasks_missing_grade_column.csv", "item_id,relevance\n{alice_b1},2\n")
w("labelstudio_other_batch.json", """[
  {"id": 1, "data": {"item_id": "{alice_b1}"}, "annotations": [{"result": [{"value": {"choices": ["2"]}}]}]},
  {"id": 2, "data": {"item_id": "{alice_b2}"}, "annotations": [{"result": [{"value": {"choices": ["1"]}}]}]}
]
""")
w("labelstudio_not_a_list.json", '{"data": {"item_id": "{alice_b1}"}}\n')
