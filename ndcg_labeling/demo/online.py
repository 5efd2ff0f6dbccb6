"""The demo's A/B test: a simulated log over the demo set, and the online report's headline on it.

Two arms serve the demo queries' documents (the 8 of ``truth.csv`` per query): ``control`` ranks by the
true relevance plus much noise, ``new`` plus little (better NDCG in every query type). Clicks follow a
position-based model; a request converts with a probability that rises with the relevance clicked,
except for ``transactional`` queries under ``new``, whose conversions are planted lower: the headline
must name that conflict (over-optimizing the head, as the seed practice warns).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

ARMS = ("control", "new")
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
PLANTED = "transactional"


def simulate_ab_log(data_dir: Path, path: Path, *, n_requests: int = 3000, seed: int = 27) -> Path:
    """Write the simulated log (CSV, the log schema of docs/online.md) to ``path``."""
    rng = np.random.default_rng(seed)
    truth: dict[str, list[tuple[str, int]]] = {}
    with (data_dir / "truth.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            truth.setdefault(row["query_id"], []).append((row["doc_id"], int(row["relevance"])))
    with (data_dir / "queries.csv").open(encoding="utf-8") as f:
        qtype = {row["query_id"]: row["query_type"] for row in csv.DictReader(f)}
    queries = sorted(truth)
    noise = {"control": 1.5, "new": 0.4}
    with path.open("w", encoding="utf-8", newline="") as out:
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["request_id", "query_id", "doc_id", "position", "clicked", "ts", "arm", "converted", "user_id"])
        for r in range(n_requests):
            q = queries[int(rng.integers(len(queries)))]
            arm = ARMS[r % 2]
            docs, grades = zip(*truth[q], strict=True)
            g = np.asarray(grades)
            order = np.argsort(-(g + rng.normal(0, noise[arm], g.size)), kind="stable")
            clicked = rng.random(g.size) < (1.0 / np.arange(1, g.size + 1)) * np.array([0.05, 0.3, 0.6, 0.9])[g[order]]
            p_conv = 0.04 + 0.05 * min(float(np.sum(g[order] * clicked)), 5.0)
            if qtype.get(q) == PLANTED and arm == "new":
                p_conv = 0.03
            converted = int(rng.random() < p_conv)
            ts = T0 + r * 20.0
            for pos, i in enumerate(order, start=1):
                w.writerow([f"ab{r:05d}", q, docs[i], pos, int(clicked[pos - 1]), f"{ts:.1f}", arm,
                            converted if pos == 1 else 0, f"u{int(rng.integers(400)):03d}"])
    return path


def online_demo(db_url: str, out_dir: Path, data_dir: Path) -> list[str]:
    """Simulate the log into ``out_dir/ab_log.csv``, run ``online report`` on it against the demo's
    labels, write ``out_dir/online.html``, and return the report's headline lines."""
    from ndcg_labeling.db.session import make_engine, session_scope
    from ndcg_labeling.experiments.report import OnlineOptions, online_report
    from ndcg_labeling.reports.online import headline_lines, render_html

    log = simulate_ab_log(data_dir, Path(out_dir) / "ab_log.csv")
    engine = make_engine(db_url)
    try:
        with session_scope(engine) as session:
            result = online_report([str(log)], OnlineOptions(baseline="control", window="6h", n_resamples=200),
                                   session=session)
    finally:
        engine.dispose()
    (Path(out_dir) / "online.html").write_text(render_html(result), encoding="utf-8")
    return headline_lines(result)
