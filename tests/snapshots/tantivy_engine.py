"""A local search engine with real BM25: the demo documents (data/documents.csv) indexed in memory with
tantivy (title and body), searched with tantivy's lenient query parser. Used behind fake_engines'
Elasticsearch-shaped ``_search`` by the end-to-end test and the benchmark."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data"


def bm25_search(documents: Path = DATA / "documents.csv") -> Callable[[str, int], list[tuple[str, float | None]]]:
    """``search(text, k)`` -> the top-k ``(doc id, BM25 score)`` of the demo documents."""
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("doc_id", stored=True, tokenizer_name="raw")
    builder.add_text_field("title", stored=False)
    builder.add_text_field("body", stored=False)
    index = tantivy.Index(builder.build())
    writer = index.writer()
    with documents.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            writer.add_document(tantivy.Document(doc_id=row["doc_id"], title=row["title"], body=row.get("body") or ""))
    writer.commit()
    index.reload()
    searcher = index.searcher()

    def search(text: str, k: int) -> list[tuple[str, float | None]]:
        query, _errors = index.parse_query_lenient(text, ["title", "body"])
        return [(searcher.doc(address)["doc_id"][0], float(score)) for score, address in searcher.search(query, k).hits]

    return search
