"""The judge gate's checks in words: the newest canary and self-consistency check of a judge (``calibrate``,
``judge canary``, ``judge recheck``). Plain dicts in (as :func:`ndcg_labeling.sources.judge_gate.check_as_dict`
makes them), lines of text out."""

from __future__ import annotations

from typing import Any


def check_line(check: dict[str, Any]) -> str:
    """One line for one stored check: what it measured, its numbers and whether it passed."""
    result = check.get("result") or {}
    when = str(check.get("created_at") or "")[:16].replace("T", " ")
    head = f"({when + ', ' if when else ''}model {check['model']}, prompt {str(check['template_sha256'])[:12]})"
    if check["kind"] == "canary":
        kinds = result.get("kinds", {})
        shown = "; ".join(f"{k}: {v['fooled']} of {v['n']} graded relevant ({v['fooled_rate']:.0%})"
                          for k, v in kinds.items())
        verdict = "passed" if check["passed"] else "FAILED"
        return f"Canary: {verdict}: {shown} (the gate allows at most {check['threshold']:.0%} per kind) {head}"
    kappa = result.get("kappa_quadratic")
    shown = (f"{result.get('exact', 0)} of {check['n']} re-judged items got the same grade "
             f"({result.get('exact_share', 0.0):.0%}), quadratic-weighted kappa "
             f"{'undefined' if kappa is None else format(kappa, '.2f')}")
    return f"Self-consistency: {shown} {head}"


def gate_lines(checks: list[dict[str, Any]]) -> list[str]:
    """The lines ``calibrate`` prints under its tables: each check that ran, and what did not run."""
    lines = [check_line(c) for c in checks]
    kinds = {c["kind"] for c in checks}
    if "canary" not in kinds:
        lines.append("Canary: none ran (`ndcg-labeling judge canary`): keyword stuffing and injected instructions "
                     "are not measured")
    if "recheck" not in kinds:
        lines.append("Self-consistency: not measured (`ndcg-labeling judge recheck`)")
    return lines


GATE_TABLE_COLUMNS: tuple[str, ...] = ("scope", "n", "kappa quadratic", "kappa unweighted", "kappa binary",
                                       "leniency", "tau", "tau_ap", "tau top 5", "tau_ap top 5", "per-query tau")


def _with_interval(row: dict[str, Any], name: str, spec: str = ".2f") -> str:
    value, low, high = row.get(name), row.get(f"{name}_low"), row.get(f"{name}_high")
    if value is None:
        return "-"
    shown = format(value, spec)
    return shown if low is None or high is None else f"{shown} [{format(low, spec)}, {format(high, spec)}]"


def gate_table_rows(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The terminal's gate table: each measure with its 95 % interval in brackets (csv and json keep the
    columns apart: ``kappa_binary``, ``kappa_binary_low``, ...)."""
    def num(v: Any, spec: str = ".2f") -> str:
        return "-" if v is None else format(v, spec)

    out = []
    for r in rows:
        per_query = "-" if r.get("query_tau_mean") is None else (
            f"{r['query_tau_mean']:.2f} ± {num(r.get('query_tau_sd'))} ({r['query_tau_n']} queries)")
        out.append({"scope": str(r["scope"]), "n": str(r["n"]),
                    "kappa quadratic": _with_interval(r, "kappa_quadratic"),
                    "kappa unweighted": _with_interval(r, "kappa_unweighted"),
                    "kappa binary": _with_interval(r, "kappa_binary"), "leniency": _with_interval(r, "leniency", "+.2f"),
                    "tau": num(r.get("tau")), "tau_ap": num(r.get("tau_ap")), "tau top 5": num(r.get("tau_top5")),
                    "tau_ap top 5": num(r.get("tau_ap_top5")), "per-query tau": per_query})
    return out
