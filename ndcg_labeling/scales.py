"""The grading scales: 0-3 and 0-4, their values and names, and validation of grades.

The names per grade are the headings of the rater guidelines in ``guidelines/`` (one source: a test
checks that these and the guideline files agree).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


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

    The one grade parser of the tool (judgment files, task files). Accepts ``"2"``, ``2``, ``2.0``,
    ``" 2 "``; refuses ``"2.5"``, ``"three"``, empty, booleans, digits other than ASCII 0-9
    (``"٢"``, ``"２"``), ``"1_0"``, ``nan``/``inf``, and values outside the scale.
    """
    if isinstance(raw, bool):
        raise ValueError(f"grade {raw!r} is not an integer")
    text = str(raw).strip()
    if text == "" or text.lower() in {"nan", "none", "null"}:
        raise ValueError("empty grade")
    if _GRADE_TEXT.fullmatch(text) is None:
        raise ValueError(f"grade {text[:40]!r} is not an integer")
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")) or not value.is_integer():
        raise ValueError(f"grade {text[:40]!r} is not an integer")
    grade = int(value)
    if not scale.contains(grade):
        raise ValueError(f"grade {grade} is outside the scale {scale.name} ({scale.min_grade}..{scale.max_grade})")
    return grade
