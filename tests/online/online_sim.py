"""A simulated A/B test with known truth, for the online report's tests.

Three arms over three query types: ``control`` (the baseline) ranks by noisy relevance, ``better``
ranks closer to the truth (higher NDCG everywhere), ``same`` ranks like control. Clicks follow a
position-based model (examination 1/rank, attractiveness by grade); a request converts with a
probability that rises with the clicked relevance, except in query type ``head`` where ``better``'s
conversions are planted lower (over-optimizing the head): the one conflict the headline must name.
Users make several requests each (clustered); some documents have no label (judged share < 100%).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

QTYPES = ("head", "torso", "tail")
ARMS = ("control", "better", "same")
N_DOCS = 20
LIST_LEN = 10
T0 = 1_700_000_000.0
DAY = 86400.0


@dataclass
class Sim:
    rows: dict[str, list]
    truth: np.ndarray  # (n_queries, N_DOCS) grades
    judged: np.ndarray  # (n_queries, N_DOCS) bool: the label store has the pair
    qtype: list[str]


def qid(q: int) -> str:
    return f"q{q:03d}"


def did(q: int, d: int) -> str:
    return f"q{q:03d}d{d:02d}"


def simulate(n_requests: int = 4500, n_queries: int = 45, n_users: int = 600, seed: int = 7) -> Sim:
    rng = np.random.default_rng(seed)
    truth = rng.choice(4, size=(n_queries, N_DOCS), p=[0.45, 0.3, 0.15, 0.1])
    truth[:, 0] = 3  # every query has a relevant document
    judged = rng.random((n_queries, N_DOCS)) > 0.04
    judged[:, 0] = True
    qtype = [QTYPES[q % 3] for q in range(n_queries)]
    rows: dict[str, list] = {k: [] for k in ("request_id", "query_id", "doc_id", "position", "clicked", "ts", "arm",
                                             "converted", "user_id", "session_id")}
    noise = {"control": 1.6, "better": 0.5, "same": 1.6}
    for r in range(n_requests):
        q = int(rng.integers(n_queries))
        arm = ARMS[r % 3]
        user = int(rng.integers(n_users))
        ts = T0 + float(rng.uniform(0, 2 * DAY))
        order = np.argsort(-(truth[q] + rng.normal(0, noise[arm], N_DOCS)), kind="stable")[:LIST_LEN]
        grades = truth[q][order]
        clicked = rng.random(LIST_LEN) < (1.0 / np.arange(1, LIST_LEN + 1)) * np.array([0.05, 0.3, 0.6, 0.9])[grades]
        value = float(np.sum(grades * clicked))
        p_conv = 0.05 + 0.04 * min(value, 6.0)
        if qtype[q] == "head" and arm == "better":
            p_conv = 0.03  # the planted conflict: better NDCG, fewer conversions
        converted = int(rng.random() < p_conv)
        positions = np.arange(1, LIST_LEN + 1)
        for i in rng.permutation(LIST_LEN):  # rows arrive in no particular order
            rows["request_id"].append(f"r{r:05d}")
            rows["query_id"].append(qid(q))
            rows["doc_id"].append(did(q, int(order[i])))
            rows["position"].append(int(positions[i]) * 2)  # gaps: positions 2, 4, ... close up
            rows["clicked"].append(int(clicked[i]))
            rows["ts"].append(ts + i * 0.5)
            rows["arm"].append(arm)
            rows["converted"].append(converted if i == 0 else 0)
            rows["user_id"].append(f"u{user:04d}")
            rows["session_id"].append(f"s{user:04d}-{r % 7}")
    return Sim(rows, truth, judged, qtype)


def write_parquet(sim: Sim, path) -> str:  # noqa: ANN001
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(sim.rows), path)
    return str(path)


def write_labels(sim: Sim, tmp_path) -> tuple[str, str]:  # noqa: ANN001
    """queries.csv (with query types) and judgments.csv (two graders agreeing: consensus = truth)."""
    queries = tmp_path / "queries.csv"
    queries.write_text("query_id,text,query_type\n" + "".join(
        f"{qid(q)},query {q},{t}\n" for q, t in enumerate(sim.qtype)), encoding="utf-8")
    lines = ["query_id,doc_id,grader,grade,batch"]
    for q in range(sim.truth.shape[0]):
        for d in range(N_DOCS):
            if sim.judged[q, d]:
                lines += [f"{qid(q)},{did(q, d)},{g},{sim.truth[q, d]},b1" for g in ("ann", "bob")]
    judgments = tmp_path / "judgments.csv"
    judgments.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(queries), str(judgments)
