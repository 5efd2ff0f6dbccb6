"""A grader process for the concurrency test: grades items of one batch through the library, one short
transaction per grade (retried on collisions), and prints how many grades and retries it made.

    python -m tests.labels.grade_worker URL BATCH GRADER ITEM_IDS_FILE START_AT

All workers wait until the wall-clock time START_AT, so they really write at the same time.
"""

from __future__ import annotations

import hashlib
import sys
import time

from ndcg_labeling.db.session import make_engine
from ndcg_labeling.labels.tasks import save_grade
from ndcg_labeling.labels.transactions import run_in_transaction


def grade_for(item_id: str) -> int:
    """The same grade for an item in every process (so racing writers agree)."""
    return int(hashlib.sha256(item_id.encode()).hexdigest(), 16) % 4


def main() -> None:
    url, batch, grader, ids_file, start_at = sys.argv[1:6]
    engine = make_engine(url)
    with engine.connect():
        pass  # connect (and import everything) before the start line
    retries = 0

    def count(_exc: BaseException) -> None:
        nonlocal retries
        retries += 1

    items = [line.strip() for line in open(ids_file, encoding="utf-8") if line.strip()]
    time.sleep(max(0.0, float(start_at) - time.time()))
    for item in items:
        run_in_transaction(engine, lambda s, item=item: save_grade(batch, item, grade_for(item), grader=grader,
                                                                     session=s), on_retry=count)
    print(f"graded {len(items)} retries {retries}")


if __name__ == "__main__":
    main()
