"""Requests whose query has no label at all (issue 46, item 16): left out of the metric's mean by default,
as ``report`` leaves out unjudged queries, or counted as 0 with ``--unjudged zero`` / ``unjudged=zero``;
live and offline agree in both modes, CTR counts every request, and a warning says how many."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from online_sim import simulate, write_labels

from ndcg_labeling.db.session import session_scope
from ndcg_labeling.labels import importing
from ndcg_labeling.web.app import create_app
from ndcg_labeling.workspace import auth
from ndcg_labeling.workspace.ingest_keys import add_key
from tests.conftest import invoke


def _report(runner, db, log: str, *extra: str) -> dict:  # noqa: ANN001
    result = invoke(runner, db, "online", "report", log, "--baseline", "control", "--format", "json", "--cluster",
                    "request", *extra)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    out["by"] = {(r["arm"], r["measure"]): r for r in out["arms"] if r["query_type"] == "all"}
    return out


def test_unlabelled_queries_are_skipped_by_default_live_and_offline(db, runner, tmp_path):
    sim = simulate(n_requests=300, n_queries=12, n_users=60, seed=3)
    queries, judgments = write_labels(sim, tmp_path)
    for args in (("import", "queries", queries), ("import", "judgments", judgments, "--scale", "0-3", "--create-graders"),
                 ("consensus", "--method", "median")):
        assert invoke(runner, db, *args).exit_code == 0
    labelled_rows = {k: list(v) for k, v in sim.rows.items()}
    # half of the queries lose every label: the same requests, under query ids the label store lacks
    qids = sorted(set(sim.rows["query_id"]))
    gone = set(qids[::2])
    rows = {k: list(v) for k, v in sim.rows.items()}
    rows["query_id"] = [("nolabel-" + q) if q in gone else q for q in rows["query_id"]]
    whole, kept = tmp_path / "whole.parquet", tmp_path / "kept.parquet"
    pq.write_table(pa.table(rows), whole)
    keep = [i for i, q in enumerate(labelled_rows["query_id"]) if q not in gone]
    pq.write_table(pa.table({k: [v[i] for i in keep] for k, v in labelled_rows.items()}), kept)

    skip, zero, peer = (_report(runner, db, str(whole)), _report(runner, db, str(whole), "--unjudged", "zero"),
                        _report(runner, db, str(kept)))
    metric = "ndcg@10"
    for arm in ("control", "better"):
        n_all, n_kept = skip["by"][(arm, "ctr")]["n"], peer["by"][(arm, "ctr")]["n"]
        assert n_kept < n_all
        # skip: the mean of the labelled requests alone (the report of the log without the others)
        assert skip["by"][(arm, metric)]["mean"] == pytest.approx(peer["by"][(arm, metric)]["mean"], abs=1e-12)
        assert skip["by"][(arm, metric)]["n"] == n_kept
        # zero: the unlabelled requests count as 0 in the mean
        assert zero["by"][(arm, metric)]["mean"] == pytest.approx(peer["by"][(arm, metric)]["mean"] * n_kept / n_all,
                                                                 abs=1e-12)
        assert zero["by"][(arm, metric)]["n"] == n_all
        assert skip["by"][(arm, "ctr")]["mean"] == zero["by"][(arm, "ctr")]["mean"]  # every request, both modes
        assert any(w.startswith(f"arm {arm}: {n_all - n_kept} of {n_all} requests") for w in skip["warnings"])

    with session_scope(db.engine) as session:
        importing.add_graders(["lee"], session=session, role="lead")
        lead = auth.issue_token("lee", session=session).token
        key = add_key("feed", "ingest", session=session).key
    events = [dict(zip(rows, vals, strict=True)) for vals in zip(*rows.values(), strict=True)]
    with TestClient(create_app(db.engine)) as client:
        res = client.post("/api/events", content=json.dumps(events).encode(), headers={"Authorization": f"Bearer {key}"})
        assert res.status_code == 200, res.text
        lead_auth = {"Authorization": f"Bearer {lead}"}
        for mode, report in (("skip", skip), ("zero", zero)):
            live = client.get(f"/api/online/arms?window=all&unjudged={mode}", headers=lead_auth).json()
            assert live["unjudged"] == mode
            for a in live["arms"]:
                assert a["metric"] == report["by"][(a["arm"], metric)]["mean"]  # exactly
                assert a["n_metric"] == report["by"][(a["arm"], metric)]["n"]
                assert a["ctr"] == report["by"][(a["arm"], "ctr")]["mean"]
        default = client.get("/api/online/arms?window=all", headers=lead_auth).json()
        assert default["arms"] == client.get("/api/online/arms?window=all&unjudged=skip", headers=lead_auth).json()["arms"]
        assert client.get("/api/online/arms?unjudged=maybe", headers=lead_auth).status_code == 422
