"""trec_eval's measures by name: ``-m`` values (``ndcg_cut.10``, ``P.5,7``, ``utility.2,-1,0,0``,
``ndcg.1=3,2=9``, ``official``, ``all_trec``) parsed into output columns and computed over
:class:`~ndcg_labeling.metrics._trec_kernels.RankedLists` with trec_eval 10's semantics.

One name grammar with the registry: a trec family maps onto a registry family (``ndcg_cut.10`` is
``ndcg@10``, ``P.5`` is ``p@5``, ``recip_rank`` is ``mrr``, ``infAP`` is ``infap``...; see
:data:`REGISTRY_NAMES`), so :func:`ndcg_labeling.metrics.compute_metrics` and ``report`` reach every
measure here. Bad names and parameters raise ``ValueError``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ndcg_labeling.metrics import _trec_gains as gains
from ndcg_labeling.metrics import _trec_kernels as k
from ndcg_labeling.metrics._trec_kernels import (
    NONPOOL,
    UNJUDGED,
    Context,
    FloatArray,
    RankedLists,
    distinct,
    level_counts,
    ranked_lists_from_scores,
)

__all__ = ["FAMILIES", "JUDGMENT_GROUP_FAMILIES", "NICKNAMES", "PREFERENCE_FAMILIES", "average_groups", "NONPOOL", "UNJUDGED", "Column", "MeasureSet", "RankedLists", "compute", "distinct",
           "level_counts", "parse_measures", "ranked_lists_from_scores", "registry_name", "trec_column_for"]

CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


@dataclass(frozen=True)
class Family:
    """A trec_eval measure: parameter ``kind`` (cut_long, cut_double, p_double, p_pair, none), default
    parameters, value ``form`` (double, long, string), whether rows per query are printed, and the
    ``summary`` over queries (mean, sum, gm: geometric mean, count, none)."""

    kind: str
    defaults: tuple[Any, ...] = ()
    form: str = "double"
    per_query: bool = True
    summary: str = "mean"


# In trec_eval's output order (measures.c, te_trec_measures).
FAMILIES: dict[str, Family] = {
    "runid": Family("none", form="string", per_query=False, summary="none"),
    "num_q": Family("none", form="long", per_query=False, summary="count"),
    "num_ret": Family("none", form="long", summary="sum"),
    "num_rel": Family("none", form="long", summary="sum"),
    "num_rel_ret": Family("none", form="long", summary="sum"),
    "map": Family("none"),
    "gm_map": Family("none", per_query=False, summary="gm"),
    "Rprec": Family("none"),
    "bpref": Family("none"),
    "recip_rank": Family("none"),
    "iprec_at_recall": Family("cut_double", (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)),
    "P": Family("cut_long", CUTS),
    "relstring": Family("p_double", (10.0,), form="string", summary="none"),
    "recall": Family("cut_long", CUTS),
    "infAP": Family("none"),
    "gm_bpref": Family("none", per_query=False, summary="gm"),
    "Rprec_mult": Family("cut_double", (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)),
    "utility": Family("p_double", (1.0, -1.0, 0.0, 0.0)),
    "11pt_avg": Family("p_double", (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)),
    "binG": Family("none"),
    "G": Family("p_pair"),
    "dcg": Family("p_pair"),
    "ideal_dcg": Family("p_pair"),
    "ndcg": Family("p_pair"),
    "ndcg_rel": Family("p_pair"),
    "Rndcg": Family("p_pair"),
    "ndcg_cut": Family("cut_long", CUTS),
    "map_cut": Family("cut_long", CUTS),
    "relative_P": Family("cut_long", CUTS),
    "success": Family("cut_long", (1, 5, 10)),
    "set_P": Family("none"),
    "set_relative_P": Family("none"),
    "set_recall": Family("none"),
    "set_map": Family("none"),
    "set_F": Family("p_double", (1.0,)),
    "num_nonrel_judged_ret": Family("none", form="long", summary="sum"),
    # -R prefs / qrels_prefs only (metrics/trec_prefs.py)
    "prefs_num_prefs_poss": Family("none", form="long", summary="sum"),
    "prefs_num_prefs_ful": Family("none", form="long", summary="sum"),
    "prefs_num_prefs_ful_ret": Family("none", form="long", summary="sum"),
    **{name: Family("none") for name in (
        "prefs_simp", "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret",
        "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp")},
    # -R qrels_jg only: the measure of each judgment group, averaged over the query's groups
    "map_avgjg": Family("none"),
    "P_avgjg": Family("cut_long", CUTS),
    "Rprec_mult_avgjg": Family("cut_double", (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)),
    "yaap": Family("none"),
    "rbp": Family("p_pair"),
    "rbp_resid": Family("p_pair"),
    "unj": Family("cut_long", (5, 10, 20)),
}

NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P"),
    "all_trec": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP",
                 "gm_bpref", "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut",
                 "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map",
                 "set_F", "num_nonrel_judged_ret"),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
            "set_relative_P", "set_map", "set_F"),
    "qrels_jg": ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"),
    "prefs": ("runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret",
              "prefs_simp", "prefs_pair", "prefs_avgjg"),
    "all_prefs": ("runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret",
                  "prefs_simp", "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret",
                  "prefs_pair_ret", "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp",
                  "prefs_pair_imp", "prefs_avgjg_imp"),
}
JUDGMENT_GROUP_FAMILIES = ("map_avgjg", "P_avgjg", "Rprec_mult_avgjg")
PREFERENCE_FAMILIES = tuple(f for f in FAMILIES if f.startswith("prefs_"))

# trec family -> registry family (lower case; ``@k`` where the trec family takes cut-offs).
REGISTRY_NAMES: dict[str, str] = {
    "P": "p", "recip_rank": "mrr", "ndcg_cut": "ndcg", "map_cut": "map", "infAP": "infap", "Rprec": "rprec",
    "Rndcg": "rndcg", "binG": "bing", "relative_P": "relative_p", "set_P": "set_p", "set_relative_P": "set_relative_p",
    "set_F": "set_f", "gm_map": "gm_map", "gm_bpref": "gm_bpref",
}


@dataclass(frozen=True)
class Column:
    """One output measure: ``name`` as trec_eval prints it (``P_5``), its family and parameter."""

    name: str
    family: str
    param: Any = None


@dataclass
class MeasureSet:
    """Parsed ``-m`` values: the families asked for, each with its parameter text (None: defaults)."""

    params: dict[str, str | None] = field(default_factory=dict)

    def columns(self) -> list[Column]:
        out: list[Column] = []
        for fam in FAMILIES:
            if fam in self.params:
                out.extend(_columns(fam, self.params[fam]))
        return out


def parse_measures(specs: Sequence[str] | None, *, default: str = "official") -> MeasureSet:
    """trec_eval ``-m`` values as a :class:`MeasureSet` (trec_eval's order whatever the order given;
    a family given twice keeps the first parameters given, as trec_eval does, also when a set such
    as ``all_trec`` names it too)."""
    out = MeasureSet()
    for spec in specs or [default]:
        spec = spec.strip()
        if spec in NICKNAMES:
            for fam in NICKNAMES[spec]:
                out.params.setdefault(fam, None)
            continue
        name, dot, params = spec.partition(".")
        if name not in FAMILIES:
            raise ValueError(f"unknown measure {spec!r}; known measures: {', '.join(FAMILIES)} "
                             f"and the sets {', '.join(NICKNAMES)}")
        if dot and FAMILIES[name].kind == "none":
            raise ValueError(f"measure {name!r} takes no parameters, got {spec!r}")
        if dot and not params:
            raise ValueError(f"measure {spec!r}: parameters missing after the dot")
        if out.params.get(name) is None:  # parameters given anywhere apply, the first ones win
            out.params[name] = params if dot else None
        _columns(name, out.params[name])  # check now: the error names the value given
    return out


_INT = re.compile(r"^\s*[+-]?\d+")
_FLOAT = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _atol(text: str) -> int:
    m = _INT.match(text)
    return int(m.group(0)) if m else 0


def _atof(text: str) -> float:
    m = _FLOAT.match(text)
    return float(m.group(0)) if m else 0.0


def _columns(fam: str, params: str | None) -> list[Column]:
    spec = FAMILIES[fam]
    given = f"{fam}.{params}"
    if spec.kind == "none":
        return [Column(fam, fam)]
    if spec.kind == "cut_long":
        cuts = sorted(_atol(p) for p in params.split(",")) if params else list(spec.defaults)
        if cuts[0] <= 0:
            raise ValueError(f"measure {given!r}: cut-offs must be integers >= 1")
        if len(set(cuts)) < len(cuts):
            raise ValueError(f"measure {given!r}: a cut-off is given twice")
        return [Column(f"{fam}_{c}", fam, c) for c in cuts]
    if spec.kind == "cut_double":
        values = sorted(_atof(p) for p in params.split(",")) if params else list(spec.defaults)
        if len(set(values)) < len(values):
            raise ValueError(f"measure {given!r}: a parameter is given twice")
        return [Column(f"{fam}_{v:.2f}", fam, v) for v in values]
    if spec.kind == "p_double":
        numbers = tuple(_atof(p) for p in params.split(",")) if params else spec.defaults
        if fam == "utility" and len(numbers) != 4:
            raise ValueError(f"measure {given!r}: utility takes 4 numbers (a,b,c,d)")
        return [Column(f"{fam}_{params}" if params else fam, fam, numbers)]
    return [Column(f"{fam}_{params}" if params else fam, fam, _pairs(given, params))]


def _pairs(given: str, params: str | None) -> tuple[dict[float, float], float]:
    """``label=gain`` pairs (labels that are integers; others ignored as trec_eval does) and rbp's ``p``."""
    out: dict[float, float] = {}
    p = 0.9
    for part in (params.split(",") if params else []):
        name, eq, value = part.partition("=")
        if not eq or not name or not value:
            raise ValueError(f"measure {given!r}: parameters must be name=value pairs, got {part!r}")
        if name == "p":
            p = _atof(value)
        elif re.fullmatch(r"[+-]?\d+", name):
            out[float(int(name))] = _atof(value)
    return out, p


def compute(columns: Sequence[Column], lists: RankedLists, *, relevance_level: float = 1.0,
            num_docs_in_coll: int = 0) -> dict[str, Any]:
    """Per-query values of each column: a float array, or a list of strings (relstring, runid: None)."""
    if lists.rel.shape[1] == 0:  # every ranking empty (-c, -J, -M 0): one column of padding, as an empty list
        lists = RankedLists(np.full((lists.n, 1), np.nan), lists.num_ret, lists.levels, lists.level_counts)
    ctx = Context(lists, float(relevance_level), num_docs_in_coll)
    out: dict[str, Any] = {}
    by_family: dict[str, list[Column]] = {}
    for col in columns:
        by_family.setdefault(col.family, []).append(col)
    for fam, cols in by_family.items():
        base = fam.removesuffix("_avgjg")  # per judgment group: the plain measure (m_*_avgjg.c loops)
        values = _KERNELS[FAMILIES[base].kind](base, cols, ctx)
        for j, col in enumerate(cols):
            out[col.name] = values[j] if isinstance(values, list) else values[:, j]
    return out


def _no_params(fam: str, cols: list[Column], ctx: Context) -> Any:
    if fam == "runid":
        return [None]
    if fam == "num_q":
        return np.ones((ctx.lists.n, 1))
    if fam in ("num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"):
        return k.counts(ctx, fam)[:, None]
    if fam in ("map", "gm_map"):
        ap = k.average_precision(ctx)
        return k.gm(ap) if fam == "gm_map" else ap
    if fam in ("bpref", "gm_bpref", "infAP"):
        v = k.bpref_and_infap(ctx, "infAP" if fam == "infAP" else "bpref")
        return (k.gm(v) if fam == "gm_bpref" else v)[:, None]
    single: dict[str, Callable[[Context], FloatArray]] = {
        "Rprec": k.rprec, "recip_rank": k.recip_rank, "binG": k.bin_g, "yaap": k.yaap,
    }
    if fam in single:
        return single[fam](ctx)[:, None]
    return k.set_measure(ctx, fam)[:, None]


def _cut_long(fam: str, cols: list[Column], ctx: Context) -> Any:
    cuts = tuple(int(c.param) for c in cols)
    if fam == "map_cut":
        return k.average_precision(ctx, cuts)
    if fam == "ndcg_cut":
        return gains.ndcg_cut(ctx, cuts)
    return k.cut_measure(ctx, fam, cuts)


def _cut_double(fam: str, cols: list[Column], ctx: Context) -> Any:
    values = tuple(float(c.param) for c in cols)
    return k.iprec_at_recall(ctx, values) if fam == "iprec_at_recall" else k.rprec_mult(ctx, values)


def _p_double(fam: str, cols: list[Column], ctx: Context) -> Any:
    params = cols[0].param
    if fam == "relstring":
        return [k.relstring(ctx, int(params[0]))]
    if fam == "utility":
        return k.utility(ctx, params)[:, None]
    if fam == "set_F":
        return k.set_measure(ctx, "set_F", float(params[0]))[:, None]
    # 11pt_avg: m_11pt_avg.c adds the points from the last parameter to the first
    return (k.seq_sum(k.iprec_at_recall(ctx, params)[:, ::-1]) / len(params))[:, None]


def _p_pair(fam: str, cols: list[Column], ctx: Context) -> Any:
    pairs, p = cols[0].param
    if fam in ("ndcg", "dcg", "ideal_dcg"):
        return gains.ndcg_family(ctx, fam, pairs)[:, None]
    if fam == "rbp":
        return gains.rbp(ctx, pairs, p)[:, None]
    if fam == "rbp_resid":
        return k.rbp_resid(ctx, p)[:, None]
    fn = {"ndcg_rel": gains.ndcg_rel, "Rndcg": gains.rndcg, "G": gains.g_measure}[fam]
    return fn(ctx, pairs)[:, None]


_KERNELS: dict[str, Callable[[str, list[Column], Context], Any]] = {
    "none": _no_params, "cut_long": _cut_long, "cut_double": _cut_double, "p_double": _p_double, "p_pair": _p_pair,
}


def average_groups(values: dict[str, Any], columns: Sequence[Column], starts: Any, n_rows: int) -> dict[str, Any]:
    """Per query, the mean of its judgment groups' values (rows ``starts[i]`` up to the next start),
    added group by group and divided by the number of groups when there are several, as trec_eval's
    ``*_avgjg`` measures do. ``num_q`` counts queries; ``runid`` has no rows."""
    bounds = np.append(np.asarray(starts, dtype=np.int64), n_rows)
    out: dict[str, Any] = {}
    for col in columns:
        if col.family == "num_q":
            out[col.name] = np.ones(len(starts))
        elif FAMILIES[col.family].form != "string":
            v = np.asarray(values[col.name], dtype=np.float64)
            sums = [float(np.cumsum(v[a:b])[-1]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
            n = np.diff(bounds)
            out[col.name] = np.where(n > 1, np.asarray(sums) / n, np.asarray(sums))
        else:
            out[col.name] = values.get(col.name)
    return out


def registry_name(col: Column) -> str:
    """The registry's name for a trec column: ``ndcg_cut_10`` -> ``ndcg@10``, ``bpref`` -> ``bpref``."""
    base = REGISTRY_NAMES.get(col.family, col.family.lower())
    if FAMILIES[col.family].kind == "cut_long":
        return f"{base}@{col.param}"
    return base if col.name == col.family else col.name


def trec_column_for(family: str, k_value: int | None) -> Column | None:
    """The trec column a registry ``family[@k]`` names (None: not a trec measure)."""
    for fam, reg in [*REGISTRY_NAMES.items(), *((f, f.lower()) for f in FAMILIES)]:
        if reg != family or fam not in FAMILIES or fam in ("runid", "relstring"):
            continue
        spec = FAMILIES[fam]
        if spec.kind == "cut_long":
            if k_value is not None:
                return _columns(fam, str(k_value))[0]
            continue
        if k_value is None:
            return _columns(fam, None)[0]
    return None


def summarise(columns: Sequence[Column], values: dict[str, Any], *, run_id: str = "",
              num_rel_override: int | None = None) -> dict[str, Any]:
    """trec_eval's ``all`` row of each column: the mean over queries; counts summed; gm_map and
    gm_bpref the geometric mean (``exp`` of the mean log); num_q the number of queries;
    ``num_rel_override`` replaces num_rel's sum (trec_eval's ``-c`` counts every positive judgment)."""
    out: dict[str, Any] = {}
    for col in columns:
        how = FAMILIES[col.family].summary
        v = values.get(col.name, [])
        if how == "none":
            out[col.name] = run_id if col.family == "runid" else None
        elif how == "count":
            out[col.name] = float(len(v))
        elif how == "sum":
            out[col.name] = float(np.sum(v))
            if col.family == "num_rel" and num_rel_override is not None:
                out[col.name] = float(num_rel_override)
        elif how == "gm":
            out[col.name] = math.exp(_sequential_sum(v) / len(v)) if len(v) else 0.0
        else:
            out[col.name] = _sequential_sum(v) / len(v) if len(v) else 0.0
    return out


def _sequential_sum(values: Any) -> float:
    """The sum in query order, one addition at a time as trec_eval accumulates it (NumPy's pairwise
    sum differs in the last bits, enough to move a printed 4th decimal now and then)."""
    v = np.asarray(values, dtype=np.float64)
    return float(np.cumsum(v)[-1]) if len(v) else 0.0
