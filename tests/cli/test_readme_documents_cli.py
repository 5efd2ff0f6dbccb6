"""Every command of the CLI is documented: its `--help` in docs/cli.md (generated, and current) and an
example in the README or a docs/ page; the README is short and names the two set-up commands, which are
the Makefile targets that .ci/run uses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer
from typer.main import get_command

from ndcg_labeling.cli import app

ROOT = Path(__file__).resolve().parents[2]
README_LIMIT = 10 * 1024


def command_paths(group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, cmd in group.commands.items():
        path = (*prefix, name)
        if getattr(cmd, "commands", None):  # a group (Typer's own click fork has its own classes)
            out.extend(command_paths(cmd, path))
        else:
            out.append(path)
    return out


def guide_text() -> str:
    """The README and every docs/ page written by people (not the generated cli.md)."""
    pages = [ROOT / "README.md"] + sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "cli.md")
    return "\n".join(p.read_text(encoding="utf-8") for p in pages)


def test_every_command_has_an_example_in_the_docs():
    text = guide_text()
    paths = command_paths(get_command(app))
    assert len(paths) >= 20
    missing = [" ".join(p) for p in paths if f"ndcg-labeling {' '.join(p)}" not in text]
    assert missing == [], f"README and docs/ lack an example of: {missing}"


def test_every_command_has_its_help_in_docs_cli_md():
    reference = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    paths = command_paths(get_command(app))
    missing = [" ".join(p) for p in paths if f"\n## ndcg-labeling {' '.join(p)}\n" not in reference]
    assert missing == [], f"docs/cli.md lacks: {missing}"


def test_docs_cli_md_is_current():
    # rendered in a fresh process with a narrow terminal and colour forced: the page must not depend on either
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "40", "FORCE_COLOR": "1", "TERM": "xterm-256color"}
    done = subprocess.run([sys.executable, "-m", "ndcg_labeling.cli.docgen"], capture_output=True, text=True,
                          env=env, check=True, cwd=ROOT)
    current = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert done.stdout == current, "docs/cli.md is stale: run `make docs`"
    assert "\x1b[" not in current


def test_readme_is_short_and_links_the_stage_pages():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode("utf-8")) <= README_LIMIT
    for page in ("import", "grading", "agreement", "consensus", "report", "database", "metrics", "robustness",
                 "cli"):
        assert f"docs/{page}.md" in readme and (ROOT / "docs" / f"{page}.md").exists()
    assert "benchmarks/RESULTS.md" in readme and (ROOT / "benchmarks" / "RESULTS.md").exists()


def test_readme_names_the_two_commands_and_ci_uses_the_test_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo" in readme and "make test" in readme
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "\ndemo:" in makefile and "\ntest:" in makefile
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_app_is_a_typer_app():
    assert isinstance(app, typer.Typer)
