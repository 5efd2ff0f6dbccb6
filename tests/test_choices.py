"""One vocabulary per option: the kernels, the pipeline and the CLI accept exactly the values of
ndcg_labeling.choices, and the pipeline's messages about them do not name CLI flags."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ndcg_labeling import choices
from ndcg_labeling.cli import agreement_cmds, app, report_cmd, tasks_cmds
from ndcg_labeling.consensus import METHODS, POINTS, TIES
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.labels import agreement as agreement_pipeline
from ndcg_labeling.labels import consensus as consensus_pipeline
from ndcg_labeling.scoring import report as report_pipeline


def values(enum: type) -> list[str]:
    return [m.value for m in enum]


def test_cli_and_pipeline_use_the_same_vocabulary():
    assert report_cmd.By is choices.ReportGrouping and report_cmd.Gain is choices.Gain
    assert report_cmd.Empty is choices.EmptyQueries and report_cmd.Missing is choices.MissingRuns
    assert agreement_cmds.Method is choices.ConsensusMethod and agreement_cmds.Level is choices.AgreementLevel
    assert tasks_cmds.TaskFileFormat is choices.TaskFileFormat
    assert list(report_pipeline.BY_CHOICES) == values(choices.ReportGrouping)
    assert list(report_pipeline.EMPTY_CHOICES) == values(choices.EmptyQueries) == ["skip", "zero"]
    assert list(METHODS) == values(choices.ConsensusMethod)
    assert list(TIES) == [*values(choices.TieRule), "flag"]  # "flag": library only
    assert list(POINTS) == values(choices.DawidSkenePoint)
    assert list(agreement_pipeline.BY_CHOICES) == values(choices.AgreementScope)
    assert list(consensus_pipeline.ROUNDINGS) == values(choices.QrelsRounding)


def test_the_engine_options_are_one_vocabulary_each():
    from ndcg_labeling.engines import ENGINES

    assert list(ENGINES) == values(choices.LogEngineName) == ["duckdb", "spark"]  # implicit derive, online report
    assert values(choices.EvalEngine) == ["embedded", "spark"]  # eval
    # library callers (no Typer in front) keep the pipeline's checks and their messages
    from ndcg_labeling.engines import get_engine
    from ndcg_labeling.scoring.evaluate import evaluate_files

    with pytest.raises(NdcgLabelingError) as info:
        evaluate_files("no-qrels.txt", "no-run.txt", engine="nope")  # refused before either file is read
    assert str(info.value) == "--engine: unknown engine 'nope'; use embedded or spark"
    with pytest.raises(NdcgLabelingError) as info:
        get_engine("nope")
    assert str(info.value) == "--engine: unknown engine 'nope'; use duckdb or spark"


@pytest.mark.parametrize(("command", "args", "offered"), [
    (["eval"], ["qrels.txt", "run.txt"], ["embedded", "spark"]),
    (["online", "report"], ["log.csv", "--baseline", "a"], ["duckdb", "spark"]),
    (["implicit", "derive"], ["log.csv"], ["duckdb", "spark"]),
])
def test_an_unknown_engine_is_a_one_line_usage_error_and_help_lists_the_engines(command, args, offered):
    runner = CliRunner()
    result = runner.invoke(app, [*command, *args, "--engine", "nope"])
    assert result.exit_code == 2  # refused by the option itself, before any file is read
    listed = ", ".join(repr(e) for e in offered)
    assert result.stderr.strip().splitlines()[-1] == f"Error: Invalid value for '--engine': 'nope' is not one of {listed}."
    assert f"--engine <{'|'.join(offered)}>" in runner.invoke(app, [*command, "--help"]).stdout


def test_the_two_empty_options_are_different_vocabularies():
    # the metric kernels' value for a query without a relevant document vs the report's choice of queries
    assert values(choices.EmptyValue) == ["zero", "nan"]
    assert values(choices.EmptyQueries) == ["skip", "zero"]


def test_parse_choice_names_the_option_and_the_choices():
    assert choices.parse_choice(choices.Gain, "linear", "gain") is choices.Gain.linear
    with pytest.raises(ValueError) as info:
        choices.parse_choice(choices.Gain, "log", "gain")
    assert str(info.value) == "unknown gain 'log'; use one of exponential, linear, binary"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"method": "trimmed"}, "unknown method 'trimmed'; use one of median, mean, majority, dawid-skene"),
    ({"tie": "flag"}, "unknown tie rule 'flag'; use one of low, high"),
    ({"min_graders": 0}, "min_graders must be at least 1, got 0"),
    ({"max_spread": -1}, "max_spread must be non-negative, got -1"),
])
def test_consensus_option_errors_do_not_name_cli_flags(kwargs, message):
    with pytest.raises(NdcgLabelingError) as info:
        consensus_pipeline.run_consensus(session=None, **kwargs)  # fails before any query
    assert str(info.value) == message and "--" not in str(info.value)
