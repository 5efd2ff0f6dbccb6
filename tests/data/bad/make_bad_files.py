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


# --- issue 11: the id rule, refused structure, limits, typed formats (run again: files are rewritten) ---
import json  # noqa: E402

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

Q = "query_id,text,query_type\n"
QT = "query_id\ttext\tquery_type\n"
D = "doc_id,title,body\n"
R = "query_id,doc_id,rank,score\n"


def jl(name: str, *records: str) -> None:
    w(name, "".join(r + "\n" for r in records))


def parquet(name: str, columns: dict[str, pa.Array]) -> None:
    pq.write_table(pa.Table.from_arrays(list(columns.values()), names=list(columns)), HERE / name)


OK_Q = '{"query_id": "q1", "text": "a", "query_type": "nav"}'
# ids that break the rule: white space, control and non-printable characters, length
w("queries_id_space.csv", Q + "q1,a,nav\nq 2,b,nav\n")
w("queries_id_tab.tsv", QT + 'q1\ta\tnav\n"q\t2"\tb\tnav\n')
w("queries_id_newline.csv", Q + 'q1,a,nav\n"q\n2",b,nav\n')
w("queries_id_ansi.csv", Q + "q1,a,nav\nq\x1b[2J,b,nav\n")
w("queries_id_zero_width.csv", Q + "q1,a,nav\nq\u200b2,b,nav\n")
jl("queries_id_bidi.jsonl", OK_Q, '{"query_id": "q\\u202e2", "text": "b", "query_type": "nav"}')
w("queries_id_nbsp.tsv", QT + "q1\ta\tnav\nq\u00a02\tb\tnav\n")
w("queries_id_ideographic_space.csv", Q + "q1,a,nav\nq\u30002,b,nav\n")
w("queries_id_del.csv", Q + "q1,a,nav\nq\x7f2,b,nav\n")
jl("queries_id_513.jsonl", OK_Q, json.dumps({"query_id": "q" * 513, "text": "b", "query_type": "nav"}))
w("queries_id_200k.csv", Q + f"q1,a,nav\n{'q' * 200_000},b,nav\n")  # also over the csv module's field limit
jl("queries_id_nul_escape.jsonl", OK_Q, '{"query_id": "q\\u00002", "text": "b", "query_type": "nav"}')
# NUL bytes, another encoding
w("queries_nul_in_text.csv", Q.encode() + b"q1,a,nav\nq2,b\x00c,nav\n")
w("queries_nul_escape_in_text.jsonl", OK_Q + '\n{"query_id": "q2", "text": "b\\u0000c", "query_type": "nav"}\n')
w("queries_utf16.csv", (Q + "q1,a,nav\n").encode("utf-16"))
# structure: duplicate headers and keys, short rows, other delimiters, nesting
w("queries_duplicate_header.csv", "query_id,text,query_type,query_id\nq1,a,nav,q2\n")
w("queries_duplicate_header.tsv", "query_id\ttext\ttext\tquery_type\nq1\ta\tb\tnav\n")
jl("queries_duplicate_key.jsonl", '{"query_id": "q1", "text": "a", "query_type": "nav", "query_id": "q2"}')
w("queries_short_row.csv", Q + "q1,a,nav\nq2,b\n")
w("queries_short_row.tsv", QT + "q1\ta\tnav\nq2\n")
w("queries_short_row_after_quoted_newline.csv", Q + 'q1,"two\nlines",nav\nq2,b\n')
w("queries_semicolon_quoted.csv", "query_id;text;query_type\nq1;cheap, fast flights;transactional\n")
jl("queries_nested.jsonl", '{"query_id": "q1", "text": ' + "[" * 100_000 + "]" * 100_000 + ', "query_type": "nav"}')
jl("queries_top_level_array.jsonl", '[{"query_id": "q1", "text": "a", "query_type": "nav"}]')
# JSON values that are not strings where an id is expected
for tag, value in (("true", "true"), ("number", "1"), ("float", "1.5"), ("object", '{"$ne": 1}'),
                   ("array", '["q1"]'), ("nan", "NaN"), ("infinity", "-Infinity"), ("1e309", "1e309")):
    jl(f"queries_id_{tag}.jsonl", OK_Q, '{"query_id": ' + value + ', "text": "b", "query_type": "nav"}')
# limits of the database columns, the same on SQLite and PostgreSQL
w("queries_query_type_65.csv", Q + f"q1,a,{'t' * 65}\n")
jl("queries_query_type_65.jsonl", OK_Q, json.dumps({"query_id": "q2", "text": "b", "query_type": "t" * 65}))
# Parquet: columns that are not text, duplicate names, NUL, the id rule
parquet("queries_id_binary.parquet", {"query_id": pa.array([b"Q001"]), "text": pa.array(["a"]),
                                      "query_type": pa.array(["nav"])})
parquet("queries_id_struct.parquet", {"query_id": pa.array([{"a": 1}]), "text": pa.array(["a"]),
                                      "query_type": pa.array(["nav"])})
parquet("queries_id_int.parquet", {"query_id": pa.array([1, 2]), "text": pa.array(["a", "b"]),
                                   "query_type": pa.array(["nav", "nav"])})
parquet("queries_id_list.parquet", {"query_id": pa.array([["q1"]]), "text": pa.array(["a"]),
                                    "query_type": pa.array(["nav"])})
# (a dict cannot hold a name twice: the table is built from a list of names)
pq.write_table(pa.Table.from_arrays([pa.array(["q1"]), pa.array(["a"]), pa.array(["nav"]), pa.array(["q2"])],
                                    names=["query_id", "text", "query_type", "query_id"]),
               HERE / "queries_duplicate_columns.parquet")
parquet("queries_nul_text.parquet", {"query_id": pa.array(["q1", "q2"]), "text": pa.array(["a", "b\x00c"]),
                                     "query_type": pa.array(["nav", "nav"])})
parquet("queries_id_space.parquet", {"query_id": pa.array(["q1", "q 2"]), "text": pa.array(["a", "b"]),
                                     "query_type": pa.array(["nav", "nav"])})
# documents
w("documents_id_space.csv", D + "d1,A,x\nd 2,B,y\n")
w("documents_id_control.tsv", "doc_id\ttitle\tbody\nd1\tA\tx\nd\x012\tB\ty\n")
w("documents_id_513.csv", D + f"{'d' * 513},A,x\n")
w("documents_short_row.csv", D + "d1,A,x\nd2,B\n")
w("documents_duplicate_header.csv", "doc_id,title,body,title\nd1,A,x,B\n")
jl("documents_nul_body.jsonl", '{"doc_id": "d1", "title": "A", "body": "x\\u0000y"}')
jl("documents_id_object.jsonl", '{"doc_id": {"$gt": ""}, "title": "A", "body": "x"}')
jl("documents_nested.jsonl", '{"doc_id": "d1", "title": "A", "body": ' + "{\"a\": " * 50_000 + "1" + "}" * 50_000 + "}")
parquet("documents_id_struct.parquet", {"doc_id": pa.array([{"a": 1}]), "title": pa.array(["A"]),
                                        "body": pa.array(["x"])})
# graders
w("graders_name_129.csv", f"grader,display_name\n{'g' * 129},G\n")
w("graders_display_name_257.csv", f"grader,display_name\nalice,{'A' * 257}\n")
w("graders_name_space.csv", "grader,display_name\nalice smith,Alice\n")
w("graders_short_row.csv", "grader,display_name\nalice,Alice\ncarol\n")
jl("graders_name_true.jsonl", '{"grader": true, "display_name": "T"}')
# judgments
w("judgments_doc_id_space.csv", J + "q1,d1,alice,2\nq1,d 2,alice,1\n")
w("judgments_doc_id_tab.tsv", "query_id\tdoc_id\tgrader\tgrade\nq1\t\"d\t1\"\talice\t2\n")
w("judgments_grade_arabic_indic.csv", J + "q1,d1,alice,2\nq1,d2,alice,\u0662\n")
w("judgments_grade_fullwidth.csv", J + "q1,d1,alice,\uff12\n")
w("judgments_grade_underscore.csv", J + "q1,d1,alice,1_0\n")
w("judgments_grade_inf.csv", J + "q1,d1,alice,inf\n")
w("judgments_grade_1e400.csv", J + "q1,d1,alice,1e400\n")
jl("judgments_grade_nan.jsonl", '{"query_id": "q1", "doc_id": "d1", "grader": "alice", "grade": NaN}')
jl("judgments_grade_true.jsonl", '{"query_id": "q1", "doc_id": "d1", "grader": "alice", "grade": true}')
jl("judgments_grade_1e309.jsonl", '{"query_id": "q1", "doc_id": "d1", "grader": "alice", "grade": 1e309}')
jl("judgments_query_id_1e309.jsonl", '{"query_id": 1e309, "doc_id": "d1", "grader": "alice", "grade": 1}')
jl("judgments_doc_id_nan.jsonl", '{"query_id": "q1", "doc_id": NaN, "grader": "alice", "grade": 1}')
jl("judgments_doc_id_number.jsonl", '{"query_id": "q1", "doc_id": 7, "grader": "alice", "grade": 1}')
w("judgments_batch_129.csv", "query_id,doc_id,grader,grade,batch\n" + f"q1,d1,alice,2,{'b' * 129}\n")
w("judgments_batch_200k.tsv", "query_id\tdoc_id\tgrader\tgrade\tbatch\n" + f"q1\td1\talice\t2\t{'b' * 200_000}\n")
w("judgments_grader_129.csv", J + f"q1,d1,{'g' * 129},2\n")
w("judgments_short_row.csv", J + "q1,d1,alice,2\nq1,d2,alice\n")
w("judgments_duplicate_header.csv", "query_id,doc_id,grader,grade,grade\nq1,d1,alice,2,3\n")
w("judgments_duplicate_header_batch.tsv", "query_id\tdoc_id\tgrader\tgrade\tbatch\tbatch\nq1\td1\talice\t2\tb\tc\n")
w("judgments_nul.csv", J.encode() + b"q1,d1\x00,alice,2\n")
parquet("judgments_doc_id_binary.parquet", {"query_id": pa.array(["q1"]), "doc_id": pa.array([b"d1"]),
                                            "grader": pa.array(["alice"]), "grade": pa.array([1])})
parquet("judgments_grader_struct.parquet", {"query_id": pa.array(["q1"]), "doc_id": pa.array(["d1"]),
                                            "grader": pa.array([{"name": "alice"}]), "grade": pa.array([1])})
parquet("judgments_query_id_int.parquet", {"query_id": pa.array([1]), "doc_id": pa.array(["d1"]),
                                           "grader": pa.array(["alice"]), "grade": pa.array([1])})
parquet("judgments_grade_bool.parquet", {"query_id": pa.array(["q1"]), "doc_id": pa.array(["d1"]),
                                         "grader": pa.array(["alice"]), "grade": pa.array([True])})
parquet("judgments_doc_id_control.parquet", {"query_id": pa.array(["q1"]), "doc_id": pa.array(["d\x1b1"]),
                                             "grader": pa.array(["alice"]), "grade": pa.array([1])})
w("qrels_doc_id_control.txt", "q1 0 d1 2\nq1 0 d\x1b[31m2 1\n")
w("qrels_doc_id_513.txt", f"q1 0 {'d' * 513} 2\n")
w("qrels_query_id_zero_width.txt", "q\u200b1 0 d1 2\n")
# runs
w("run_rank_inf.csv", R + "q1,d1,inf,1.0\n")
w("run_rank_1e20.csv", R + "q1,d1,1,2.0\nq1,d2,1e20,1.0\n")
w("run_rank_2_31.csv", R + "q1,d1,2147483648,1.0\n")
w("run_rank_fraction.csv", R + "q1,d1,1.5,1.0\n")
w("run_rank_hex.tsv", "query_id\tdoc_id\trank\nq1\td1\t0x1\n")
w("run_rank_negative.csv", R + "q1,d1,-1,1.0\n")
w("run_rank_arabic_indic.csv", R + "q1,d1,\u0661,1.0\n")
w("run_score_word.csv", R + "q1,d1,1,high\n")
w("run_doc_id_space.csv", R + 'q1,"d 1",1,1.0\n')
w("run_doc_id_control.tsv", "query_id\tdoc_id\trank\nq1\td\x071\t1\n")
w("run_short_row.csv", R + "q1,d1,1,1.0\nq1,d2\n")
w("run_duplicate_header.csv", "query_id,doc_id,rank,rank\nq1,d1,1,2\n")
jl("run_doc_id_object.jsonl", '{"query_id": "q1", "doc_id": {"id": "d1"}, "rank": 1}')
parquet("run_query_id_struct.parquet", {"query_id": pa.array([{"q": 1}]), "doc_id": pa.array(["d1"]),
                                        "rank": pa.array([1])})
parquet("run_rank_2_31.parquet", {"query_id": pa.array(["q1"]), "doc_id": pa.array(["d1"]),
                                  "rank": pa.array([2**31], type=pa.int64())})
w("run_doc_id_ansi.txt", "q1 Q0 d1 1 2.0 sys\nq1 Q0 d\x1b[2J2 2 1.0 sys\n")
w("run_doc_id_zero_width.txt", "q1 Q0 d\u200b1 1 2.0 sys\n")
w("run_nul.txt", b"q1 Q0 d1 1 2.0 sys\nq1 Q0 d\x002 2 1.0 sys\n")
# tasks import: the same grade parser as import judgments; Label Studio values of the wrong shape
w("tasks_grade_arabic_indic.csv", "item_id,grade\n{alice_b1},\u0662\n")
w("tasks_grade_fullwidth.jsonl", '{"item_id": "{alice_b1}", "grade": "\uff12"}\n')
w("tasks_short_row.csv", "item_id,query,grade\n{alice_b1},q\n")
w("tasks_duplicate_header.csv", "item_id,grade,grade\n{alice_b1},2,1\n")
w("tasks_semicolon.csv", "item_id;query;title;body;url;grade\n{alice_b1};cheap flights;Flights, cheap;a, b;;2\n")
w("tasks_nul.csv", b"item_id,grade\n{alice_b1},2\x00\n")
w("labelstudio_choices_string.json", '[{"id": 1, "data": {"item_id": "{alice_b1}"}, '
                                     '"annotations": [{"result": [{"value": {"choices": "2"}}]}]}]\n')
w("labelstudio_two_choices.json", '[{"id": 1, "data": {"item_id": "{alice_b1}"}, '
                                  '"annotations": [{"result": [{"value": {"choices": ["2", "1"]}}]}]}]\n')
w("labelstudio_item_id_number.json", '[{"id": 1, "data": {"item_id": 5}, '
                                     '"annotations": [{"result": [{"value": {"choices": ["2"]}}]}]}]\n')
w("labelstudio_nested.json", "[" * 100_000 + "]" * 100_000 + "\n")
# a row longer than the header (pandas would drop the extra value with only a warning)
w("queries_long_row.csv", Q + "q1,cheap, fast flights,nav\n")
w("judgments_long_row.tsv", "query_id\tdoc_id\tgrader\tgrade\nq1\td1\talice\t2\t3\n")
