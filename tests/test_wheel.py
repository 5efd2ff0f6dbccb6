"""`pip install .` (a real wheel, not editable) gives a working `ndcg-labeling db upgrade` and imports:
the migrations and guidelines travel inside the package."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # A copy of the source tree, so the build leaves nothing in the checkout.
    src = out / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", ".git", "*.db", "demo-out", "__pycache__",
                                                               ".mypy_cache", ".ruff_cache", ".pytest_cache", "build",
                                                               "*.egg-info", ".hypothesis"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"pip wheel failed: {proc.stderr[-2000:]}")
    (found,) = out.glob("ndcg_labeling-*.whl")
    return found


def test_wheel_contains_migrations_and_guidelines(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "ndcg_labeling/migrations/env.py" in names
    assert "ndcg_labeling/migrations/script.py.mako" in names
    assert {"ndcg_labeling/migrations/versions/0001_initial.py",
            "ndcg_labeling/migrations/versions/0002_grading_batches.py",
            "ndcg_labeling/migrations/versions/0003_adjudications.py"} <= set(names)
    assert {"ndcg_labeling/guideline_files/relevance-0-3.md", "ndcg_labeling/guideline_files/relevance-0-4.md"} <= set(names)
    assert {"ndcg_labeling/demo_data/queries.csv", "ndcg_labeling/demo_data/runs/bm25.run"} <= set(names)
    assert not any(n.startswith("tests/") for n in names)


def test_installed_wheel_upgrades_and_imports(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    # Install the wheel itself into the new venv; its dependencies are borrowed from this environment
    # (added after the new venv's own site-packages, so the installed wheel is what gets imported).
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q", str(wheel)],
                   check=True)
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "borrowed_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    where = subprocess.run([str(py), "-c", "import ndcg_labeling; print(ndcg_labeling.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert where.startswith(str(venv)), where
    exe = venv / "bin" / "ndcg-labeling"
    url = f"sqlite:///{tmp_path / 'wheel.db'}"
    up = subprocess.run([str(exe), "db", "upgrade", "--db", url], capture_output=True, text=True, cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    (tmp_path / "q.csv").write_text("query_id,text,query_type\nq1,hello,navigational\n")
    (tmp_path / "j.csv").write_text("query_id,doc_id,grader,grade\nq1,d1,ann,2\n")
    imp = subprocess.run([str(exe), "import", "queries", "q.csv", "--db", url], capture_output=True, text=True,
                         cwd=tmp_path)
    assert imp.returncode == 0 and "1 new" in imp.stdout, imp.stderr
    imp = subprocess.run([str(exe), "import", "judgments", "j.csv", "--scale", "0-3", "--create-graders", "--db", url],
                         capture_output=True, text=True, cwd=tmp_path)
    assert imp.returncode == 0 and "1 new" in imp.stdout, imp.stderr
    status = subprocess.run([str(exe), "status", "--format", "json", "--db", url], capture_output=True, text=True,
                            cwd=tmp_path)
    assert '"judgments": 1' in status.stdout
    # the guidelines travel too: a batch can be created from the installed package
    (tmp_path / "run.csv").write_text("query_id,doc_id,rank\nq1,d2,1\n")
    for args in (["import", "run", "run.csv", "--system", "s"],
                 ["tasks", "create", "b1", "--scale", "0-3", "--depth", "1", "--overlap", "1", "--graders", "ann"]):
        proc = subprocess.run([str(exe), *args, "--db", url], capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    assert "ndcg_labeling/guideline_files/relevance-0-3.md" in subprocess.run(
        [str(py), "-c", "from ndcg_labeling.guidelines import guidelines_dir; print(guidelines_dir() / 'relevance-0-3.md')"],
        capture_output=True, text=True, cwd=tmp_path).stdout
    # and the demo data: the main job runs from the installed package
    demo = subprocess.run([str(exe), "demo", "--db", f"sqlite:///{tmp_path / 'demo.db'}", "--out", "demo-out"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert (tmp_path / "demo-out" / "report.html").stat().st_size > 10_000
