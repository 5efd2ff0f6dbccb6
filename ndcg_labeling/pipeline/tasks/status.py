"""``tasks status`` and ``tasks list``: progress per batch and per grader.

The reads live in :mod:`ndcg_labeling.pipeline.overview` (Core queries: the status commands start
without the ORM, numpy or pandas; issue 17) and are re-exported here.
"""

from __future__ import annotations

from ndcg_labeling.pipeline.overview import BatchStatus as BatchStatus
from ndcg_labeling.pipeline.overview import GraderProgress as GraderProgress
from ndcg_labeling.pipeline.overview import batch_status as batch_status
from ndcg_labeling.pipeline.overview import list_batches as list_batches
