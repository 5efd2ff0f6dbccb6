"""matplotlib for the pages: the Agg backend (no display), and a figure as an embedded PNG data URL."""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (loaded on first use: matplotlib takes a while)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def png(fig: Figure) -> str:
    """``fig`` as a ``data:image/png;base64,...`` URL (100 dpi, tight box); the figure is closed."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
