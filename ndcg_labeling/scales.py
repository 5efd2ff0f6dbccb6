"""The grading scales: 0-3 and 0-4, their values and names, and validation of grades.

The names per grade are the headings of the rater guidelines in ``guidelines/`` (one source: a test
checks that these and the guideline files agree).
"""

from __future__ import annotations

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


def parse_grade(raw: object, scale: Scale) -> int:
    """Parse one grade given as text or number; ``ValueError`` says why it is not a grade of ``scale``.

    Accepts ``"2"``, ``2``, ``2.0``; refuses ``"2.5"``, ``"three"``, empty, and values outside the scale.
    """
    text = str(raw).strip()
    if text == "" or text.lower() in {"nan", "none", "null"}:
        raise ValueError("empty grade")
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"grade {text!r} is not an integer") from None
    if value != value or value in (float("inf"), float("-inf")) or not value.is_integer():
        raise ValueError(f"grade {text!r} is not an integer")
    grade = int(value)
    if not scale.contains(grade):
        raise ValueError(f"grade {grade} is outside the scale {scale.name} ({scale.min_grade}..{scale.max_grade})")
    return grade
