"""Label less: pooling strategies that choose which pairs to judge within a budget, and estimators of NDCG and
AP from a partly judged pool (issue 31; docs/budget.md).

Pure kernels over NumPy arrays (``pool``, ``strategies``, ``estimators``, ``xinfap`` and its intervals
``xinfap_intervals``, ``simulate``, ``plan``); the use cases that
read and write the database live in :mod:`ndcg_labeling.labels.tasks` (``tasks create --strategy``) and
:mod:`ndcg_labeling.scoring` (``scoring.inferred``, ``scoring.plan``).
"""
