"""Tables of online experiments (migration 0012): ingest keys and the stored impression events.

Kept beside :mod:`ndcg_labeling.db.models` (which imports this module, so ``Base.metadata`` holds them).
Events are raw rows as posted (the log schema of docs/online.md); ids are external strings, not
foreign keys: traffic names queries and documents the label store may not know yet.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Float, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from ndcg_labeling.db.base import Base, utcnow

EVENT_ID_LENGTH = 512


class IngestKey(Base):
    """A key that may post events (``keys add NAME --role ingest``): only its sha256 is stored."""

    __tablename__ = "ingest_keys"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)


class OnlineEvent(Base):
    """One impression row posted to ``POST /api/events`` (stored before it is acknowledged)."""

    __tablename__ = "online_events"
    __table_args__ = (Index("ix_online_events_request_id", "request_id"),)
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    request_id: Mapped[str] = mapped_column(String(EVENT_ID_LENGTH))
    query_id: Mapped[str] = mapped_column(String(EVENT_ID_LENGTH))
    doc_id: Mapped[str] = mapped_column(String(EVENT_ID_LENGTH))
    position: Mapped[int] = mapped_column(Integer)
    clicked: Mapped[int] = mapped_column(Integer)
    ts: Mapped[float] = mapped_column(Float)
    arm: Mapped[str] = mapped_column(String(128))
    converted: Mapped[float | None] = mapped_column(Float)
    watch_ratio: Mapped[float | None] = mapped_column(Float)
    dwell_ms: Mapped[float | None] = mapped_column(Float)
    session_id: Mapped[str | None] = mapped_column(String(EVENT_ID_LENGTH))
    user_id: Mapped[str | None] = mapped_column(String(EVENT_ID_LENGTH))
