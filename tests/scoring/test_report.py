"""The report use case on data written with bulk_insert, on SQLite and PostgreSQL.

Peers: pytrec_eval (trec_eval's C code) for the per-query metrics, scipy.stats for the t-test and the
bootstrap, an exact enumeration of all sign patterns for the randomization test.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np
import pytest
import pytrec_eval
from scipy import stats

from ndcg_labeling.db import models as m
from ndcg_labeling.db.repository import bulk_insert, db_datetime
from ndcg_labeling.db.session import session_scope
from ndcg_labeling.errors import NdcgLabelingError, NotFoundError
from ndcg_labeling.results import ReportOptions
from ndcg_labeling.scoring.report import build_report
from ndcg_labeling.stats import bootstrap_ci, bootstrap_counts, holm, randomization_p


def write(db: Any, *, queries: dict[str, str], labels: dict[str, dict[str, float]],
          runs: dict[str, dict[str, list[tuple[str, int]]]], adjudications: list[tuple[str, str, float]] = ()) -> None:
    """Store queries (id -> type), labels (qid -> doc -> value), runs (system -> qid -> [(doc, rank)])."""
    docs = sorted({d for rel in labels.values() for d in rel}
                  | {d for run in runs.values() for lst in run.values() for d, _ in lst})
    qid = {q: i + 1 for i, q in enumerate(queries)}
    did = {d: i + 1 for i, d in enumerate(docs)}
    with session_scope(db.engine) as session:
        bulk_insert(m.Query, ["id", "external_id", "query_type"], [(qid[q], q, t) for q, t in queries.items()],
                    session=session)
        bulk_insert(m.Document, ["id", "external_id"], [(did[d], d) for d in docs], session=session)
        bulk_insert(m.System, ["id", "name"], [(i + 1, s) for i, s in enumerate(runs)], session=session)
        rows = [(i + 1, qid[q], did[d], r) for i, (s, run) in enumerate(runs.items())
                for q, lst in run.items() for d, r in lst]
        bulk_insert(m.RankingEntry, ["system_id", "query_id", "document_id", "rank"], rows, session=session)
        now = db_datetime(session, m.utcnow())
        rows = [(qid[q], did[d], float(v), "median", "", 3, False, now) for q, rel in labels.items()
                for d, v in rel.items()]
        bulk_insert(m.ConsensusLabel, ["query_id", "document_id", "value", "method", "batch", "n_graders",
                                       "needs_adjudication", "created_at"], rows, session=session)
        if adjudications:
            rows = [(qid[q], did[d], g, "ada", now) for q, d, g in adjudications]
            bulk_insert(m.Adjudication, ["query_id", "document_id", "grade", "adjudicator", "created_at"], rows,
                        session=session)


def random_data(seed: int, n_queries: int = 25, systems=("a", "b")) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    queries = {f"q{i}": ("nav" if i % 2 else "info") for i in range(n_queries)}
    labels = {}
    runs: dict[str, dict[str, list[tuple[str, int]]]] = {s: {} for s in systems}
    for q in queries:
        pool = [f"{q}d{j}" for j in range(30)]
        judged = rng.choice(pool, size=int(rng.integers(3, 15)), replace=False)
        labels[q] = {str(d): int(rng.integers(0, 4)) for d in judged}
        labels[q][str(judged[0])] = 3  # every query has a relevant document
        for s in systems:
            length = int(rng.integers(1, 20))
            docs = rng.choice(pool, size=length, replace=False)
            ranks = np.sort(rng.choice(np.arange(1, 40), size=length, replace=False))  # ranks with holes
            runs[s][q] = [(str(d), int(r)) for d, r in zip(docs, ranks, strict=True)]
    return {"queries": queries, "labels": labels, "runs": runs}


def trec(data: dict[str, Any], system: str, transform=lambda g: g) -> dict[str, dict[str, float]]:
    qrels = {q: {d: int(transform(v)) for d, v in rel.items()} for q, rel in data["labels"].items()}
    run = {q: {d: float(1000 - r) for d, r in lst} for q, lst in data["runs"][system].items()}
    return pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut", "P", "recip_rank"}).evaluate(run)


def per_query(result, system: str, metric: str) -> dict[str, float]:
    pq = result.per_query
    sub = pq[(pq["system"] == system) & (pq["metric"] == metric)]
    return dict(zip(sub["query_id"], sub["value"], strict=True))


@pytest.mark.parametrize("gain,transform", [("linear", lambda g: g), ("exponential", lambda g: 2 ** g - 1)])
def test_ndcg_matches_trec_eval_with_ideal_from_all_labels(db, gain, transform):
    # exponential gain = trec_eval's linear ndcg over relevance 2^g - 1; ranks with holes keep their order
    data = random_data(1)
    write(db, **data)
    with session_scope(db.engine) as session:
        result = build_report(session=session, options=ReportOptions(
            metrics=("ndcg@10", "ndcg@5", "p@10"), gain=gain, per_query=True))
    for s in ("a", "b"):
        theirs = trec(data, s, transform)
        ours = per_query(result, s, "ndcg@10")
        assert set(ours) == set(theirs)
        for q, v in theirs.items():
            assert ours[q] == pytest.approx(v["ndcg_cut_10"], abs=1e-12), q
            assert per_query(result, s, "ndcg@5")[q] == pytest.approx(v["ndcg_cut_5"], abs=1e-12)
    theirs = trec(data, "a")
    assert per_query(result, "a", "p@10") == pytest.approx({q: v["P_10"] for q, v in theirs.items()}, abs=1e-12)


def test_adjudication_overrides_consensus(sqlite_db):
    queries = {"q1": "nav"}
    labels = {"q1": {"d1": 0, "d2": 3}}
    runs = {"s": {"q1": [("d1", 1), ("d2", 2)]}}
    write(sqlite_db, queries=queries, labels=labels, runs=runs, adjudications=[("q1", "d1", 3.0), ("q1", "d2", 0.0)])
    with session_scope(sqlite_db.engine) as session:
        result = build_report(session=session, options=ReportOptions(metrics=("ndcg@10", "mrr@10")))
    # in force: d1 = 3 at rank 1, d2 = 0: the ideal order itself
    assert per_query(result, "s", "ndcg@10")["q1"] == pytest.approx(1.0)
    assert per_query(result, "s", "mrr@10")["q1"] == pytest.approx(1.0)


def _three_query_data() -> dict[str, Any]:
    queries = {"q1": "nav", "q2": "nav", "q3": "info", "q4": "info"}
    labels = {"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}, "q3": {"d4": 0, "d5": 0}, "q4": {"d6": 3}}
    runs = {"a": {"q1": [("d1", 1), ("x", 2)], "q2": [("d3", 1)], "q3": [("d4", 1)], "q4": [("d6", 1)]},
            "b": {"q1": [("d2", 1), ("d1", 2)], "q3": [("d5", 1)], "q4": [("y", 1), ("d6", 2)]}}
    return {"queries": queries, "labels": labels, "runs": runs}


def test_empty_and_missing_queries(db):
    write(db, **_three_query_data())
    with session_scope(db.engine) as session:
        default = build_report(session=session, options=ReportOptions(metrics=("ndcg@10",)))
        zero = build_report(session=session, options=ReportOptions(metrics=("ndcg@10",), empty="zero"))
        skip = build_report(session=session, options=ReportOptions(metrics=("ndcg@10",), missing="skip"))
    # q3 has no relevant document: left out by default, counted; --empty zero scores it as 0
    assert set(per_query(default, "a", "ndcg@10")) == {"q1", "q2", "q4"}
    assert ("1 query has no relevant document (label >= 1) and is left out (--empty zero includes them)"
            in default.notes)
    assert "1 query has no relevant document (label >= 1) and is scored as 0 (--empty zero)" in zero.notes
    assert per_query(zero, "a", "ndcg@10")["q3"] == 0.0
    # b returned nothing for q2: 0 by default, left out with --missing skip
    assert per_query(default, "b", "ndcg@10")["q2"] == 0.0
    assert "q2" not in per_query(skip, "b", "ndcg@10")
    assert any(n == "b returned nothing for 1 judged query: counted as 0" for n in default.notes)
    s = default.summary.set_index(["system", "query_type", "metric"])
    assert s.loc[("b", "all", "ndcg@10"), "n_queries"] == 3
    expected_b = np.mean([per_query(default, "b", "ndcg@10")[q] for q in ("q1", "q2", "q4")])
    assert s.loc[("b", "all", "ndcg@10"), "value"] == pytest.approx(expected_b)
    ss = skip.summary.set_index(["system", "query_type", "metric"])
    assert ss.loc[("b", "all", "ndcg@10"), "n_queries"] == 2


def test_judged_coverage_and_warning(sqlite_db):
    write(sqlite_db, **_three_query_data())
    with session_scope(sqlite_db.engine) as session:
        result = build_report(session=session, options=ReportOptions(metrics=("ndcg@10", "judged@2")))
    pq = per_query(result, "a", "judged@2")
    assert pq == {"q1": 0.5, "q2": 1.0, "q4": 1.0}  # q1's "x" is unjudged
    assert "q2" not in per_query(result, "b", "judged@2")  # nothing returned: undefined, left out
    cov = result.coverage.set_index(["system", "query_type"])["judged"]
    assert cov[("a", "all")] == pytest.approx(2.5 / 3)
    assert result.coverage_k == 2
    assert len(result.warnings) == 1 and "judged@2 is below 0.9" in result.warnings[0]
    # the warning states the fact; the command-line renderers add the pooling command (issue 32)
    from ndcg_labeling.reports.headline import coverage_advice

    assert "ndcg-labeling" not in result.warnings[0]
    assert ["--system a --system b --depth 2" in a for a in coverage_advice(result)] == [True]


def test_t_test_and_wins_match_scipy_on_per_query_values(db):
    data = random_data(4, n_queries=40)
    write(db, **data)
    with session_scope(db.engine) as session:
        result = build_report(session=session, options=ReportOptions(metrics=("ndcg@10", "mrr@10")))
    c = result.comparisons.set_index(["system", "query_type", "metric"])
    for metric in ("ndcg@10", "mrr@10"):
        a = per_query(result, "a", metric)
        b = per_query(result, "b", metric)
        qs = sorted(a)
        x, y = np.array([a[q] for q in qs]), np.array([b[q] for q in qs])
        row = c.loc[("b", "all", metric)]
        assert row["t_p"] == pytest.approx(stats.ttest_rel(y, x).pvalue, rel=1e-9)
        assert row["diff"] == pytest.approx(np.mean(y - x))
        assert (row["wins"], row["ties"], row["losses"]) == (np.sum(y > x), np.sum(y == x), np.sum(y < x))
        assert row["t_p_holm"] == row["t_p"]  # a single comparison: Holm changes nothing


def test_unknown_system_and_baseline(sqlite_db):
    write(sqlite_db, **_three_query_data())
    with session_scope(sqlite_db.engine) as session:
        with pytest.raises(NotFoundError, match="unknown system 'zz'"):
            build_report(session=session, options=ReportOptions(systems=("zz",)))
        with pytest.raises(NotFoundError, match="unknown baseline system 'zz'"):
            build_report(session=session, options=ReportOptions(baseline="zz"))
        with pytest.raises(NdcgLabelingError, match="--gain must be one of"):
            build_report(session=session, options=ReportOptions(gain="square"))
        result = build_report(session=session, options=ReportOptions(baseline="b"))
    assert result.baseline == "b" and result.systems == ["b", "a"]


def test_bootstrap_interval_close_to_scipy():
    rng = np.random.default_rng(0)
    values = rng.beta(2, 5, size=300)
    counts = np.vstack(list(bootstrap_counts(300, 4000, seed=1)))
    assert counts.shape == (4000, 300) and counts.sum(axis=1).tolist() == [300.0] * 4000
    low, high = bootstrap_ci(values[:, None], 4000, 1, 0.95)
    # NaN rows are left out of each resample's mean: same interval as the finite values alone, roughly
    with_nan = np.r_[values, [np.nan] * 30][:, None]
    low2, high2 = bootstrap_ci(with_nan, 4000, 1, 0.95)
    assert low2[0] == pytest.approx(low[0], abs=0.01) and high2[0] == pytest.approx(high[0], abs=0.01)
    ref = stats.bootstrap((values,), np.mean, n_resamples=4000, method="percentile", random_state=2,
                          confidence_level=0.95).confidence_interval
    assert low[0] == pytest.approx(ref.low, abs=0.004)
    assert high[0] == pytest.approx(ref.high, abs=0.004)


def test_randomization_test_close_to_exact_enumeration():
    rng = np.random.default_rng(3)
    d = rng.normal(0.1, 0.3, size=12)
    signs = np.array(list(itertools.product((-1, 1), repeat=12)))
    exact = np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-12)
    ours = randomization_p(d[:, None], 20_000, seed=5)[0]
    assert ours == pytest.approx(exact, abs=0.01)
    # identical systems: every permutation ties, p = 1
    assert randomization_p(np.zeros((8, 1)), 1000, seed=1)[0] == 1.0


def test_holm_step_down():
    # by the definition: sorted p (0.01, 0.03, 0.04) * (3, 2, 1) = (0.03, 0.06, 0.04), made monotone
    assert holm(np.array([0.01, 0.04, 0.03])) == pytest.approx([0.03, 0.06, 0.06])
    out = holm(np.array([0.5, np.nan, 0.2]))
    assert out[0] == pytest.approx(0.5) and np.isnan(out[1]) and out[2] == pytest.approx(0.4)


def test_labels_read_in_bulk_equal_the_effective_labels_of_the_consensus_pipeline(sqlite_db):
    # the report reads the labels with one SELECT per table; it must see what consensus.effective_labels sees
    from ndcg_labeling.labels.consensus import effective_labels

    data = _three_query_data()
    write(sqlite_db, **data, adjudications=[("q1", "d2", 3.0), ("q1", "d2", 1.0), ("q2", "x", 2.0)])
    with session_scope(sqlite_db.engine) as session:
        theirs = effective_labels(session=session)
        result = build_report(session=session, options=ReportOptions(metrics=("ndcg@10",), empty="zero"))
    expected = {(r.query_id, r.doc_id): r.value for r in theirs.itertuples()}
    assert expected[("q1", "d2")] == 1.0 and expected[("q2", "x")] == 2.0  # newest adjudication in force
    assert len(result.labels) == len(expected)
    assert sorted(result.labels["value"]) == sorted(expected.values())


def test_unlabelled_document_with_a_large_id_gets_no_label(db):
    # row ids: a1=1, a2=2, b1=3, b2=4. q1 retrieves only b2, which nobody labelled: gain 0, ndcg 0,
    # whatever the arithmetic of ids (a key of query * span + document must not alias another pair)
    write(db, queries={"q1": "nav", "q2": "nav"}, labels={"q1": {"a2": 3}, "q2": {"a1": 3}},
          runs={"s": {"q1": [("b2", 1)], "q2": [("b1", 1), ("a1", 2)]}})
    with session_scope(db.engine) as session:
        result = build_report(session=session, options=ReportOptions(metrics=("ndcg@10", "judged@10")))
    assert per_query(result, "s", "ndcg@10")["q1"] == 0.0
    assert per_query(result, "s", "judged@10") == {"q1": 0.0, "q2": 0.5}
    assert per_query(result, "s", "ndcg@10")["q2"] == pytest.approx(1 / np.log2(3))


def test_paired_t_test_p_values_match_scipy_column_by_column():
    from ndcg_labeling.scoring.report import _ttest_p

    rng = np.random.default_rng(11)
    diffs = np.column_stack([
        rng.normal(0.02, 0.1, 60),  # a small real difference
        rng.normal(0.0, 0.1, 60),  # none
        np.full(60, 0.05),  # the same non-zero difference on every query: p = 0
        np.r_[np.full(59, 0.05), 0.0500001],  # nearly constant
        np.zeros(60),  # identical systems: p = 1 by definition
    ])
    got = _ttest_p(diffs)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = stats.ttest_rel(diffs[:, :4], np.zeros((60, 4)), axis=0).pvalue
    np.testing.assert_allclose(got[:4], want, rtol=1e-9, atol=1e-300)
    assert got[4] == 1.0
    two = _ttest_p(np.array([[0.1, 0.0], [0.3, 0.0]]))
    assert two[0] == pytest.approx(stats.ttest_rel([0.1, 0.3], [0.0, 0.0]).pvalue, rel=1e-9) and two[1] == 1.0
    assert np.isnan(_ttest_p(np.array([[0.1, 0.2]]))).all()  # one query: undefined
