"""The HTML report opened in headless Chromium: it renders (screenshot of a plausible size) and the
page text has the system names and the section headings. Skipped only where chromium is missing."""

from __future__ import annotations

import base64
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_report_cli import load, make_dataset
from tests.conftest import invoke

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def html_report(runner, sqlite_db, tmp_path) -> Path:
    make_dataset(tmp_path, seed=5)
    load(runner, sqlite_db, tmp_path)
    out = tmp_path / "report.html"
    result = invoke(runner, sqlite_db, "report", "--format", "html", "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


def test_html_is_self_contained(html_report):
    text = html_report.read_text(encoding="utf-8")
    assert "http://" not in text and "https://" not in text  # nothing fetched from the network
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
    assert len(images) >= 4  # metrics, coverage, grades, agreement
    for img in images:
        w, h = png_size(base64.b64decode(img))
        assert w > 300 and h > 150
    assert "Warning:</strong> unsafe comparison" in text  # this data set has many unjudged documents


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_html_renders_in_headless_chromium(html_report, tmp_path):
    profile = tmp_path / "profile"
    shot = tmp_path / "shot.png"
    url = html_report.resolve().as_uri()
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=1200,2000",
                    url], check=True, capture_output=True, timeout=120)
    assert shot.exists()
    data = shot.read_bytes()
    assert png_size(data) == (1200, 2000)
    assert len(data) > 30_000  # a blank page compresses to a few kB
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url], check=True,
                         capture_output=True, timeout=120, text=True).stdout
    text = re.sub(r"<[^>]+>", " ", re.sub(r'src="data:[^"]+"', "", dom))
    for name in ("alpha", "beta", "gamma"):
        assert name in text
    for heading in ("Metrics per query type", "Difference to the baseline alpha", "Judged@10 coverage",
                    "Grade distribution", "Agreement", "Notes"):
        assert heading in text
    assert "Krippendorff" in dom or "Agreement is not shown" in text
