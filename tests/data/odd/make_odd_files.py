"""Writes the odd-but-valid twins added for issue 11 (run once; the files are committed): the same rows
as queries_plain.csv / documents_plain.csv / judgments_plain.csv in other valid shapes."""

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).parent

queries = pd.read_csv(HERE / "queries_plain.csv", dtype=str, keep_default_na=False)
documents = pd.read_csv(HERE / "documents_plain.csv", dtype=str, keep_default_na=False)
judgments = pd.read_csv(HERE / "judgments_plain.csv", dtype=str, keep_default_na=False)

# JSON Lines with keys in another order, non-ASCII escaped, and a null-free extra key
with open(HERE / "queries_reordered_escaped.jsonl", "w", encoding="utf-8") as fh:
    import json

    for row in queries.to_dict(orient="records"):
        fh.write(json.dumps({"query_type": row["query_type"], "text": row["text"], "query_id": row["query_id"]},
                            ensure_ascii=True) + "\n")
# Parquet with string columns (the typed format of a data pipeline)
pq.write_table(pa.Table.from_pandas(queries, preserve_index=False), HERE / "queries_strings.parquet")
pq.write_table(pa.Table.from_pandas(judgments, preserve_index=False), HERE / "judgments_strings.parquet")
# every field quoted, and a trailing delimiter on every line (header included)
queries.to_csv(HERE / "queries_all_quoted.csv", index=False, quoting=1)
(HERE / "queries_trailing_comma.csv").write_text(
    "".join(line + ",\n" for line in (HERE / "queries_plain.csv").read_text(encoding="utf-8").splitlines()
            if line), encoding="utf-8")
# the judgments with the integer grades of a typed format and an empty optional batch column
with open(HERE / "judgments_int_grades.jsonl", "w", encoding="utf-8") as fh:
    for row in judgments.to_dict(orient="records"):
        fh.write(json.dumps({**row, "grade": int(row["grade"]), "batch": None}, ensure_ascii=False) + "\n")
# a document whose body is longer than the csv module's default field limit (128 KiB) and holds
# characters a terminal would interpret: stored verbatim (only ids follow the id rule)
pd.DataFrame({"doc_id": ["d9"], "title": ["Long \x1b[31mred\x1b[0m title"],
              "body": ["x" * 140_000 + "\x1b[2J\tend"]}).to_csv(HERE / "documents_long_body.csv", index=False)
