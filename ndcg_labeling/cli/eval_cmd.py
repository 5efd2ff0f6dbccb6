"""``ndcg-labeling eval``: trec_eval on files, no database."""

from __future__ import annotations

from typing import Annotated

import typer

from ndcg_labeling.choices import EvalEngine, OutputFormat
from ndcg_labeling.cli.common import ForceOption, OutOption, format_option, handle_errors, write_output


def _print_version(value: bool | None) -> None:
    if value:  # trec_eval -v: "trec_eval version 10.0-rc3" on stderr, exit 0
        from ndcg_labeling import __version__

        typer.echo(f"ndcg-labeling eval version {__version__} (trec_eval 10.0 measures)", err=True)
        raise typer.Exit(0)


def _refuse_unsupported(debug_level: str | None, zscore: str | None) -> None:
    from ndcg_labeling.errors import NdcgLabelingError

    if debug_level is not None:
        raise NdcgLabelingError("-D/--Debug_level (trec_eval's debugging output) is not supported")
    if zscore is not None:
        raise NdcgLabelingError("-Z/--Zscore (trec_eval's z-scores) is not supported")


def register(app: typer.Typer) -> None:
    """Add this area's commands to ``app``."""

    @app.command("eval", context_settings={"help_option_names": ["--help", "-h"]})
    def eval_command(
        qrels: Annotated[str, typer.Argument(help="TREC qrels file: query_id iteration doc_id relevance.")],
        run: Annotated[str, typer.Argument(help="TREC run file: query_id Q0 doc_id rank score tag ('-': stdin).")],
        measure: Annotated[
            list[str] | None,
            typer.Option("--measure", "-m", help="trec_eval measure, e.g. ndcg_cut.10, P.5,10, map, bpref, infAP, "
                         "ndcg.1=3,2=9, or a set: official (default), all_trec, set; qrels_jg (-R qrels_jg); "
                         "prefs, all_prefs (-R prefs). Repeatable."),
        ] = None,
        per_query: Annotated[bool, typer.Option("-q", "--per-query", "--query_eval_wanted", help="Also print each query's values.")] = False,
        complete: Annotated[
            bool, typer.Option("-c", "--complete", "--complete_rel_info_wanted", help="Average over every qrels query; missing ones score 0.")
        ] = False,
        relevance_level: Annotated[
            int, typer.Option("-l", "--relevance-level", "--level_for_rel", help="Smallest label that counts as relevant.")
        ] = 1,
        max_docs: Annotated[
            int | None, typer.Option("-M", "--max-docs", "--Max_retrieved_per_topic",
                                      help="Evaluate at most N documents per query (0: none).")
        ] = None,
        judged_only: Annotated[
            bool, typer.Option("-J", "--judged-only", "--Judged_docs_only", help="Evaluate only the judged documents of the run.")
        ] = False,
        no_summary: Annotated[bool, typer.Option("-n", "--no-summary", "--nosummary", help="Print no summary ('all') rows.")] = False,
        num_docs: Annotated[
            int, typer.Option("-N", "--num-docs", "--Number_docs_in_coll", help="Documents in the collection (for utility).")
        ] = 0,
        rel_info_format: Annotated[
            str, typer.Option("-R", "--Rel_info_format", help="QRELS format: qrels (default), qrels_jg (judgment "
                              "groups: the *_avgjg measures), prefs or qrels_prefs (the prefs_* measures).")
        ] = "qrels",
        results_format: Annotated[
            str, typer.Option("-T", "--Results_format", help="RUN format: trec_results (the only one).")
        ] = "trec_results",
        debug_level: Annotated[
            str | None, typer.Option("-D", "--Debug_level", help="trec_eval's debugging output: not supported.")
        ] = None,
        zscore: Annotated[
            str | None, typer.Option("-Z", "--Zscore", help="trec_eval's z-scores: not supported.")
        ] = None,
        old_format: Annotated[
            str | None, typer.Option("--Output_old_results_format", help="Obsolete in trec_eval, ignored there "
                                     "and here.", hidden=True)
        ] = None,
        version: Annotated[
            bool | None, typer.Option("-v", "--version", is_eager=True, callback=_print_version,
                                      help="Print the version and exit (as trec_eval -v).")
        ] = None,
        fmt: Annotated[OutputFormat, format_option(OutputFormat.trec, OutputFormat.csv, OutputFormat.json,
                                                   help="trec (4 decimals), csv or json (full precision).")]
        = OutputFormat.trec,
        out: OutOption = None,
        engine: Annotated[EvalEngine, typer.Option("--engine", help="embedded (this process) or spark (the same kernels "
                                                   "on Spark's executors; TREC or Parquet files; docs/scale.md).")]
        = EvalEngine.embedded,
        spark_master: Annotated[str | None, typer.Option("--spark-master", help="Spark master URL for --engine "
                                                         "spark (default local[*]).")] = None,
        force: ForceOption = False,
    ) -> None:
        """Evaluate a TREC run against qrels, a drop-in for trec_eval 10 (no database).

        Ties in score are broken by document id descending, the ideal DCG uses every judged
        document, negative labels are judged but never relevant, and queries missing from the run
        are skipped unless -c. Differences from trec_eval: docs/eval.md.
        """
        from ndcg_labeling.reports.trec_eval import render
        from ndcg_labeling.scoring.evaluate import evaluate_files

        with handle_errors():
            _refuse_unsupported(debug_level, zscore)
            result = evaluate_files(qrels, run, measure, complete=complete, relevance_level=relevance_level,
                                    max_docs=max_docs, judged_only=judged_only, num_docs_in_coll=num_docs,
                                    rel_info_format=rel_info_format, results_format=results_format,
                                    engine=engine.value, spark_master=spark_master)
            write_output(render(result, fmt.value, per_query=per_query, summary=not no_summary), out, force)
