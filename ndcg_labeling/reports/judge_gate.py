"""The judge gate's checks in words: the newest canary and self-consistency check of a judge (``calibrate``,
``judge canary``, ``judge recheck``). Plain dicts in (as :func:`ndcg_labeling.sources.judge_gate.check_as_dict`
makes them), lines of text out."""

from __future__ import annotations

from typing import Any


def check_line(check: dict[str, Any]) -> str:
    """One line for one stored check: what it measured, its numbers and whether it passed."""
    result = check.get("result") or {}
    when = str(check.get("created_at", ""))[:16].replace("T", " ")
    head = f"{check['kind']} ({when}, model {check['model']}, prompt {str(check['template_sha256'])[:12]})"
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
