"""The grading scales: 0-3 and 0-4, their values and names, and validation of grades.

The names per grade are the headings of the rater guidelines in ``guidelines/`` (one source: a test
checks that these and the guideline files agree).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class Scale:
    """An ordinal grading scale of consecutive integer grades ``min_grade .. max_grade``."""

    name: str
    names: tuple[str, ...]
    min_grade: int = 0

    @property
    def max_grade(self) -> int:
        return self.min_grade + len(self.names) - 1

    @property
    def values(self) -> tuple[int, ...]:
        """Every grade of the scale, ascending (the value domain passed to Krippendorff's alpha)."""
        return tuple(range(self.min_grade, self.max_grade + 1))

    def name_of(self, grade: int) -> str:
        return self.names[grade - self.min_grade]

    def contains(self, grade: int) -> bool:
        return self.min_grade <= grade <= self.max_grade


SCALES: dict[str, Scale] = {
    "0-3": Scale("0-3", ("Irrelevant", "Somewhat relevant", "Highly relevant", "Perfect")),
    "0-4": Scale("0-4", ("Bad", "Fair", "Good", "Excellent", "Perfect")),
}


def get_scale(name: str) -> Scale:
    """The scale called ``name``; ``ValueError`` listing the known scales otherwise."""
    try:
        return SCALES[name]
    except KeyError:
        known = ", ".join(sorted(SCALES))
        raise ValueError(f"unknown scale {name!r}; known scales: {known}") from None


# ASCII digits only: Python's float() also reads Arabic-Indic and full-width digits and "1_0", which
# no grade file means; an exponent ("2e0") and a zero fraction ("2.0") are what spreadsheets write.
_GRADE_TEXT = re.compile(r"[+-]?[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?", re.ASCII)


def parse_grade(raw: object, scale: Scale) -> int:
    """Parse one grade given as text or number; ``ValueError`` says why it is not a grade of ``scale``.

    The one grade parser of the tool's files (judgment files, task files, gold files). The text is read
    exactly, as a decimal number (never through a float, which would read ``1.9999999999999999`` as 2):
    it is a grade only if its value is exactly one of the scale's grades. Accepts ``"2"``, ``2``,
    ``"2.0"``, ``"2e0"``, ``" 2 "``; refuses ``"2.5"``, ``"1.9999999999999999"``, ``"three"``, empty,
    booleans, digits other than ASCII 0-9 (``"٢"``, ``"２"``), ``"1_0"``, ``nan``/``inf``, and values
    outside the scale (the message quotes the text as written: ``grade 1e20 is outside ...``).
    """
    if isinstance(raw, bool):
        raise ValueError(f"grade {raw!r} is not an integer")
    if isinstance(raw, float) and not raw.is_integer():  # a float a caller computed: never rounded
        raise ValueError(f"grade {raw!r} is not an integer")
    text = str(int(raw)) if isinstance(raw, float) else str(raw).strip()
    if text == "" or text.lower() in {"nan", "none", "null"}:
        raise ValueError("empty grade")
    if _GRADE_TEXT.fullmatch(text) is None:
        raise ValueError(f"grade {text[:40]!r} is not an integer")
    value = Decimal(text)  # exact: the digits as written, any exponent
    if value != value.to_integral_value():
        raise ValueError(f"grade {text[:40]!r} is not an integer")
    if not scale.min_grade <= value <= scale.max_grade:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise ValueError(f"grade {shown} is outside the scale {scale.name} ({scale.min_grade}..{scale.max_grade})")
    return int(value)


def parse_exact_grade(raw: object, scale: Scale) -> int:
    """A grade as the web API takes it: a JSON integer, or text that is exactly one of the scale's
    grades as :func:`str` writes it (``"2"``) or one of its names (any case). ``"+2"``, ``"02"``,
    ``" 2 "``, ``"2.0"`` are refused: a client sends the scale's own values, so anything else is a bug
    in the client rather than a spelling to guess at. ``ValueError`` otherwise, quoting the value."""
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise ValueError(f"grade {raw!r} is not a number or a grade name")
    if isinstance(raw, int):
        if not scale.contains(raw):
            raise ValueError(f"grade {raw} is outside the scale {scale.name} ({scale.min_grade}..{scale.max_grade})")
        return raw
    by_name = {n.lower(): scale.min_grade + i for i, n in enumerate(scale.names)}
    by_text = {str(g): g for g in scale.values}
    if raw in by_text:
        return by_text[raw]
    if raw.lower() in by_name:
        return by_name[raw.lower()]
    if re.fullmatch(r"-?[1-9][0-9]{0,20}", raw, re.ASCII):  # written as str writes an integer: just not on the scale
        raise ValueError(f"grade {raw} is outside the scale {scale.name} ({scale.min_grade}..{scale.max_grade})")
    shown = raw if len(raw) <= 40 else raw[:40] + "..."
    raise ValueError(f"grade {shown!r} is not a grade of scale {scale.name}: send one of "
                     f"{', '.join(by_text)} (a JSON number or exactly that text) or a grade name")
