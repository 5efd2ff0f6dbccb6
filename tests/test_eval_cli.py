"""`ndcg-labeling eval` against trec_eval's own test outputs and against pytrec_eval on random files."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ndcg_labeling.cli import app

runner = CliRunner()


def _invoke(*args: str):
    return runner.invoke(app, ["eval", *args])


def _csv_values(output: str) -> dict[tuple[str, str], float]:
    rows = list(csv.DictReader(io.StringIO(output)))
    return {(r["measure"], r["query_id"]): float(r["value"]) for r in rows}


def _random_files(tmp_path: Path, seed: int = 0, n_queries: int = 150, shuffle: bool = False):
    rng = np.random.default_rng(seed)
    qrels_lines, run_lines = [], []
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        qid = f"{q:03d}" if q % 3 else f"topic-{q}"
        n_judged = int(rng.integers(1, 40))
        judged = {f"D{int(d)}": int(rng.choice([-1, 0, 0, 1, 2, 3])) for d in rng.choice(80, n_judged, replace=False)}
        if q % 17 == 0:
            judged = {d: 0 for d in judged}  # judged, nothing relevant
        if q % 10 != 9:  # a tenth of the queries are missing from the run
            length = int(rng.integers(1, 60))
            docs = [f"D{int(d)}" for d in rng.choice(100, length, replace=False)]
            scores = rng.integers(0, 5, length) / 2.0  # heavy ties: broken by doc id descending
            run[qid] = dict(zip(docs, scores.tolist(), strict=True))
            for rank, (d, s) in enumerate(zip(docs, scores, strict=True)):
                run_lines.append(f"{qid} Q0 {d} {rank} {s} tag")
        qrels[qid] = judged
        qrels_lines += [f"{qid} 0 {d} {rel}" for d, rel in judged.items()]
    run["only-in-run"] = {"D1": 1.0}
    run_lines.append("only-in-run Q0 D1 1 1.0 tag")
    if shuffle:  # queries interleaved: lines cannot be moved block by block
        run_lines = [run_lines[i] for i in rng.permutation(len(run_lines))]
    (tmp_path / "qrels").write_text("\n".join(qrels_lines) + "\n")
    (tmp_path / "run").write_text("\n".join(run_lines) + "\n")
    return str(tmp_path / "qrels"), str(tmp_path / "run"), qrels, run


@pytest.mark.parametrize(("complete", "shuffle"), [(False, False), (True, False), (False, True)])
def test_parity_with_pytrec_eval_on_random_files(tmp_path, complete, shuffle):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels_path, run_path, qrels, run = _random_files(tmp_path, shuffle=shuffle)
    measures = {"ndcg", "ndcg_cut.5,10,100", "map", "P.5,20", "recip_rank", "recall.10,1000"}
    flags = ["-q", *(["-c"] if complete else [])]
    result = _invoke(qrels_path, run_path, *flags, "--format", "csv", *[a for m in sorted(measures) for a in ("-m", m)])
    assert result.exit_code == 0, result.output
    ours = _csv_values(result.stdout)
    ref = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    ref_queries = set(ref)
    our_queries = {q for _, q in ours} - {"all"}
    if complete:
        assert our_queries == set(qrels) and len(our_queries) > len(ref_queries)
    else:
        assert our_queries == ref_queries and "only-in-run" not in our_queries
    names = {m for m, _ in ours}
    for name in names:
        for qid in our_queries:
            want = ref[qid][name] if qid in ref else 0.0
            assert abs(ours[(name, qid)] - want) <= 1e-9, (name, qid)
        mean = sum(ref[q][name] for q in ref) / len(our_queries)
        assert abs(ours[(name, "all")] - mean) <= 1e-9, name


def test_formats(tmp_path):
    qrels_path, run_path, *_ = _random_files(tmp_path, seed=1, n_queries=5)
    trec = _invoke(qrels_path, run_path, "-m", "ndcg_cut.10")
    assert trec.exit_code == 0
    assert len(trec.stdout.splitlines()) == 1  # only the mean without -q
    measure, qid, value = trec.stdout.rstrip("\n").split("\t")
    assert (measure.rstrip(), qid, len(value.split(".")[1])) == ("ndcg_cut_10", "all", 4)
    as_json = json.loads(_invoke(qrels_path, run_path, "-m", "ndcg_cut.10", "-q", "--format", "json").stdout)
    as_csv = _csv_values(_invoke(qrels_path, run_path, "-m", "ndcg_cut.10", "-q", "--format", "csv").stdout)
    assert {(r["measure"], r["query_id"]): r["value"] for r in as_json} == as_csv
    assert abs(as_csv[("ndcg_cut_10", "all")] - float(value)) <= 5e-5


def test_out_is_not_overwritten_without_force(tmp_path):
    qrels_path, run_path, *_ = _random_files(tmp_path, seed=2, n_queries=3)
    out = tmp_path / "result.txt"
    out.write_text("yesterday's figures\n")
    refused = _invoke(qrels_path, run_path, "-m", "map", "--out", str(out))
    assert refused.exit_code == 1 and refused.stderr.startswith("Error: ") and "--force" in refused.stderr
    assert out.read_text() == "yesterday's figures\n"
    assert _invoke(qrels_path, run_path, "-m", "map", "--out", str(out), "--force").exit_code == 0
    assert out.read_text().startswith("map")


def test_duplicate_document_in_run_is_an_error(tmp_path):
    (tmp_path / "qrels").write_text("1 0 a 1\n")
    (tmp_path / "run").write_text("1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n\n1 Q0 a 3 0.5 t\n")
    result = _invoke(str(tmp_path / "qrels"), str(tmp_path / "run"))
    assert result.exit_code == 1
    assert result.stderr == f"Error: {tmp_path / 'run'}:4: document a appears twice for query 1 in the run\n"


def test_the_first_duplicate_in_file_order_is_reported(tmp_path):
    # Interleaved queries, two duplicates: query 2's (line 5) comes before query 1's (line 6).
    (tmp_path / "qrels").write_text("1 0 a 1\n2 0 a 1\n3 0 x 1\n3 0 y 0\n3 0 x 2\n")
    (tmp_path / "run").write_text("1 Q0 a 1 2.0 t\n2 Q0 c 1 1.0 t\n1 Q0 b 2 1.0 t\n2 Q0 d 2 0.5 t\n"
                                  "2 Q0 c 3 0.2 t\n1 Q0 a 3 0.5 t\n")
    result = _invoke(str(tmp_path / "qrels"), str(tmp_path / "run"))
    assert result.exit_code == 1
    # The qrels are checked first: query 3 judges x twice (line 5).
    assert result.stderr == f"Error: {tmp_path / 'qrels'}:5: document x appears twice for query 3 in the qrels\n"
    (tmp_path / "qrels").write_text("1 0 a 1\n2 0 a 1\n")
    result = _invoke(str(tmp_path / "qrels"), str(tmp_path / "run"))
    assert result.stderr == f"Error: {tmp_path / 'run'}:5: document c appears twice for query 2 in the run\n"


@pytest.mark.parametrize(
    ("measure", "message"),
    [
        ("ndcg_cutt.10", "Error: unknown measure 'ndcg_cutt.10'; known measures: runid, num_q"),
        ("P.0", "Error: measure 'P.0': cut-offs must be integers >= 1\n"),
        ("P.5,5", "Error: measure 'P.5,5': a cut-off is given twice\n"),
        ("map.5", "Error: measure 'map' takes no parameters, got 'map.5'\n"),
        ("utility.1,2", "Error: measure 'utility.1,2': utility takes 4 numbers (a,b,c,d)\n"),
        ("ndcg.1=", "Error: measure 'ndcg.1=': parameters must be name=value pairs, got '1='\n"),
        ("P.", "Error: measure 'P.': parameters missing after the dot\n"),
    ],
)
def test_bad_measures(tmp_path, measure, message):
    (tmp_path / "qrels").write_text("1 0 a 1\n")
    (tmp_path / "run").write_text("1 Q0 a 1 2.0 t\n")
    result = _invoke(str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", measure)
    assert result.exit_code == 1
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1


def test_bad_files(tmp_path):
    (tmp_path / "qrels").write_text("1 0 a 1\n")
    (tmp_path / "run").write_text("1 Q0 a 1 2.0\n")
    result = _invoke(str(tmp_path / "qrels"), str(tmp_path / "run"))
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {tmp_path / 'run'}:1: expected 6 whitespace-separated fields (query_id Q0 doc_id rank score tag), got 5\n"
    )
    (tmp_path / "run").write_text("2 Q0 a 1 2.0 t\n")
    result = _invoke(str(tmp_path / "qrels"), str(tmp_path / "run"))
    assert result.exit_code == 1
    assert result.stderr == f"Error: no query of {tmp_path / 'run'} has relevance judgments in {tmp_path / 'qrels'}\n"


def test_a_small_evaluation_does_not_load_numba(tmp_path):
    # numba's start-up (about a second) is paid only for runs large enough to gain from it.
    qrels_path, run_path, *_ = _random_files(tmp_path, seed=3, n_queries=20)
    code = (
        "import sys\n"
        "from ndcg_labeling.scoring.evaluate import evaluate_files\n"
        f"result = evaluate_files({qrels_path!r}, {run_path!r}, ['ndcg_cut.10', 'map'])\n"
        "assert len(result.query_ids) > 10\n"
        "assert 'numba' not in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
