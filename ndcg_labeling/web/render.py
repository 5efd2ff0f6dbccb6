"""Jinja2 templates with autoescaping on: everything from the database is shown as inert text."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse

from ndcg_labeling.web import text, wording

TEMPLATES = Path(__file__).resolve().parent / "templates"


def safe_href(url: str | None) -> str | None:
    """``url`` when it is an http(s) link, else None (a ``javascript:`` URL is shown as text only)."""
    if not url:
        return None
    try:
        scheme = urlsplit(url.strip()).scheme.lower()
    except ValueError:
        return None
    return url.strip() if scheme in ("http", "https") else None


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["segment"] = lambda value: quote(str(value), safe="")
    env.filters["safe_href"] = safe_href
    env.filters["markdown"] = text.markdown_html
    env.filters["highlight"] = text.highlight
    env.filters["srcdoc"] = text.sandboxed_srcdoc
    env.filters["page_words"] = wording.page_words
    env.tests["html_body"] = text.looks_like_html
    env.globals["strategy_words"] = wording.STRATEGY_WORDS
    return env


def render(request: Request, name: str, context: dict[str, Any], *, status_code: int = 200) -> HTMLResponse:
    """Render template ``name``; ``user`` and ``csrf`` are None unless the route put them in ``context``."""
    base = {"user": None, "csrf": None, "request_path": request.url.path}
    html = environment().get_template(name).render({**base, **context})
    return HTMLResponse(html, status_code=status_code)


def admin_page(request: Request, caller: Any, name: str, status_code: int = 200, **values: Any) -> HTMLResponse:
    """Render ``lead_admin_NAME.html`` for the lead (``caller``: the signed-in lead, a
    :class:`~ndcg_labeling.web.deps.Caller`; ``error``/``done`` lines default to none)."""
    ctx = {"user": caller.user, "csrf": caller.csrf, "error": None, "done": None, **values}
    return render(request, f"lead_admin_{name}.html", ctx, status_code=status_code)
