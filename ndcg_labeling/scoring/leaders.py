"""The leader of each query group: the best system on the headline metric and whether it is
detectably ahead of the runner-up (paired t-test over the queries both scored).

The comparisons with the baseline answer "is S better than the baseline?"; a lead also asks "is the
best system really the best?". With three or more systems the runner-up need not be the baseline, so
this is one more paired test per group: best vs runner-up, chosen after looking at the means (so the
p-value is optimistic; the headline says "not detectably ahead" only when even it is not small).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ndcg_labeling.stats import paired_t_interval, paired_ttest_p

Array = NDArray[Any]
LEADER_COLUMNS = ["query_type", "system", "runner_up", "value", "runner_up_value", "diff", "n_queries", "t_p",
                  "ci_low", "ci_high"]


def leaders(metric_values: dict[str, Array], groups: dict[str, Array]) -> pd.DataFrame:
    """One row per group (:data:`LEADER_COLUMNS`): the system with the highest mean of
    ``metric_values[s]`` (per scored query, NaN = not scored) over the group's queries, the runner-up,
    their mean difference over the queries both scored, and the two-sided paired t-test p of it.
    Empty ``runner_up`` (None) with a single system."""
    rows = []
    for gname, mask in groups.items():
        means = {s: float(np.nanmean(v[mask])) if np.isfinite(v[mask]).any() else float("nan")
                 for s, v in metric_values.items()}
        ranked = sorted((s for s in means if np.isfinite(means[s])), key=lambda s: -means[s])
        if not ranked:
            continue
        best = ranked[0]
        if len(ranked) == 1:
            rows.append({"query_type": gname, "system": best, "runner_up": None, "value": means[best],
                         "runner_up_value": float("nan"), "diff": float("nan"), "n_queries": 0, "t_p": float("nan"),
                         "ci_low": float("nan"), "ci_high": float("nan")})
            continue
        second = ranked[1]
        a, b = metric_values[best][mask], metric_values[second][mask]
        both = np.isfinite(a) & np.isfinite(b)
        d = (a - b)[both][:, None]
        sd = float(d.std(ddof=1)) if d.size >= 2 else float("nan")
        low, high = paired_t_interval(d.size, float(d.mean()) if d.size else float("nan"), sd)
        rows.append({"query_type": gname, "system": best, "runner_up": second, "value": means[best],
                     "runner_up_value": means[second], "diff": float(d.mean()) if d.size else float("nan"),
                     "n_queries": int(both.sum()), "t_p": float(paired_ttest_p(d)[0]), "ci_low": float(low),
                     "ci_high": float(high)})
    return pd.DataFrame(rows, columns=LEADER_COLUMNS)
