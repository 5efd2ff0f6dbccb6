"""Every command of the CLI is documented in the README with an example, and the README's two
set-up commands are the Makefile targets that .ci/run uses."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.main import get_command

from ndcg_labeling.cli import app

ROOT = Path(__file__).resolve().parents[2]


def command_paths(group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, cmd in group.commands.items():
        path = (*prefix, name)
        if getattr(cmd, "commands", None):  # a group (Typer's own click fork has its own classes)
            out.extend(command_paths(cmd, path))
        else:
            out.append(path)
    return out


def test_every_command_has_a_readme_example():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paths = command_paths(get_command(app))
    assert len(paths) >= 20
    missing = [" ".join(p) for p in paths if f"ndcg-labeling {' '.join(p)}" not in readme]
    assert missing == [], f"README lacks an example of: {missing}"


def test_readme_names_the_two_commands_and_ci_uses_the_test_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo" in readme and "make test" in readme
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "\ndemo:" in makefile and "\ntest:" in makefile
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_app_is_a_typer_app():
    assert isinstance(app, typer.Typer)
