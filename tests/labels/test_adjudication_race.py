"""Two leads deciding one item at the same moment on PostgreSQL (issue 34, item 4): the second decision
waits for the first transaction and then sees it, so it is refused with the first lead's name and grade
instead of both being told "adjudicated by me"."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import select, text

from ndcg_labeling.db import models as m
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.errors import AdjudicationConflict
from ndcg_labeling.labels.consensus import set_adjudication


@pytest.mark.pg
def test_the_second_of_two_simultaneous_decisions_is_refused_on_postgresql(tmp_path):
    from tests.conftest import PG_URL, Database
    from tests.web.conftest import graded_two_ways

    if not PG_URL:
        pytest.skip("NDCG_LABELING_TEST_PG_URL is not set")
    db = Database("postgresql", tmp_path, migrated=True)
    try:
        graded_two_ways(db, tmp_path)
        with db.engine.connect() as conn:
            q, d = conn.execute(select(m.Query.external_id, m.Document.external_id).select_from(m.ConsensusLabel)
                                .join(m.Query, m.Query.id == m.ConsensusLabel.query_id)
                                .join(m.Document, m.Document.id == m.ConsensusLabel.document_id)
                                .where(m.ConsensusLabel.needs_adjudication.is_(True)).limit(1)).one()
        outcome: dict[str, object] = {}

        def second_lead() -> None:
            try:
                with session_scope(db.engine) as session:
                    outcome["pid"] = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
                    outcome["record"] = set_adjudication(q, d, 1, adjudicator="lee", session=session, seen=0)
            except AdjudicationConflict as exc:
                outcome["refused"] = exc

        with session_scope(db.engine) as first:  # max decides; his transaction is still open
            set_adjudication(q, d, 3, adjudicator="max", session=first, seen=0)
            other = threading.Thread(target=second_lead)
            other.start()
            with db.engine.connect() as probe:  # wait until lee's transaction waits for max's lock
                for _ in range(200):
                    waiting = "pid" in outcome and probe.execute(text(  # lee's transaction waits for a lock
                        "SELECT count(*) FROM pg_stat_activity WHERE pid = :pid AND wait_event_type = 'Lock'"),
                        {"pid": outcome["pid"]}).scalar_one()
                    if waiting:
                        break
                    time.sleep(0.05)
                probe.rollback()
            assert waiting, "the second decision did not wait for the first"
        other.join(timeout=30)
        assert "record" not in outcome
        refused = outcome["refused"]
        assert isinstance(refused, AdjudicationConflict) and (refused.by, refused.grade) == ("max", 3.0)
        with db.engine.connect() as conn:
            rows = conn.execute(select(m.Adjudication.grade, m.Adjudication.adjudicator)).all()
        assert [tuple(r) for r in rows] == [(3.0, "max")]
    finally:
        db.drop()
