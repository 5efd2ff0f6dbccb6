"""The guideline files: parseable, versioned, and in agreement with scales.SCALES and the database."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from ndcg_labeling import guidelines as gl
from ndcg_labeling.db import models as m
from ndcg_labeling.errors import NdcgLabelingError
from ndcg_labeling.scales import SCALES


@pytest.mark.parametrize("scale", sorted(SCALES))
def test_guideline_names_agree_with_scales(scale: str) -> None:
    guideline = gl.load_guideline(scale)
    assert guideline.names == SCALES[scale].names
    assert tuple(g.grade for g in guideline.grades) == SCALES[scale].values
    assert guideline.version == "1.0"
    assert guideline.path == f"guidelines/relevance-{scale}.md"
    assert len(guideline.sha256) == 64
    for grade in guideline.grades:
        assert grade.definition, f"grade {grade.grade} of {scale} has no definition"
        assert "#" not in grade.definition


@pytest.mark.parametrize("scale", sorted(SCALES))
def test_guideline_covers_the_hard_cases(scale: str) -> None:
    text = gl.load_guideline(scale).text.lower()
    for topic in ("navigational", "informational", "transactional", "long-tail", "partly relevant",
                  "off-language", "broken", "duplicate", "skip", "order"):
        assert topic in text, topic


def test_scale_grades_table_agrees_with_guidelines(sqlite_db) -> None:
    with sqlite_db.engine.connect() as conn:
        rows = conn.execute(select(m.ScaleGrade.scale, m.ScaleGrade.grade, m.ScaleGrade.label)).all()
    for scale, grade, label in rows:
        assert gl.load_guideline(scale).name_of(grade) == label


def test_parse_rejects_missing_grade_heading() -> None:
    text = "Version: 2.0\n\n### 0 — Irrelevant\nNo.\n\n### 1 — Somewhat relevant\nA bit.\n"
    with pytest.raises(NdcgLabelingError, match=r"grade headings \[0, 1\], expected \[0, 1, 2, 3\]"):
        gl.parse_guideline(text, scale="0-3", path="x.md")


def test_hash_changes_with_content() -> None:
    guideline = gl.load_guideline("0-3")
    edited = gl.parse_guideline(guideline.text + "\nOne more rule.\n", scale="0-3", path="x.md")
    assert edited.sha256 != guideline.sha256
    assert not gl.guideline_changed("0-3", guideline.sha256)
    assert gl.guideline_changed("0-3", edited.sha256)
