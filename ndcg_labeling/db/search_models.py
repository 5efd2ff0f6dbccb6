"""Tables of search configurations and their snapshots (migration 0017).

Kept beside :mod:`ndcg_labeling.db.models` (which imports this module, so ``Base.metadata`` holds them).
A configuration says where and how to ask a search engine for rankings; it names the environment
variable that holds the engine's credential, never the credential. A snapshot is a stored run
(``systems`` + ``ranking_entries``, named ``CONFIG@TIMESTAMP``) and one row here linking it to its
configuration and to the hash of the request template it was taken with.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from ndcg_labeling.db.base import Base, utcnow

CONFIG_NAME_LENGTH = 96  # a snapshot's name is CONFIG@YYYY-MM-DDTHH:MM:SS.ffffffZ, within systems.name (128)


class SearchConfig(Base):
    """A search configuration: engine kind, base URL, index, request template (and its sha256), where the
    id and the score are in a response, the credential's environment variable name, and the pacing."""

    __tablename__ = "search_configs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(CONFIG_NAME_LENGTH), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    url: Mapped[str] = mapped_column(Text)
    index_name: Mapped[str | None] = mapped_column(String(256))
    template: Mapped[str] = mapped_column(Text)
    template_sha256: Mapped[str] = mapped_column(String(64))
    id_path: Mapped[str] = mapped_column(Text)
    score_path: Mapped[str | None] = mapped_column(Text)
    key_env: Mapped[str | None] = mapped_column(String(128))  # the variable's NAME; its value is never stored
    key_header: Mapped[str | None] = mapped_column(String(128))  # vespa/http-json: send it in this header, bare
    timeout: Mapped[float] = mapped_column(Float)
    concurrency: Mapped[int] = mapped_column(Integer)
    rate: Mapped[float | None] = mapped_column(Float)  # requests per second; NULL: no limit
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class SearchSnapshot(Base):
    """One ``snapshot take``: the stored run it wrote, its configuration, the template hash, depth, counts
    and the notes of what the engine sent that was odd (duplicate ids, missing scores)."""

    __tablename__ = "search_snapshots"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    system_id: Mapped[int] = mapped_column(ForeignKey("systems.id", ondelete="CASCADE"), unique=True)
    config_id: Mapped[int] = mapped_column(ForeignKey("search_configs.id", ondelete="CASCADE"), index=True)
    template_sha256: Mapped[str] = mapped_column(String(64))
    depth: Mapped[int] = mapped_column(Integer)
    n_queries: Mapped[int] = mapped_column(Integer)
    n_hits: Mapped[int] = mapped_column(Integer)
    notes: Mapped[list[Any] | None] = mapped_column(JSON)
    taken_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
