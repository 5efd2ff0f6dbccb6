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
        run: Annotated[str, typer.Argument(help="TREC run file: query_id Q0 doc_id rank score tag ('-': stdin).")],
        measure: Annotated[
            list[str] | None,
            typer.Option("--measure", "-m", help="trec_eval measure, e.g. ndcg_cut.10, P.5,10, map, bpref, infAP, "
                         "ndcg.1=3,2=9, or a set: official (default), all_trec, set. Repeatable."),
        ] = None,
        per_query: Annotated[bool, typer.Option("-q", "--per-query", help="Also print each query's values.")] = False,
        complete: Annotated[
            bool, typer.Option("-c", "--complete", help="Average over every qrels query; missing ones score 0.")
        ] = False,
        relevance_level: Annotated[
            int, typer.Option("-l", "--relevance-level", help="Smallest label that counts as relevant.")
        ] = 1,
        max_docs: Annotated[
            int | None, typer.Option("-M", "--max-docs", help="Evaluate at most N documents per query.")
        ] = None,
        judged_only: Annotated[
            bool, typer.Option("-J", "--judged-only", help="Evaluate only the judged documents of the run.")
        ] = False,
        no_summary: Annotated[bool, typer.Option("-n", "--no-summary", help="Print no summary ('all') rows.")] = False,
        num_docs: Annotated[
            int, typer.Option("-N", "--num-docs", help="Documents in the collection (for utility).")
        ] = 0,
        fmt: Annotated[EvalFormat, typer.Option("--format", help="trec (4 decimals), csv or json (full precision).")]
        = EvalFormat.trec,
        out: Annotated[str | None, typer.Option("--out", "-o", help="Write to this file instead of stdout.")] = None,
        force: Annotated[bool, typer.Option("--force", help="Overwrite the --out file if it exists.")] = False,
    ) -> None:
        """Evaluate a TREC run against qrels, a drop-in for trec_eval 10 (no database).

        Ties in score are broken by document id descending, the ideal DCG uses every judged
        document, negative labels are judged but never relevant, and queries missing from the run
        are skipped unless -c. Differences from trec_eval: docs/eval.md.
        """
        from ndcg_labeling.pipeline.evaluate import evaluate_files
        from ndcg_labeling.reports.trec_eval import render

        with handle_errors():
            result = evaluate_files(qrels, run, measure, complete=complete, relevance_level=relevance_level,
                                    max_docs=max_docs, judged_only=judged_only, num_docs_in_coll=num_docs)
            write_output(render(result, fmt.value, per_query=per_query, summary=not no_summary), out, force)
