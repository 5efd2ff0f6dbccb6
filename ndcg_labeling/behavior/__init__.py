"""Labels from behavior: click models (COEC, PBM, DBN) and the watch-time rule as pure kernels.

Arrays in, arrays out (NumPy only; no database, no pandas). The log reader that aggregates raw
impressions into the sufficient statistics these kernels take lives in :mod:`ndcg_labeling.engines`;
the use case that stores the grades is :mod:`ndcg_labeling.sources.behavior`. See docs/behavior.md.

Modules: :mod:`.counts` (the aggregated statistics an engine returns), :mod:`.click_models` (COEC,
PBM by EM, the watch-time rule), :mod:`.dbn` (DBN by EM), :mod:`.grades` (scores to grades: fixed
thresholds, or cut points fitted to maximize quadratic-weighted kappa).
"""
