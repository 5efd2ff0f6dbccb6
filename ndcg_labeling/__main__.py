"""``python -m ndcg_labeling`` and the ``ndcg-labeling`` console script.

Ctrl-C while the command line is still loading (the first fraction of a second: typer, rich,
sqlalchemy, pandas) prints ``Interrupted`` and exits 130 instead of a KeyboardInterrupt traceback:
nothing has been written yet. Once loaded, the usual handling applies (a command interrupted inside
its transaction rolls back and says so).
"""

from __future__ import annotations

import os
import signal


def _interrupted_while_loading(_signum: int, _frame: object) -> None:
    os.write(2, b"Interrupted\n")
    os._exit(130)


def main() -> None:
    """Entry point: load the CLI with Ctrl-C handled quietly, then run it."""
    signal.signal(signal.SIGINT, _interrupted_while_loading)
    from ndcg_labeling.cli import main as cli_main

    cli_main()  # restores the usual KeyboardInterrupt inside its own handler


if __name__ == "__main__":
    main()
