"""A process for the concurrent-import test: loads the CLI, waits until the wall-clock time START_AT
(so that every process really writes at the same time), then runs one CLI command in-process and exits
with its status.

    python -m tests.labels.import_worker START_AT import judgments FILE --scale 0-3 --db URL
"""

from __future__ import annotations

import sys
import time


def main() -> None:
    start_at, *argv = sys.argv[1:]
    from ndcg_labeling.cli import app
    from ndcg_labeling.labels import importing, tasks  # noqa: F401 - loaded before the start line

    time.sleep(max(0.0, float(start_at) - time.time()))
    app(args=argv, prog_name="ndcg-labeling")


if __name__ == "__main__":
    main()
