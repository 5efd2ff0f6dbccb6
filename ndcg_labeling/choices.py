"""The option vocabularies shared by the kernels, the pipeline, the CLI (Typer) and the web workspace.

One StrEnum per option, so a value is spelled once; a member *is* its string
(``Gain.exponential == "exponential"``), so functions that take plain strings take members too.
Imports nothing but the standard library.

Two options are easy to confuse, so they have two names here:

* :class:`EmptyValue` (metric kernels, ``empty=``): the *value* a metric returns for a query without
  any relevant document (its ideal DCG is 0): ``zero`` (0.0) or ``nan`` (undefined; averages skip it).
* :class:`EmptyQueries` (``report --empty``): *which* such queries the report scores: ``skip``
  leaves them out of every mean (the kernel value ``nan``, then dropped), ``zero`` scores them as 0
  for every system (the kernel value ``zero``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TypeVar

E = TypeVar("E", bound=StrEnum)


class Gain(StrEnum):
    """NDCG gain of a label ``rel``: ``2**rel - 1`` (exponential) or ``rel`` (linear, as trec_eval); ``binary``
    (``report`` only): implicit-feedback NDCG, 1 for a label >= the relevant threshold, else 0, then linear
    (ideal DCG = the sum of the first R discounts). The metric kernels take exponential and linear."""

    exponential = "exponential"
    linear = "linear"
    binary = "binary"


class EmptyValue(StrEnum):
    """Metric kernels: the value for a query without a relevant document (see the module docstring)."""

    zero = "zero"
    nan = "nan"


class EmptyQueries(StrEnum):
    """Report: queries without a relevant document are left out (skip) or scored as 0 (zero)."""

    skip = "skip"
    zero = "zero"


class MissingRuns(StrEnum):
    """Report: a judged query a system returned nothing for scores 0 (zero) or is left out of that
    system's numbers (skip, as trec_eval does)."""

    zero = "zero"
    skip = "skip"


class ReportGrouping(StrEnum):
    """Report rows: per query type and overall, per query, or overall only."""

    query_type = "query-type"
    query = "query"
    none = "none"


class OutputFormat(StrEnum):
    """``--format`` of every command that writes a result (one vocabulary; each command offers the formats
    that fit it and its help lists them): a terminal ``table`` or plain ``text``, ``csv``, ``json``,
    Markdown (``md``), a self-contained ``html`` page, or trec_eval's layout (``trec``)."""

    table = "table"
    text = "text"
    csv = "csv"
    json = "json"
    md = "md"
    html = "html"
    trec = "trec"


class Estimator(StrEnum):
    """``report --estimator``: plain (unjudged = not relevant), inferred (infNDCG from a sampled batch) or ppi
    (a judge's labels on every query, corrected by people's on an audit: prediction-powered inference)."""

    plain = "plain"
    inferred = "inferred"
    ppi = "ppi"


class PoolStrategy(StrEnum):
    """``tasks create --strategy``: which pairs of the depth-K pool to judge (docs/budget.md)."""

    depth = "depth"
    mtf = "mtf"
    bandit = "bandit"
    sample = "sample"
    weighted = "weighted"


class ConsensusMethod(StrEnum):
    median = "median"
    mean = "mean"
    majority = "majority"
    dawid_skene = "dawid-skene"


class TieRule(StrEnum):
    """How a tie between two grades is broken (the consensus kernel also knows ``flag``, library only)."""

    low = "low"
    high = "high"


class DawidSkenePoint(StrEnum):
    """The Dawid-Skene label of an item: the mean of its posterior or its mode."""

    mean = "mean"
    mode = "mode"


class AgreementLevel(StrEnum):
    """Level of measurement of Krippendorff's alpha."""

    ordinal = "ordinal"
    interval = "interval"
    nominal = "nominal"


class AgreementScope(StrEnum):
    """Agreement rows: one per query type, per query or per grader."""

    query_type = "query-type"
    query = "query"
    grader = "grader"


class QrelsRounding(StrEnum):
    """How a fractional label becomes a qrels integer: round half up, or floor."""

    half_up = "half-up"
    floor = "floor"


class TaskFileFormat(StrEnum):
    csv = "csv"
    jsonl = "jsonl"
    label_studio = "label-studio"


def parse_choice(enum: type[E], value: str, what: str) -> E:
    """``value`` as a member of ``enum``; ``ValueError`` ("unknown level 'ratio'; use one of ordinal,
    interval, nominal") naming ``what``, the value and the choices."""
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(m.value for m in enum)
        raise ValueError(f"unknown {what} {value!r}; use one of {choices}") from None


class LogEngineName(StrEnum):
    """``--engine`` of ``implicit derive`` and ``online report``: where the impression logs are read,
    DuckDB (embedded, out of core) or Spark (docs/scale.md)."""

    duckdb = "duckdb"
    spark = "spark"


class EvalEngine(StrEnum):
    """``eval --engine``: this process (embedded) or the same kernels on Spark's executors."""

    embedded = "embedded"
    spark = "spark"


class GraderRole(StrEnum):
    """What a grader may do in the web workspace: grade their own items, or also lead (run batches,
    adjudicate, see every grader's progress)."""

    grader = "grader"
    lead = "lead"


class GraderKind(StrEnum):
    """Who grades: a person, or a model (an automatic judge, counted only with ``include_models``)."""

    human = "human"
    model = "model"


class Unjudged(StrEnum):
    """Online figures: a request whose query has no label at all is left out of the metric's mean
    (``skip``, as ``report`` leaves out unjudged queries) or counted with the score 0 (``zero``)."""

    skip = "skip"
    zero = "zero"


class SearchKind(StrEnum):
    """The search engines ``snapshot config add --kind`` asks (docs/engines.md)."""

    elasticsearch = "elasticsearch"
    opensearch = "opensearch"
    solr = "solr"
    vespa = "vespa"
    http_json = "http-json"
