"""The strict answer parser: an answer is exactly the JSON object ``{"grade": N}``.

Accepted: the whole answer (surrounding white space aside) is one JSON object with one key,
``"grade"``, whose value is a JSON integer on the batch's scale. Refused, with the reason: any other
text before or after it (an explanation, a code fence), another or a repeated key, a string, float,
boolean or null grade, a grade off the scale, an empty answer, a refusal. The parser reads the
model's answer only, never the prompt, so text inside a graded document cannot change how an answer
is read; and it never searches an answer for a grade-like fragment.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ndcg_labeling.errors import AnswerError


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise AnswerError("a key is repeated")
    return dict(pairs)


def _no_constant(name: str) -> Any:
    raise AnswerError(f"{name} is not a grade")


def parse_answer(text: str | None, values: Sequence[int]) -> int:
    """The grade of an answer, or :class:`AnswerError`. ``values``: the grades of the scale."""
    if text is None or not text.strip():
        raise AnswerError("empty answer")
    try:
        obj = json.loads(text.strip(), object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise AnswerError(f"not one JSON object ({exc.msg} at character {exc.pos})") from None
    if not isinstance(obj, dict):
        raise AnswerError(f"a JSON {type(obj).__name__}, not an object")
    if set(obj) != {"grade"}:
        raise AnswerError(f"keys {sorted(obj)}, expected exactly ['grade']")
    grade = obj["grade"]
    if isinstance(grade, bool) or not isinstance(grade, int):
        raise AnswerError(f"grade {json.dumps(grade)} is not an integer")
    if grade not in values:
        raise AnswerError(f"grade {grade} is not on the scale ({min(values)}..{max(values)})")
    return grade


def response_format(values: Sequence[int]) -> dict[str, Any]:
    """The request's ``response_format``: a JSON schema allowing exactly ``{"grade": N}``."""
    return {"type": "json_schema", "json_schema": {
        "name": "grade", "strict": True,
        "schema": {"type": "object", "properties": {"grade": {"type": "integer", "enum": list(values)}},
                   "required": ["grade"], "additionalProperties": False}}}
