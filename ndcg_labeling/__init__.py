"""ndcg-labeling: from human relevance grades to trustworthy NDCG numbers.

Nothing is computed or connected at import time; heavy modules load when first used.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
