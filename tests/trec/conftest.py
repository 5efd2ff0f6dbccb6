"""Random TREC files for the parity tests: heavy score ties, negative labels, queries judged but not
run and run but not judged, queries with nothing relevant, duplicate-free documents per query."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ndcg_labeling.trec.join import Options

# The -c / -M / -J combinations every reader is held to the line reader under.
OPTIONS = [Options(), Options(complete=True), Options(max_docs=7), Options(judged_only=True, max_docs=20),
           Options(judged_only=True, complete=True)]


def random_files(tmp_path: Path, seed: int = 0, n_queries: int = 60, max_label: int = 3, shuffle: bool = False,
                 all_negative: bool = True):
    rng = np.random.default_rng(seed)
    qrels_lines, run_lines = [], []
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    labels = [-2, -1, 0, 0, *range(1, max_label + 1)]
    for q in range(n_queries):
        qid = f"{q:03d}" if q % 3 else f"topic-{q}"
        n_judged = int(rng.integers(1, 40))
        judged = {f"D{int(d)}": int(rng.choice(labels)) for d in rng.choice(80, n_judged, replace=False)}
        if q % 17 == 0:
            judged = {d: 0 for d in judged}  # judged, nothing relevant
        if all_negative and q % 23 == 5:
            judged = {d: -1 for d in judged}  # every label negative (trec_eval 10 crashes here)
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
    if shuffle:  # queries interleaved
        run_lines = [run_lines[i] for i in rng.permutation(len(run_lines))]
    (tmp_path / "qrels").write_text("\n".join(qrels_lines) + "\n")
    (tmp_path / "run").write_text("\n".join(run_lines) + "\n")
    return str(tmp_path / "qrels"), str(tmp_path / "run"), qrels, run


def assert_same_as_line_reader(joined: Any, qrels: str, run: str, options: Any) -> None:
    """``joined`` (a fast reader's result) equals what the line reader and its join give: the one
    comparison the compiled and the NumPy readers' tests share."""
    from ndcg_labeling.trec import files
    from ndcg_labeling.trec.join import join

    ref = join(files.read_run(run), files.read_qrels(qrels), options, run_path=run, qrels_path=qrels)
    assert joined is not None
    assert joined.query_ids == ref.query_ids
    np.testing.assert_array_equal(joined.lists.rel, ref.lists.rel)
    np.testing.assert_array_equal(joined.lists.num_ret, ref.lists.num_ret)
    np.testing.assert_array_equal(joined.lists.levels, ref.lists.levels)
    np.testing.assert_array_equal(joined.lists.level_counts, ref.lists.level_counts)
    assert (joined.missing == ref.missing).all() and joined.run_id == ref.run_id
    assert (joined.n_positive_judgments, joined.n_qrels_queries) == (ref.n_positive_judgments, ref.n_qrels_queries)
