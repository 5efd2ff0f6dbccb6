"""`eval` against pytrec_eval (trec_eval 9 inside) on random files: every measure pytrec_eval has, per
query, within 1e-9 - score ties, negative labels, -l and -J included.

Where trec_eval 10 changed a rule, the comparison keeps to the cases both versions define alike:
iprec_at_recall and 11pt_avg turn a recall into a number of documents with ``lround(p * R)`` in 10 and
``(long)(p * R + 0.9)`` in 9; queries whose cut-offs differ under the two rules are left out (trec_eval
10's rule is checked by its own reference outputs). Queries whose every label is negative are left out
of pytrec_eval's input: trec_eval 9 and 10 crash on them (ours: tests below).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ndcg_labeling.scoring.evaluate import evaluate_files
from tests.trec.conftest import random_files

pytrec_eval = pytest.importorskip("pytrec_eval")
SKIP = {"runid", "relstring", "num_q"}


def _cuts_agree(fam: str, params: list[float], num_rel: float) -> bool:
    return all(math.floor(p * num_rel + 0.5) == int(p * num_rel + 0.9) for p in params)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("level", "judged_only"), [(1, False), (2, False), (1, True), (3, True)])
def test_every_pytrec_eval_measure_per_query(tmp_path, seed, level, judged_only):
    qrels_path, run_path, qrels, run = random_files(tmp_path, seed=seed, shuffle=seed % 2 == 1,
                                                    max_label=2 + seed % 3)
    safe = {q: j for q, j in qrels.items() if max(j.values()) >= 0}
    ref = pytrec_eval.RelevanceEvaluator(safe, {"all_trec"}, relevance_level=level,
                                         judged_docs_only_flag=judged_only).evaluate(run)
    ours = evaluate_files(qrels_path, run_path, ["all_trec"], relevance_level=level, judged_only=judged_only)
    assert set(ref) <= set(ours.query_ids) and "only-in-run" not in ours.query_ids
    compared = 0
    for col in ours.columns:
        if col.family in SKIP or col.family in ("rbp", "rbp_resid", "unj"):  # not in trec_eval 9
            continue
        params = list(ours.columns[i].param for i in range(len(ours.columns)) if ours.columns[i].family == col.family)
        for i, q in enumerate(ours.query_ids):
            if q not in ref:
                continue
            if col.family == "iprec_at_recall" and not _cuts_agree(col.family, [col.param], ref[q]["num_rel"]):
                continue
            if col.family == "11pt_avg" and not _cuts_agree(col.family, [p / 10 for p in range(11)], ref[q]["num_rel"]):
                continue
            want, got = ref[q][col.name], float(ours.values[col.name][i])
            assert (math.isnan(want) and math.isnan(got)) or abs(got - want) <= 1e-9, (col.name, q, got, want)
            compared += 1
        assert params
    assert compared > 3000


@pytest.mark.parametrize("seed", range(3))
def test_level_zero_counts_negative_labels_as_judged_never_relevant(tmp_path, seed):
    # Defect: -l 0 made -1/-2 documents relevant. At level 0 the relevant documents are those labelled
    # >= 0; shifting every label >= 0 up by one and asking pytrec_eval at level 1 (it refuses 0) gives
    # the same relevant set, the same judged set and the same unjudged set.
    qrels_path, run_path, qrels, run = random_files(tmp_path, seed=seed, all_negative=False)
    shifted = {q: {d: (r + 1 if r >= 0 else r) for d, r in j.items()} for q, j in qrels.items()
               if max(j.values()) >= 0}
    measures = {"map", "P", "recall", "recip_rank", "Rprec", "bpref", "infAP", "num_rel", "num_rel_ret",
                "success", "set_F", "relative_P", "binG", "map_cut", "Rprec_mult", "utility"}
    ref = pytrec_eval.RelevanceEvaluator(shifted, measures, relevance_level=1).evaluate(run)
    ours = evaluate_files(qrels_path, run_path, sorted(measures), relevance_level=0)
    for col in ours.columns:
        for i, q in enumerate(ours.query_ids):
            if q in ref:
                assert abs(float(ours.values[col.name][i]) - ref[q][col.name]) <= 1e-9, (col.name, q)


def test_level_zero_on_trec_evals_rel_level_qrels():
    # The example: query 303 of trec_eval's qrels.rel_level at -l 0, P_10 0.5 in trec_eval.
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
    ours = evaluate_files(data / "qrels.rel_level", data / "results.test", ["P.10"], relevance_level=0)
    assert float(ours.values["P_10"][ours.query_ids.index("303")]) == 0.5


def test_a_query_whose_labels_are_all_negative_scores_zero(tmp_path):
    # trec_eval 10 segfaults here; such a query has no relevant and no judged document.
    (tmp_path / "qrels").write_text("1 0 a -1\n1 0 b -2\n2 0 a 1\n")
    (tmp_path / "run").write_text("1 Q0 a 1 2.0 t\n1 Q0 c 2 1.0 t\n2 Q0 a 1 1.0 t\n")
    ours = evaluate_files(tmp_path / "qrels", tmp_path / "run", ["all_trec"])
    row = ours.query_ids.index("1")
    for col in ours.columns:
        if col.family in SKIP or col.family in ("gm_map", "gm_bpref", "Rndcg"):
            continue
        value = ours.values[col.name][row]
        want = {"num_ret": 2, "unj_5": 0.4, "unj_10": 0.2, "unj_20": 0.1, "utility": -2.0}.get(col.name, 0.0)
        if col.family == "rbp_resid":
            want = 0.9**2 + 0.1 * (1 + 0.9)
        assert abs(float(value) - want) <= 1e-12, col.name
    assert ours.values["Rndcg"][row] == 0.0 and np.isfinite(ours.values["gm_map"][row])
