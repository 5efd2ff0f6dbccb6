"""Request templates: JSON text with named variables ``{{name}}``, filled per query, values JSON-escaped.

``{{query}}`` is the query's text, ``{{query_id}}`` its id, ``{{query_type}}`` its type, ``{{depth}}`` the
number of results asked for (an integer, written bare: ``"size": {{depth}}``), and any other column of a
``--queries`` file by its name. A text value is written JSON-escaped without its quotes, so a template puts
it inside a JSON string (``"query": "{{query}}"``): a query holding ``"`` or ``\\`` cannot break the body or
inject JSON. Whitespace inside the braces is allowed (``{{ query }}``). The filled text must be JSON.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from ndcg_labeling.errors import InputFileError

VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")
MAX_TEMPLATE_CHARS = 100_000


def template_sha256(template: str) -> str:
    return hashlib.sha256(template.encode()).hexdigest()


def variables(template: str) -> list[str]:
    """The distinct variable names of ``template`` in order of first use."""
    return list(dict.fromkeys(VARIABLE.findall(template)))


def fill(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with every variable replaced: an int bare, anything else as JSON-escaped text without
    quotes. A variable without a value is a ``KeyError`` naming it (the caller says where)."""
    def one(match: re.Match[str]) -> str:
        value = values[match.group(1)]
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return json.dumps("" if value is None else str(value), ensure_ascii=False)[1:-1]

    return VARIABLE.sub(one, template)


def render(template: str, values: Mapping[str, Any]) -> Any:
    """The request body for ``values``: :func:`fill`, then parsed as JSON (``ValueError`` if it is not)."""
    return json.loads(fill(template, values))


def check_template(path: str, template: str) -> None:
    """Refuse a template that is empty, too long, or not JSON once its variables hold sample values (the
    error names the file and the line of the problem)."""
    if not template.strip():
        raise InputFileError(path, "the request template is empty")
    if len(template) > MAX_TEMPLATE_CHARS:
        raise InputFileError(path, f"the request template has {len(template):,} characters, more than "
                                   f"{MAX_TEMPLATE_CHARS:,}")
    sample = {name: 10 if name == "depth" else "x" for name in variables(template)}
    try:
        render(template, sample)
    except json.JSONDecodeError as exc:
        raise InputFileError(path, f"the template is not JSON once filled ({exc.msg}, column {exc.colno}); "
                                   "put text variables inside quotes: \"{{query}}\"", line=exc.lineno) from None
