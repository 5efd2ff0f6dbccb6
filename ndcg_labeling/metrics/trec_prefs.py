"""trec_eval's preference measures (``-R prefs`` / ``-R qrels_prefs``, the ``prefs_*`` measures) for
one query: ``form_prefs_counts.c`` and the ``m_prefs_*.c`` loops, in their order.

A preference line is (judgment group, judgment subgroup, relevance level, document). Within a
subgroup a document is preferred to every document of a lower level. A group with one subgroup is a
list of equivalence classes (ECs); one with several subgroups a preference array, closed under
transitivity. Each preference A > B is counted as fulfilled or possible among the retrieved
documents ("ret": both retrieved), implied (one retrieved) or not occurring (neither).

Documents are numbered as trec_eval numbers them (``docid_rank``): the judged retrieved ones by rank
from 0, the judged ones not retrieved after them in byte order of their ids. Imports numpy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ndcg_labeling.errors import PrefsError

Pref = tuple[str, str, float, str]  # judgment group, subgroup, relevance level, document id


@dataclass
class Group:
    """One judgment group's counts (``JG`` in trec_format.h) and its ECs or preference array."""

    ful_ret: int = 0
    poss_ret: int = 0
    ful_imp: int = 0
    poss_imp: int = 0
    notoccur: int = 0
    num_rel: int = 0
    num_rel_ret: int = 0
    num_nonrel: int = 0
    num_nonrel_ret: int = 0
    ecs: list[list[int]] = field(default_factory=list)  # docid ranks of each EC, level descending
    array: npt.NDArray[np.bool_] | None = None  # preference array (several subgroups)
    rel: npt.NDArray[np.float64] | None = None  # level of each docid in the array (-1: none)


@dataclass
class QueryPrefs:
    """``RESULTS_PREFS``: the groups, judged documents, judged retrieved ones, summed preference counts."""

    groups: list[Group]
    num_judged: int
    num_judged_ret: int
    counts: npt.NDArray[np.int64]


def form_prefs_counts(ranked: list[str], prefs: list[Pref]) -> QueryPrefs:
    """The counts of one query from its ranked document ids (already cut at ``-M``) and its
    preference lines."""
    judged = {p[3] for p in prefs}
    ret = [d for d in ranked if d in judged]
    rank = {d: i for i, d in enumerate(ret)}
    for d in sorted(judged - rank.keys(), key=str.encode):
        rank[d] = len(rank)
    nj, njr = len(rank), len(ret)
    lines = sorted(((g, s, lvl, rank[d], d) for g, s, lvl, d in prefs),
                   key=lambda t: (t[0].encode(), t[1].encode(), -t[2], t[3]))
    counts = np.zeros((nj, nj), dtype=np.int64)
    groups = []
    start = 0
    for i in range(1, len(lines) + 1):
        if i == len(lines) or lines[i][0] != lines[start][0]:
            part = lines[start:i]
            if len({t[1] for t in part}) > 1:
                groups.append(_array_group(part, nj, njr, counts))
            else:
                groups.append(_ec_group(part, njr, counts))
            start = i
    return QueryPrefs(groups, nj, njr, counts)


def _ec_group(part: list[tuple[str, str, float, int, str]], njr: int, counts: npt.NDArray[np.int64]) -> Group:
    """``form_jg_ec`` and ``add_ec_pref_to_jg``."""
    g = Group()
    levels: list[float] = []
    for _, _, lvl, r, _ in part:
        if not levels or lvl != levels[-1]:
            levels.append(lvl)
            g.ecs.append([])
        g.ecs[-1].append(r)
    for e1, ranks1 in enumerate(g.ecs):
        r1 = np.asarray(ranks1, dtype=np.int64)
        n_ret = int((r1 < njr).sum())
        if levels[e1] > 0.0:
            g.num_rel_ret += n_ret
            g.num_rel += len(r1)
        else:
            g.num_nonrel_ret += n_ret
            g.num_nonrel += len(r1)
        for ranks2 in g.ecs[e1 + 1:]:
            a = np.repeat(r1, len(ranks2))
            b = np.tile(np.asarray(ranks2, dtype=np.int64), len(r1))
            np.add.at(counts, (a, b), 1)
            if (a == b).any():
                raise PrefsError(f"a document has two relevance levels in one judgment subgroup ({part[0][0]})")
            ful = a < b
            g.ful_ret += int((ful & (b < njr)).sum())
            g.ful_imp += int((ful & (b >= njr) & (a < njr)).sum())
            g.notoccur += int((ful & (a >= njr)).sum()) + int((~ful & (a >= njr) & (b >= njr)).sum())
            g.poss_ret += int((~ful & (a < njr)).sum())
            g.poss_imp += int((~ful & (a >= njr) & (b < njr)).sum())
    g.poss_ret += g.ful_ret
    g.poss_imp += g.ful_imp
    return g


def _array_group(part: list[tuple[str, str, float, int, str]], nj: int, njr: int,
                 counts: npt.NDArray[np.int64]) -> Group:
    """``form_jg_pa``, ``add_transitives`` and ``add_pa_pref_to_jg``."""
    g = Group(array=np.zeros((nj, nj), dtype=bool), rel=np.full(nj, -1.0))
    pa, rel = g.array, g.rel
    assert pa is not None and rel is not None
    for i, (_, jsg, lvl, r, doc) in enumerate(part):
        if (rel[r] > 0.0 and lvl == 0.0) or (rel[r] == 0.0 and lvl > 0.0):
            raise PrefsError(f"document {doc} has both 0 and non-0 relevance levels ({part[0][0]})")
        rel[r] = lvl
        j = i + 1
        while j < len(part) and part[j][1] == jsg and part[j][2] == lvl:
            j += 1
        while j < len(part) and part[j][1] == jsg:
            pa[r, part[j][3]] = True
            j += 1
    closure = pa | np.eye(nj, dtype=bool)
    while True:  # the reflexive-transitive closure (trec_eval multiplies until nothing changes)
        step = (closure.astype(np.int64) @ closure.astype(np.int64)) > 0
        if (step == closure).all():
            break
        closure = step
    np.fill_diagonal(closure, False)
    if (closure & closure.T).any():
        raise PrefsError(f"inconsistent preferences in judgment group {part[0][0]}")
    pa[:] = closure
    ret = np.arange(nj) < njr
    g.num_rel_ret, g.num_nonrel_ret = int((rel[ret] > 0.0).sum()), int((rel[ret] == 0.0).sum())
    g.num_rel, g.num_nonrel = int((rel > 0.0).sum()), int((rel == 0.0).sum())
    counts += pa
    i_idx, j_idx = np.nonzero(pa)
    ri, rj = i_idx < njr, j_idx < njr
    g.poss_ret = int((ri & rj & (j_idx < i_idx)).sum())
    g.ful_ret = int((ri & rj & (j_idx > i_idx)).sum())
    g.ful_imp = int((ri & ~rj).sum())
    g.poss_imp = int((~ri & rj).sum()) + g.ful_imp
    g.notoccur = int((~ri & ~rj).sum())
    g.poss_ret += g.ful_ret
    return g


# --- the measures (m_prefs_*.c) ----------------------------------------------------------------


def _ratio_sum(groups: list[Group], which: str) -> float:
    """Sum over groups of fulfilled / possible (groups without a possible preference add nothing)."""
    total = 0.0
    for g in groups:
        ful, poss = _ful_poss(g, which)
        if poss:
            total += ful / poss
    return total


def _ful_poss(g: Group, which: str) -> tuple[int, int]:
    if which == "ret":
        return g.ful_ret, g.poss_ret
    if which == "imp":
        return g.ful_ret + g.ful_imp, g.poss_ret + g.poss_imp
    return g.ful_ret + g.ful_imp, g.poss_ret + g.poss_imp + g.notoccur


def _pair(qp: QueryPrefs, which: str) -> float:
    """prefs_pair(_ret, _imp): the mean over document pairs with a preference of the share that the
    ranking fulfils, added pair by pair in trec_eval's order."""
    c, njr, nj = qp.counts, qp.num_judged_ret, qp.num_judged
    total, pairs = 0.0, 0
    blocks = [(i, range(i + 1, njr)) for i in range(njr)]  # both retrieved
    if which != "ret":  # then one retrieved (a second pass, as trec_eval's second loop)
        blocks += [(i, range(njr, nj)) for i in range(njr)]
    cl = c.tolist()
    for i, js in blocks:
        for j in js:
            if cl[i][j] or cl[j][i]:
                pairs += 1
                total += cl[i][j] / (cl[i][j] + cl[j][i])
    if which == "all":
        both = c[njr:, njr:]
        pairs += int(np.triu((both + both.T) > 0, k=1).sum())
    return total / pairs if pairs else 0.0


def _avg_rnonrel(qp: QueryPrefs, ret_only: bool) -> float:
    """prefs_avgjg_Rnonrel(_ret): per group only the first R non-relevant documents count."""
    total = 0.0
    for g in qp.groups:
        big_r, big_n = (g.num_rel_ret, g.num_nonrel_ret) if ret_only else (g.num_rel, g.num_nonrel)
        if big_r >= big_n:
            ful, poss = (g.ful_ret, g.poss_ret) if ret_only else _ful_poss(g, "all")
            ful += g.num_rel_ret * (big_r - big_n)
            poss += g.num_rel * (big_r - big_n)
        else:
            ful, poss = _recalculate(g, qp.num_judged_ret, qp.num_judged, ret_only)
        total += ful / poss if poss else math.nan  # C's 0/0 is NaN: the sum stays NaN, the value 0
    return total / len(qp.groups) if total > 0.0 else 0.0


def _recalculate(g: Group, njr: int, nj: int, ret_only: bool) -> tuple[int, int]:
    """``recalculate`` of m_prefs_avgjg_Rnonrel(_ret).c."""
    ful = poss = 0
    if g.ecs:
        keep = g.num_rel_ret if ret_only else g.num_rel
        new_nonrel = g.ecs[-1][:keep]  # trec_eval takes the first R docids of the last EC
        pairs = [(a, b) for e1 in range(len(g.ecs)) for e2 in range(e1 + 1, len(g.ecs) - 1)
                 for a in g.ecs[e1] for b in g.ecs[e2]]
        pairs += [(a, b) for ec in g.ecs for a in ec for b in new_nonrel]
        for a, b in pairs:
            if ret_only and (a >= njr or b >= njr):
                continue
            if a < b and (ret_only or a < njr):
                ful += 1
            else:
                poss += 1
        return ful, poss + ful
    assert g.array is not None and g.rel is not None
    pa, rel = g.array, g.rel
    limit = njr if ret_only else nj
    seen, first = 0, limit
    for i in range(limit):
        if rel[i] == 0.0:
            seen += 1
            if seen == g.num_rel + 1:
                first = i
                break
    use = ~((np.arange(nj) >= first) & (rel == 0.0))
    sub = pa & use[:, None] & use[None, :]
    i_idx, j_idx = np.nonzero(sub)
    ri, rj = i_idx < njr, j_idx < njr
    poss += int((ri & rj & (j_idx < i_idx)).sum())
    ful += int((ri & rj & (j_idx > i_idx)).sum())
    if not ret_only:
        ful += int((ri & ~rj).sum())
        poss += int((~ri).sum())
    return ful, poss + ful


def _num_prefs(g: Group, which: str) -> int:
    if which == "possible":
        return g.poss_ret + g.poss_imp + g.notoccur
    return g.ful_ret + g.ful_imp if which == "fulfilled" else g.ful_ret


def measure(qp: QueryPrefs, name: str) -> float:
    """The value of one ``prefs_*`` measure for the query."""
    if name.startswith("prefs_num_prefs"):
        which = {"prefs_num_prefs_poss": "possible", "prefs_num_prefs_ful": "fulfilled"}.get(name, "ret")
        return float(sum(_num_prefs(g, which) for g in qp.groups))
    if name == "prefs_avgjg_Rnonrel":
        return _avg_rnonrel(qp, ret_only=False)
    if name == "prefs_avgjg_Rnonrel_ret":
        return _avg_rnonrel(qp, ret_only=True)
    base, _, which = name.removeprefix("prefs_").partition("_")
    which = which or "all"
    if base == "pair":
        return _pair(qp, which)
    if base == "simp":
        ful = sum(_ful_poss(g, which)[0] for g in qp.groups)
        poss = sum(_ful_poss(g, which)[1] for g in qp.groups)
        return ful / poss if poss else 0.0
    total = _ratio_sum(qp.groups, which)  # avgjg
    return total / len(qp.groups) if total > 0.0 else 0.0


def values(queries: list[QueryPrefs], names: list[str]) -> dict[str, Any]:
    """Per-query values of each measure, as float arrays."""
    return {n: np.array([measure(q, n) for q in queries], dtype=np.float64) for n in names}
