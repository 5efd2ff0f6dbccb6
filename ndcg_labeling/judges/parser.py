"""The strict answer parser: an answer is exactly the JSON object ``{"grade": N}``.

Accepted: the whole answer (surrounding white space aside) is one JSON object with one key,
``"grade"``, whose value is a JSON integer on the batch's scale. Refused, with the reason: any other
text before or after it (an explanation, a code fence), another or a repeated key, a string, float,
boolean or null grade, a grade off the scale, an empty answer, a refusal; and, before any parsing, an
answer longer than :data:`MAX_ANSWER_CHARS` or nested deeper than :data:`MAX_ANSWER_DEPTH` (a
``{"grade": N}`` needs a few characters and one level), so that no answer can make the JSON parser
recurse without bound or convert a 5,000-digit number (Python refuses more than 4,300 digits with a
``ValueError``): a JSON integer of more than :data:`MAX_INT_DIGITS` digits is no grade. The parser reads the
model's answer only, never the prompt, so text inside a graded document cannot change how an answer
is read; and it never searches an answer for a grade-like fragment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

from ndcg_labeling.errors import AnswerError

MAX_ANSWER_CHARS = 1_000  # an answer longer than this is refused unread (``{"grade": N}`` is 12)
MAX_ANSWER_DEPTH = 8  # nesting of arrays and objects an answer may have before it is parsed (it needs 1)
MAX_INT_DIGITS = 20  # a JSON integer with more digits is no grade (and no token count)

# A JSON string (the unrolled-loop form: linear time, no backtracking), and a bracket outside one.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def nesting_depth(text: str) -> int:
    """The deepest nesting of JSON arrays and objects in ``text`` (brackets inside strings ignored),
    without parsing it: linear in its length, no recursion. An unterminated string counts as text, so
    the depth of malformed JSON can only be overstated."""
    if text.count("[") + text.count("{") == 0:
        return 0
    brackets = _BRACKET.findall(_STRING.sub('""', text))
    return max(accumulate(1 if b in "[{" else -1 for b in brackets), default=0)


def json_size_problem(text: str, *, max_chars: int, max_depth: int) -> str | None:
    """Why ``text`` is not parsed as JSON at all (too long, nested too deep), or None."""
    if len(text) > max_chars:
        return f"{len(text):,} characters, more than the {max_chars:,} read"
    depth = nesting_depth(text)
    if depth > max_depth:
        return f"nested {depth:,} levels deep, more than the {max_depth} read"
    return None


def _small_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise AnswerError(f"a number of {len(digits.lstrip('-')):,} digits is not a grade")
    return int(digits)


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
    problem = json_size_problem(text, max_chars=MAX_ANSWER_CHARS, max_depth=MAX_ANSWER_DEPTH)
    if problem:
        raise AnswerError(f"answer not parsed: {problem}")
    try:
        obj = json.loads(text.strip(), object_pairs_hook=_no_duplicates, parse_constant=_no_constant,
                         parse_int=_small_int)
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
