"""What a lead reads first: the headline, the label-quality caveats and the CI gate's verdict in words.

Pure functions of a finished :class:`~ndcg_labeling.results.ReportResult` (no database).

* :func:`headline_items`: per query group (``all`` first), the best system on the headline metric and
  every difference to the baseline in words — "hybrid beats bm25 on ndcg@10 by +0.138 [+0.09, +0.18],
  p < 0.001, 29/3/8 of 40 queries" — or, when the Holm-corrected p is not below 0.05, "no detectable
  difference (MDE ±0.05 at 80% power)"; then a warning line per label-quality problem.
* :func:`caveat_rows`: alpha, items pending adjudication and top-k holes per query type;
* :func:`caveat_advice`, :func:`coverage_advice`: what to run about the warnings, for the command-line
  renderers only (terminal, Markdown, the csv/json stderr lines); the warnings state facts.
* :func:`gate_line`: the ``report --gate`` decision (taken by the pipeline) in one line.

**One test, one interval, one p-value per comparison** (issue 45): the paired t-test,
Bonferroni-corrected over the systems compared with the baseline in the group (``t_p_bonf``), and its
simultaneous interval (each at ``1 - 0.05 / m``, ``t_ci_adj_*``), which excludes 0 exactly when the
corrected p is below 0.05; the tables show the same p and interval. The best system's line reuses that
comparison when the best or the runner-up is the baseline; otherwise best vs runner-up is one more paired t-test,
uncorrected, with its own 95% interval (the two agree too). The sign-flip test stays in the JSON as a
check; a line says (without a second p-value) when it disagrees. A group with fewer than
:data:`~ndcg_labeling.stats.MIN_TEST_QUERIES` queries is not tested at all.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ndcg_labeling.results import ALL, JUDGED_WARN_BELOW, POWER, SIGNIFICANCE, headline_metric
from ndcg_labeling.stats import MIN_TEST_QUERIES

if TYPE_CHECKING:
    from rich.console import Console

    from ndcg_labeling.results import GateDecision, ReportResult

#: Krippendorff's alpha below which conclusions from the labels are tentative (Krippendorff 2004)
ALPHA_TENTATIVE = 0.667
#: share of top-k items flagged for adjudication or unjudged above which the headline warns
HOLES_WARN_ABOVE = 0.05
#: the column that decides a line: the paired t-test, Bonferroni-corrected (with the interval below)
P_COLUMN = "t_p_bonf"
#: the simultaneous interval that agrees with :data:`P_COLUMN`
CI_COLUMNS = ("t_ci_adj_low", "t_ci_adj_high")
#: the sign-flip test, kept as a check (a line says when it disagrees)
CHECK_COLUMN = "rand_p_holm"
LEGEND = ("p: paired t-test, Bonferroni-corrected over the systems compared with the baseline in each query "
          "group; interval: the matching simultaneous 95% interval of the mean difference (it excludes 0 exactly "
          "when p < 0.05); W/T/L: queries won/tied/lost; MDE: the difference the t-test on these queries detects "
          f"with {POWER:.0%} power; groups of fewer than {MIN_TEST_QUERIES} queries are not tested")

def _p(p: float) -> str:
    if p is None or math.isnan(p):
        return "p n/a"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def signed_bound(x: float) -> str:
    """An interval bound at 3 decimals, with more digits where those would print a nonzero bound as
    ±0.000: an interval that excludes 0 never reads as touching it."""
    text = f"{x:+.3f}"
    return f"{x:+.2g}" if x != 0 and float(text) == 0 else text


def _ci(lo: float, hi: float, sign: bool) -> str:
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return "[no interval]"
    if sign:  # a difference's interval at the precision of the difference (as in the tables)
        return f"[{signed_bound(lo)}, {signed_bound(hi)}]"
    return f"[{lo:.2f}, {hi:.2f}]"


def _group_name(qt: str) -> str:
    return "overall" if qt == ALL else qt


def groups(result: ReportResult) -> list[str]:
    """The query groups of the headline: ``all`` first, then the query types."""
    return [ALL] + list(result.query_types)


def _finite(x: Any) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def too_few(n: int) -> str:
    return f"too few queries to test (n = {n}; a sign-flip test needs >= {MIN_TEST_QUERIES})"


def comparison_text(r: Any, metric: str, baseline: str) -> tuple[str, str]:
    """``(verdict, sentence)`` of one comparison row (system vs baseline in one group)."""
    n = int(r["n_queries"])
    wtl = f"{int(r['wins'])}/{int(r['ties'])}/{int(r['losses'])} of {n} queries"
    diff, sd = r["diff"], r.get("diff_sd", float("nan"))
    head = f"{r['system']} vs {baseline} on {metric}"
    if not _finite(diff):
        return "no detectable difference", f"{head}: no detectable difference; no scores"
    if int(r["ties"]) == n:
        return "no detectable difference", f"{head}: identical on every one of {n} queries"
    if n < MIN_TEST_QUERIES:
        return "too few queries", f"{head}: {too_few(n)}; {diff:+.3f}, {wtl}"
    mde = r.get("mde", float("nan"))
    if _finite(sd) and sd == 0:
        mde_text = "the same difference on every query"
    else:
        mde_text = "MDE n/a" if not _finite(mde) else f"MDE ±{mde:.2f}"
    p, check = r[P_COLUMN], r.get(CHECK_COLUMN, float("nan"))
    lo, hi = r.get(CI_COLUMNS[0], float("nan")), r.get(CI_COLUMNS[1], float("nan"))
    ci = _ci(lo, hi, sign=True)
    significant = _finite(p) and p < SIGNIFICANCE
    why = ""
    if _finite(check) and (check < SIGNIFICANCE) != significant:
        why = "; the sign-flip test (a check) disagrees"
    if significant:
        verb, verdict = ("beats", "better") if diff > 0 else ("loses to", "worse")
        return verdict, f"{r['system']} {verb} {baseline} on {metric} by {diff:+.3f} {ci}, {_p(p)}, {wtl}; {mde_text}{why}"
    return "no detectable difference", (f"{head}: no detectable difference ({mde_text} at {POWER:.0%} power); "
                                        f"{diff:+.3f} {ci}, {_p(p)}, {wtl}{why}")


def _best(result: ReportResult, qt: str, metric: str) -> dict[str, Any] | None:
    """The best system of a group and, from ``result.leaders``, whether it is detectably ahead of the
    runner-up: by the comparison with the baseline when the best or the runner-up is the baseline (the same p
    and interval as that line), else by one more paired t-test (uncorrected, p < 0.05)."""
    s = result.summary
    rows = s[(s["query_type"] == qt) & (s["metric"] == metric)].dropna(subset=["value"])
    if rows.empty:
        return None
    top = rows.loc[rows["value"].idxmax()]
    text = (f"{top['system']} is best on {metric}: {top['value']:.3f} {_ci(top['ci_low'], top['ci_high'], False)}, "
            f"{int(top['n_queries'])} queries")
    item: dict[str, Any] = {"kind": "best", "system": str(top["system"]), "baseline": None, "runner_up": None,
                            "ahead": None}
    lead = result.leaders
    if lead is not None and not lead.empty:
        hit = lead[lead["query_type"] == qt]
        if len(hit) and hit.iloc[0]["runner_up"] is not None and hit.iloc[0]["system"] == top["system"]:
            r = hit.iloc[0]
            ci = _ci(r.get("ci_low", float("nan")), r.get("ci_high", float("nan")), True)
            other = r["runner_up"] if r["system"] == result.baseline else r["system"]
            same = (_comparison_row(result, qt, metric, other) if result.baseline in (r["system"], r["runner_up"])
                    else None)
            if int(r["n_queries"]) < MIN_TEST_QUERIES:
                item.update(runner_up=str(r["runner_up"]), ahead=None)
                text += f"; ahead of {r['runner_up']}? {too_few(int(r['n_queries']))}"
            elif same is not None:
                # the same pair as a line below (best or runner-up is the baseline): its verdict, without a
                # second p-value or interval; that line's diff is `other` minus the baseline
                toward_best = same["diff"] if other == r["system"] else -same["diff"]
                ahead = bool(_finite(same[P_COLUMN]) and same[P_COLUMN] < SIGNIFICANCE and toward_best > 0)
                item.update(runner_up=str(r["runner_up"]), ahead=ahead)
                text += (f"; {'ahead of' if ahead else 'not detectably ahead of'} {r['runner_up']} "
                         f"({r['runner_up_value']:.3f}; the line {other} vs {result.baseline} below)")
            else:
                ahead = bool(r["t_p"] < SIGNIFICANCE)
                item.update(runner_up=str(r["runner_up"]), ahead=ahead)
                if ahead:
                    text += (f"; ahead of {r['runner_up']} by {r['diff']:+.3f} {ci} ({_p(r['t_p'])}, paired t-test "
                             "of this pair, 95% interval, not corrected)")
                else:
                    text += (f"; not detectably ahead of {r['runner_up']} ({r['runner_up_value']:.3f}; "
                             f"{r['diff']:+.3f} {ci}, {_p(r['t_p'])}, paired t-test of this pair, 95% interval, "
                             "not corrected)")
    item["text"] = text
    return item


def _comparison_row(result: ReportResult, qt: str, metric: str, system: str) -> Any:
    """The comparison row of ``system`` vs the baseline in group ``qt`` on ``metric`` (None if none)."""
    c = result.comparisons
    if c.empty:
        return None
    hit = c[(c["query_type"] == qt) & (c["metric"] == metric) & (c["system"] == system)]
    return None if hit.empty else hit.iloc[0]


def headline_items(result: ReportResult) -> list[dict[str, Any]]:
    """The headline as items ``{query_type, kind, system, baseline, metric, text}``; ``kind`` is
    ``best``, ``better``, ``worse``, ``no detectable difference`` or ``warning``. ``text`` starts with
    the group ("overall: ..." / "navigational: ...") except for warnings."""
    metric = headline_metric(result.metrics, result.options)
    items: list[dict[str, Any]] = [{"query_type": None, "kind": "warning", "system": None, "baseline": None,
                                    "metric": None, "text": w} for w in caveat_warnings(result)]
    c = result.comparisons
    for qt in groups(result):
        best = _best(result, qt, metric)
        if best is not None:
            items.append({"query_type": qt, **best, "metric": metric, "text": f"{_group_name(qt)}: {best['text']}"})
        if c.empty:
            continue
        rows = c[(c["query_type"] == qt) & (c["metric"] == metric)]
        for _, r in rows.iterrows():
            verdict, text = comparison_text(r, metric, str(result.baseline))
            items.append({"query_type": qt, "kind": verdict, "system": str(r["system"]),
                          "baseline": str(result.baseline), "metric": metric, "text": f"{_group_name(qt)}: {text}"})
    return items


def caveat_rows(result: ReportResult) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the label-quality table: per group alpha, labelled items, items pending
    adjudication, and the top-k rows without a label or pending (empty without caveats)."""
    cv = result.caveats
    if cv is None:
        return [], []
    header = ["query type", "Krippendorff's alpha", "labelled items", "items pending adjudication",
              f"top-{cv.k} positions unjudged", f"top-{cv.k} positions pending"]
    rows = []
    for qt in list(result.query_types) + [ALL]:
        alpha = cv.alpha.get(qt)
        total = cv.top_k_rows.get(qt, 0)

        def share(count: int, of: int) -> str:
            return f"{count:,} ({count / of:.1%})" if of else "0"

        rows.append([qt, "-" if alpha is None else f"{alpha:.3f}", f"{cv.items.get(qt, 0):,}",
                     share(cv.pending.get(qt, 0), cv.items.get(qt, 0)), share(cv.top_k_unjudged.get(qt, 0), total),
                     share(cv.top_k_pending.get(qt, 0), total)])
        if cv.judge_filled.get(ALL, 0):  # the column shows only when a judge filled labels (issue 28)
            rows[-1].append(share(cv.judge_filled.get(qt, 0), cv.items.get(qt, 0)))
    if cv.judge_filled.get(ALL, 0):
        header.append("labels from a judge")
    return header, rows


def caveat_notes(result: ReportResult) -> list[str]:
    """What the caveat table cannot show: why alpha is missing, the untrusted graders."""
    cv = result.caveats
    if cv is None:
        return []
    notes = list(cv.notes)
    if cv.untrusted_graders is None:
        notes.append("grader trust: no gold-item quality data (untrusted graders cannot be shown)")
    elif cv.untrusted_graders:
        notes.append(f"untrusted graders: {', '.join(cv.untrusted_graders)}")
    return notes


def caveat_warnings(result: ReportResult) -> list[str]:
    """Warning lines for the headline: alpha below 0.667, more than 5% of the top-k items flagged or
    unjudged, untrusted graders among those who graded."""
    cv = result.caveats
    if cv is None:
        return []
    out = []
    low = [(qt, a) for qt in list(result.query_types) + [ALL] if (a := cv.alpha.get(qt)) is not None
           and a < ALPHA_TENTATIVE]
    if low:
        where = ", ".join(f"{'overall' if qt == ALL else qt} {a:.2f}" for qt, a in low)
        out.append(f"labels are noisy: Krippendorff's alpha is below {ALPHA_TENTATIVE} ({where}); conclusions "
                   "from these labels are tentative")
    total = cv.top_k_rows.get(ALL, 0)
    holes = cv.top_k_unjudged.get(ALL, 0) + cv.top_k_pending.get(ALL, 0)
    if _many_holes(result):
        out.append(f"{holes / total:.1%} of the scored top-{cv.k} positions (system, query, rank) are pending "
                   f"adjudication ({cv.top_k_pending.get(ALL, 0):,} positions; {cv.pending.get(ALL, 0):,} items "
                   f"in the adjudication queue) or unjudged ({cv.top_k_unjudged.get(ALL, 0):,} positions) of "
                   f"{total:,}")
    if cv.untrusted_graders:
        out.append(f"untrusted graders contributed labels: {', '.join(cv.untrusted_graders)}")
    return out


def _many_holes(result: ReportResult) -> bool:
    """More than :data:`HOLES_WARN_ABOVE` of the scored top-k positions pending adjudication or unjudged."""
    cv = result.caveats
    if cv is None:
        return False
    total = cv.top_k_rows.get(ALL, 0)
    return bool(total and (cv.top_k_unjudged.get(ALL, 0) + cv.top_k_pending.get(ALL, 0)) / total > HOLES_WARN_ABOVE)


def caveat_advice(result: ReportResult) -> list[str]:
    """What to run about the headline's warnings, for the renderers a command-line user reads (terminal
    and Markdown): the warnings themselves state facts only, as the web page and the JSON show them."""
    if not _many_holes(result):
        return []
    return ["adjudicate the pending items with `ndcg-labeling adjudicate list` and `adjudicate set`; pool the "
            "unjudged positions with `ndcg-labeling tasks create`"]


def coverage_advice(result: ReportResult) -> list[str]:
    """The command that pools the holes behind the "unsafe comparison" warning (a system's overall
    judged@k below :data:`~ndcg_labeling.results.JUDGED_WARN_BELOW`), for the command-line renderers."""
    cov = result.coverage
    if cov.empty:
        return []
    low = cov[(cov["query_type"] == ALL) & (cov["judged"] < JUDGED_WARN_BELOW)]["system"].tolist()
    if not low:
        return []
    systems = " ".join(f"--system {s}" for s in low)
    return [f"pool the holes with `ndcg-labeling tasks create BATCH {systems} --depth {result.coverage_k} "
            f"--scale SCALE --overlap N --graders A,B,C`"]


def gate_line(decision: GateDecision) -> str:
    """``report --gate``'s decision (:func:`ndcg_labeling.scoring.gate.decide_gate`) in one line:
    the failed rows, or each passed row with the drop it would have found (80% power)."""
    failed, passed = [], []
    max_drop = decision.max_drop
    for r in decision.rows:
        what = (f"{r.system} vs {decision.baseline} on {decision.metric} ({_group_name(r.query_type)}): "
                f"{r.diff:+.3f} {_ci(r.ci_low, r.ci_high, True)}")
        if r.outcome == "too few":
            failed.append(f"{what}, {too_few(r.n_queries)}")
        elif r.outcome == "drop":
            failed.append(f"{what}, one-sided {_p(r.p_holm)} (Holm), {r.n_queries} queries")
        else:
            found = "n/a" if not math.isfinite(r.mde) else f"{max_drop + r.mde:.3f}"
            passed.append(f"{what}, one-sided {_p(r.p_holm)} (Holm), {r.n_queries} queries; a drop "
                          f"larger than {found} would be found with {POWER:.0%} power (MDE ±{r.mde:.3f})")
    n = len(decision.rows)
    scope = f"over {n} gated rows, Holm-corrected" if n > 1 else "one gated row"
    if failed:
        return (f"gate failed (a drop significantly larger than {max_drop:g}, or too few queries to tell; "
                f"{scope}): " + "; ".join(failed))
    return f"gate passed (no drop significantly larger than {max_drop:g}; {scope}): " + "; ".join(passed)


def render_headline_table(result: ReportResult, console: Console) -> None:
    """The headline as plain lines on the terminal (warnings in red), before the tables."""
    from rich.text import Text

    console.print(Text(f"headline ({headline_metric(result.metrics, result.options)}; {LEGEND})", style="bold"))
    items = headline_items(result)
    for item in (i for i in items if i["kind"] == "warning"):
        console.print(Text("warning: ", style="bold red") + Text(item["text"]))
    for advice in caveat_advice(result):
        console.print(Text("hint: ", style="bold") + Text(advice))
    for item in (i for i in items if i["kind"] != "warning"):
        console.print(Text("  " + item["text"]))
    console.print()


def render_caveats_table(result: ReportResult, console: Console) -> None:
    """The label-quality table and its notes."""
    from rich.table import Table
    from rich.text import Text

    header, rows = caveat_rows(result)
    if not rows:
        return
    table = Table(title="label quality behind the numbers")
    for i, col in enumerate(header):
        table.add_column(col, justify="left" if i == 0 else "right")
    for r in rows:
        table.add_row(*(Text(c) for c in r))
    console.print(table)
    for note in caveat_notes(result):
        console.print(Text(f"note: {note}"))


def headline_markdown(result: ReportResult) -> list[str]:
    """The headline as Markdown: warnings as quotes, then one bullet per statement."""
    metric = headline_metric(result.metrics, result.options)
    parts = [f"## Headline ({metric})\n"]
    items = headline_items(result)
    parts.extend(f"> **Warning:** {i['text']}\n" for i in items if i["kind"] == "warning")
    parts.extend(f"> **Hint:** {advice}\n" for advice in caveat_advice(result))
    parts.append("".join(f"- {i['text']}\n" for i in items if i["kind"] != "warning"))
    parts.append(LEGEND + ".\n")
    return parts


def headline_html(result: ReportResult) -> str:
    """The headline as an HTML section (warnings first)."""
    import html

    metric = headline_metric(result.metrics, result.options)
    items = headline_items(result)
    parts = [f'<section class="headline"><h2>Headline ({html.escape(metric)})</h2>']
    parts.extend(f'<p class="warning"><strong>Warning:</strong> {html.escape(i["text"])}</p>'
                 for i in items if i["kind"] == "warning")
    parts.append("<ul>")
    for i in items:
        if i["kind"] != "warning":
            cls = {"better": "up", "worse": "down"}.get(i["kind"], "flat")
            parts.append(f'<li class="{cls}">{html.escape(i["text"])}</li>')
    parts.append("</ul>")
    parts.append(f'<p class="note">{html.escape(LEGEND)}.</p></section>')
    return "\n".join(parts)
