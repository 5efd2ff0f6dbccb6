"""``implicit derive`` end to end on SQLite and PostgreSQL: what it stores (judgments of a behavior grader,
provenance), what it prints, what it refuses (bad rows: one line, nothing stored), and how behavior
graders stay out of agreement and consensus unless ``--include-behavior``; ``calibrate --judge`` on a
behavior grader."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from behavior_sim import N_DOCS, simulate_pbm
from sklearn.metrics import cohen_kappa_score
from sqlalchemy import text

from ndcg_labeling.sources.behavior import HELD_OUT_SEED
from tests.conftest import invoke

N_QUERIES = 40
T0 = 1_700_000_000.0


def ids(pair: np.ndarray) -> tuple[list[str], list[str]]:
    return [f"q{p // N_DOCS:03d}" for p in pair], [f"d{p:04d}" for p in pair]


@pytest.fixture(scope="module")
def sim():
    return simulate_pbm(80_000, seed=21, n_queries=N_QUERIES)


def write_log(sim, path, n: int | None = None) -> str:  # noqa: ANN001
    n = sim.pair.size if n is None else n
    q, d = ids(sim.pair[:n])
    pq.write_table(pa.table({"rid": [f"r{x}" for x in sim.request[:n]], "query_id": q, "doc_id": d,
                             "position": sim.position[:n], "clicked": sim.clicked[:n], "ts": sim.ts[:n] + T0}), path)
    return str(path)


def write_judgments(tmp_path, sim, graders: dict[str, float], batch: str = "people") -> str:  # noqa: ANN001
    """Human graders: the truth plus N(0, noise) rounded, one file."""
    rng = np.random.default_rng(3)
    pairs = np.arange(sim.truth.size)
    q, d = ids(pairs)
    lines = ["query_id,doc_id,grader,grade,batch"]
    for name, noise in graders.items():
        grades = np.clip(np.rint(sim.truth + rng.normal(0, noise, pairs.size)), 0, 3).astype(int)
        lines += [f"{a},{b},{name},{g},{batch}" for a, b, g in zip(q, d, grades, strict=True)]
    path = tmp_path / "judgments.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def derive(runner, db, log: str, *args: str):  # noqa: ANN001, ANN201
    return invoke(runner, db, "implicit", "derive", log, "--column", "request_id=rid", *args)


def test_derive_stores_judgments_and_provenance(runner, db, sim, tmp_path):
    log = write_log(sim, tmp_path / "log.parquet")
    imp = np.bincount(sim.pair, minlength=sim.truth.size)
    cut = int(np.sort(imp)[25])  # some pairs have fewer impressions than this
    result = derive(runner, db, log, "--model", "pbm", "--grader", "clicks", "--half-life", "14d",
                    "--min-impressions", str(cut), "--format", "json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    left = int(np.sum(imp < cut))
    assert out["pairs_left_out"] == left > 0 and out["pairs_graded"] == sim.truth.size - left
    assert out["pairs_left_out_few_impressions"] == left and out["pairs_left_out_no_score"] == 0
    assert len(out["position_bias"]) == N_DOCS and out["position_bias"][0] == 1.0
    assert sum(out["grade_distribution"].values()) == out["pairs_graded"]
    as_of = datetime.fromisoformat(out["window"]["as_of"].replace("Z", "+00:00")).timestamp()
    assert abs(as_of - (sim.ts.max() + T0)) < 1e-3 and out["window"]["half_life_s"] == 14 * 86400
    with db.engine.connect() as conn:
        kind = conn.execute(text("SELECT kind FROM graders WHERE name = 'clicks'")).scalar_one()
        rows = conn.execute(text("SELECT q.external_id, d.external_id, j.grade FROM judgments j "
                                 "JOIN queries q ON q.id = j.query_id JOIN documents d ON d.id = j.document_id")).all()
        deriv = conn.execute(text("SELECT model, half_life_s, n_pairs_graded, n_pairs_left_out, min_impressions, "
                                  "n_impressions FROM behavior_derivations")).one()
        pairs = conn.execute(text("SELECT d.external_id, p.impressions, p.clicks FROM behavior_pairs p "
                                  "JOIN documents d ON d.id = p.document_id")).all()
    assert kind == "behavior" and len(rows) == out["pairs_graded"]
    assert tuple(deriv) == ("pbm", 14 * 86400.0, out["pairs_graded"], left, cut, sim.pair.size)
    clicks = np.bincount(sim.pair, weights=sim.clicked, minlength=sim.truth.size)
    for doc, n, c in pairs:
        p = int(doc[1:])
        assert (n, c) == (imp[p], clicks[p])
    truth = {(f"q{p // N_DOCS:03d}", f"d{p:04d}"): int(sim.truth[p]) for p in range(sim.truth.size)}
    got = np.array([g for _, _, g in rows])
    want = np.array([truth[(q, d)] for q, d, _ in rows])
    assert cohen_kappa_score(want, got, weights="quadratic") >= 0.8


def test_bad_row_is_one_line_and_stores_nothing(runner, db, sim, tmp_path):
    rows = pa.table({"rid": ["r1", "r1"], "query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "position": [1, 2],
                     "clicked": [1, 5], "ts": [T0, T0]})
    path = tmp_path / "bad.csv"
    import pyarrow.csv as pacsv

    pacsv.write_csv(rows, path)
    before = db.counts()
    result = derive(runner, db, str(path), "--model", "coec", "--grader", "clicks")
    assert result.exit_code == 1
    assert result.stderr.strip() == f'Error: {path}:3: clicked "5" is not 0 or 1 (nothing was stored)'
    assert db.counts() == before


def test_replace_conflicts_and_options(runner, db, sim, tmp_path):
    log = write_log(sim, tmp_path / "log.parquet", 20_000)
    assert derive(runner, db, log, "--model", "coec", "--grader", "c").exit_code == 0
    again = derive(runner, db, log, "--model", "coec", "--grader", "c")
    assert again.exit_code == 1 and "already has judgments; pass --replace" in again.stderr
    assert derive(runner, db, log, "--model", "coec", "--grader", "c", "--replace", "--min-impressions", "1").exit_code == 0
    with db.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM behavior_derivations")).scalar_one() == 1
        assert conn.execute(text("SELECT count(*) FROM judgments")).scalar_one() == \
            conn.execute(text("SELECT n_pairs_graded FROM behavior_derivations")).scalar_one() == sim.truth.size
    assert invoke(runner, db, "graders", "add", "ann").exit_code == 0
    human = derive(runner, db, log, "--model", "coec", "--grader", "ann")
    assert human.exit_code == 1 and "grader 'ann' is a human grader" in human.stderr
    bad = derive(runner, db, log, "--model", "pbm", "--grader", "x", "--thresholds", "0.5,0.2,0.9")
    assert bad.exit_code == 1 and "strictly increasing" in bad.stderr
    bad = derive(runner, db, log, "--model", "pbm", "--grader", "x", "--scale", "0-4", "--thresholds", "0.1,0.2,0.9")
    assert bad.exit_code == 1 and "5 grades need 4 cut points, got 3" in bad.stderr
    bad = derive(runner, db, log, "--model", "pbm", "--grader", "x", "--half-life", "soon")
    assert bad.exit_code == 1 and "is not a positive duration" in bad.stderr
    bad = derive(runner, db, log, "--model", "watch", "--grader", "x")
    assert bad.exit_code == 1 and "--model watch needs a column 'watch_ratio'" in bad.stderr


def test_formats_csv_and_html(runner, sqlite_db, sim, tmp_path):
    log = write_log(sim, tmp_path / "log.parquet", 20_000)
    page = derive(runner, sqlite_db, log, "--model", "pbm", "--grader", "c", "--format", "html")
    assert page.exit_code == 0 and "<svg" in page.stdout and "<polyline" in page.stdout
    assert "position 10:" in page.stdout
    csv_text = derive(runner, sqlite_db, log, "--model", "pbm", "--grader", "d", "--format", "csv").stdout
    lines = csv_text.splitlines()
    assert lines[0] == "section,key,value" and sum(1 for x in lines if x.startswith("position_bias,")) == N_DOCS
    assert "summary,thresholds_source,default" in lines and any(x.startswith("window,as_of,20") for x in lines)
    assert sum(1 for x in lines if x.startswith("grade,")) == 4
    table = derive(runner, sqlite_db, log, "--model", "pbm", "--grader", "e")
    assert "pairs graded: " in table.stdout and "position bias (examination)" in table.stdout
    assert "pairs left out: 0 (0 with fewer than 20 impressions, 0 without a score)" in table.stdout
    assert "not used" not in table.stdout
    earlier = datetime.fromtimestamp(T0 + float(np.median(sim.ts[:20_000])), UTC).isoformat()
    cut = derive(runner, sqlite_db, log, "--model", "pbm", "--grader", "f", "--as-of", earlier)
    assert cut.exit_code == 0 and "(impressions after it not used)" in cut.stdout


def test_behavior_stays_out_of_agreement_unless_asked_and_fit_to_and_calibrate(runner, db, sim, tmp_path):
    assert invoke(runner, db, "import", "judgments", write_judgments(tmp_path, sim, {"ann": 0.3, "ben": 0.4}),
                  "--scale", "0-3", "--create-graders").exit_code == 0
    log = write_log(sim, tmp_path / "log.parquet")
    fitted = derive(runner, db, log, "--model", "coec", "--grader", "clicks", "--fit-to", "people", "--batch",
                    "people", "--format", "json")
    assert fitted.exit_code == 0, fitted.stderr
    fit = json.loads(fitted.stdout)["fit"]
    assert fit["batch"] == "people" and fit["n_held_out_pairs"] > 0 and fit["n_fit_pairs"] > 0
    assert fit["kappa_held_out"] >= 0.7
    # the held-out kappa recomputed from the stored grades: people's lower median per pair against the
    # behavior grades, on the queries of the seeded half the cut points were not fitted on (scikit-learn)
    with db.engine.connect() as conn:
        people: dict[tuple[int, int], list[int]] = {}
        for q, d, g in conn.execute(text("SELECT j.query_id, j.document_id, j.grade FROM judgments j JOIN graders g "
                                         "ON g.id = j.grader_id WHERE g.kind = 'human' AND j.batch = 'people'")):
            people.setdefault((int(q), int(d)), []).append(int(g))
        clicks = {(int(q), int(d)): int(g) for q, d, g in conn.execute(text(
            "SELECT j.query_id, j.document_id, j.grade FROM judgments j JOIN graders g ON g.id = j.grader_id "
            "WHERE g.name = 'clicks'"))}
    common = sorted(people.keys() & clicks.keys())
    held = set(np.random.default_rng(HELD_OUT_SEED).permutation(np.unique([q for q, _ in common]))[
        : len({q for q, _ in common}) // 2].tolist())
    held_pairs = [p for p in common if p[0] in held]
    lower_median = [sorted(people[p])[(len(people[p]) - 1) // 2] for p in held_pairs]
    kappa = cohen_kappa_score(lower_median, [clicks[p] for p in held_pairs], weights="quadratic", labels=[0, 1, 2, 3])
    assert fit["n_held_out_pairs"] == len(held_pairs) and fit["n_fit_pairs"] == len(common) - len(held_pairs)
    assert fit["kappa_held_out"] == pytest.approx(kappa, abs=5e-5)
    human = json.loads(invoke(runner, db, "agreement", "--format", "json").stdout)[0]
    both = json.loads(invoke(runner, db, "agreement", "--include-behavior", "--format", "json").stdout)[0]
    models = json.loads(invoke(runner, db, "agreement", "--include-models", "--format", "json").stdout)[0]
    assert human["n_graders"] == models["n_graders"] == 2 and both["n_graders"] == 3
    note = invoke(runner, db, "agreement").stdout
    graded = json.loads(fitted.stdout)["pairs_graded"]
    assert f"{graded} judgments of behavior graders left out (clicks: {graded}); --include-behavior counts them" in note
    assert "model graders" not in note  # a behavior grader is not a model grader: --include-models does not count it
    assert "behavior graders left out" in invoke(runner, db, "agreement", "--include-models").stdout
    cons = json.loads(invoke(runner, db, "consensus", "--method", "median", "--format", "json").stdout)
    assert cons["behavior_left_out"] == {"clicks": graded} and cons["models_left_out"] == {}
    done = invoke(runner, db, "consensus", "--method", "median")
    shown = done.stdout + done.stderr
    assert f"{graded} judgments of behavior graders not counted (clicks; --include-behavior counts them)" in shown
    cons = json.loads(invoke(runner, db, "consensus", "--method", "median", "--include-behavior",
                             "--format", "json").stdout)
    assert cons["behavior_left_out"] == {} and cons["models_left_out"] == {}
    rng = np.random.default_rng(4)
    for s, quality in enumerate((0.2, 0.6, 1.0, 1.6, 2.5)):  # five systems, worst to best
        lines = []
        for q in range(N_QUERIES):
            pairs = np.arange(q * N_DOCS, (q + 1) * N_DOCS)
            score = quality * sim.truth[pairs] + rng.normal(0, 1, N_DOCS)
            lines += [f"q{q:03d} Q0 d{p:04d} {rank} {score[i]:.4f} s{s}"
                      for rank, i in enumerate(np.argsort(-score), start=1) for p in [pairs[i]]]
        run = tmp_path / f"s{s}.run"
        run.write_text("\n".join(lines) + "\n", encoding="utf-8")
        assert invoke(runner, db, "import", "run", str(run), "--system", f"s{s}").exit_code == 0
    report = json.loads(invoke(runner, db, "calibrate", "--judge", "clicks", "--format", "json").stdout)
    row = report["rows"][0]
    assert row["n"] == json.loads(fitted.stdout)["pairs_graded"] and row["n_systems"] == 5
    assert row["kappa"] >= 0.7 and row["tau"] >= 0.8
    assert report["verdicts"][0].startswith("clicks agrees with people overall")
