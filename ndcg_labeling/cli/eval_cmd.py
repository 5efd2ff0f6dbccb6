"""``ndcg-labeling eval``: trec_eval on files, no database."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from ndcg_labeling.cli.common import handle_errors, write_output


class EvalFormat(StrEnum):
    trec = "trec"
    csv = "csv"
    json = "json"


def register(app: typer.Typer) -> None:
    """Add this area's commands to ``app``."""

    @app.command("eval")
    def eval_command(
        qrels: Annotated[str, typer.Argument(help="TREC qrels file: query_id iteration doc_id relevance.")],
        run: Annotated[str, typer.Argument(help="TREC run file: query_id Q0 doc_id rank score tag.")],
        measure: Annotated[
            list[str] | None,
            typer.Option("--measure", "-m", help="trec_eval measure: ndcg, ndcg_cut.K, map, map_cut.K, P.K, "
                         "recip_rank, recall.K (K may be a list: P.5,10). Repeatable."),
        ] = None,
        per_query: Annotated[bool, typer.Option("-q", "--per-query", help="Also print each query's values.")] = False,
        complete: Annotated[
            bool, typer.Option("-c", "--complete", help="Average over every qrels query; missing ones score 0.")
        ] = False,
        relevance_level: Annotated[
            int, typer.Option("-l", "--relevance-level", help="Smallest label that counts as relevant.")
        ] = 1,
        fmt: Annotated[EvalFormat, typer.Option("--format", help="trec (4 decimals), csv or json (full precision).")]
        = EvalFormat.trec,
        out: Annotated[str | None, typer.Option("--out", "-o", help="Write to this file instead of stdout.")] = None,
    ) -> None:
        """Evaluate a TREC run against qrels, a drop-in for `trec_eval -q -m ...` (no database).

        Ties in score are broken by document id descending, the ideal DCG uses every judged
        document, and queries missing from the run are skipped unless -c.
        """
        from ndcg_labeling.pipeline.evaluate import evaluate_files

        with handle_errors():
            result = evaluate_files(qrels, run, measure, complete=complete, relevance_level=relevance_level)
            write_output(result.render(fmt.value, per_query), out)
