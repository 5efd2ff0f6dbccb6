"""SQLAlchemy 2 typed ORM models: the schema of an ndcg-labeling database.

The schema is built by the Alembic migrations in ``migrations/versions``; these models describe the
head revision (a test checks that autogenerate finds no difference).

External ids (``query_id``, ``doc_id`` in files) are stored as ``external_id``; the integer primary
keys are internal. ``batch`` on a judgment is the batch *name* ("" for judgments outside any batch), so
that the uniqueness of (grader, query, document, batch) holds on every backend (NULLs are distinct).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column

from ndcg_labeling.db.base import Base
from ndcg_labeling.db.base import utcnow as utcnow  # m.utcnow: the pipeline's clock

ID_LENGTH = 512  # external ids longer than this are refused at import, with a message


class Scale(Base):
    """A grading scale (``0-3``, ``0-4``); its grades and their names are in :class:`ScaleGrade`."""

    __tablename__ = "scales"
    name: Mapped[str] = mapped_column(String(16), primary_key=True)
    min_grade: Mapped[int] = mapped_column(Integer)
    max_grade: Mapped[int] = mapped_column(Integer)


class ScaleGrade(Base):
    __tablename__ = "scale_grades"
    scale: Mapped[str] = mapped_column(ForeignKey("scales.name", ondelete="CASCADE"), primary_key=True)
    grade: Mapped[int] = mapped_column(Integer, primary_key=True)
    label: Mapped[str] = mapped_column(String(64))


class Query(Base):
    __tablename__ = "queries"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    external_id: Mapped[str] = mapped_column(String(ID_LENGTH), unique=True)
    text: Mapped[str | None] = mapped_column(Text)
    query_type: Mapped[str | None] = mapped_column(String(64), index=True)


class Document(Base):
    __tablename__ = "documents"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    external_id: Mapped[str] = mapped_column(String(ID_LENGTH), unique=True)
    title: Mapped[str | None] = mapped_column(Text)
    body: Mapped[str | None] = mapped_column(Text)
    url: Mapped[str | None] = mapped_column(Text)
    meta: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class Grader(Base):
    __tablename__ = "graders"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    display_name: Mapped[str | None] = mapped_column(String(256))
    active: Mapped[bool] = mapped_column(Boolean, default=True, server_default="1")
    # revision 0004: "grader" (grades their own items) or "lead" (runs batches, adjudicates)
    role: Mapped[str] = mapped_column(String(16), default="grader", server_default="grader")
    # revision 0005: "human" or "model" (an automatic judge); agreement and consensus count humans by default
    kind: Mapped[str] = mapped_column(String(16), default="human", server_default="human")


class System(Base):
    __tablename__ = "systems"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    description: Mapped[str | None] = mapped_column(Text)


class RankingEntry(Base):
    """One document of a system's stored ranking for a query: rank 1 is the top."""

    __tablename__ = "ranking_entries"
    __table_args__ = (
        UniqueConstraint("system_id", "query_id", "document_id"),
        UniqueConstraint("system_id", "query_id", "rank"),
        CheckConstraint("rank >= 1", name="rank_positive"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    system_id: Mapped[int] = mapped_column(ForeignKey("systems.id", ondelete="CASCADE"))
    query_id: Mapped[int] = mapped_column(ForeignKey("queries.id"), index=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id"))
    rank: Mapped[int] = mapped_column(Integer)
    score: Mapped[float | None] = mapped_column(Float)


class Judgment(Base):
    """One grade by one grader of one (query, document), on a scale, optionally inside a batch."""

    __tablename__ = "judgments"
    __table_args__ = (
        UniqueConstraint("grader_id", "query_id", "document_id", "batch"),
        Index("ix_judgments_query_id_document_id", "query_id", "document_id"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    grader_id: Mapped[int] = mapped_column(ForeignKey("graders.id"))
    query_id: Mapped[int] = mapped_column(ForeignKey("queries.id"))
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id"))
    grade: Mapped[int] = mapped_column(Integer)
    scale: Mapped[str] = mapped_column(ForeignKey("scales.name"))
    batch: Mapped[str] = mapped_column(String(128), default="", server_default="", index=True)
    source_file: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class ConsensusLabel(Base):
    """The relevance value of one (query, document) aggregated from its judgments."""

    __tablename__ = "consensus_labels"
    __table_args__ = (UniqueConstraint("query_id", "document_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    query_id: Mapped[int] = mapped_column(ForeignKey("queries.id"))
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id"))
    value: Mapped[float | None] = mapped_column(Float)
    method: Mapped[str] = mapped_column(String(32))
    scale: Mapped[str | None] = mapped_column(ForeignKey("scales.name"))
    batch: Mapped[str] = mapped_column(String(128), default="", server_default="", index=True)
    n_graders: Mapped[int] = mapped_column(Integer)
    spread: Mapped[float | None] = mapped_column(Float)
    needs_adjudication: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    reason: Mapped[str | None] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # revision 0011: the model grader whose grades filled items with too few human grades
    # (``consensus --judge-fills``); None: people's grades only
    filled_by: Mapped[str | None] = mapped_column(String(128))


# --- revision 0002: position-blind grading batches --------------------------------------------


class GradingBatch(Base):
    """A pool of (query, document) items to grade, with the scale and the guideline it uses."""

    __tablename__ = "grading_batches"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    scale: Mapped[str] = mapped_column(ForeignKey("scales.name"))
    depth: Mapped[int] = mapped_column(Integer)
    overlap: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int | None] = mapped_column(Integer)
    systems: Mapped[list[str] | None] = mapped_column(JSON)
    guideline_path: Mapped[str] = mapped_column(Text)
    guideline_version: Mapped[str | None] = mapped_column(String(64))
    guideline_sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # revision 0005: share of gold items in each grader's assignments; show the expected grade after one
    gold_rate: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    gold_feedback: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # revision 0013: the pooling strategy (None: depth-k, as before) and the pairs asked for over all rounds
    strategy: Mapped[str | None] = mapped_column(String(16))
    budget: Mapped[int | None] = mapped_column(Integer)
    strata_edges: Mapped[list[int] | None] = mapped_column(JSON)


class BatchItem(Base):
    """One (query, document) of a batch; ``item_key`` is the opaque id graders see."""

    __tablename__ = "batch_items"
    __table_args__ = (UniqueConstraint("batch_id", "query_id", "document_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    batch_id: Mapped[int] = mapped_column(ForeignKey("grading_batches.id", ondelete="CASCADE"), index=True)
    item_key: Mapped[str] = mapped_column(String(64), unique=True)
    query_id: Mapped[int] = mapped_column(ForeignKey("queries.id"))
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id"))


class BatchItemDesign(Base):
    """Revision 0013: how a strategy chose an item: the round (1 = ``tasks create``), the sampling stratum
    and the inclusion probability under the batch's design (None where the strategy has none). Apart from
    :class:`BatchItem`, so nothing a grader's items are read from tells the strategy."""

    __tablename__ = "batch_item_designs"
    item_id: Mapped[int] = mapped_column(ForeignKey("batch_items.id", ondelete="CASCADE"), primary_key=True)
    round: Mapped[int] = mapped_column(Integer)
    stratum: Mapped[int | None] = mapped_column(Integer)
    inclusion: Mapped[float | None] = mapped_column(Float)


class AuditSample(Base):
    """Revision 0015: a query that ``tasks create --audit-of`` drew for people from a batch the judge graded
    in full: its stratum (query type and the judge's grade band), the stratum's size in queries and the
    query's inclusion probability, which ``report --estimator ppi`` weights the audit by."""

    __tablename__ = "audit_samples"
    batch_id: Mapped[int] = mapped_column(ForeignKey("grading_batches.id", ondelete="CASCADE"), primary_key=True)
    query_id: Mapped[int] = mapped_column(ForeignKey("queries.id"), primary_key=True)
    source_batch_id: Mapped[int] = mapped_column(ForeignKey("grading_batches.id", ondelete="CASCADE"))
    judge_id: Mapped[int] = mapped_column(ForeignKey("graders.id"), index=True)
    stratum: Mapped[str] = mapped_column(String(200))
    stratum_size: Mapped[int] = mapped_column(Integer)
    inclusion: Mapped[float] = mapped_column(Float)


class Assignment(Base):
    """An item given to one grader, at a position in that grader's own shuffled order."""

    __tablename__ = "assignments"
    __table_args__ = (
        UniqueConstraint("item_id", "grader_id"),
        UniqueConstraint("batch_id", "grader_id", "position"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    batch_id: Mapped[int] = mapped_column(ForeignKey("grading_batches.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(ForeignKey("batch_items.id", ondelete="CASCADE"))
    grader_id: Mapped[int] = mapped_column(ForeignKey("graders.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="open", server_default="open")
    skip_reason: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime | None] = mapped_column(DateTime)


# --- revision 0003: adjudication ----------------------------------------------------------------


class Adjudication(Base):
    """A final grade set by a person for one (query, document); it overrides the consensus.

    Rows are never updated or deleted: the newest row of a (query, document) is in force and the
    older ones are its history.
    """

    __tablename__ = "adjudications"
    __table_args__ = (Index("ix_adjudications_query_id_document_id", "query_id", "document_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    query_id: Mapped[int] = mapped_column(ForeignKey("queries.id"))
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id"))
    grade: Mapped[float] = mapped_column(Float)
    adjudicator: Mapped[str] = mapped_column(String(128))
    note: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


# --- revision 0004: the web workspace's sign-in ------------------------------------------------------


class GraderToken(Base):
    """A sign-in token of a grader (``graders token``): only its sha256 is stored.

    A token is valid until ``expires_at`` unless ``revoked_at`` is set (``graders revoke``).
    """

    __tablename__ = "grader_tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    grader_id: Mapped[int] = mapped_column(ForeignKey("graders.id", ondelete="CASCADE"), index=True)
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)


class WebSession(Base):
    """A signed-in browser: the sha256 of its session cookie, the token it came from, its expiry.

    A session ends with its token (expiry or revocation) or at sign-out (the row is deleted).
    """

    __tablename__ = "web_sessions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    grader_id: Mapped[int] = mapped_column(ForeignKey("graders.id", ondelete="CASCADE"), index=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("grader_tokens.id", ondelete="CASCADE"), index=True)
    session_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime)


# --- revision 0005: gold items and grader quality ---------------------------------------------------


class GoldItem(Base):
    """A (query, document) whose grade on a scale is known (``gold import``), with an optional explanation."""

    __tablename__ = "gold_items"
    __table_args__ = (UniqueConstraint("query_id", "document_id", "scale"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    query_id: Mapped[int] = mapped_column(ForeignKey("queries.id"))
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id"))
    scale: Mapped[str] = mapped_column(ForeignKey("scales.name"))
    grade: Mapped[int] = mapped_column(Integer)
    explanation: Mapped[str | None] = mapped_column(Text)
    source_file: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class BatchGoldItem(Base):
    """Marks a batch item as a gold item. A table of its own, so that nothing graders' items are read
    from (``batch_items``, ``assignments``) carries the mark."""

    __tablename__ = "batch_gold_items"
    item_id: Mapped[int] = mapped_column(ForeignKey("batch_items.id", ondelete="CASCADE"), primary_key=True)
    gold_item_id: Mapped[int] = mapped_column(ForeignKey("gold_items.id"), index=True)


class GoldAnswer(Base):
    """A grader's grade of a gold item of a batch: kept apart from :class:`Judgment`, so it never enters
    agreement or consensus. One per assignment (a new grade replaces it; skip and undo delete it)."""

    __tablename__ = "gold_answers"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"), unique=True)
    grade: Mapped[int] = mapped_column(Integer)
    source_file: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # revision 0007: the first answer counts; a later grade of the same assignment is kept here
    later_grade: Mapped[int | None] = mapped_column(Integer)
    n_later: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class ConsensusSetting(Base):
    """Revision 0007: the exclusion rule ``consensus`` honours for a scope (a batch name, ``""``: every
    judgment) until it is changed."""

    __tablename__ = "consensus_settings"
    scope: Mapped[str] = mapped_column(String(128), primary_key=True)
    exclude_untrusted: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    exclude_undecided: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    min_accuracy: Mapped[float] = mapped_column(Float, default=0.7, server_default="0.7")
    excluded: Mapped[list[int] | None] = mapped_column(JSON)  # grader row ids the last run left out
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


# --- revision 0011: LLM judges that run ----------------------------------------------------------------

#: token counts (revision 0014): BIGINT on PostgreSQL, where a run's sums passed 2**31 - 1 in long runs;
#: INTEGER on SQLite, which stores any signed 64-bit value in it (see migrations/versions/0014)
TOKEN_COUNT = BigInteger().with_variant(Integer(), "sqlite")


class JudgeRun(Base):
    """One ``judge run``: the endpoint, the template, the parameters, the counts, tokens and cost.

    ``finished_at`` is NULL for a run that was interrupted (its answers are stored all the same)."""

    __tablename__ = "judge_runs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    batch_id: Mapped[int] = mapped_column(ForeignKey("grading_batches.id", ondelete="CASCADE"), index=True)
    grader_id: Mapped[int] = mapped_column(ForeignKey("graders.id"))
    model: Mapped[str] = mapped_column(String(256))
    base_url: Mapped[str] = mapped_column(Text)
    template_name: Mapped[str] = mapped_column(String(256))
    template_version: Mapped[str] = mapped_column(String(64))
    template_sha256: Mapped[str] = mapped_column(String(64))
    temperature: Mapped[float] = mapped_column(Float)
    params: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    n_items: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    n_cached: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    n_sent: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    n_graded: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    n_skipped: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    prompt_tokens: Mapped[int] = mapped_column(TOKEN_COUNT, default=0, server_default="0")
    completion_tokens: Mapped[int] = mapped_column(TOKEN_COUNT, default=0, server_default="0")
    price_in: Mapped[float | None] = mapped_column(Float)  # per million prompt tokens
    price_out: Mapped[float | None] = mapped_column(Float)  # per million completion tokens
    cost: Mapped[float | None] = mapped_column(Float)
    started_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)


class JudgeResponse(Base):
    """The cache: one final answer per request key (sha256 of model, base URL, prompt hash and
    parameters). ``grade`` is NULL for an answer that did not parse (``raw`` keeps it)."""

    __tablename__ = "judge_responses"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cache_key: Mapped[str] = mapped_column(String(64), unique=True)
    run_id: Mapped[int | None] = mapped_column(ForeignKey("judge_runs.id", ondelete="SET NULL"), index=True)
    model: Mapped[str] = mapped_column(String(256))
    base_url: Mapped[str] = mapped_column(Text)
    prompt_sha256: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))
    grade: Mapped[int | None] = mapped_column(Integer)
    raw: Mapped[str] = mapped_column(Text)
    reason: Mapped[str | None] = mapped_column(Text)
    prompt_tokens: Mapped[int] = mapped_column(TOKEN_COUNT, default=0, server_default="0")
    completion_tokens: Mapped[int] = mapped_column(TOKEN_COUNT, default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class JudgmentProvenance(Base):
    """Where a model grader's judgment came from: the run, the answer, model, prompt and template."""

    __tablename__ = "judgment_provenance"
    judgment_id: Mapped[int] = mapped_column(ForeignKey("judgments.id", ondelete="CASCADE"), primary_key=True)
    run_id: Mapped[int | None] = mapped_column(ForeignKey("judge_runs.id", ondelete="SET NULL"), index=True)
    response_id: Mapped[int | None] = mapped_column(ForeignKey("judge_responses.id", ondelete="SET NULL"))
    model: Mapped[str] = mapped_column(String(256))
    prompt_sha256: Mapped[str] = mapped_column(String(64))
    template_version: Mapped[str] = mapped_column(String(64))
    template_sha256: Mapped[str] = mapped_column(String(64))
    temperature: Mapped[float] = mapped_column(Float)
    base_url: Mapped[str | None] = mapped_column(Text)  # the endpoint (never the key); NULL before 0016


class CalibrationVerdict(Base):
    """A verdict of ``calibrate --judge``: per scope (``all`` or a query type), whether the judge agrees
    with people; the newest verdict of a (judge, scope) is in force for ``consensus --judge-fills``."""

    __tablename__ = "calibration_verdicts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    grader_id: Mapped[int] = mapped_column(ForeignKey("graders.id", ondelete="CASCADE"), index=True)
    batch: Mapped[str] = mapped_column(String(128), default="", server_default="")
    scope: Mapped[str] = mapped_column(String(128))
    agrees: Mapped[bool] = mapped_column(Boolean)
    kappa: Mapped[float | None] = mapped_column(Float)
    tau: Mapped[float | None] = mapped_column(Float)
    n: Mapped[int] = mapped_column(Integer)
    verdict: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    model: Mapped[str | None] = mapped_column(String(256))  # what the verdict measured (0016): it holds for ...
    template_sha256: Mapped[str | None] = mapped_column(String(64))  # ... this model and prompt template only
    kappa_ci_low: Mapped[float | None] = mapped_column(Float)  # 95 % query-bootstrap interval of kappa (0016)
    kappa_ci_high: Mapped[float | None] = mapped_column(Float)


class JudgeLineage(Base):
    """A judge declared to share a model with a system under test (``judge lineage add``): the judge is
    refused for comparisons involving that system (revision 0016)."""

    __tablename__ = "judge_lineage"
    __table_args__ = (UniqueConstraint("grader_id", "system_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    grader_id: Mapped[int] = mapped_column(ForeignKey("graders.id", ondelete="CASCADE"))
    system_id: Mapped[int] = mapped_column(ForeignKey("systems.id", ondelete="CASCADE"))
    note: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class JudgeCheck(Base):
    """One check of the judge gate (revision 0016): ``kind`` ``canary`` (``judge canary``: the fooled rate
    per kind of canary) or ``recheck`` (``judge recheck``: agreement with itself); ``result`` holds the
    counts, ``passed`` the decision; the newest canary of a judge gates calibrate and the fills."""

    __tablename__ = "judge_checks"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    grader_id: Mapped[int] = mapped_column(ForeignKey("graders.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    batch: Mapped[str] = mapped_column(String(128), default="", server_default="")
    model: Mapped[str] = mapped_column(String(256))
    base_url: Mapped[str] = mapped_column(Text)
    template_sha256: Mapped[str] = mapped_column(String(64))
    n: Mapped[int] = mapped_column(Integer)
    passed: Mapped[bool] = mapped_column(Boolean)
    threshold: Mapped[float | None] = mapped_column(Float)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
# --- revision 0010: labels from behavior (click models, watch time) -------------------------------


class BehaviorDerivation(Base):
    """One ``implicit derive`` run: the provenance of a behavior grader's judgments (docs/behavior.md).

    Times are epoch seconds (UTC); ``parameters`` holds the model's fitted scalars (EM iterations,
    tolerance, gamma...), ``position_bias`` the examination (or CTR) curve by position from 1."""

    __tablename__ = "behavior_derivations"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    grader_id: Mapped[int] = mapped_column(ForeignKey("graders.id"), index=True)
    model: Mapped[str] = mapped_column(String(16))
    scale: Mapped[str] = mapped_column(ForeignKey("scales.name"))
    batch: Mapped[str] = mapped_column(String(128), default="", server_default="")
    sources: Mapped[list[str]] = mapped_column(JSON)
    parameters: Mapped[dict[str, Any]] = mapped_column(JSON)
    since: Mapped[float | None] = mapped_column(Float)
    until: Mapped[float | None] = mapped_column(Float)
    as_of: Mapped[float | None] = mapped_column(Float)
    half_life_s: Mapped[float | None] = mapped_column(Float)
    min_impressions: Mapped[int] = mapped_column(Integer)
    thresholds: Mapped[list[float]] = mapped_column(JSON)
    fit_to: Mapped[str | None] = mapped_column(String(128))
    held_out_kappa: Mapped[float | None] = mapped_column(Float)
    position_bias: Mapped[list[float | None]] = mapped_column(JSON)
    position_bias_kind: Mapped[str] = mapped_column(String(64))
    n_impressions: Mapped[int] = mapped_column(BigInteger)
    n_pairs_graded: Mapped[int] = mapped_column(Integer)
    n_pairs_left_out: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class BehaviorPair(Base):
    """A graded (query, document) of a derivation: its counts in the window, its score and grade."""

    __tablename__ = "behavior_pairs"
    __table_args__ = (UniqueConstraint("derivation_id", "query_id", "document_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    derivation_id: Mapped[int] = mapped_column(ForeignKey("behavior_derivations.id", ondelete="CASCADE"))
    query_id: Mapped[int] = mapped_column(ForeignKey("queries.id"))
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id"))
    impressions: Mapped[int] = mapped_column(BigInteger)
    clicks: Mapped[int] = mapped_column(BigInteger)
    weighted_impressions: Mapped[float] = mapped_column(Float)
    weighted_clicks: Mapped[float] = mapped_column(Float)
    score: Mapped[float] = mapped_column(Float)
    grade: Mapped[int] = mapped_column(Integer)

from ndcg_labeling.db.online_models import IngestKey, OnlineEvent  # noqa: E402, F401  (online tables, migration 0012)

# --- revision 0008: server secrets ---------------------------------------------------------------------


class ServerSecret(Base):
    """A random key the server keeps (``login``: the HMAC key binding a sign-in form to its token)."""

    __tablename__ = "server_secrets"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    secret: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
from ndcg_labeling.db.search_models import SearchConfig, SearchSnapshot  # noqa: E402, F401  (migration 0017)
